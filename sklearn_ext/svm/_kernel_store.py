"""Kernel values by global sample index, shared by every fold problem."""

from __future__ import annotations

import copy
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
from joblib import cpu_count
from sklearn.utils.extmath import safe_sparse_dot

from sklearn_ext._fast._smo import (
    NATIVE_KERNELS,
    KernelColumns,
    finish_kernel_block,
    gather_block,
    is_symmetric,
)
from sklearn_ext.utils import _memory
from sklearn_ext.utils._threads import blas_limits, pool_limits

__all__ = [
    "KernelStore",
    "available_threads",
    "check_store_allocation",
    "kernel_budget",
    "kernel_matrix",
    "resolve_kernel_dtype",
]

#: Share of the memory this process may still allocate that ``cache_size="auto"``
#: gives the kernel store.
AUTO_MEMORY_FRACTION = 0.5

_BLOCK_ROWS = 1024
#: At most this much memory for the float64 columns read from a float32 matrix.
FLOAT32_COLUMN_CACHE_BYTES = 256 * 2**20
_NOT_FINITE = (
    "The kernel values are not finite (NaN or infinity). The input data "
    "may contain large values and need to be preprocessed."
)
# Sparse operands up to this many cells are densified: one dense GEMM beats a
# sparse product whose result is dense anyway.
_DENSIFY_CELLS = 2**25


def _memory_bytes() -> float:
    """The memory ``cache_size="auto"`` is a share of.

    What this process may still allocate, read anew on every call
    (:func:`sklearn_ext.utils._memory.memory_headroom`: the machine's
    available memory, its ``ulimit``, its cgroups): a kernel kept by an
    earlier fit, other workers of the cgroup, a ``ulimit`` all lower it.
    """
    return _memory.memory_headroom()[0]


def check_store_allocation(n_bytes: float, cache_size, what: str) -> None:
    """Refuse, before it is made, a kernel store this process cannot hold.

    :func:`~sklearn_ext.utils._memory.check_allocation`, with a message that
    names ``cache_size``, the budget the allocation came from.
    """
    _memory.check_allocation(
        n_bytes,
        f"The kernel store ({what} within cache_size={cache_size!r})",
        "Lower cache_size (it changes the speed, never the model) or pass "
        "cache_size='auto', which stays within the process's limits.",
    )


def available_threads() -> int:
    """Threads this process may run at once for its own compute.

    The CPUs it may use (:func:`joblib.cpu_count`: affinity and cgroup quota),
    capped by the thread limit in force on the BLAS and OpenMP pools
    (:mod:`threadpoolctl`): a joblib worker that was told to use one thread,
    or a ``threadpool_limits(1)`` block, gets one.
    """
    n = max(1, int(cpu_count()))
    limits = pool_limits()
    if limits:
        n = min(n, max(1, min(limits)))
    return n


def kernel_budget(cache_size) -> float:
    """The kernel store's memory budget in bytes for a ``cache_size`` setting.

    ``"auto"`` is :data:`AUTO_MEMORY_FRACTION` of the memory this process may
    still allocate (its limits read anew: the machine's available memory, the
    ``ulimit``, the cgroup; see :func:`_memory_bytes`), so that the whole
    kernel matrix is kept whenever it fits (the fast path) and bounded
    columns are used otherwise; a number is megabytes, as ``SVC``'s
    ``cache_size``.
    """
    if isinstance(cache_size, str) and cache_size == "auto":
        return AUTO_MEMORY_FRACTION * _memory_bytes()
    return float(cache_size) * 2**20


def resolve_kernel_dtype(kernel_dtype, cache_size, n_samples: int) -> np.dtype:
    """The precision of the stored matrix: ``"auto"`` picks it from the budget.

    float64 when the ``n_samples x n_samples`` matrix fits the budget in
    float64, float32 when it fits only in float32, float64 columns otherwise.
    """
    if not (isinstance(kernel_dtype, str) and kernel_dtype == "auto"):
        return np.dtype(kernel_dtype)
    budget = kernel_budget(cache_size)
    cells = float(n_samples) * float(n_samples)
    if 8.0 * cells > budget and 4.0 * cells <= budget:
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def _row_norms_sq(X) -> np.ndarray:
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", X, X)


