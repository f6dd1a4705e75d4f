"""Linear discriminant analysis from per-class counts, sums and scatter matrices."""

from __future__ import annotations

import copy
import warnings
from fractions import Fraction

import numpy as np
from scipy import linalg

from sklearn_ext.model_selection._exact._base import (
    _classes_refusal,
    _classes_target,
    _Family,
    _fit_fold,
    _Run,
)
from sklearn_ext.model_selection._exact._layout import _by_class, _Chunks, _Groups

__all__ = ["_LinearDiscriminant"]

#: A fold whose svd-solver predictions the eigendecomposition's rounding could
#: move by more than this (relative) is fit with ``fit`` (see ``_solve_svd``).
PREDICTION_TOLERANCE = 1e-10


class _DiscriminantStats:
    """Per-(chunk, class) counts, sums and scatter matrices of shifted rows.

    Rows are shifted by their class mean over all rows, so a fold's class
    covariance (scatter minus the outer product of its mean shift) cancels no
    leading digits. Group scatter matrices are kept when they fit in
    ``gram_budget`` bytes; otherwise a fold's are recomputed from its chunk.
    """

    def __init__(self, X, y, chunks: _Chunks, gram_budget: int, scaler=None) -> None:
        self.scaler = scaler
        self.classes, class_index, self.groups = _Groups.by_class(chunks, y)
        n_classes = self.classes.shape[0]
        n_features = X.shape[1]
        sums = np.zeros((n_classes, n_features))
        np.add.at(sums, class_index, X)
        self.shift = sums / np.bincount(class_index, minlength=n_classes)[:, None]
        D = X - self.shift[class_index]
        self.group_s1 = self.groups.sums(D)
        self.group_n = self.groups.n_rows.astype(float)
        self.keep = self.groups.n_groups * n_features * n_features * 8 <= gram_budget
        order = np.argsort(self.groups.of_row, kind="stable")
        self._group_bounds = np.searchsorted(
            self.groups.of_row[order], np.arange(self.groups.n_groups + 1)
        )
        self._order = order
        if self.keep:
            self.group_s2 = np.stack(
                [self._group_scatter(D, g) for g in range(self.groups.n_groups)]
            )
            self.s2 = _by_class(self.groups, self.group_s2, n_classes)
            self._D = None
        else:
            self.group_s2 = None
            self.s2 = np.zeros((n_classes, n_features, n_features))
            for g in range(self.groups.n_groups):
                self.s2[self.groups.klass[g]] += self._group_scatter(D, g)
            self._D = D
        # Each group's least and greatest values: which columns are constant
        # within every class of a fold (see within_constant).
        self.group_low = np.empty((self.groups.n_groups, n_features))
        self.group_high = np.empty((self.groups.n_groups, n_features))
        for g in range(self.groups.n_groups):
            rows = order[self._group_bounds[g] : self._group_bounds[g + 1]]
            part = X[rows]
            self.group_low[g], self.group_high[g] = part.min(axis=0), part.max(axis=0)
        self.s1 = _by_class(self.groups, self.group_s1, n_classes)
        self.n = np.bincount(
            self.groups.klass, weights=self.group_n, minlength=n_classes
        )

    def _group_scatter(self, D, group: int) -> np.ndarray:
        rows = self._order[self._group_bounds[group] : self._group_bounds[group + 1]]
        part = D[rows]
        return part.T @ part

    def within_constant(self, leaf: int) -> tuple[np.ndarray, np.ndarray]:
        """The columns constant within every class on fold ``leaf``'s rows,
        and each present class's least value of every column."""
        n_classes, d = self.classes.shape[0], self.group_low.shape[1]
        kept = self.groups.chunk != leaf
        klass = self.groups.klass[kept]
        low = np.full((n_classes, d), np.inf)
        high = np.full((n_classes, d), -np.inf)
        np.minimum.at(low, klass, self.group_low[kept])
        np.maximum.at(high, klass, self.group_high[kept])
        present = np.isin(np.arange(n_classes), klass)
        low, high = low[present], high[present]
        return np.all(low == high, axis=0), low

    def fold(self, leaf: int):
        """Classes present, their counts, means and biased covariances."""
        part = self.groups.of_chunk(leaf)
        klass = self.groups.klass[part]
        n, s1, s2 = self.n.copy(), self.s1.copy(), self.s2.copy()
        n[klass] -= self.group_n[part]
        s1[klass] -= self.group_s1[part]
        if self.keep:
            s2[klass] -= self.group_s2[part]
        else:
            for g in range(part.start, part.stop):
                s2[self.groups.klass[g]] -= self._group_scatter(self._D, g)
        present = n > 0
        n, s1, s2 = n[present], s1[present], s2[present]
        m1 = s1 / n[:, None]
        means = self.shift[present] + m1
        covariances = s2 / n[:, None, None] - m1[:, :, None] * m1[:, None, :]
        if self.scaler is not None:
            # The moments of the fold's scaled rows, column by column.
            fold = self.scaler.fold(leaf)
            means = fold.centred_points(self.shift[present], m1)
            covariances = covariances * np.outer(fold.factor, fold.factor)
            covariances[:, fold.constant] = 0.0
            covariances[:, :, fold.constant] = 0.0
        return self.classes[present], n, means, covariances


