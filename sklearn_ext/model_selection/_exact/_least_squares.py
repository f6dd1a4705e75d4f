"""Least squares (``Ridge``, ``RidgeClassifier``, ``LinearRegression``) from Gram sums.

Each fold's centred Gram matrix ``X'WX`` and ``X'WY`` are the totals minus
those of its held-out chunk; one eigendecomposition per fold then gives the
coefficients at every ``alpha``. R^2 (the regressors' ``score``) is computed
from the held-out chunk's moments where its rounding can be bounded.
"""

from __future__ import annotations

import copy
import time

import numpy as np
import scipy.sparse as sp
from scipy import linalg
from sklearn.preprocessing import LabelBinarizer

from sklearn_ext.model_selection._backends import _as_slice
from sklearn_ext.model_selection._exact._base import (
    _classes_refusal,
    _classes_target,
    _Family,
    _fit_fold,
    _Run,
)
from sklearn_ext.model_selection._exact._layout import _Chunks, _dense
from sklearn_ext.model_selection._exact._scaling import _ScalerStats
from sklearn_ext.utils._lru import LRUStore

__all__ = ["_LeastSquares"]

#: A fold whose predictions the eigendecomposition's rounding could move by
#: more than this (relative) is fit with ``fit`` (see ``_well_conditioned``).
PREDICTION_TOLERANCE = 1e-10


