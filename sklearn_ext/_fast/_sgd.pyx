"""Native SGD kernels and the whole-tree TreeCV engine.

One row update serves every learner of ``sklearn_ext.linear_model`` (PEGASOS,
logistic SGD, least-squares robust SA) and both engines: ``partial_fit`` feeds rows
through :func:`feed`, the native tree feeds the same rows through the same C code,
so both produce bit-identical models.

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
from libc.math cimport exp, fabs, isnan, log, sqrt, NAN
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

import numpy as np

from sklearn_ext._fast._random cimport node_seed, shuffle_intp

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


cdef inline double now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + 1e-9 * ts.tv_nsec


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
def feed(
    double[::1] state,
    dict params,
    Py_ssize_t n_models,
    const floating[::1] data,
    const Py_ssize_t[::1] indices,
    const Py_ssize_t[::1] indptr,
    Py_ssize_t n_features,
    const double[::1] y,
    sample_weight,
    const Py_ssize_t[::1] rows,
):
    """Feed ``rows`` of ``X`` (in that order) to the model ``state``, in place.

    Dense ``X`` is passed as its raveled C-ordered ``data`` with empty
    ``indices``/``indptr``; CSR ``X`` as its three arrays (indices as intp).
    ``y`` holds class indices for classifiers and targets for regressors.
    """
    cdef Params p = make_params(params, n_models, n_features)
    cdef const double[::1] sw
    cdef const double* sw_ptr = NULL
    cdef const Py_ssize_t* ind_ptr = NULL
    cdef const Py_ssize_t* ptr_ptr = NULL
    if sample_weight is not None:
        sw = sample_weight
        if sw.shape[0] > 0:
            sw_ptr = &sw[0]
    if indptr.shape[0] > 0:
        ptr_ptr = &indptr[0]
        if indices.shape[0] > 0:
            ind_ptr = &indices[0]
    if rows.shape[0] == 0:
        return
    with nogil:
        feed_rows(
            &state[0], &p, &data[0] if data.shape[0] > 0 else NULL, ind_ptr,
            ptr_ptr, &y[0], sw_ptr, &rows[0], rows.shape[0],
        )


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


cdef Py_ssize_t node_feed_rows(
    const Py_ssize_t* sample_order,
    const Py_ssize_t* bounds,
    Py_ssize_t p_start,
    Py_ssize_t p_end,
    Py_ssize_t start,
    Py_ssize_t end,
    bint randomized,
    uint64_t seed,
    Py_ssize_t* buf,
    const Py_ssize_t** rows,
) noexcept nogil:
    """Rows fed to the parent ``(p_start, p_end)`` to obtain its child ``(start, end)``.

    Identical to ``FoldPlan.feed``: the sibling's chunks in fixed order, shuffled
    with the child's own stream when randomized.
    """
    cdef Py_ssize_t mid = (p_start + p_end) // 2, s_start, s_end, n
    if end == mid:
        s_start, s_end = mid + 1, p_end
    else:
        s_start, s_end = p_start, mid
    n = bounds[s_end + 1] - bounds[s_start]
    if not randomized:
        rows[0] = sample_order + bounds[s_start]
        return n
    memcpy(buf, sample_order + bounds[s_start], n * sizeof(Py_ssize_t))
    if n > 1:
        shuffle_intp(buf, n, node_seed(seed, start, end))
    rows[0] = buf
    return n


def run_subtree(
    double[::1] root_state,
    dict params,
    Py_ssize_t n_models,
    const floating[::1] data,
    const Py_ssize_t[::1] indices,
    const Py_ssize_t[::1] indptr,
    Py_ssize_t n_features,
    const double[::1] y,
    sample_weight,
    const Py_ssize_t[::1] sample_order,
    const Py_ssize_t[::1] bounds,
    Py_ssize_t start,
    Py_ssize_t end,
    bint randomized,
    uint64_t seed,
    int metric,
    double[::1] scores,
    int64_t[::1] n_fed,
    double[::1] fit_time,
    double[::1] score_time,
    int[::1] stop,
    leaf_callback=None,
):
    """Run TreeCV below node ``(start, end)`` whose model is ``root_state``.

    The recursion is depth first with an explicit stack of states: the left child
    works on a copy of its parent, the right child reuses the parent's buffer, as
    in the Python engine, so one state per tree level is held. Leaf ``i`` writes
    ``scores[i]`` (when ``metric`` is computed in C), ``n_fed[i]`` (rows fed since
    the previous leaf) and the times. ``leaf_callback(fold, state, n_fed,
    fit_time, score)`` (``state`` a view to copy, ``score`` the C score), if given, is called with the GIL at each leaf and may return a
    score; if it raises, ``stop[0]`` is set, every worker sharing ``stop`` stops
    and the exception is returned. ``root_state`` is modified in place.
    """
    cdef Params p = make_params(params, n_models, n_features)
    cdef Py_ssize_t L = root_state.shape[0]
    cdef Py_ssize_t k_sub = end - start + 1, depth = 1, n, max_rows = 0, f
    while (1 << (depth - 1)) < k_sub:
        depth += 1
    for f in range(start, end + 1):
        if bounds[f + 1] - bounds[f] > max_rows:
            max_rows = bounds[f + 1] - bounds[f]
    levels_arr = np.empty((depth + 1, L), dtype=np.float64)
    cdef double[:, ::1] levels = levels_arr
    levels[0, :] = root_state
    feed_buf_arr = np.empty(
        max(1, bounds[end + 1] - bounds[start]) if randomized else 1, dtype=np.intp
    )
    cdef Py_ssize_t[::1] feed_buf = feed_buf_arr
    score_buf_arr = np.empty(max(1, max_rows) * n_models, dtype=np.float64)
    cdef double[::1] score_buf = score_buf_arr
    # Frames: (start, end, buffer, phase); phase 0 = enter, 1 = feed right child.
    frames_arr = np.empty((2 * depth + 4, 4), dtype=np.intp)
    cdef Py_ssize_t[:, ::1] frames = frames_arr
    cdef Py_ssize_t top = 0, s, e, b, phase, mid
    cdef const Py_ssize_t* rows
    cdef const double* sw_ptr = NULL
    cdef const double[::1] sw
    cdef const Py_ssize_t* ind_ptr = NULL
    cdef const Py_ssize_t* ptr_ptr = NULL
    cdef const floating* data_ptr = NULL
    cdef int64_t fed = 0
    cdef double tic, train = 0.0, t0
    cdef bint call = leaf_callback is not None
    cdef object error = None
    if sample_weight is not None:
        sw = sample_weight
        sw_ptr = &sw[0]
    if indptr.shape[0] > 0:
        ptr_ptr = &indptr[0]
        if indices.shape[0] > 0:
            ind_ptr = &indices[0]
    if data.shape[0] > 0:
        data_ptr = &data[0]
    frames[0, 0] = start
    frames[0, 1] = end
    frames[0, 2] = 0
    frames[0, 3] = 0
    top = 1
    with nogil:
        while top > 0 and stop[0] == 0:
            top -= 1
            s = frames[top, 0]
            e = frames[top, 1]
            b = frames[top, 2]
            phase = frames[top, 3]
            mid = (s + e) // 2
            if phase == 1:
                # The right child (mid+1, e) reuses its parent's buffer b.
                tic = now()
                n = node_feed_rows(
                    &sample_order[0], &bounds[0], s, e, mid + 1, e, randomized,
                    seed, &feed_buf[0], &rows,
                )
                feed_rows(
                    &levels[b, 0], &p, data_ptr, ind_ptr, ptr_ptr, &y[0], sw_ptr,
                    rows, n,
                )
                fed += n
                train += now() - tic
                frames[top, 0] = mid + 1
                frames[top, 1] = e
                frames[top, 2] = b
                frames[top, 3] = 0
                top += 1
                continue
            if s == e:
                n_fed[s] = fed
                fit_time[s] = train
                fed = 0
                train = 0.0
                tic = now()
                if metric != M_PYTHON:
                    scores[s] = score_leaf(
                        &levels[b, 0], &p, metric, data_ptr, ind_ptr, ptr_ptr,
                        &y[0], &sample_order[bounds[s]], bounds[s + 1] - bounds[s],
                        &score_buf[0],
                    )
                score_time[s] = now() - tic
                if call:
                    with gil:
                        # Another worker may have stopped the run while this one
                        # waited for the GIL: no leaf is reported after a stop.
                        if stop[0] == 0:
                            try:
                                t0 = now()
                                leaf_callback(
                                    s, levels_arr[b], n_fed[s], fit_time[s], scores[s]
                                )
                                score_time[s] += now() - t0
                            except BaseException as exc:
                                error = exc
                                stop[0] = 1
                continue
            # Internal node: the left child (s, mid) trains on a copy in b + 1.
            tic = now()
            memcpy(&levels[b + 1, 0], &levels[b, 0], L * sizeof(double))
            n = node_feed_rows(
                &sample_order[0], &bounds[0], s, e, s, mid, randomized, seed,
                &feed_buf[0], &rows,
            )
            feed_rows(
                &levels[b + 1, 0], &p, data_ptr, ind_ptr, ptr_ptr, &y[0], sw_ptr,
                rows, n,
            )
            fed += n
            train += now() - tic
            frames[top, 0] = s
            frames[top, 1] = e
            frames[top, 2] = b
            frames[top, 3] = 1
            frames[top + 1, 0] = s
            frames[top + 1, 1] = mid
            frames[top + 1, 2] = b + 1
            frames[top + 1, 3] = 0
            top += 2
    root_state[:] = levels[0, :]
    return error
