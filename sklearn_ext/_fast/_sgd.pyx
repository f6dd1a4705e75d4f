"""Native SGD kernel of the linear learners, and its model for the native tree.

One row update serves every learner of ``sklearn_ext.linear_model`` (PEGASOS,
logistic SGD, least-squares robust SA) and both engines: :class:`SGDModel` feeds
rows through it for ``partial_fit`` (:meth:`SGDModel.feed_rows`) and for the
native tree (``sklearn_ext._fast._tree``), so both produce bit-identical models.

A model state is one flat float64 array (see :func:`state_size`):

    [0]                 t, number of rows fed
    [1]                 sum of the averaging weights (steps)
    [2 : 2+K]           scale s_k of each weight vector (w_k = s_k * v_k)
    [2+K : 2+2K]        squared norm of each w_k
    [2+2K : 2+2K+K*D]   v, K rows of D = n_features + 1 (last: intercept coordinate)
    [.. : .. + K*D]     averaged iterate numerator (only for averaged learners)

so a node of the tree is copied with one ``memcpy`` of ``O(K * D)`` doubles.
"""

from cython cimport floating
from libc.math cimport exp, fabs, isinf, sqrt, NAN

import numpy as np

from sklearn_ext._fast._tree cimport NativeModel

cdef enum:
    # Losses.
    HINGE = 0
    LOG = 1
    SQUARED = 2
    # Step-size schedules: 1 / (alpha * t) and eta0 / sqrt(t).
    PEGASOS = 0
    INVSQRT = 1
    # Leaf metrics computed in C (M_PYTHON: scored in Python by the callback).
    M_PYTHON = 0
    M_ACCURACY = 1
    M_NEG_MSE = 2
    M_NEG_RMSE = 3
    M_NEG_MAE = 4
    M_R2 = 5