class _GramStats:
    """Per-chunk weighted sums, Gram matrices ``X'WX`` and ``X'WY`` (X shifted).

    Dense ``X`` is shifted by its weighted mean over all rows before the
    products, so that centring a fold's Gram matrix cancels no leading digits.
    Per-chunk Gram matrices are kept when they fit in ``gram_budget`` bytes;
    otherwise a fold's chunk Gram is recomputed from its rows when needed.
    The eigendecomposition of each fold's centred Gram matrix is computed on
    first use and kept, so every further ``alpha`` costs a product.
    """

    def __init__(
        self,
        X,
        Y,
        weights,
        chunks: _Chunks,
        fit_intercept: bool,
        gram_budget: int,
        scaler: _ScalerStats | None = None,
    ) -> None:
        n_samples, n_features = X.shape
        self.fit_intercept = fit_intercept
        self.scaler = scaler
        # After a scaler the fold's Gram is formed about the fold's mean even
        # without an intercept (the scaler's offset is then added back).
        self.centred = fit_intercept or scaler is not None
        self.sparse = sp.issparse(X)
        self.n_targets = Y.shape[1]
        w = np.ones(n_samples) if weights is None else np.asarray(weights, float)
        if self.centred and not self.sparse:
            self.shift = (
                X.mean(axis=0) if weights is None else np.average(X, axis=0, weights=w)
            )
        else:
            self.shift = np.zeros(n_features)
        self.chunks = chunks
        k = chunks.n_chunks
        indicator = sp.csr_matrix(
            (w, (chunks.of_row, np.arange(n_samples))), shape=(k, n_samples)
        )
        self.chunk_w = np.bincount(chunks.of_row, weights=w, minlength=k)
        Xs = X if self.sparse else X - self.shift
        self.chunk_x = _dense(indicator @ Xs)
        self.chunk_y = _dense(indicator @ Y)
        self.keep_grams = k * n_features * n_features * 8 <= gram_budget
        if weights is None:
            Xw, Yw = Xs, Y
        else:
            root_w = np.sqrt(w)
            Xw = sp.diags(root_w) @ Xs if self.sparse else Xs * root_w[:, None]
            Yw = Y * root_w[:, None]
        self._Xw, self._Yw = Xw, Yw
        # With unit weights and the chunk Grams kept, each chunk's residual sum
        # of squares under any coefficients follows from its moments (see
        # held_out_r2), so scoring R^2 reads no row.
        self.moments = weights is None and self.keep_grams
        if self.keep_grams:
            self._chunk_grams(Xw, Yw)
            self.gram = self.chunk_gram.sum(axis=0)
            self.xy = self.chunk_xy.sum(axis=0)
            # The rows are not needed again: the cache holds statistics only.
            self._Xw = self._Yw = None
        else:
            self.gram = _dense(Xw.T @ Xw)
            self.xy = _dense(Xw.T @ Yw)
        self.total_w = self.chunk_w.sum()
        self.total_x = self.chunk_x.sum(axis=0)
        self.total_y = self.chunk_y.sum(axis=0)
        self._constant_targets(Y, chunks, w)
        # Each fold's eigendecomposition is kept for the next alpha, within
        # the Gram budget (leave-one-out on many rows recomputes them instead
        # of holding one per fold).
        # Exactly what one fold keeps (see _solved_nbytes): eigenvalues,
        # eigenvectors, the projected targets, the offsets. An estimate below
        # it made a k-fold cycle thrash a store of k - 1 folds.
        n, t = n_features, Y.shape[1]
        per_fold = (n * n + n + n * t + n + t) * 8
        self.reserved_bytes = min(k * per_fold, max(gram_budget, per_fold))
        self._folds = LRUStore(self.reserved_bytes, sizeof=_solved_nbytes)

    def _chunk_grams(self, Xw, Yw) -> None:
        """Each chunk's Gram matrix and ``X'Y`` (and target moments, for R^2)."""
        k, n_features, t = self.chunks.n_chunks, Xw.shape[1], Yw.shape[1]
        self.chunk_gram = np.empty((k, n_features, n_features))
        self.chunk_xy = np.empty((k, n_features, t))
        if self.moments:
            self.chunk_y_mean = np.empty((k, t))
            self.chunk_u_sum = np.empty((k, t))
            self.chunk_uu = np.empty((k, t))
            self.chunk_xu = np.empty((k, n_features, t))
        for chunk in range(k):
            rows = _as_slice(self.chunks.rows(chunk))  # a view where it can
            Xc, Yc = Xw[rows], Yw[rows]
            self.chunk_gram[chunk] = _dense(Xc.T @ Xc)
            self.chunk_xy[chunk] = _dense(Xc.T @ Yc)
            if self.moments:
                mean = Yc.mean(axis=0)
                U = Yc - mean
                self.chunk_y_mean[chunk] = mean
                self.chunk_u_sum[chunk] = U.sum(axis=0)
                self.chunk_uu[chunk] = np.einsum("ij,ij->j", U, U)
                self.chunk_xu[chunk] = _dense(Xc.T @ U)

    def _constant_targets(self, Y, chunks: _Chunks, w) -> None:
        """Which targets are constant on each fold's training rows.

        ``fit`` centres such a target to exact zeros, so its coefficients are
        exactly zero and its predictions the fold's mean: R^2 is then 1 on a
        held-out chunk of the same constant, as in ``cross_validate``.
        """
        k, n_targets = chunks.n_chunks, Y.shape[1]
        low = np.full((k, n_targets), np.inf)
        high = np.full((k, n_targets), -np.inf)
        # Rows of weight zero take no part in the fit.
        counted = np.flatnonzero(w != 0)
        np.minimum.at(low, chunks.of_row[counted], Y[counted])
        np.maximum.at(high, chunks.of_row[counted], Y[counted])
        edge = np.full((1, n_targets), np.inf)
        low_before = np.minimum.accumulate(np.vstack([edge, low]), axis=0)[:-1]
        low_after = np.minimum.accumulate(np.vstack([edge, low[::-1]]), axis=0)
        high_before = np.maximum.accumulate(np.vstack([-edge, high]), axis=0)[:-1]
        high_after = np.maximum.accumulate(np.vstack([-edge, high[::-1]]), axis=0)
        fold_low = np.minimum(low_before, low_after[-2::-1])
        fold_high = np.maximum(high_before, high_after[-2::-1])
        self.constant = fold_low == fold_high

    def _chunk_products(self, chunk: int):
        rows = self.chunks.rows(chunk)
        Xw, Yw = self._Xw[rows], self._Yw[rows]
        return _dense(Xw.T @ Xw), _dense(Xw.T @ Yw)

    def fold(self, leaf: int):
        """Eigenpairs of the fold's centred Gram matrix and what the solve needs."""
        known = self._folds.get(leaf)
        if known is not None:
            return known
        if self.keep_grams:
            chunk_gram, chunk_xy = self.chunk_gram[leaf], self.chunk_xy[leaf]
        else:
            chunk_gram, chunk_xy = self._chunk_products(leaf)
        weight = self.total_w - self.chunk_w[leaf]
        gram = self.gram - chunk_gram
        xy = self.xy - chunk_xy
        if self.centred:
            x_mean = (self.total_x - self.chunk_x[leaf]) / weight
            y_mean = (self.total_y - self.chunk_y[leaf]) / weight
            gram = gram - weight * np.outer(x_mean, x_mean)
            xy = xy - weight * np.outer(x_mean, y_mean)
            x_offset = self.shift + x_mean
            if self.scaler is not None:
                gram, xy, x_offset = self._scaled(leaf, gram, xy, x_mean, y_mean)
            if not self.fit_intercept:
                x_offset = y_mean = None
        else:
            x_offset = y_mean = None
        eigenvalues, eigenvectors = linalg.eigh(gram)
        solved = (eigenvalues, eigenvectors, eigenvectors.T @ xy, x_offset, y_mean)
        self._folds.put(leaf, solved)
        return solved

    def _scaled(self, leaf: int, gram, xy, x_mean, y_mean):
        """The fold's centred moments of its scaled rows, and their mean.

        ``Z = (X - offset) * factor + origin`` column by column, so the
        centred Gram matrix is ``factor' G factor`` and ``X'y`` is
        ``factor X'y``; columns constant on the fold centre to exactly zero.
        Without an intercept, the uncentred moments about the origin follow
        from the mean (``Z'Z = G_c + w z z'``).
        """
        fold = self.scaler.fold(leaf)
        factor, constant = fold.factor, fold.constant
        gram = gram * np.outer(factor, factor)
        xy = xy * factor[:, None]
        gram[constant] = 0.0
        gram[:, constant] = 0.0
        xy[constant] = 0.0
        z_mean = fold.centred_points(self.shift, x_mean)
        if not self.fit_intercept:
            weight = self.total_w - self.chunk_w[leaf]
            gram = gram + weight * np.outer(z_mean, z_mean)
            xy = xy + weight * np.outer(z_mean, y_mean)
        return gram, xy, z_mean

    def held_out_r2(self, leaf: int, coef, at_shift) -> float | None:
        """R^2 of a linear model on the rows chunk ``leaf`` holds out, or None.

        The model predicts ``(x - shift) @ coef.T + at_shift`` (``at_shift``:
        its prediction at the statistics' shift). With ``u = y - mean(y)``
        over the chunk and ``e`` the prediction's offset from that mean, the
        residual sum of squares is
        ``u'u - 2 b'X'u + b'X'X b + 2 e b'sum(X) - 2 e sum(u) + n e^2`` (``X``
        shifted), which needs only the chunk's moments. None (score from the
        rows instead) where ``r2_score`` would not divide (fewer than two rows,
        a constant target) or where the terms are so much larger than the
        total and the residual sums of squares that their cancellation could
        cost more than 1e-11 of the score (relative, for a score below -1).
        """
        n = self.chunk_w[leaf]
        uu = self.chunk_uu[leaf]
        if n < 2 or not np.all(uu > 0):
            return None
        B = np.atleast_2d(coef)
        gram, xu = self.chunk_gram[leaf], self.chunk_xu[leaf]
        sx = self.chunk_x[leaf]
        offset = at_shift - self.chunk_y_mean[leaf]
        quad = np.einsum("jd,dj->j", B, gram @ B.T)
        cross = np.einsum("jd,dj->j", B, xu)
        along = B @ sx
        u_sum = self.chunk_u_sum[leaf]
        sse = uu - 2 * cross + quad + 2 * offset * along - 2 * offset * u_sum
        sse = sse + n * offset * offset
        magnitude = (
            uu
            + 2 * np.einsum("jd,dj->j", np.abs(B), np.abs(xu))
            + np.einsum("jd,dj->j", np.abs(B), np.abs(gram) @ np.abs(B).T)
            + 2 * np.abs(offset * along)
            + 2 * np.abs(offset * u_sum)
            + n * offset * offset
        )
        rounding = (B.shape[1] + np.sqrt(n)) * np.finfo(float).eps
        if np.any(rounding * magnitude > 1e-11 * np.maximum(uu, sse)):
            return None
        return float(np.mean(1.0 - sse / uu))


