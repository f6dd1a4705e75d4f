# cython: language_level=3
"""SMO for the C-SVC dual on index sets into a shared kernel store.

The dual solved is ``min 1/2 a'Qa - e'a`` subject to ``0 <= a_i <= C_i`` and
``y'a = 0`` with ``Q_ij = y_i y_j K(x_i, x_j)``. Working sets are chosen by the
second-order rule of Fan, Chen and Lin (2005), the rule of LIBSVM; the solver
starts from any feasible ``alpha`` with its gradient ``G = Qa - e`` given, and
shrinks bounded variables by LIBSVM's rule, also whenever the gap has fallen
tenfold (a warm start is shrunk before LIBSVM's first 1000 iterations are
up), bringing the gradient of the shrunk ones up to date from the alphas
changed since their shrinking before it stops.

Kernel values come from :class:`KernelColumns`, addressed by *global* sample
index, so every fold problem of a cross-validation is an index set into one
store. Inside :func:`smo_solve` the active variables sit contiguous in arrays
of the solver's own, in their original order, with the gradient held as
``-y G``: LIBSVM's steps, one for one, read in sequence.
"""

import numpy as np

cimport numpy as cnp
from libc.math cimport INFINITY, exp, fabs, isfinite, pow, tanh
from libc.stdlib cimport free, malloc, qsort
from libc.string cimport memcpy
from scipy.linalg.cython_blas cimport dgemm

cnp.import_array()

cdef double TAU = 1e-12
#: Shrinkings whose alphas smo_solve keeps, so that a shrunk variable's
#: gradient is brought up to date from the alphas changed since (see
#: _reconstruct); one shrunk later is recomputed from the support vectors.
cdef enum:
    MAX_EPOCHS = 8
#: smo_solve applies LIBSVM's shrinking rule once the gap (maximal violation)
#: has fallen to this share of the gap at the first iteration or at the last
#: shrinking, besides LIBSVM's every min(l, 1000) iterations.
#: Of 0.5, 0.25 and 0.1, 0.1 gave madelon's 100-fold CV the shortest fit
#: (0.64, 0.64 and 0.59 s; without: 0.71 s), with a9a-8k, w8a-8k and heart
#: unchanged (docs/svm.md, shrinking a seeded fold).
cdef double GAP_SHRINK = 0.1

#: Kernels that :class:`KernelColumns` computes natively from dense rows.
NATIVE_KERNELS = {"linear": 0, "poly": 1, "rbf": 2, "sigmoid": 3}

cdef enum:
    LINEAR = 0
    POLY = 1
    RBF = 2
    SIGMOID = 3

ctypedef fused out_t:
    float
    double

_NOT_FINITE = (
    "The kernel values are not finite (NaN or infinity). The input data "
    "may contain large values and need to be preprocessed."
)


cdef inline double _kernel_value(
    double dot, double sq_a, double sq_b, int kernel, double gamma,
    double degree, double coef0,
) noexcept nogil:
    cdef double d
    if kernel == RBF:
        d = sq_a + sq_b - 2.0 * dot
        if d < 0.0:
            d = 0.0
        return exp(-gamma * d)
    if kernel == POLY:
        return pow(gamma * dot + coef0, degree)
    if kernel == SIGMOID:
        return tanh(gamma * dot + coef0)
    return dot


cdef inline double _dot(
    const double* a, const double* b, Py_ssize_t d
) noexcept nogil:
    """``a . b`` with four accumulators, so that the compiler vectorises it."""
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef Py_ssize_t k = 0
    while k + 4 <= d:
        s0 += a[k] * b[k]
        s1 += a[k + 1] * b[k + 1]
        s2 += a[k + 2] * b[k + 2]
        s3 += a[k + 3] * b[k + 3]
        k += 4
    while k < d:
        s0 += a[k] * b[k]
        k += 1
    return (s0 + s1) + (s2 + s3)


def finish_kernel_block(
    const double[:, ::1] dot,
    out_t[:, ::1] out,
    const double[::1] sq_rows,
    const double[::1] sq_cols,
    str kernel,
    double gamma,
    double degree,
    double coef0,
):
    """Turn the dot products ``dot`` into kernel values written to ``out``.

    One pass over the block (the kernel, the cast to ``out``'s precision and
    the finiteness check fused), without the GIL. ``dot`` may be ``out``
    itself when both are float64. Returns whether every value is finite in
    ``out``'s precision.
    """
    cdef int code = NATIVE_KERNELS[kernel]
    cdef Py_ssize_t n_rows = dot.shape[0], n_cols = dot.shape[1], r, c
    cdef double total = 0.0
    cdef out_t value
    with nogil:
        for r in range(n_rows):
            for c in range(n_cols):
                value = <out_t>_kernel_value(
                    dot[r, c], sq_rows[r], sq_cols[c], code, gamma, degree, coef0
                )
                out[r, c] = value
                total += value
    return bool(isfinite(total))


def is_symmetric(const out_t[:, ::1] K):
    """Whether the square matrix ``K`` equals its transpose bit for bit.

    Compared tile by tile (both tiles stay in cache), without the GIL,
    stopping at the first difference. A kernel store whose matrix is
    symmetric may read ``K[i, j]`` as ``K[j, i]``: the same number.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext._fast._smo import is_symmetric
    >>> A = np.arange(9.0).reshape(3, 3)
    >>> is_symmetric(A + A.T), is_symmetric(A)
    (True, False)
    """
    cdef Py_ssize_t n = K.shape[0], i0, j0, i, j, tile = 64
    cdef unsigned long long diff = 0
    if K.shape[1] != n:
        return False
    with nogil:
        i0 = 0
        while i0 < n and diff == 0:
            j0 = i0
            while j0 < n and diff == 0:
                for i in range(i0, min(i0 + tile, n)):
                    for j in range(max(j0, i + 1), min(j0 + tile, n)):
                        # The bits, not the values: -0.0 is not 0.0 here.
                        if out_t is double:
                            diff |= (
                                (<const unsigned long long*>&K[i, j])[0]
                                ^ (<const unsigned long long*>&K[j, i])[0]
                            )
                        else:
                            diff |= (
                                (<const unsigned int*>&K[i, j])[0]
                                ^ (<const unsigned int*>&K[j, i])[0]
                            )
                j0 += tile
            i0 += tile
    return diff == 0


