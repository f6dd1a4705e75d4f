"""Alpha seeding: start fold ``h + 1``'s SMO from fold ``h``'s solution.

Wen, Li, Ramamohanarao, Chen, Chen and Zhang (AAAI 2017). Going from fold
``h`` to fold ``h + 1`` the training set loses ``R`` (the next test chunk) and
gains ``T`` (the previous test chunk); ``S`` is shared. Every strategy builds
an ``alpha`` for ``S + T`` that satisfies ``0 <= alpha <= C`` and
``y'alpha = 0``; the gradient of ``S`` is then updated in place from the
columns of the points whose alpha changed, the gradient of ``T`` from their
own columns, and SMO runs to ``tol``.
"""

from __future__ import annotations

import numpy as np

from sklearn_ext._fast._smo import (
    gradient_from_alpha,
    seed_gradient,
    sir_alphas,
    split_rows,
)
from sklearn_ext.svm._solver import PairProblem, repair_equality
from sklearn_ext.utils._memory import check_allocation
from sklearn_ext.utils._threads import blas_limits

__all__ = ["SEEDINGS", "seed_pair"]

SEEDINGS = ("sir", "mir", "ato", "keep", "none")

#: Steps of the bounded ATO path before the rest is left to SMO.
ATO_MAX_STEPS = 8

#: MIR's and ATO's dense kernel blocks from this size on are checked against
#: the process's memory before they are built (smaller ones cost nothing).
CHECKED_BLOCK_BYTES = 2**26


def seed_pair(
    store, previous: PairProblem, idx, y, C, *, seeding, rng, kernel_changed=False
):
    """A feasible starting problem on rows ``idx`` from the solved ``previous``.

    Parameters
    ----------
    store : KernelStore
        The shared kernel store.
    previous : PairProblem
        The solved problem of the previous fold (same pair of classes).
    idx : ndarray of intp
        Global training rows of the new problem.
    y, C : ndarray of float64
        Labels (+-1) and bounds of ``idx``.
    seeding : {"sir", "mir", "ato", "keep", "none"}
        The strategy.
    rng : numpy.random.Generator
        Source of SIR's random replacements.
    kernel_changed : bool, default=False
        Whether ``store`` holds another kernel than ``previous`` was solved
        on (a per-fold scaler: each fold its own kernel). The alphas are
        chosen as usual (the previous fold's stay a good seed) but the
        gradient is computed afresh from the new kernel's support-vector
        columns, since the previous gradient belongs to the previous kernel.

    Returns
    -------
    problem : PairProblem
        With ``alpha`` and its exact gradient ``G`` set.
    """
    if seeding == "none":
        return PairProblem(
            previous.first,
            previous.second,
            idx,
            y,
            C,
            np.zeros(idx.shape[0]),
            np.full(idx.shape[0], -1.0),
        )
    prev_idx = np.ascontiguousarray(previous.idx, dtype=np.intp)
    idx = np.ascontiguousarray(idx, dtype=np.intp)
    s_new, s_prev, t_new, r_prev = split_rows(store.n_samples, prev_idx, idx)
    C_t = C[t_new]
    alpha_s, alpha_t = _moved_alphas(
        store,
        previous,
        idx[s_new],
        idx[t_new],
        prev_idx[r_prev],
        s_prev,
        r_prev,
        y[s_new],
        y[t_new],
        C[s_new],
        C_t,
        seeding=seeding,
        rng=rng,
    )
    alpha = np.empty(idx.shape[0])
    alpha[s_new] = alpha_s
    alpha[t_new] = np.clip(alpha_t, 0.0, C_t)
    added = np.zeros(idx.shape[0], dtype=bool)
    added[t_new] = True
    repair_equality(alpha, y, C, prefer=added)
    if kernel_changed:
        G = gradient_from_alpha(
            store.columns, idx, np.ascontiguousarray(y, dtype=np.float64), alpha
        )
        return PairProblem(previous.first, previous.second, idx, y, C, alpha, G)
    # Gradient of S: previous gradient plus the columns of every changed
    # point; of T: from scratch over the support vectors (no GIL, no block).
    G = seed_gradient(
        store.columns,
        idx,
        y,
        alpha,
        s_new,
        s_prev,
        t_new,
        r_prev,
        prev_idx,
        np.ascontiguousarray(previous.y, dtype=np.float64),
        np.ascontiguousarray(previous.alpha, dtype=np.float64),
        np.ascontiguousarray(previous.G, dtype=np.float64),
    )
    return PairProblem(previous.first, previous.second, idx, y, C, alpha, G)