def _solved_nbytes(solved) -> int:
    return sum(part.nbytes for part in solved if isinstance(part, np.ndarray))


def _ridge_coef(solved, alpha: np.ndarray) -> np.ndarray:
    """``(n_targets, n_features)`` ridge coefficients for one alpha per target."""
    eigenvalues, eigenvectors, projected, _, _ = solved
    return (eigenvectors @ (projected / (eigenvalues[:, None] + alpha[None, :]))).T


def _least_squares_coef(solved, tol: float):
    """Minimum-norm least squares with lstsq's ``cond=tol`` cut-off, and its rank."""
    eigenvalues, eigenvectors, projected, _, _ = solved
    singular = np.sqrt(np.clip(eigenvalues, 0.0, None))
    keep = singular > tol * singular.max() if singular.max() > 0 else singular > 0
    inverse = np.zeros_like(eigenvalues)
    inverse[keep] = 1.0 / eigenvalues[keep]
    coef = (eigenvectors @ (projected * inverse[:, None])).T
    return coef, int(keep.sum()), singular[::-1]


class _LeastSquares(_Family):
    scalable = True
    names = (
        "sklearn.linear_model.Ridge",
        "sklearn.linear_model.RidgeClassifier",
        "sklearn.linear_model.LinearRegression",
    )

    def supports(self, estimator) -> bool:
        params = estimator.get_params()
        if params.get("positive", False):
            return False
        if "solver" in params and params["solver"] not in ("auto", "cholesky", "svd"):
            return False
        class_weight = params.get("class_weight")
        return class_weight is None or isinstance(class_weight, dict)

    def refusal(self, estimator, X, y) -> str | None:
        if y is None:
            return f"{type(estimator).__name__} needs y"
        if _is_classifier(estimator):
            return super().refusal(estimator, X, y) or _classes_refusal(estimator, y)
        if np.ndim(y) not in (1, 2):
            return f"the exact backend takes a 1-D or 2-D y; got shape {np.shape(y)}"
        return None

    def native_metrics(self, estimator) -> tuple[str, ...]:
        return () if _is_classifier(estimator) else ("r2",)

    def prepare(self, estimator, X, y):
        X = X.astype(float) if X.dtype != np.float64 else X
        if _is_classifier(estimator):
            y = _classes_target(estimator, y)
            self_classes, index = np.unique(y, return_inverse=True)
            Y = 2.0 * np.eye(self_classes.shape[0])[index] - 1.0
            return X, (y, self_classes, Y)
        y = np.asarray(y, dtype=float)
        return X, y

    def statistics_key(self, estimator) -> tuple:
        return (estimator.fit_intercept, getattr(estimator, "class_weight", None))

    def weights(self, estimator, y, weights):
        if weights is not None and np.any(weights < 0):
            row = int(np.flatnonzero(weights < 0)[0])
            raise ValueError(
                f"The 'sample_weight' parameter of {type(estimator).__name__} "
                "must be non-negative for the exact backend (its fit takes the "
                f"square root of each weight). Got {float(weights[row])!r} at row "
                f"{row}."
            )
        class_weight = getattr(estimator, "class_weight", None)
        if not class_weight:
            return weights
        labels, classes, _ = y
        _check_class_weight(class_weight, classes)
        factor = np.array([class_weight.get(label, 1.0) for label in labels.tolist()])
        return factor if weights is None else weights * factor

    def statistics_nbytes(self, estimator, X, y, chunks, gram_budget) -> float:
        n_samples, d = X.shape
        k = chunks.n_chunks
        Y = y[2] if isinstance(y, tuple) else np.reshape(y, (n_samples, -1))
        t = Y.shape[1]
        per_fold = (d + 1) * (d + t) * 8
        total = 8.0 * (k * (d + 7 * t + 1) + 4 * d * d)  # sums, Gram, eigh
        total += min(k * per_fold, max(gram_budget, per_fold))  # kept folds
        if not sp.issparse(X):
            total += 16.0 * n_samples * d  # shifted (and weighted) rows
        if k * d * d * 8 <= gram_budget:
            total += 8.0 * k * (d * d + 2 * d * t + 3 * t)
        return total

    def statistics(
        self, estimator, X, y, weights, chunks, gram_budget=2**28, scaler=None
    ):
        Y = y[2] if isinstance(y, tuple) else (y[:, None] if y.ndim == 1 else y)
        return _GramStats(
            X, Y, weights, chunks, estimator.fit_intercept, gram_budget, scaler
        )

    def begin(self, run: _Run) -> None:
        if isinstance(run.y, tuple):  # RidgeClassifier: the classes of each fold
            labels, classes, _ = run.y
            chunks = run.chunks
            n_classes = classes.shape[0]
            index = np.searchsorted(classes, labels)
            chunk_rows = np.bincount(
                chunks.of_row * n_classes + index,
                minlength=chunks.n_chunks * n_classes,
            ).reshape(chunks.n_chunks, n_classes)
            run.state.update(
                classes=classes, chunk_rows=chunk_rows, class_rows=chunk_rows.sum(0)
            )
        else:
            # R^2 (the regressors' default score) from the held-out moments;
            # not where the fold's scaler clips held-out rows.
            clips = run.scaled is not None and getattr(run.scaled.scaler, "clip", False)
            run.state["moments_r2"] = run.native and run.stats.moments and not clips

    def make_fold(self, run: _Run, leaf: int):
        state, model = run.state, copy.copy(run.prototype)
        if not _well_conditioned(run.stats.fold(leaf), model):
            return _fit_fold(run.task, run.whole, leaf)
        if not isinstance(run.y, tuple):
            y_info = "1d" if np.ndim(run.task.y) == 1 else "2d"
            return self.fold_model(model, run.stats, leaf, run.n_features, y_info)
        present = np.flatnonzero(state["class_rows"] - state["chunk_rows"][leaf] > 0)
        if present.shape[0] < 2:
            return _fit_fold(run.task, run.whole, leaf)
        y_info = (state["classes"], present)
        return self.fold_model(model, run.stats, leaf, run.n_features, y_info)

    def score_fold(self, run: _Run, leaf: int, model):
        learner = model[-1] if hasattr(model, "steps") else model
        if run.state.get("moments_r2") and hasattr(learner, "coef_"):
            tic = time.perf_counter()
            coef, at_shift = _linear_map(run, leaf, model, learner)
            r2 = run.stats.held_out_r2(leaf, coef, at_shift)
            if r2 is not None:
                return {"score": r2}, time.perf_counter() - tic
        return run.task.score(model, leaf)

    def fold_model(self, model, stats, leaf, n_features, y_info=None):
        """The fold model; ``y_info`` is ``"1d"``/``"2d"`` (regression) or the
        classes and the indices of those present in the fold (RidgeClassifier).
        """
        solved = stats.fold(leaf)
        name = type(model).__name__
        one_target = y_info == "1d"
        if name == "RidgeClassifier":
            classes, present = y_info
            # LabelBinarizer's columns: one (the greater label) for two classes.
            columns = present if present.shape[0] > 2 else present[1:]
            eigenvalues, eigenvectors, projected, x_offset, y_mean = solved
            solved = (
                eigenvalues,
                eigenvectors,
                projected[:, columns],
                x_offset,
                None if y_mean is None else y_mean[columns],
            )
            model._label_binarizer = LabelBinarizer(pos_label=1, neg_label=-1).fit(
                classes[present]
            )
            model.classes_ = model._label_binarizer.classes_
        n_targets = solved[2].shape[1]
        constant = stats.constant[leaf] if model.fit_intercept else None
        if constant is not None and name == "RidgeClassifier":
            constant = constant[columns]
        if name == "LinearRegression":
            coef, rank, singular = _least_squares_coef(solved, model.tol)
            if not stats.sparse:
                model.rank_, model.singular_ = rank, singular
        else:
            alpha = np.asarray(model.alpha, dtype=float).ravel()
            if alpha.shape[0] not in (1, n_targets):
                raise ValueError(
                    "Number of targets and number of penalties do not "
                    f"correspond: {alpha.shape[0]} != {n_targets}"
                )
            coef = _ridge_coef(solved, np.broadcast_to(alpha, (n_targets,)))
            model.n_iter_ = None
            model.solver_ = "svd" if model.solver == "svd" else "cholesky"
        if constant is not None and constant.any():
            coef[constant] = 0.0  # fit's centred target is exactly zero
        if stats.scaler is not None and model.fit_intercept:
            # A column constant on the fold scales to a constant, which the
            # intercept absorbs: no weight (without an intercept it is one).
            coef[:, stats.scaler.fold(leaf).constant] = 0.0
        # As fit: ridge ravels a single target's coefficients (also for a
        # two-dimensional y), least squares only those of a one-dimensional y.
        if one_target or (name != "LinearRegression" and n_targets == 1):
            coef = coef.ravel()
        model.coef_ = coef
        if model.fit_intercept:
            x_offset, y_mean = solved[3], solved[4]
            y_offset = y_mean[0] if one_target else y_mean
            model.intercept_ = y_offset - (
                x_offset @ coef if coef.ndim == 1 else x_offset @ coef.T
            )
        else:
            model.intercept_ = 0.0
        model.n_features_in_ = n_features
        return model