def kernel_matrix(
    A, B, kernel, gamma, degree, coef0, *, B_sq=None, out=None
) -> np.ndarray:
    """Dense float64 kernel matrix ``K(A, B)`` computed with one GEMM.

    Parameters
    ----------
    A, B : {ndarray, sparse matrix}
        Rows to compare (not used for ``kernel="precomputed"``).
    kernel : {"linear", "poly", "rbf", "sigmoid"} or callable
        The kernel; a callable is called as ``kernel(A, B)``.
    gamma, degree, coef0 : float
        Kernel parameters, as in :class:`sklearn.svm.SVC`.
    B_sq : ndarray, default=None
        Squared row norms of ``B``, reused across calls for the rbf kernel.
    out : ndarray of shape (n_A, n_B), default=None
        C-contiguous float64 array to write into (dense ``A`` and ``B`` only).

    Returns
    -------
    K : ndarray of shape (n_A, n_B)
    """
    if callable(kernel):
        return np.asarray(kernel(A, B), dtype=np.float64)
    A, B = _densify(A), _densify(B)
    if out is not None and not (sp.issparse(A) or sp.issparse(B)):
        dot = np.dot(A, B.T, out=out)
    else:
        dot = np.asarray(safe_sparse_dot(A, B.T, dense_output=True), dtype=np.float64)
        if out is not None:
            out[...] = dot
            dot = out
    if kernel == "linear":
        return dot
    if kernel == "poly":
        dot *= gamma
        dot += coef0
        return np.power(dot, degree, out=dot)
    if kernel == "sigmoid":
        dot *= gamma
        dot += coef0
        return np.tanh(dot, out=dot)
    # rbf: exp(-gamma * (|a|^2 + |b|^2 - 2 a.b))
    if B_sq is None:
        B_sq = _row_norms_sq(B)
    dot *= -2.0
    dot += _row_norms_sq(A)[:, None]
    dot += B_sq[None, :]
    np.maximum(dot, 0.0, out=dot)
    dot *= -gamma
    return np.exp(dot, out=dot)


def check_finite_kernel(values) -> None:
    """Raise the error :class:`sklearn.svm.SVC` gives for overflowing kernels."""
    with np.errstate(over="ignore", invalid="ignore"):
        # A finite sum means finite values (scikit-learn's fast path).
        if np.isfinite(np.sum(values)):
            return
    if not np.all(np.isfinite(values)):
        raise ValueError(_NOT_FINITE)


def _densify(X):
    if sp.issparse(X) and X.shape[0] * X.shape[1] <= _DENSIFY_CELLS:
        return X.toarray()
    return X


#: Side of the square tiles :func:`_mirror` copies: a tile pair fits in cache,
#: and a copy numpy makes of a tile (it cannot always prove two tiles of one
#: array apart) stays small.
_MIRROR_TILE = 128


def _mirror(K: np.ndarray) -> None:
    """Fill the lower triangle of ``K`` from its upper triangle, in place."""
    n = K.shape[0]
    for a in range(0, n, _MIRROR_TILE):
        b = min(a + _MIRROR_TILE, n)
        for c in range(0, a, _MIRROR_TILE):
            d = min(c + _MIRROR_TILE, n)
            K[a:b, c:d] = K[c:d, a:b].T
        for i in range(a + 1, b):
            K[i, a:i] = K[a:i, i]


def _n_rows(X, rows: slice) -> int:
    return len(range(*rows.indices(X.shape[0])))


