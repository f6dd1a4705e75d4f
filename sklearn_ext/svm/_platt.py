"""Platt scaling and pairwise coupling as LIBSVM computes them.

:func:`platt_scaling` is what ``probability=True`` adds to a fit: an
internal stratified 5-fold CV run by the alpha-seeded CV engine
(:func:`~sklearn_ext.svm._cv.run_folds`, each fold seeded from the previous
one on one kernel store), whose held-out decision values fit each
one-vs-one pair's sigmoid. It calls the engine directly, below the run core
that ``tree_cross_validate`` and the searches share.

``sigmoid_train`` is LIBSVM's ``sigmoid_train``: Platt's sigmoid fitted by
Newton's method with a backtracking line search on the regularised targets
(Lin, Lin and Weng, 2007, "A note on Platt's probabilistic outputs for support
vector machines", Algorithm 1). ``couple_pairwise`` is LIBSVM's
``multiclass_probability``: the second method of Wu, Lin and Weng (2004),
"Probability estimates for multi-class classification by pairwise coupling".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.model_selection import StratifiedKFold
from sklearn.utils.validation import check_random_state

from sklearn_ext.svm._cv import TestFolds, chain_count, run_folds
from sklearn_ext.svm._solver import FittedPairs, SVMParams, pairs
from sklearn_ext.svm._warm_start import WarmStartStore, store_in_use

__all__ = [
    "PlattScaling",
    "couple_pairwise",
    "platt_scaling",
    "sigmoid_predict",
    "sigmoid_train",
]

#: LIBSVM clips each pairwise probability to [MIN_PROB, 1 - MIN_PROB].
MIN_PROB = 1e-7


@dataclass
class PlattScaling:
    """What ``probability=True``'s internal CV gives a fit.

    Attributes
    ----------
    probA, probB : ndarray of shape (n_pairs,)
        Platt's ``A`` and ``B`` of each one-vs-one pair.
    store : WarmStartStore
        The store the CV ran with: it keeps the kernel for the final fit.
    last_alphas : list of ndarray of shape (n_samples,)
        The last fold's alphas of each pair by row (its held-out rows at 0):
        a feasible start of the final fit.
    """

    probA: np.ndarray
    probB: np.ndarray
    store: Any
    last_alphas: list


def platt_scaling(params: SVMParams, X, y, random_state=None) -> PlattScaling:
    """Platt's sigmoids of every pair from an internal alpha-seeded CV.

    LIBSVM's 5 folds, stratified (every class in every training part) and
    shuffled by ``random_state``, run by the CV engine with SIR seeding on
    one kernel store, kept in a :class:`~sklearn_ext.svm.WarmStartStore`
    (``params``' own, or a new one) for the final fit. Each pair's sigmoid is
    fitted on the held-out decision values of its two classes.

    Parameters
    ----------
    params : SVMParams
        The problem.
    X : {ndarray, CSR matrix} of shape (n_samples, n_features)
        Checked training data, or the precomputed kernel.
    y : ndarray of shape (n_samples,)
        Class labels.
    random_state : int, RandomState instance or None, default=None
        Shuffling of the folds (and seed of SIR's random replacements).

    Returns
    -------
    scaling : PlattScaling
    """
    classes, y_enc = np.unique(y, return_inverse=True)
    counts = np.bincount(y_enc)
    if counts.min() < 2:
        raise ValueError(
            "probability=True needs at least 2 samples of each class for its "
            f"internal cross-validation; class {classes[counts.argmin()]!r} "
            f"has {counts.min()}."
        )
    seed = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    splitter = StratifiedKFold(
        n_splits=min(5, int(counts.min())), shuffle=True, random_state=seed
    )
    folds = TestFolds([test for _, test in splitter.split(np.zeros(y.shape[0]), y_enc)])
    store = store_in_use(params.warm_start_store)
    if store is None:
        store = WarmStartStore()
    # Collected first: the decision values are computed outside the chains'
    # one-thread BLAS limit, as a fitted model's would be.
    solutions = list(
        run_folds(
            params.with_store(store),
            X,
            y,
            folds,
            seeding="sir",
            random_state=seed,
            n_chains=chain_count(None, folds.n_splits, y.shape[0]),
        )
    )
    n_classes = classes.shape[0]
    gamma = params.resolve_gamma(X)
    dec = np.zeros((y.shape[0], n_classes * (n_classes - 1) // 2))
    last = None
    for solution in solutions:
        fitted = FittedPairs(solution.pairs.problems, y.shape[0], n_classes)
        test = folds.test_indices(solution.fold)
        dec[test] = fitted.decision(
            params.support_kernel(X[test], X, fitted.support, gamma)
        )
        if solution.fold == folds.n_splits - 1:
            last = fitted.alpha_by_pair
    probA, probB = [], []
    for p, (a, b) in enumerate(pairs(n_classes)):
        mask = (y_enc == a) | (y_enc == b)
        A, B = sigmoid_train(dec[mask, p], y_enc[mask] == a)
        probA.append(A)
        probB.append(B)
    return PlattScaling(np.array(probA), np.array(probB), store, last)


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
