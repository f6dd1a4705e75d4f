"""One-vs-one training: the one per-pair loop of ``fit`` and of every CV fold.

:func:`train_pairs` trains every pair of classes of one training set on a
kernel store: each pair's problem starts as its caller says (a
:class:`FitStart` for :meth:`AlphaSeededSVC.fit`, a :class:`FoldStart` for a
fold of the CV engine), is solved by SMO to ``tol`` (or skipped exactly) and
stored in the warm-start store, if any, under the name :class:`StoreKeys`
gives it.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from sklearn_ext.svm._kernel_store import KernelStore
from sklearn_ext.svm._seeding import seed_pair
from sklearn_ext.svm._solver import (
    PairProblem,
    SVMParams,
    pair_rows,
    pairs,
    repair_equality,
    solve_pair,
)
from sklearn_ext.svm._warm_start import (
    StoredSolution,
    data_fingerprint,
    kernel_fingerprint,
    kernel_key,
    rows_fingerprint,
    seed_fit,
    seed_from_store,
    store_in_use,
)
from sklearn_ext.utils._hashing import content_digest

__all__ = [
    "FitStart",
    "FoldKernel",
    "FoldStart",
    "PairFit",
    "StoreKeys",
    "train_pairs",
]

#: A stored solution to start from and whether it is an exact skip.
Found = tuple[StoredSolution, bool] | None


class StoreKeys:
    """How one problem's pairs are named in its warm-start store, if any.

    Parameters
    ----------
    params : SVMParams
        The problem.
    X, y : data
        The whole data set (its fingerprint names the solutions).
    gamma : float
        The resolved ``gamma``.
    store : WarmStartStore, default=None
        Stands in for ``params.warm_start_store`` (``probability=True``'s
        internal CV hands its kernel over to the final fit that way).
    """

    def __init__(self, params: SVMParams, X, y, gamma: float, store=None) -> None:
        self.params = params
        self.store = store_in_use(params.warm_start_store) if store is None else store
        self.C = float(params.C)
        self.tol = float(params.tol)
        # A callable kernel without a declared key cannot be told apart from
        # another one: its solutions only seed and its matrix is never kept.
        self.exact = kernel_key(params.kernel) is not None
        if self.store is None:
            return
        self.data = data_fingerprint(X, y)
        self.kernel = kernel_fingerprint(
            params.kernel,
            gamma,
            params.degree,
            params.coef0,
            params.class_weight,
            params.stored_dtype(X.shape[0]),
        )

    def kernel_store(self, X, gamma: float) -> KernelStore:
        """The kernel store of ``X``: the warm-start store's, or a new one."""
        params = self.params
        if self.store is None:
            return params.kernel_store(X, gamma)
        key = None
        if self.exact:
            key = (
                self.data,
                kernel_fingerprint(
                    params.kernel, gamma, params.degree, params.coef0, None
                ),
                str(params.cache_size),
                str(params.stored_dtype(X.shape[0])),
            )
        return self.store.kernel_store(key, lambda: params.kernel_store(X, gamma))

    def for_fold(self, X, gamma: float, scaling: str, params) -> StoreKeys:
        """The keys of one fold of a per-fold scaled run (its own kernel).

        The fold's kernel is fixed by the data, the kernel, the scaling
        (``scaling``: the steps' classes and parameters) and the fold's
        training rows; its solutions are named by a kernel fingerprint that
        includes the scaling, so no other scaler's solutions (nor an
        unscaled run's) ever seed it. ``X`` is the fold's scaled data,
        ``gamma`` its resolved ``gamma``, ``params`` the problem as the fold
        solves it (its share of the kernel budget).
        """
        keys = copy.copy(self)
        keys.params = params
        if self.store is not None:
            keys.kernel = content_digest(
                kernel_fingerprint(
                    params.kernel,
                    gamma,
                    params.degree,
                    params.coef0,
                    params.class_weight,
                    params.stored_dtype(X.shape[0]),
                ),
                scaling,
            ).hex()
        return keys

    def fold_kernel(self, scaling: str, rows, build, limit: float):
        """A scaled fold's :class:`FoldKernel`: kept by the store, or ``build()``.

        The warm-start store keeps the kernels of the most recent run's folds
        (up to ``limit`` bytes together), named by what fixes them all (the
        data, the scaling, the kernel and its parameters as asked:
        ``gamma="scale"`` resolves to another value in each fold) and each
        fold's training ``rows``, so that the same folds at another ``C`` do
        not scale the rows nor build the kernel again.
        """
        keep = getattr(self.store, "fold_kernel_store", None)
        if keep is None or not self.exact:
            return build()
        params = self.params
        gamma = params.gamma if isinstance(params.gamma, str) else float(params.gamma)
        group = (
            self.data,
            content_digest(
                scaling,
                str(kernel_key(params.kernel)),
                gamma,
                float(params.degree),
                float(params.coef0),
                str(params.cache_size),
                str(params.kernel_dtype),
            ).hex(),
        )
        return keep(group, rows_fingerprint(rows), build, limit)

    def slot(self, rows, a, b) -> tuple:
        # A fit's problem is its data (a fold of a standard CV is a fit on other
        # data, not changed data); a CV fold's is its rows of the data set.
        where = "fit:" + self.data if rows is None else rows_fingerprint(rows)
        return (self.kernel, where, int(a), int(b))

    def lookup(self, rows, a, b, n_variables) -> Found:
        """``(StoredSolution, skip)`` to start from, or ``None``."""
        if self.store is None:
            return None
        found = self.store.lookup(
            self.slot(rows, a, b), self.data, self.C, tol=self.tol
        )
        if found is not None and found[0].alpha.shape != (n_variables,):
            # Only a foreign file can get here (the key hashes the rows).
            return None
        return found

    def seed_fit(self, kernel_store, problem: PairProblem) -> Found:
        """Start a fit's ``problem`` from the store: its own solution at the
        nearest ``C`` or a CV fold's at this ``C``, whichever is lower
        (:func:`~sklearn_ext.svm._warm_start.seed_fit`); the seed, or None."""
        found = self.lookup(None, problem.first, problem.second, problem.idx.shape[0])
        if found is not None:
            self.seed(kernel_store, problem, found)
        if self.store is None:
            return found
        slot = self.slot(None, problem.first, problem.second)
        return seed_fit(
            self.store, kernel_store, problem, slot, self.data, self.C, found
        )

    def seed(self, kernel_store, problem: PairProblem, found) -> None:
        """Start ``problem`` from ``found``, a ``(StoredSolution, skip)`` pair."""
        solution, skip = found
        seed_from_store(
            kernel_store,
            solution,
            skip,
            problem,
            self.C,
            scale=bool(getattr(self.store, "scale", False)),
        )
        if skip:
            # Same alphas, same gradient: same bias, no iteration.
            problem.rho, problem.n_iter, problem.converged = solution.rho, 0, True

    def solve(self, kernel_store, problem: PairProblem, found, rows) -> None:
        """Solve the seeded ``problem`` (unless ``found`` is a skip), store it.

        ``rows`` are the CV fold's training rows, ``None`` for a fit.
        """
        params = self.params
        if found is None or not found[1]:
            solve_pair(
                kernel_store,
                problem,
                tol=params.tol,
                max_iter=params.max_iter,
                shrinking=params.shrinking,
            )
        if self.store is not None and problem.converged:
            self.store.put(
                self.slot(rows, problem.first, problem.second),
                self.data,
                StoredSolution.from_problem(
                    self.C, problem, tol=self.tol, trusted=self.exact
                ),
            )


