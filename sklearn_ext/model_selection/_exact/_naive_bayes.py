"""Naive Bayes: class counts and feature sums, per-class moments, category counts.

``MultinomialNB``, ``ComplementNB`` and ``BernoulliNB`` are made from per-class
row counts and feature sums, ``GaussianNB`` from per-class weighted moments,
``CategoricalNB`` from per-class category counts; each fold's are the totals
minus those of its held-out chunk. Accuracy (the classifiers' ``score``) is
computed from the fold model's joint log-likelihood, for the discrete models
a batch of folds at a time.
"""

from __future__ import annotations

import copy
import time

import numpy as np
import scipy.sparse as sp
from sklearn.preprocessing import binarize
from sklearn.utils import check_array
from sklearn.utils.validation import check_non_negative

from sklearn_ext.model_selection._exact._base import (
    _classes_refusal,
    _classes_target,
    _Family,
    _leaf_columns,
    _Run,
    _score_native,
)
from sklearn_ext.model_selection._exact._layout import (
    _by_class,
    _Chunks,
    _dense_rows,
    _Groups,
)

__all__ = ["_CategoricalNB", "_DiscreteNB", "_GaussianNB"]


class _DiscreteNBStats:
    """Class counts and feature counts of MultinomialNB, ComplementNB, BernoulliNB."""

    def __init__(self, X, y, weights, chunks: _Chunks) -> None:
        self.classes, _, self.groups = _Groups.by_class(chunks, y)
        n_classes = self.classes.shape[0]
        self.group_features = self.groups.sums(X, weights)
        self.group_counts = (
            self.groups.n_rows.astype(float)
            if weights is None
            else np.bincount(self.groups.of_row, weights=weights)
        )
        self.features = _by_class(self.groups, self.group_features, n_classes)
        self.counts = np.bincount(
            self.groups.klass, weights=self.group_counts, minlength=n_classes
        )

    def fold(self, leaf: int):
        part = self.groups.of_chunk(leaf)
        klass = self.groups.klass[part]
        features = self.features.copy()
        features[klass] -= _dense_rows(self.group_features, part)
        counts = self.counts.copy()
        counts[klass] -= self.group_counts[part]
        present = self.groups.present_without(leaf)
        if present.all():
            return self.classes, counts, features
        return self.classes[present], counts[present], features[present]

    def folds(self, leaves: np.ndarray):
        """:meth:`fold` of several leaves at once, stacked on a first axis.

        Every class is kept (a fold without rows of a class has a zero row
        count there); the subtraction is :meth:`fold`'s, element for element.
        """
        m = leaves.shape[0]
        position = np.full(self.groups.ptr.shape[0] - 1, -1, dtype=np.intp)
        position[leaves] = np.arange(m)
        group_leaf = position[self.groups.chunk]
        taken = np.flatnonzero(group_leaf >= 0)
        at, klass = group_leaf[taken], self.groups.klass[taken]
        features = np.repeat(self.features[None], m, axis=0)
        features[at, klass] -= _dense_rows(self.group_features, taken)
        counts = np.repeat(self.counts[None], m, axis=0)
        counts[at, klass] -= self.group_counts[taken]
        rows = np.repeat(self.groups.class_rows[None], m, axis=0)
        rows[at, klass] -= self.groups.n_rows[taken]
        return counts, features, rows


