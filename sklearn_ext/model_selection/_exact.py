"""Exact k-fold CV from sufficient statistics: every fold is the total minus its chunk.

The model of naive Bayes, ridge regression, least squares and linear
discriminant analysis is a function of statistics that add up over rows: class
counts and feature sums, per-class means and variances, the Gram matrix
``X'WX`` and ``X'Wy``, class scatter matrices. The backend here
computes them once per chunk of the fold plan, forms each fold's statistics as
the total minus its held-out chunk, and turns them into a real fitted
scikit-learn estimator, with the attributes that estimator's own ``fit`` on the
fold's training rows would set. k-fold CV, leave-one-out included, then costs
about one pass over the data plus ``k`` small solves.

The statistics are kept in a bounded, content-keyed :class:`StatisticsCache`,
so a grid over ``alpha`` or ``var_smoothing`` (a search's candidates, an
Optuna study's trials) computes them once per data set and fold plan.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import functools
import hashlib
import threading
import time
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from scipy import linalg
from sklearn.base import clone
from sklearn.preprocessing import LabelBinarizer, binarize
from sklearn.utils import check_array
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_non_negative

from sklearn_ext.model_selection._backends import (
    Backend,
    CVTask,
    LeafTable,
    _as_slice,
)
from sklearn_ext.utils._data_scope import scoped_memo

__all__ = ["ExactStatisticsBackend", "StatisticsCache", "exact_learners"]


# -- the cache ----------------------------------------------------------------------
class StatisticsCache:
    """Per-chunk sufficient statistics, kept across runs and keyed by content.

    A key is a digest of the data (``X``, ``y``, ``sample_weight``), of the
    fold plan's chunks and of the estimator parameters that change the
    statistics (e.g. ``fit_intercept``, ``binarize``), but not of those that
    only change the solve (``alpha``, ``var_smoothing``). A grid over the
    latter therefore computes the statistics once; each further candidate costs
    its solves and its scoring. Anything that differs is a miss: a cold start,
    never a wrong answer.

    Entries live in memory, least recently used first out, their total size
    bounded by ``max_bytes``; an entry larger than the bound is not kept.
    Copying or cloning a cache returns the same cache, so that estimators and
    backends holding it keep sharing it.

    Digesting ``X`` reads it once per run. An array made read-only
    (``X.setflags(write=False)``) that owns its memory is digested once and
    remembered by identity while it lives: a study of many cheap trials then
    pays nothing for the key. Do not make such an array writeable again while
    a cache may hold its statistics.

    Parameters
    ----------
    max_bytes : int, default=512 MiB
        Bound on the memory held by the statistics. ``0`` keeps nothing.

    Attributes
    ----------
    hits, misses : int
        Lookups that found, and did not find, their statistics.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.naive_bayes import MultinomialNB
    >>> from sklearn_ext import tree_cross_validate
    >>> from sklearn_ext.model_selection import ExactStatisticsBackend, StatisticsCache
    >>> X, y = load_digits(return_X_y=True)
    >>> backend = ExactStatisticsBackend(cache=StatisticsCache(max_bytes=2**26))
    >>> for alpha in (0.1, 1.0, 10.0):
    ...     _ = tree_cross_validate(MultinomialNB(alpha=alpha), X, y, method=backend)
    >>> backend.cache.misses, backend.cache.hits
    (1, 2)
    """

    def __init__(self, max_bytes: int = 512 * 2**20) -> None:
        if (
            not isinstance(max_bytes, int)
            or isinstance(max_bytes, bool)
            or max_bytes < 0
        ):
            raise ValueError(
                "The 'max_bytes' parameter of StatisticsCache must be an int in "
                f"the range [0, inf). Got {max_bytes!r} instead."
            )
        self.max_bytes = max_bytes
        self._entries: OrderedDict[bytes, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_or_compute(
        self, key: bytes, compute: Callable[[], Any]
    ) -> tuple[Any, bool]:
        """The statistics under ``key``, computing and storing them on a miss.

        Returns the statistics and whether they came from the cache.
        """
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return entry[0], True
            self.misses += 1
        value = compute()
        size = _nbytes(value)
        with self._lock:
            if size <= self.max_bytes and key not in self._entries:
                self._entries[key] = (value, size)
                self._bytes += size
                while self._bytes > self.max_bytes:
                    _, (_, dropped) = self._entries.popitem(last=False)
                    self._bytes -= dropped
        return value, False

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    @property
    def nbytes(self) -> int:
        """Memory held by the entries, in bytes."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def __copy__(self) -> StatisticsCache:
        return self

    def __deepcopy__(self, memo) -> StatisticsCache:
        return self

    def __getstate__(self) -> dict:
        # A worker process starts with an empty cache of the same bound.
        return {"max_bytes": self.max_bytes}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["max_bytes"])

    def __repr__(self) -> str:
        return f"StatisticsCache(max_bytes={self.max_bytes})"


