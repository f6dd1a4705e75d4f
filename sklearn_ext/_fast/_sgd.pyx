# distutils: extra_compile_args = -ffp-contract=off
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
from libc.math cimport exp, fabs, isfinite, isinf, sqrt, NAN
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

import numpy as np

from sklearn_ext._fast._scaler cimport (
    SCALER_MAXABS,
    SCALER_MINMAX,
    SCALER_STANDARD,
    range_update,
    scaler_transform,
    standard_update,
)
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


cdef void decision_block(
    const double* state,
    Params* p,
    Py_ssize_t k,
    const floating* data,
    const Py_ssize_t* rows,
    double* out,                    # out[m * K]: row m's value of model k
) noexcept nogil:
    """:func:`decision_row` of 4 dense rows at once, each with the same operations.

    A dot product is a chain of dependent additions; four independent chains
    keep the processor busy (scoring a leaf or a level of the tree runs here,
    about twice as fast), and each row's value is bit-identical to
    :func:`decision_row`'s.
    """
    cdef Py_ssize_t K = p.n_models, D = p.n_coef, n_features = D - 1, j
    cdef const double* v
    cdef const floating* x0 = data + rows[0] * n_features
    cdef const floating* x1 = data + rows[1] * n_features
    cdef const floating* x2 = data + rows[2] * n_features
    cdef const floating* x3 = data + rows[3] * n_features
    cdef double d0 = 0.0, d1 = 0.0, d2 = 0.0, d3 = 0.0, factor, b
    if p.average:
        v = state + 2 + 2 * K + K * D + k * D
        factor = 0.0 if state[1] == 0.0 else 1.0 / state[1]
    else:
        v = state + 2 + 2 * K + k * D
        factor = state[2 + k]
    for j in range(n_features):
        d0 += v[j] * x0[j]
        d1 += v[j] * x1[j]
        d2 += v[j] * x2[j]
        d3 += v[j] * x3[j]
    if p.fit_intercept:
        b = v[D - 1] * p.intercept_scaling
        d0 += b
        d1 += b
        d2 += b
        d3 += b
    out[0] = d0 * factor
    out[K] = d1 * factor
    out[2 * K] = d2 * factor
    out[3 * K] = d3 * factor


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
    cdef Py_ssize_t r = 0, i, k, q, K = p.n_models, n_features = p.n_coef - 1
    cdef Py_ssize_t row_bytes = n_features * sizeof(floating)
    if indptr == NULL:  # dense rows, four at a time
        while r + 4 <= n_rows:
            if r + 4 + PREFETCH_AHEAD <= n_rows:
                for i in range(r + PREFETCH_AHEAD, r + PREFETCH_AHEAD + 4):
                    for q in range(0, row_bytes, 64):
                        SKX_PREFETCH(<const char*>(data + rows[i] * n_features) + q)
            for k in range(K):
                decision_block(state, p, k, data, rows + r, out + r * K + k)
            r += 4
    for r in range(r, n_rows):
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
    decision_rows(state, p, data, indices, indptr, rows, n_rows, buf)
    return leaf_metric(metric, y, rows, n_rows, buf, p.n_models)


cdef double leaf_metric(
    int metric,
    const double* y,
    const Py_ssize_t* rows,
    Py_ssize_t n_rows,
    const double* buf,              # (n_rows, K) decision values
    Py_ssize_t K,
) noexcept nogil:
    cdef Py_ssize_t r, k, best
    cdef double total = 0.0, diff, mean, sst, d
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


# -- a running scaler before the learner -------------------------------------------
#: The scalers ScaledSGDModel runs (scikit-learn class name -> kind).
SCALERS = {
    "StandardScaler": SCALER_STANDARD,
    "MinMaxScaler": SCALER_MINMAX,
    "MaxAbsScaler": SCALER_MAXABS,
}