class KernelStore:
    """All the kernel values of one data set, shared by every fold problem.

    Entries are addressed by global sample index, so a fold's training set is an
    index array into the store. The full matrix is kept when it fits in
    ``cache_size`` megabytes, built block by block with GEMM; otherwise an LRU
    cache of full-length float64 columns computed on demand. A callable kernel
    is held to the same budget: it is called on blocks of rows to build the
    matrix that fits, or on one row per column otherwise. Kernel values that
    are not finite (data with huge values) raise a ``ValueError`` instead of
    giving a model. With
    ``dtype=np.float32`` the full matrix takes half the memory (so a matrix
    twice as large fits the budget); the solver then reads float64 copies of
    the columns it uses from a small LRU cache (at least 64 columns, at most 256 MB
    or what the budget leaves), and still accumulates its gradient in float64.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        Data, or the precomputed ``(n_samples, n_samples)`` kernel.
    kernel : str or callable
        ``"linear"``, ``"poly"``, ``"rbf"``, ``"sigmoid"``, ``"precomputed"``
        or a callable.
    gamma, degree, coef0 : float
        Kernel parameters.
    cache_size : float or "auto"
        Memory budget in megabytes; ``"auto"`` is half the memory this process
        may still allocate (see :func:`kernel_budget`). The store's allocation
        is checked against the process's limits before it is made
        (:func:`check_store_allocation`).
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Precision of the stored matrix.

    Attributes
    ----------
    columns : KernelColumns
        The Cython view handed to the SMO solver.
    diag : ndarray of shape (n_samples,)
        ``K(x_i, x_i)``.
    is_dense : bool
        Whether the whole matrix is held.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.svm import KernelStore
    >>> X = np.random.RandomState(0).normal(size=(300, 5))
    >>> full = KernelStore(X, "rbf", 0.2, 3, 0.0, cache_size=10)
    >>> half = KernelStore(X, "rbf", 0.2, 3, 0.0, cache_size=10, dtype=np.float32)
    >>> full.is_dense, half.is_dense
    (True, True)
    >>> rows = np.arange(4)
    >>> bool(np.allclose(full.block(rows, rows), half.block(rows, rows), atol=1e-6))
    True
    """

    def __init__(
        self, X, kernel, gamma, degree, coef0, cache_size, dtype=np.float64
    ) -> None:
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.dtype(np.float64), np.dtype(np.float32)):
            raise ValueError(
                "The 'dtype' parameter of KernelStore must be numpy.float64 or "
                f"numpy.float32. Got {dtype!r} instead."
            )
        n = X.shape[0]
        self.n_samples = n
        budget = kernel_budget(cache_size)
        if kernel == "precomputed":
            self.X = None
            self._set_dense(np.ascontiguousarray(X, dtype=self.dtype), budget)
            return
        self.X = X if callable(kernel) else _densify(X)
        if isinstance(self.X, np.ndarray):
            self.X = np.ascontiguousarray(self.X, dtype=np.float64)
        self._sq = None if callable(kernel) else _row_norms_sq(self.X)
        native = (
            isinstance(kernel, str)
            and kernel in NATIVE_KERNELS
            and isinstance(self.X, np.ndarray)
        )
        if self.dtype.itemsize * n * n <= budget:
            check_store_allocation(
                self.dtype.itemsize * float(n) * n,
                cache_size,
                f"the {n}x{n} {self.dtype.name} kernel matrix",
            )
            if native:
                K = self._build_native()
            else:
                K = self._build_blocks()
            self._set_dense(K, budget)
        else:
            n_slots = max(2, int(budget // (8.0 * n)))
            check_store_allocation(
                8.0 * n * min(n_slots, n),
                cache_size,
                f"{min(n_slots, n)} cached kernel columns of {n} rows",
            )
            if native:
                # Columns computed without the GIL (one dgemv each).
                self.columns = KernelColumns(
                    n,
                    n_slots=n_slots,
                    data=self.X,
                    sq=np.ascontiguousarray(self._sq, dtype=np.float64),
                    kernel=kernel,
                    gamma=float(gamma),
                    degree=float(degree),
                    coef0=float(coef0),
                )
            else:
                self.columns = KernelColumns(n, compute=self._column, n_slots=n_slots)
            self.diag = self._diagonal()
            check_finite_kernel(self.diag)
            self.is_dense = False

    def _build_blocks(self) -> np.ndarray:
        """The whole matrix, block by block (callable kernels, sparse data)."""
        n = self.n_samples
        K = np.empty((n, n), dtype=self.dtype)
        buffer = None
        for start in range(0, n, _BLOCK_ROWS):
            stop = min(start + _BLOCK_ROWS, n)
            if self.dtype == np.float64:
                self._block(slice(start, stop), out=K[start:stop])
            else:
                if buffer is None or buffer.shape[0] != stop - start:
                    buffer = np.empty((stop - start, n))
                block = self._block(slice(start, stop), out=buffer)
                with np.errstate(over="ignore"):
                    K[start:stop] = block
            # After the cast: a float64 value may overflow float32.
            check_finite_kernel(K[start:stop])
        return K

    def _build_native(self) -> np.ndarray:
        """The whole matrix from dense rows: GEMM per block of rows, then one
        fused pass (kernel function, cast, finiteness check) without the GIL.

        The kernel is symmetric, so each block of rows computes only its
        columns from its own first row on (half the GEMM's work), in a
        contiguous stretch of its own rows that is then moved into place;
        :func:`_mirror` fills the rest, so the matrix is exactly symmetric.
        Blocks are shared out to :func:`available_threads` threads, each
        with a one-thread BLAS (two threads each running a two-thread GEMM
        would fight over the cores).
        """
        n = self.n_samples
        X, sq = self.X, np.ascontiguousarray(self._sq, dtype=np.float64)
        K = np.empty((n, n), dtype=self.dtype)
        starts = list(range(0, n, _BLOCK_ROWS))
        n_threads = min(available_threads(), len(starts)) if len(starts) > 1 else 1

        def build(start: int, buffer=None) -> bool:
            stop = min(start + _BLOCK_ROWS, n)
            rows, width = stop - start, n - start
            # The block's rows are contiguous in K: their first rows * width
            # cells hold the (rows, width) upper part while it is computed.
            out = K[start:stop].reshape(-1)[: rows * width].reshape(rows, width)
            dot = out
            if buffer is not None:
                dot = buffer.reshape(-1)[: rows * width].reshape(rows, width)
            np.dot(X[start:stop], X[start:].T, out=dot)
            finite = finish_kernel_block(
                dot,
                out,
                sq[start:stop],
                sq[start:],
                self.kernel,
                float(self.gamma),
                float(self.degree),
                float(self.coef0),
            )
            # Last row first: a row's place never overlaps an earlier row's
            # stretch (numpy copies overlapping rows safely).
            for r in range(rows - 1, -1, -1):
                K[start + r, start:] = out[r]
            return finite

        def build_all(chunk: list[int]) -> bool:
            buffer = None
            if self.dtype != np.float64:
                buffer = np.empty((min(_BLOCK_ROWS, n), n))
            return all([build(start, buffer) for start in chunk])

        if n_threads == 1:
            finite = build_all(starts)
        else:
            chunks = [starts[t::n_threads] for t in range(n_threads)]
            with (
                blas_limits(1),
                ThreadPoolExecutor(n_threads) as pool,
            ):
                finite = all(pool.map(build_all, chunks))
        if not finite:
            raise ValueError(_NOT_FINITE)
        _mirror(K)
        return K

    def _set_dense(self, K, budget) -> None:
        n = self.n_samples
        self.is_dense = True
        self.diag = np.ascontiguousarray(np.diag(K), dtype=np.float64)
        # Checked once (one pass over the matrix, no copy; 4 ms at 2,000 rows,
        # 70-80 ms at 8,000): few rows against many support vectors then read
        # contiguous rows (see KernelColumns.kernel_products).
        symmetric = bool(is_symmetric(K))
        if K.dtype == np.float64:
            self.columns = KernelColumns(n, dense=K, symmetric=symmetric)
            return
        # The float64 copies serve only the solver's two columns per iteration
        # (other reads go to the float32 rows directly), and a copy is cheap
        # to redo: a few hundred megabytes are plenty, and keep the peak low.
        spare = min(max(budget - K.nbytes, 0.0), FLOAT32_COLUMN_CACHE_BYTES)
        n_slots = min(n, max(64, int(spare // (8.0 * max(n, 1)))))
        self.columns = KernelColumns(n, dense32=K, n_slots=n_slots, symmetric=symmetric)

    def partition(self, n_parts: int) -> list[KernelStore]:
        """``n_parts`` views of this store, one per thread that reads it.

        A dense float64 matrix is read-only and shared as it is. Column caches
        (the float64 columns of a float32 matrix, or the bounded columns) keep
        LRU state that threads must not share: each view gets its own share of
        the same slot memory, so the memory budget holds. This store's own
        cache is emptied (the views overwrite its slots).
        """
        views = []
        for columns in self.columns.partition(n_parts):
            view = copy.copy(self)
            view.columns = columns
            views.append(view)
        return views

    @property
    def nbytes(self) -> int:
        """Bytes held by the stored matrix or column cache."""
        columns = self.columns
        held = [columns.dense_matrix, columns.dense32_matrix, columns.slots_matrix]
        return int(sum(a.nbytes for a in held if a is not None))

    def _block(self, rows, out=None) -> np.ndarray:
        # Overflow is reported by check_finite_kernel, with advice.
        with np.errstate(over="ignore", invalid="ignore"):
            return self._block_values(rows, out)

    def _block_values(self, rows, out=None) -> np.ndarray:
        if callable(self.kernel):
            block = kernel_matrix(self.X[rows], self.X, self.kernel, 0, 0, 0)
            expected = (_n_rows(self.X, rows), self.n_samples)
            if block.shape != expected:
                raise ValueError(
                    "The callable kernel must return a matrix of shape (n_X, "
                    f"n_Y); it returned {block.shape} for {expected}."
                )
            if out is None:
                return block
            out[...] = block
            return out
        return kernel_matrix(
            self.X[rows],
            self.X,
            self.kernel,
            self.gamma,
            self.degree,
            self.coef0,
            B_sq=self._sq,
            out=out,
        )

    def _column(self, g: int) -> np.ndarray:
        column = self._block(slice(g, g + 1))[0]
        check_finite_kernel(column)
        return column

    def _diagonal(self) -> np.ndarray:
        if callable(self.kernel):
            # Diagonals of blocks on the diagonal: _BLOCK_ROWS**2 values at once.
            diag = np.empty(self.n_samples)
            for start in range(0, self.n_samples, _BLOCK_ROWS):
                rows = slice(start, min(start + _BLOCK_ROWS, self.n_samples))
                block = kernel_matrix(self.X[rows], self.X[rows], self.kernel, 0, 0, 0)
                diag[rows] = np.diag(block)
            return diag
        sq = self._sq
        if self.kernel == "rbf":
            return np.ones(self.n_samples)
        if self.kernel == "linear":
            return np.asarray(sq, dtype=np.float64)
        if self.kernel == "poly":
            return (self.gamma * sq + self.coef0) ** self.degree
        return np.tanh(self.gamma * sq + self.coef0)

    def block(self, rows, cols) -> np.ndarray:
        """``K[rows][:, cols]`` as a dense array (reads the columns of ``cols``)."""
        return gather_block(
            self.columns,
            np.ascontiguousarray(rows, dtype=np.intp),
            np.ascontiguousarray(cols, dtype=np.intp),
        )
