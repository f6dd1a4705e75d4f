"""The solver's public interface: what the estimator and the CV engine share.

LIBSVM splits its ``Solver`` from its model (``svm_train`` and
``svm_cross_validation`` both drive ``svm_train_one``); so does this package.
:class:`SVMParams` is the problem description (kernel, ``C``, class weights,
tolerances, memory) read from an estimator's public parameters;
:class:`PairProblem` is one binary (one-vs-one) sub-problem, solved by
:func:`solve_pair`; :class:`FittedPairs` is what a set of solved pairs holds
as a model (the support vectors, their coefficients and the biases, laid out
as :class:`sklearn.svm.SVC` lays them out) and :class:`PairDecisions` the
same decision functions read from a kernel store by global rows. The
one-vs-one loop that trains the pairs of one training set lives in
:mod:`sklearn_ext.svm._training`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from numbers import Real
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.class_weight import compute_class_weight

from sklearn_ext._fast._smo import gradient_from_alpha, smo_solve, update_gradient
from sklearn_ext.svm._kernel_store import (
    KernelStore,
    kernel_matrix,
    resolve_kernel_dtype,
)

__all__ = [
    "FittedPairs",
    "PairDecisions",
    "PairProblem",
    "SVMParams",
    "check_solved",
    "pair_rows",
    "pairs",
    "repair_equality",
    "solve_pair",
    "vote_labels",
]


@dataclass(frozen=True)
class SVMParams:
    """The C-SVC problem an estimator describes, as its public parameters say.

    The estimator (:class:`~sklearn_ext.svm.AlphaSeededSVC`) and the CV
    engine read the solver's settings from here and nowhere else. ``gamma``
    is kept as given (``"scale"``, ``"auto"`` or a float): each data set
    resolves it (:meth:`resolve_gamma`), so an internal CV on a fold's rows
    gets that fold's ``gamma="scale"``, as a fit on those rows would.

    Parameters
    ----------
    C, kernel, degree, gamma, coef0, shrinking, tol, max_iter, cache_size, \
            kernel_dtype, class_weight
        As the parameters of :class:`~sklearn_ext.svm.AlphaSeededSVC`.
    warm_start_store : WarmStartStore, WarmStartSession, None or False
        The store of solutions across runs (``None`` and ``False``: none).
    owner : str
        The estimator's class name, for messages.
    """

    C: float
    kernel: Any
    degree: int
    gamma: Any
    coef0: float
    shrinking: bool
    tol: float
    max_iter: int
    cache_size: Any
    kernel_dtype: Any
    class_weight: Any
    warm_start_store: Any = None
    owner: str = "AlphaSeededSVC"

    @classmethod
    def of(cls, estimator) -> SVMParams:
        """The problem described by ``estimator``'s public parameters."""
        return cls(
            C=float(estimator.C),
            kernel=estimator.kernel,
            degree=estimator.degree,
            gamma=estimator.gamma,
            coef0=estimator.coef0,
            shrinking=estimator.shrinking,
            tol=estimator.tol,
            max_iter=estimator.max_iter,
            cache_size=estimator.cache_size,
            kernel_dtype=estimator.kernel_dtype,
            class_weight=estimator.class_weight,
            warm_start_store=estimator.warm_start_store,
            owner=type(estimator).__name__,
        )

    def with_store(self, store) -> SVMParams:
        """The same problem with ``warm_start_store=store``."""
        return replace(self, warm_start_store=store)

    def resolve_gamma(self, X) -> float:
        """``gamma`` as a float for data ``X`` (``"scale"``, ``"auto"`` resolved)."""
        if isinstance(self.gamma, str):
            if self.gamma == "auto":
                return 1.0 / X.shape[1]
            with np.errstate(over="ignore", invalid="ignore"):
                # Huge values give var=inf; the kernel check then refuses them.
                if sp.issparse(X):
                    var = X.multiply(X).mean() - X.mean() ** 2
                else:
                    var = X.var()
            return 1.0 / (X.shape[1] * var) if var != 0 else 1.0
        return float(self.gamma)

    def stored_dtype(self, n_samples: int) -> np.dtype:
        """The precision of the kernel matrix of ``n_samples`` rows."""
        return resolve_kernel_dtype(self.kernel_dtype, self.cache_size, n_samples)

    def kernel_store(self, X, gamma: float) -> KernelStore:
        """A new kernel store of ``X`` within the ``cache_size`` budget."""
        return KernelStore(
            X,
            self.kernel,
            gamma,
            self.degree,
            self.coef0,
            self.cache_size,
            dtype=self.stored_dtype(X.shape[0]),
        )

    def support_kernel(self, X, X_fit, support, gamma: float) -> np.ndarray:
        """The kernel of rows ``X`` with the support vectors ``X_fit[support]``.

        For ``kernel="precomputed"`` ``X`` is already the kernel with the
        training rows: its columns ``support`` are taken.
        """
        if self.kernel == "precomputed":
            K = X[:, support]
            return K.toarray() if sp.issparse(K) else np.asarray(K)
        return kernel_matrix(
            X, X_fit[support], self.kernel, gamma, self.degree, self.coef0
        )

    def class_C(self, classes, y_enc) -> np.ndarray:
        """``C`` of each class (``y_enc``, the training labels, indexes ``classes``)."""
        n_classes = classes.shape[0]
        if self.class_weight is None:
            weights = np.ones(n_classes)
        elif isinstance(self.class_weight, dict):
            _check_class_weight(self.class_weight, self.owner)
            weights = np.array(
                [self.class_weight.get(c, 1.0) for c in classes], dtype=float
            )
        else:
            weights = compute_class_weight(
                self.class_weight, classes=np.arange(n_classes), y=y_enc
            )
        return self.C * np.asarray(weights, dtype=np.float64)


