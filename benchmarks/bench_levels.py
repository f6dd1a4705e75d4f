"""The level walk against the depth-first walk of the same tree (issue 37).

The level walk (``RunCore.run_levels``, what ``return_levels=True`` and the
ladder's consumers run) feeds exactly the rows the depth-first walk
(``RunCore.run``) feeds and gives the same fold scores; it also scores every
internal node on its held-out rows, one prediction pass over the data per
level, and copies each node's model. This prints what that costs: the medians
of ``--repeats`` interleaved runs of each walk, their ratio (level / depth
first), and the same with the early rungs the doors ask for
(``early_rungs=EARLY_RUNGS``: the quarter rung, one more prediction pass over
half the rows where the engine pauses a feed; the half rung reuses level 1's
first part), per engine (the Python tree and the native tree) and per ``k``, on
covtype class 1 vs rest (``--n-samples`` rows, standardised) with
``PegasosClassifier``. Both walks are checked to give the same fold scores.

Everything runs on one thread; the load average is printed before and after
each row, since the machine may be shared (run it under
``flock /work/coord/bench.lock``).

Usage::

    python benchmarks/bench_levels.py [--repeats 5] [--ks 16,100]
        [--n-samples 200000] [--engines python,native]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from sklearn_ext import PegasosClassifier
from sklearn_ext.model_selection import NativeTreeBackend, PythonTreeBackend
from sklearn_ext.model_selection._core import RunCore
from sklearn_ext.model_selection._levels import EARLY_RUNGS

ENGINES = {"python": PythonTreeBackend, "native": NativeTreeBackend}


def one_row(X, y, engine: str, k: int, repeats: int) -> None:
    estimator = PegasosClassifier(random_state=0)
    core = RunCore(estimator, X, y, cv=k, method=ENGINES[engine]())
    resolved = core.resolve(estimator)
    times: dict[str, list[float]] = {"depth first": [], "levels": [], "early": []}
    load_before = os.getloadavg()[0]
    for _ in range(repeats):  # interleaved
        tic = time.perf_counter()
        table = core.run(resolved)
        times["depth first"].append(time.perf_counter() - tic)
        tic = time.perf_counter()
        levels = list(core.run_levels(resolved))
        times["levels"].append(time.perf_counter() - tic)
        tic = time.perf_counter()
        early = list(core.run_levels(resolved, early_rungs=EARLY_RUNGS))
        times["early"].append(time.perf_counter() - tic)
        ours, theirs = levels[-1].leaves.by_split(), table.by_split()
        early = early[-1].leaves.by_split()
        for walk in (ours, early):
            if not np.array_equal(walk.scores["score"], theirs.scores["score"]):
                raise AssertionError("the level walk's fold scores differ")
    medians = {name: statistics.median(t) for name, t in times.items()}
    ratio = medians["levels"] / medians["depth first"]
    with_early = medians["early"] / medians["depth first"]
    rungs = " ".join(f"{lv.scores['score']:.4f}" for lv in levels)
    print(
        f"{engine:<7} k={k:<4} depth first {medians['depth first']:7.3f} s  "
        f"levels {medians['levels']:7.3f} s  ratio {ratio:5.2f}x  with early "
        f"rungs {medians['early']:7.3f} s  {with_early:5.2f}x  "
        f"({len(levels)} levels, rows fed {levels[-1].n_samples_fed:,}; "
        f"load {load_before:.2f} -> {os.getloadavg()[0]:.2f})"
    )
    print(f"        rung estimates: {rungs}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ks", default="16,100")
    parser.add_argument("--n-samples", type=int, default=200_000)
    parser.add_argument("--engines", default="python,native")
    args = parser.parse_args()
    from _data import covtype_binary

    X, y = covtype_binary(n_samples=args.n_samples)
    print(f"covtype class 1 vs rest, n={len(y)}, d={X.shape[1]}, PegasosClassifier")
    print(f"load {os.getloadavg()}")
    warnings.simplefilter("ignore")  # the regime note (one pass of Pegasos)
    with threadpool_limits(1):
        for engine in args.engines.split(","):
            for k in (int(k) for k in args.ks.split(",")):
                one_row(X, y, engine, k, args.repeats)
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
