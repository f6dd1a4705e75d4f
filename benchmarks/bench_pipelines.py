"""Pipelines through the tree against scikit-learn's CV of the same pipeline.

On unscaled Covertype rows (class 1 vs rest, rows permuted once), k-fold CV on the
same folds (``TreeCVSplitter(k)``):

- ``tree``: ``tree_cross_validate(make_pipeline(StandardScaler(), SGDClassifier()))``
  (the Python tree streams the pipeline: each batch of 256 rows updates the scaler,
  then the learner);
- ``cv-stream``: ``cross_validate`` of the same streaming regime (the estimator the
  tree's refit returns, ``one_pass_estimator(pipeline)``): k independent streamed
  fits, the same fold models as the tree's (only for the k in ``--stream-ks``: at
  k = 100 it is the slowest of all and not the fair peer);
- ``cv-one-pass``: ``cross_validate`` of the pipeline configured for one ordered pass
  (``SGDClassifier(max_iter=1, tol=None, shuffle=False)``), the scaler fitted on each
  fold's rows at once: scikit-learn's fastest one-pass CV, the fair peer;
- ``tree-sgd``: ``tree_cross_validate(SGDClassifier())`` on the rows scaled once
  (the default learner, streamed in batches of 256);
- ``cv-one-pass-sgd``: ``cross_validate`` of ``SGDClassifier(max_iter=1, tol=None,
  shuffle=False)`` on the same rows, its peer.

Rounds are interleaved; each prints the median of its repeats, the rows fed against
``(log2 k + 1) n``, the mean scores, the peers' time over the tree's, and the load
average. Also checks that a ``TreeCVSearchCV``'s ``best_score_`` is the CV of
``clone(best_estimator_)`` on the same folds.

Then issue 34's search cost (``--search-alphas 0`` skips it): a
``TreeCVSearchCV(SGDClassifier(), 20 alphas, cv=10)`` on the scaled rows, its
regime gap measured, against the same search over the one-pass configuration.

Run: ``python benchmarks/bench_pipelines.py [--rows 200000] [--ks 10,100]
[--stream-ks 10] [--repeats 3] [--search-alphas 20]``.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import require  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.linear_model import SGDClassifier  # noqa: E402
from sklearn.model_selection import cross_val_score, cross_validate  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from sklearn_ext import (  # noqa: E402
    TreeCVSearchCV,
    TreeCVSplitter,
    one_pass_estimator,
    tree_cross_validate,
)


def covtype_raw(n_rows: int, seed: int = 0):
    """Unscaled Covertype rows, class 1 vs rest, permuted once."""
    with np.load(require("covtype.npz")) as data:
        X, y = data["X"].astype(np.float64), data["y"]
    order = np.random.RandomState(seed).permutation(len(y))[:n_rows]
    return np.ascontiguousarray(X[order]), np.where(y[order] == 1, 1, 0)


def pipeline():
    return make_pipeline(StandardScaler(), SGDClassifier(random_state=0))


def one_pass_pipeline():
    sgd = SGDClassifier(max_iter=1, tol=None, shuffle=False, random_state=0)
    return make_pipeline(StandardScaler(), sgd)


def one_pass_sgd():
    return SGDClassifier(max_iter=1, tol=None, shuffle=False, random_state=0)


def run_once(kind: str, X, y, X_scaled, cv):
    tic = time.perf_counter()
    if kind.startswith("tree"):
        est = pipeline() if kind == "tree" else SGDClassifier(random_state=0)
        data = X if kind == "tree" else X_scaled
        # No run info: it would add the regime gap's own fits, which the peers
        # do not make; the rows fed are the plan's.
        scores = tree_cross_validate(est, data, y, cv=cv)["test_score"]
        fed = cv.plan(data, y).n_samples_fed()
    else:
        data = X_scaled if kind == "cv-one-pass-sgd" else X
        model = {
            "cv-stream": lambda: one_pass_estimator(
                pipeline(), classes=np.unique(y), X=X
            ),
            "cv-one-pass": one_pass_pipeline,
            "cv-one-pass-sgd": one_pass_sgd,
        }[kind]()
        scores = cross_validate(model, data, y, cv=cv)["test_score"]
        fed = (cv.get_n_splits() - 1) * len(y)
    return time.perf_counter() - tic, float(np.mean(scores)), fed


PEERS = {"tree": "cv-one-pass", "tree-sgd": "cv-one-pass-sgd"}


def search_cost(X, y, n_alphas: int, repeats: int) -> None:
    """Issue 34's figure: a search of the default learner, regime gap included.

    ``TreeCVSearchCV(SGDClassifier(), n_alphas alphas, cv=10)`` (its regime gap
    measured once, for the best candidate, and its refit) against the same
    search over ``SGDClassifier(max_iter=1, tol=None, shuffle=False)``, whose
    ``fit`` is the tree's regime (no gap to measure). Goal: at most 1.35x.
    """
    grid = {"alpha": list(np.logspace(-7, -2, n_alphas))}
    learners = {
        "search-default": SGDClassifier(random_state=0),
        "search-one-pass": one_pass_sgd(),
    }
    times: dict[str, list[float]] = {name: [] for name in learners}
    gap = None
    for _ in range(repeats):
        for name, learner in learners.items():
            tic = time.perf_counter()
            search = TreeCVSearchCV(learner, grid, cv=TreeCVSplitter(10)).fit(X, y)
            times[name].append(time.perf_counter() - tic)
            if name == "search-default":
                gap = getattr(search, "regime_gap_", None)
    medians = {name: statistics.median(t) for name, t in times.items()}
    print(f"\nTreeCVSearchCV, {n_alphas} alphas, cv=10, n={len(y)} (rows scaled once):")
    for name, median in medians.items():
        print(f"  {name:<16} median {median:7.3f} s")
    ratio = medians["search-default"] / medians["search-one-pass"]
    print(
        f"  default / one-pass: {ratio:.2f}x (goal <= 1.35x); regime gap "
        f"{gap}  (load {os.getloadavg()[0]:.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--ks", default="10,100")
    parser.add_argument("--stream-ks", default="10")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--search-alphas", type=int, default=20)
    args = parser.parse_args()
    X, y = covtype_raw(args.rows)
    X_scaled = (X - X.mean(axis=0)) / X.std(axis=0)
    n = len(y)
    print(f"covtype (unscaled), n={n}, d={X.shape[1]}, load {os.getloadavg()}")
    warnings.simplefilter("ignore")  # the regime and convergence notes
    stream_ks = {int(k) for k in args.stream_ks.split(",") if k}
    for k in (int(k) for k in args.ks.split(",") if k):
        cv = TreeCVSplitter(k)
        kinds = ["tree", "cv-one-pass", "tree-sgd", "cv-one-pass-sgd"]
        if k in stream_ks:
            kinds.insert(1, "cv-stream")
        times: dict[str, list[float]] = {kind: [] for kind in kinds}
        last: dict[str, tuple[float, int]] = {}
        for _ in range(args.repeats):
            for kind in kinds:  # interleaved rounds
                seconds, mean, fed = run_once(kind, X, y, X_scaled, cv)
                times[kind].append(seconds)
                last[kind] = (mean, fed)
        bound = (math.log2(k) + 1) * n
        print(f"\nk = {k}: rows fed bound (log2 k + 1) n = {bound:,.0f}")
        medians = {kind: statistics.median(times[kind]) for kind in kinds}
        for kind in kinds:
            mean, fed = last[kind]
            tree = (
                "tree" if kind in ("tree", "cv-stream", "cv-one-pass") else "tree-sgd"
            )
            print(
                f"  {kind:<16} median {medians[kind]:7.3f} s  mean score {mean:.4f}  "
                f"rows fed {fed:>12,}  ({medians[kind] / medians[tree]:5.2f}x the "
                f"{tree}'s time)"
            )
        for tree, peer in PEERS.items():
            print(
                f"  {peer} / {tree}: {medians[peer] / medians[tree]:.2f}x  "
                f"(load {os.getloadavg()[0]:.2f})"
            )
    if args.search_alphas:
        search_cost(X_scaled, y, args.search_alphas, args.repeats)
    cv = TreeCVSplitter(10)
    search = TreeCVSearchCV(
        pipeline(), {"sgdclassifier__alpha": [1e-5, 1e-4, 1e-3]}, cv=cv
    ).fit(X[:50_000], y[:50_000])
    again = cross_val_score(
        clone(search.best_estimator_), X[:50_000], y[:50_000], cv=cv
    )
    print(
        f"\nTreeCVSearchCV on 50,000 rows, 10 folds: best_score_ "
        f"{search.best_score_:.6f}, CV of clone(best_estimator_) {again.mean():.6f}"
    )
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
