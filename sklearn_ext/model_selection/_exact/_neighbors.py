"""Nearest neighbours: one neighbour search over all rows serves every fold.

A row's neighbours among its fold's training rows are its neighbours among
all rows, those of its own chunk left out. Where the ``k``-th and the next
neighbour are at the same distance, which of them a fold's own model picks
depends on its search: those rows ask the fold's own fitted model, so that
ties are resolved exactly as scikit-learn's ``kneighbors`` resolves them.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.metrics import r2_score

from sklearn_ext.model_selection._backends import _as_slice
from sklearn_ext.model_selection._exact._base import (
    _classes_refusal,
    _classes_target,
    _Family,
    _Run,
)
from sklearn_ext.model_selection._exact._layout import _Chunks

__all__ = ["_Neighbors"]


class _NeighborStats:
    """Each row's nearest neighbours among the rows outside its own chunk.

    One neighbour search over all rows serves every fold: a row's neighbours
    in its fold's training rows are its neighbours among all rows with those
    of its own chunk left out. The search asks for a few more than needed and
    asks again, with twice as many, for the rows whose own chunk took too many.
    Kept to ``depth`` neighbours; a deeper request extends the search.
    """

    def __init__(self, estimator, X, chunks: _Chunks, depth: int) -> None:
        self.chunks = chunks
        self.tie_window = _tie_window(estimator, X)
        self._search = _neighbor_search(estimator).fit(X)
        self._X = X
        self.depth = 0
        self.distances = self.indices = None
        self._lock = threading.Lock()
        self.extend(depth)

    def extend(self, depth: int) -> None:
        with self._lock:
            if depth <= self.depth:
                return
            n_samples = self.chunks.n_samples
            of_row = self.chunks.of_row
            depth = min(depth, n_samples)
            distances = np.full((n_samples, depth), np.inf)
            indices = np.full((n_samples, depth), -1, dtype=np.intp)
            pending = np.arange(n_samples)
            share = self.chunks.sizes.max() / n_samples
            asked = min(n_samples, int(np.ceil(depth / max(1e-12, 1 - share))) + 2)
            while pending.shape[0]:
                dist, ind = self._search.kneighbors(self._X[pending], n_neighbors=asked)
                outside = of_row[ind] != of_row[pending][:, None]
                found = outside.sum(axis=1)
                done = (found >= depth) | (asked >= n_samples)
                for row, d, i, keep in zip(
                    pending[done], dist[done], ind[done], outside[done], strict=True
                ):
                    kept = np.flatnonzero(keep)[:depth]
                    distances[row, : kept.shape[0]] = d[kept]
                    indices[row, : kept.shape[0]] = i[kept]
                pending = pending[~done]
                asked = min(n_samples, 2 * asked)
            self.distances, self.indices, self.depth = distances, indices, depth

    def __getstate__(self):
        state = dict(vars(self))
        state["_lock"] = None
        return state

    def __setstate__(self, state):
        vars(self).update(state)
        self._lock = threading.Lock()


def _tie_window(estimator, X) -> float:
    """How close two squared distances may be and still swap between searches.

    Euclidean distances computed as ``|x|^2 + |y|^2 - 2 x.y`` (scikit-learn's
    brute force) carry a rounding of about ``eps`` times the squared norms,
    which depends on how the distance matrix is blocked (the rows searched,
    ``n_jobs``): neighbours that close are treated as tied. Other metrics are
    computed pair by pair, the same in every search: only equal ones tie.
    """
    metric = estimator.metric
    if not (
        metric in ("euclidean", "l2")
        or (metric == "minkowski" and estimator.p == 2 and not estimator.metric_params)
    ):
        return 0.0
    if sp.issparse(X):
        squares = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    else:
        squares = np.einsum("ij,ij->i", X, X)
    return 64.0 * np.finfo(float).eps * float(np.max(squares, initial=0.0))


def _neighbor_search(estimator):
    from sklearn.neighbors import NearestNeighbors

    return NearestNeighbors(
        algorithm=estimator.algorithm,
        leaf_size=estimator.leaf_size,
        metric=estimator.metric,
        p=estimator.p,
        metric_params=estimator.metric_params,
        n_jobs=estimator.n_jobs,
    )


class _Neighbors(_Family):
    names = (
        "sklearn.neighbors.KNeighborsClassifier",
        "sklearn.neighbors.KNeighborsRegressor",
    )
    takes_weights = False

    def supports(self, estimator) -> bool:
        return estimator.weights in ("uniform", "distance") and (
            estimator.metric != "precomputed"
        )

    def refusal(self, estimator, X, y) -> str | None:
        reason = super().refusal(estimator, X, y)
        if reason is None and _is_classifier(estimator):
            reason = _classes_refusal(estimator, y)
        return reason

    def native_metrics(self, estimator) -> tuple[str, ...]:
        # KNeighborsClassifier.score is its own, but the mixin's accuracy.
        return ("accuracy", "score") if _is_classifier(estimator) else ("r2",)

    def prepare(self, estimator, X, y):
        if _is_classifier(estimator):
            y = _classes_target(estimator, y)
        elif np.ndim(y) != 1:
            raise ValueError(
                "The exact backend runs KNeighborsRegressor on a one-dimensional "
                f"y; got y of shape {np.shape(y)}. Use method='standard'."
            )
        return X, y

    def statistics_key(self, estimator) -> tuple:
        # Content-hashed: a metric_params array is keyed by all its values.
        return (estimator.metric, estimator.p, estimator.metric_params)

    def statistics_nbytes(self, estimator, X, y, chunks, gram_budget) -> float:
        n_samples, n_features = X.shape
        depth = min(n_samples, max(estimator.n_neighbors + 1, 32))
        # The lists, one search's answers (twice as deep) and the search's index.
        return 16.0 * n_samples * 3 * depth + 16.0 * n_samples * n_features

    def statistics(self, estimator, X, y, weights, chunks, gram_budget=2**28):
        return _NeighborStats(estimator, X, chunks, max(estimator.n_neighbors + 1, 32))

    def make_fold(self, run: _Run, leaf: int):
        if run.native and not run.task.return_estimator:
            return None  # scored from the shared lists; a fold model if tied
        return self.fold_model(run.prototype, run.task, leaf)

    def fold_model(self, model, task, leaf: int):
        """A real fold model: ``fit`` on the fold's training rows (an index).

        In the splitter's own order, as ``cross_validate`` fits it: the order
        in which its search breaks ties between equally distant rows.
        """
        X, y, _ = task.rows(task.plan.fit_indices(leaf))
        return clone(model).fit(X, y)

    def score_fold(self, run: _Run, leaf: int, model):
        if not run.native:
            return run.task.score(model, leaf)
        tic = time.perf_counter()
        task = run.task
        rows = task.plan.test_indices(leaf)
        predicted = self.predict(run, leaf, model, rows)
        truth = task.y[_as_slice(rows)]
        if _is_classifier(run.prototype):
            score = float(np.mean(predicted == truth))
        else:
            score = float(r2_score(truth, predicted))
        return {"score": score}, time.perf_counter() - tic

    def neighbors(self, run: _Run, leaf: int, model, rows: np.ndarray):
        """Distances and (global) indices of the ``k`` neighbours of ``rows``.

        From the shared lists, but for the rows whose ``k``-th and next
        neighbour are equally far: those are asked of the fold's own model.
        """
        stats = run.stats
        k = run.prototype.n_neighbors
        stats.extend(k + 1)
        chunks = stats.chunks
        n_train = chunks.n_samples - chunks.sizes[chunks.of_row[rows]]
        if np.any(n_train < k):
            raise ValueError(
                f"Expected n_neighbors <= n_samples_fit, but n_neighbors = {k}, "
                f"n_samples_fit = {int(n_train.min())}"
            )
        distances = stats.distances[rows, :k]
        indices = stats.indices[rows, :k]
        if stats.depth <= k:
            return distances, indices
        last, after = stats.distances[rows, k - 1], stats.distances[rows, k]
        tied = (stats.indices[rows, k] >= 0) & (
            after * after - last * last <= stats.tie_window
        )
        if not tied.any():
            return distances, indices
        if model is None:
            model = self.fold_model(run.prototype, run.task, leaf)
        train = run.task.plan.fit_indices(leaf)
        X_tied, _, _ = run.task.rows(rows[tied])
        found_distances, found = model.kneighbors(X_tied)
        distances, indices = distances.copy(), indices.copy()
        distances[tied], indices[tied] = found_distances, train[found]
        return distances, indices

    def predict(self, run: _Run, leaf: int, model, rows: np.ndarray) -> np.ndarray:
        """``model.predict`` on ``rows``, from the shared neighbour lists."""
        distances, ind = self.neighbors(run, leaf, model, rows)
        y = run.task.y
        weights = None
        if run.prototype.weights == "distance":
            with np.errstate(divide="ignore"):
                weights = 1.0 / distances
            inf_mask = np.isinf(weights)
            inf_row = np.any(inf_mask, axis=1)
            weights[inf_row] = inf_mask[inf_row]
        if not _is_classifier(run.prototype):
            values = np.asarray(y, dtype=float)[ind]
            if weights is None:
                return np.mean(values, axis=1)
            return np.sum(values * weights, axis=1) / np.sum(weights, axis=1)
        classes, codes = np.unique(y, return_inverse=True)
        votes = np.zeros((rows.shape[0], classes.shape[0]))
        row_index = np.repeat(np.arange(rows.shape[0]), ind.shape[1])
        np.add.at(
            votes,
            (row_index, codes[ind].ravel()),
            1.0 if weights is None else weights.ravel(),
        )
        return classes[np.argmax(votes, axis=1)]


def _is_classifier(estimator) -> bool:
    return type(estimator).__name__ == "KNeighborsClassifier"
