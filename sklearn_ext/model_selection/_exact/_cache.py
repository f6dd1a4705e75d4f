"""The statistics of a run, kept across runs in a bounded, content-keyed store."""

from __future__ import annotations

import weakref

import numpy as np
import scipy.sparse as sp

from sklearn_ext.utils._hashing import content_digest
from sklearn_ext.utils._lru import LRUStore

__all__ = ["StatisticsCache", "default_cache", "plan_digest"]


class StatisticsCache(LRUStore):
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

    Digesting ``X`` reads it once per run, or once per search or study:
    within :func:`~sklearn_ext.utils._data_scope.data_scope` (a search's
    ``fit``, an Optuna study), where the data is taken not to change, each
    array's digest is taken once (see :mod:`sklearn_ext.utils._hashing`).
    Outside it, data changed between two runs, through any view, is always
    seen.

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
        super().__init__(max_bytes, sizeof=_statistics_nbytes)

    def __setstate__(self, state: dict) -> None:
        # A worker process starts with an empty cache of the same bound.
        self.__init__(state["max_bytes"])

    def __repr__(self) -> str:
        return f"StatisticsCache(max_bytes={self.max_bytes})"


def _statistics_nbytes(value) -> int:
    """Memory of the arrays held by a statistics object (its lazy parts included)."""
    total = 0
    for item in vars(value).values():
        if isinstance(item, np.ndarray):
            total += item.nbytes
        elif sp.issparse(item):
            total += item.data.nbytes + item.indices.nbytes + item.indptr.nbytes
    return total + getattr(value, "reserved_bytes", 0)


_DEFAULT_CACHE = StatisticsCache()


def default_cache() -> StatisticsCache:
    """The process's shared cache (512 MiB)."""
    return _DEFAULT_CACHE


_PLAN_DIGESTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def plan_digest(plan) -> bytes:
    """The chunks of a plan (its feeding order and leaf order do not matter here)."""
    try:
        known = _PLAN_DIGESTS.get(plan)
    except TypeError:
        known = None
    if known is not None:
        return known
    digest = content_digest(
        "chunks",
        np.ascontiguousarray(plan.bounds, dtype=np.int64),
        np.ascontiguousarray(plan.sample_order, dtype=np.int64),
    )
    try:
        _PLAN_DIGESTS[plan] = digest
    except TypeError:
        pass
    return digest
