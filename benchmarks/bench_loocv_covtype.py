"""Leave-one-out CV of PEGASOS on all 581,012 Covertype rows with the native tree.

Class 1 vs rest, columns standardised, rows permuted once with a fixed seed,
lambda = 1e-6 (section 5 of Joulani, György and Szepesvári, 2015). Prints the
median wall time of ``--repeats`` runs for fixed and randomized order, the
time in single passes over the data against log2(2n), and standard LOOCV
(n independent models) on the first 10,000 rows next to TreeCV on the same rows.

With ``--scaled``, instead: ``make_pipeline(StandardScaler(), PEGASOS)`` on the
unscaled rows (the native tree with the scaler in its node state, the streaming
regime of batches of 256 rows) against the bare learner on the rows standardised
once, leave-one-out and ``--ks`` folds, medians of ``--repeats`` interleaved
rounds; the goal is a ratio of at most 2.

Run: ``python benchmarks/bench_loocv_covtype.py [--repeats 5]``, or
``python benchmarks/bench_loocv_covtype.py --scaled [--ks 10,1000] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _native_common import (  # noqa: E402
    chunk_plan,
    covtype_binary,
    native_tree,
    require,
    standard_cv,
    timed,
)
from sklearn.base import clone  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from sklearn_ext import tree_cross_validate  # noqa: E402
from sklearn_ext.linear_model import PegasosClassifier  # noqa: E402
from sklearn_ext.model_selection import TreeCVRegimeWarning  # noqa: E402

ALPHA = 1e-6


def scaled_against_bare(ks: list[int], repeats: int) -> None:
    """Scaled PEGASOS in the native tree against the bare one on scaled rows."""
    X_scaled, y = covtype_binary(seed=0)
    with np.load(require("covtype.npz")) as data:
        X = data["X"].astype(np.float64)
    X = np.ascontiguousarray(X[np.random.RandomState(0).permutation(len(y))])
    n = len(y)
    bare = PegasosClassifier(alpha=ALPHA, fit_intercept=False)
    scaled = make_pipeline(StandardScaler(), clone(bare))
    # Said once per run: the pipeline's own fit is not the streaming regime.
    warnings.filterwarnings("ignore", category=TreeCVRegimeWarning)
    check = tree_cross_validate(scaled, X[:2000], y[:2000], cv=4, return_run_info=True)
    print(f"covtype: n={n}; the scaled pipeline runs {check['backend']!r}")
    print(f"load before: {os.getloadavg()}")
    plans = {k: chunk_plan(np.arange(n), k, "fixed") for k in ks}
    times = {(k, kind): [] for k in ks for kind in ("bare", "scaled")}
    scores = {}
    for _ in range(repeats):  # interleaved rounds
        for k in ks:
            for kind, estimator, data in (
                ("bare", bare, X_scaled),
                ("scaled", scaled, X),
            ):
                # No run info: tree_cross_validate would also measure the
                # pipeline's regime gap (its own fit on some folds).
                result, seconds = timed(
                    tree_cross_validate, estimator, data, y, cv=plans[k]
                )
                times[k, kind].append(seconds)
                scores[k, kind] = float(np.mean(result["test_score"]))
    print(f"load after: {os.getloadavg()}")
    print(f"\n{'k':>8}{'bare s':>10}{'scaled s':>10}{'ratio':>8}{'goal':>6}  accuracy")
    for k in ks:
        bare_s = statistics.median(times[k, "bare"])
        scaled_s = statistics.median(times[k, "scaled"])
        label = "LOO" if k == n else str(k)
        print(
            f"{label:>8}{bare_s:>10.3f}{scaled_s:>10.3f}{scaled_s / bare_s:>8.2f}"
            f"{'<= 2':>6}  {scores[k, 'bare']:.4f} / {scores[k, 'scaled']:.4f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--standard-rows", type=int, default=10_000)
    parser.add_argument("--scaled", action="store_true")
    parser.add_argument("--ks", default="10,1000,loo")
    args = parser.parse_args()
    if args.scaled:
        n = covtype_binary(seed=0)[1].shape[0]
        ks = [n if k == "loo" else int(k) for k in args.ks.split(",")]
        scaled_against_bare(ks, args.repeats)
        return

    X, y = covtype_binary(seed=0)
    n = len(y)
    estimator = PegasosClassifier(alpha=ALPHA, fit_intercept=False)
    classes = np.array([-1, 1])

    single = statistics.median(
        timed(
            lambda: estimator.__class__(**estimator.get_params()).partial_fit(
                X, y, classes=classes
            )
        )[1]
        for _ in range(args.repeats)
    )
    print(f"covtype: n={n}, d={X.shape[1]}, lambda={ALPHA:g}")
    print(f"single pass (partial_fit on all rows): median {single:.3f} s")
    print(f"log2(2n) = {math.log2(2 * n):.2f} passes of TreeCV by the analysis\n")

    print(
        f"{'LOOCV, n = ' + str(n):<28}{'median s':>10}{'passes':>9}"
        f"{'rows fed/n':>12}{'CV error %':>12}"
    )
    for order in ("fixed", "randomized"):
        plan = chunk_plan(np.arange(n), n, order, seed=0)
        times = []
        for _ in range(args.repeats):
            (scores, fed), seconds = timed(native_tree, estimator, X, y, plan)
            times.append(seconds)
        median = statistics.median(times)
        print(
            f"{'TreeCV ' + order:<28}{median:>10.3f}{median / single:>9.1f}"
            f"{fed / n:>12.2f}{100 * (1 - scores.mean()):>12.3f}"
        )

    m = args.standard_rows
    Xm, ym = np.ascontiguousarray(X[:m]), y[:m]

    def error_rate(model, rows):
        return float(model.predict(Xm[rows])[0] != ym[rows][0])

    print(f"\nLOOCV on the first {m} rows{'':<5}{'seconds':>10}{'ratio':>9}")
    rng = np.random.RandomState(0)
    for order in ("fixed", "randomized"):
        plan = chunk_plan(np.arange(m), m, order, seed=0)
        tree = statistics.median(
            timed(native_tree, estimator, Xm, ym, plan)[1] for _ in range(args.repeats)
        )
        errors, standard = timed(
            standard_cv,
            estimator,
            Xm,
            ym,
            plan,
            order == "randomized",
            rng,
            error_rate,
        )
        print(f"{'standard ' + order:<28}{standard:>10.3f}")
        print(f"{'TreeCV ' + order:<28}{tree:>10.4f}{standard / tree:>8.0f}x")


if __name__ == "__main__":
    main()
