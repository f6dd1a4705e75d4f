"""Cross-C warm starts: dual solutions kept by problem and reused at other C.

A C-SVC problem is fixed by the data, the kernel, the training rows and the
pair of classes; only ``C`` changes along a C search. The store keeps, for each
such problem (a *slot*), the solutions found at each ``C``. A new ``C'``
starts from the nearest stored one: its alphas clipped to ``[0, C']`` with the
equality constraint repaired (or scaled by ``C'/C``), and its gradient updated
from the columns of the alphas that moved. When a stored solution at ``C < C'``
has no alpha at its upper bound it satisfies the KKT conditions of ``C'`` as
they are (no constraint ``alpha_i <= C`` is active), so the solve is skipped.
"""

from __future__ import annotations

import math
import threading
import warnings
from dataclasses import dataclass, field, replace
from numbers import Integral, Real
from typing import Any

import numpy as np

from sklearn_ext._fast._smo import gradient_from_alpha, split_rows, update_gradient
from sklearn_ext.svm._seeding import seed_pair
from sklearn_ext.svm._solver import PairProblem, repair_equality
from sklearn_ext.utils._hashing import UnhashableContent, content_digest
from sklearn_ext.utils._lru import LRUStore

__all__ = [
    "KeyedKernel",
    "WarmStartStore",
    "WarmStartSession",
    "StoredSolution",
    "data_fingerprint",
    "kernel_fingerprint",
    "kernel_key",
    "rows_fingerprint",
    "seed_from_fold",
    "seed_from_store",
    "store_in_use",
]

#: Default bound on the bytes of the solutions a store keeps (alphas and
#: gradients; the kept kernel matrix is bounded by the kernel store's budget).
DEFAULT_MAX_BYTES = 512 * 2**20


def _digest(*parts) -> str:
    return content_digest(*parts).hex()


def data_fingerprint(X, y) -> str:
    """A hash of the values, shape and dtype of ``X`` (dense or CSR) and ``y``.

    Within a :func:`~sklearn_ext.utils._data_scope.data_scope` (a search's
    ``fit``: every candidate builds its store keys from the same ``X``), ``X``
    is read once (about 10 ms per candidate on madelon's 2,000 x 500 floats).
    """
    y = np.asarray(y)
    try:
        return _digest("svm-data", X, y)
    except UnhashableContent:
        # Labels of arbitrary types: by type and text, one by one.
        labels = [(type(v).__qualname__, str(v)) for v in y.ravel().tolist()]
        return _digest("svm-data", X, y.shape, labels)


class KeyedKernel:
    """A callable kernel with a declared identity, so warm starts may skip solves.

    A :class:`WarmStartStore` identifies a kernel by what it computes. A named
    kernel (``"rbf"``...) is identified by its name and parameters, but a plain
    callable cannot be: its name and object id say nothing about its parameters
    (a closure over ``gamma`` has the same name for every ``gamma``, and Python
    reuses the id of a collected object). Solutions found with a plain callable
    therefore only *seed* later solves, which then run SMO to ``tol``. Wrap the
    callable in a ``KeyedKernel`` whose ``key`` names everything that fixes its
    values (e.g. ``"laplacian:gamma=0.5"``) and its solutions may also be
    reused exactly (the exact skip), and its kernel matrix kept.

    Any callable with a ``warm_start_key`` string attribute is treated the same
    way. Two kernels with the same key must compute the same values: the key is
    trusted, so a key that does not describe the kernel gives wrong models.

    Parameters
    ----------
    function : callable
        ``function(X, Y)`` returns the ``(n_X, n_Y)`` kernel matrix.
    key : str
        A non-empty string naming what ``function`` computes.

    Attributes
    ----------
    warm_start_key : str
        The key, as given.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.metrics.pairwise import laplacian_kernel
    >>> from sklearn_ext.svm import AlphaSeededSVC, KeyedKernel, WarmStartStore
    >>> X = np.random.RandomState(0).normal(size=(60, 3))
    >>> y = (X[:, 0] > 0).astype(int)
    >>> kernel = KeyedKernel(
    ...     lambda A, B: laplacian_kernel(A, B, gamma=0.5), key="laplacian:0.5"
    ... )
    >>> store = WarmStartStore()
    >>> _ = AlphaSeededSVC(C=1.0, kernel=kernel, warm_start_store=store).fit(X, y)
    >>> again = AlphaSeededSVC(C=1.0, kernel=kernel, warm_start_store=store).fit(X, y)
    >>> again.warm_start_skipped_
    array([ True])
    """

    def __init__(self, function, key: str) -> None:
        if not callable(function):
            raise TypeError(
                "The 'function' parameter of KeyedKernel must be a callable. Got "
                f"{function!r} instead."
            )
        if not isinstance(key, str) or not key:
            raise ValueError(
                "The 'key' parameter of KeyedKernel must be a non-empty str. Got "
                f"{key!r} instead."
            )
        self.function = function
        self.warm_start_key = key

    def __call__(self, X, Y):
        return self.function(X, Y)

    def __repr__(self) -> str:
        return f"KeyedKernel(key={self.warm_start_key!r})"