_DEFAULT_CACHE = StatisticsCache()


def _nbytes(value) -> int:
    """Memory of the arrays held by a statistics object (its lazy parts included)."""
    total = 0
    for item in vars(value).values():
        if isinstance(item, np.ndarray):
            total += item.nbytes
        elif sp.issparse(item):
            total += item.data.nbytes + item.indices.nbytes + item.indptr.nbytes
    return total + getattr(value, "reserved_bytes", 0)


_DIGESTS: dict[int, tuple[weakref.ref, tuple, bytes]] = {}
_DIGEST_LOCK = threading.Lock()
_DIGEST_SCOPE: contextvars.ContextVar[dict | None] = contextvars.ContextVar(
    "exact_digest_scope", default=None
)


@contextlib.contextmanager
def digest_scope():
    """Within it, each array's digest is taken once and reused.

    One call that runs many candidates on the same data (a search's ``fit``)
    runs them in one scope: the data does not change during the call, so
    ``X`` is read once per call rather than once per candidate. The scope
    holds the arrays it has digested until it ends; it is not seen by other
    threads or processes, which digest again (the same digest).
    """
    token = _DIGEST_SCOPE.set({})
    try:
        yield
    finally:
        _DIGEST_SCOPE.reset(token)


def _layout(array) -> tuple:
    if sp.issparse(array):
        return (array.format, array.shape, id(array.data), id(array.indices))
    return (array.ctypes.data, array.shape, array.strides, array.dtype.str)


def _array_digest(array) -> bytes:
    """A sha256 of an array's dtype, shape and values (of a CSR matrix's parts)."""
    scope = _DIGEST_SCOPE.get()
    if scope is None:
        scope = scoped_memo()  # the run core's scope: one search, one study
    if scope is None or not (isinstance(array, np.ndarray) or sp.issparse(array)):
        return _digest(array)
    known = scope.get(id(array))
    if known is not None and known[0] is array and known[1] == _layout(array):
        return known[2]
    digest = _digest(array)
    scope[id(array)] = (array, _layout(array), digest)
    return digest


def _digest(array) -> bytes:
    if sp.issparse(array):
        array = array.tocsr()
        h = hashlib.sha256(f"csr{array.shape}".encode())
        for part in (array.data, array.indices, array.indptr):
            h.update(_digest(part))
        return h.digest()
    array = np.asarray(array)
    remembered = (
        not array.flags.writeable and array.base is None and array.dtype != object
    )
    if remembered:
        layout = (array.ctypes.data, array.shape, array.strides, array.dtype.str)
        with _DIGEST_LOCK:
            known = _DIGESTS.get(id(array))
        if known is not None and known[0]() is array and known[1] == layout:
            return known[2]
    h = hashlib.sha256(f"{array.dtype.str}{array.shape}|".encode())
    if array.dtype == object:
        h.update(repr(array.tolist()).encode())
    else:
        h.update(np.ascontiguousarray(array).view(np.uint8).ravel())
    digest = h.digest()
    if remembered:
        key = id(array)
        with _DIGEST_LOCK:
            _DIGESTS[key] = (
                weakref.ref(array, lambda _, k=key: _forget(k)),
                layout,
                digest,
            )
    return digest


def _forget(key: int) -> None:
    with _DIGEST_LOCK:
        _DIGESTS.pop(key, None)


# -- fold layout --------------------------------------------------------------------
class _Chunks:
    """Which chunk each row belongs to, and the rows of each chunk."""

    def __init__(self, plan) -> None:
        self.n_chunks = plan.n_splits
        self.n_samples = plan.n_samples
        sizes = np.diff(plan.bounds)
        self.of_row = np.empty(plan.n_samples, dtype=np.intp)
        self.of_row[plan.sample_order] = np.repeat(
            np.arange(self.n_chunks, dtype=np.intp), sizes
        )
        self.sizes = sizes
        self.plan = plan

    def rows(self, chunk: int) -> np.ndarray:
        plan = self.plan
        return np.sort(plan.sample_order[plan.bounds[chunk] : plan.bounds[chunk + 1]])