def _check_class_weight(class_weight: dict, owner: str) -> None:
    """Class weights scale ``C``: each must be a positive finite number."""
    for value in class_weight.values():
        if (
            not isinstance(value, Real)
            or isinstance(value, bool)
            or not np.isfinite(value)
            or not value > 0
        ):
            raise ValueError(
                f"The 'class_weight' parameter of {owner} must map each class to "
                f"a float in the range (0, inf). Got {class_weight!r} instead."
            )


def pairs(n_classes: int) -> list[tuple[int, int]]:
    """The one-vs-one pairs of classes ``(a, b)``, ``a < b``, in LIBSVM's order."""
    return [(a, b) for a in range(n_classes) for b in range(a + 1, n_classes)]


@dataclass
class PairProblem:
    """The binary dual of classes ``(first, second)`` on global rows ``idx``.

    ``y`` is +1 for ``first`` and -1 for ``second`` (LIBSVM's convention), so
    a positive decision value votes for ``first``.
    """

    first: int
    second: int
    idx: np.ndarray
    y: np.ndarray
    C: np.ndarray
    alpha: np.ndarray
    G: np.ndarray | None = None
    rho: float = 0.0
    n_iter: int = 0
    converged: bool = True

    def objective(self) -> float:
        """Dual objective ``1/2 a'Qa - e'a`` from the gradient: ``a'(G - e) / 2``."""
        return float(0.5 * self.alpha @ (self.G - 1.0))


def pair_rows(y_enc: np.ndarray, rows: np.ndarray, first: int, second: int):
    """Rows of ``rows`` whose class is ``first`` or ``second`` and their +-1 labels.

    With two classes every row is in the pair: ``rows`` itself comes back,
    without a masked copy.
    """
    labels = y_enc[rows]
    mask = (labels == first) | (labels == second)
    if not mask.all():
        rows, labels = rows[mask], labels[mask]
    idx = np.ascontiguousarray(rows, dtype=np.intp)
    y = np.where(labels == first, 1.0, -1.0)
    return idx, y


def repair_equality(alpha, y, C, prefer=None) -> np.ndarray:
    """Make ``y'alpha = 0`` by moving ``alpha`` within ``[0, C]``, in place.

    The imbalance is spread uniformly over the variables that can absorb it,
    those of ``prefer`` (a boolean mask) first, then all others.

    Returns
    -------
    changed : ndarray of bool
        Which entries were modified.
    """
    np.clip(alpha, 0.0, C, out=alpha)
    changed = np.zeros(alpha.shape[0], dtype=bool)
    groups = [np.ones_like(changed)] if prefer is None else [prefer, ~prefer]
    scale = max(float(np.max(C, initial=0.0)), 1.0)
    for group in groups:
        for _ in range(50):
            imbalance = float(y @ alpha)
            if abs(imbalance) <= 1e-12 * scale * max(1, alpha.shape[0]):
                return changed
            # imbalance > 0: lower y_i * alpha_i, i.e. lower positives or raise
            # negatives; symmetrically when < 0.
            direction = -np.sign(imbalance) * y  # sign of the change of alpha
            room = np.where(direction > 0, C - alpha, alpha)
            room[~group] = 0.0
            movable = room > 0
            n_movable = int(np.count_nonzero(movable))
            if n_movable == 0:
                break
            share = abs(imbalance) / n_movable
            step = np.minimum(room, share) * movable
            alpha += direction * step
            np.clip(alpha, 0.0, C, out=alpha)
            changed |= step > 0
    return changed


