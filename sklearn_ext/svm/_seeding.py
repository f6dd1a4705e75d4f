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

from sklearn_ext._fast._smo import update_gradient
from sklearn_ext.svm._solver import PairProblem, repair_equality
from sklearn_ext.utils._threads import blas_limits

__all__ = ["SEEDINGS", "seed_pair"]

SEEDINGS = ("sir", "mir", "ato", "keep", "none")

#: Steps of the bounded ATO path before the rest is left to SMO.
ATO_MAX_STEPS = 8


def seed_pair(store, previous: PairProblem, idx, y, C, *, seeding, rng):
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
    n = store.n_samples
    pos_prev = np.full(n, -1, dtype=np.intp)
    pos_prev[previous.idx] = np.arange(previous.idx.shape[0])
    pos_new = np.full(n, -1, dtype=np.intp)
    pos_new[idx] = np.arange(idx.shape[0])
    in_s = pos_prev[idx] >= 0  # over the new rows: shared (S) or added (T)
    s_rows, t_rows = idx[in_s], idx[~in_s]
    r_rows = previous.idx[pos_new[previous.idx] < 0]

    alpha_prev_s = previous.alpha[pos_prev[s_rows]]
    alpha_r = previous.alpha[pos_prev[r_rows]]
    y_s, y_t, y_r = y[in_s], y[~in_s], previous.y[pos_prev[r_rows]]
    C_s, C_t = C[in_s], C[~in_s]

    if seeding == "ato":
        # Small dense solves: BLAS threads cost more than they give here.
        with blas_limits(1):
            alpha_s, alpha_t = _ato(
                store, previous, s_rows, t_rows, r_rows, y_s, y_t, y_r, C_s, C_t
            )
    else:
        alpha_s = alpha_prev_s.copy()
        if seeding == "keep":
            alpha_t = np.zeros(t_rows.shape[0])
        elif seeding == "sir":
            alpha_t = _sir(store, t_rows, r_rows, y_t, y_r, alpha_r, C_t, rng)
        else:  # "mir"
            f_s = y_s * previous.G[pos_prev[s_rows]]  # the paper's indicators
            with blas_limits(1):
                alpha_t = _mir(
                    store,
                    s_rows,
                    t_rows,
                    r_rows,
                    y_s,
                    y_t,
                    y_r,
                    alpha_s,
                    alpha_r,
                    C_s,
                    C_t,
                    f_s,
                    previous.rho,
                )
    alpha = np.empty(idx.shape[0])
    alpha[in_s] = alpha_s
    alpha[~in_s] = np.clip(alpha_t, 0.0, C_t)
    repair_equality(alpha, y, C, prefer=~in_s)

    # Gradient of S: previous gradient plus the columns of every changed point.
    G = np.empty(idx.shape[0])
    G_s = np.ascontiguousarray(previous.G[pos_prev[s_rows]])
    delta_s = alpha[in_s] - alpha_prev_s
    moved_s = delta_s != 0
    changed = np.concatenate([s_rows[moved_s], t_rows, r_rows]).astype(np.intp)
    delta_ya = np.concatenate(
        [(y_s * delta_s)[moved_s], y_t * alpha[~in_s], -(y_r * alpha_r)]
    )
    keep = delta_ya != 0
    update_gradient(
        store.columns,
        np.ascontiguousarray(s_rows),
        np.ascontiguousarray(y_s),
        G_s,
        np.ascontiguousarray(changed[keep]),
        np.ascontiguousarray(delta_ya[keep]),
    )
    G[in_s] = G_s
    # Gradient of T from scratch, reading the (symmetric) columns of T.
    sv = alpha > 0
    if t_rows.shape[0]:
        # Column by column over the support vectors, no (SV x T) block built.
        G_t = np.full(t_rows.shape[0], -1.0)
        update_gradient(
            store.columns,
            np.ascontiguousarray(t_rows),
            np.ascontiguousarray(y_t),
            G_t,
            np.ascontiguousarray(idx[sv]),
            np.ascontiguousarray(y[sv] * alpha[sv]),
        )
        G[~in_s] = G_t
    return PairProblem(previous.first, previous.second, idx, y, C, alpha, G)


def _sir(store, t_rows, r_rows, y_t, y_r, alpha_r, C_t, rng):
    """Single instance replacement, as published: the removed support vectors,
    one after another (largest alpha first), each hand their alpha to the most
    kernel-similar added point of the same label that has not replaced another
    one yet; when none is left, to a random added point not used yet (then to
    any added point), and the equality is repaired afterwards."""
    n_t = t_rows.shape[0]
    alpha_t = np.zeros(n_t)
    if n_t == 0:
        return alpha_t
    leaving = np.flatnonzero(alpha_r > 0)
    if leaving.shape[0] == 0:
        return alpha_t
    leaving = leaving[np.argsort(-alpha_r[leaving], kind="stable")]
    K_rt = store.block(r_rows[leaving], t_rows)  # rows: the removed SVs
    same = y_r[leaving][:, None] == y_t[None, :]
    # Similarity to the added points of the same label; the others never win.
    score = np.where(same, K_rt, -np.inf)
    used = np.zeros(n_t, dtype=bool)
    for j, p in enumerate(leaving):
        row = score[j]
        q = int(np.argmax(row))
        if not np.isfinite(row[q]):
            free = np.flatnonzero(~used)
            q = int(rng.choice(free)) if free.shape[0] else int(rng.integers(n_t))
        alpha_t[q] += alpha_r[p]
        if not used[q]:
            used[q] = True
            score[:, q] = -np.inf
    return np.minimum(alpha_t, C_t)


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


def _ato(store, previous, s_rows, t_rows, r_rows, y_s, y_t, y_r, C_s, C_t):
    """Adjusting towards the optimum, bounded to :data:`ATO_MAX_STEPS` steps.

    Each step raises ``alpha_T`` towards ``C`` and lowers ``alpha_R`` towards
    0 by the same fraction ``eta`` while the free shared alphas move so that
    they stay on the margin and the equality holds (equation 10); ``eta`` is the
    largest step keeping the free alphas in their box and no bounded shared
    point crossing the margin (equation 11). After the last step the remaining
    ``alpha_R`` is dropped and the equality repaired; SMO does the rest.
    """
    pos_prev = np.full(store.n_samples, -1, dtype=np.intp)
    pos_prev[previous.idx] = np.arange(previous.idx.shape[0])
    alpha_s = previous.alpha[pos_prev[s_rows]].copy()
    alpha_r = previous.alpha[pos_prev[r_rows]].copy()
    f_s = y_s * previous.G[pos_prev[s_rows]]  # the paper's f = y * G
    alpha_t = np.zeros(t_rows.shape[0])
    if t_rows.shape[0] == 0 and r_rows.shape[0] == 0:
        return alpha_s, alpha_t
    K_st = store.block(s_rows, t_rows)
    K_sr = store.block(s_rows, r_rows)
    b = previous.rho
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