cdef class KernelColumns:
    """Full-length kernel columns by global sample index.

    Either a dense ``(n, n)`` float64 matrix, or an LRU cache of ``n_slots``
    float64 columns filled on a miss: from a dense symmetric float32 matrix
    ``dense32`` (row ``g`` converted, half the memory of the float64 matrix);
    natively, without the GIL, from dense float64 rows ``data`` (a dot
    product per row and the kernel function ``kernel``); or by ``compute(g)``, a
    Python callable returning the ``n`` kernel values ``K(x_g, x_j)`` as
    float64. The solver always reads float64 columns.

    ``symmetric`` declares a held matrix (``dense`` or ``dense32``) equal to its
    transpose bit for bit (:func:`is_symmetric`), which lets
    :meth:`kernel_products` read rows instead of columns.

    The dense matrices are read-only, so one instance is safe to share between
    threads when ``is_dense``; otherwise its LRU state is not, and
    :meth:`partition` gives each thread a cache of its own within the same
    slot memory.
    """

    cdef public object dense_matrix
    cdef public object slots_matrix
    cdef const double[:, ::1] dense
    cdef const float[:, ::1] dense32
    cdef public object dense32_matrix
    cdef bint has_dense32
    cdef public object data_matrix
    cdef public object sq_array
    cdef const double[:, ::1] data
    cdef const double[::1] sq
    cdef bint has_data
    cdef public str kernel
    cdef int kernel_code
    cdef public double gamma, degree, coef0
    cdef double[:, ::1] slots
    cdef Py_ssize_t[::1] slot_of
    cdef Py_ssize_t[::1] owner
    cdef long long[::1] stamp
    cdef long long clock
    cdef public bint is_dense
    cdef public bint symmetric
    cdef public Py_ssize_t n
    cdef public Py_ssize_t n_slots
    cdef public long long n_computed
    cdef public object compute

    def __init__(
        self,
        Py_ssize_t n,
        dense=None,
        compute=None,
        Py_ssize_t n_slots=0,
        dense32=None,
        data=None,
        sq=None,
        kernel="rbf",
        double gamma=1.0,
        double degree=3.0,
        double coef0=0.0,
        slots=None,
        bint symmetric=False,
    ):
        self.n = n
        # Only a held matrix is read by rows (see kernel_products).
        self.symmetric = symmetric and (dense is not None or dense32 is not None)
        self.clock = 0
        self.n_computed = 0
        self.compute = compute
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.has_dense32 = dense32 is not None
        if self.has_dense32:
            self.dense32_matrix = dense32
            self.dense32 = dense32
        self.has_data = data is not None
        if self.has_data:
            self.kernel_code = NATIVE_KERNELS[kernel]
            self.data_matrix = data
            self.data = data
            self.sq_array = sq
            self.sq = sq
        if dense is not None:
            self.is_dense = True
            self.dense_matrix = dense
            self.dense = dense
            self.n_slots = 0
        else:
            self.is_dense = False
            if slots is None:
                self.n_slots = max(2, min(n_slots, n))
                slots = np.empty((self.n_slots, n), dtype=np.float64)
            else:
                self.n_slots = slots.shape[0]
            self.slots_matrix = slots
            self.slots = slots
            self.slot_of = np.full(n, -1, dtype=np.intp)
            self.owner = np.full(self.n_slots, -1, dtype=np.intp)
            self.stamp = np.zeros(self.n_slots, dtype=np.int64)

    def partition(self, Py_ssize_t n_parts):
        """``n_parts`` column sources for as many threads, sharing the memory.

        A dense instance is returned ``n_parts`` times (it is read-only). An
        LRU cache is split: each part gets its own bounded share of the slot
        rows (at least 2) and its own LRU state, and this instance forgets
        what it cached (the parts overwrite its slots).
        """
        if self.is_dense or n_parts <= 1:
            return [self] * max(n_parts, 1)
        share = self.n_slots // n_parts
        parts = []
        for p in range(n_parts):
            if share >= 2:
                slots = self.slots_matrix[p * share:(p + 1) * share]
            else:
                slots = np.empty((2, self.n), dtype=np.float64)
            parts.append(
                KernelColumns(
                    self.n,
                    compute=self.compute,
                    dense32=self.dense32_matrix if self.has_dense32 else None,
                    data=self.data_matrix if self.has_data else None,
                    sq=self.sq_array if self.has_data else None,
                    kernel=self.kernel,
                    gamma=self.gamma,
                    degree=self.degree,
                    coef0=self.coef0,
                    slots=slots,
                    symmetric=self.symmetric,
                )
            )
        self.slot_of[:] = -1
        self.owner[:] = -1
        self.stamp[:] = 0
        return parts

    cdef int _compute_native(self, Py_ssize_t g, double* out) except -1 nogil:
        """Column ``g`` from the rows: a dot product per row, then the kernel.

        Plain loops rather than BLAS ``dgemv``: a multithreaded BLAS spends
        more on waking its threads than the product takes, the more so on a
        busy machine.
        """
        cdef Py_ssize_t d = self.data.shape[1], j
        cdef const double* x_g = &self.data[g, 0]
        cdef double total = 0.0, sq_g = self.sq[g]
        for j in range(self.n):
            out[j] = _kernel_value(
                _dot(&self.data[j, 0], x_g, d), sq_g, self.sq[j],
                self.kernel_code, self.gamma, self.degree, self.coef0,
            )
            total += out[j]
        if not isfinite(total):
            with gil:
                raise ValueError(_NOT_FINITE)
        return 0

    cdef bint cached(self, Py_ssize_t g) noexcept nogil:
        """Whether column ``g`` can be read without computing anything."""
        return self.is_dense or self.has_dense32 or self.slot_of[g] >= 0

    cdef int kernel_products(
        self,
        const Py_ssize_t* rows,
        Py_ssize_t n_rows,
        const Py_ssize_t* cols,
        const double* coef,
        Py_ssize_t n_cols,
        double* out,
    ) except -1 nogil:
        """``out[r] += sum_c K(rows[r], cols[c]) * coef[c]``.

        A held matrix (dense, or float32) is read four columns at a time,
        the columns of zero ``coef`` left out: each row's four products are
        added to ``out`` as one sum, so the rows are walked a quarter as
        often. Known to be ``symmetric``, it is read by rows when there are
        fewer rows than columns (a fold's added points or test rows against
        its support vectors): contiguous reads instead of one cache line per
        value, the same sums bit for bit. Otherwise columns held (a cached
        slot) are read one at a time; the others, when the store computes
        from rows, come by GEMM over blocks of rows and columns, without
        going through the LRU cache (LIBSVM's gradient reconstruction reads
        only what it needs, too).
        """
        cdef Py_ssize_t c, r, m = 0
        cdef const double* col
        cdef double w
        cdef bint held = self.is_dense or self.has_dense32, by_rows
        # Columns kept for later: the nonzero ones of a held matrix, or those
        # a store that computes from rows does not hold (by GEMM at the end).
        cdef bint keep = held or self.has_data
        cdef Py_ssize_t* kept = NULL
        cdef double* kept_coef = NULL
        if keep:
            kept = <Py_ssize_t*>malloc(max(n_cols, 1) * sizeof(Py_ssize_t))
            kept_coef = <double*>malloc(max(n_cols, 1) * sizeof(double))
            if kept == NULL or kept_coef == NULL:
                free(kept)
                free(kept_coef)
                with gil:
                    raise MemoryError()
        try:
            for c in range(n_cols):
                w = coef[c]
                if w == 0.0:
                    continue
                if held or (keep and self.slot_of[cols[c]] < 0):
                    kept[m] = cols[c]
                    kept_coef[m] = w
                    m += 1
                else:
                    col = self.column(cols[c])
                    for r in range(n_rows):
                        out[r] += w * col[rows[r]]
            if held:
                by_rows = self.symmetric and n_rows < m
                if self.is_dense:
                    _held_products(
                        self.dense, by_rows, rows, n_rows, kept, kept_coef, m, out
                    )
                else:
                    _held_products(
                        self.dense32, by_rows, rows, n_rows, kept, kept_coef, m, out
                    )
            elif m:
                self._native_block(rows, n_rows, kept, m, kept_coef, out)
        finally:
            free(kept)
            free(kept_coef)
        return 0

    cdef int _native_block(
        self,
        const Py_ssize_t* rows,
        Py_ssize_t n_rows,
        const Py_ssize_t* cols,
        Py_ssize_t n_cols,
        const double* coef,
        double* out,
    ) except -1 nogil:
        """Kernel values of ``rows x cols`` by blocks of GEMM from the rows.

        With ``coef``: ``out[r] += sum_c K[r, c] coef[c]``; without (NULL):
        ``out`` is the Fortran-ordered ``(n_rows, n_cols)`` block itself.
        """
        cdef int d = <int>self.data.shape[1], rb, cb
        cdef Py_ssize_t RB = 256, CB = 512, r0, c0, r, c
        cdef double one = 1.0, zero = 0.0, s, v, total = 0.0
        cdef char trans_a = b'T', trans_b = b'N'
        cdef double* Xr = <double*>malloc(RB * d * sizeof(double))
        cdef double* Xc = <double*>malloc(CB * d * sizeof(double))
        cdef double* D = <double*>malloc(RB * CB * sizeof(double))
        if Xr == NULL or Xc == NULL or D == NULL:
            free(Xr)
            free(Xc)
            free(D)
            with gil:
                raise MemoryError()
        c0 = 0
        while c0 < n_cols:
            cb = <int>min(CB, n_cols - c0)
            for c in range(cb):
                memcpy(&Xc[c * d], &self.data[cols[c0 + c], 0], d * sizeof(double))
            r0 = 0
            while r0 < n_rows:
                rb = <int>min(RB, n_rows - r0)
                for r in range(rb):
                    memcpy(&Xr[r * d], &self.data[rows[r0 + r], 0], d * sizeof(double))
                # Column-major (cb, rb): D[c + r cb] = x_{cols[c]} . x_{rows[r]}.
                dgemm(
                    &trans_a, &trans_b, &cb, &rb, &d, &one, Xc, &d, Xr, &d,
                    &zero, D, &cb,
                )
                for r in range(rb):
                    s = 0.0
                    for c in range(cb):
                        v = _kernel_value(
                            D[c + r * cb], self.sq[rows[r0 + r]],
                            self.sq[cols[c0 + c]], self.kernel_code, self.gamma,
                            self.degree, self.coef0,
                        )
                        if coef != NULL:
                            s += v * coef[c0 + c]
                        else:
                            out[(r0 + r) + (c0 + c) * n_rows] = v
                            s += v
                    if coef != NULL:
                        out[r0 + r] += s
                    total += s
                r0 += RB
            c0 += CB
        free(Xr)
        free(Xc)
        free(D)
        if not isfinite(total):
            with gil:
                raise ValueError(_NOT_FINITE)
        return 0

    cdef int _compute_python(self, Py_ssize_t g, Py_ssize_t s) except -1 with gil:
        """Fill slot ``s`` with column ``g`` from the Python callable.

        Kept out of :meth:`column`: a Python object local there would make
        Cython take the GIL on every return, which serialises the solver
        threads even on the dense path.
        """
        values = np.ascontiguousarray(self.compute(g), dtype=np.float64)
        self.slots_matrix[s, :] = values
        return 0

    cdef const double* column(self, Py_ssize_t g) except NULL nogil:
        cdef Py_ssize_t s, k
        cdef long long oldest
        if self.is_dense:
            return &self.dense[g, 0]
        self.clock += 1
        s = self.slot_of[g]
        if s >= 0:
            self.stamp[s] = self.clock
            return &self.slots[s, 0]
        # Evict the least recently used slot.
        s = 0
        oldest = self.stamp[0]
        for k in range(1, self.n_slots):
            if self.stamp[k] < oldest:
                oldest = self.stamp[k]
                s = k
        if self.owner[s] >= 0:
            self.slot_of[self.owner[s]] = -1
            # Until it is refilled: a failed computation leaves no stale entry.
            self.owner[s] = -1
        if self.has_dense32:
            # The matrix is symmetric: row g is column g, contiguous.
            for k in range(self.n):
                self.slots[s, k] = self.dense32[g, k]
        elif self.has_data:
            self._compute_native(g, &self.slots[s, 0])
        else:
            self._compute_python(g, s)
        self.n_computed += 1
        self.owner[s] = g
        self.slot_of[g] = s
        self.stamp[s] = self.clock
        return &self.slots[s, 0]

    def get(self, Py_ssize_t g):
        """Column ``g`` as a new float64 array of length ``n``."""
        cdef const double* col = self.column(g)
        out = np.empty(self.n, dtype=np.float64)
        cdef double[::1] view = out
        cdef Py_ssize_t j
        for j in range(self.n):
            view[j] = col[j]
        return out