def kernel_key(kernel) -> str | None:
    """What identifies ``kernel``'s values, or ``None`` for an undeclared callable.

    A named kernel is its name; a callable is identified only by a declared
    ``warm_start_key`` string (see :class:`KeyedKernel`), never by its object.
    """
    if not callable(kernel):
        return str(kernel)
    key = getattr(kernel, "warm_start_key", None)
    if isinstance(key, str) and key:
        return f"callable:{key}"
    return None


def kernel_fingerprint(
    kernel, gamma, degree, coef0, class_weight, dtype: Any = "float64"
) -> str:
    """A hash of what fixes the dual problem besides data, rows, ``C`` and ``tol``.

    The kernel (see :func:`kernel_key`; every callable without a declared key
    shares one anonymous name, whose solutions only seed), its parameters, the
    class weights and the precision of the stored kernel matrix.
    """
    name = kernel_key(kernel)
    if name is None:
        name = "callable:<no warm_start_key>"
    if isinstance(class_weight, dict):
        class_weight = {k: float(v) for k, v in class_weight.items()}
    parts = (name, float(gamma), int(degree), float(coef0), class_weight, str(dtype))
    try:
        return _digest(*parts)
    except UnhashableContent:  # labels of arbitrary types: by their text
        weights = sorted((repr(k), v) for k, v in class_weight.items())
        return _digest(*parts[:4], weights, str(dtype))


def rows_fingerprint(rows: np.ndarray) -> str:
    """A hash of a problem's global training rows (a fold, or all of them)."""
    return _digest(np.ascontiguousarray(rows, dtype=np.int64))


@dataclass(frozen=True)
class StoredSolution:
    """One solved pair problem at one ``C``.

    ``alpha`` and ``G`` (the gradient ``Q alpha - 1``) run over the problem's
    rows in their order; ``at_bound`` says whether any alpha sits at its upper
    bound ``C_i``; ``tol`` is the stopping tolerance it was solved to (it may
    be reused as it is only by a solve asking for ``tol`` or looser). A
    solution read from a file another process wrote, or found with a kernel
    that has no declared key, is not ``trusted``: it only seeds, its gradient
    is recomputed from its alphas and SMO checks it (0 iterations when it is
    optimal), never the exact skip. ``rows`` are the problem's global rows
    (the pair's rows of a fold, or of all the data): kept once per problem by
    the store, and set on a solution it serves to seed a problem on more rows
    (:meth:`WarmStartStore.lookup_folds`).
    """

    C: float
    alpha: np.ndarray
    G: np.ndarray
    rho: float
    objective: float
    at_bound: bool
    trusted: bool = True
    tol: float = math.inf
    rows: np.ndarray | None = None

    @classmethod
    def from_problem(
        cls,
        C: float,
        problem: PairProblem,
        *,
        tol: float = math.inf,
        trusted: bool = True,
    ) -> StoredSolution:
        alpha = np.array(problem.alpha, dtype=np.float64)
        G = np.array(problem.G, dtype=np.float64)
        rows = np.array(problem.idx, dtype=np.intp)
        for array in (alpha, G, rows):
            array.setflags(write=False)
        return cls(
            C=float(C),
            alpha=alpha,
            G=G,
            rho=float(problem.rho),
            objective=problem.objective(),
            at_bound=bool(np.any(alpha >= problem.C)),
            trusted=bool(trusted),
            tol=float(tol),
            rows=rows,
        )

    def reusable_at(self, tol: float) -> bool:
        """Whether this solution may be returned as it is by a solve to ``tol``."""
        return self.trusted and self.tol <= tol

    @property
    def nbytes(self) -> int:
        """Bytes of the stored arrays."""
        rows = 0 if self.rows is None else self.rows.nbytes
        return int(self.alpha.nbytes + self.G.nbytes + rows)