def _discrete_nb_jll(model, alpha, counts, features, X_test) -> np.ndarray:
    """``_joint_log_likelihood`` of stacked fold models on stacked test rows.

    ``counts`` is ``(m, c)``, ``features`` ``(m, c, d)`` and ``X_test``
    ``(m, n_test, d)``: the operations of the estimator's
    ``_update_feature_log_prob``, ``_update_class_log_prior`` and
    ``_joint_log_likelihood``, element for element, each fold's product
    a matrix product of the same shapes as ``predict``'s, so the values are
    ``predict``'s bit for bit (tested against the fold-by-fold path).
    """
    name = type(model).__name__
    n_classes = counts.shape[1]
    if model.class_prior is not None:
        prior = np.log(np.asarray(model.class_prior))[None, :]
    elif model.fit_prior:
        with np.errstate(divide="ignore"):
            log_counts = np.log(counts)
        prior = log_counts - np.log(counts.sum(axis=1))[:, None]
    else:
        prior = np.full((1, n_classes), -np.log(n_classes))
    if name == "MultinomialNB":
        smoothed_fc = features + alpha
        smoothed_cc = smoothed_fc.sum(axis=2)
        log_prob = np.log(smoothed_fc) - np.log(smoothed_cc[:, :, None])
        return np.matmul(X_test, log_prob.transpose(0, 2, 1)) + prior[:, None, :]
    if name == "ComplementNB":
        comp_count = features.sum(axis=1)[:, None, :] + alpha - features
        logged = np.log(comp_count / comp_count.sum(axis=2, keepdims=True))
        log_prob = logged / logged.sum(axis=2, keepdims=True) if model.norm else -logged
        jll = np.matmul(X_test, log_prob.transpose(0, 2, 1))
        if n_classes == 1:
            jll += prior[:, None, :]
        return jll
    smoothed_fc = features + alpha  # BernoulliNB
    smoothed_cc = counts + alpha * 2
    log_prob = np.log(smoothed_fc) - np.log(smoothed_cc[:, :, None])
    neg_prob = np.log(1 - np.exp(log_prob))
    jll = np.matmul(X_test, (log_prob - neg_prob).transpose(0, 2, 1))
    jll += (prior + neg_prob.sum(axis=2))[:, None, :]
    return jll


class _GaussianNBStats:
    """Per-class weighted sums of shifted values and squares; all-row moments."""

    def __init__(self, X, y, weights, chunks: _Chunks, scaler=None) -> None:
        self.scaler = scaler
        self.classes, class_index, self.groups = _Groups.by_class(chunks, y)
        n_classes = self.classes.shape[0]
        w = np.ones(X.shape[0]) if weights is None else weights
        class_weight = np.bincount(class_index, weights=w, minlength=n_classes)
        # Shifted by the class means over all rows, so that a fold's variance
        # (mean of squares minus squared mean) cancels no leading digits.
        sums = np.zeros((n_classes, X.shape[1]))
        np.add.at(sums, class_index, X * w[:, None])
        with np.errstate(invalid="ignore", divide="ignore"):
            self.shift = np.nan_to_num(sums / class_weight[:, None])
        D = X - self.shift[class_index]
        self.group_weight = np.bincount(self.groups.of_row, weights=w)
        self.group_s1 = self.groups.sums(D, w)
        self.group_s2 = self.groups.sums(D * D, w)
        self.weight = _by_class(self.groups, self.group_weight, n_classes)
        self.s1 = _by_class(self.groups, self.group_s1, n_classes)
        self.s2 = _by_class(self.groups, self.group_s2, n_classes)
        # Unweighted moments of all rows per chunk, for epsilon_ (fit's
        # var_smoothing * max(var(X_train))).
        self.all_shift = X.mean(axis=0)
        E = X - self.all_shift
        self.chunk_s1 = np.zeros((chunks.n_chunks, X.shape[1]))
        self.chunk_s2 = np.zeros((chunks.n_chunks, X.shape[1]))
        np.add.at(self.chunk_s1, chunks.of_row, E)
        np.add.at(self.chunk_s2, chunks.of_row, E * E)
        self.all_s1 = self.chunk_s1.sum(axis=0)
        self.all_s2 = self.chunk_s2.sum(axis=0)
        self.chunk_sizes = chunks.sizes

    def fold(self, leaf: int):
        part = self.groups.of_chunk(leaf)
        klass = self.groups.klass[part]
        weight, s1, s2 = self.weight.copy(), self.s1.copy(), self.s2.copy()
        weight[klass] -= self.group_weight[part]
        s1[klass] -= self.group_s1[part]
        s2[klass] -= self.group_s2[part]
        present = self.groups.present_without(leaf)
        weight, s1, s2 = weight[present], s1[present], s2[present]
        with np.errstate(invalid="ignore", divide="ignore"):
            m1 = s1 / weight[:, None]
            var = np.maximum(s2 / weight[:, None] - m1 * m1, 0.0)
        theta = self.shift[present] + m1
        n = self.chunk_sizes.sum() - self.chunk_sizes[leaf]
        a1 = (self.all_s1 - self.chunk_s1[leaf]) / n
        all_var = np.maximum((self.all_s2 - self.chunk_s2[leaf]) / n - a1 * a1, 0.0)
        if self.scaler is not None:
            # The moments of the fold's scaled rows, column by column.
            fold = self.scaler.fold(leaf)
            theta = fold.centred_points(self.shift[present], m1)
            var = var * fold.factor**2
            all_var = all_var * fold.factor**2
            var[:, fold.constant] = 0.0
            all_var[fold.constant] = 0.0
        return self.classes[present], weight, theta, var, float(np.max(all_var))


