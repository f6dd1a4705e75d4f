"""The native TreeCV engine: one stack walker over any :class:`NativeModel`.

The walker runs Algorithm 1 of the TreeCV paper below a node of a fold plan
without the GIL. It knows nothing of the learner: a kernel (a subclass of
:class:`NativeModel`, declared in ``_tree.pxd``) feeds rows into a flat model
state and may score a leaf, and the walker copies states with ``memcpy``, as
scikit-learn's tree builder drives any ``Criterion``. The linear learners
(``_sgd.SGDModel``) and the anomaly detector (``_ssad.SSADModel``) are two such
kernels; ``sklearn_ext.model_selection.NativeTreeBackend`` drives them all.
"""

from libc.math cimport NAN
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

import numpy as np

from sklearn_ext._fast._random cimport node_seed, shuffle_intp


cdef inline double now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + 1e-9 * ts.tv_nsec


class NonFiniteState(ValueError):
    """A leaf's model state holds infinity or NaN: training overflowed float64.

    :func:`run_subtree` returns it (and stops) instead of scoring such a leaf.
    ``leaf`` is the leaf and ``state`` a copy of its state, from which the
    estimator can build a message of its own.
    """

    def __init__(self, leaf, state):
        super().__init__(
            f"The model of leaf {leaf} holds infinity or NaN: its training steps "
            "overflowed float64. Scale the input data, e.g. with StandardScaler "
            "or MinMaxScaler."
        )
        self.leaf = leaf
        self.state = state


cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    /* Whether no value is infinity or NaN (exponent bits all ones). Integer
       bit tests and no early exit, so that the compiler vectorizes the loop:
       the walker runs it at every leaf. */
    static inline int skx_all_finite(const double* values, Py_ssize_t n) {
        uint64_t bad = 0, bits;
        Py_ssize_t i;
        for (i = 0; i < n; i++) {
            memcpy(&bits, values + i, sizeof(bits));
            bad |= (bits & 0x7FF0000000000000ULL) + 0x0010000000000000ULL;
        }
        return (bad >> 63) == 0;
    }
    """
    bint all_finite "skx_all_finite"(const double* values, Py_ssize_t n) noexcept nogil


cdef class NativeModel:
    """A learner's kernel, as the native tree drives it.

    Subclasses set ``n_state`` (doubles per model state) and ``scores_leaves``
    in ``__init__``, override :meth:`new_state`, and implement the C methods
    ``feed`` (rows into a state, in place), ``score_work_size`` and ``score``
    (a state's score on held-out rows) declared in ``_tree.pxd``. All three
    run without the GIL, on data the kernel keeps alive itself.
    """

    def new_state(self):
        """A fresh model state: ``n_state`` doubles, no row fed."""
        raise NotImplementedError

    cdef void feed(
        self, double* state, const Py_ssize_t* rows, Py_ssize_t n_rows
    ) noexcept nogil:
        pass

    cdef Py_ssize_t score_work_size(self, Py_ssize_t n_rows) noexcept nogil:
        return 0

    cdef double score(
        self, const double* state, const Py_ssize_t* rows, Py_ssize_t n_rows,
        double* work,
    ) noexcept nogil:
        return NAN

    def feed_rows(self, double[::1] state, const Py_ssize_t[::1] rows):
        """Feed ``rows`` (in that order) to the model ``state``, in place.

        This is the kernel's one update: ``partial_fit`` and the native tree
        both go through it, so both produce bit-identical models.
        """
        _check_state(self, state)
        if rows.shape[0] == 0:
            return
        with nogil:
            self.feed(&state[0], &rows[0], rows.shape[0])

    def score_rows(self, const double[::1] state, const Py_ssize_t[::1] rows):
        """The leaf score of the model ``state`` on the held-out ``rows``."""
        _check_state(self, state)
        work = np.empty(max(1, self.score_work_size(rows.shape[0])))
        cdef double[::1] work_view = work
        cdef double value
        if not self.scores_leaves:
            raise ValueError(f"{type(self).__name__} does not score leaves natively.")
        with nogil:
            value = self.score(
                &state[0],
                &rows[0] if rows.shape[0] > 0 else NULL,
                rows.shape[0],
                &work_view[0],
            )
        return value


cdef _check_state(NativeModel model, const double[::1] state):
    if state.shape[0] != model.n_state:
        raise ValueError(
            f"A state of {type(model).__name__} has {model.n_state} values; got "
            f"{state.shape[0]}."
        )


cdef Py_ssize_t child_feed(
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


def feed_child(
    NativeModel model, double[::1] state,
    const Py_ssize_t[::1] sample_order, const Py_ssize_t[::1] bounds,
    Py_ssize_t p_start, Py_ssize_t p_end, Py_ssize_t start, Py_ssize_t end,
    bint randomized, uint64_t seed,
):
    """Turn the model of node ``(p_start, p_end)`` into that of its child, in place.

    The child ``(start, end)`` is fed the rows of its sibling's chunks, in the
    order :func:`run_subtree` feeds them. Returns the number of rows fed.
    """
    cdef Py_ssize_t mid = (p_start + p_end) // 2, n
    cdef const Py_ssize_t* rows
    _check_state(model, state)
    if not (p_start <= start <= end <= p_end) or (start, end) not in (
        (p_start, mid),
        (mid + 1, p_end),
    ):
        raise ValueError(
            f"({start}, {end}) is not a child of the node ({p_start}, {p_end})."
        )
    buf_arr = np.empty(
        max(1, bounds[p_end + 1] - bounds[p_start]) if randomized else 1,
        dtype=np.intp,
    )
    cdef Py_ssize_t[::1] buf = buf_arr
    with nogil:
        n = child_feed(
            &sample_order[0], &bounds[0], p_start, p_end, start, end, randomized,
            seed, &buf[0], &rows,
        )
        if n > 0:
            model.feed(&state[0], rows, n)
    return n


def run_subtree(
    NativeModel model,
    double[::1] root_state,
    const Py_ssize_t[::1] sample_order,
    const Py_ssize_t[::1] bounds,
    Py_ssize_t start,
    Py_ssize_t end,
    bint randomized,
    uint64_t seed,
    double[::1] scores,
    int64_t[::1] n_fed,
    double[::1] fit_time,
    double[::1] score_time,
    int[::1] stop,
    leaf_callback=None,
    int64_t carried_fed=0,
    double carried_time=0.0,
):
    """Run TreeCV below node ``(start, end)`` of a fold plan, without the GIL.

    The plan is given by its ``sample_order`` and chunk ``bounds`` (leaf ``i``
    holds out ``sample_order[bounds[i]:bounds[i + 1]]``); rows are fed in fixed
    order or, with ``randomized``, shuffled by each node's splitmix64 stream of
    ``seed``, exactly as ``FoldPlan.feed``. The recursion is depth first with
    an explicit stack of states, one per tree level: the left child trains on a
    copy of its parent, the right child reuses the parent's buffer.
    ``root_state`` is the model at ``(start, end)``; it is modified in place.

    The contract, the same for every kernel: when leaf ``i`` is reached, the
    walker writes ``n_fed[i]`` (rows fed since the previous leaf of this call;
    the first leaf also counts ``carried_fed`` rows fed above ``(start, end)``),
    ``fit_time[i]`` (likewise, with ``carried_time``), and, when the model
    ``scores_leaves``, ``scores[i]`` and ``score_time[i]``. Then, if given,
    ``leaf_callback(i, state)`` is called with the GIL (``state`` a view that
    is reused: copy it to keep it). If the callback raises, ``stop[0]`` is set
    and the exception is returned (not raised); every call sharing ``stop``
    ends at its next node, and none calls its callback once ``stop[0]`` is set.
    A leaf whose state holds infinity or NaN is neither scored nor reported:
    the walk stops the same way and returns a :class:`NonFiniteState`.
    Returns None when the subtree ran to the end.
    """
    cdef Py_ssize_t L = model.n_state
    cdef Py_ssize_t k_sub = end - start + 1, depth = 1, n, max_rows = 0, f
    _check_state(model, root_state)
    if not (0 <= start <= end < bounds.shape[0] - 1):
        raise ValueError(f"({start}, {end}) is not a node of the fold plan.")
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
    work_arr = np.empty(
        max(1, model.score_work_size(max_rows)) if model.scores_leaves else 1
    )
    cdef double[::1] work = work_arr
    # Frames: (start, end, buffer, phase); phase 0 = enter, 1 = feed right child.
    frames_arr = np.empty((2 * depth + 4, 4), dtype=np.intp)
    cdef Py_ssize_t[:, ::1] frames = frames_arr
    cdef Py_ssize_t top = 0, s, e, b, phase, mid
    cdef const Py_ssize_t* rows
    cdef const Py_ssize_t* order = &sample_order[0]
    cdef const Py_ssize_t* bnd = &bounds[0]
    cdef int64_t fed = carried_fed
    cdef double tic, train = carried_time
    cdef bint call = leaf_callback is not None, native_score = model.scores_leaves
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
                n = child_feed(
                    order, bnd, s, e, mid + 1, e, randomized, seed, &feed_buf[0], &rows
                )
                if n > 0:
                    model.feed(&levels[b, 0], rows, n)
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
                if not all_finite(&levels[b, 0], L):
                    with gil:
                        if stop[0] == 0:
                            error = NonFiniteState(s, levels_arr[b].copy())
                            stop[0] = 1
                    continue
                if native_score:
                    tic = now()
                    scores[s] = model.score(
                        &levels[b, 0], order + bnd[s], bnd[s + 1] - bnd[s], &work[0]
                    )
                    score_time[s] = now() - tic
                if call:
                    with gil:
                        # Another call may have stopped the run while this one
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
            n = child_feed(order, bnd, s, e, s, mid, randomized, seed, &feed_buf[0], &rows)
            if n > 0:
                model.feed(&levels[b + 1, 0], rows, n)
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