def _moved_alphas(
    store,
    previous,
    s_rows,
    t_rows,
    r_rows,
    s_prev,
    r_prev,
    y_s,
    y_t,
    C_s,
    C_t,
    *,
    seeding,
    rng,
):
    """``alpha_S`` and ``alpha_T`` of the new fold by ``seeding`` (not "none").

    ``S`` are the shared rows (positions ``s_prev`` in ``previous``), ``T`` the
    added ones, ``R`` the removed ones (positions ``r_prev``).
    """
    alpha_prev_s = previous.alpha[s_prev]
    alpha_r = previous.alpha[r_prev]
    y_r = previous.y[r_prev]
    if seeding in ("mir", "ato"):
        # The shared rows' kernel with the added and the removed rows (and
        # MIR's system over them) are dense: 8 |S| (2 |T| + |R|) bytes.
        n_bytes = 8.0 * s_rows.shape[0] * (2 * t_rows.shape[0] + r_rows.shape[0])
        if n_bytes >= CHECKED_BLOCK_BYTES:
            check_allocation(
                n_bytes,
                f"{seeding.upper()} seeding of {s_rows.shape[0]} shared rows "
                f"with {t_rows.shape[0]} added ones",
                f"Pass seeding='sir' (the default; got seeding={seeding!r}), "
                "which needs no dense block, or use more folds.",
            )
    if seeding == "ato":
        # Small dense solves: BLAS threads cost more than they give here.
        with blas_limits(1):
            return _ato(
                store,
                s_rows,
                t_rows,
                r_rows,
                y_s,
                y_t,
                y_r,
                C_s,
                C_t,
                alpha_prev_s,
                alpha_r,
                y_s * previous.G[s_prev],  # the paper's indicators f = y * G
                previous.rho,
            )
    if seeding == "keep":
        return alpha_prev_s, np.zeros(t_rows.shape[0])
    if seeding == "sir":
        return alpha_prev_s, _sir(store, t_rows, r_rows, y_t, y_r, alpha_r, C_t, rng)
    f_s = y_s * previous.G[s_prev]  # "mir": the paper's indicators
    with blas_limits(1):
        alpha_t = _mir(
            store,
            s_rows,
            t_rows,
            r_rows,
            y_s,
            y_t,
            y_r,
            alpha_prev_s,
            alpha_r,
            C_s,
            C_t,
            f_s,
            previous.rho,
        )
    return alpha_prev_s, alpha_t


def _sir(store, t_rows, r_rows, y_t, y_r, alpha_r, C_t, rng):
    """Single instance replacement, as published: the removed support vectors,
    one after another (largest alpha first), each hand their alpha to the most
    kernel-similar added point of the same label that has not replaced another
    one yet; when none is left, to a random added point not used yet (then to
    any added point), and the equality is repaired afterwards. The loop runs in
    Cython without the GIL (:func:`~sklearn_ext._fast._smo.sir_alphas`)."""
    return sir_alphas(
        store.columns,
        np.ascontiguousarray(t_rows, dtype=np.intp),
        np.ascontiguousarray(r_rows, dtype=np.intp),
        np.ascontiguousarray(y_t, dtype=np.float64),
        np.ascontiguousarray(y_r, dtype=np.float64),
        np.ascontiguousarray(alpha_r, dtype=np.float64),
        np.ascontiguousarray(C_t, dtype=np.float64),
        rng,
    )


def _mir(
    store, s_rows, t_rows, r_rows, y_s, y_t, y_r, alpha_s, alpha_r, C_s, C_t, f_s, b
):
    """Multiple instance replacement, as published (equations 17 and 18).

    The unknowns are ``u = y_T * alpha_T``; over the shared points,
    ``K_ST u = Delta f + K_SR (y_R * alpha_R)`` asks the free points to keep
    their optimality indicator (``Delta f_i = 0``) and the bounded ones to
    reach the margin (``f_i + Delta f_i = b``), and ``sum(u) = y_R'alpha_R``
    keeps the equality. Solved by least squares; ``alpha_T`` is then clipped
    to the box (the caller repairs the equality over ``T`` first).
    """
    n_t = t_rows.shape[0]
    if n_t == 0 or not np.any(alpha_r > 0):
        return np.zeros(n_t)
    free = (alpha_s > 0) & (alpha_s < C_s)
    delta_f = np.where(free, 0.0, b - f_s)
    sv_r = alpha_r > 0
    u_r = y_r[sv_r] * alpha_r[sv_r]
    A = np.empty((s_rows.shape[0] + 1, n_t))
    A[:-1] = store.block(s_rows, t_rows)
    A[-1] = 1.0
    rhs = np.empty(s_rows.shape[0] + 1)
    rhs[:-1] = delta_f + store.block(s_rows, r_rows[sv_r]) @ u_r
    rhs[-1] = u_r.sum()
    return np.clip(y_t * _least_squares(A, rhs), 0.0, C_t)