class _CategoricalNBStats:
    """Per-class category counts of every feature, and each chunk's largest category."""

    def __init__(self, X, y, weights, chunks: _Chunks, min_categories) -> None:
        self.classes, _, self.groups = _Groups.by_class(chunks, y)
        n_classes = self.classes.shape[0]
        n_samples, n_features = X.shape
        self.min_categories = min_categories
        width = X.max(axis=0) + 1
        if min_categories is not None:
            width = np.maximum(width, np.asarray(min_categories, dtype=np.int64))
        self.offsets = np.concatenate([[0], np.cumsum(width)]).astype(np.intp)
        columns = (X + self.offsets[:-1]).ravel()
        w = np.ones(n_samples) if weights is None else np.asarray(weights, float)
        self.group_counts_cat = sp.csr_matrix(
            (
                np.repeat(w, n_features),
                (np.repeat(self.groups.of_row, n_features), columns),
            ),
            shape=(self.groups.n_groups, int(self.offsets[-1])),
        )
        self.counts_cat = _by_class(self.groups, self.group_counts_cat, n_classes)
        self.group_counts = np.bincount(self.groups.of_row, weights=w)
        self.counts = _by_class(self.groups, self.group_counts, n_classes)
        # The largest category each fold's training rows hold: the maximum over
        # the other chunks, from prefix and suffix maxima of the chunk maxima.
        chunk_max = np.zeros((chunks.n_chunks, n_features), dtype=np.int64)
        np.maximum.at(chunk_max, chunks.of_row, X)
        low = np.zeros((1, n_features), dtype=np.int64)
        self.prefix = np.maximum.accumulate(np.vstack([low, chunk_max]), axis=0)
        self.suffix = np.maximum.accumulate(np.vstack([low, chunk_max[::-1]]), axis=0)[
            ::-1
        ]

    def fold(self, leaf: int):
        part = self.groups.of_chunk(leaf)
        klass = self.groups.klass[part]
        counts_cat = self.counts_cat.copy()
        counts_cat[klass] -= _dense_rows(self.group_counts_cat, part)
        counts = self.counts.copy()
        counts[klass] -= self.group_counts[part]
        present = self.groups.present_without(leaf)
        highest = np.maximum(self.prefix[leaf], self.suffix[leaf + 1])
        n_categories = highest + 1
        if self.min_categories is not None:
            n_categories = np.maximum(
                n_categories, np.asarray(self.min_categories), dtype=np.int64
            )
        counts_cat = counts_cat[present]
        category_count = [
            counts_cat[:, start : start + m]
            for start, m in zip(self.offsets[:-1], n_categories, strict=True)
        ]
        return self.classes[present], counts[present], category_count, n_categories


class _NaiveBayes(_Family):
    """What the naive Bayes classifiers share: accuracy from the likelihood."""

    def refusal(self, estimator, X, y) -> str | None:
        return super().refusal(estimator, X, y) or _classes_refusal(estimator, y)

    def native_metrics(self, estimator) -> tuple[str, ...]:
        return ("accuracy",)

    def score_fold(self, run: _Run, leaf: int, model):
        if run.native:
            return _score_native(run.task, model, run.X, leaf)
        return run.task.score(model, leaf)