class _Groups:
    """Rows grouped by (chunk, class) pairs that occur, sorted by chunk."""

    def __init__(self, chunks: _Chunks, class_index: np.ndarray, n_classes: int):
        codes = chunks.of_row * n_classes + class_index
        unique, self.of_row = np.unique(codes, return_inverse=True)
        self.n_groups = unique.shape[0]
        self.chunk = unique // n_classes
        self.klass = unique % n_classes
        self.ptr = np.searchsorted(self.chunk, np.arange(chunks.n_chunks + 1))
        self.n_rows = np.bincount(self.of_row, minlength=self.n_groups)
        self.class_rows = np.bincount(
            self.klass, weights=self.n_rows, minlength=n_classes
        )

    @classmethod
    def by_class(cls, chunks: _Chunks, y) -> tuple[np.ndarray, np.ndarray, _Groups]:
        """The sorted classes of ``y``, each row's class index, and the groups."""
        classes, class_index = np.unique(y, return_inverse=True)
        return classes, class_index, cls(chunks, class_index, classes.shape[0])

    def present_without(self, chunk: int) -> np.ndarray:
        """Which classes have rows outside ``chunk`` (the fold's training rows)."""
        part = self.of_chunk(chunk)
        rows = self.class_rows.copy()
        rows[self.klass[part]] -= self.n_rows[part]
        return rows > 0

    def sums(self, values, weights=None):
        """Per-group sums of the rows of ``values`` (dense, or CSR for CSR input)."""
        n = self.of_row.shape[0]
        data = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
        indicator = sp.csr_matrix(
            (data, (self.of_row, np.arange(n))), shape=(self.n_groups, n)
        )
        out = indicator @ values
        return out.tocsr() if sp.issparse(out) else np.asarray(out)

    def of_chunk(self, chunk: int) -> slice:
        return slice(int(self.ptr[chunk]), int(self.ptr[chunk + 1]))


def _dense_rows(values, index) -> np.ndarray:
    rows = values[index]
    return rows.toarray() if sp.issparse(rows) else rows


def _by_class(groups: _Groups, values, n_classes: int) -> np.ndarray:
    """Totals per class of per-group rows."""
    total = np.zeros((n_classes,) + np.shape(values)[1:])
    if sp.issparse(values):
        indicator = sp.csr_matrix(
            (np.ones(groups.n_groups), (groups.klass, np.arange(groups.n_groups))),
            shape=(n_classes, groups.n_groups),
        )
        return np.asarray((indicator @ values).toarray())
    np.add.at(total, groups.klass, values)
    return total


# -- naive Bayes --------------------------------------------------------------------
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

    def __init__(self, X, y, weights, chunks: _Chunks) -> None:
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


class _DiscriminantStats:
    """Per-(chunk, class) counts, sums and scatter matrices of shifted rows.

    Rows are shifted by their class mean over all rows, so a fold's class
    covariance (scatter minus the outer product of its mean shift) cancels no
    leading digits. Group scatter matrices are kept when they fit in
    ``gram_budget`` bytes; otherwise a fold's are recomputed from its chunk.
    """

    def __init__(self, X, y, chunks: _Chunks, gram_budget: int) -> None:
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
        self.s1 = _by_class(self.groups, self.group_s1, n_classes)
        self.n = np.bincount(
            self.groups.klass, weights=self.group_n, minlength=n_classes
        )

    def _group_scatter(self, D, group: int) -> np.ndarray:
        rows = self._order[self._group_bounds[group] : self._group_bounds[group + 1]]
        part = D[rows]
        return part.T @ part

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
        return self.classes[present], n, means, covariances


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