cdef void _held_products(
    const out_t[:, ::1] M,
    bint by_rows,
    const Py_ssize_t* rows,
    Py_ssize_t n_rows,
    const Py_ssize_t* cols,
    const double* coef,
    Py_ssize_t n_cols,
    double* out,
) noexcept nogil:
    """``out[r] += sum_c M[rows[r], cols[c]] coef[c]`` over a held matrix.

    Four columns at a time, their products summed as
    ``(w0 K0 + w1 K1) + (w2 K2 + w3 K3)`` before being added (then the rest
    one by one), along each column or, for a symmetric ``M`` read
    ``by_rows``, along each row: the same sums in the same order either way.
    """
    cdef Py_ssize_t c, r, g, n4 = n_cols - n_cols % 4
    cdef const out_t* k0
    cdef const out_t* k1
    cdef const out_t* k2
    cdef const out_t* k3
    cdef double w0, w1, w2, w3, acc
    if by_rows:
        for r in range(n_rows):
            k0 = &M[rows[r], 0]
            acc = out[r]
            for c in range(0, n4, 4):
                acc += (
                    (coef[c] * k0[cols[c]] + coef[c + 1] * k0[cols[c + 1]])
                    + (coef[c + 2] * k0[cols[c + 2]] + coef[c + 3] * k0[cols[c + 3]])
                )
            for c in range(n4, n_cols):
                acc += coef[c] * k0[cols[c]]
            out[r] = acc
        return
    for c in range(0, n4, 4):
        k0 = &M[cols[c], 0]
        k1 = &M[cols[c + 1], 0]
        k2 = &M[cols[c + 2], 0]
        k3 = &M[cols[c + 3], 0]
        w0 = coef[c]
        w1 = coef[c + 1]
        w2 = coef[c + 2]
        w3 = coef[c + 3]
        for r in range(n_rows):
            g = rows[r]
            out[r] += (w0 * k0[g] + w1 * k1[g]) + (w2 * k2[g] + w3 * k3[g])
    for c in range(n4, n_cols):
        k0 = &M[cols[c], 0]
        w0 = coef[c]
        for r in range(n_rows):
            out[r] += w0 * k0[rows[r]]


cdef inline bint _is_upper(double a, double c) noexcept nogil:
    return a >= c


cdef inline bint _is_lower(double a) noexcept nogil:
    return a <= 0.0


