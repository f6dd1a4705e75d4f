# distutils: extra_compile_args = -ffp-contract=off
"""The streaming regime of ``(StandardScaler ->) SGDClassifier`` in one call.

TreeCV streams a learner whose updates depend on batching in fixed batches:
each batch updates the scaler (``StandardScaler.partial_fit``), is scaled by it
and fed to ``SGDClassifier.partial_fit``. Done through the public methods, each
batch costs about a millisecond of validation and set-up for a few dozen
microseconds of learning. :func:`sgd_stream` runs many full batches in one
call and gives the same model, bit for bit: the scaler's update is
scikit-learn's ``_incremental_mean_and_var`` (the same operations in the same
order), the SGD steps are scikit-learn's ``_plain_sgd`` for one epoch (the
same shuffle of each batch by its xorshift generator, the same weight vector
with its lazy scale, reset at the end of each call), for the settings it
handles: hinge, perceptron, squared hinge and modified Huber losses, an L2
penalty or none, constant, optimal and inverse-scaling learning rates, no
averaging, unit sample weights. The tests check it against the public methods.

The floating-point contraction of ``a += b * c`` into one fused operation is
off for this module (the ``distutils`` line above), as in scikit-learn's own
build, so that every product is rounded as there.
"""

from libc.math cimport isfinite, pow
from libc.stdint cimport uint32_t

from sklearn_ext._fast._scaler cimport SCALER_STANDARD, scaler_transform, standard_update

cdef enum:
    # Losses (scikit-learn's Hinge, SquaredHinge, ModifiedHuber).
    L_HINGE = 0
    L_SQUARED_HINGE = 1
    L_MODIFIED_HUBER = 2
    # Learning rates.
    R_CONSTANT = 1
    R_OPTIMAL = 2
    R_INVSCALING = 3

LOSSES = {"Hinge": L_HINGE, "SquaredHinge": L_SQUARED_HINGE,
          "ModifiedHuber": L_MODIFIED_HUBER}
LEARNING_RATES = {"constant": R_CONSTANT, "optimal": R_OPTIMAL,
                  "invscaling": R_INVSCALING}

cdef double MAX_DLOSS = 1e12
cdef double WSCALE_RESET = 1e-9


cdef inline uint32_t rand_r(uint32_t* seed) noexcept nogil:
    # scikit-learn's our_rand_r (sklearn/utils/_random.pxd), xorshift32.
    if seed[0] == 0:
        seed[0] = 1
    seed[0] ^= <uint32_t>(seed[0] << 13)
    seed[0] ^= <uint32_t>(seed[0] >> 17)
    seed[0] ^= <uint32_t>(seed[0] << 5)
    return seed[0] % (<uint32_t>2147483647 + 1)


cdef inline void shuffle(int* index, int n, uint32_t seed) noexcept nogil:
    # SequentialDataset.shuffle: Fisher-Yates from the identity each call.
    cdef unsigned i, j
    cdef int k, tmp
    for k in range(n):
        index[k] = k
    for i in range(n - 1):
        j = i + rand_r(&seed) % (n - i)
        tmp = index[i]
        index[i] = index[j]
        index[j] = tmp


cdef inline double gradient(int loss, double threshold, double y, double p) noexcept nogil:
    cdef double z
    if loss == L_HINGE:
        z = p * y
        if z <= threshold:
            return -y
        return 0.0
    if loss == L_SQUARED_HINGE:
        z = threshold - p * y
        if z > 0:
            return -2 * y * z
        return 0.0
    z = p * y  # modified Huber
    if z >= 1.0:
        return 0.0
    elif z >= -1.0:
        return 2.0 * (1.0 - z) * -y
    return -4.0 * y


cdef inline void update_scaler(
    const double* X, Py_ssize_t n, Py_ssize_t d, double* mean, double* var,
    double* scale, double last_count, bint with_std, double* work,
) noexcept nogil:
    """``StandardScaler.partial_fit`` of ``n`` contiguous rows (``_scaler.pxd``)."""
    standard_update(X, NULL, n, d, mean, var, scale, last_count, with_std, work)


