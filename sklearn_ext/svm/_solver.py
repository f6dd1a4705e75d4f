"""One-vs-one C-SVC subproblems solved by SMO on a shared kernel store."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_ext._fast._smo import gradient_from_alpha, smo_solve

__all__ = ["PairProblem", "solve_pair", "repair_equality", "pair_rows"]


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


def warn_not_converged(owner: str, max_iter: int) -> None:
    warnings.warn(
        f"{owner} stopped at max_iter={max_iter} before reaching the tolerance; "
        "the model may be far from optimal. Scale the data (e.g. with "
        "StandardScaler) or raise max_iter.",
        ConvergenceWarning,
        stacklevel=3,
    )