@dataclass
class _Slot:
    data: str
    solutions: dict[float, StoredSolution] = field(default_factory=dict)
    #: The problem's global rows, kept once for all its solutions.
    rows: np.ndarray | None = None

    @property
    def nbytes(self) -> int:
        rows = 0 if self.rows is None else self.rows.nbytes
        return rows + sum(solution.nbytes for solution in self.solutions.values())


def store_in_use(store):
    """``store``, or ``None`` for ``None`` and for the opt-out ``False``.

    ``warm_start_store=False`` says "no store at all": unlike ``None``, it also
    declines the store of its own that a search or a study would provide.
    """
    return None if store is None or store is False else store


def _check_C(C) -> float:
    if (
        not isinstance(C, Real)
        or isinstance(C, bool)
        or not math.isfinite(C)
        or not C > 0
    ):
        raise ValueError(
            f"The 'C' parameter of a warm start must be a float in the range "
            f"(0, inf). Got {C!r} instead."
        )
    return float(C)


class WarmStartStore:
    """Dual solutions of kernel SVM problems, reused across values of ``C``.

    Shared by :class:`~sklearn_ext.svm.AlphaSeededSVC` fits (pass it as
    ``warm_start_store``), by the ``alpha_seeding`` CV backend (each fold's
    solution is stored under its own training rows), by
    :func:`~sklearn_ext.svm.svm_c_path_cv` and by ``TreeCVObjective`` trials.
    A problem is identified by the data (a hash of ``X`` and ``y``), the
    kernel (its name and parameters, or a callable's declared
    :class:`KeyedKernel` key), the class weights, the kernel precision, the
    training rows and the pair of classes; for each it keeps the solution at
    every finished ``C`` with the tolerance it was solved to. A solution is
    reused as it is only by a solve at the same or a looser ``tol``, and never
    for a callable kernel without a declared key (such solutions only seed).

    A new ``C'`` starts from the stored ``C`` nearest in log scale: the alphas
    clipped to ``[0, C']`` and the equality constraint repaired (``scale=True``
    multiplies them by ``C'/C`` instead). If a stored ``C < C'`` has no alpha at
    its upper bound, that solution is optimal for ``C'`` as it is and is
    returned with 0 iterations (the *exact skip*). Data that changed under the
    same rows and kernel (a fingerprint mismatch) gives a cold start and a
    warning, never a wrong seed.

    The store is safe to share between threads (one lock). Copies made by
    :func:`~sklearn.base.clone` are the store itself, so every clone of an
    estimator shares it; a pickled store (a process-based joblib backend) is a
    snapshot, whose later solutions stay in that process (use
    ``optuna_treecv.ArtifactWarmStartStore`` to share across processes).

    Parameters
    ----------
    scale : bool, default=False
        Seed by scaling the stored alphas by ``C'/C`` instead of clipping them.
    max_solutions : int, default=100_000
        Bound on the solutions kept; the oldest problems are dropped first.
    max_bytes : int, default=536_870_912
        Hard bound on the bytes of the kept solutions (each holds two float64
        arrays over its problem's rows, and a CV fold's problem its rows
        once); the problems used least recently are dropped first, and a
        problem whose own solutions exceed it keeps its newest ones that fit
        (none, if one alone does not). The default, 512 MiB,
        keeps about 4,400 fold solutions of 8,000 rows (10 folds at ten values
        of ``C`` each).
    keep_kernel : bool, default=True
        Also keep the most recent full float64 kernel matrix, so that runs at
        other values of ``C`` on the same data and kernel do not rebuild it;
        for a per-fold scaled pipeline, the most recent run's fold kernels
        (see :meth:`fold_kernel_store`).

    Attributes
    ----------
    n_hits : int
        Seeds served (skips included).
    n_skips : int
        Solves skipped by the exact rule.
    n_misses : int
        Lookups that found nothing to seed from.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import scale
    >>> from sklearn_ext.svm import AlphaSeededSVC, WarmStartStore
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = scale(X)
    >>> store = WarmStartStore()
    >>> _ = AlphaSeededSVC(C=1.0, warm_start_store=store).fit(X, y)
    >>> warm = AlphaSeededSVC(C=2.0, warm_start_store=store).fit(X, y)
    >>> cold = AlphaSeededSVC(C=2.0).fit(X, y)
    >>> warm.warm_start_C_, bool(warm.n_iter_[0] < cold.n_iter_[0])
    (array([1.]), True)

    At ``C=100`` no alpha reaches its bound, so every larger ``C`` is free:

    >>> _ = AlphaSeededSVC(C=100.0, warm_start_store=store).fit(X, y)
    >>> big = AlphaSeededSVC(C=1000.0, warm_start_store=store).fit(X, y)
    >>> big.warm_start_skipped_, big.n_iter_
    (array([ True]), array([0]))
    """

    def __init__(
        self,
        *,
        scale: bool = False,
        max_solutions: int = 100_000,
        max_bytes: int = DEFAULT_MAX_BYTES,
        keep_kernel: bool = True,
    ) -> None:
        if not isinstance(scale, bool):
            raise ValueError(
                "The 'scale' parameter of WarmStartStore must be a bool. Got "
                f"{scale!r} instead."
            )
        if not isinstance(max_solutions, int) or max_solutions < 1:
            raise ValueError(
                "The 'max_solutions' parameter of WarmStartStore must be an int "
                f"in the range [1, inf). Got {max_solutions!r} instead."
            )
        if (
            not isinstance(max_bytes, Integral)
            or isinstance(max_bytes, bool)
            or max_bytes < 1
        ):
            raise ValueError(
                "The 'max_bytes' parameter of WarmStartStore must be an int in "
                f"the range [1, inf). Got {max_bytes!r} instead."
            )
        self.scale = scale
        self.max_solutions = max_solutions
        self.max_bytes = int(max_bytes)
        self.keep_kernel = keep_kernel
        self._lock = threading.RLock()
        self._slots = self._slot_store()
        self._n_solutions = 0
        self._kernel: tuple | None = None
        #: The kept kernels of the folds of a per-fold scaled run: ``(group,
        #: {fold key: KernelStore})`` for the most recent group only.
        self._fold_kernels: tuple | None = None
        self._warned_mismatch = False
        self.n_hits = 0
        self.n_skips = 0
        self.n_misses = 0

    # -- sharing -----------------------------------------------------------------
    def __deepcopy__(self, memo):
        return self

    def __copy__(self):
        return self

    def _slot_store(self) -> LRUStore:
        return LRUStore(
            self.max_bytes, sizeof=_slot_nbytes, on_evict=self._slot_dropped
        )

    def _slot_dropped(self, slot, entry: _Slot) -> None:
        self._n_solutions -= len(entry.solutions)

    def __getstate__(self):
        with self._lock:
            state = self.__dict__.copy()
            state["_slots"] = self._slots.items()
        del state["_lock"]
        state["_kernel"] = None
        state["_fold_kernels"] = None
        return state

    def __setstate__(self, state):
        slots = state.pop("_slots")
        self.__dict__.update(state)
        self._lock = threading.RLock()
        if "max_bytes" not in state:  # pickled before the byte bound existed
            self.max_bytes = DEFAULT_MAX_BYTES
        self.__dict__.pop("_n_bytes", None)
        self._fold_kernels = None
        self._slots = self._slot_store()
        self._n_solutions = 0
        for slot, entry in slots.items() if isinstance(slots, dict) else slots:
            if self._slots.put(slot, entry):
                self._n_solutions += len(entry.solutions)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(n_solutions={self._n_solutions}, "
            f"n_hits={self.n_hits}, n_skips={self.n_skips})"
        )

    def __len__(self) -> int:
        return self._n_solutions

    def __bool__(self) -> bool:
        # An empty store is still a store (``store or default`` must keep it).
        return True

    def session(self) -> WarmStartSession:
        """A view of this store that counts its own hits and skips."""
        return WarmStartSession(self)

    # -- solutions ---------------------------------------------------------------
    def put(self, slot: tuple, data: str, solution: StoredSolution) -> None:
        """Keep ``solution`` for problem ``slot`` on data with hash ``data``.

        The least recently stored problems are dropped to stay within
        ``max_solutions`` and ``max_bytes``; a problem whose solutions alone
        exceed ``max_bytes`` keeps its newest ones that fit (none, if this
        solution alone does not).
        """
        _check_C(solution.C)
        with self._lock:
            entry = self._slots.pop(slot)
            if entry is not None:
                self._n_solutions -= len(entry.solutions)
            if entry is None or entry.data != data:
                entry = _Slot(data)
            if solution.rows is not None:
                # A fold's rows seed the refit (lookup_folds): kept once per
                # problem, not with every C; a fit's are all of its data.
                if entry.rows is None and not _is_fit(slot):
                    entry.rows = solution.rows
                solution = replace(solution, rows=None)
            old = entry.solutions.get(solution.C)
            if old is None or _rank(solution) <= _rank(old):
                entry.solutions[solution.C] = solution
            _trim_slot(entry, solution.C, self.max_bytes)
            if self._slots.put(slot, entry):
                self._n_solutions += len(entry.solutions)
            # The problem just stored is dropped last: its run needs it next.
            while self._n_solutions > self.max_solutions and len(self._slots) > 1:
                self._slots.popitem()

    @property
    def nbytes(self) -> int:
        """Bytes of the kept solutions (at most ``max_bytes``)."""
        return self._slots.nbytes

    def lookup(
        self, slot: tuple, data: str, C: float, *, tol: float = 0.0
    ) -> tuple[StoredSolution, bool] | None:
        """The solution to start ``C`` from, and whether it is already optimal.

        A stored solution counts as optimal only if it was solved to ``tol`` or
        tighter (the default ``tol=0`` never skips). Returns ``None`` when
        nothing is stored for ``slot`` or the stored solutions were found on
        other data (a warning is issued, once).
        """
        C = _check_C(C)
        with self._lock:
            entry = self._slots.get(slot)
            if entry is not None and entry.data != data:
                self._warn_mismatch(stacklevel=4)
                entry = None
            if entry is None or not entry.solutions:
                self.n_misses += 1
                return None
            found = _choose(entry.solutions, C, tol)
            self.n_hits += 1
            self.n_skips += int(found[1])
            return found

    def lookup_folds(
        self, slot: tuple, data: str, C: float
    ) -> tuple[StoredSolution, bool] | None:
        """A solution at ``C`` of the same problem on fewer rows, to seed it.

        ``slot`` names a problem as ``(kernel, rows, first, second)``, the way
        :class:`~sklearn_ext.svm.AlphaSeededSVC` names them (``rows`` is a
        hash of a CV fold's training rows, or ``"fit:"`` and the data's hash
        for a fit on all of it). The candidates are the CV folds that differ
        from it only in their rows, computed on the same data: the one with the
        lowest dual objective at exactly ``C`` is returned, its ``rows`` set,
        with ``False`` (never an exact skip: the rows it lacks start at 0 and
        SMO runs to ``tol``). ``None`` when there is none; when the only ones
        were computed on other data, a fingerprint-mismatch warning is issued
        (once) and ``None`` returned.
        """
        C = _check_C(C)
        best = None
        foreign = False
        with self._lock:
            for key, entry in self._slots.items():
                if (
                    key == slot
                    or _is_fit(key)
                    or len(key) != len(slot)
                    or key[0] != slot[0]
                    or key[2:] != slot[2:]
                    or entry.rows is None
                    or C not in entry.solutions
                ):
                    continue
                if entry.data != data:
                    foreign = True
                    continue
                solution = entry.solutions[C]
                if best is None or solution.objective < best[0].objective:
                    best = (solution, entry.rows)
            if best is None:
                if foreign:
                    self._warn_mismatch(stacklevel=4)
                return None
            self.n_hits += 1
            return replace(best[0], rows=best[1]), False

    def _warn_mismatch(self, stacklevel: int) -> None:
        if not self._warned_mismatch:
            self._warned_mismatch = True
            warnings.warn(
                "The warm-start store holds solutions of this problem "
                "computed on different data (fingerprint mismatch); "
                "starting cold.",
                UserWarning,
                stacklevel=stacklevel,
            )

    # -- kernel ------------------------------------------------------------------
    def kernel_store(self, key: tuple | None, build):
        """The kept kernel store for ``key``, or ``build()`` (kept if dense).

        ``key=None`` (a kernel that cannot be identified) always builds.
        """
        if not self.keep_kernel or key is None:
            return build()
        with self._lock:
            if self._kernel is not None and self._kernel[0] == key:
                return self._kernel[1]
        store = build()
        # Only a full float64 matrix is read-only, hence safe to share.
        if store.columns.dense_matrix is not None:
            with self._lock:
                self._kernel = (key, store)
        return store

    def fold_kernel_store(self, group: tuple, key: str, build, limit: float):
        """The kept kernel of one fold of a per-fold scaled run, or ``build()``.

        A pipeline that scales each fold (``Pipeline([StandardScaler(),
        SVC()])``) gives every fold its own scaled rows and kernel
        (``build()`` makes them: an object with ``nbytes`` and
        ``shareable``). Those of one ``group`` (the data, the scaling, the
        kernel and its parameters: one run's folds) are kept together, by
        fold ``key``, for the most recent group only and as long as they fit
        in ``limit`` bytes together, so that the next run at another ``C``
        (a search runs them in a row) reads them instead of rebuilding them.
        A new group drops the kept ones before its first is built, so memory
        holds one group at a time. Only shareable (read-only) ones are kept.
        """
        if not self.keep_kernel:
            return build()
        with self._lock:
            kept = self._fold_kernels
            if kept is not None and kept[0] == group:
                if key in kept[1]:
                    return kept[1][key]
            else:
                self._fold_kernels = (group, {})
        value = build()
        if not value.shareable:
            return value
        with self._lock:
            kept = self._fold_kernels
            if kept is not None and kept[0] == group:
                held = sum(v.nbytes for v in kept[1].values())
                if held + value.nbytes <= limit:
                    kept[1][key] = value
        return value