def _linear_map(run: _Run, leaf: int, model, learner):
    """Coefficients on ``X`` and the prediction at the statistics' shift.

    After a scaler ``Z = (X - offset) * factor + origin``, so the model is
    linear in ``X`` with coefficients ``coef * factor``; its prediction at the
    shift is formed from ``shift - offset`` (small for a standard scaler),
    which keeps its digits.
    """
    shift = run.stats.shift
    coef = np.atleast_2d(learner.coef_)
    if model is learner:
        return coef, coef @ shift + learner.intercept_
    fold = run.fold_scaler(leaf)
    if fold is None:  # a pipeline of the learner alone
        return coef, coef @ shift + learner.intercept_
    at_shift = coef @ fold.centred_points(shift, 0.0) + learner.intercept_
    return coef * fold.factor, at_shift


def _check_class_weight(class_weight: dict, classes: np.ndarray) -> None:
    """Refuse, in ``fit``'s words, a dict naming labels ``y`` lacks while
    leaving some of its classes unweighted."""
    unweighted = [c for c in classes.tolist() if c not in class_weight]
    if unweighted and len(classes) - len(unweighted) != len(class_weight):
        raise ValueError(f"The classes, {unweighted}, are not in class_weight")


def _is_classifier(estimator) -> bool:
    return type(estimator).__name__ == "RidgeClassifier"


