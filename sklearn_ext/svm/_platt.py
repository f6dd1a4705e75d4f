"""Platt scaling and pairwise coupling as LIBSVM computes them.

``sigmoid_train`` is LIBSVM's ``sigmoid_train``: Platt's sigmoid fitted by
Newton's method with a backtracking line search on the regularised targets
(Lin, Lin and Weng, 2007, "A note on Platt's probabilistic outputs for support
vector machines", Algorithm 1). ``couple_pairwise`` is LIBSVM's
``multiclass_probability``: the second method of Wu, Lin and Weng (2004),
"Probability estimates for multi-class classification by pairwise coupling".
"""

from __future__ import annotations

import numpy as np

__all__ = ["couple_pairwise", "sigmoid_predict", "sigmoid_train"]

#: LIBSVM clips each pairwise probability to [MIN_PROB, 1 - MIN_PROB].
MIN_PROB = 1e-7


def _objective(dec, target, A, B) -> float:
    """Cross-entropy of the sigmoid ``1 / (1 + exp(A f + B))``, computed stably."""
    fApB = dec * A + B
    return float(
        np.sum(
            np.where(
                fApB >= 0,
                target * fApB + np.log1p(np.exp(-np.abs(fApB))),
                (target - 1.0) * fApB + np.log1p(np.exp(-np.abs(fApB))),
            )
        )
    )


def sigmoid_train(dec, positive) -> tuple[float, float]:
    """Platt's ``(A, B)`` for decision values ``dec`` of labels ``positive``.

    Parameters
    ----------
    dec : ndarray of shape (n_samples,)
        Decision values (held out of the models that computed them).
    positive : ndarray of bool of shape (n_samples,)
        Whether each sample is of the class that positive values favour.

    Returns
    -------
    A, B : float
        ``P(positive | f) = 1 / (1 + exp(A * f + B))``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.svm._platt import sigmoid_train
    >>> A, B = sigmoid_train(np.array([-2.0, -1.0, 1.0, 2.0]),
    ...                      np.array([False, True, False, True]))
    >>> bool(A < 0)
    True
    """
    dec = np.asarray(dec, dtype=np.float64)
    positive = np.asarray(positive, dtype=bool)
    prior1 = float(np.count_nonzero(positive))
    prior0 = float(positive.shape[0]) - prior1
    max_iter, min_step, sigma, eps = 100, 1e-10, 1e-12, 1e-5
    hi_target = (prior1 + 1.0) / (prior1 + 2.0)
    lo_target = 1.0 / (prior0 + 2.0)
    target = np.where(positive, hi_target, lo_target)
    A, B = 0.0, float(np.log((prior0 + 1.0) / (prior1 + 1.0)))
    fval = _objective(dec, target, A, B)
    for _ in range(max_iter):
        fApB = dec * A + B
        e = np.exp(-np.abs(fApB))
        # p = 1 / (1 + exp(fApB)), q = 1 - p, both without overflow.
        p = np.where(fApB >= 0, e / (1.0 + e), 1.0 / (1.0 + e))
        q = 1.0 - p
        d2 = p * q
        h11 = sigma + float(np.dot(dec * dec, d2))
        h22 = sigma + float(d2.sum())
        h21 = float(np.dot(dec, d2))
        d1 = target - p
        g1 = float(np.dot(dec, d1))
        g2 = float(d1.sum())
        if abs(g1) < eps and abs(g2) < eps:
            break
        det = h11 * h22 - h21 * h21
        dA = -(h22 * g1 - h21 * g2) / det
        dB = -(-h21 * g1 + h11 * g2) / det
        gd = g1 * dA + g2 * dB
        step = 1.0
        while step >= min_step:
            new_A, new_B = A + step * dA, B + step * dB
            new_f = _objective(dec, target, new_A, new_B)
            if new_f < fval + 1e-4 * step * gd:
                A, B, fval = new_A, new_B, new_f
                break
            step /= 2.0
        if step < min_step:
            break  # LIBSVM: "Line search fails in two-class probability estimates"
    return A, B


def sigmoid_predict(dec, A, B) -> np.ndarray:
    """``1 / (1 + exp(A * dec + B))`` without overflow."""
    fApB = np.asarray(dec, dtype=np.float64) * A + B
    e = np.exp(-np.abs(fApB))
    return np.where(fApB >= 0, e / (1.0 + e), 1.0 / (1.0 + e))


def couple_pairwise(r) -> np.ndarray:
    """Class probabilities from pairwise ones (Wu, Lin and Weng, 2004, method 2).

    Parameters
    ----------
    r : ndarray of shape (n_samples, n_classes, n_classes)
        ``r[s, i, j]`` estimates ``P(y = i | y in {i, j})`` for sample ``s``;
        ``r[s, j, i] = 1 - r[s, i, j]``, the diagonal is ignored.

    Returns
    -------
    p : ndarray of shape (n_samples, n_classes)
        Probabilities summing to one per sample, found by LIBSVM's fixed-point
        iteration (at most ``max(100, k)`` sweeps, stopping at
        ``max |Qp - p'Qp| < 0.005 / k``), each sample on its own.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.svm._platt import couple_pairwise
    >>> r = np.array([[[0, .8, .8], [.2, 0, .5], [.2, .5, 0]]])
    >>> p = couple_pairwise(r)
    >>> bool(np.isclose(p.sum(), 1.0) and p[0, 0] > p[0, 1])
    True
    """
    r = np.asarray(r, dtype=np.float64)
    n, k, _ = r.shape
    off = ~np.eye(k, dtype=bool)
    # Q[t, t] = sum_{j != t} r[j, t]^2 ; Q[t, j] = -r[j, t] * r[t, j].
    rT = np.swapaxes(r, 1, 2)
    Q = -rT * r
    diag = np.sum(np.where(off, rT, 0.0) ** 2, axis=2)
    Q[:, ~off] = diag
    p = np.full((n, k), 1.0 / k)
    eps = 0.005 / k
    active = np.arange(n)
    for _ in range(max(100, k)):
        Qa, pa = Q[active], p[active]
        Qp = np.einsum("stj,sj->st", Qa, pa)
        pQp = np.einsum("st,st->s", pa, Qp)
        done = np.max(np.abs(Qp - pQp[:, None]), axis=1) < eps
        if np.all(done):
            break
        active, Qa, pa, Qp, pQp = (
            active[~done],
            Qa[~done],
            pa[~done],
            Qp[~done],
            pQp[~done],
        )
        for t in range(k):
            qtt = Qa[:, t, t]
            diff = (-Qp[:, t] + pQp) / qtt
            pa[:, t] += diff
            scale = 1.0 + diff
            pQp = (pQp + diff * (diff * qtt + 2.0 * Qp[:, t])) / scale / scale
            Qp = (Qp + diff[:, None] * Qa[:, t, :]) / scale[:, None]
            pa /= scale[:, None]
        p[active] = pa
    return p