class _LinearDiscriminant(_Family):
    names = ("sklearn.discriminant_analysis.LinearDiscriminantAnalysis",)
    accepts_sparse = False
    takes_weights = False
    scalable = True

    def supports(self, estimator) -> bool:
        if estimator.covariance_estimator is not None:
            return False
        if estimator.solver == "svd":
            return estimator.shrinkage is None  # fit refuses svd with shrinkage
        return estimator.solver in ("lsqr", "eigen") and not isinstance(
            estimator.shrinkage, str
        )

    def make_fold(self, run: _Run, leaf: int):
        model = self.fold_model(
            copy.copy(run.prototype), run.stats, leaf, run.n_features
        )
        # None: the svd solver's rounding is not bounded here; fit the fold.
        return _fit_fold(run.task, run.whole, leaf) if model is None else model

    def refusal(self, estimator, X, y) -> str | None:
        return super().refusal(estimator, X, y) or _classes_refusal(estimator, y)

    def prepare(self, estimator, X, y):
        return np.asarray(X, dtype=float), _classes_target(estimator, y)

    def statistics_nbytes(self, estimator, X, y, chunks, gram_budget) -> float:
        n_samples, d = X.shape
        n_classes = len(np.unique(y))
        n_groups = min(n_samples, chunks.n_chunks * n_classes)
        kept = n_groups * d * d * 8
        scatter = kept if kept <= gram_budget else 0
        return 8.0 * (2 * n_samples * d + 2 * n_classes * d * d) + scatter

    def statistics(
        self, estimator, X, y, weights, chunks, gram_budget=2**28, scaler=None
    ):
        return _DiscriminantStats(X, y, chunks, gram_budget, scaler)

    def fold_model(self, model, stats, leaf, n_features):
        from sklearn.covariance import shrunk_covariance

        classes, counts, means, covariances = stats.fold(leaf)
        n_samples, n_classes = counts.sum(), classes.shape[0]
        if n_samples == n_classes:
            raise ValueError(
                "The number of samples must be more than the number of classes."
            )
        model.classes_ = classes
        model.n_features_in_ = n_features
        if model.priors is None:
            priors = counts / float(n_samples)
        else:
            priors = np.asarray(model.priors, dtype=float)
            if np.any(priors < 0):
                raise ValueError("priors must be non-negative")
            if np.abs(np.sum(priors) - 1.0) > 1e-5:
                warnings.warn(
                    "The priors do not sum to 1. Renormalizing",
                    UserWarning,
                    stacklevel=2,
                )
                priors = priors / priors.sum()
        model.priors_ = priors
        max_components = min(n_classes - 1, n_features)
        if model.n_components is None:
            model._max_components = max_components
        elif model.n_components > max_components:
            raise ValueError(
                "n_components cannot be larger than min(n_features, n_classes - 1)."
            )
        else:
            model._max_components = model.n_components
        shrinkage = model.shrinkage

        def shrunk(cov):
            return cov if shrinkage is None else shrunk_covariance(cov, shrinkage)

        if model.solver == "svd" and not _exact_zero_columns(
            stats, leaf, counts, means, covariances
        ):
            return None  # fit's within-class scaling divides rounding errors
        within = np.zeros((n_features, n_features))
        for prior, cov in zip(priors, covariances, strict=True):
            within += prior * np.atleast_2d(shrunk(cov))
        model.means_ = means
        if model.solver == "svd":
            if model.store_covariance:
                model.covariance_ = within
            return _solve_svd(model, counts, means, covariances, priors)
        model.covariance_ = within
        if model.solver == "lsqr":
            model.coef_ = linalg.lstsq(within, means.T)[0].T
        else:
            # Total covariance of the fold's rows from its class moments.
            share = counts / n_samples
            overall = share @ means
            spread = means - overall
            total = (
                np.einsum("k,kij->ij", share, covariances) + (spread.T * share) @ spread
            )
            between = shrunk(total) - within
            evals, evecs = linalg.eigh(between, within)
            model.explained_variance_ratio_ = np.sort(evals / np.sum(evals))[::-1][
                : model._max_components
            ]
            evecs = evecs[:, np.argsort(evals)[::-1]]
            model.scalings_ = evecs
            model.coef_ = np.dot(means, evecs).dot(evecs.T)
        model.intercept_ = -0.5 * np.diag(np.dot(means, model.coef_.T)) + np.log(priors)
        if n_classes == 2:
            model.coef_ = (model.coef_[1, :] - model.coef_[0, :]).reshape(1, -1)
            model.intercept_ = np.reshape(
                np.asarray(model.intercept_[1] - model.intercept_[0]), (1,)
            )
        model._n_features_out = model._max_components
        return model