class _DiscreteNB(_NaiveBayes):
    names = (
        "sklearn.naive_bayes.MultinomialNB",
        "sklearn.naive_bayes.ComplementNB",
        "sklearn.naive_bayes.BernoulliNB",
    )

    def prepare(self, estimator, X, y):
        y = _classes_target(estimator, y)
        if type(estimator).__name__ == "BernoulliNB":
            if estimator.binarize is not None:
                X = binarize(X, threshold=estimator.binarize)
        else:
            check_non_negative(X, f"{type(estimator).__name__} (input X)")
        return X, y

    def statistics_key(self, estimator) -> tuple:
        return (getattr(estimator, "binarize", None),)

    def statistics(self, estimator, X, y, weights, chunks, gram_budget=2**28):
        return _DiscreteNBStats(X, y, weights, chunks)

    def run_folds(self, run: _Run):
        prototype = run.prototype
        if (
            run.native
            and not run.task.return_estimator
            and not sp.issparse(run.X)
            and (
                type(prototype).__name__ != "BernoulliNB"
                or np.ndim(prototype.alpha) == 0
            )
        ):
            return _run_discrete_nb(run)
        return None

    def fold_model(self, model, stats, leaf, n_features):
        classes, counts, features = stats.fold(leaf)
        model.classes_ = classes
        model.n_features_in_ = n_features
        model.class_count_ = counts
        model.feature_count_ = features
        if type(model).__name__ == "ComplementNB":
            model.feature_all_ = features.sum(axis=0)
        model._update_feature_log_prob(model._check_alpha())
        model._update_class_log_prior(class_prior=model.class_prior)
        return model


class _GaussianNB(_NaiveBayes):
    names = ("sklearn.naive_bayes.GaussianNB",)
    accepts_sparse = False
    scalable = True

    def refusal(self, estimator, X, y) -> str | None:
        reason = super().refusal(estimator, X, y)
        if reason is None and estimator.priors is not None:
            try:
                _checked_priors(estimator.priors, np.unique(y).shape[0])
            except ValueError as exc:
                return f"GaussianNB's fit refuses priors={estimator.priors!r}: {exc}"
        return reason

    def prepare(self, estimator, X, y):
        return np.asarray(X, dtype=float), _classes_target(estimator, y)

    def statistics(
        self, estimator, X, y, weights, chunks, gram_budget=2**28, scaler=None
    ):
        return _GaussianNBStats(X, y, weights, chunks, scaler)

    def fold_model(self, model, stats, leaf, n_features):
        classes, weight, theta, var, max_var = stats.fold(leaf)
        model.classes_ = classes
        model.n_features_in_ = n_features
        model.epsilon_ = model.var_smoothing * max_var
        model.theta_ = theta
        model.var_ = var + model.epsilon_
        model.class_count_ = weight
        if model.priors is None:
            model.class_prior_ = weight / weight.sum()
        else:
            model.class_prior_ = _checked_priors(model.priors, classes.shape[0])
        return model


def _checked_priors(priors, n_classes: int) -> np.ndarray:
    """GaussianNB's ``priors`` checked as its ``fit`` checks them (same words)."""
    priors = np.asarray(priors, dtype=float)
    if priors.shape[0] != n_classes:
        raise ValueError("Number of priors must match number of classes.")
    if not np.isclose(priors.sum(), 1.0):
        raise ValueError("The sum of the priors should be 1.")
    if (priors < 0).any():
        raise ValueError("Priors must be non-negative.")
    return priors


class _CategoricalNB(_NaiveBayes):
    names = ("sklearn.naive_bayes.CategoricalNB",)
    accepts_sparse = False

    def prepare(self, estimator, X, y):
        X = check_array(X, dtype="int", ensure_all_finite=True)
        check_non_negative(X, "CategoricalNB (input X)")
        minimum = estimator.min_categories
        if (
            minimum is not None
            and np.ndim(minimum)
            and (np.shape(minimum) != (X.shape[1],))
        ):
            raise ValueError(
                "The 'min_categories' parameter of CategoricalNB must have shape "
                f"(n_features,) = ({X.shape[1]},) when an array-like is given. "
                f"Got shape {np.shape(minimum)} instead."
            )
        return X, _classes_target(estimator, y)

    def score_fold(self, run: _Run, leaf: int, model):
        if run.native:
            _check_seen_categories(run, leaf, model)
            return _score_native(run.task, model, run.X, leaf)
        try:
            return run.task.score(model, leaf)
        except IndexError:
            _check_seen_categories(run, leaf, model)
            raise

    def statistics_key(self, estimator) -> tuple:
        return (estimator.min_categories,)  # content-hashed, never by repr

    def statistics(self, estimator, X, y, weights, chunks, gram_budget=2**28):
        return _CategoricalNBStats(X, y, weights, chunks, estimator.min_categories)

    def fold_model(self, model, stats, leaf, n_features):
        classes, counts, category_count, n_categories = stats.fold(leaf)
        model.classes_ = classes
        model.n_features_in_ = n_features
        model.class_count_ = counts
        model.category_count_ = category_count
        model.n_categories_ = np.asarray(n_categories, dtype=np.int64)
        model._update_feature_log_prob(model._check_alpha())
        model._update_class_log_prior(class_prior=model.class_prior)
        return model