cdef void transform(
    const double* X, double* out, Py_ssize_t size, Py_ssize_t d,
    const double* mean, const double* scale, bint with_mean, bint with_std,
) noexcept nogil:
    """``StandardScaler.transform``: ``X -= mean_``, then ``X /= scale_``."""
    cdef Py_ssize_t r
    for r in range(size // d):
        scaler_transform(
            X + r * d, out + r * d, d, SCALER_STANDARD, mean, scale, with_mean,
            with_std, False, 0.0, 0.0,
        )


cdef int sgd_epoch(
    const double* X, const int* index, int n, Py_ssize_t d,
    const double* y, double* w, double* intercept, double t,
    int loss, double threshold, bint l2, double alpha, int rate, double eta0,
    double power_t, double optimal_init, bint fit_intercept,
    double pos_weight, double neg_weight,
) noexcept nogil:
    """One epoch of ``_plain_sgd`` over rows ``index``; 1 when not finite."""
    cdef double wscale = 1.0
    cdef double p, eta = eta0, dloss, update, class_weight, factor
    cdef const double* x
    cdef Py_ssize_t i, j
    for i in range(n):
        x = X + index[i] * d
        p = 0.0
        for j in range(d):
            p += w[j] * x[j]
        p *= wscale
        p = p + intercept[0]
        if rate == R_OPTIMAL:
            eta = 1.0 / (alpha * (optimal_init + t - 1))
        elif rate == R_INVSCALING:
            eta = eta0 / pow(t, power_t)
        class_weight = pos_weight if y[index[i]] > 0.0 else neg_weight
        dloss = gradient(loss, threshold, y[index[i]], p)
        if dloss < -MAX_DLOSS:
            dloss = -MAX_DLOSS
        elif dloss > MAX_DLOSS:
            dloss = MAX_DLOSS
        update = -eta * dloss
        update *= class_weight * 1.0
        if l2:
            factor = 1.0 - (1.0 * eta * alpha)
            wscale *= factor if factor > 0 else 0.0
            if wscale < WSCALE_RESET:
                for j in range(d):
                    w[j] *= wscale
                wscale = 1.0
        if update != 0.0:
            for j in range(d):
                w[j] += x[j] * (update / wscale)
        if fit_intercept and update != 0:
            intercept[0] += update * 1.0
        t += 1
    if not isfinite(intercept[0]):
        return 1
    for j in range(d):
        if not isfinite(w[j]):
            return 1
    for j in range(d):
        w[j] *= wscale
    return 0


def sgd_stream(
    const double[:, ::1] X,
    Py_ssize_t batch_size,
    const double[:, ::1] targets,
    double[:, ::1] coef,
    double[::1] intercept,
    const double[::1] pos_weight,
    const double[::1] neg_weight,
    const uint32_t[:, ::1] seeds,
    bint shuffled,
    int loss,
    double threshold,
    bint l2,
    double alpha,
    int rate,
    double eta0,
    double power_t,
    double optimal_init,
    bint fit_intercept,
    double t,
    double[::1] mean=None,
    double[::1] var=None,
    double[::1] scale=None,
    double count=0.0,
    bint with_mean=True,
    bint with_std=True,
):
    """Feed the full batches of ``X`` to a fitted (scaler and) SGD classifier.

    Parameters
    ----------
    X : ndarray of shape (n_batches * batch_size, n_features)
        The rows, in the order they are fed.
    batch_size : int
        Rows per batch (per ``partial_fit`` call of the regime).
    targets : ndarray of shape (n_problems, n_rows)
        The +1/-1 targets of each one-vs-rest problem (one for binary).
    coef, intercept : ndarray
        The model's weights, shape (n_problems, n_features) and (n_problems,),
        updated in place.
    pos_weight, neg_weight : ndarray of shape (n_problems,)
        Class weights of each problem.
    seeds : ndarray of shape (n_batches, n_problems), dtype uint32
        The shuffle seed of each batch and problem.
    shuffled : bool
        Whether each batch is shuffled (the learner's ``shuffle``).
    loss, threshold, l2, alpha, rate, eta0, power_t, optimal_init, fit_intercept
        The learner's settings, as ``_plain_sgd`` takes them.
    t : float
        The learner's ``t_`` before the first batch.
    mean, var, scale : ndarray of shape (n_features,), default=None
        A running ``StandardScaler``'s ``mean_``, ``var_`` and ``scale_``
        (``var`` and ``scale`` None without ``with_std``), updated in place;
        ``None``: no scaler.
    count : float
        The scaler's ``n_samples_seen_``.
    with_mean, with_std : bool
        The scaler's settings.

    Returns
    -------
    t : float
        The learner's ``t_`` after the last batch.
    count : float
        The scaler's ``n_samples_seen_`` after the last batch.
    failed : int
        The number of batches fed before one whose weights were not finite
        (``-1`` when all were).
    """
    cdef Py_ssize_t d = X.shape[1]
    cdef Py_ssize_t n_batches = X.shape[0] // batch_size
    cdef Py_ssize_t n_problems = coef.shape[0]
    cdef Py_ssize_t b, k, i, j
    cdef bint scaled = mean is not None
    cdef double[:, ::1] buffer
    cdef double[::1] work
    cdef int[::1] index
    cdef const double* rows
    cdef int failed = -1
    if X.shape[0] == 0 or n_batches == 0:
        return t, count, failed
    import numpy as np
    buffer = np.empty((batch_size if scaled else 1, d))
    work = np.empty(4 * d + 1)
    index = np.empty(batch_size, dtype=np.intc)
    with nogil:
        for b in range(n_batches):
            rows = &X[b * batch_size, 0]
            if scaled:
                update_scaler(rows, batch_size, d, &mean[0],
                              &var[0] if with_std else NULL,
                              &scale[0] if with_std else NULL,
                              count, with_std, &work[0])
                count = count + <double>batch_size
                transform(rows, &buffer[0, 0], batch_size * d, d, &mean[0],
                          &scale[0] if with_std else NULL, with_mean, with_std)
                rows = &buffer[0, 0]
            for k in range(n_problems):
                if shuffled:
                    shuffle(&index[0], <int>batch_size, seeds[b, k])
                else:
                    for i in range(batch_size):
                        index[i] = <int>i
                if sgd_epoch(
                    rows, &index[0], <int>batch_size, d,
                    &targets[k, b * batch_size], &coef[k, 0], &intercept[k], t,
                    loss, threshold, l2, alpha, rate, eta0, power_t, optimal_init,
                    fit_intercept, pos_weight[k], neg_weight[k],
                ):
                    failed = <int>b
                    break
            if failed >= 0:
                break
            t += <double>batch_size
    return t, count, failed


def scale_batches(
    const double[:, ::1] X,
    Py_ssize_t batch_size,
    double[::1] mean,
    double[::1] var,
    double[::1] scale,
    double count,
    bint with_mean,
    bint with_std,
    double[:, ::1] out,
):
    """A running ``StandardScaler`` over the full batches of ``X``.

    Each batch updates the scaler (``partial_fit``), then is transformed by
    the updated scaler into the same rows of ``out``: what the streaming
    regime hands a learner whose updates do not depend on batching (the
    native learners, row by row), which then takes all the batches at once.

    Parameters
    ----------
    X : ndarray of shape (n_batches * batch_size, n_features)
        The rows, in the order they are fed.
    batch_size : int
        Rows per batch.
    mean, var, scale : ndarray of shape (n_features,)
        The fitted scaler's ``mean_``, ``var_``, ``scale_`` (``var`` and
        ``scale`` None without ``with_std``), updated in place.
    count : float
        The scaler's ``n_samples_seen_``.
    with_mean, with_std : bool
        The scaler's settings.
    out : ndarray of shape (n_batches * batch_size, n_features)
        The transformed rows.

    Returns
    -------
    count : float
        The scaler's ``n_samples_seen_`` after the last batch.
    """
    cdef Py_ssize_t d = X.shape[1]
    cdef Py_ssize_t n_batches = X.shape[0] // batch_size
    cdef Py_ssize_t b
    cdef double[::1] work
    if n_batches == 0:
        return count
    import numpy as np
    work = np.empty(4 * d + 1)
    with nogil:
        for b in range(n_batches):
            update_scaler(&X[b * batch_size, 0], batch_size, d, &mean[0],
                          &var[0] if with_std else NULL,
                          &scale[0] if with_std else NULL,
                          count, with_std, &work[0])
            count = count + <double>batch_size
            transform(&X[b * batch_size, 0], &out[b * batch_size, 0],
                      batch_size * d, d, &mean[0],
                      &scale[0] if with_std else NULL, with_mean, with_std)
    return count