LOSSES = {"hinge": HINGE, "log_loss": LOG, "squared_error": SQUARED}
SCHEDULES = {"pegasos": PEGASOS, "invsqrt": INVSQRT}
METRICS = {
    "accuracy": M_ACCURACY,
    "neg_mean_squared_error": M_NEG_MSE,
    "neg_root_mean_squared_error": M_NEG_RMSE,
    "neg_mean_absolute_error": M_NEG_MAE,
    "r2": M_R2,
}

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define SKX_PREFETCH(p) __builtin_prefetch(p)
    #else
    #define SKX_PREFETCH(p) ((void)0)
    #endif
    """
    void SKX_PREFETCH(const void* p) noexcept nogil

# Rows ahead to prefetch when rows are fed in a random order.
cdef Py_ssize_t PREFETCH_AHEAD = 8

# Below this scale the weight vector is rescaled (scikit-learn's threshold).
cdef double MIN_SCALE = 1e-9


cdef struct Params:
    int loss
    int schedule
    double alpha
    double eta0
    double radius           # <= 0: no projection
    int average
    int fit_intercept
    double intercept_scaling
    int n_models            # K: 1 for binary and regression, n_classes for OvR
    Py_ssize_t n_coef       # D = n_features + 1


cdef Params make_params(dict params, Py_ssize_t n_models, Py_ssize_t n_features):
    cdef Params p
    p.loss = LOSSES[params["loss"]]
    p.schedule = SCHEDULES[params["schedule"]]
    p.alpha = params["alpha"]
    p.eta0 = params["eta0"]
    p.radius = params["radius"]
    p.average = params["average"]
    p.fit_intercept = params["fit_intercept"]
    p.intercept_scaling = 1.0
    p.n_models = n_models
    p.n_coef = n_features + 1
    return p


def state_size(Py_ssize_t n_models, Py_ssize_t n_features, bint average):
    """Length of the flat state array of ``n_models`` weight vectors."""
    cdef Py_ssize_t d = n_features + 1
    return 2 + 2 * n_models + n_models * d * (2 if average else 1)


def new_state(Py_ssize_t n_models, Py_ssize_t n_features, bint average):
    """A fresh state: all weights zero, scales one, no row fed."""
    state = np.zeros(state_size(n_models, n_features, average), dtype=np.float64)
    state[2 : 2 + n_models] = 1.0
    return state


cdef inline double dloss(int loss, double p, double y) noexcept nogil:
    """Derivative of the loss with respect to the prediction ``p``."""
    cdef double z
    if loss == HINGE:
        # z <= 1 as in scikit-learn's Hinge, so that SGDClassifier is reproduced.
        if p * y <= 1.0:
            return -y
        return 0.0
    if loss == LOG:
        z = p * y
        if z > 18.0:
            return -y * exp(-z)
        if z < -18.0:
            return -y
        return -y / (exp(z) + 1.0)
    return p - y


cdef inline double row_target(Params* p, double y, Py_ssize_t k) noexcept nogil:
    if p.loss == SQUARED:
        return y
    if p.n_models == 1:
        return 1.0 if y == 1.0 else -1.0
    return 1.0 if y == <double>k else -1.0


cdef void rescale(double* v, double* scale, Py_ssize_t d) noexcept nogil:
    cdef Py_ssize_t j
    cdef double s = scale[0]
    for j in range(d):
        v[j] *= s
    scale[0] = 1.0


cdef void update_row(
    double* state,
    Params* p,
    const floating* x,
    const Py_ssize_t* ind,      # NULL: dense row of n_coef - 1 values
    Py_ssize_t nnz,
    double y,
    double weight,
) noexcept nogil:
    cdef Py_ssize_t K = p.n_models, D = p.n_coef, k, j
    cdef double* scale = state + 2
    cdef double* sqnorm = state + 2 + K
    cdef double* v
    cdef double* avg
    cdef double t = state[0] + 1.0
    cdef double eta, dot, xsq, pred, update, c, s, coef, xv, f
    cdef double isc = p.intercept_scaling
    state[0] = t
    if p.schedule == PEGASOS:
        eta = 1.0 / (p.alpha * t)
    else:
        eta = p.eta0 / sqrt(t)
    for k in range(K):
        v = state + 2 + 2 * K + k * D
        dot = 0.0
        xsq = 0.0
        if ind == NULL:
            for j in range(nnz):
                xv = x[j]
                dot += v[j] * xv
                xsq += xv * xv
        else:
            for j in range(nnz):
                xv = x[j]
                dot += v[ind[j]] * xv
                xsq += xv * xv
        if p.fit_intercept:
            dot += v[D - 1] * isc
            xsq += isc * isc
        pred = scale[k] * dot
        update = -eta * dloss(p.loss, pred, row_target(p, y, k)) * weight
        c = 1.0
        if p.alpha > 0.0:
            c = 1.0 - eta * p.alpha
            if c < 0.0:
                c = 0.0
            scale[k] *= c
            sqnorm[k] *= c * c
            if scale[k] < MIN_SCALE:
                rescale(v, &scale[k], D)
        s = scale[k]
        if update != 0.0:
            coef = update / s
            if ind == NULL:
                for j in range(nnz):
                    v[j] += coef * x[j]
            else:
                for j in range(nnz):
                    v[ind[j]] += coef * x[j]
            if p.fit_intercept:
                v[D - 1] += coef * isc
            # ||w + u x||^2 where <w, x> = c * pred for the shrunk weights.
            sqnorm[k] += xsq * update * update + 2.0 * update * c * pred
        if p.radius > 0.0 and sqnorm[k] > p.radius * p.radius:
            if isinf(sqnorm[k]):
                # A step overflowed float64 (e.g. the row's squared norm did):
                # projecting would hide it behind zero weights. Leave a NaN
                # norm, which the estimator and the native tree report as an
                # overflow. (Tested here, not on every row: a per-row test
                # cost ~5 % of a leave-one-out run on covtype.)
                sqnorm[k] = NAN
            else:
                f = p.radius / sqrt(sqnorm[k])
                scale[k] *= f
                sqnorm[k] = p.radius * p.radius
                if scale[k] < MIN_SCALE:
                    rescale(v, &scale[k], D)
        if p.average:
            avg = state + 2 + 2 * K + K * D + k * D
            s = scale[k] * eta
            for j in range(D):
                avg[j] += s * v[j]
    if p.average:
        state[1] += eta


cdef void feed_rows(
    double* state,
    Params* p,
    const floating* data,
    const Py_ssize_t* indices,
    const Py_ssize_t* indptr,      # NULL: dense C-ordered rows
    const double* y,
    const double* sample_weight,   # NULL: unit weights
    const Py_ssize_t* rows,
    Py_ssize_t n_rows,
) noexcept nogil:
    cdef Py_ssize_t r, i, ahead, q, n_features = p.n_coef - 1
    cdef Py_ssize_t row_bytes = n_features * sizeof(floating)
    cdef double w
    for r in range(n_rows):
        i = rows[r]
        # Randomized orders jump around X: fetch the rows a few steps ahead.
        if r + PREFETCH_AHEAD < n_rows:
            ahead = rows[r + PREFETCH_AHEAD]
            if indptr == NULL:
                for q in range(0, row_bytes, 64):
                    SKX_PREFETCH(<const char*>(data + ahead * n_features) + q)
            else:
                SKX_PREFETCH(data + indptr[ahead])
                SKX_PREFETCH(indices + indptr[ahead])
            SKX_PREFETCH(y + ahead)
        w = 1.0 if sample_weight == NULL else sample_weight[i]
        if indptr == NULL:
            update_row(state, p, data + i * n_features, NULL, n_features, y[i], w)
        else:
            update_row(
                state, p, data + indptr[i], indices + indptr[i],
                indptr[i + 1] - indptr[i], y[i], w,
            )


cdef double decision_row(
    const double* state,
    Params* p,
    Py_ssize_t k,
    const floating* x,
    const Py_ssize_t* ind,
    Py_ssize_t nnz,
) noexcept nogil:
    cdef Py_ssize_t K = p.n_models, D = p.n_coef, j
    cdef const double* v
    cdef double dot = 0.0, factor
    if p.average:
        v = state + 2 + 2 * K + K * D + k * D
        factor = 0.0 if state[1] == 0.0 else 1.0 / state[1]
    else:
        v = state + 2 + 2 * K + k * D
        factor = state[2 + k]
    if ind == NULL:
        for j in range(nnz):
            dot += v[j] * x[j]
    else:
        for j in range(nnz):
            dot += v[ind[j]] * x[j]
    if p.fit_intercept:
        dot += v[D - 1] * p.intercept_scaling
    return dot * factor


cdef void decision_rows(
    const double* state,
    Params* p,
    const floating* data,
    const Py_ssize_t* indices,
    const Py_ssize_t* indptr,
    const Py_ssize_t* rows,
    Py_ssize_t n_rows,
    double* out,                    # (n_rows, K)
) noexcept nogil:
    cdef Py_ssize_t r, i, k, K = p.n_models, n_features = p.n_coef - 1
    for r in range(n_rows):
        i = rows[r]
        for k in range(K):
            if indptr == NULL:
                out[r * K + k] = decision_row(
                    state, p, k, data + i * n_features, NULL, n_features
                )
            else:
                out[r * K + k] = decision_row(
                    state, p, k, data + indptr[i], indices + indptr[i],
                    indptr[i + 1] - indptr[i],
                )


# -- Python entry points used by the estimators ------------------------------------
def decision(
    const double[::1] state,
    dict params,
    Py_ssize_t n_models,
    const floating[::1] data,
    const Py_ssize_t[::1] indices,
    const Py_ssize_t[::1] indptr,
    Py_ssize_t n_features,
    Py_ssize_t n_samples,
):
    """Decision values of shape (n_samples, n_models), same layout as :func:`feed`."""
    cdef Params p = make_params(params, n_models, n_features)
    out = np.zeros((n_samples, n_models), dtype=np.float64)
    cdef double[:, ::1] out_view = out
    cdef Py_ssize_t[::1] rows = np.arange(n_samples, dtype=np.intp)
    cdef const Py_ssize_t* ind_ptr = NULL
    cdef const Py_ssize_t* ptr_ptr = NULL
    if indptr.shape[0] > 0:
        ptr_ptr = &indptr[0]
        if indices.shape[0] > 0:
            ind_ptr = &indices[0]
    if n_samples == 0:
        return out
    with nogil:
        decision_rows(
            &state[0], &p, &data[0] if data.shape[0] > 0 else NULL, ind_ptr,
            ptr_ptr, &rows[0], n_samples, &out_view[0, 0],
        )
    return out


# -- the native tree ---------------------------------------------------------------
cdef double score_leaf(
    const double* state,
    Params* p,
    int metric,
    const floating* data,
    const Py_ssize_t* indices,
    const Py_ssize_t* indptr,
    const double* y,
    const Py_ssize_t* rows,
    Py_ssize_t n_rows,
    double* buf,                    # n_rows * K scratch
) noexcept nogil:
    cdef Py_ssize_t r, k, best, K = p.n_models
    cdef double total = 0.0, diff, mean, sst, d
    decision_rows(state, p, data, indices, indptr, rows, n_rows, buf)
    if metric == M_ACCURACY:
        for r in range(n_rows):
            if K == 1:
                best = 1 if buf[r] > 0.0 else 0
            else:
                best = 0
                for k in range(1, K):
                    if buf[r * K + k] > buf[r * K + best]:
                        best = k
            if <double>best == y[rows[r]]:
                total += 1.0
        return total / n_rows
    if metric == M_NEG_MAE:
        for r in range(n_rows):
            total += fabs(y[rows[r]] - buf[r])
        return -total / n_rows
    for r in range(n_rows):
        diff = y[rows[r]] - buf[r]
        total += diff * diff
    if metric == M_NEG_MSE:
        return -total / n_rows
    if metric == M_NEG_RMSE:
        return -sqrt(total / n_rows)
    # R^2, with scikit-learn's conventions for degenerate test sets.
    if n_rows < 2:
        return NAN
    mean = 0.0
    for r in range(n_rows):
        mean += y[rows[r]]
    mean /= n_rows
    sst = 0.0
    for r in range(n_rows):
        d = y[rows[r]] - mean
        sst += d * d
    if sst == 0.0:
        return 1.0 if total == 0.0 else 0.0
    return 1.0 - total / sst




cdef class SGDModel(NativeModel):
    """The SGD kernel on one data set, as ``partial_fit`` and the native tree use it.

    Parameters
    ----------
    params : dict
        The learner's kernel parameters (``_kernel_params()``).
    n_models : int
        Number of weight vectors: 1 for binary problems and regression,
        ``n_classes`` for one-vs-rest.
    data, indices, indptr : ndarray
        ``X`` as :func:`sklearn_ext.linear_model._base.as_kernel_input` gives it:
        the raveled C-ordered rows of a dense ``X`` (float32 or float64) with
        empty ``indices``/``indptr``, or the three arrays of a CSR matrix.
    n_features : int
        Number of columns of ``X``.
    y : ndarray of float64
        Class indices (classifiers) or targets (regressors) of every row.
    sample_weight : ndarray of float64 or None
        Weight of every row's step (None: unit weights).
    scoring : str or None, default=None
        The leaf metric computed in C (a key of :data:`METRICS`); any other
        value leaves scoring to the caller (``scores_leaves`` is False).
    """

    cdef Params p
    cdef int metric
    cdef bint is_float32
    cdef const double* data64
    cdef const float* data32
    cdef const Py_ssize_t* indices
    cdef const Py_ssize_t* indptr
    cdef const double* y
    cdef const double* sample_weight

    def __init__(
        self,
        dict params,
        Py_ssize_t n_models,
        data,
        const Py_ssize_t[::1] indices,
        const Py_ssize_t[::1] indptr,
        Py_ssize_t n_features,
        const double[::1] y,
        sample_weight=None,
        scoring=None,
    ):
        cdef const double[::1] data64
        cdef const float[::1] data32
        cdef const double[::1] weights
        self.p = make_params(params, n_models, n_features)
        self.n_state = state_size(n_models, n_features, self.p.average)
        self.metric = METRICS.get(scoring, M_PYTHON) if isinstance(scoring, str) else M_PYTHON
        self.scores_leaves = self.metric != M_PYTHON
        self.is_float32 = data.dtype == np.float32
        if self.is_float32:
            data32 = data
            self.data32 = &data32[0] if data32.shape[0] > 0 else NULL
        else:
            data64 = data
            self.data64 = &data64[0] if data64.shape[0] > 0 else NULL
        self.indptr = &indptr[0] if indptr.shape[0] > 0 else NULL
        self.indices = (
            &indices[0] if self.indptr != NULL and indices.shape[0] > 0 else NULL
        )
        self.y = &y[0] if y.shape[0] > 0 else NULL
        if sample_weight is not None:
            weights = sample_weight
            self.sample_weight = &weights[0] if weights.shape[0] > 0 else NULL
        self._arrays = (data, indices, indptr, y, sample_weight)

    def new_state(self):
        """A fresh state: all weights zero, scales one, no row fed."""
        return new_state(
            self.p.n_models, self.p.n_coef - 1, self.p.average
        )

    cdef void feed(
        self, double* state, const Py_ssize_t* rows, Py_ssize_t n_rows
    ) noexcept nogil:
        if self.is_float32:
            feed_rows(
                state, &self.p, self.data32, self.indices, self.indptr, self.y,
                self.sample_weight, rows, n_rows,
            )
        else:
            feed_rows(
                state, &self.p, self.data64, self.indices, self.indptr, self.y,
                self.sample_weight, rows, n_rows,
            )

    cdef Py_ssize_t score_work_size(self, Py_ssize_t n_rows) noexcept nogil:
        return n_rows * self.p.n_models

    cdef double score(
        self, const double* state, const Py_ssize_t* rows, Py_ssize_t n_rows,
        double* work,
    ) noexcept nogil:
        if self.is_float32:
            return score_leaf(
                state, &self.p, self.metric, self.data32, self.indices,
                self.indptr, self.y, rows, n_rows, work,
            )
        return score_leaf(
            state, &self.p, self.metric, self.data64, self.indices, self.indptr,
            self.y, rows, n_rows, work,
        )
