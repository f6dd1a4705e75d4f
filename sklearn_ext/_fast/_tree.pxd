# The interface between the native TreeCV engine (the stack walker of _tree.pyx)
# and a native learner's kernel, as scikit-learn's tree builder drives any Criterion.
#
# A model state is one flat array of ``n_state`` doubles: the walker copies a node's
# model with one memcpy and never looks inside it. A kernel subclasses NativeModel,
# holds its training data (pointers into arrays it keeps alive) and implements the
# three nogil methods below.

cdef class NativeModel:
    # Doubles per model state.
    cdef readonly Py_ssize_t n_state
    # Whether score() computes the leaf's score (else the engine's caller scores
    # the leaf in Python, from the state handed to its callback).
    cdef readonly bint scores_leaves
    # Keeps the arrays that the kernel's pointers read alive.
    cdef object _arrays

    # Feed rows[0 .. n_rows) (in that order) to the model in state, in place.
    cdef void feed(
        self, double* state, const Py_ssize_t* rows, Py_ssize_t n_rows
    ) noexcept nogil
    # Doubles of scratch that score() needs for a leaf of n_rows rows.
    cdef Py_ssize_t score_work_size(self, Py_ssize_t n_rows) noexcept nogil
    # The score of the model in state on the held-out rows[0 .. n_rows).
    cdef double score(
        self, const double* state, const Py_ssize_t* rows, Py_ssize_t n_rows,
        double* work,
    ) noexcept nogil
