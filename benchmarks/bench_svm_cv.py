"""Alpha-seeded k-fold CV of kernel SVMs against scikit-learn's SVC.

For each data set and k, times the whole k-fold CV and counts SMO iterations:

(a) a StratifiedKFold loop over ``SVC(cache_size=2000)``;
(b) the same loop on one precomputed kernel matrix (its computation included);
(c) ``alpha_seeded_cv`` with ``seeding="none"`` (shared kernel store only);
(d) ``alpha_seeded_cv`` with each seeding mode (sir, mir, ato, keep).

All runs use the same StratifiedKFold folds. Data: ``../shared/data/*.npz``
(or ``$OPTUNA_TREECV_DATA``); the script says so and exits 0 when absent.
Run ``python benchmarks/bench_svm_cv.py --quick`` for a short run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _data import data_dir, svm_dataset  # noqa: E402

from sklearn_ext.model_selection import FoldPlan  # noqa: E402
from sklearn_ext.svm import AlphaSeededSVC, alpha_seeded_cv  # noqa: E402
from sklearn_ext.svm._kernel_store import kernel_matrix  # noqa: E402

SEEDINGS = ("sir", "mir", "ato", "keep")


SETS = {
    # name: (rows or None, C, gamma, ks)
    "heart": (None, 2182.0, 0.2, (10, 100)),
    "madelon": (None, 1.0, 1.0 / 500, (10, 100)),
    "a9a": (8000, 100.0, 0.5, (10,)),
    "w8a": (8000, 64.0, 7.8125, (10,)),
}
QUICK = {
    "heart": (None, 2182.0, 0.2, (10, 100)),
    "madelon": (None, 1.0, 1.0 / 500, (10,)),
    "a9a": (2000, 100.0, 0.5, (10,)),
    "w8a": (2000, 64.0, 7.8125, (10,)),
}


def run_svc(X, y, folds, C, gamma):
    tic = time.perf_counter()
    n_iter, acc = 0, []
    for train, test in folds:
        model = SVC(C=C, gamma=gamma, cache_size=2000).fit(X[train], y[train])
        n_iter += int(model.n_iter_.sum())
        acc.append(model.score(X[test], y[test]))
    return time.perf_counter() - tic, n_iter, float(np.mean(acc))


def run_precomputed(X, y, folds, C, gamma):
    tic = time.perf_counter()
    K = kernel_matrix(X, X, "rbf", gamma, 3, 0.0)
    n_iter, acc = 0, []
    for train, test in folds:
        model = SVC(C=C, kernel="precomputed", cache_size=2000)
        model.fit(K[np.ix_(train, train)], y[train])
        n_iter += int(model.n_iter_.sum())
        acc.append(model.score(K[np.ix_(test, train)], y[test]))
    return time.perf_counter() - tic, n_iter, float(np.mean(acc))


def run_ours(X, y, plan, C, gamma, seeding):
    model = AlphaSeededSVC(C=C, gamma=gamma, cache_size=2000)
    tic = time.perf_counter()
    result = alpha_seeded_cv(model, X, y, cv=plan, seeding=seeding)
    elapsed = time.perf_counter() - tic
    return elapsed, int(result["n_iter"].sum()), float(result["test_score"].mean())


def bench(name, X, y, C, gamma, k, repeats, ato_max_rows):
    cv = StratifiedKFold(k, shuffle=True, random_state=0)
    folds = list(cv.split(X, y))
    plan = FoldPlan([test for _, test in folds], n_samples=X.shape[0])
    runs = {
        "(a) SVC": lambda: run_svc(X, y, folds, C, gamma),
        "(b) SVC precomputed": lambda: run_precomputed(X, y, folds, C, gamma),
        "(c) ours none": lambda: run_ours(X, y, plan, C, gamma, "none"),
    }
    for seeding in SEEDINGS:
        if seeding == "ato" and X.shape[0] > ato_max_rows:
            continue  # ATO's dense path solves grow as n^3; see --ato-max-rows
        runs[f"(d) ours {seeding}"] = lambda seeding=seeding: run_ours(
            X, y, plan, C, gamma, seeding
        )
    rows = {}
    for label, run in runs.items():
        measured = [run() for _ in range(repeats)]
        rows[label] = (
            statistics.median(m[0] for m in measured),
            measured[0][1],
            measured[0][2],
        )
    t_a, t_b, it_c = rows["(a) SVC"][0], rows["(b) SVC precomputed"][0], None
    it_c = rows["(c) ours none"][1]
    print(
        f"\n{name}: n={X.shape[0]}, d={X.shape[1]}, C={C:g}, gamma={gamma:g}, "
        f"k={k}, median of {repeats}"
    )
    print(
        f"  {'run':<22}{'time s':>9}{'vs (a)':>8}{'vs (b)':>8}"
        f"{'SMO iter':>10}{'vs (c)':>8}{'CV acc':>8}"
    )
    for label, (t, it, acc) in rows.items():
        vs_c = f"{it / it_c:8.2f}" if label.startswith(("(c)", "(d)")) else " " * 8
        print(
            f"  {label:<22}{t:9.3f}{t_a / t:7.1f}x{t_b / t:7.1f}x"
            f"{it:10d}{vs_c}{acc:8.4f}"
        )
    sys.stdout.flush()
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small, fast run")
    parser.add_argument("--sets", default=None, help="comma-separated data sets")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument(
        "--ato-max-rows",
        type=int,
        default=4000,
        help="skip seeding='ato' (slow) on larger data sets",
    )
    args = parser.parse_args(argv)
    if not data_dir().exists():
        print(
            f"Data folder {data_dir()} not found: set OPTUNA_TREECV_DATA to the "
            "folder holding heart.npz, madelon.npz, a9a.npz and w8a.npz."
        )
        return 0
    sets = QUICK if args.quick else SETS
    names = args.sets.split(",") if args.sets else list(sets)
    for name in names:
        rows, C, gamma, ks = sets[name]
        data = svm_dataset(name, rows)
        if data is None:
            print(f"{name}.npz not found in {data_dir()}; skipped.")
            continue
        X, y = data
        for k in ks:
            repeats = args.repeats or (3 if X.shape[0] <= 2000 and k <= 10 else 1)
            bench(name, X, y, C, gamma, k, repeats, args.ato_max_rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