def _well_conditioned(solved, model) -> bool:
    """Whether rounding in the fold's solve keeps its predictions to 1e-10.

    ``eigh`` finds each eigenvalue ``l_i`` of the centred Gram matrix to about
    ``d * eps * max(l)``, so the solution's component along eigenvector ``i``,
    ``p_i / (l_i + alpha)``, is off by that much relative to ``l_i + alpha``;
    the fitted values along it move by ``sqrt(l_i)`` times that. Summed over
    the directions and set against the size of the fitted values, this bounds
    the relative change of the predictions: an ill-conditioned direction the
    data does not vary along (one-hot columns beside an intercept) costs
    nothing, one it varies along a little (nearly collinear columns at a tiny
    ``alpha``, condition number 1e12) is beyond the tolerance and the fold is
    fit with ``fit`` instead. ``LinearRegression`` keeps the directions above
    ``lstsq``'s cut-off, with ``alpha = 0``.
    """
    eigenvalues, _, projected = solved[:3]
    spread = np.clip(eigenvalues, 0.0, None)
    if type(model).__name__ == "LinearRegression":
        kept = np.sqrt(spread) > model.tol * np.sqrt(spread.max(initial=0.0))
        spread, projected, alpha = spread[kept], projected[kept], 0.0
    else:
        alpha = float(np.min(model.alpha))
    if not spread.shape[0]:
        return True
    shrunk = (spread + alpha)[:, None]
    if np.any(shrunk <= 0):
        return False
    slack = spread.shape[0] * np.finfo(float).eps * (spread.max() + alpha)
    along = np.sqrt(spread)[:, None] * np.abs(projected) / shrunk
    error = slack * np.sum(along / shrunk, axis=0)
    fitted = np.sqrt(np.sum(along * along, axis=0))
    return bool(np.all(error <= PREDICTION_TOLERANCE * fitted))
