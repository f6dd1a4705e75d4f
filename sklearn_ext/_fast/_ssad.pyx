"""Native kernel of the semi-supervised anomaly detector (SSAD).

The learner works on random Fourier features ``phi(x)`` (computed here, row by
row, so that a row's features do not depend on which other rows are computed
with it) and minimises, by stochastic subgradient steps of size ``1 / t``, the
1-strongly convex objective documented in
:class:`sklearn_ext.anomaly.SemiSupervisedAnomalyDetector`. :class:`SSADModel`
feeds rows for ``partial_fit`` and for the native tree
(``sklearn_ext._fast._tree``), and scores a leaf by its AUROC.

A model state is one flat float64 array (see :func:`new_state`):

    [0]        t, number of rows fed
    [1]        scale s of the weight vector (w = s * v)
    [2]        rho, the threshold
    [3]        the margin (the paper's gamma), kept >= 0
    [4 : 4+D]  v, D = number of random features

so the native tree copies a node's model with one ``memcpy`` of ``D + 4`` doubles.
"""

from libc.math cimport cos, sqrt, NAN
from libc.stdint cimport int64_t
from libc.stdlib cimport qsort

import numpy as np

from sklearn_ext._fast._tree cimport NativeModel

# Below this scale the weight vector is rescaled.
cdef double MIN_SCALE = 1e-9

#: Index of the first weight in the state.
OFFSET = 4


cdef struct Params:
    double eta_u
    double eta_l
    double kappa
    Py_ssize_t n_coef       # D


cdef Params make_params(double eta_u, double eta_l, double kappa, Py_ssize_t d):
    cdef Params p
    p.eta_u = eta_u
    p.eta_l = eta_l
    p.kappa = kappa
    p.n_coef = d
    return p


def new_state(Py_ssize_t n_components):
    """A fresh state: weights, threshold and margin zero, no row fed."""
    state = np.zeros(OFFSET + n_components, dtype=np.float64)
    state[1] = 1.0
    return state


# -- random Fourier features ---------------------------------------------------------
def random_features(
    const double[:, ::1] X,
    const double[:, ::1] weights_t,
    const double[::1] offset,
    double[:, ::1] out,
):
    """``out[i] = sqrt(2 / D) * cos(X[i] @ weights_t.T + offset)``, row by row.

    ``weights_t`` is the (D, n_features) transpose of scikit-learn's
    ``RBFSampler.random_weights_``. Each row is computed on its own, in a fixed
    order of operations, so a row's features are bit-identical whichever block
    of rows it is computed in.
    """
    cdef Py_ssize_t n = X.shape[0], f = X.shape[1], D = weights_t.shape[0]
    cdef Py_ssize_t i, j, q
    cdef double acc, factor = sqrt(2.0 / D)
    with nogil:
        for i in range(n):
            for j in range(D):
                acc = offset[j]
                for q in range(f):
                    acc = acc + X[i, q] * weights_t[j, q]
                out[i, j] = factor * cos(acc)


# -- one row ---------------------------------------------------------------------------
cdef void update_row(
    double* state, Params* p, const double* x, double y
) noexcept nogil:
    """One subgradient step on row ``x`` with label ``y`` (0: unlabelled)."""
    cdef Py_ssize_t D = p.n_coef, j
    cdef double* v = state + 4
    cdef double t = state[0] + 1.0
    cdef double e = 1.0 / t, c = 1.0 - e
    cdef double s = state[1], rho = state[2], g = state[3]
    cdef double dot = 0.0, score, a = 0.0, g_loss = 0.0, coef
    state[0] = t
    for j in range(D):
        dot += v[j] * x[j]
    score = s * dot - rho
    if y == 0.0:
        if score < 0.0:
            a = p.eta_u
    elif g - y * score > 0.0:
        a = p.eta_l * y
        g_loss = p.eta_l
    # Shrink: the gradient of 1/2 ||w||^2 is w.
    s *= c
    if s < MIN_SCALE:
        for j in range(D):
            v[j] *= s
        s = 1.0
    if a != 0.0:
        coef = e * a / s
        for j in range(D):
            v[j] += coef * x[j]
    state[1] = s
    # rho - e * (rho - 1 + a) and margin - e * (margin - kappa + g_loss).
    state[2] = c * rho + e * (1.0 - a)
    g = c * g + e * (p.kappa - g_loss)
    state[3] = g if g > 0.0 else 0.0


cdef void feed_rows(
    double* state,
    Params* p,
    const double* phi,
    const double* y,
    const Py_ssize_t* rows,
    Py_ssize_t n_rows,
) noexcept nogil:
    cdef Py_ssize_t r, i, D = p.n_coef
    for r in range(n_rows):
        i = rows[r]
        update_row(state, p, phi + i * D, y[i])


cdef void decision_rows(
    const double* state,
    Py_ssize_t D,
    const double* phi,
    const Py_ssize_t* rows,
    Py_ssize_t n_rows,
    double* out,
) noexcept nogil:
    cdef Py_ssize_t r, i, j
    cdef const double* v = state + 4
    cdef const double* x
    cdef double dot, s = state[1], rho = state[2]
    for r in range(n_rows):
        i = rows[r]
        x = phi + i * D
        dot = 0.0
        for j in range(D):
            dot += v[j] * x[j]
        out[r] = s * dot - rho