cdef class ScaledSGDModel(SGDModel):
    """A running scaler before the SGD kernel: the streaming regime, in the state.

    The model of ``TreeCVEstimator(StreamingPipeline([scaler, learner]),
    batch_size=B)``: rows are fed in batches of ``B`` counted from the first
    row the state ever took; each full batch updates the scaler
    (``partial_fit``, scikit-learn's operations: ``_scaler.pxd``), is
    transformed by the updated scaler and fed to the learner row by row. Rows
    short of a batch wait in the state; a leaf's model feeds them as one last
    batch of their size (the wrapper's flush), on a copy, before it is scored.

    The state is the learner's (``n_learner_state`` doubles, as
    :class:`SGDModel`), then the scaler's ``n_samples_seen_`` and its arrays
    (``mean_``, ``var_``, ``scale_``; ``data_min_``, ``data_max_``,
    ``scale_``, ``min_``; or ``max_abs_``, ``scale_``), then the number of
    waiting rows and their row numbers (``B`` slots).

    Parameters
    ----------
    params, n_models, data, n_features, y, sample_weight, scoring
        As :class:`SGDModel`, on dense C-ordered float64 rows only.
    scaler : dict
        ``kind`` (a value of :data:`SCALERS`), ``with_mean``, ``with_std``
        (StandardScaler), ``low``, ``high`` (MinMaxScaler's
        ``feature_range``), ``clip`` and ``batch_size``.
    """

    cdef readonly Py_ssize_t n_learner_state, batch_size
    cdef Py_ssize_t off_scaler, off_pending, n_arrays, n_features
    cdef int kind
    cdef bint with_mean, with_std, clip
    cdef double low, high

    def __init__(
        self,
        dict params,
        Py_ssize_t n_models,
        data,
        Py_ssize_t n_features,
        const double[::1] y,
        sample_weight=None,
        scoring=None,
        dict scaler=None,
    ):
        empty = np.empty(0, dtype=np.intp)
        if data.dtype != np.float64:
            raise ValueError("ScaledSGDModel takes dense float64 rows only.")
        super().__init__(
            params, n_models, data, empty, empty, n_features, y, sample_weight,
            scoring,
        )
        self.kind = scaler["kind"]
        self.with_mean = scaler.get("with_mean", True)
        self.with_std = scaler.get("with_std", True)
        self.clip = scaler.get("clip", False)
        self.low = scaler.get("low", 0.0)
        self.high = scaler.get("high", 1.0)
        self.batch_size = scaler["batch_size"]
        self.n_features = n_features
        self.n_arrays = {SCALER_STANDARD: 3, SCALER_MINMAX: 4, SCALER_MAXABS: 2}[
            self.kind
        ]
        self.n_learner_state = self.n_state
        self.off_scaler = self.n_state
        self.off_pending = self.off_scaler + 1 + self.n_arrays * n_features
        self.n_state = self.off_pending + 1 + self.batch_size

    def new_state(self):
        """A fresh state: no row fed, no scaler statistics, no row waiting."""
        state = np.zeros(self.n_state)
        state[: self.n_learner_state] = SGDModel.new_state(self)
        if self.kind == SCALER_MINMAX:
            d, start = self.n_features, self.off_scaler + 1
            state[start : start + d] = np.inf  # data_min_
            state[start + d : start + 2 * d] = -np.inf  # data_max_
        return state

    cdef inline double* array(self, double* state, Py_ssize_t i) noexcept nogil:
        return state + self.off_scaler + 1 + i * self.n_features

    cdef void feed_batch(
        self, double* state, const double* index, Py_ssize_t n, double* work
    ) noexcept nogil:
        """One batch (rows ``index``): the scaler updated, then the learner fed.

        ``work``: 5 ``n_features`` doubles.
        """
        cdef Py_ssize_t i, r, d = self.n_features
        cdef double* count = state + self.off_scaler
        cdef double* center = self.array(state, 0)
        cdef double* scale = self.array(state, 2)
        cdef double* row = work + 4 * d
        cdef double w
        if self.kind == SCALER_STANDARD:
            standard_update(
                self.data64, index, n, d, center, self.array(state, 1), scale,
                count[0], self.with_std, work,
            )
        elif self.kind == SCALER_MINMAX:
            center = self.array(state, 3)
            range_update(
                self.data64, index, n, d, self.kind, self.array(state, 0),
                self.array(state, 1), scale, center, self.low, self.high,
            )
        else:
            scale = self.array(state, 1)
            range_update(
                self.data64, index, n, d, self.kind, NULL, self.array(state, 0),
                scale, NULL, 0.0, 0.0,
            )
        count[0] += <double>n
        for i in range(n):
            r = <Py_ssize_t>index[i]
            scaler_transform(
                self.data64 + r * d, row, d, self.kind, center, scale,
                self.with_mean, self.with_std, self.clip, self.low, self.high,
            )
            w = 1.0 if self.sample_weight == NULL else self.sample_weight[r]
            update_row(state, &self.p, row, <const Py_ssize_t*>NULL, d, self.y[r], w)

    cdef void feed(
        self, double* state, const Py_ssize_t* rows, Py_ssize_t n_rows
    ) noexcept nogil:
        cdef double* waiting = state + self.off_pending
        cdef Py_ssize_t r, n_waiting = <Py_ssize_t>waiting[0]
        cdef double* work = NULL
        for r in range(n_rows):
            waiting[1 + n_waiting] = <double>rows[r]
            n_waiting += 1
            if n_waiting == self.batch_size:
                if work == NULL:
                    work = <double*>malloc(5 * self.n_features * sizeof(double))
                    if work == NULL:
                        with gil:
                            raise MemoryError()
                self.feed_batch(state, waiting + 1, n_waiting, work)
                n_waiting = 0
        waiting[0] = <double>n_waiting
        free(work)

    cdef void flush(self, double* state, double* work) noexcept nogil:
        """Feed the waiting rows as one last batch (the leaf's model)."""
        cdef double* waiting = state + self.off_pending
        cdef Py_ssize_t n_waiting = <Py_ssize_t>waiting[0]
        if n_waiting > 0:
            self.feed_batch(state, waiting + 1, n_waiting, work)
            waiting[0] = 0.0

    cdef Py_ssize_t score_work_size(self, Py_ssize_t n_rows) noexcept nogil:
        return self.n_state + 5 * self.n_features + n_rows * self.p.n_models

    cdef double score(
        self, const double* state, const Py_ssize_t* rows, Py_ssize_t n_rows,
        double* work,
    ) noexcept nogil:
        cdef Py_ssize_t r, k, K = self.p.n_models, d = self.n_features
        cdef double* leaf = work
        cdef double* scratch = work + self.n_state
        cdef double* buf = scratch + 5 * d
        cdef double* center
        cdef double* scale
        memcpy(leaf, state, self.n_state * sizeof(double))
        self.flush(leaf, scratch)
        for r in range(self.n_learner_state):
            if not isfinite(leaf[r]):
                # Overflowed in the waiting rows alone (an overflow before
                # them stops the walker): a NaN score, as for a failed fold.
                return NAN
        center = self.array(leaf, 3 if self.kind == SCALER_MINMAX else 0)
        scale = self.array(leaf, 1 if self.kind == SCALER_MAXABS else 2)
        for r in range(n_rows):
            scaler_transform(
                self.data64 + rows[r] * d, scratch, d, self.kind, center, scale,
                self.with_mean, self.with_std, self.clip, self.low, self.high,
            )
            for k in range(K):
                buf[r * K + k] = decision_row(
                    leaf, &self.p, k, scratch, <const Py_ssize_t*>NULL, d
                )
        return leaf_metric(self.metric, self.y, rows, n_rows, buf, K)

    def flushed(self, const double[::1] state):
        """A copy of ``state`` with its waiting rows fed (a leaf's model)."""
        if state.shape[0] != self.n_state:
            raise ValueError(
                f"A state of ScaledSGDModel has {self.n_state} values; got "
                f"{state.shape[0]}."
            )
        out = np.array(state, dtype=np.float64)
        work = np.empty(5 * self.n_features + 1)
        cdef double[::1] out_view = out
        cdef double[::1] work_view = work
        with nogil:
            self.flush(&out_view[0], &work_view[0])
        return out

    def scaler_arrays(self, const double[::1] state):
        """``n_samples_seen_`` and the scaler's arrays in ``state``, as a dict."""
        d, start = self.n_features, self.off_scaler + 1
        arrays = [
            np.array(state[start + i * d : start + (i + 1) * d])
            for i in range(self.n_arrays)
        ]
        names = {
            SCALER_STANDARD: ("mean_", "var_", "scale_"),
            SCALER_MINMAX: ("data_min_", "data_max_", "scale_", "min_"),
            SCALER_MAXABS: ("max_abs_", "scale_"),
        }[self.kind]
        result = dict(zip(names, arrays))
        result["n_samples_seen_"] = float(state[self.off_scaler])
        return result
