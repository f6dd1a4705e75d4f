"""Seeded Fisher-Yates shuffles keyed by tree node (splitmix64 generator)."""

from libc.stdint cimport int64_t, uint64_t

import numpy as np


cdef uint64_t splitmix64_next(uint64_t* state) noexcept nogil:
    cdef uint64_t z
    state[0] += <uint64_t>0x9E3779B97F4A7C15
    z = state[0]
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    return z ^ (z >> 31)


cdef uint64_t node_seed(uint64_t seed, int64_t start, int64_t end) noexcept nogil:
    # Mix the plan seed with the node's chunk range so every node has its own stream.
    cdef uint64_t state = seed ^ (<uint64_t>start * <uint64_t>0xD1B54A32D192ED03)
    splitmix64_next(&state)
    state ^= <uint64_t>end * <uint64_t>0x8CB92BA72F3D8DD7
    return splitmix64_next(&state)


cdef void shuffle_intp(Py_ssize_t* values, Py_ssize_t n, uint64_t seed) noexcept nogil:
    cdef uint64_t state = seed
    cdef Py_ssize_t i, j, tmp
    for i in range(n - 1, 0, -1):
        j = <Py_ssize_t>(splitmix64_next(&state) % <uint64_t>(i + 1))
        tmp = values[i]
        values[i] = values[j]
        values[j] = tmp


def shuffle_node_feed(Py_ssize_t[::1] values, uint64_t seed, int64_t start, int64_t end):
    """Shuffle ``values`` in place with the stream of tree node ``(start, end)``.

    Parameters
    ----------
    values : ndarray of dtype intp, C-contiguous
        Row indices fed to the node; permuted in place.
    seed : int
        The fold plan's 64-bit seed.
    start, end : int
        First and last chunk index held out at the node.
    """
    cdef Py_ssize_t n = values.shape[0]
    if n > 1:
        with nogil:
            shuffle_intp(&values[0], n, node_seed(seed, start, end))


def splitmix64(uint64_t seed, Py_ssize_t n):
    """Return ``n`` successive splitmix64 outputs from ``seed`` as uint64 (for tests)."""
    cdef uint64_t state = seed
    out = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] view = out
    cdef Py_ssize_t i
    for i in range(n):
        view[i] = splitmix64_next(&state)
    return out
