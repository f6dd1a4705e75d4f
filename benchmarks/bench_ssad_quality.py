"""SSAD detection quality: AUROC and time against scikit-learn's detectors.

Three parts, each measured side by side in one run (``--parts`` picks them):

``quality``
    AUROC of ``decision_function`` (normal class positive; the same as the AUROC
    of ``-decision_function`` with anomalies positive) on held-out rows, and the
    time each detector took, for

    - ``SemiSupervisedAnomalyDetector`` with its defaults (``random_state`` set),
      fit with the revealed labels;
    - the same detector tuned by TreeCV: ``TreeCVSearchCV`` over ``GRID``
      (216 points, 10-fold stratified TreeCV on the training rows, with the
      revealed labels), refit on all training rows; its time is search + refit;
    - ``OneClassSVM()``, ``IsolationForest(random_state=seed)`` and
      ``LocalOutlierFactor(novelty=True)`` with their defaults, fit on the
      training rows without labels.

    Two data sets. *planted* (issue 23): 3,000 N(0, I) rows in 5 dimensions
    plus 60 anomalies N(4, I), 10 % of the labels revealed; the test rows are
    an independent draw of the same size. One data set per seed 0..7.
    *ForestCover*: a stratified sample of ``2 n`` rows of the ForestCover
    anomaly benchmark (``benchmarks/_data.py``), split in half stratified;
    5 % of the training labels revealed; seeds 0..``repeats - 1`` seed the
    detectors (the data are fixed). Detectors run interleaved, seed by seed;
    times are medians over the seeds, AUROC min / median.

``components``
    SSAD defaults with ``n_components`` in ``COMPONENTS``: the AUROC over the
    seeds on both data sets, the median fit time on ForestCover, and the time
    of one 10-fold TreeCV run on the ForestCover training rows with the feature
    cache emptied (cold) and filled (warm). This is the measurement behind the
    default ``n_components``.

``gamma``
    How the native tree resolves ``gamma="scale"``: 10-fold TreeCV with
    ``gamma`` resolved once from all rows (what the tree does) against the
    exact per-fold alternative, ``cross_validate`` with ``fit``'s one ordered
    pass, which resolves ``"scale"`` from each fold's training rows; cold and
    warm feature cache, medians of interleaved repeats, and the fold-mean AUROC
    of both.

Usage: python benchmarks/bench_ssad_quality.py [--n N] [--repeats R]
       [--parts quality,components,gamma]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict

import numpy as np
from sklearn.ensemble import IsolationForest
from sklearn.model_selection import cross_validate, train_test_split
from sklearn.neighbors import LocalOutlierFactor
from sklearn.svm import OneClassSVM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _data import forestcover_anomaly  # noqa: E402

from sklearn_ext import (  # noqa: E402
    SemiSupervisedAnomalyDetector,
    StratifiedTreeCVSplitter,
    TreeCVSearchCV,
    tree_cross_validate,
)
from sklearn_ext.anomaly._features import FEATURE_CACHE, resolve_gamma  # noqa: E402
from sklearn_ext.anomaly._labels import auroc  # noqa: E402

K = 10
GRID = {
    "eta_u": [1.0, 10.0, 100.0],
    "eta_l": [1.0, 10.0, 100.0, 1000.0],
    "kappa": [0.1, 1.0, 10.0],
    "gamma": ["scale", 1e-4, 1e-3, 1e-2, 1e-1, 1.0],
}
COMPONENTS = [50, 100, 200, 300, 500, 1000]
PLANTED_SEEDS = range(8)


def planted(seed: int, n_normal=3000, n_anomalies=60, n_features=5, fraction=0.1):
    """The example of issue 23: N(0, I) rows, anomalies around 4 in every coordinate."""
    rng = np.random.RandomState(seed)
    X = np.r_[
        rng.normal(size=(n_normal, n_features)),
        4.0 + rng.normal(size=(n_anomalies, n_features)),
    ]
    y = np.r_[np.ones(n_normal, dtype=int), -np.ones(n_anomalies, dtype=int)]
    return X, y, rng.rand(len(y)) < fraction


def planted_split(seed: int):
    """Training rows of seed ``seed`` and an independent test draw."""
    X, y, labeled = planted(seed)
    X_test, y_test, _ = planted(10_000 + seed)
    return X, y, labeled, X_test, y_test


def forestcover_split(n: int):
    X, y, labeled = forestcover_anomaly(2 * n, label_fraction=0.05, random_state=0)
    X, X_test, y, y_test, labeled, _ = train_test_split(
        X, y, labeled, test_size=0.5, stratify=y, random_state=0
    )
    return X, y, labeled, X_test, y_test


def detectors(seed: int) -> dict:
    """name -> fit(X, y, labeled) returning a fitted detector."""

    def ssad_defaults(X, y, labeled):
        model = SemiSupervisedAnomalyDetector(random_state=seed)
        return model.fit(X, y, labeled=labeled)

    def ssad_tuned(X, y, labeled):
        search = TreeCVSearchCV(
            SemiSupervisedAnomalyDetector(random_state=seed),
            GRID,
            cv=StratifiedTreeCVSplitter(K),
        )
        return search.fit(X, y, labeled=labeled)

    return {
        "SSAD defaults": ssad_defaults,
        "SSAD tuned (TreeCV)": ssad_tuned,
        "OneClassSVM()": lambda X, y, labeled: OneClassSVM().fit(X),
        "IsolationForest()": lambda X, y, labeled: IsolationForest(
            random_state=seed
        ).fit(X),
        "LOF(novelty=True)": lambda X, y, labeled: LocalOutlierFactor(novelty=True).fit(
            X
        ),
    }


def quality(name: str, splits, seeds) -> None:
    """Interleaved: for each seed, every detector in turn."""
    aurocs, fit_times = defaultdict(list), defaultdict(list)
    score_times = defaultdict(list)
    best = []
    for seed in seeds:
        X, y, labeled, X_test, y_test = splits(seed)
        for label, fit in detectors(seed).items():
            FEATURE_CACHE.clear()
            tic = time.perf_counter()
            model = fit(X, y, labeled)
            fit_times[label].append(time.perf_counter() - tic)
            tic = time.perf_counter()
            decision = model.decision_function(X_test)
            score_times[label].append(time.perf_counter() - tic)
            aurocs[label].append(auroc(y_test > 0, decision))
            if isinstance(model, TreeCVSearchCV):
                best.append(model.best_params_)
    X, y, labeled, X_test, _ = splits(seeds[0])
    print(
        f"\n{name}: {len(y)} training rows ({np.sum(y < 0)} anomalies, "
        f"{labeled.sum()} labels revealed), {len(X_test)} test rows, "
        f"{X.shape[1]} features; {len(seeds)} seeds"
    )
    print(
        f"{'detector':<22}{'AUROC min':>10}{'median':>8}{'max':>8}"
        f"{'fit s':>9}{'score s':>9}"
    )
    for label in aurocs:
        values = aurocs[label]
        print(
            f"{label:<22}{min(values):>10.4f}{np.median(values):>8.4f}"
            f"{max(values):>8.4f}{np.median(fit_times[label]):>9.3f}"
            f"{np.median(score_times[label]):>9.3f}"
        )
    for seed, params in zip(seeds, best, strict=True):
        print(f"  tuned, seed {seed}: {params}")


def components(n: int, repeats: int) -> None:
    fc = forestcover_split(n)
    X, y, labeled = fc[:3]
    plan = StratifiedTreeCVSplitter(K).plan(X, y)
    rows = {D: defaultdict(list) for D in COMPONENTS}
    for seed in range(max(repeats, len(PLANTED_SEEDS))):
        data = {"forestcover": fc}
        if seed in PLANTED_SEEDS:
            data["planted"] = planted_split(seed)
        for D in COMPONENTS:
            for name, (Xd, yd, ld, X_test, y_test) in data.items():
                if name == "forestcover" and seed >= repeats:
                    continue
                model = SemiSupervisedAnomalyDetector(n_components=D, random_state=seed)
                FEATURE_CACHE.clear()
                tic = time.perf_counter()
                model.fit(Xd, yd, labeled=ld)
                rows[D][name + " fit"].append(time.perf_counter() - tic)
                rows[D][name].append(auroc(y_test > 0, model.decision_function(X_test)))
            if seed < repeats:
                model = SemiSupervisedAnomalyDetector(n_components=D, random_state=seed)
                for cache in ("cold", "warm"):
                    if cache == "cold":
                        FEATURE_CACHE.clear()
                    tic = time.perf_counter()
                    tree_cross_validate(
                        model, X, y, cv=plan, fit_params={"labeled": labeled}
                    )
                    rows[D]["cv " + cache].append(time.perf_counter() - tic)
    print(
        f"\nn_components: SSAD defaults otherwise; AUROC min / median over seeds "
        f"(planted {len(PLANTED_SEEDS)}, ForestCover {repeats}); ForestCover fit "
        f"and one {K}-fold TreeCV run on its {len(y)} training rows"
    )
    print(
        f"{'n_components':<14}{'planted min':>12}{'median':>8}{'forest min':>12}"
        f"{'median':>8}{'max':>8}{'fit s':>8}{'cv cold s':>11}{'cv warm s':>11}"
    )
    for D in COMPONENTS:
        r = rows[D]
        print(
            f"{D:<14}{min(r['planted']):>12.4f}{np.median(r['planted']):>8.4f}"
            f"{min(r['forestcover']):>12.4f}{np.median(r['forestcover']):>8.4f}"
            f"{max(r['forestcover']):>8.4f}"
            f"{np.median(r['forestcover fit']):>8.3f}"
            f"{np.median(r['cv cold']):>11.3f}{np.median(r['cv warm']):>11.3f}"
        )


def gamma_resolution(n: int, repeats: int) -> None:
    X, y, labeled = forestcover_anomaly(n, label_fraction=0.05, random_state=0)
    plan = StratifiedTreeCVSplitter(K).plan(X, y)
    splits = list(plan.split())
    gamma = resolve_gamma("scale", X)
    params = dict(eta_u=10.0, eta_l=10.0, kappa=1.0, random_state=0)
    tree = SemiSupervisedAnomalyDetector(**params)  # gamma="scale"
    one_pass = SemiSupervisedAnomalyDetector(**params, max_iter=1, shuffle=False)
    runs = {
        "TreeCV, gamma once from all rows": lambda: tree_cross_validate(
            tree, X, y, cv=plan, fit_params={"labeled": labeled}
        )["test_score"],
        "cross_validate, gamma per fold": lambda: cross_validate(
            one_pass, X, y, cv=splits, params={"labeled": labeled}
        )["test_score"],
    }
    print(
        f"\ngamma='scale' in {K}-fold CV, ForestCover {len(y)} rows, "
        f"SSAD(eta_u=10, eta_l=10, kappa=1), n_components="
        f"{tree.n_components}; gamma from all rows {gamma:.6f}; "
        f"medians of {repeats} interleaved repeats"
    )
    for cache in ("cold", "warm"):
        times, scores = defaultdict(list), {}
        for _ in range(repeats):
            for label, run in runs.items():
                if cache == "cold":
                    FEATURE_CACHE.clear()
                else:
                    run()
                tic = time.perf_counter()
                scores[label] = run()
                times[label].append(time.perf_counter() - tic)
        base = np.median(times[next(iter(runs))])
        for label in runs:
            seconds = np.median(times[label])
            print(
                f"  {cache:<5}{label:<36}{1e3 * seconds:>10.1f} ms"
                f"{seconds / base:>7.1f}x   mean AUROC {np.mean(scores[label]):.4f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="ForestCover rows")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--parts", default="quality,components,gamma")
    args = parser.parse_args()
    parts = args.parts.split(",")
    print(f"load average {os.getloadavg()[0]:.2f} (1 min) at the start")
    if "quality" in parts:
        quality("planted (issue 23)", planted_split, list(PLANTED_SEEDS))
        fc = forestcover_split(args.n)
        quality("ForestCover", lambda seed: fc, list(range(args.repeats)))
    if "components" in parts:
        components(args.n, args.repeats)
    if "gamma" in parts:
        gamma_resolution(args.n, args.repeats)
    print(f"\nload average {os.getloadavg()[0]:.2f} (1 min) at the end")


if __name__ == "__main__":
    main()