def _slot_nbytes(entry: _Slot) -> int:
    return entry.nbytes


def _trim_slot(entry: _Slot, C: float, max_bytes: int) -> None:
    """Drop ``entry``'s oldest solutions but the one at ``C`` until it fits."""
    while entry.nbytes > max_bytes and len(entry.solutions) > 1:
        oldest = next(c for c in entry.solutions if c != C)
        del entry.solutions[oldest]


def _is_fit(slot: tuple) -> bool:
    """Whether ``slot`` names a fit on all of its data rather than a CV fold."""
    return len(slot) > 1 and isinstance(slot[1], str) and slot[1].startswith("fit:")


def _rank(solution: StoredSolution) -> tuple[bool, float]:
    """Sort key of two solutions at one ``C``: trusted first, then tighter."""
    return (not solution.trusted, solution.tol)


def _choose(solutions: dict[float, StoredSolution], C: float, tol: float):
    """The exact skip if one applies, else the nearest ``C`` in log scale."""
    if C in solutions and solutions[C].reusable_at(tol):
        return solutions[C], True
    free_below = [
        c
        for c, s in solutions.items()
        if c < C and not s.at_bound and s.reusable_at(tol)
    ]
    if free_below:
        return solutions[max(free_below)], True
    # Ties go to the smaller C, whose clipped alphas need no repair.
    nearest = min(solutions, key=lambda c: (abs(math.log(C / c)), c))
    return solutions[nearest], False