# -- least squares ------------------------------------------------------------------
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
        self, X, Y, weights, chunks: _Chunks, fit_intercept: bool, gram_budget: int
    ) -> None:
        n_samples, n_features = X.shape
        self.fit_intercept = fit_intercept
        self.sparse = sp.issparse(X)
        self.n_targets = Y.shape[1]
        w = np.ones(n_samples) if weights is None else np.asarray(weights, float)
        if fit_intercept and not self.sparse:
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
            self.chunk_gram = np.empty((k, n_features, n_features))
            self.chunk_xy = np.empty((k, n_features, Y.shape[1]))
            if self.moments:
                self.chunk_y_mean = np.empty((k, Y.shape[1]))
                self.chunk_u_sum = np.empty((k, Y.shape[1]))
                self.chunk_uu = np.empty((k, Y.shape[1]))
                self.chunk_xu = np.empty((k, n_features, Y.shape[1]))
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
        self._folds: dict[int, tuple] = {}
        self._fold_lock = threading.Lock()
        # Room for the eigendecompositions kept per fold.
        self.reserved_bytes = k * (n_features + 1) * (n_features + Y.shape[1]) * 8

    def _chunk_products(self, chunk: int):
        rows = self.chunks.rows(chunk)
        Xw, Yw = self._Xw[rows], self._Yw[rows]
        return _dense(Xw.T @ Xw), _dense(Xw.T @ Yw)

    def __getstate__(self):
        state = dict(vars(self))
        state["_fold_lock"] = None
        return state

    def __setstate__(self, state):
        vars(self).update(state)
        self._fold_lock = threading.Lock()

    def fold(self, leaf: int):
        """Eigenpairs of the fold's centred Gram matrix and what the solve needs."""
        with self._fold_lock:
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
        if self.fit_intercept:
            x_mean = (self.total_x - self.chunk_x[leaf]) / weight
            y_mean = (self.total_y - self.chunk_y[leaf]) / weight
            gram = gram - weight * np.outer(x_mean, x_mean)
            xy = xy - weight * np.outer(x_mean, y_mean)
            x_offset = self.shift + x_mean
        else:
            x_offset = y_mean = None
        eigenvalues, eigenvectors = linalg.eigh(gram)
        solved = (eigenvalues, eigenvectors, eigenvectors.T @ xy, x_offset, y_mean)
        with self._fold_lock:
            self._folds[leaf] = solved
        return solved

    def held_out_r2(self, leaf: int, coef, intercept) -> float | None:
        """R^2 of a linear model on the rows chunk ``leaf`` holds out, or None.

        With ``u = y - mean(y)`` over the chunk and ``e`` the prediction's
        offset from that mean, the residual sum of squares is
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
        offset = B @ self.shift + intercept - self.chunk_y_mean[leaf]
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


def _dense(value) -> np.ndarray:
    return np.asarray(value.toarray() if sp.issparse(value) else value)


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


# -- the families -------------------------------------------------------------------
class _Family:
    """How one kind of learner is made from statistics."""

    #: The scikit-learn classes (exact types) of the family, by dotted name.
    names: ClassVar[tuple[str, ...]]
    #: Accuracy can be computed from ``_joint_log_likelihood`` (naive Bayes).
    joint_log_likelihood: ClassVar[bool] = False
    #: The estimator's ``fit`` takes sparse ``X`` (else the backend refuses it
    #: as that ``fit`` would, before any statistics are computed).
    accepts_sparse: ClassVar[bool] = True

    def supports(self, estimator) -> bool:
        return True

    def prepare(self, estimator, X, y):
        """Checked ``X``, ``y`` as the estimator's ``fit`` sees them."""
        return X, y

    def statistics_key(self, estimator) -> tuple:
        return ()

    def statistics(self, estimator, X, y, weights, chunks: _Chunks):
        raise NotImplementedError

    def fold_model(self, model, stats, leaf: int, n_features: int):
        raise NotImplementedError


def _classes_target(estimator, y):
    kind = type_of_target(y)
    if kind not in ("binary", "multiclass"):
        raise ValueError(
            f"{type(estimator).__name__} needs a binary or multiclass y for the "
            f"exact backend; got a {kind!r} target."
        )
    return y


class _DiscreteNB(_Family):
    names = (
        "sklearn.naive_bayes.MultinomialNB",
        "sklearn.naive_bayes.ComplementNB",
        "sklearn.naive_bayes.BernoulliNB",
    )
    joint_log_likelihood = True

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

    def statistics(self, estimator, X, y, weights, chunks):
        return _DiscreteNBStats(X, y, weights, chunks)

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


class _GaussianNB(_Family):
    names = ("sklearn.naive_bayes.GaussianNB",)
    joint_log_likelihood = True
    accepts_sparse = False

    def prepare(self, estimator, X, y):
        return np.asarray(X, dtype=float), _classes_target(estimator, y)

    def statistics(self, estimator, X, y, weights, chunks):
        return _GaussianNBStats(X, y, weights, chunks)

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
            priors = np.asarray(model.priors, dtype=float)
            if priors.shape[0] != classes.shape[0]:
                raise ValueError("Number of priors must match number of classes.")
            model.class_prior_ = priors
        return model


class _CategoricalNB(_Family):
    names = ("sklearn.naive_bayes.CategoricalNB",)
    joint_log_likelihood = True
    accepts_sparse = False

    def prepare(self, estimator, X, y):
        X = check_array(X, dtype="int", ensure_all_finite=True)
        check_non_negative(X, "CategoricalNB (input X)")
        return X, _classes_target(estimator, y)

    def statistics_key(self, estimator) -> tuple:
        return (repr(estimator.min_categories),)

    def statistics(self, estimator, X, y, weights, chunks):
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


class _LeastSquares(_Family):
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

    def prepare(self, estimator, X, y):
        X = X.astype(float) if X.dtype != np.float64 else X
        if type(estimator).__name__ == "RidgeClassifier":
            y = _classes_target(estimator, y)
            self_classes, index = np.unique(y, return_inverse=True)
            Y = 2.0 * np.eye(self_classes.shape[0])[index] - 1.0
            return X, (y, self_classes, Y)
        y = np.asarray(y, dtype=float)
        return X, y

    def statistics_key(self, estimator) -> tuple:
        return (estimator.fit_intercept, repr(getattr(estimator, "class_weight", None)))

    def weights(self, estimator, y, weights):
        class_weight = getattr(estimator, "class_weight", None)
        if not class_weight:
            return weights
        labels, _, _ = y
        factor = np.array([class_weight.get(label, 1.0) for label in labels.tolist()])
        return factor if weights is None else weights * factor

    def statistics(self, estimator, X, y, weights, chunks, gram_budget=2**28):
        Y = y[2] if isinstance(y, tuple) else (y[:, None] if y.ndim == 1 else y)
        return _GramStats(X, Y, weights, chunks, estimator.fit_intercept, gram_budget)

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