cdef Py_ssize_t _support_columns(
    const Py_ssize_t[::1] idx,
    const double[::1] y,
    const double[::1] alpha,
    Py_ssize_t* cols,
    double* coef,
) noexcept nogil:
    """Global columns of the support vectors and their ``y alpha``; their number."""
    cdef Py_ssize_t t, m = 0
    for t in range(idx.shape[0]):
        if alpha[t] > 0.0:
            cols[m] = idx[t]
            coef[m] = y[t] * alpha[t]
            m += 1
    return m


cdef int _reconstruct(
    KernelColumns store,
    const Py_ssize_t[::1] idx,
    const double[::1] y,
    const double[::1] alpha,
    double[::1] G,
    const char[::1] is_active,
    const Py_ssize_t[::1] shrunk_at,
    const double[:, ::1] snaps,
    Py_ssize_t n_epochs,
) except -1 nogil:
    """Bring ``G`` of the inactive variables up to date.

    A variable shrunk at epoch ``e < n_epochs`` has the gradient of the
    alphas of ``snaps[e]`` (those of that shrinking), so it moves by the
    kernel columns of the variables whose alpha changed since:
    ``y_t sum_j y_j (alpha_j - snap_j) K_tj``. Where more alphas changed than
    there are support vectors, and for ``shrunk_at >= n_epochs`` (shrunk
    after the last snapshot kept), it is recomputed from the support vectors
    instead, as LIBSVM does, all such variables in one pass.
    """
    cdef Py_ssize_t l = idx.shape[0]
    cdef Py_ssize_t t, e, n_in, n_ch, n_sv = 0
    cdef bint full[MAX_EPOCHS]
    cdef const double* snap
    cdef Py_ssize_t* rows = <Py_ssize_t*>malloc(l * sizeof(Py_ssize_t))
    cdef Py_ssize_t* where = <Py_ssize_t*>malloc(l * sizeof(Py_ssize_t))
    cdef Py_ssize_t* cols = <Py_ssize_t*>malloc(l * sizeof(Py_ssize_t))
    cdef double* coef = <double*>malloc(l * sizeof(double))
    cdef double* acc = <double*>malloc(l * sizeof(double))
    if rows == NULL or where == NULL or cols == NULL or coef == NULL or acc == NULL:
        free(rows)
        free(where)
        free(cols)
        free(coef)
        free(acc)
        with gil:
            raise MemoryError()
    try:
        for t in range(l):
            if alpha[t] > 0.0:
                n_sv += 1
        # Each epoch kept: by the changes since, if fewer than the support
        # vectors; otherwise marked for the recomputation below.
        for e in range(n_epochs):
            full[e] = True
            n_in = 0
            for t in range(l):
                if not is_active[t] and shrunk_at[t] == e:
                    rows[n_in] = idx[t]
                    where[n_in] = t
                    acc[n_in] = 0.0
                    n_in += 1
            if n_in == 0:
                continue
            snap = &snaps[e, 0]
            n_ch = 0
            for t in range(l):
                if alpha[t] != snap[t]:
                    cols[n_ch] = idx[t]
                    coef[n_ch] = y[t] * (alpha[t] - snap[t])
                    n_ch += 1
            if n_ch > n_sv:
                continue
            full[e] = False
            store.kernel_products(rows, n_in, cols, coef, n_ch, acc)
            for t in range(n_in):
                G[where[t]] += y[where[t]] * acc[t]
        # The rest (and those shrunk after the last snapshot) in one pass
        # over the support vectors, as LIBSVM does.
        n_in = 0
        for t in range(l):
            if not is_active[t] and (shrunk_at[t] >= n_epochs or full[shrunk_at[t]]):
                rows[n_in] = idx[t]
                where[n_in] = t
                acc[n_in] = 0.0
                n_in += 1
        if n_in:
            n_ch = _support_columns(idx, y, alpha, cols, coef)
            store.kernel_products(rows, n_in, cols, coef, n_ch, acc)
            for t in range(n_in):
                G[where[t]] = -1.0 + y[where[t]] * acc[t]
    finally:
        free(rows)
        free(where)
        free(cols)
        free(coef)
        free(acc)
    return 0