class WarmStartSession:
    """One user's view of a :class:`WarmStartStore`: same solutions, own counts.

    ``TreeCVObjective`` gives each trial a session so that its user attributes
    count the trial's own hits and skips, whatever other threads do.

    Attributes
    ----------
    store : WarmStartStore
        The shared store.
    n_hits, n_skips, n_misses : int
        This session's seeds served, solves skipped, lookups without a seed.
    seed_Cs : list of float
        The stored ``C`` each served seed came from.
    new_solutions : list of (tuple, str, StoredSolution)
        What this session stored, in order.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import scale
    >>> from sklearn_ext.svm import AlphaSeededSVC, WarmStartStore
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = scale(X)
    >>> store = WarmStartStore()
    >>> _ = AlphaSeededSVC(C=1.0, warm_start_store=store.session()).fit(X, y)
    >>> session = store.session()
    >>> _ = AlphaSeededSVC(C=2.0, warm_start_store=session).fit(X, y)
    >>> session.n_hits, session.seed_Cs, store.n_hits
    (1, [1.0], 1)
    """

    def __init__(self, store: WarmStartStore) -> None:
        self.store = store
        self.scale = store.scale
        self.n_hits = 0
        self.n_skips = 0
        self.n_misses = 0
        self.seed_Cs: list[float] = []
        self.new_solutions: list[tuple[tuple, str, StoredSolution]] = []
        self._lock = threading.Lock()

    def __deepcopy__(self, memo):
        return self

    def __copy__(self):
        return self

    def __getstate__(self):
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"WarmStartSession(n_hits={self.n_hits}, n_skips={self.n_skips})"

    def session(self) -> WarmStartSession:
        return WarmStartSession(self.store)

    def put(self, slot, data, solution) -> None:
        self.store.put(slot, data, solution)
        with self._lock:
            self.new_solutions.append((slot, data, solution))

    def lookup(self, slot, data, C, *, tol=0.0):
        found = self.store.lookup(slot, data, C, tol=tol)
        with self._lock:
            if found is None:
                self.n_misses += 1
            else:
                self.n_hits += 1
                self.n_skips += int(found[1])
                self.seed_Cs.append(found[0].C)
        return found

    def lookup_folds(self, slot, data, C):
        found = self.store.lookup_folds(slot, data, C)
        if found is not None:
            with self._lock:
                self.n_hits += 1
                self.seed_Cs.append(found[0].C)
        return found

    def kernel_store(self, key, build):
        return self.store.kernel_store(key, build)

    def fold_kernel_store(self, group, key, build, limit):
        return self.store.fold_kernel_store(group, key, build, limit)