def _check_seen_categories(run: _Run, leaf: int, model) -> None:
    """Refuse clearly a held-out category the fold's training rows never show.

    ``predict`` would fail with an ``IndexError`` on it (in ``cross_validate``
    too); ``min_categories`` makes room for it.
    """
    held_out = run.X[run.task.plan.test_indices(leaf)]
    unseen = held_out >= model.n_categories_
    if unseen.any():
        row, feature = np.argwhere(unseen)[0]
        split = int(run.task.plan.split_index[leaf])
        raise ValueError(
            f"CategoricalNB cannot score split {split}: feature {feature} of its "
            f"held-out rows has category {held_out[row, feature]}, which its "
            f"training rows never show (n_categories_[{feature}] = "
            f"{model.n_categories_[feature]}). Set 'min_categories' to at least "
            f"{held_out[:, feature].max() + 1} for that feature."
        )


def _run_discrete_nb(run: _Run):
    """Every fold of a discrete naive Bayes run, scored in stacked batches.

    No fitted estimator is built per fold (none is returned): the folds'
    counts are stacked, and their log-probabilities and the held-out rows'
    joint log-likelihoods computed a batch of folds at a time, each fold's
    held-out rows in one matrix product, as ``predict`` computes them (folds
    of equal test size share a batch). A fold lacking a class (whose model
    drops it, as ``fit`` does) is made and scored on its own.
    """
    task, prototype, stats, X = run.task, run.prototype, run.stats, run.X
    plan = task.plan
    k = plan.n_splits
    tic = time.perf_counter()
    checked = copy.copy(prototype)
    checked.n_features_in_ = X.shape[1]
    alpha = checked._check_alpha()
    scores = np.empty(k)
    sizes = np.diff(plan.bounds)
    classes = stats.classes
    n_classes, n_features = stats.features.shape
    per_batch = max(1, 2**20 // max(1, n_classes * n_features))
    y = task.y
    alone = []
    for size in np.unique(sizes):
        same = np.flatnonzero(sizes == size)
        for start in range(0, same.shape[0], per_batch):
            batch = same[start : start + per_batch]
            counts, features, rows = stats.folds(batch)
            full = np.all(rows > 0, axis=1)
            alone.extend(batch[~full].tolist())
            if not full.any():
                continue
            batch, counts, features = batch[full], counts[full], features[full]
            index = plan.sample_order[plan.bounds[batch][:, None] + np.arange(size)]
            jll = _discrete_nb_jll(prototype, alpha, counts, features, X[index])
            predicted = classes[np.argmax(jll, axis=2)]
            scores[batch] = np.mean(predicted == y[index], axis=1)
    batch_time = time.perf_counter() - tic
    fit_time = np.full(k, batch_time / k)
    fit_time[0] += run.pending_time
    score_time = np.zeros(k)
    n_features_in = X.shape[1]
    for leaf in alone:
        tic = time.perf_counter()
        model = run.family.fold_model(copy.copy(prototype), stats, leaf, n_features_in)
        fit_time[leaf] += time.perf_counter() - tic
        result, score_time[leaf] = _score_native(task, model, X, leaf)
        scores[leaf] = result["score"]
    fed = np.zeros(k, dtype=np.int64)
    fed[0] = run.fed
    return _leaf_columns(task, {"score": scores}, fed, fit_time, score_time, run.hit)
