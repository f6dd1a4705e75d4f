"""TreeCV vs standard k-fold CV for a Python partial_fit learner on covtype.

For k in {5, 10, 100}: the time of one data pass, TreeCV's time, standard CV's
time (k independent models fed the same rows in the same order), their ratio,
TreeCV's time in single passes next to log2(2k), and the rows fed to
``partial_fit`` per sample next to log2(k) + 1. Medians over ``--repeats`` runs,
measured side by side in one process.

Usage: python benchmarks/bench_treecv_scaling.py [--n-samples N] [--repeats R]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from _data import covtype_binary
from sklearn.linear_model import SGDClassifier

from sklearn_ext import TreeCVSplitter, tree_cross_validate


def median_time(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        tic = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - tic)
    return float(np.median(times)), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ks", default="5,10,100")
    args = parser.parse_args()

    X, t = covtype_binary(seed=0, n_samples=args.n_samples)
    n = len(t)
    est = SGDClassifier(loss="hinge", alpha=1e-6, random_state=0)
    single, _ = median_time(
        lambda: SGDClassifier(loss="hinge", alpha=1e-6, random_state=0).partial_fit(
            X, t, classes=[-1, 1]
        ),
        args.repeats,
    )
    print(f"covtype class 1 vs rest, n={n}, d={X.shape[1]}, SGDClassifier(hinge)")
    print(f"one data pass (partial_fit on all rows): {single:.3f} s")
    header = (
        f"{'k':>5} {'treecv s':>9} {'standard s':>10} {'speed-up':>8} "
        f"{'tree passes':>11} {'log2(2k)':>8} {'fed/n':>6} {'log2k+1':>7} "
        f"{'|mean diff|':>11}"
    )
    print(header)
    for k in (int(v) for v in args.ks.split(",")):
        cv = TreeCVSplitter(k)
        tree_t, tree = median_time(
            lambda cv=cv: tree_cross_validate(est, X, t, cv=cv, method="treecv"),
            args.repeats,
        )
        std_t, std = median_time(
            lambda cv=cv: tree_cross_validate(est, X, t, cv=cv, method="standard"),
            1 if k >= 100 else args.repeats,
        )
        diff = abs(tree["test_score"].mean() - std["test_score"].mean())
        print(
            f"{k:>5} {tree_t:>9.2f} {std_t:>10.2f} {std_t / tree_t:>7.1f}x "
            f"{tree_t / single:>11.1f} {math.log2(2 * k):>8.2f} "
            f"{tree['n_samples_fed'] / n:>6.2f} {math.log2(k) + 1:>7.2f} "
            f"{diff:>11.2e}"
        )


if __name__ == "__main__":
    main()