def seed_from_store(
    kernel_store,
    solution: StoredSolution,
    skip: bool,
    problem: PairProblem,
    C: float,
    *,
    scale: bool = False,
) -> PairProblem:
    """Set ``problem.alpha`` and ``problem.G`` from a stored solution, in place.

    With ``skip`` the stored solution is optimal for ``problem`` (at base
    ``C``) as it is. Otherwise the alphas are scaled by ``C / solution.C``
    (``scale``, the gradient rescaled exactly) or kept, then clipped to
    ``[0, C_i]`` with the equality repaired, and the gradient is updated from
    the columns of the alphas that moved.
    """
    if solution.alpha.shape != problem.alpha.shape:
        raise ValueError(
            "A stored warm-start solution has "
            f"{solution.alpha.shape[0]} variables; the problem has "
            f"{problem.alpha.shape[0]}."
        )
    if not solution.trusted:
        alpha = np.array(solution.alpha)
        if scale:
            alpha *= float(C) / solution.C
        repair_equality(alpha, problem.y, problem.C)
        problem.alpha = alpha
        problem.G = gradient_from_alpha(
            kernel_store.columns, problem.idx, problem.y, alpha
        )
        return problem
    G = np.array(solution.G)
    if skip:
        problem.alpha, problem.G = np.array(solution.alpha), G
        return problem
    if scale:
        ratio = float(C) / solution.C
        base = solution.alpha * ratio
        # Q (s a) - e = s (G + e) - e.
        G = ratio * (G + 1.0) - 1.0
    else:
        base = np.array(solution.alpha)
    alpha = base.copy()
    repair_equality(alpha, problem.y, problem.C)
    moved = alpha != base
    if np.any(moved):
        update_gradient(
            kernel_store.columns,
            problem.idx,
            problem.y,
            G,
            np.ascontiguousarray(problem.idx[moved]),
            np.ascontiguousarray((problem.y * (alpha - base))[moved]),
        )
    problem.alpha, problem.G = alpha, G
    return problem


