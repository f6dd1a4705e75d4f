"""Leave-one-out CV of PEGASOS on all 581,012 Covertype rows with the native tree.

Class 1 vs rest, columns standardised, rows permuted once with a fixed seed,
lambda = 1e-6 (section 5 of Joulani, György and Szepesvári, 2015). Prints the
median wall time of ``--repeats`` runs for fixed and randomized order, the
time in single passes over the data against log2(2n), and standard LOOCV
(n independent models) on the first 10,000 rows next to TreeCV on the same rows.

Run: ``python benchmarks/bench_loocv_covtype.py [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _native_common import (  # noqa: E402
    chunk_plan,
    covtype_binary,
    native_tree,
    standard_cv,
    timed,
)

from sklearn_ext.linear_model import PegasosClassifier  # noqa: E402

ALPHA = 1e-6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--standard-rows", type=int, default=10_000)
    args = parser.parse_args()

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