def smo_solve(
    KernelColumns store,
    const Py_ssize_t[::1] idx,
    const double[::1] y,
    const double[::1] C,
    const double[::1] diag,
    double[::1] alpha,
    double[::1] G,
    double tol=1e-3,
    long long max_iter=-1,
    bint shrinking=True,
):
    """Solve the C-SVC dual in place from a feasible ``alpha`` and its gradient.

    Parameters
    ----------
    store : KernelColumns
        Kernel columns by global index.
    idx : ndarray of shape (l,), intp
        Global index of each variable.
    y : ndarray of shape (l,), float64
        Labels in {-1, +1}.
    C : ndarray of shape (l,), float64
        Upper bound of each variable.
    diag : ndarray of shape (l,), float64
        ``K(x_i, x_i)`` of each variable.
    alpha, G : ndarray of shape (l,), float64
        Feasible starting point and its gradient ``Q alpha - 1``; both are
        updated in place.
    tol : float
        Stopping tolerance on the maximal violating pair.
    max_iter : int
        Iteration cap, ``-1`` for none.
    shrinking : bool
        Whether to shrink bounded variables with LIBSVM's rule: every
        ``min(l, 1000)`` iterations as LIBSVM does, and whenever the gap has
        fallen to ``GAP_SHRINK`` of the gap at the first iteration or at the
        last shrinking (a warm start that needs a few hundred iterations
        gets shrunk at all). A shrunk variable's gradient is brought up to
        date from the alphas changed since its shrinking; the result is
        checked on the whole problem.

    Returns
    -------
    n_iter : int
    rho : float
        Minus the intercept: ``f(x) = sum_i y_i alpha_i K(x_i, x) - rho``.
    converged : bool
    n_shrunk : int
        The most variables shrunk at once.
    """
    cdef Py_ssize_t l = idx.shape[0]
    # The active variables sit contiguous and in increasing order: position p
    # holds variable act[p], with its y, alpha, C, global index and diagonal
    # in ya, aa, Ca, ia and da, so that the selection and update loops read
    # their arrays in sequence (LIBSVM swaps its variables for the same
    # reason; keeping the order keeps the iterates of an index list,
    # tie-breaks included). The gradient is held as gy = -y G (exact: y is
    # +-1), which both halves of the working-set rule maximise over a set
    # of their own: fu marks I_up (y > 0 below C, or y < 0 above 0), fl
    # I_low (y > 0 above 0, or y < 0 below C); so the loops do not branch on
    # the label. ``alpha`` and ``G`` are written back at every shrinking
    # and at the end.
    # (Loaded here as _activate_all loads them after an unshrinking; calling
    # it here instead made the loops below 5 % slower on madelon, by what the
    # compiler made of them.)
    cdef Py_ssize_t[::1] act = np.arange(l, dtype=np.intp)
    cdef Py_ssize_t[::1] ia = np.array(idx, dtype=np.intp)
    cdef double[::1] ya = np.array(y, dtype=np.float64)
    cdef double[::1] aa = np.array(alpha, dtype=np.float64)
    cdef double[::1] gy = -np.asarray(y) * np.asarray(G)
    cdef char[::1] fu = np.empty(l, dtype=np.int8)
    cdef char[::1] fl = np.empty(l, dtype=np.int8)
    cdef double[::1] Ca = np.array(C, dtype=np.float64)
    cdef double[::1] da = np.array(diag, dtype=np.float64)
    cdef char[::1] is_active = np.ones(l, dtype=np.int8)
    cdef Py_ssize_t active_size = l
    cdef long long n_iter = 0
    cdef Py_ssize_t counter = min(l, 1000) + 1
    cdef bint unshrunk = False
    # Epoch of each shrunk variable and the alphas at each epoch's shrinking,
    # for _reconstruct; a variable shrunk once MAX_EPOCHS snapshots are kept
    # gets shrunk_at = MAX_EPOCHS and is recomputed from the support vectors.
    cdef Py_ssize_t[::1] shrunk_at = np.zeros(l, dtype=np.intp)
    cdef Py_ssize_t n_epochs = 0, n_new, n_shrunk = 0
    cdef double[:, ::1] snaps = np.empty((MAX_EPOCHS if shrinking else 0, l))
    # Besides every min(l, 1000) iterations (LIBSVM's schedule), LIBSVM's rule
    # is applied once the gap has fallen below this: GAP_SHRINK of the gap at
    # the first iteration, then at the last shrinking.
    cdef double shrink_below = INFINITY if shrinking else -INFINITY
    cdef bint converged = False
    cdef Py_ssize_t i, j, t, p, q
    cdef double Gmax, Gmax2, obj_min, grad_diff, quad, obj, yt, gt
    cdef double Gm1, Gm2
    cdef const double* col_i
    cdef const double* col_j
    cdef double Kij, ai_old, aj_old, delta, diff, total, dai, daj, Ci, Cj
    cdef bint shrink
    # The update pass also finds the next i (first half of WSS 3), saving a pass.
    cdef bint have_next = False
    cdef double Gmax_next = -INFINITY
    cdef Py_ssize_t i_next = -1

    with nogil:
        for p in range(l):
            _set_sets(ya[p], aa[p], Ca[p], &fu[p], &fl[p])
        while max_iter < 0 or n_iter < max_iter:
            counter -= 1
            if shrinking and counter == 0:
                counter = min(l, 1000)
                have_next = False
                # -- shrinking (LIBSVM's do_shrinking) --
                Gm1 = -INFINITY
                Gm2 = -INFINITY
                for p in range(active_size):
                    if fu[p] and gy[p] > Gm1:
                        Gm1 = gy[p]
                    if fl[p] and -gy[p] > Gm2:
                        Gm2 = -gy[p]
                shrink_below = GAP_SHRINK * (Gm1 + Gm2)
                if not unshrunk and Gm1 + Gm2 <= tol * 10:
                    unshrunk = True
                    active_size = _unshrink(
                        store, idx, y, alpha, G, C, diag, is_active, shrunk_at, snaps,
                        n_epochs, active_size, act, ia, ya, aa, gy, Ca, da, fu, fl,
                    )
                    n_epochs = 0
                # A variable shrunk here keeps the gradient of these alphas;
                # every active one is written back, and the rest move up.
                q = 0
                n_new = 0
                for p in range(active_size):
                    t = act[p]
                    yt = ya[p]
                    gt = -yt * gy[p]
                    alpha[t] = aa[p]
                    G[t] = gt
                    if _is_upper(aa[p], Ca[p]):
                        if yt > 0:
                            shrink = -gt > Gm1
                        else:
                            shrink = -gt > Gm2
                    elif _is_lower(aa[p]):
                        if yt > 0:
                            shrink = gt > Gm2
                        else:
                            shrink = gt > Gm1
                    else:
                        shrink = False
                    if shrink:
                        is_active[t] = 0
                        shrunk_at[t] = n_epochs
                        n_new += 1
                    else:
                        act[q] = t
                        ia[q] = ia[p]
                        ya[q] = yt
                        aa[q] = aa[p]
                        gy[q] = gy[p]
                        Ca[q] = Ca[p]
                        da[q] = da[p]
                        fu[q] = fu[p]
                        fl[q] = fl[p]
                        q += 1
                active_size = q
                n_shrunk = max(n_shrunk, l - active_size)
                if n_new and n_epochs < MAX_EPOCHS:
                    snaps[n_epochs, :] = alpha
                    n_epochs += 1

            # -- working set selection, second order (WSS 3) --
            # With Q_it = y_i y_t K_it, LIBSVM's curvature QD_i + QD_t -+ 2 y_i Q_it
            # is K_ii + K_tt - 2 K_it for either label of t. i and j are
            # positions in the active arrays.
            Gmax = -INFINITY
            i = -1
            if have_next:
                Gmax = Gmax_next
                i = i_next
            else:
                for p in range(active_size):
                    if fu[p] and gy[p] >= Gmax:
                        Gmax = gy[p]
                        i = p
            have_next = False
            j = -1
            Gmax2 = -INFINITY
            if i >= 0:
                col_i = store.column(ia[i])
                obj_min = INFINITY
                for p in range(active_size):
                    if fl[p]:
                        grad_diff = Gmax - gy[p]
                        if -gy[p] >= Gmax2:
                            Gmax2 = -gy[p]
                        if grad_diff > 0:
                            quad = da[i] + da[p] - 2.0 * col_i[ia[p]]
                            if quad <= 0:
                                quad = TAU
                            obj = -(grad_diff * grad_diff) / quad
                            if obj <= obj_min:
                                obj_min = obj
                                j = p
            if i < 0 or j < 0 or Gmax + Gmax2 < tol:
                if active_size < l:
                    # Optimal on the active set: check the whole problem.
                    active_size = _unshrink(
                        store, idx, y, alpha, G, C, diag, is_active, shrunk_at, snaps,
                        n_epochs, active_size, act, ia, ya, aa, gy, Ca, da, fu, fl,
                    )
                    n_epochs = 0
                    # Select on the whole problem next, without shrinking first.
                    counter = 2
                    continue
                converged = True
                break

            if Gmax + Gmax2 < shrink_below:
                if n_iter == 0:
                    shrink_below = GAP_SHRINK * (Gmax + Gmax2)
                else:
                    # Shrink after this iteration (see shrink_below).
                    counter = 1
            n_iter += 1
            # -- two-variable analytic update (LIBSVM's Solver::Solve) --
            col_j = store.column(ia[j])
            col_i = store.column(ia[i])
            Kij = col_i[ia[j]]
            Ci = Ca[i]
            Cj = Ca[j]
            ai_old = aa[i]
            aj_old = aa[j]
            if ya[i] != ya[j]:
                quad = da[i] + da[j] - 2.0 * Kij
                if quad <= 0:
                    quad = TAU
                delta = (ya[i] * gy[i] + ya[j] * gy[j]) / quad
                diff = aa[i] - aa[j]
                aa[i] += delta
                aa[j] += delta
                if diff > 0:
                    if aa[j] < 0:
                        aa[j] = 0
                        aa[i] = diff
                else:
                    if aa[i] < 0:
                        aa[i] = 0
                        aa[j] = -diff
                if diff > Ci - Cj:
                    if aa[i] > Ci:
                        aa[i] = Ci
                        aa[j] = Ci - diff
                else:
                    if aa[j] > Cj:
                        aa[j] = Cj
                        aa[i] = Cj + diff
            else:
                quad = da[i] + da[j] - 2.0 * Kij
                if quad <= 0:
                    quad = TAU
                delta = (-ya[i] * gy[i] + ya[j] * gy[j]) / quad
                total = aa[i] + aa[j]
                aa[i] -= delta
                aa[j] += delta
                if total > Ci:
                    if aa[i] > Ci:
                        aa[i] = Ci
                        aa[j] = total - Ci
                else:
                    if aa[j] < 0:
                        aa[j] = 0
                        aa[i] = total
                if total > Cj:
                    if aa[j] > Cj:
                        aa[j] = Cj
                        aa[i] = total - Cj
                else:
                    if aa[i] < 0:
                        aa[i] = 0
                        aa[j] = total
            dai = (aa[i] - ai_old) * ya[i]
            daj = (aa[j] - aj_old) * ya[j]
            _set_sets(ya[i], aa[i], Ca[i], &fu[i], &fl[i])
            _set_sets(ya[j], aa[j], Ca[j], &fu[j], &fl[j])
            Gmax_next = -INFINITY
            i_next = -1
            for p in range(active_size):
                gy[p] -= dai * col_i[ia[p]] + daj * col_j[ia[p]]
                if fu[p] and gy[p] >= Gmax_next:
                    Gmax_next = gy[p]
                    i_next = p
            have_next = True
        _store_active(act, ya, aa, gy, active_size, alpha, G)

    if not converged and active_size < l:
        _reconstruct(store, idx, y, alpha, G, is_active, shrunk_at, snaps, n_epochs)
    return n_iter, _rho(y, C, alpha, G), converged, n_shrunk