def solve_pair(
    store, problem: PairProblem, *, tol: float, max_iter: int, shrinking: bool
) -> PairProblem:
    """Run SMO on ``problem`` from its ``alpha`` (and ``G`` when set), in place."""
    if problem.G is None:
        problem.G = gradient_from_alpha(
            store.columns, problem.idx, problem.y, problem.alpha
        )
    diag = np.ascontiguousarray(store.diag[problem.idx])
    n_iter, rho, converged, _ = smo_solve(
        store.columns,
        problem.idx,
        problem.y,
        problem.C,
        diag,
        problem.alpha,
        problem.G,
        tol,
        max_iter,
        shrinking,
    )
    problem.n_iter = int(n_iter)
    problem.rho = float(rho)
    problem.converged = bool(converged)
    return problem


def check_solved(problems, owner: str, max_iter: int) -> None:
    """What fitting checks of solved pair problems, with or without a model.

    A ``ConvergenceWarning`` when ``max_iter`` stopped a problem; SVC's
    ``ValueError`` (its words, sklearn/svm/_base.py) when a support vector's
    coefficient or a bias is not finite.
    """
    if not all(p.converged for p in problems):
        warn_not_converged(owner, max_iter)
    if not all(
        np.all(np.isfinite(p.alpha[p.alpha > 0])) and np.isfinite(p.rho)
        for p in problems
    ):
        raise ValueError(
            "The dual coefficients or intercepts are not finite. The input data "
            "may contain large values and need to be preprocessed."
        )


def vote_labels(dec, classes) -> np.ndarray:
    """Labels of one-vs-one voting on decision values ``dec`` (ties: lower class)."""
    n_classes = classes.shape[0]
    votes = np.zeros((dec.shape[0], n_classes), dtype=np.int64)
    for p, (a, b) in enumerate(pairs(n_classes)):
        wins_a = dec[:, p] > 0
        votes[wins_a, a] += 1
        votes[~wins_a, b] += 1
    return classes[np.argmax(votes, axis=1)]


class FittedPairs:
    """What solved pair problems hold as a model, laid out as ``SVC`` lays it out.

    The support vectors of all pairs (grouped by class, rows in increasing
    order), each pair's columns among them and coefficients ``y_i * alpha_i``,
    and the biases: the fitted attributes of
    :class:`~sklearn_ext.svm.AlphaSeededSVC`, and the decision values of a
    fold (the held-out values of ``probability=True``'s internal CV) without
    a model.

    Parameters
    ----------
    problems : list of PairProblem
        The solved problems, one per pair of classes, in :func:`pairs` order.
    n_samples : int
        Number of rows of the data the problems' ``idx`` index.
    n_classes : int
        Number of classes.

    Attributes
    ----------
    support : ndarray of shape (n_SV,)
        Global rows of the support vectors, grouped by class.
    n_support : ndarray of shape (n_classes,)
        Support vectors per class.
    dual_coef : ndarray of shape (n_classes - 1, n_SV)
        LIBSVM's layout of the coefficients (``SVC.dual_coef_`` for more
        than two classes).
    pair_columns, pair_coefs : list of ndarray
        Each pair's support vectors (columns of ``support``) and coefficients.
    rho : ndarray of shape (n_pairs,)
        Each pair's bias (the decision value is ``K @ coef - rho``).
    alpha_by_pair : list of ndarray of shape (n_samples,)
        Each pair's dual variables by global row (0 outside the pair).
    """

    def __init__(self, problems, n_samples: int, n_classes: int) -> None:
        self.n_iter = np.array([p.n_iter for p in problems], dtype=np.int64)
        self.objective = np.array([p.objective() for p in problems])
        self.converged = all(p.converged for p in problems)
        self.alpha_by_pair = []
        is_sv = np.zeros((n_classes, n_samples), dtype=bool)
        for p in problems:
            full = np.zeros(n_samples)
            full[p.idx] = p.alpha
            self.alpha_by_pair.append(full)
            sv = p.idx[p.alpha > 0]
            first = p.y[p.alpha > 0] > 0
            is_sv[p.first, sv[first]] = True
            is_sv[p.second, sv[~first]] = True
        support = np.concatenate(
            [np.flatnonzero(is_sv[c]) for c in range(n_classes)]
        ).astype(np.intp)
        self.support = support
        self.n_support = is_sv.sum(axis=1).astype(np.int32)
        column = np.full(n_samples, -1, dtype=np.intp)
        column[support] = np.arange(support.shape[0])
        self.dual_coef = np.zeros((n_classes - 1, support.shape[0]))
        self.pair_columns, self.pair_coefs, rho = [], [], []
        for p in problems:
            mask = p.alpha > 0
            coef = (p.y * p.alpha)[mask]
            cols = column[p.idx[mask]]
            first = p.y[mask] > 0
            self.dual_coef[p.second - 1, cols[first]] = coef[first]
            self.dual_coef[p.first, cols[~first]] = coef[~first]
            self.pair_columns.append(cols)
            self.pair_coefs.append(coef)
            rho.append(p.rho)
        self.rho = np.array(rho)

    def decision(self, K) -> np.ndarray:
        """One-vs-one decision values from the kernel ``K`` to :attr:`support`."""
        return decision_from_kernel(K, self.pair_columns, self.pair_coefs, self.rho)


