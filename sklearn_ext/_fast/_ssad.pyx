"""Native kernels of the semi-supervised anomaly detector (SSAD).

The learner works on random Fourier features ``phi(x)`` (computed here, row by
row, so that a row's features do not depend on which other rows are computed
with it) and minimises, by stochastic subgradient steps of size ``1 / t``, the
1-strongly convex objective documented in
:class:`sklearn_ext.anomaly.SemiSupervisedAnomalyDetector`.

A model state is one flat float64 array (see :func:`new_state`):

    [0]        t, number of rows fed
    [1]        scale s of the weight vector (w = s * v)
    [2]        rho, the threshold
    [3]        the margin (the paper's gamma), kept >= 0
    [4 : 4+D]  v, D = number of random features

so the native tree copies a node's model with one ``memcpy`` of ``D + 4`` doubles.
"""

from libc.math cimport cos, sqrt
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

import numpy as np

from sklearn_ext._fast._random cimport node_seed, shuffle_intp

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


cdef inline double now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + 1e-9 * ts.tv_nsec


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


# -- Python entry points -------------------------------------------------------------
def feed(
    double[::1] state,
    double eta_u,
    double eta_l,
    double kappa,
    const double[:, ::1] phi,
    const double[::1] y,
    const Py_ssize_t[::1] rows,
):
    """Feed ``rows`` of the feature matrix ``phi`` (in that order), in place.

    ``y`` holds the training labels: +1 normal, -1 anomaly, 0 unlabelled.
    """
    cdef Params p = make_params(eta_u, eta_l, kappa, phi.shape[1])
    if rows.shape[0] == 0:
        return
    with nogil:
        feed_rows(&state[0], &p, &phi[0, 0], &y[0], &rows[0], rows.shape[0])


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


def decision_subset(
    const double[::1] state,
    const double[:, ::1] phi,
    const Py_ssize_t[::1] rows,
    double[::1] out,
):
    """``out[r] = <w, phi[rows[r]]> - rho``."""
    if rows.shape[0] == 0:
        return
    with nogil:
        decision_rows(
            &state[0], phi.shape[1], &phi[0, 0], &rows[0], rows.shape[0], &out[0]
        )


# -- the native tree ---------------------------------------------------------------
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
    double eta_u,
    double eta_l,
    double kappa,
    const double[:, ::1] phi,
    const double[::1] y,
    const Py_ssize_t[::1] sample_order,
    const Py_ssize_t[::1] bounds,
    Py_ssize_t start,
    Py_ssize_t end,
    bint randomized,
    uint64_t seed,
    int64_t[::1] n_fed,
    double[::1] fit_time,
    int[::1] stop,
    leaf_callback,
):
    """Run TreeCV below node ``(start, end)`` whose model is ``root_state``.

    Depth first with an explicit stack of states (one per tree level): the left
    child trains on a copy of its parent, the right child reuses the parent's
    buffer. Leaf ``i`` writes ``n_fed[i]`` (rows fed since the previous leaf)
    and ``fit_time[i]``, then ``leaf_callback(fold, state)`` (``state`` a view
    to copy) is called with the GIL; if it raises, ``stop[0]`` is set, every
    worker sharing ``stop`` stops and the exception is returned.
    ``root_state`` is modified in place.
    """
    cdef Params p = make_params(eta_u, eta_l, kappa, phi.shape[1])
    cdef Py_ssize_t L = root_state.shape[0]
    cdef Py_ssize_t k_sub = end - start + 1, depth = 1, n
    while (1 << (depth - 1)) < k_sub:
        depth += 1
    levels_arr = np.empty((depth + 1, L), dtype=np.float64)
    cdef double[:, ::1] levels = levels_arr
    levels[0, :] = root_state
    feed_buf_arr = np.empty(
        max(1, bounds[end + 1] - bounds[start]) if randomized else 1, dtype=np.intp
    )
    cdef Py_ssize_t[::1] feed_buf = feed_buf_arr
    # Frames: (start, end, buffer, phase); phase 0 = enter, 1 = feed right child.
    frames_arr = np.empty((2 * depth + 4, 4), dtype=np.intp)
    cdef Py_ssize_t[:, ::1] frames = frames_arr
    cdef Py_ssize_t top = 0, s, e, b, phase, mid
    cdef const Py_ssize_t* rows
    cdef const double* phi_ptr = &phi[0, 0]
    cdef const double* y_ptr = &y[0]
    cdef int64_t fed = 0
    cdef double tic, train = 0.0
    cdef object error = None
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
                feed_rows(&levels[b, 0], &p, phi_ptr, y_ptr, rows, n)
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
                with gil:
                    # Another worker may have stopped the run while this one
                    # waited for the GIL: no leaf is reported after a stop.
                    if stop[0] == 0:
                        try:
                            leaf_callback(s, levels_arr[b])
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
            feed_rows(&levels[b + 1, 0], &p, phi_ptr, y_ptr, rows, n)
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