cdef inline void _set_sets(
    double y, double a, double C, char* up, char* low
) noexcept nogil:
    """Whether a variable is in I_up and in I_low (LIBSVM's working-set sets)."""
    if y > 0:
        up[0] = not _is_upper(a, C)
        low[0] = not _is_lower(a)
    else:
        up[0] = not _is_lower(a)
        low[0] = not _is_upper(a, C)


cdef inline void _store_active(
    const Py_ssize_t[::1] act,
    const double[::1] ya,
    const double[::1] aa,
    const double[::1] gy,
    Py_ssize_t active_size,
    double[::1] alpha,
    double[::1] G,
) noexcept nogil:
    """Write the active variables' alpha and gradient back by variable."""
    cdef Py_ssize_t p
    for p in range(active_size):
        alpha[act[p]] = aa[p]
        G[act[p]] = -ya[p] * gy[p]


cdef Py_ssize_t _unshrink(
    KernelColumns store,
    const Py_ssize_t[::1] idx,
    const double[::1] y,
    double[::1] alpha,
    double[::1] G,
    const double[::1] C,
    const double[::1] diag,
    char[::1] is_active,
    const Py_ssize_t[::1] shrunk_at,
    const double[:, ::1] snaps,
    Py_ssize_t n_epochs,
    Py_ssize_t active_size,
    Py_ssize_t[::1] act,
    Py_ssize_t[::1] ia,
    double[::1] ya,
    double[::1] aa,
    double[::1] gy,
    double[::1] Ca,
    double[::1] da,
    char[::1] fu,
    char[::1] fl,
) except -1 nogil:
    """Bring the shrunk variables back: write the active ones back by variable,
    bring the shrunk gradients up to date (:func:`_reconstruct`) and load every
    variable again (:func:`_activate_all`). Returns the new active size, ``l``.
    """
    _store_active(act, ya, aa, gy, active_size, alpha, G)
    _reconstruct(store, idx, y, alpha, G, is_active, shrunk_at, snaps, n_epochs)
    return _activate_all(
        idx, y, alpha, G, C, diag, is_active, act, ia, ya, aa, gy, Ca, da, fu, fl
    )


cdef Py_ssize_t _activate_all(
    const Py_ssize_t[::1] idx,
    const double[::1] y,
    const double[::1] alpha,
    const double[::1] G,
    const double[::1] C,
    const double[::1] diag,
    char[::1] is_active,
    Py_ssize_t[::1] act,
    Py_ssize_t[::1] ia,
    double[::1] ya,
    double[::1] aa,
    double[::1] gy,
    double[::1] Ca,
    double[::1] da,
    char[::1] fu,
    char[::1] fl,
) noexcept nogil:
    """Load every variable into the active arrays, in order; the active size, ``l``."""
    cdef Py_ssize_t t, l = idx.shape[0]
    for t in range(l):
        act[t] = t
        ia[t] = idx[t]
        ya[t] = y[t]
        aa[t] = alpha[t]
        gy[t] = -y[t] * G[t]
        Ca[t] = C[t]
        da[t] = diag[t]
        _set_sets(y[t], alpha[t], C[t], &fu[t], &fl[t])
        is_active[t] = 1
    return l

cdef double _rho(
    const double[::1] y, const double[::1] C, const double[::1] alpha, const double[::1] G
) noexcept:
    """Bias from the free variables (LIBSVM's calculate_rho)."""
    cdef Py_ssize_t l = y.shape[0]
    cdef Py_ssize_t t, n_free = 0
    cdef double ub = INFINITY, lb = -INFINITY, sum_free = 0.0, yG
    with nogil:
        for t in range(l):
            yG = y[t] * G[t]
            if _is_upper(alpha[t], C[t]):
                if y[t] < 0:
                    ub = min(ub, yG)
                else:
                    lb = max(lb, yG)
            elif _is_lower(alpha[t]):
                if y[t] > 0:
                    ub = min(ub, yG)
                else:
                    lb = max(lb, yG)
            else:
                n_free += 1
                sum_free += yG
    if n_free > 0:
        return sum_free / n_free
    if ub == INFINITY or lb == -INFINITY:
        return 0.0 if ub == INFINITY and lb == -INFINITY else (
            lb if ub == INFINITY else ub
        )
    return (ub + lb) / 2


def update_gradient(
    KernelColumns store,
    const Py_ssize_t[::1] idx,
    const double[::1] y,
    double[::1] G,
    const Py_ssize_t[::1] changed,
    const double[::1] delta_ya,
):
    """``G_t += y_t * sum_c K(idx_t, c) * delta_ya_c`` over the changed global indices.

    Only the kernel values of the changed points are read (or computed).
    """
    cdef Py_ssize_t l = idx.shape[0], t
    cdef double[::1] acc = np.zeros(l)
    if changed.shape[0] == 0 or l == 0:
        return
    with nogil:
        store.kernel_products(
            &idx[0], l, &changed[0], &delta_ya[0], changed.shape[0], &acc[0]
        )
        for t in range(l):
            G[t] += y[t] * acc[t]


def gradient_from_alpha(
    KernelColumns store,
    const Py_ssize_t[::1] idx,
    const double[::1] y,
    const double[::1] alpha,
):
    """The gradient ``Q alpha - 1`` from scratch, reading the support vector columns."""
    cdef Py_ssize_t l = idx.shape[0]
    G = np.full(l, -1.0)
    sv = np.flatnonzero(np.asarray(alpha) != 0.0)
    update_gradient(
        store,
        idx,
        y,
        G,
        np.ascontiguousarray(np.asarray(idx)[sv]),
        np.ascontiguousarray(np.asarray(y)[sv] * np.asarray(alpha)[sv]),
    )
    return G