def _least_squares(A, b):
    """``argmin |Ax - b|`` by the normal equations with a tiny ridge.

    Cheaper than an SVD-based ``lstsq``; the ridge stands in for the paper's
    pseudo-inverse when ``A'A`` is singular.
    """
    AtA = A.T @ A
    ridge = 1e-8 * max(float(np.trace(AtA)) / max(A.shape[1], 1), 1e-12)
    AtA[np.diag_indices_from(AtA)] += ridge
    try:
        return np.linalg.solve(AtA, A.T @ b)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(A, b, rcond=None)[0]


def _ato(
    store,
    s_rows,
    t_rows,
    r_rows,
    y_s,
    y_t,
    y_r,
    C_s,
    C_t,
    alpha_prev_s,
    alpha_prev_r,
    f_s,
    b,
):
    """Adjusting towards the optimum, bounded to :data:`ATO_MAX_STEPS` steps.

    Each step raises ``alpha_T`` towards ``C`` and lowers ``alpha_R`` towards
    0 by the same fraction ``eta`` while the free shared alphas move so that
    they stay on the margin and the equality holds (equation 10); ``eta`` is the
    largest step keeping the free alphas in their box and no bounded shared
    point crossing the margin (equation 11). After the last step the remaining
    ``alpha_R`` is dropped and the equality repaired; SMO does the rest.
    """
    alpha_s = alpha_prev_s.copy()
    alpha_r = alpha_prev_r.copy()
    alpha_t = np.zeros(t_rows.shape[0])
    if t_rows.shape[0] == 0 and r_rows.shape[0] == 0:
        return alpha_s, alpha_t
    K_st = store.block(s_rows, t_rows)
    K_sr = store.block(s_rows, r_rows)
    for _ in range(ATO_MAX_STEPS):
        if not np.any(alpha_r > 0):
            break
        free = np.flatnonzero((alpha_s > 0) & (alpha_s < C_s))
        d_t = C_t - alpha_t
        d_r = -alpha_r
        # y * Delta f over S per unit eta from the T and R moves.
        push = K_st @ (y_t * d_t) + K_sr @ (y_r * d_r)
        if free.shape[0]:
            K_mm = store.block(s_rows[free], s_rows[free])
            lhs = np.empty((free.shape[0] + 1, free.shape[0]))
            lhs[0] = y_s[free]
            lhs[1:] = K_mm * y_s[free][None, :]
            rhs = np.empty(free.shape[0] + 1)
            rhs[0] = y_t @ d_t + y_r @ d_r
            rhs[1:] = push[free]
            d_m = -_least_squares(lhs, rhs)
            K_sm = store.block(s_rows, s_rows[free])
            push = push + K_sm @ (y_s[free] * d_m)
        else:
            d_m = np.zeros(0)
        df = push  # Delta f_i / eta = y_i * y_i * push_i = push_i
        eta = 1.0
        if free.shape[0]:
            a_m = alpha_s[free]
            with np.errstate(divide="ignore", invalid="ignore"):
                up = np.where(d_m > 0, (C_s[free] - a_m) / d_m, np.inf)
                down = np.where(d_m < 0, -a_m / d_m, np.inf)
            eta = min(eta, float(np.min(up)), float(np.min(down)))
        bounded = np.ones(s_rows.shape[0], dtype=bool)
        bounded[free] = False
        gap = b - f_s
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = np.where(bounded & (df * gap > 0), gap / df, np.inf)
        eta = max(min(eta, float(np.min(cross, initial=np.inf))), 0.0)
        if eta <= 1e-12:
            break
        alpha_t += eta * d_t
        alpha_r += eta * d_r
        if free.shape[0]:
            alpha_s[free] = np.clip(alpha_s[free] + eta * d_m, 0.0, C_s[free])
        f_s = f_s + eta * df
    return alpha_s, alpha_t
