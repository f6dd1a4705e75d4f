"""Builds of the native engine side by side: interleaved medians in one run.

Starts one worker per interpreter (each a virtual environment with its own
build of ``sklearn_ext``, e.g. a reference commit's and this checkout's), lets
each load the data once, then runs each workload on every build in turn, for
``--repeats`` rounds (the build that goes first rotates), so all builds see
the same machine state. Prints the median wall time of each workload per
build and its ratio to the first build's (A).

Workloads (the engine parts of ``bench_loocv_covtype.py`` and ``bench_ssad.py``):

- ``loocv-fixed``, ``loocv-randomized``: leave-one-out PEGASOS on all 581,012
  Covertype rows (class 1 vs rest, standardised, lambda = 1e-6) by
  ``tree_cross_validate`` on the native tree;
- ``ssad-warm``, ``ssad-cold``: 10-fold ``tree_cross_validate`` of the SSAD
  detector on the 20,000-row ForestCover anomaly sample, over the four grid
  points of ``bench_ssad.py`` three times, with the random features cached
  (warm) or recomputed (cold).

Not run by ``make bench`` (it needs a second build). Usage::

    python benchmarks/ab_native_engine.py A_PYTHON B_PYTHON [C_PYTHON ...]
        [--repeats 7]
        [--workloads loocv-fixed,loocv-randomized,ssad-warm,ssad-cold]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKLOADS = ("loocv-fixed", "loocv-randomized", "ssad-warm", "ssad-cold")
# Passes over the SSAD grid per timing (one pass takes only ~0.1 s).
SSAD_ROUNDS = 3


# -- worker ------------------------------------------------------------------------
def _worker(names: list[str]) -> None:
    """Load the data, then run the workload named on each stdin line."""
    # Replies go to the original stdout; anything else printed goes to stderr.
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    import numpy as np

    # The data helpers of the worker's own checkout (its venv's parent folder).
    sys.path.insert(0, str(Path(sys.prefix).parent / "benchmarks"))
    from _data import forestcover_anomaly
    from _native_common import chunk_plan, covtype_binary

    from sklearn_ext import (
        PegasosClassifier,
        SemiSupervisedAnomalyDetector,
        StratifiedTreeCVSplitter,
        tree_cross_validate,
    )
    from sklearn_ext.anomaly._features import FEATURE_CACHE

    runs = {}
    if any(name.startswith("loocv") for name in names):
        X, y = covtype_binary(seed=0)
        pegasos = PegasosClassifier(alpha=1e-6, fit_intercept=False)
        for order in ("fixed", "randomized"):
            plan = chunk_plan(np.arange(len(y)), len(y), order, seed=0)

            def loocv(plan=plan):
                result = tree_cross_validate(
                    pegasos, X, y, cv=plan, return_run_info=True
                )
                assert result["backend"] == "native_tree", result["backend"]
                return float(np.mean(result["test_score"]))

            runs[f"loocv-{order}"] = loocv
    if any(name.startswith("ssad") for name in names):
        Xs, ys, labeled = forestcover_anomaly(20_000, 0.05, random_state=0)
        splitter_plan = StratifiedTreeCVSplitter(10).plan(Xs, ys)
        grid = [
            (1.0, 1.0, 1.0, 0.01),
            (10.0, 100.0, 1.0, 0.01),
            (100.0, 10.0, 0.1, 0.1),
            (10.0, 10.0, 1.0, 1.0),
        ]
        detectors = [
            SemiSupervisedAnomalyDetector(
                *point, n_components=100, max_iter=1, shuffle=False, random_state=0
            )
            for point in grid
        ]

        def ssad(cold):
            total = 0.0
            for detector in detectors * SSAD_ROUNDS:
                if cold:
                    FEATURE_CACHE.clear()
                result = tree_cross_validate(
                    detector,
                    Xs,
                    ys,
                    cv=splitter_plan,
                    fit_params={"labeled": labeled},
                    return_run_info=True,
                )
                assert result["backend"] == "native_tree", result["backend"]
                total += float(np.mean(result["test_score"]))
            return total

        for detector in detectors:  # Fill the feature cache for the warm runs.
            tree_cross_validate(
                detector,
                Xs,
                ys,
                cv=splitter_plan,
                fit_params={"labeled": labeled},
                return_run_info=True,
            )
        runs["ssad-warm"] = lambda: ssad(False)
        runs["ssad-cold"] = lambda: ssad(True)
    print(json.dumps({"ready": True}), file=replies, flush=True)
    for line in sys.stdin:
        name = line.strip()
        tic = time.perf_counter()
        value = runs[name]()
        seconds = time.perf_counter() - tic
        print(
            json.dumps({"seconds": seconds, "value": value}), file=replies, flush=True
        )


# -- driver ------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "pythons",
        nargs="+",
        help="interpreters of the builds; the first is the reference (A)",
    )
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    args = parser.parse_args()
    names = args.workloads.split(",")
    labels = [chr(ord("A") + i) for i in range(len(args.pythons))]
    workers = {}
    for label, python in zip(labels, args.pythons, strict=True):
        workers[label] = subprocess.Popen(
            [python, __file__, "--worker", ",".join(names)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(python).absolute().parents[2],
        )
    for worker in workers.values():
        assert json.loads(worker.stdout.readline())["ready"]
    times = {(label, name): [] for label in workers for name in names}
    values = {}
    print(f"load average before: {os.getloadavg()}", flush=True)
    for round_ in range(args.repeats):
        # Rotate which build goes first, so that none always runs in one slot.
        order = labels[round_ % len(labels) :] + labels[: round_ % len(labels)]
        for name in names:
            for label in order:
                worker = workers[label]
                worker.stdin.write(name + "\n")
                worker.stdin.flush()
                reply = json.loads(worker.stdout.readline())
                times[label, name].append(reply["seconds"])
                values[label, name] = reply["value"]
        print(f"round {round_ + 1}/{args.repeats} done", flush=True)
    for worker in workers.values():
        worker.stdin.close()
        worker.wait()
    print(f"load average after: {os.getloadavg()}")
    for label, python in zip(labels, args.pythons, strict=True):
        print(f"{label} = {python}")
    header = f"{'workload':<20}" + "".join(
        f"{label + ' median s':>13}" for label in labels
    )
    header += "".join(f"{label + ' / A':>8}" for label in labels[1:]) + "  same"
    print(header)
    for name in names:
        medians = [statistics.median(times[label, name]) for label in labels]
        same = all(values[label, name] == values["A", name] for label in labels)
        line = f"{name:<20}" + "".join(f"{m:>13.3f}" for m in medians)
        line += "".join(f"{m / medians[0]:>8.3f}" for m in medians[1:])
        print(f"{line}  {same}")
        for label in labels:
            runs = " ".join(f"{t:.3f}" for t in times[label, name])
            print(f"{'':<20}{label}: {runs}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        _worker(sys.argv[2].split(","))
    else:
        main()