cdef int _gather(
    KernelColumns store,
    const Py_ssize_t* rows,
    Py_ssize_t n_rows,
    const Py_ssize_t* cols,
    Py_ssize_t n_cols,
    double* out,
) except -1 nogil:
    """Fortran-ordered ``K[rows][:, cols]`` into ``out`` (see :func:`gather_block`).

    A held matrix known to be ``symmetric`` is read along the rows' own
    (contiguous) rows when there are fewer rows than columns, as
    :meth:`KernelColumns.kernel_products` reads it: the same values.
    """
    cdef const double* col
    cdef Py_ssize_t k, r, r0, r1, g
    if store.symmetric and n_rows < n_cols:
        # Eight rows at a time: eight sequential reads per column, and the
        # eight values written side by side in ``out``'s column.
        for r0 in range(0, n_rows, 8):
            r1 = min(r0 + 8, n_rows)
            for k in range(n_cols):
                g = cols[k]
                for r in range(r0, r1):
                    if store.is_dense:
                        out[r + k * n_rows] = store.dense[rows[r], g]
                    else:
                        out[r + k * n_rows] = store.dense32[rows[r], g]
        return 0
    if store.has_data and not store.is_dense:
        store._native_block(rows, n_rows, cols, n_cols, NULL, out)
        return 0
    for k in range(n_cols):
        col = store.column(cols[k])
        for r in range(n_rows):
            out[r + k * n_rows] = col[rows[r]]
    return 0


def gather_block(
    KernelColumns store, const Py_ssize_t[::1] rows, const Py_ssize_t[::1] cols
):
    """``K[rows][:, cols]`` as a Fortran-ordered array.

    Read column by column from what the store holds; computed by GEMM blocks
    when the store computes its columns from rows (the LRU cache is left as
    it is).
    """
    cdef Py_ssize_t n_rows = rows.shape[0], n_cols = cols.shape[0]
    out = np.empty((n_rows, n_cols), dtype=np.float64, order="F")
    cdef double[::1, :] view = out
    if n_rows == 0 or n_cols == 0:
        return out
    with nogil:
        _gather(store, &rows[0], n_rows, &cols[0], n_cols, &view[0, 0])
    return out


def split_rows(
    Py_ssize_t n, const Py_ssize_t[::1] prev_idx, const Py_ssize_t[::1] idx
):
    """Where two problems on rows of the same ``n`` samples meet.

    Going from the rows ``prev_idx`` to the rows ``idx`` (each without
    repeats), the shared rows ``S`` stay, the added rows ``T`` come in and the
    removed rows ``R`` leave. One pass over each index set and a position
    table of ``n`` entries, without the GIL.

    Parameters
    ----------
    n : int
        Number of samples the global rows index.
    prev_idx, idx : ndarray of intp
        Global rows of the previous and of the new problem.

    Returns
    -------
    s_new, s_prev : ndarray of intp
        Positions of the shared rows in ``idx`` and in ``prev_idx``, in the
        order of ``idx``.
    t_new : ndarray of intp
        Positions in ``idx`` of the added rows, in order.
    r_prev : ndarray of intp
        Positions in ``prev_idx`` of the removed rows, in order.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext._fast._smo import split_rows
    >>> s_new, s_prev, t_new, r_prev = split_rows(
    ...     6, np.array([0, 1, 2, 3]), np.array([2, 3, 4, 5])
    ... )
    >>> s_new.tolist(), s_prev.tolist(), t_new.tolist(), r_prev.tolist()
    ([0, 1], [2, 3], [2, 3], [0, 1])
    """
    cdef Py_ssize_t l_prev = prev_idx.shape[0], l = idx.shape[0]
    cdef Py_ssize_t i, p, g, n_s = 0, n_t = 0, n_r = 0
    # First offending row: which argument (0: none, 1: prev_idx, 2: idx), value.
    cdef int bad_range = 0, bad_repeat = 0
    cdef Py_ssize_t range_row = 0, repeat_row = 0
    s_new_arr = np.empty(l, dtype=np.intp)
    s_prev_arr = np.empty(l, dtype=np.intp)
    t_new_arr = np.empty(l, dtype=np.intp)
    r_prev_arr = np.empty(l_prev, dtype=np.intp)
    cdef Py_ssize_t[::1] s_new = s_new_arr, s_prev = s_prev_arr
    cdef Py_ssize_t[::1] t_new = t_new_arr, r_prev = r_prev_arr
    cdef Py_ssize_t* where = <Py_ssize_t*>malloc(max(n, 1) * sizeof(Py_ssize_t))
    if where == NULL:
        raise MemoryError()
    try:
        with nogil:
            for i in range(l_prev):
                if not 0 <= prev_idx[i] < n:
                    bad_range = 1
                    range_row = prev_idx[i]
                    break
            if not bad_range:
                for i in range(l):
                    if not 0 <= idx[i] < n:
                        bad_range = 2
                        range_row = idx[i]
                        break
            if not bad_range:
                for g in range(n):
                    where[g] = -1
                for i in range(l_prev):
                    if where[prev_idx[i]] >= 0 and not bad_repeat:
                        bad_repeat = 1
                        repeat_row = prev_idx[i]
                    where[prev_idx[i]] = i
                for i in range(l):
                    p = where[idx[i]]
                    if p >= 0:
                        s_new[n_s] = i
                        s_prev[n_s] = p
                        n_s += 1
                        where[idx[i]] = -2  # shared, so not removed
                    elif p == -1:
                        t_new[n_t] = i
                        n_t += 1
                        where[idx[i]] = -3  # added
                    elif not bad_repeat:
                        bad_repeat = 2
                        repeat_row = idx[i]
                for i in range(l_prev):
                    if where[prev_idx[i]] >= 0:
                        r_prev[n_r] = i
                        n_r += 1
    finally:
        free(where)
    names = (None, "prev_idx", "idx")
    if bad_range:
        raise ValueError(
            f"{names[bad_range]} must hold rows in [0, {n}); got row {range_row}."
        )
    if bad_repeat:
        raise ValueError(
            f"{names[bad_repeat]} must not repeat a row; got row {repeat_row} twice."
        )
    return s_new_arr[:n_s], s_prev_arr[:n_s], t_new_arr[:n_t], r_prev_arr[:n_r]


cdef struct _Leaving:
    double alpha
    Py_ssize_t pos


cdef int _larger_alpha_first(const void* a, const void* b) noexcept nogil:
    """Order of SIR's removed support vectors: larger alpha first, then position."""
    cdef const _Leaving* u = <const _Leaving*>a
    cdef const _Leaving* v = <const _Leaving*>b
    if u.alpha > v.alpha:
        return -1
    if u.alpha < v.alpha:
        return 1
    return (u.pos > v.pos) - (u.pos < v.pos)


cdef Py_ssize_t _random_unused(object rng, object used, Py_ssize_t n_t) except -1 with gil:
    """SIR's random replacement: an unused added point, else any added point."""
    free_points = np.flatnonzero(~used)
    if free_points.shape[0]:
        return int(rng.choice(free_points))
    return int(rng.integers(n_t))