@dataclass
class FoldKernel:
    """A scaled fold's data and kernel store, as the warm-start store keeps them."""

    scaled: Any
    store: KernelStore

    @property
    def nbytes(self) -> int:
        X = self.scaled.X
        data = X.nbytes if isinstance(X, np.ndarray) else X.data.nbytes
        return int(self.store.nbytes + data)

    @property
    def shareable(self) -> bool:
        """Only a full float64 matrix is read-only, hence safe to share."""
        return self.store.columns.dense_matrix is not None


@dataclass
class PairFit:
    """The solved one-vs-one problems of one training set.

    Attributes
    ----------
    problems : list of PairProblem
        One per pair of classes, in :func:`~sklearn_ext.svm._solver.pairs`
        order, solved to ``tol``.
    seeds : list
        The ``(StoredSolution, skip)`` each problem started from, or ``None``.
    seeded_at : float
        ``time.perf_counter()`` when every problem was started (seeding ends
        and solving begins).
    """

    problems: list[PairProblem]
    seeds: list[Found]
    seeded_at: float


#: How a pair's problem starts: ``start(p, a, b, idx, y, C)`` returns the
#: problem (``alpha`` feasible, ``G`` its gradient or ``None``) and its seed.
Start = Callable[[int, int, int, np.ndarray, np.ndarray, np.ndarray], Any]