class _LinearDiscriminant(_Family):
    names = ("sklearn.discriminant_analysis.LinearDiscriminantAnalysis",)
    accepts_sparse = False

    def supports(self, estimator) -> bool:
        return (
            estimator.solver in ("lsqr", "eigen")
            and estimator.covariance_estimator is None
            and not isinstance(estimator.shrinkage, str)
        )

    def prepare(self, estimator, X, y):
        return np.asarray(X, dtype=float), _classes_target(estimator, y)

    def statistics(self, estimator, X, y, weights, chunks, gram_budget=2**28):
        if weights is not None:
            raise ValueError(
                "LinearDiscriminantAnalysis.fit takes no sample_weight; got one."
            )
        return _DiscriminantStats(X, y, chunks, gram_budget)

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

        within = np.zeros((n_features, n_features))
        for prior, cov in zip(priors, covariances, strict=True):
            within += prior * np.atleast_2d(shrunk(cov))
        model.means_ = means
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


class _Neighbors(_Family):
    names = (
        "sklearn.neighbors.KNeighborsClassifier",
        "sklearn.neighbors.KNeighborsRegressor",
    )

    def supports(self, estimator) -> bool:
        return estimator.weights in ("uniform", "distance") and (
            estimator.metric != "precomputed"
        )

    def prepare(self, estimator, X, y):
        if type(estimator).__name__ == "KNeighborsClassifier":
            y = _classes_target(estimator, y)
        elif np.ndim(y) != 1:
            raise ValueError(
                "The exact backend runs KNeighborsRegressor on a one-dimensional "
                f"y; got y of shape {np.shape(y)}. Use method='standard'."
            )
        return X, y

    def statistics_key(self, estimator) -> tuple:
        return (estimator.metric, estimator.p, repr(estimator.metric_params))

    def statistics(self, estimator, X, y, weights, chunks, gram_budget=None):
        if weights is not None:
            raise ValueError(
                f"{type(estimator).__name__}.fit takes no sample_weight; got one."
            )
        return _NeighborStats(estimator, X, chunks, max(estimator.n_neighbors, 32))

    def fold_model(self, model, stats, leaf, n_features, task=None):
        """A real fold model: ``fit`` on the fold's training rows (an index)."""
        X, y, _ = task.rows(np.sort(task.plan.train_indices(leaf)))
        return model.fit(X, y)

    def predict(self, model, stats, rows: np.ndarray, y) -> np.ndarray:
        """``model.predict`` on ``rows``, from the shared neighbour lists."""
        k = model.n_neighbors
        stats.extend(k)
        n_train = stats.chunks.n_samples - stats.chunks.sizes[stats.chunks.of_row[rows]]
        if np.any(n_train < k):
            raise ValueError(
                f"Expected n_neighbors <= n_samples_fit, but n_neighbors = {k}, "
                f"n_samples_fit = {int(n_train.min())}"
            )
        ind = stats.indices[rows, :k]
        weights = None
        if model.weights == "distance":
            with np.errstate(divide="ignore"):
                weights = 1.0 / stats.distances[rows, :k]
            inf_mask = np.isinf(weights)
            inf_row = np.any(inf_mask, axis=1)
            weights[inf_row] = inf_mask[inf_row]
        if type(model).__name__ == "KNeighborsRegressor":
            values = np.asarray(y, dtype=float)[ind]
            if weights is None:
                return np.mean(values, axis=1)
            return np.sum(values * weights, axis=1) / np.sum(weights, axis=1)
        classes, codes = np.unique(y, return_inverse=True)
        votes = np.zeros((rows.shape[0], classes.shape[0]))
        row_index = np.repeat(np.arange(rows.shape[0]), k)
        np.add.at(
            votes,
            (row_index, codes[ind].ravel()),
            1.0 if weights is None else weights.ravel(),
        )
        return classes[np.argmax(votes, axis=1)]


_FAMILIES = (
    _DiscreteNB(),
    _GaussianNB(),
    _CategoricalNB(),
    _LeastSquares(),
    _LinearDiscriminant(),
    _Neighbors(),
)


def _family(estimator) -> _Family | None:
    kind = type(estimator)
    name = f"{kind.__module__.split('._')[0]}.{kind.__qualname__}"
    for family in _FAMILIES:
        if name in family.names:
            return family if family.supports(estimator) else None
    return None


def exact_learners() -> list[str]:
    """The scikit-learn estimators the exact backend runs, by dotted name.

    Examples
    --------
    >>> from sklearn_ext.model_selection import exact_learners
    >>> "sklearn.naive_bayes.MultinomialNB" in exact_learners()
    True
    """
    return [name for family in _FAMILIES for name in family.names]


