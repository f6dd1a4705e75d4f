"""Shrinking in the SMO solver: when it shrinks, and that the result stays exact.

``smo_solve`` applies LIBSVM's shrinking rule every ``min(l, 1000)``
iterations and whenever the gap has fallen tenfold since the first iteration or
the last shrinking; a shrunk variable's gradient is brought up to date from
the alphas changed since its shrinking (or recomputed from the support
vectors when that is cheaper, or when more shrinkings came than snapshots are
kept).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from sklearn.metrics.pairwise import rbf_kernel

from sklearn_ext._fast._smo import KernelColumns, smo_solve


def _problem(seed, n, gamma):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = np.where(X[:, 0] + 0.7 * rng.normal(size=n) > 0, 1.0, -1.0)
    K = rbf_kernel(X, gamma=gamma)
    return K, y


def _solve(
    K, y, C, alpha, *, tol, max_iter=-1, shrinking=True, symmetric=True, idx=None
):
    """SMO on the variables ``idx`` (default: all) of the store over ``K``."""
    idx = np.arange(len(y), dtype=np.intp) if idx is None else idx
    y = y[idx]
    alpha = np.array(alpha, dtype=np.float64)
    G = y * (K[np.ix_(idx, idx)] @ (y * alpha)) - 1.0
    store = KernelColumns(K.shape[0], dense=K, symmetric=symmetric)
    n_iter, rho, converged, n_shrunk = smo_solve(
        store,
        idx,
        y,
        np.full(len(idx), C),
        np.ascontiguousarray(np.diag(K)[idx]),
        alpha,
        G,
        tol,
        max_iter,
        shrinking,
    )
    return alpha, G, n_iter, converged, n_shrunk


def _objective(K, y, alpha):
    v = y * alpha
    return 0.5 * v @ K @ v - alpha.sum()


def _feasible_start(rng, y, C):
    """Random alphas in the box with ``y'alpha = 0`` (the larger side scaled)."""
    alpha = rng.uniform(0, C, size=len(y))
    pos, neg = alpha[y > 0].sum(), alpha[y < 0].sum()
    if pos > neg:
        alpha[y > 0] *= neg / pos
    else:
        alpha[y < 0] *= pos / neg
    return alpha


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(20, 120),
    C=st.floats(0.05, 50.0),
    gamma=st.floats(0.05, 2.0),
    warm=st.booleans(),
    max_iter=st.sampled_from([-1, 5, 40, 300]),
    symmetric=st.booleans(),
)
def test_gradient_is_exact_at_exit(seed, n, C, gamma, warm, max_iter, symmetric):
    # tol=1e-10 makes the gap fall tenfold many times: more shrinkings than
    # snapshots are kept, so every reconstruction path runs; stopping at
    # max_iter returns from the middle of a shrunk solve.
    K, y = _problem(seed, n, gamma)
    rng = np.random.default_rng(seed + 1)
    start = _feasible_start(rng, y, C) if warm else np.zeros(n)
    alpha, G, _, _, _ = _solve(
        K, y, C, start, tol=1e-10, max_iter=max_iter, symmetric=symmetric
    )
    assert_allclose(G, y * (K @ (y * alpha)) - 1.0, atol=1e-9 * max(C, 1) * n)


@pytest.mark.parametrize("seed", range(4))
def test_shrinking_reaches_the_same_optimum(seed):
    K, y = _problem(seed, 150, 0.5)
    rng = np.random.default_rng(seed)
    start = _feasible_start(rng, y, 3.0)
    plain, *_ = _solve(K, y, 3.0, start, tol=1e-6, shrinking=False)
    shrunk, _, _, converged, n_shrunk = _solve(K, y, 3.0, start, tol=1e-6)
    assert converged and n_shrunk > 0
    assert_allclose(_objective(K, y, shrunk), _objective(K, y, plain), rtol=1e-8)


def test_a_swapped_fold_is_shrunk_before_a_thousand_iterations():
    # Fold h trains on every row but A, fold h + 1 on every row but B (rows
    # with alpha 0 in fold h, so fold h's alphas with A's at 0 are feasible).
    # A's rows start far from their conditions: LIBSVM's rule, whose bounds
    # are the extreme indicators, shrinks little then. Once SMO has moved
    # them, the gap has fallen tenfold and the rule sets aside most bounded
    # variables, all within the few hundred iterations of the fold (LIBSVM
    # first shrinks after 1000).
    K, y = _problem(0, 1500, 0.5)
    n = len(y)
    rows = np.arange(n, dtype=np.intp)
    first = rows[30:]  # every row but A = rows[:30]
    alpha_h, *_ = _solve(K, y, 1.0, np.zeros(len(first)), tol=1e-3, idx=first)
    B = first[alpha_h == 0][:30]
    second = np.setdiff1d(rows, B)
    start = np.zeros(n)
    start[first] = alpha_h
    start = start[second]
    warm, _, n_iter, converged, n_shrunk = _solve(
        K, y, 1.0, start, tol=1e-3, idx=second
    )
    assert converged and n_iter < 1000
    bounded = np.sum((warm <= 0) | (warm >= 1.0))
    assert n_shrunk >= 0.5 * bounded
    plain, *_ = _solve(K, y, 1.0, start, tol=1e-3, idx=second, shrinking=False)
    Ks = K[np.ix_(second, second)]
    ys = y[second]
    # Both within tol of the optimum: objectives agree to that order.
    assert_allclose(_objective(Ks, ys, warm), _objective(Ks, ys, plain), rtol=1e-4)