def _exact_zero_columns(stats, leaf, counts, means, covariances) -> bool:
    """Set the columns ``fit`` centres to exact zeros within every class.

    A column constant within each class on the fold has, in ``fit``, class
    means of its (scaled) value and within-class centred values of exactly
    zero where those means are exact: each class's value ``v`` (after the
    fold's scaler, computed with its own operations) times its row count is
    exact (``v`` a dyadic rational with a short enough numerator), so every
    partial sum, and the mean, is exact. Then ``fit``'s standard deviation
    there is 0, replaced by 1, and the column drops out of the SVD: its
    means are set to ``v`` exactly and its covariances to zero. Otherwise
    ``fit`` divides rounding errors of its class means by their own size,
    which no statistic reproduces: False, and the fold is fit.
    """
    constant, values = stats.within_constant(leaf)
    if not constant.any():
        return True
    scaler = None if stats.scaler is None else stats.scaler.fold(leaf)
    if scaler is not None:
        # After a scaler only a column constant on the whole fold is known to
        # the bit (its mean is its value: fold.constant).
        if np.any(constant & ~scaler.constant):
            return False
        n_fold = int(counts.sum())
        if stats.scaler.name == "StandardScaler" and stats.scaler.scaler.with_mean:
            if not all(_sums_exactly(v, n_fold) for v in values[0, constant]):
                return False  # fit's mean_ would not be the value itself
        values = scaler.transform_exactly(values)
    for v, n in zip(values[:, constant], counts, strict=True):
        if not all(_sums_exactly(float(x), int(n)) for x in v):
            return False
    means[:, constant] = values[:, constant]
    covariances[:, constant] = 0.0
    covariances[:, :, constant] = 0.0
    return True