# -- the backend --------------------------------------------------------------------
class ExactStatisticsBackend(Backend):
    """Exact k-fold CV from per-chunk sufficient statistics (``method="exact"``).

    For naive Bayes (``MultinomialNB``, ``ComplementNB``, ``BernoulliNB``,
    ``CategoricalNB``, ``GaussianNB``), least squares (``Ridge``,
    ``RidgeClassifier``, ``LinearRegression``) and linear discriminant analysis
    (``LinearDiscriminantAnalysis`` with the ``lsqr`` or ``eigen`` solver),
    each fold's model is a function of statistics that add up over rows. For
    nearest neighbours (``KNeighborsClassifier``, ``KNeighborsRegressor``), one
    neighbour search over all rows serves every fold, each row's neighbours
    taken outside its own chunk.
    They are computed once per chunk; each fold's are the total minus its
    held-out chunk, and each fold model is a
    real fitted scikit-learn estimator with the attributes its own ``fit`` on
    the fold's training rows sets (to rounding: see ``docs/exact.md`` for what
    is bit-equal and what agrees to 1e-10). ``method="auto"`` picks this
    backend first for the learners it runs.

    Statistics are kept in a :class:`StatisticsCache` (by default one shared
    by the process), keyed by the data, the fold plan and the parameters that
    change them, so further candidates of a grid over ``alpha`` or
    ``var_smoothing`` cost only their solves and scoring. Each fold's
    eigendecomposition (least squares) is kept with them, so a further
    ``alpha`` costs a matrix product per fold.

    Parameters
    ----------
    cache : StatisticsCache, default=None
        Where statistics are kept between runs; ``None`` uses the process's
        shared cache (512 MiB). ``StatisticsCache(max_bytes=0)`` keeps nothing.
    gram_budget : int, default=256 MiB
        Bound on the per-chunk Gram matrices kept (``k * n_features**2``
        floats); beyond it a fold's chunk Gram is recomputed from its rows.

    Notes
    -----
    The only fit parameter taken is ``sample_weight``. Leaves are emitted in
    the plan's leaf order; the first carries the time and the rows of the
    statistics pass (``n_samples_fed`` is ``n_samples`` on a cache miss and
    0 on a hit). The extra ``statistics_hit`` says whether the statistics
    came from the cache (a result column of ``tree_cross_validate``).

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.model_selection import KFold, cross_validate
    >>> from sklearn.naive_bayes import MultinomialNB
    >>> from sklearn_ext import tree_cross_validate
    >>> X, y = load_digits(return_X_y=True)
    >>> ours = tree_cross_validate(MultinomialNB(), X, y, cv=KFold(10))
    >>> ref = cross_validate(MultinomialNB(), X, y, cv=KFold(10))
    >>> ours["backend"], bool((ours["test_score"] == ref["test_score"]).all())
    ('exact', True)
    """

    name = "exact"
    #: Per fold only: a search's ``cv_results_`` keeps GridSearchCV's keys.
    extras: ClassVar[dict[str, str | None]] = {"statistics_hit": None}

    def __init__(self, cache: StatisticsCache | None = None, gram_budget: int = 2**28):
        if cache is not None and not isinstance(cache, StatisticsCache):
            raise TypeError(
                "The 'cache' parameter of ExactStatisticsBackend must be a "
                f"StatisticsCache or None. Got {cache!r} instead."
            )
        self.cache = cache
        self.gram_budget = gram_budget

    @classmethod
    def accepts(cls, estimator) -> bool:
        return _family(estimator) is not None

    def with_store(self, store, estimator) -> Backend:
        """A copy of this backend keeping its statistics in ``store``.

        ``store`` must be a :class:`StatisticsCache`.
        """
        if not isinstance(store, StatisticsCache):
            raise TypeError(
                "The 'exact' backend keeps a StatisticsCache between runs; got "
                f"store={store!r}."
            )
        backend = copy.copy(self)
        backend.cache = store
        return backend

    def __repr__(self) -> str:
        return (
            "ExactStatisticsBackend()"
            if self.cache is None
            else f"ExactStatisticsBackend(cache={self.cache!r})"
        )

    def run(self, task: CVTask) -> LeafTable:
        tic = time.perf_counter()
        estimator = task.estimator
        family = _family(estimator)
        unknown = set(task.fit_params) - {"sample_weight"}
        if unknown:
            raise ValueError(
                "The exact backend takes only the fit parameter 'sample_weight'; "
                f"got {sorted(unknown)}. Use method='standard'."
            )
        prototype = clone(estimator)
        prototype._validate_params()
        weights = task.fit_params.get("sample_weight")
        if weights is not None:
            weights = np.asarray(weights, dtype=float).ravel()
            if weights.shape[0] != task.plan.n_samples:
                raise ValueError(
                    f"sample_weight.shape == {weights.shape}, expected "
                    f"({task.plan.n_samples},)!"
                )
        if not family.accepts_sparse and sp.issparse(task.X):
            # scikit-learn's check_array words, naming the learner.
            raise TypeError(
                "Sparse data was passed for X, but dense data is required by "
                f"{type(prototype).__name__}. Use '.toarray()' to convert to a "
                "dense numpy array."
            )
        X, y = family.prepare(prototype, task.X, task.y)
        if isinstance(family, _LeastSquares):
            weights = family.weights(prototype, y, weights)
        n_features = X.shape[1]
        cache = _DEFAULT_CACHE if self.cache is None else self.cache
        chunks = _Chunks(task.plan)
        key = self._key(family, prototype, task, weights)
        options = (
            {"gram_budget": self.gram_budget}
            if isinstance(family, _LeastSquares | _LinearDiscriminant | _Neighbors)
            else {}
        )
        stats, hit = cache.get_or_compute(
            key,
            functools.partial(
                family.statistics, prototype, X, y, weights, chunks, **options
            ),
        )
        fed = 0 if hit else task.plan.n_samples
        pending_time = time.perf_counter() - tic
        native = family.joint_log_likelihood and _native_accuracy(task)
        neighbors_native = isinstance(family, _Neighbors) and (
            task.scoring in (None, "accuracy")
            if type(prototype).__name__ == "KNeighborsClassifier"
            else task.scoring in (None, "r2")
        )
        least_squares = isinstance(family, _LeastSquares)
        # R^2 (the regressors' default score) from the held-out chunk's moments.
        moments_r2 = (
            least_squares
            and not isinstance(y, tuple)
            and task.scoring in (None, "r2")
            and stats.moments
        )
        if least_squares and isinstance(y, tuple):
            labels, classes, _ = y
            index = np.searchsorted(classes, labels)
            n_classes = classes.shape[0]
            chunk_rows = np.bincount(
                chunks.of_row * n_classes + index,
                minlength=chunks.n_chunks * n_classes,
            ).reshape(chunks.n_chunks, n_classes)
            class_rows = chunk_rows.sum(axis=0)
        if (
            native
            and isinstance(family, _DiscreteNB)
            and not task.return_estimator
            and not sp.issparse(X)
            and (
                type(prototype).__name__ != "BernoulliNB"
                or np.ndim(prototype.alpha) == 0
            )
        ):
            return _run_discrete_nb(
                task, family, prototype, stats, X, hit, pending_time
            )
        leaves = []
        for leaf in range(task.plan.n_splits):
            tic = time.perf_counter()
            model = copy.copy(prototype)
            if isinstance(family, _Neighbors):
                model = (
                    family.fold_model(model, stats, leaf, n_features, task=task)
                    if task.return_estimator or not neighbors_native
                    else None
                )
            elif not least_squares:
                model = family.fold_model(model, stats, leaf, n_features)
            elif isinstance(y, tuple):
                present = np.flatnonzero(class_rows - chunk_rows[leaf] > 0)
                if present.shape[0] < 2:
                    model = _fit_fold(task, prototype, leaf)
                else:
                    model = family.fold_model(
                        model, stats, leaf, n_features, y_info=(classes, present)
                    )
            else:
                y_info = "1d" if np.ndim(task.y) == 1 else "2d"
                model = family.fold_model(model, stats, leaf, n_features, y_info)
            fit_time = pending_time + time.perf_counter() - tic
            pending_time = 0.0
            if neighbors_native:
                scores, score_time = _score_neighbors(
                    task, family, prototype, stats, leaf
                )
            elif native:
                scores, score_time = _score_native(task, model, X, leaf)
            else:
                tic = time.perf_counter()
                r2 = (
                    stats.held_out_r2(leaf, model.coef_, model.intercept_)
                    if moments_r2
                    else None
                )
                if r2 is None:
                    scores, score_time = task.score(model, leaf)
                else:
                    scores, score_time = {"score": r2}, time.perf_counter() - tic
            result = task.leaf_result(
                leaf,
                scores,
                fed,
                fit_time,
                score_time,
                model,
                {"statistics_hit": hit},
            )
            fed = 0
            leaves.append(result)
            task.emit(result)
        return LeafTable.from_leaves(leaves)

    def _key(self, family: _Family, estimator, task: CVTask, weights) -> bytes:
        h = hashlib.sha256(b"exact-statistics-v1|")
        h.update(type(family).__name__.encode())
        h.update(type(estimator).__qualname__.encode())
        h.update(repr(family.statistics_key(estimator)).encode())
        h.update(repr(self.gram_budget).encode())
        h.update(_array_digest(task.X))
        h.update(b"|y" + (b"-" if task.y is None else _array_digest(task.y)))
        # Weights are made afresh per run (class weights folded in): not scoped.
        h.update(b"|w" + (b"-" if weights is None else _digest(weights)))
        h.update(_plan_digest(task.plan))
        return h.digest()


