"""Snapshot and restore of a learner's fitted state, for the Python tree."""

from __future__ import annotations

import numpy as np

__all__ = ["FittedStateMixin"]


def _is_fitted_state(name: str) -> bool:
    return name == "_state" or (name.endswith("_") and not name.startswith("__"))


class FittedStateMixin:
    """``_treecv_snapshot`` / ``_treecv_restore`` for the learners of ``sklearn_ext``.

    The Python tree engine (``sklearn_ext.model_selection.PythonTreeBackend``)
    copies a model at every internal node; a learner whose whole fitted state
    is its flat ``_state`` array and its fitted attributes (names ending in
    ``_``) inherits these two methods and is copied by them instead of
    ``copy.deepcopy``. Arrays are copied, other values shared.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.base import BaseEstimator
    >>> from sklearn_ext.utils._fitted_state import FittedStateMixin
    >>> class Counter(FittedStateMixin, BaseEstimator):
    ...     def partial_fit(self, X, y=None):
    ...         self._state = getattr(self, "_state", np.zeros(1)) + len(X)
    ...         self.n_seen_ = int(self._state[0])
    ...         return self
    >>> model = Counter().partial_fit(np.ones((3, 1)))
    >>> snapshot = model._treecv_snapshot()
    >>> model.partial_fit(np.ones((2, 1))).n_seen_
    5
    >>> model._treecv_restore(snapshot)
    >>> model.n_seen_
    3
    """

    def _treecv_snapshot(self) -> dict:
        """The fitted state (for the Python TreeCV engine's snapshot/restore)."""
        return {
            name: value.copy() if isinstance(value, np.ndarray) else value
            for name, value in vars(self).items()
            if _is_fitted_state(name)
        }

    def _treecv_restore(self, snapshot: dict) -> None:
        """Put back a state taken by :meth:`_treecv_snapshot`."""
        for name in list(vars(self)):
            if _is_fitted_state(name):
                delattr(self, name)
        for name, value in snapshot.items():
            setattr(
                self, name, value.copy() if isinstance(value, np.ndarray) else value
            )