# -- the AUROC of a leaf -------------------------------------------------------------
cdef int compare_doubles(const void* a, const void* b) noexcept nogil:
    cdef double x = (<const double*>a)[0], z = (<const double*>b)[0]
    return (x > z) - (x < z)


cdef Py_ssize_t count_below(
    const double* sorted_values, Py_ssize_t n, double value, bint or_equal
) noexcept nogil:
    """Entries of ``sorted_values`` < ``value`` (<= with ``or_equal``), by bisection."""
    cdef Py_ssize_t lo = 0, hi = n, mid
    while lo < hi:
        mid = (lo + hi) // 2
        if sorted_values[mid] < value or (or_equal and sorted_values[mid] == value):
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef double auroc_rows(
    const double* state,
    Py_ssize_t D,
    const double* phi,
    const double* y_true,
    const Py_ssize_t* rows,
    Py_ssize_t n_rows,
    double* work,                   # 2 * n_rows scratch
) noexcept nogil:
    """AUROC of the decision values of ``rows`` (normal class positive).

    Rows labelled 0 are left out. The same integer pair counts as
    :func:`sklearn_ext.anomaly._ssad.auroc`, so the same value; NaN when the
    rows hold a single class.
    """
    cdef Py_ssize_t r, i, n_pos = 0, n_neg = 0
    cdef double* positive = work
    cdef double* negative = work + n_rows
    cdef double value
    cdef int64_t below = 0
    for r in range(n_rows):
        i = rows[r]
        if y_true[i] == 0.0:
            continue
        decision_rows(state, D, phi, &rows[r], 1, &value)
        if y_true[i] > 0.0:
            positive[n_pos] = value
            n_pos += 1
        else:
            negative[n_neg] = value
            n_neg += 1
    if n_pos == 0 or n_neg == 0:
        return NAN
    qsort(negative, n_neg, sizeof(double), compare_doubles)
    for r in range(n_pos):
        below += count_below(negative, n_neg, positive[r], False)
        below += count_below(negative, n_neg, positive[r], True)
    return <double>below / <double>(2 * <int64_t>n_pos * n_neg)


cdef class SSADModel(NativeModel):
    """The SSAD kernel on one feature matrix, for ``partial_fit`` and the native tree.

    Parameters
    ----------
    eta_u, eta_l, kappa : float
        The detector's slack and margin weights.
    phi : ndarray of shape (n_samples, n_components), C-contiguous
        Random Fourier features of every row.
    y : ndarray of float64 of shape (n_samples,)
        The labels training sees: +1 normal, -1 anomaly, 0 unlabelled.
    y_true : ndarray of float64 of shape (n_samples,) or None, default=None
        The true labels a leaf is scored with (its AUROC, rows labelled 0 left
        out); None leaves scoring to the caller (``scores_leaves`` is False).
    """

    cdef Params p
    cdef const double* phi
    cdef const double* y
    cdef const double* y_true

    def __init__(
        self,
        double eta_u,
        double eta_l,
        double kappa,
        const double[:, ::1] phi,
        const double[::1] y,
        y_true=None,
    ):
        cdef const double[::1] truth
        self.p = make_params(eta_u, eta_l, kappa, phi.shape[1])
        self.n_state = OFFSET + phi.shape[1]
        self.phi = &phi[0, 0] if phi.shape[0] > 0 and phi.shape[1] > 0 else NULL
        self.y = &y[0] if y.shape[0] > 0 else NULL
        self.scores_leaves = y_true is not None
        if y_true is not None:
            truth = y_true
            self.y_true = &truth[0] if truth.shape[0] > 0 else NULL
        self._arrays = (phi, y, y_true)

    def new_state(self):
        """A fresh state: weights, threshold and margin zero, no row fed."""
        return new_state(self.p.n_coef)

    cdef void feed(
        self, double* state, const Py_ssize_t* rows, Py_ssize_t n_rows
    ) noexcept nogil:
        feed_rows(state, &self.p, self.phi, self.y, rows, n_rows)

    cdef Py_ssize_t score_work_size(self, Py_ssize_t n_rows) noexcept nogil:
        return 2 * n_rows

    cdef double score(
        self, const double* state, const Py_ssize_t* rows, Py_ssize_t n_rows,
        double* work,
    ) noexcept nogil:
        return auroc_rows(
            state, self.p.n_coef, self.phi, self.y_true, rows, n_rows, work
        )


# -- Python entry points -------------------------------------------------------------
def decision(const double[::1] state, const double[:, ::1] phi):
    """``<w, phi_i> - rho`` for every row of ``phi``."""
    cdef Py_ssize_t n = phi.shape[0]
    out = np.zeros(n, dtype=np.float64)
    cdef double[::1] out_view = out
    cdef Py_ssize_t[::1] rows = np.arange(n, dtype=np.intp)
    if n == 0:
        return out
    with nogil:
        decision_rows(&state[0], phi.shape[1], &phi[0, 0], &rows[0], n, &out_view[0])
    return out