def sir_alphas(
    KernelColumns store,
    const Py_ssize_t[::1] t_rows,
    const Py_ssize_t[::1] r_rows,
    const double[::1] y_t,
    const double[::1] y_r,
    const double[::1] alpha_r,
    const double[::1] C_t,
    rng,
):
    """Single instance replacement: the added points' alphas.

    The removed support vectors (``alpha_r > 0``), largest alpha first (ties
    in row order), each hand their alpha to the most kernel-similar added point
    of the same label that has not replaced another one yet (ties: the first
    in ``t_rows``); when none is left, to a random unused added point drawn by
    ``rng.choice``, then to any added point (``rng.integers``). The result is
    capped at ``C_t``. Kernel values are read as :func:`gather_block` reads
    ``K[r_rows][:, t_rows]``; the loop runs without the GIL, which only a
    random replacement takes.

    Parameters
    ----------
    store : KernelColumns
        Kernel columns by global index.
    t_rows, r_rows : ndarray of intp
        Global rows of the added and of the removed points.
    y_t, y_r : ndarray of float64
        Their labels (+-1).
    alpha_r : ndarray of float64
        The removed points' alphas.
    C_t : ndarray of float64
        The added points' upper bounds.
    rng : numpy.random.Generator or None
        Source of the random replacements (not used when none is needed).

    Returns
    -------
    alpha_t : ndarray of float64
    """
    cdef Py_ssize_t n_t = t_rows.shape[0], n_r = r_rows.shape[0]
    cdef Py_ssize_t n_l = 0, j, q, best_q, p
    cdef double best, v, label
    alpha_t_arr = np.zeros(n_t)
    cdef double[::1] alpha_t = alpha_t_arr
    if n_t == 0 or n_r == 0:
        return alpha_t_arr
    used_arr = np.zeros(n_t, dtype=bool)
    cdef cnp.uint8_t[::1] used = used_arr.view(np.uint8)
    cdef _Leaving* leaving = <_Leaving*>malloc(n_r * sizeof(_Leaving))
    cdef Py_ssize_t* rows = <Py_ssize_t*>malloc(n_r * sizeof(Py_ssize_t))
    cdef double* K = NULL
    try:
        if leaving == NULL or rows == NULL:
            raise MemoryError()
        with nogil:
            for p in range(n_r):
                if alpha_r[p] > 0:
                    leaving[n_l].alpha = alpha_r[p]
                    leaving[n_l].pos = p
                    n_l += 1
        if n_l == 0:
            return alpha_t_arr
        K = <double*>malloc(n_l * n_t * sizeof(double))
        if K == NULL:
            raise MemoryError()
        with nogil:
            qsort(leaving, n_l, sizeof(_Leaving), _larger_alpha_first)
            for j in range(n_l):
                rows[j] = r_rows[leaving[j].pos]
            # K[j + q n_l] = K(r_j, t_q), Fortran-ordered as gather_block.
            _gather(store, rows, n_l, &t_rows[0], n_t, K)
            for j in range(n_l):
                p = leaving[j].pos
                label = y_r[p]
                best_q = -1
                best = 0.0
                for q in range(n_t):
                    if not used[q] and y_t[q] == label:
                        v = K[j + q * n_l]
                        if best_q < 0 or v > best:
                            best = v
                            best_q = q
                if best_q < 0:
                    best_q = _random_unused(rng, used_arr, n_t)
                alpha_t[best_q] += alpha_r[p]
                used[best_q] = 1
            for q in range(n_t):
                if C_t[q] < alpha_t[q]:
                    alpha_t[q] = C_t[q]
    finally:
        free(leaving)
        free(rows)
        free(K)
    return alpha_t_arr


def seed_gradient(
    KernelColumns store,
    const Py_ssize_t[::1] idx,
    const double[::1] y,
    const double[::1] alpha,
    const Py_ssize_t[::1] s_new,
    const Py_ssize_t[::1] s_prev,
    const Py_ssize_t[::1] t_new,
    const Py_ssize_t[::1] r_prev,
    const Py_ssize_t[::1] prev_idx,
    const double[::1] prev_y,
    const double[::1] prev_alpha,
    const double[::1] prev_G,
):
    """The exact gradient ``Q alpha - 1`` of a seeded problem, from the previous one.

    The rows ``idx`` relate to the previous problem's ``prev_idx`` as
    :func:`split_rows` says. The shared rows start from the previous
    gradient, updated from the columns of the shared points whose alpha
    moved, of the added points and of the removed ones (in that order, zero
    changes skipped); the added rows' gradient is computed from the support
    vectors' columns. The same kernel reads and sums as two calls of
    :func:`update_gradient`, without the GIL and without the index arrays.

    Returns
    -------
    G : ndarray of float64 of shape (len(idx),)
    """
    cdef Py_ssize_t l = idx.shape[0], n_s = s_new.shape[0], n_t = t_new.shape[0]
    cdef Py_ssize_t n_r = r_prev.shape[0], i, t, m = 0
    cdef Py_ssize_t n_rows = max(n_s, n_t), n_cols = max(n_s + n_t + n_r, l)
    cdef double delta, value
    G_arr = np.empty(l)
    cdef double[::1] G = G_arr
    if l == 0:
        return G_arr
    cdef Py_ssize_t* rows = <Py_ssize_t*>malloc(max(n_rows, 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t* cols = <Py_ssize_t*>malloc(max(n_cols, 1) * sizeof(Py_ssize_t))
    cdef double* coef = <double*>malloc(max(n_cols, 1) * sizeof(double))
    cdef double* acc = <double*>malloc(max(n_rows, 1) * sizeof(double))
    try:
        if rows == NULL or cols == NULL or coef == NULL or acc == NULL:
            raise MemoryError()
        with nogil:
            # Shared rows: previous gradient plus the changed points' columns.
            for i in range(n_s):
                t = s_new[i]
                rows[i] = idx[t]
                acc[i] = 0.0
                delta = alpha[t] - prev_alpha[s_prev[i]]
                if delta != 0.0:
                    cols[m] = idx[t]
                    coef[m] = y[t] * delta
                    m += 1
            for i in range(n_t):
                value = y[t_new[i]] * alpha[t_new[i]]
                if value != 0.0:
                    cols[m] = idx[t_new[i]]
                    coef[m] = value
                    m += 1
            for i in range(n_r):
                value = -(prev_y[r_prev[i]] * prev_alpha[r_prev[i]])
                if value != 0.0:
                    cols[m] = prev_idx[r_prev[i]]
                    coef[m] = value
                    m += 1
            if n_s and m:
                store.kernel_products(rows, n_s, cols, coef, m, acc)
                for i in range(n_s):
                    G[s_new[i]] = prev_G[s_prev[i]] + y[s_new[i]] * acc[i]
            else:
                for i in range(n_s):
                    G[s_new[i]] = prev_G[s_prev[i]]
            # Added rows: from scratch, over the support vectors' columns.
            m = _support_columns(idx, y, alpha, cols, coef)
            for i in range(n_t):
                rows[i] = idx[t_new[i]]
                acc[i] = 0.0
            if n_t and m:
                store.kernel_products(rows, n_t, cols, coef, m, acc)
                for i in range(n_t):
                    G[t_new[i]] = -1.0 + y[t_new[i]] * acc[i]
            else:
                for i in range(n_t):
                    G[t_new[i]] = -1.0
    finally:
        free(rows)
        free(cols)
        free(coef)
        free(acc)
    return G_arr
