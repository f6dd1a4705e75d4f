"""Exact k-fold CV from sufficient statistics, side by side with the usual ways.

Five parts, each timed in one process with interleaved repeats (medians):

* ``nb``: ``MultinomialNB`` leave-one-out on digits (1,797 rows): the exact
  backend (cold statistics every repeat) against ``cross_validate`` with
  ``LeaveOneOut`` and against the Python tree (``method="treecv"``).
* ``ridge``: a 10-fold grid of 30 alphas on 200,000 x 50 synthetic rows:
  ``TreeCVSearchCV(Ridge())`` on the exact backend (cold cache every repeat;
  ``X`` writeable, and read-only so its digest is taken once) against
  ``RidgeCV(alphas, cv=10)`` and ``GridSearchCV(Ridge())``.
* ``flights``: the same grid on the nycflights13 flights (arrival delay from
  the numeric columns and one-hot carrier and origin; needs the shared data).
* ``knn``: a 10-fold ``KNeighborsClassifier`` grid over ``n_neighbors``
  1..30 on covtype's first 50,000 rows (standardised, class 1 against the
  rest): ``TreeCVSearchCV`` on the exact backend (one neighbour search) against
  ``GridSearchCV``.
* ``optuna``: a 200-trial Optuna study over ``Ridge(alpha)`` through
  ``TreeCVObjective``; the first trial computes the statistics, the others
  reuse them. Prints the first trial's time and the median of the others.

Every part checks that its scores agree with scikit-learn's, on the results of
the first timed round (no untimed warm-up run). The ``GridSearchCV`` baseline
of the ``knn`` part takes minutes; it runs ``--knn-grid-repeats`` times (1 by
default, in the first round), the exact run every round.

Usage::

    python benchmarks/bench_exact_stats.py [--parts nb ridge flights knn optuna]
        [--repeats 3] [--ridge-rows 200000] [--knn-rows 50000]
        [--knn-grid-repeats 1] [--optuna-trials 200]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _data import covtype_binary, require  # noqa: E402

from sklearn_ext import TreeCVSearchCV, tree_cross_validate  # noqa: E402
from sklearn_ext.model_selection import (  # noqa: E402
    ExactStatisticsBackend,
    StatisticsCache,
)


def interleaved(
    runs: dict, repeats: int, counts: dict[str, int] | None = None
) -> tuple[dict[str, float], dict]:
    """Median seconds of each callable, the repeats interleaved round-robin.

    ``counts`` caps the repeats of some callables (a baseline of minutes);
    they run in the first rounds. Returns the medians and each callable's
    first result, which the caller checks (so no untimed run is needed).
    """
    counts = counts or {}
    times: dict[str, list[float]] = {name: [] for name in runs}
    first: dict = {}
    for round_ in range(repeats):
        for name, run in runs.items():
            if round_ >= counts.get(name, repeats):
                continue
            tic = time.perf_counter()
            result = run()
            times[name].append(time.perf_counter() - tic)
            first.setdefault(name, result)
    medians = {name: float(np.median(values)) for name, values in times.items()}
    for name, values in times.items():
        if len(values) < repeats:
            print(f"  ({name}: {len(values)} run(s) of {repeats})")
    return medians, first


def report(title: str, medians: dict[str, float], reference: str) -> None:
    print(f"\n{title}")
    base = medians[reference]
    for name, seconds in medians.items():
        ratio = (
            "" if name == reference else f"  ({seconds / base:6.1f}x the exact time)"
        )
        print(f"  {name:<34s} {seconds:9.3f} s{ratio}")


# -- naive Bayes leave-one-out ---------------------------------------------------
def part_nb(repeats: int) -> None:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import LeaveOneOut, cross_validate
    from sklearn.naive_bayes import MultinomialNB

    X, y = load_digits(return_X_y=True)
    cv = LeaveOneOut()

    def exact():
        backend = ExactStatisticsBackend(cache=StatisticsCache(0))  # cold
        return tree_cross_validate(MultinomialNB(), X, y, cv=cv, method=backend)

    def reference():
        return cross_validate(MultinomialNB(), X, y, cv=cv)

    def tree():
        return tree_cross_validate(MultinomialNB(), X, y, cv=cv, method="treecv")

    medians, first = interleaved(
        {
            "exact (cold statistics)": exact,
            "cross_validate(LeaveOneOut)": reference,
            "python tree (method='treecv')": tree,
        },
        repeats,
    )
    ours = first["exact (cold statistics)"]
    ref = first["cross_validate(LeaveOneOut)"]
    assert np.array_equal(ours["test_score"], ref["test_score"])
    tree_scores = first["python tree (method='treecv')"]["test_score"]
    assert np.array_equal(tree_scores, ref["test_score"])
    report(
        f"MultinomialNB leave-one-out on digits ({len(y)} rows), "
        f"accuracy {ours['test_score'].mean():.4f} (bit-equal)",
        medians,
        "exact (cold statistics)",
    )


# -- ridge grids -----------------------------------------------------------------
ALPHAS = np.logspace(-3, 4, 30)


def _ridge_grid(X, y, repeats: int, title: str) -> None:
    from sklearn.linear_model import Ridge, RidgeCV
    from sklearn.model_selection import GridSearchCV, KFold

    grid = {"alpha": ALPHAS}
    cv = KFold(10)
    frozen = X.copy()
    frozen.setflags(write=False)

    def exact(data):
        def run():
            backend = ExactStatisticsBackend(cache=StatisticsCache())  # cold
            return TreeCVSearchCV(
                Ridge(), grid, cv=cv, method=backend, refit=False
            ).fit(data, y)

        return run

    def ridge_cv():
        return RidgeCV(alphas=ALPHAS, cv=cv).fit(X, y)

    def grid_search():
        return GridSearchCV(Ridge(), grid, cv=cv, refit=False).fit(X, y)

    medians, first = interleaved(
        {
            "exact, X writeable": exact(X),
            "exact, X read-only": exact(frozen),
            "RidgeCV(alphas, cv=10)": ridge_cv,
            "GridSearchCV(Ridge(), cv=10)": grid_search,
        },
        repeats,
    )
    ref = first["GridSearchCV(Ridge(), cv=10)"].cv_results_["mean_test_score"]
    gap = 0.0
    for name in ("exact, X writeable", "exact, X read-only"):
        ours = first[name].cv_results_["mean_test_score"]
        gap = max(gap, float(np.max(np.abs(ours - ref))))
    assert gap < 1e-8, gap
    best = ALPHAS[np.argmax(ref)]
    assert first["RidgeCV(alphas, cv=10)"].alpha_ == best
    report(
        f"{title}: 10-fold grid of {len(ALPHAS)} alphas, "
        f"max |mean score - GridSearchCV's| = {gap:.1e}",
        medians,
        "exact, X writeable",
    )
    frozen_time = medians["exact, X read-only"]
    print(
        "  read-only X against RidgeCV / GridSearchCV: "
        f"{medians['RidgeCV(alphas, cv=10)'] / frozen_time:.1f}x / "
        f"{medians['GridSearchCV(Ridge(), cv=10)'] / frozen_time:.1f}x"
    )


def synthetic_regression(n_rows: int, n_features: int = 50, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_features)) * rng.uniform(0.5, 2.0, n_features)
    X += rng.normal(size=n_features)
    y = X @ rng.normal(size=n_features) + rng.normal(scale=3.0, size=n_rows)
    return np.ascontiguousarray(X), y


def part_ridge(repeats: int, n_rows: int) -> None:
    X, y = synthetic_regression(n_rows)
    _ridge_grid(X, y, repeats, f"Ridge, {n_rows:,} x {X.shape[1]} synthetic rows")


def flights():
    """Arrival delay from the numeric columns and one-hot carrier and origin."""
    with np.load(require("nycflights13_flights.npz")) as data:
        num = data["num"].astype(np.float64)
        names = [str(n) for n in data["num_cols"]]
        carrier, origin = data["carrier_codes"], data["origin_codes"]
    target = names.index("arr_delay")
    keep = ~np.isnan(num).any(axis=1)
    features = np.delete(num[keep], target, axis=1)
    onehot = [
        np.eye(int(codes.max()) + 1)[codes[keep].astype(int)]
        for codes in (carrier, origin)
    ]
    X = np.hstack([features, *onehot])
    X = (X - X.mean(axis=0)) / np.maximum(X.std(axis=0), 1e-12)
    return np.ascontiguousarray(X), num[keep, target]


def part_flights(repeats: int) -> None:
    X, y = flights()
    _ridge_grid(X, y, repeats, f"Ridge, flights ({X.shape[0]:,} x {X.shape[1]})")


# -- nearest neighbours ---------------------------------------------------------
def part_knn(repeats: int, n_rows: int, grid_repeats: int) -> None:
    from sklearn.model_selection import GridSearchCV, KFold
    from sklearn.neighbors import KNeighborsClassifier

    X, y = covtype_binary(seed=0)
    X, y = X[:n_rows], y[:n_rows]  # The first rows of the permuted set.
    grid = {"n_neighbors": list(range(1, 31))}
    cv = KFold(10)

    def exact():
        backend = ExactStatisticsBackend(cache=StatisticsCache())  # cold
        return TreeCVSearchCV(
            KNeighborsClassifier(), grid, cv=cv, method=backend, refit=False
        ).fit(X, y)

    def grid_search():
        return GridSearchCV(KNeighborsClassifier(), grid, cv=cv, refit=False).fit(X, y)

    medians, first = interleaved(
        {"exact (one neighbour search)": exact, "GridSearchCV": grid_search},
        repeats,
        {"GridSearchCV": grid_repeats},
    )
    ours = first["exact (one neighbour search)"].cv_results_["mean_test_score"]
    ref = first["GridSearchCV"].cv_results_["mean_test_score"]
    gap = float(np.max(np.abs(ours - ref)))
    report(
        f"KNeighborsClassifier, covtype first {n_rows:,} rows, 10 folds, "
        f"n_neighbors 1..30, max |mean score - GridSearchCV's| = {gap:.1e}",
        medians,
        "exact (one neighbour search)",
    )


# -- an Optuna study -------------------------------------------------------------
def part_optuna(n_trials: int, n_rows: int, n_features: int) -> None:
    import optuna
    from sklearn.linear_model import Ridge

    from optuna_treecv import TreeCVObjective

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    X, y = synthetic_regression(n_rows, n_features, seed=1)
    X.setflags(write=False)  # The digest of X is then taken once.
    cache = StatisticsCache()
    objective = TreeCVObjective(
        Ridge(),
        {"alpha": optuna.distributions.FloatDistribution(1e-3, 1e4, log=True)},
        X,
        y,
        cv=10,
        warm_start_store=cache,
    )
    times: list[float] = []

    def timed(trial):
        tic = time.perf_counter()
        value = objective(trial)
        times.append(time.perf_counter() - tic)
        return value

    study = optuna.create_study(
        direction="maximize", sampler=optuna.samplers.TPESampler(seed=0)
    )
    study.optimize(timed, n_trials=n_trials)
    first, rest = times[0], float(np.median(times[1:]))
    print(
        f"\nOptuna study, {n_trials} trials over Ridge(alpha), 10 folds, "
        f"{n_rows:,} x {n_features}: first trial {first:.3f} s, later trials "
        f"median {rest:.4f} s ({rest / first:.3f} of the first; {first / rest:.1f}x "
        f"cheaper); statistics misses/hits {cache.misses}/{cache.hits}; "
        f"best alpha {study.best_params['alpha']:.3g}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--parts",
        nargs="+",
        default=["nb", "ridge", "flights", "knn", "optuna"],
        choices=["nb", "ridge", "flights", "knn", "optuna"],
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ridge-rows", type=int, default=200_000)
    parser.add_argument("--knn-rows", type=int, default=50_000)
    parser.add_argument(
        "--knn-grid-repeats",
        type=int,
        default=1,
        help="repeats of the GridSearchCV baseline of the knn part (minutes each)",
    )
    parser.add_argument("--optuna-trials", type=int, default=200)
    parser.add_argument(
        "--optuna-shape",
        type=int,
        nargs=2,
        default=[20_000, 300],
        metavar=("ROWS", "FEATURES"),
    )
    args = parser.parse_args()
    print(f"load average {os.getloadavg()}, {os.cpu_count()} CPUs")
    warnings.simplefilter("ignore")
    for part in args.parts:
        print(f"\n[{part}] load average {os.getloadavg()}")
        if part == "nb":
            part_nb(args.repeats)
        elif part == "ridge":
            part_ridge(args.repeats, args.ridge_rows)
        elif part == "flights":
            part_flights(args.repeats)
        elif part == "knn":
            part_knn(args.repeats, args.knn_rows, args.knn_grid_repeats)
        else:
            part_optuna(args.optuna_trials, *args.optuna_shape)
    print(f"\nload average {os.getloadavg()}")


if __name__ == "__main__":
    main()