def _sums_exactly(value: float, n: int) -> bool:
    """Whether every partial sum of ``n`` copies of ``value`` is exact."""
    numerator = Fraction(value).numerator  # over a power of two
    return abs(numerator) * n < 2**53


def _solve_svd(model, counts, means, covariances, priors):
    """``LinearDiscriminantAnalysis``'s svd solver from the fold's class moments.

    ``fit`` takes the SVD of the within-class centred rows, each column
    divided by its standard deviation; its singular values and right singular
    vectors are the square roots of the eigenvalues and the eigenvectors of
    their Gram matrix, the fold's within-class scatter so divided, which the
    class moments give. The rest (the between-class SVD of the class means)
    is ``fit``'s own, on matrices of ``n_classes`` rows. Returns ``None`` when
    the eigendecomposition's rounding could move the predictions by more than
    1e-10 (relative) or decide the rank differently: the fold is then fit.
    The singular vectors' signs are LAPACK's choice in both, so ``scalings_``
    (and ``transform``) may differ from ``fit``'s in the sign of a column;
    ``coef_``, ``intercept_`` and every prediction do not depend on them.
    """
    n_samples, n_classes = counts.sum(), means.shape[0]
    scatter = np.einsum("k,kij->ij", counts, covariances)
    std = np.sqrt(np.clip(np.diag(scatter), 0.0, None) / n_samples)
    std[std == 0] = 1.0
    gram = scatter / n_samples / np.outer(std, std)
    eigenvalues, eigenvectors = linalg.eigh(gram)
    eigenvalues = np.clip(eigenvalues[::-1], 0.0, None)
    eigenvectors = eigenvectors[:, ::-1]
    singular = np.sqrt(eigenvalues)
    slack = eigenvalues.shape[0] * np.finfo(float).eps * max(eigenvalues[0], 1e-300)
    # sqrt(l +- slack) against tol: a rank fit could decide otherwise.
    if np.any(np.abs(eigenvalues - model.tol**2) <= slack):
        return None
    rank = int(np.sum(singular > model.tol))
    xbar = priors @ means
    whitened = (eigenvectors[:, :rank].T @ ((means - xbar) / std).T).T
    whitened /= singular[:rank]
    # The error of each whitened direction is about slack / l relative to it.
    error = slack * np.abs(whitened) @ (1.0 / eigenvalues[:rank])
    if np.any(error > PREDICTION_TOLERANCE * np.linalg.norm(whitened, axis=1)):
        return None
    scalings = (eigenvectors[:, :rank].T / std).T / singular[:rank]
    fac = 1.0 if n_classes == 1 else 1.0 / (n_classes - 1)
    X = (np.sqrt((n_samples * priors) * fac) * (means - xbar).T).T @ scalings
    _, S, Vt = linalg.svd(X, full_matrices=False)
    if model._max_components == 0:
        model.explained_variance_ratio_ = np.empty((0,), dtype=S.dtype)
    else:
        model.explained_variance_ratio_ = (S**2 / np.sum(S**2))[: model._max_components]
    rank = int(np.sum(S > model.tol * S[0]))
    model.xbar_ = xbar
    model.scalings_ = scalings @ Vt.T[:, :rank]
    coef = (means - xbar) @ model.scalings_
    intercept = -0.5 * np.sum(coef**2, axis=1) + np.log(priors)
    coef_ = coef @ model.scalings_.T
    intercept -= xbar @ coef_.T
    model.coef_, model.intercept_ = coef_, intercept
    if n_classes == 2:
        model.coef_ = (model.coef_[1, :] - model.coef_[0, :]).reshape(1, -1)
        model.intercept_ = np.reshape(
            np.asarray(model.intercept_[1] - model.intercept_[0]), (1,)
        )
    model._n_features_out = model._max_components
    return model