_PLAN_DIGESTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _plan_digest(plan) -> bytes:
    """The chunks of a plan (its feeding order and leaf order do not matter here)."""
    try:
        known = _PLAN_DIGESTS.get(plan)
    except TypeError:
        known = None
    if known is not None:
        return known
    h = hashlib.sha256(b"chunks|")
    h.update(np.ascontiguousarray(plan.bounds, dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(plan.sample_order, dtype=np.int64).tobytes())
    digest = h.digest()
    try:
        _PLAN_DIGESTS[plan] = digest
    except TypeError:
        pass
    return digest


def _fit_fold(task: CVTask, prototype, leaf: int):
    """A fold the statistics cannot make (fewer than two classes): ``fit`` it."""
    X, y, params = task.rows(task.plan.train_indices(leaf))
    return clone(prototype).fit(X, y, **params)


def _run_discrete_nb(task, family, prototype, stats, X, hit, pending_time):
    """Every fold of a discrete naive Bayes run, scored in stacked batches.

    No fitted estimator is built per fold (none is returned): the folds'
    counts are stacked, and their log-probabilities and the held-out rows'
    joint log-likelihoods computed a batch of folds at a time, each fold's
    held-out rows in one matrix product, as ``predict`` computes them (folds
    of equal test size share a batch). A fold lacking a class (whose model
    drops it, as ``fit`` does) is made and scored on its own.
    """
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
    fit_time[0] += pending_time
    score_time = np.zeros(k)
    n_features_in = X.shape[1]
    for leaf in alone:
        tic = time.perf_counter()
        model = family.fold_model(copy.copy(prototype), stats, leaf, n_features_in)
        fit_time[leaf] += time.perf_counter() - tic
        result, score_time[leaf] = _score_native(task, model, X, leaf)
        scores[leaf] = result["score"]
    fed = np.zeros(k, dtype=np.int64)
    fed[0] = 0 if hit else plan.n_samples
    return _leaf_columns(task, {"score": scores}, fed, fit_time, score_time, hit)


def _leaf_columns(task, scores, fed, fit_time, score_time, hit) -> LeafTable:
    """The table of leaves ``0 .. k-1`` from columns, each leaf emitted in turn.

    A :class:`LeafResult` is made only for a listener (``task.on_leaf``).
    """
    plan = task.plan
    k = plan.n_splits
    if task.on_leaf is not None:
        for leaf in range(k):
            task.emit(
                task.leaf_result(
                    leaf,
                    {name: float(values[leaf]) for name, values in scores.items()},
                    fed[leaf],
                    fit_time[leaf],
                    score_time[leaf],
                    None,
                    {"statistics_hit": hit},
                )
            )
    leaves = np.arange(k, dtype=np.intp)
    return LeafTable(
        split=plan.split_index[leaves].astype(np.intp),
        leaf=leaves,
        scores={
            name: np.asarray(values, dtype=float) for name, values in scores.items()
        },
        n_samples_fed=np.asarray(fed, dtype=np.int64),
        fit_time=np.asarray(fit_time, dtype=float),
        score_time=np.asarray(score_time, dtype=float),
        extras={"statistics_hit": [hit] * k},
    )


def _native_accuracy(task: CVTask) -> bool:
    """Whether the task's score is plain accuracy (``score`` of a classifier)."""
    return task.scoring in (None, "accuracy")


def _score_native(task: CVTask, model, X, leaf: int):
    """Accuracy from the model's joint log-likelihood on the leaf's rows.

    ``X`` is already in the form ``predict`` hands to ``_joint_log_likelihood``
    (binarized for BernoulliNB, integer for CategoricalNB), so this is
    ``accuracy_score(y, model.predict(X))`` without re-validating each fold.
    """
    tic = time.perf_counter()
    rows = _as_slice(task.plan.test_indices(leaf))
    jll = model._joint_log_likelihood(X[rows])
    predicted = model.classes_[np.argmax(jll, axis=1)]
    score = float(np.mean(predicted == task.y[rows]))
    return {"score": score}, time.perf_counter() - tic


def _score_neighbors(task: CVTask, family: _Neighbors, model, stats, leaf: int):
    """Accuracy or R^2 of a fold from the shared neighbour lists."""
    from sklearn.metrics import r2_score

    tic = time.perf_counter()
    rows = task.plan.test_indices(leaf)
    predicted = family.predict(model, stats, rows, task.y)
    truth = task.y[_as_slice(rows)]
    if type(model).__name__ == "KNeighborsRegressor":
        score = float(r2_score(truth, predicted))
    else:
        score = float(np.mean(predicted == truth))
    return {"score": score}, time.perf_counter() - tic