def _libsvm_steps(K, y, C, alpha, tol):
    """LIBSVM's ``Solver::Solve`` without shrinking, in NumPy: the reference.

    WSS 3 over all variables in index order, a later index winning ties
    (LIBSVM's ``>=`` and ``<=``), and the two-variable update with its
    clipping, transcribed from ``svm.cpp``.
    """
    alpha = np.array(alpha, dtype=np.float64)
    n = len(y)
    d = np.diag(K).copy()
    G = y * (K @ (y * alpha)) - 1.0
    last = np.arange(n)[::-1]
    n_iter = 0
    while True:
        up = np.where(y > 0, alpha < C, alpha > 0)
        low = np.where(y > 0, alpha > 0, alpha < C)
        mgy = -y * G
        cand = np.where(up, mgy, -np.inf)
        i = last[np.argmax(cand[::-1])]
        gmax = cand[i]
        gmax2 = np.max(np.where(low, -mgy, -np.inf))
        grad_diff = gmax - mgy
        quad = d[i] + d - 2.0 * K[i]
        quad[quad <= 0] = 1e-12
        ok = low & (grad_diff > 0)
        obj = np.where(ok, -(grad_diff * grad_diff) / quad, np.inf)
        j = last[np.argmin(obj[::-1])]
        if not np.isfinite(gmax) or not ok.any() or gmax + gmax2 < tol:
            return alpha, n_iter
        n_iter += 1
        ai, aj = alpha[i], alpha[j]
        quad = max(d[i] + d[j] - 2.0 * K[i, j], 1e-12)
        if y[i] != y[j]:
            delta = (-G[i] - G[j]) / quad
            diff = ai - aj
            alpha[i] += delta
            alpha[j] += delta
            if diff > 0 and alpha[j] < 0:
                alpha[j], alpha[i] = 0.0, diff
            elif diff <= 0 and alpha[i] < 0:
                alpha[i], alpha[j] = 0.0, -diff
            if diff > 0 and alpha[i] > C:
                alpha[i], alpha[j] = C, C - diff
            elif diff <= 0 and alpha[j] > C:
                alpha[j], alpha[i] = C, C + diff
        else:
            delta = (G[i] - G[j]) / quad
            total = ai + aj
            alpha[i] -= delta
            alpha[j] += delta
            if total > C and alpha[i] > C:
                alpha[i], alpha[j] = C, total - C
            elif total <= C and alpha[j] < 0:
                alpha[j], alpha[i] = 0.0, total
            if total > C and alpha[j] > C:
                alpha[j], alpha[i] = C, total - C
            elif total <= C and alpha[i] < 0:
                alpha[i], alpha[j] = 0.0, total
        dai, daj = (alpha[i] - ai) * y[i], (alpha[j] - aj) * y[j]
        G += y * (dai * K[i] + daj * K[j])


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("warm", [False, True])
def test_smo_takes_libsvms_steps(seed, warm):
    # The solver's loops hold their variables in arrays of their own (the
    # active ones contiguous, the gradient as -y G): they must still take
    # LIBSVM's steps, one for one, on variables given by an index list.
    K, y = _problem(seed, 90, 0.5)
    C = 3.0
    rng = np.random.default_rng(seed)
    start = _feasible_start(rng, y, C) if warm else np.zeros(len(y))
    want, want_iter = _libsvm_steps(K, y, C, start, 1e-3)
    got, _, n_iter, converged, _ = _solve(K, y, C, start, tol=1e-3, shrinking=False)
    assert converged
    assert n_iter == want_iter > 20
    assert_allclose(got, want, rtol=0, atol=1e-12)
    # Variables drawn from a larger store, out of order: the same steps.
    perm = rng.permutation(len(y)).astype(np.intp)
    got, _, n_iter, _, _ = _solve(
        K, y, C, start[perm], tol=1e-3, shrinking=False, idx=perm
    )
    want, want_iter = _libsvm_steps(
        K[np.ix_(perm, perm)], y[perm], C, start[perm], 1e-3
    )
    assert n_iter == want_iter
    assert_allclose(got, want, rtol=0, atol=1e-12)