def decision_from_kernel(K, pair_columns, pair_coefs, rho) -> np.ndarray:
    """``K[:, columns] @ coef - rho`` of each pair: the one-vs-one decision values."""
    dec = np.empty((K.shape[0], len(pair_coefs)))
    for p, (cols, coef) in enumerate(zip(pair_columns, pair_coefs, strict=True)):
        dec[:, p] = K[:, cols] @ coef - rho[p]
    return dec


class PairDecisions:
    """The decision functions of solved pair problems, read from a kernel store.

    What scoring from the kernel store reads: for each one-vs-one problem the
    global rows of its support vectors, their ``y_i * alpha_i`` and the bias,
    in the order :class:`FittedPairs` lays them out, so the decision values
    are the model's bit for bit. A fold that no one will predict with keeps
    this instead of a fitted model (no copy of its support vectors).

    Parameters
    ----------
    problems : list of PairProblem
        The solved problems, one per pair of classes, in :func:`pairs` order.
    classes : ndarray of shape (n_classes,)
        Class labels.
    """

    def __init__(self, problems, classes) -> None:
        self.classes = classes
        self.rows, self.coefs = [], []
        for p in problems:
            mask = p.alpha > 0
            self.rows.append(np.ascontiguousarray(p.idx[mask], dtype=np.intp))
            self.coefs.append(np.ascontiguousarray((p.y * p.alpha)[mask]))
        self.rho = np.array([p.rho for p in problems], dtype=np.float64)

    def decision(self, columns, test_rows) -> np.ndarray:
        """One-vs-one decision values of the global rows ``test_rows``.

        Summed column by column over the support vectors from the kernel
        store's ``columns`` (no kernel block is built; the reads release the
        GIL).
        """
        rows = np.ascontiguousarray(test_rows, dtype=np.intp)
        ones = np.ones(rows.shape[0])
        dec = np.empty((rows.shape[0], len(self.coefs)))
        for p, (sv, coef) in enumerate(zip(self.rows, self.coefs, strict=True)):
            values = np.full(rows.shape[0], -self.rho[p])
            update_gradient(columns, rows, ones, values, sv, coef)
            dec[:, p] = values
        return dec

    def predict(self, columns, test_rows) -> np.ndarray:
        """Labels of the global rows ``test_rows`` by one-vs-one voting."""
        return vote_labels(self.decision(columns, test_rows), self.classes)


def warn_not_converged(owner: str, max_iter: int) -> None:
    warnings.warn(
        f"{owner} stopped at max_iter={max_iter} before reaching the tolerance; "
        "the model may be far from optimal. Scale the data (e.g. with "
        "StandardScaler) or raise max_iter.",
        ConvergenceWarning,
        stacklevel=3,
    )