def seed_from_fold(kernel_store, solution: StoredSolution, problem: PairProblem):
    """Set ``problem``'s start from a solution on a subset of its rows, in place.

    ``solution`` (with its ``rows``, see :meth:`WarmStartStore.lookup_folds`)
    solved the same pair of classes at the same ``C`` on fewer rows: a CV
    fold, when ``problem`` is the refit on all rows. That is alpha seeding
    with points added and none removed, so every rule of
    :func:`~sklearn_ext.svm._seeding.seed_pair` reduces to keeping the fold's
    alphas and starting the added rows (the fold's test block) at 0: feasible,
    with the fold's own dual objective. The gradient of the shared rows is
    the fold's (moved only where the bounds differ, as with
    ``class_weight="balanced"``), that of the added rows is computed from the
    support vectors' columns. Returns ``False`` (and leaves ``problem`` as
    it was) when the rows are not a subset of ``problem``'s.
    """
    rows = solution.rows
    if (
        rows is None
        or rows.shape != solution.alpha.shape
        or (
            rows.shape[0] and not 0 <= rows.min() <= rows.max() < kernel_store.n_samples
        )
    ):
        return False
    rows = np.ascontiguousarray(rows, dtype=np.intp)
    s_new, s_prev, _, removed = split_rows(
        kernel_store.n_samples, rows, np.ascontiguousarray(problem.idx, dtype=np.intp)
    )
    if removed.shape[0]:
        return False
    at = np.empty(rows.shape[0], dtype=np.intp)
    at[s_prev] = s_new  # where each fold row sits in problem.idx
    y, C = problem.y[at], problem.C[at]
    alpha = np.array(solution.alpha)
    if solution.trusted:
        G = np.array(solution.G)
    else:
        repair_equality(alpha, y, C)
        G = gradient_from_alpha(kernel_store.columns, rows, y, alpha)
    previous = PairProblem(problem.first, problem.second, rows, y, C, alpha, G)
    # With no removed rows, SIR has nothing to hand over: "keep" is the same.
    seeded = seed_pair(
        kernel_store,
        previous,
        problem.idx,
        problem.y,
        problem.C,
        seeding="keep",
        rng=None,
    )
    problem.alpha, problem.G = seeded.alpha, seeded.G
    return True


