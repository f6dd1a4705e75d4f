"""A 10-fold grid search over C for an RBF SVM: cross-C warm starts vs SVC.

For ``C`` in ``2^-2 .. 2^7`` (10 values) and one ``gamma`` per data set, the
same 10 stratified folds, no refit:

(a) ``GridSearchCV(SVC(cache_size=2000))``;
(b) ``GridSearchCV(SVC(kernel="precomputed"))`` on the kernel matrix, built
    once with scikit-learn's ``rbf_kernel`` (its time included);
(c) ``alpha_seeded_cv`` at each C separately (shared kernel store and SIR fold
    seeding, no cross-C warm start);
(d) ``svm_c_path_cv``: one kernel store, fold seeding, cross-C warm starts from
    the previous C and the exact skip;
(e) ``TreeCVSearchCV(AlphaSeededSVC(gamma=...), {"C": ...})`` with every other
    setting at its default: cross-C warm starts from the search's own store,
    and the refit of the best C on all rows included in its time;
(f) the same as (e) on one thread (``threadpool_limits(1)``: one seeding
    chain).

Our runs (c) to (e) use their defaults (``cache_size="auto"``, both cores);
the SVC runs are single-threaded. Prints wall time, total SMO iterations
(LIBSVM's ``n_iter_`` for SVC; the refit's not counted), the best C and its CV
accuracy, with ratios side by side. Data: heart, madelon
(standardised) and a stratified 4,000-row sample of a9a from
``../shared/data`` (or ``$OPTUNA_TREECV_DATA``); the script says so and exits 0
when they are absent. ``--quick`` runs heart and a 1,000-row a9a sample.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _data import data_dir, svm_dataset  # noqa: E402

from sklearn_ext import TreeCVSearchCV  # noqa: E402
from sklearn_ext.model_selection import FoldPlan  # noqa: E402
from sklearn_ext.svm import (  # noqa: E402
    AlphaSeededSVC,
    alpha_seeded_cv,
    svm_c_path_cv,
)

CS = [2.0**e for e in range(-2, 8)]
SETS = {
    # name: (rows or None, gamma)
    "heart": (None, 0.2),
    "madelon": (None, 1.0 / 500),
    "a9a": (4000, 0.5),
}
QUICK = {"heart": (None, 0.2), "a9a": (1000, 0.5)}


def _n_iter(estimator, X, y) -> float:
    return float(np.sum(estimator.n_iter_))


SCORING = {"accuracy": "accuracy", "n_iter": _n_iter}


def _from_grid(search, tic):
    elapsed = time.perf_counter() - tic
    res = search.cv_results_
    n_iter = int(round(res["mean_test_n_iter"].sum() * search.n_splits_))
    best = int(np.argmax(res["mean_test_accuracy"]))
    return elapsed, n_iter, CS[best], float(res["mean_test_accuracy"][best])


def run_svc(X, y, folds, gamma):
    tic = time.perf_counter()
    search = GridSearchCV(
        SVC(gamma=gamma, cache_size=2000),
        {"C": CS},
        cv=folds,
        scoring=SCORING,
        refit=False,
    ).fit(X, y)
    return _from_grid(search, tic)


def run_precomputed(X, y, folds, gamma):
    tic = time.perf_counter()
    K = rbf_kernel(X, gamma=gamma)
    search = GridSearchCV(
        SVC(kernel="precomputed", cache_size=2000),
        {"C": CS},
        cv=folds,
        scoring=SCORING,
        refit=False,
    ).fit(K, y)
    return _from_grid(search, tic)


def run_per_C(X, y, plan, gamma):
    tic = time.perf_counter()
    n_iter, scores = 0, []
    for C in CS:
        res = alpha_seeded_cv(AlphaSeededSVC(C=C, gamma=gamma), X, y, cv=plan)
        n_iter += int(res["n_iter"].sum())
        scores.append(float(res["test_score"].mean()))
    best = int(np.argmax(scores))
    return time.perf_counter() - tic, n_iter, CS[best], scores[best]


def _summary(elapsed, res):
    """(time, SMO iterations, best C, its score, (warm-start skips, hits))."""
    best = int(np.argmax(res["mean_test_score"]))
    extra = (int(res["warm_start_skips"].sum()), int(res["warm_start_hits"].sum()))
    return (
        elapsed,
        int(res["n_iter"].sum()),
        CS[best],
        float(res["mean_test_score"][best]),
        extra,
    )


def run_path(X, y, plan, gamma):
    tic = time.perf_counter()
    res = svm_c_path_cv(AlphaSeededSVC(gamma=gamma), X, y, CS, cv=plan)
    return _summary(time.perf_counter() - tic, res)


def run_search(X, y, plan, gamma):
    tic = time.perf_counter()
    search = TreeCVSearchCV(AlphaSeededSVC(gamma=gamma), {"C": CS}, cv=plan).fit(X, y)
    return _summary(time.perf_counter() - tic, search.cv_results_)


def run_search_one_thread(X, y, plan, gamma):
    with threadpool_limits(limits=1):
        return run_search(X, y, plan, gamma)


def _ratio(reference: float, t: float) -> str:
    return f"{'-':>8}" if reference != reference else f"{reference / t:7.1f}x"


def bench(name, X, y, gamma, repeats, letters="abcdef"):
    folds = list(StratifiedKFold(10, shuffle=True, random_state=0).split(X, y))
    plan = FoldPlan([test for _, test in folds], n_samples=X.shape[0])
    runs = {
        "(a) GridSearchCV SVC": lambda: run_svc(X, y, folds, gamma),
        "(b) GridSearchCV precomp": lambda: run_precomputed(X, y, folds, gamma),
        "(c) ours per C": lambda: run_per_C(X, y, plan, gamma),
        "(d) ours svm_c_path_cv": lambda: run_path(X, y, plan, gamma),
        "(e) TreeCVSearchCV+refit": lambda: run_search(X, y, plan, gamma),
        "(f) (e) on one thread": lambda: run_search_one_thread(X, y, plan, gamma),
    }
    runs = {label: run for label, run in runs.items() if label[1] in letters}
    # Repeats go round the runs, so that a change of machine load hits all alike.
    measured = {label: [] for label in runs}
    for _ in range(repeats):
        for label, run in runs.items():
            measured[label].append(run())
    rows = {
        label: (statistics.median(m[0] for m in ms), *ms[0][1:])
        for label, ms in measured.items()
    }
    nan = (float("nan"), -1)
    t_a = rows.get("(a) GridSearchCV SVC", nan)[0]
    t_b = rows.get("(b) GridSearchCV precomp", nan)[0]
    # Both GridSearchCV runs are LIBSVM from alpha = 0: the same iterations.
    it_a = max(
        rows.get(k, nan)[1]
        for k in ("(a) GridSearchCV SVC", "(b) GridSearchCV precomp")
    )
    print(
        f"\n{name}: n={X.shape[0]}, d={X.shape[1]}, gamma={gamma:g}, "
        f"C in 2^-2..2^7 ({len(CS)} values), k=10, median of {repeats}, "
        f"load {os.getloadavg()[0]:.2f}"
    )
    print(
        f"  {'run':<27}{'time s':>9}{'vs (a)':>8}{'vs (b)':>8}"
        f"{'SMO iter':>10}{'vs (a)':>8}{'best C':>8}{'CV acc':>8}"
    )
    for label, (t, it, best_C, acc, *extra) in rows.items():
        if it < 0:
            iters = f"{'-':>10}{'':8}"
        elif it_a > 0:
            iters = f"{it:10d}{it / it_a:8.2f}"
        else:
            iters = f"{it:10d}{'-':>8}"
        print(
            f"  {label:<27}{t:9.3f}{_ratio(t_a, t)}{_ratio(t_b, t)}"
            f"{iters}{best_C:8g}{acc:8.4f}"
        )
        if extra:
            skips, hits = extra[0]
            print(f"  {'':<27}warm-start seeds {hits} folds, exact skips {skips}")
    sys.stdout.flush()
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small, fast run")
    parser.add_argument("--sets", default=None, help="comma-separated data sets")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument(
        "--runs", default="abcdef", help="which runs, e.g. 'bd' (default: all)"
    )
    args = parser.parse_args(argv)
    if not data_dir().is_dir():
        print(
            f"Data folder {data_dir()} not found: set OPTUNA_TREECV_DATA to the "
            "folder holding heart.npz, madelon.npz and a9a.npz."
        )
        return 0
    sets = QUICK if args.quick else SETS
    names = args.sets.split(",") if args.sets else list(sets)
    for name in names:
        n_rows, gamma = sets[name]
        data = svm_dataset(name, n_rows)
        if data is None:
            print(f"{name}.npz not found in {data_dir()}; skipped.")
            continue
        X, y = data
        repeats = args.repeats or (3 if X.shape[0] <= 1000 else 1)
        bench(name, X, y, gamma, repeats, args.runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
