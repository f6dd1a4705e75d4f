# The running per-feature scalers of the streaming regime, in scikit-learn's own
# floating-point operations: StandardScaler.partial_fit (_incremental_mean_and_var,
# _is_constant_feature, _handle_zeros_in_scale), MinMaxScaler.partial_fit and
# MaxAbsScaler.partial_fit on dense float64 rows without NaN, and their transform.
# Inline, so that every kernel that cimports them compiles them with its own flags:
# such a module must turn floating-point contraction off (-ffp-contract=off), as
# scikit-learn's numpy operations round every product.
#
# Rows are read as X + i * d (index NULL: contiguous rows) or X + index[i] * d,
# where index holds row numbers as doubles (a native tree state keeps them so).

from libc.math cimport fabs, sqrt

cdef enum:
    SCALER_STANDARD = 0
    SCALER_MINMAX = 1
    SCALER_MAXABS = 2


cdef inline const double* scaler_row(
    const double* X, const double* index, Py_ssize_t i, Py_ssize_t d
) noexcept nogil:
    if index == NULL:
        return X + i * d
    return X + (<Py_ssize_t>index[i]) * d


cdef inline double zeros_to_one(double value) noexcept nogil:
    # _handle_zeros_in_scale: scales below 10 * eps (float64) become 1.
    if value < 10.0 * 2.220446049250313e-16:
        return 1.0
    return value


cdef inline void standard_update(
    const double* X, const double* index, Py_ssize_t n, Py_ssize_t d,
    double* mean, double* var, double* scale, double last_count, bint with_std,
    double* work,
) noexcept nogil:
    """``StandardScaler.partial_fit`` of ``n`` rows (unit weights); work: 4 d."""
    cdef Py_ssize_t i, j
    cdef double new_count = <double>n
    cdef double updated = last_count + new_count
    cdef double last_sum, new_sum, correction, new_var, last_over_new, diff
    cdef double eps = 2.220446049250313e-16
    cdef double* sums = work
    cdef double* corrections = work + d
    cdef double* squares = work + 2 * d
    cdef double* means = work + 3 * d
    cdef const double* row
    for j in range(d):
        sums[j] = 0.0
        corrections[j] = 0.0
        squares[j] = 0.0
    for i in range(n):  # np.sum(X, axis=0): row after row
        row = scaler_row(X, index, i, d)
        for j in range(d):
            sums[j] += row[j]
    if with_std:
        for j in range(d):
            means[j] = sums[j] / new_count
        for i in range(n):
            row = scaler_row(X, index, i, d)
            for j in range(d):
                diff = row[j] - means[j]
                corrections[j] += diff
                squares[j] += diff * diff
    last_over_new = last_count / new_count
    for j in range(d):
        last_sum = mean[j] * last_count
        new_sum = sums[j]
        mean[j] = (last_sum + new_sum) / updated
        if not with_std:
            continue
        correction = corrections[j]
        new_var = squares[j] - correction * correction / new_count
        if last_count == 0.0:
            var[j] = new_var / updated  # the first batch: its own variance
        else:
            diff = last_sum / last_over_new - new_sum
            var[j] = (
                var[j] * last_count + new_var
                + last_over_new / updated * (diff * diff)
            ) / updated
        # _is_constant_feature, then _handle_zeros_in_scale.
        diff = updated * mean[j] * eps
        if var[j] <= updated * eps * var[j] + diff * diff:
            scale[j] = 1.0
        else:
            scale[j] = sqrt(var[j])


cdef inline void range_update(
    const double* X, const double* index, Py_ssize_t n, Py_ssize_t d, int kind,
    double* low_seen, double* high_seen, double* scale, double* offset,
    double low, double high,
) noexcept nogil:
    """``MinMaxScaler`` / ``MaxAbsScaler.partial_fit`` of ``n`` rows.

    MinMax: ``low_seen``/``high_seen`` are ``data_min_``/``data_max_`` (start
    them at +inf/-inf), ``scale``/``offset`` its ``scale_``/``min_``. MaxAbs:
    ``high_seen`` is ``max_abs_`` (start at 0), ``scale`` its ``scale_``.
    """
    cdef Py_ssize_t i, j
    cdef const double* row
    cdef double value
    for i in range(n):
        row = scaler_row(X, index, i, d)
        for j in range(d):
            if kind == SCALER_MAXABS:
                value = fabs(row[j])
                if value > high_seen[j]:
                    high_seen[j] = value
            else:
                if row[j] < low_seen[j]:
                    low_seen[j] = row[j]
                if row[j] > high_seen[j]:
                    high_seen[j] = row[j]
    for j in range(d):
        if kind == SCALER_MAXABS:
            scale[j] = zeros_to_one(high_seen[j])
        else:
            scale[j] = (high - low) / zeros_to_one(high_seen[j] - low_seen[j])
            offset[j] = low - low_seen[j] * scale[j]


cdef inline void scaler_transform(
    const double* x, double* out, Py_ssize_t d, int kind,
    const double* center, const double* scale, bint with_mean, bint with_std,
    bint clip, double low, double high,
) noexcept nogil:
    """One row through the scaler's ``transform``.

    Standard: ``X -= mean_`` then ``X /= scale_`` (``center`` is ``mean_``).
    MinMax: ``X *= scale_``, ``X += min_`` (``center``), then the clip. MaxAbs:
    ``X /= scale_``, then the clip to [-1, 1].
    """
    cdef Py_ssize_t j
    cdef double value
    if kind == SCALER_STANDARD:
        if with_mean and with_std:
            for j in range(d):
                out[j] = (x[j] - center[j]) / scale[j]
        elif with_mean:
            for j in range(d):
                out[j] = x[j] - center[j]
        else:
            for j in range(d):
                out[j] = x[j] / scale[j]
        return
    if kind == SCALER_MAXABS:
        low, high = -1.0, 1.0
        for j in range(d):
            out[j] = x[j] / scale[j]
    else:
        for j in range(d):
            value = x[j] * scale[j]
            out[j] = value + center[j]
    if clip:
        for j in range(d):
            if out[j] < low:
                out[j] = low
            elif out[j] > high:
                out[j] = high
