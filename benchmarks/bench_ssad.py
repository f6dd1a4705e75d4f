"""SSAD on ForestCover: time per grid point of 10-fold TreeCV vs standard 10-fold CV.

The semi-supervised anomaly detector (``SemiSupervisedAnomalyDetector``) on a
stratified 20,000-row sample of the ForestCover anomaly benchmark (class 2
normal, class 4 anomalous, 5 % of the labels revealed to training), scored by
the AUROC of each held-out fold against all true labels. For a few grid points
(eta_u, eta_l, kappa, gamma), three ways of computing the same 10-fold CV on the
same folds are timed side by side in this process:

- ``treecv``: ``tree_cross_validate`` (the native tree, all in C);
- ``standard``: ``tree_cross_validate(..., method="standard")``: 10 independent
  models, each fed its training rows once in the same order through
  ``partial_fit``;
- ``cross_validate``: scikit-learn's ``cross_validate`` with ``fit`` making one
  ordered pass (``max_iter=1, shuffle=False``, the pass TreeCV makes).

Two settings: ``warm``, the random features of the data already cached (every
grid point but the first of each kernel width in a grid over eta_u, eta_l and
kappa), and ``cold``, the feature cache emptied before every run. Times are
medians over ``--repeats`` runs. The last lines extrapolate to the 10^4-point
grid (10 values per hyperparameter: 10 cold and 9,990 warm runs per method).

Usage: python benchmarks/bench_ssad.py [--n N] [--repeats R]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from sklearn.model_selection import cross_validate

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _data import forestcover_anomaly  # noqa: E402

from sklearn_ext import (  # noqa: E402
    SemiSupervisedAnomalyDetector,
    StratifiedTreeCVSplitter,
    tree_cross_validate,
)
from sklearn_ext.anomaly._features import FEATURE_CACHE  # noqa: E402

K = 10
GRID = [
    # (eta_u, eta_l, kappa, gamma)
    (1.0, 1.0, 1.0, 0.01),
    (10.0, 100.0, 1.0, 0.01),
    (100.0, 10.0, 0.1, 0.1),
    (10.0, 10.0, 1.0, 1.0),
]


def median_time(fn, repeats: int, cold: bool) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        if cold:
            FEATURE_CACHE.clear()
        tic = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - tic)
    return float(np.median(times)), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    X, y, labeled = forestcover_anomaly(args.n, label_fraction=0.05, random_state=0)
    splitter = StratifiedTreeCVSplitter(K)
    plan = splitter.plan(X, y)  # The folds every method uses.
    print(
        f"ForestCover anomaly sample: {len(y)} rows, {np.sum(y < 0)} anomalies, "
        f"{labeled.sum()} labels revealed; {K}-fold CV, n_jobs=1; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    methods = {
        "treecv": lambda est: tree_cross_validate(
            est, X, y, cv=plan, fit_params={"labeled": labeled}
        )["test_score"],
        "standard": lambda est: tree_cross_validate(
            est, X, y, cv=plan, method="standard", fit_params={"labeled": labeled}
        )["test_score"],
        "cross_validate": lambda est: cross_validate(
            est, X, y, cv=splitter, params={"labeled": labeled}
        )["test_score"],
    }
    totals = {(cache, name): [] for cache in ("warm", "cold") for name in methods}
    header = f"{'grid point (eta_u, eta_l, kappa, gamma)':<42}{'cache':<7}"
    header += "".join(f"{name + ' ms':>18}" for name in methods)
    header += f"{'std/tree':>10}{'cv/tree':>9}{'AUROC':>8}"
    print(header)
    for eta_u, eta_l, kappa, gamma in GRID:
        # n_components=100 as in the Görnitz examples (and the docs' timings).
        estimator = SemiSupervisedAnomalyDetector(
            eta_u,
            eta_l,
            kappa,
            gamma,
            n_components=100,
            max_iter=1,
            shuffle=False,
            random_state=0,
        )
        for cache in ("warm", "cold"):
            if cache == "warm":
                for run in methods.values():  # Fill the feature cache.
                    run(estimator)
            row, scores = {}, {}
            for name, run in methods.items():
                seconds, scores[name] = median_time(
                    lambda run=run, est=estimator: run(est),
                    args.repeats,
                    cache == "cold",
                )
                row[name] = seconds
                totals[cache, name].append(seconds)
            label = f"({eta_u:g}, {eta_l:g}, {kappa:g}, {gamma:g})"
            line = f"{label:<42}{cache:<7}"
            line += "".join(f"{1e3 * row[name]:>18.1f}" for name in methods)
            line += f"{row['standard'] / row['treecv']:>10.1f}"
            line += f"{row['cross_validate'] / row['treecv']:>9.1f}"
            line += f"{np.mean(scores['treecv']):>8.4f}"
            print(line)
            gap = abs(np.mean(scores["treecv"]) - np.mean(scores["cross_validate"]))
            if gap > 0.02:
                print(
                    f"  note: mean AUROC of treecv and cross_validate differ by "
                    f"{gap:.3f}"
                )
    print()
    print("Mean per grid point (ms) and ratios to TreeCV:")
    for cache in ("warm", "cold"):
        means = {name: float(np.mean(totals[cache, name])) for name in methods}
        print(
            f"  {cache}: "
            + ", ".join(f"{name} {1e3 * means[name]:.1f}" for name in methods)
            + f"; standard/treecv {means['standard'] / means['treecv']:.1f}x, "
            f"cross_validate/treecv {means['cross_validate'] / means['treecv']:.1f}x"
        )
    print("Extrapolated to the 10^4-point grid (10 cold + 9,990 warm runs each):")
    for name in methods:
        warm = float(np.mean(totals["warm", name]))
        cold = float(np.mean(totals["cold", name]))
        minutes = (10 * cold + 9_990 * warm) / 60
        print(f"  {name}: {minutes:.1f} min")
    print(f"load average after the run: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