def train_pairs(
    keys: StoreKeys,
    kernel_store,
    y_enc: np.ndarray,
    rows: np.ndarray,
    C_by_class: np.ndarray,
    start: Start,
    *,
    fold_rows: np.ndarray | None = None,
) -> PairFit:
    """Train every one-vs-one pair of classes on the global rows ``rows``.

    Each pair's problem is started by ``start`` (all pairs first, so that
    seeding and solving are timed apart), then solved by SMO unless its seed
    is an exact skip, and stored under ``keys``: as a fit's solution, or as
    the CV fold's with training rows ``fold_rows``.

    Parameters
    ----------
    keys : StoreKeys
        The problem's parameters and warm-start store.
    kernel_store : KernelStore
        The kernel of the whole data set.
    y_enc : ndarray of int
        Class index of every row of the data set.
    rows : ndarray of intp
        The training rows, increasing.
    C_by_class : ndarray of float
        ``C`` of each class.
    start : callable
        ``start(p, a, b, idx, y, C)``: pair ``p``'s starting problem on its
        rows ``idx`` (labels ``y``, bounds ``C``) and its seed.
    fold_rows : ndarray of intp, default=None
        The CV fold's training rows (``None`` for a fit).

    Returns
    -------
    fit : PairFit
    """
    problems, seeds = [], []
    for p, (a, b) in enumerate(pairs(C_by_class.shape[0])):
        idx, y = pair_rows(y_enc, rows, a, b)
        problem, found = start(
            p, a, b, idx, y, np.where(y > 0, C_by_class[a], C_by_class[b])
        )
        problems.append(problem)
        seeds.append(found)
    seeded_at = time.perf_counter()
    for problem, found in zip(problems, seeds, strict=True):
        keys.solve(kernel_store, problem, found, fold_rows)
    return PairFit(problems, seeds, seeded_at)


def _cold(a: int, b: int, idx, y, C) -> PairProblem:
    return PairProblem(
        a, b, idx, y, C, np.zeros(idx.shape[0]), np.full(idx.shape[0], -1.0)
    )


class FitStart:
    """How :meth:`AlphaSeededSVC.fit` starts each pair.

    From ``starts`` (full-length alphas per pair: ``initial_alpha``, the
    previous fit's with ``warm_start``, or the last internal fold's with
    ``probability=True``), clipped and repaired; else from the warm-start
    store (:meth:`StoreKeys.seed_fit`); else from zero.
    """

    def __init__(self, keys: StoreKeys, kernel_store, starts=None) -> None:
        self.keys = keys
        self.kernel_store = kernel_store
        self.starts = starts

    def __call__(self, p, a, b, idx, y, C) -> tuple[PairProblem, Found]:
        if self.starts is None:
            problem = _cold(a, b, idx, y, C)
            return problem, self.keys.seed_fit(self.kernel_store, problem)
        alpha = np.array(self.starts[p][idx], dtype=np.float64)
        repair_equality(alpha, y, C)
        return PairProblem(a, b, idx, y, C, alpha, None), None


class FoldStart:
    """How a CV fold starts each pair: from the store or the previous fold.

    A solution of this very fold at a nearby ``C`` (the warm-start store)
    and the previous fold's solution of the pair adapted by ``seeding``
    (:func:`~sklearn_ext.svm._seeding.seed_pair`) are both candidates; the
    one with the lower dual objective wins, and an exact skip wins outright.

    Parameters
    ----------
    keys : StoreKeys
        The problem's parameters and store.
    kernel_store : KernelStore
        The kernel of the whole data set (this chain's view).
    rows : ndarray of intp
        The fold's training rows.
    previous : list of PairProblem or None
        The previous fold's solved problems in this chain.
    seeding : str
        The fold-to-fold seeding.
    rng : numpy.random.Generator
        Source of SIR's random replacements.
    kernel_changed : bool, default=False
        Whether this fold's kernel is not the previous fold's (a per-fold
        scaler): the seed's gradient is then computed afresh.
    """

    def __init__(
        self, keys, kernel_store, rows, previous, seeding, rng, kernel_changed=False
    ) -> None:
        self.kernel_changed = kernel_changed
        self.keys = keys
        self.kernel_store = kernel_store
        self.rows = rows
        self.previous = previous
        self.seeding = seeding
        self.rng = rng

    def __call__(self, p, a, b, idx, y, C) -> tuple[PairProblem, Found]:
        keys, store, previous = self.keys, self.kernel_store, self.previous
        # A solution of this very fold at a nearby C beats the previous
        # fold's at this C: same rows, and possibly an exact skip.
        found = keys.lookup(self.rows, a, b, idx.shape[0])
        problem = None
        if found is not None or previous is None:
            problem = _cold(a, b, idx, y, C)
        if found is not None:
            keys.seed(store, problem, found)
        if previous is not None and (found is None or not found[1]):
            # Of two seeds, start from the one with the lower dual objective.
            by_fold = seed_pair(
                store,
                previous[p],
                idx,
                y,
                C,
                seeding=self.seeding,
                rng=self.rng,
                kernel_changed=self.kernel_changed,
            )
            if found is None or by_fold.objective() < problem.objective():
                problem, found = by_fold, None
        return problem, found