def seed_fit(
    store,
    kernel_store,
    problem: PairProblem,
    slot: tuple,
    data: str,
    C: float,
    found,
):
    """The seed of a fit on all rows: a stored solution or a CV fold's.

    ``problem`` has already been started from ``found`` (this problem's own
    solution at the nearest ``C``, or ``None``). Unless that is an exact
    skip, the lowest-objective CV fold's solution at this ``C``
    (:meth:`WarmStartStore.lookup_folds`) is tried too, and the problem
    starts from whichever of the two has the lower dual objective, as a CV
    fold chooses between its cross-C and its fold-to-fold seed. Returns the
    ``(StoredSolution, skip)`` pair the problem started from, or ``None``.
    """
    if found is not None and found[1]:
        return found
    lookup = getattr(store, "lookup_folds", None)
    fold = None if lookup is None else lookup(slot, data, C)
    if fold is None:
        return found
    candidate = PairProblem(
        problem.first,
        problem.second,
        problem.idx,
        problem.y,
        problem.C,
        problem.alpha,
        problem.G,
    )
    if not seed_from_fold(kernel_store, fold[0], candidate):
        return found
    if found is None or candidate.objective() < problem.objective():
        problem.alpha, problem.G = candidate.alpha, candidate.G
        return fold
    return found
