"""Shared helpers of the native-learner benchmarks: data, plans, standard CV."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.base import clone, is_classifier

from sklearn_ext import FoldPlan, tree_cross_validate

DATA_ENV = "OPTUNA_TREECV_DATA"


def require(name: str) -> Path:
    """Path of a shared data file, or exit 0 with a clear message if absent."""
    folder = (
        Path(os.environ[DATA_ENV])
        if DATA_ENV in os.environ
        else Path(__file__).resolve().parents[2] / "shared" / "data"
    )
    path = folder / name
    if not path.is_file():
        print(
            f"{path} not found: this benchmark needs the project's shared data "
            f"({name}). Set {DATA_ENV} to the folder that holds it."
        )
        sys.exit(0)
    return path


def covtype_binary(seed: int = 0):
    """Covertype, class 1 vs rest in {-1, +1}, standardised, rows permuted once."""
    with np.load(require("covtype.npz")) as data:
        X, y = data["X"].astype(np.float64), data["y"]
    X -= X.mean(axis=0)
    X /= X.std(axis=0)
    order = np.random.RandomState(seed).permutation(len(y))
    return np.ascontiguousarray(X[order]), np.where(y[order] == 1, 1, -1)


FLIGHT_FEATURES = (
    "month",
    "day",
    "dep_time",
    "dep_delay",
    "air_time",
    "distance",
    "hour",
    "minute",
)


def flights(seed: int = 0):
    """nycflights13: standardised numeric features, ``arr_delay`` scaled to [0, 1]."""
    with np.load(require("nycflights13_flights.npz")) as data:
        num = data["num"].astype(np.float64)
        names = [str(name) for name in data["num_cols"]]
    columns = [names.index(name) for name in FLIGHT_FEATURES]
    target = num[:, names.index("arr_delay")]
    X = num[:, columns]
    keep = np.isfinite(target) & np.all(np.isfinite(X), axis=1)
    X, target = X[keep], target[keep]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    y = (target - target.min()) / (target.max() - target.min())
    order = np.random.RandomState(seed).permutation(len(y))
    return np.ascontiguousarray(X[order]), y[order]


def chunk_plan(permutation, n_splits, order, seed=0) -> FoldPlan:
    """k contiguous chunks of ``permutation`` (the data permuted by it)."""
    if n_splits == len(permutation):
        folds = permutation.reshape(-1, 1)
    else:
        folds = np.array_split(permutation, n_splits)
    return FoldPlan(folds, len(permutation), order=order, seed=seed)


def native_tree(estimator, X, y, plan, scoring=None, n_jobs=None):
    """Per-fold scores and the total rows fed, by ``tree_cross_validate``.

    The plan is built by the caller (once) and passed as ``cv``; the timing covers
    input validation and the native tree engine.
    """
    result = tree_cross_validate(
        estimator, X, y, cv=plan, scoring=scoring, n_jobs=n_jobs, return_run_info=True
    )
    if result["backend"] != "native_tree":
        raise RuntimeError(f"expected the native tree, got {result['backend']}")
    return result["test_score"], result["n_samples_fed"]


def standard_cv(estimator, X, y, plan, randomized, rng, metric):
    """Conventional k-fold CV: k fresh models, each fed its training chunks as one
    stream (ascending chunk order, or one random permutation of those rows).

    Rows are fed by index through the learner's own kernel (``_feed``, as
    ``partial_fit`` does after validation) so that neither engine pays for
    copying training sets. Returns the per-fold ``metric(model, rows)``.
    """
    classifier = is_classifier(estimator)
    classes = np.unique(y) if classifier else None
    y_encoded = np.searchsorted(classes, y).astype(np.float64) if classifier else y
    scores = np.empty(plan.n_splits)
    for fold in range(plan.n_splits):
        start, end = plan.bounds[fold], plan.bounds[fold + 1]
        train = np.concatenate([plan.sample_order[:start], plan.sample_order[end:]])
        if randomized:
            train = rng.permutation(train)
        model = clone(estimator)
        # One real partial_fit call sets classes_ and the state; the rest by index.
        kwargs = {"classes": classes} if classifier else {}
        model.partial_fit(X[train[:1]], y[train[:1]], **kwargs)
        model._feed(X, y_encoded, None, train[1:])
        model._sync_attributes()
        scores[fold] = metric(model, plan.sample_order[start:end])
    return scores


def timed(function, *args, **kwargs):
    tic = time.perf_counter()
    value = function(*args, **kwargs)
    return value, time.perf_counter() - tic


def fold_weighted(plan, per_fold) -> float:
    """Mean of per-fold values weighted by fold size (the pooled CV estimate)."""
    sizes = np.diff(plan.bounds)
    return float(np.sum(np.asarray(per_fold) * sizes) / plan.n_samples)
