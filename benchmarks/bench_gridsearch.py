"""TreeCV inside scikit-learn searches: rows fed per candidate and wall-time ratios.

1. Rows passed to ``partial_fit`` per candidate, k = 8, SGD on synthetic data:
   ``TreeCVEstimator`` + ``TreeCVSplitter`` with one worker, with two worker
   processes sharing the disk tier (interleaved leaf order), and plain ``KFold``.
2. ``TreeCVSearchCV(SGDClassifier)`` vs ``GridSearchCV(SGDClassifier(), cv=KFold(8))``
   on 250,000 x 100 synthetic rows (and vs one-epoch SGD fits, the like-for-like
   baseline).
3. The drop-in path for an ``MLPClassifier`` grid: ``GridSearchCV`` over
   ``TreeCVEstimator(MLP)`` with ``TreeCVSplitter(8)`` vs the same wrapper
   without cache on ``KFold(8)`` (k independent ``partial_fit`` streams).

Every figure is measured side by side in this process; times are medians.
Usage: python benchmarks/bench_gridsearch.py [--n-samples N] [--repeats R]
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
import warnings

import numpy as np
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.neural_network import MLPClassifier

from sklearn_ext import PrefixCache, TreeCVEstimator, TreeCVSearchCV, TreeCVSplitter

K = 8


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        tic = time.perf_counter()
        fn()
        times.append(time.perf_counter() - tic)
    return float(np.median(times))


def rows_fed(estimator, X, y, cv, n_jobs=1):
    result = cross_validate(
        estimator, X, y, cv=cv, n_jobs=n_jobs, return_estimator=True
    )
    return sum(e.n_samples_fed_ for e in result["estimator"]) / len(y)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=250_000)
    parser.add_argument("--n-mlp", type=int, default=40_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--with-default-sgd",
        action="store_true",
        help="also time GridSearchCV(SGDClassifier()) with its default fit (up to "
        "1000 epochs per fold: about 10 minutes at n=250,000)",
    )
    parser.add_argument("--skip", default="", help="parts to skip, e.g. 1,2")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)

    X, y = make_classification(
        args.n_samples, 100, n_informative=30, random_state=0, class_sep=0.8
    )
    sgd = SGDClassifier(shuffle=False, random_state=0)
    skip = set(args.skip.split(","))
    if "1" not in skip:
        part_rows(X, y, sgd)
    if "2" not in skip:
        part_search(X, y, sgd, args)
    if "3" not in skip:
        part_mlp(X, y, args)


def part_rows(X, y, sgd) -> None:
    classes = np.unique(y)
    print(f"1. rows fed per candidate / n, k={K}, SGD, n={len(y)}")
    seq = rows_fed(
        TreeCVEstimator(sgd, classes=classes, cache=PrefixCache(2**30)),
        X,
        y,
        TreeCVSplitter(K),
    )
    with tempfile.TemporaryDirectory() as folder:
        par = rows_fed(
            TreeCVEstimator(sgd, classes=classes, cache=PrefixCache(directory=folder)),
            X,
            y,
            TreeCVSplitter(K, leaf_order="interleaved"),
            n_jobs=2,
        )
    plain = rows_fed(TreeCVEstimator(sgd, classes=classes, cache=None), X, y, KFold(K))
    print(
        f"   TreeCVEstimator, n_jobs=1          : {seq:5.2f}"
        f"  (target <= log2(k)+0.25 = {math.log2(K) + 0.25:.2f})"
    )
    print(
        f"   TreeCVEstimator, 2 processes + disk: {par:5.2f}"
        f"  (target <= log2(k)+0.75 = {math.log2(K) + 0.75:.2f})"
    )
    print(f"   plain KFold                        : {plain:5.2f}  (k-1 = {K - 1})")


def part_search(X, y, sgd, args) -> None:
    grid = {"alpha": [1e-5, 1e-4, 1e-3]}
    print(f"\n2. search over {len(grid['alpha'])} alphas, k={K}, n={len(y)} x 100")
    t_tree = median_time(
        lambda: TreeCVSearchCV(sgd, grid, cv=TreeCVSplitter(K), refit=False).fit(X, y),
        args.repeats,
    )
    one_epoch = SGDClassifier(max_iter=1, tol=None, shuffle=False, random_state=0)
    t_epoch = median_time(
        lambda: GridSearchCV(one_epoch, grid, cv=KFold(K), refit=False).fit(X, y),
        args.repeats,
    )
    print(f"   TreeCVSearchCV                         : {t_tree:7.2f} s")
    print(
        f"   GridSearchCV(one-epoch SGD, KFold)     : {t_epoch:7.2f} s "
        f" ratio {t_epoch / t_tree:5.1f}x (like for like)"
    )
    if args.with_default_sgd:
        t_grid = median_time(
            lambda: GridSearchCV(
                SGDClassifier(random_state=0), grid, cv=KFold(K), refit=False
            ).fit(X, y),
            1,
        )
        print(
            f"   GridSearchCV(SGDClassifier(), KFold)   : {t_grid:7.2f} s "
            f" ratio {t_grid / t_tree:5.1f}x (default fit; target >= 2.5x)"
        )


def part_mlp(X, y, args) -> None:
    Xm, ym = X[: args.n_mlp, :50], y[: args.n_mlp]
    mlp = MLPClassifier(hidden_layer_sizes=(64,), batch_size=128, random_state=0)
    mlp_grid = {"estimator__alpha": [1e-4, 1e-2]}
    print(
        f"\n3. drop-in GridSearchCV, MLPClassifier(64) grid of 2, k={K}, "
        f"n={len(ym)} x 50"
    )
    t_drop = median_time(
        lambda: GridSearchCV(
            TreeCVEstimator(mlp, batch_size=1024, cache=PrefixCache(2**30)),
            mlp_grid,
            cv=TreeCVSplitter(K),
            refit=False,
        ).fit(Xm, ym),
        args.repeats,
    )
    t_kfold = median_time(
        lambda: GridSearchCV(
            TreeCVEstimator(mlp, batch_size=1024, cache=None),
            mlp_grid,
            cv=KFold(K),
            refit=False,
        ).fit(Xm, ym),
        args.repeats,
    )
    print(f"   GridSearchCV(TreeCVEstimator, TreeCVSplitter): {t_drop:6.2f} s")
    print(
        f"   GridSearchCV(same learner, KFold)            : {t_kfold:6.2f} s "
        f" ratio {t_kfold / t_drop:4.1f}x (target >= 1.5x)"
    )


if __name__ == "__main__":
    main()
