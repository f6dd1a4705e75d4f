"""What a backend returns: one :class:`LeafResult` per fold, as a :class:`LeafTable`.

A backend hands each fold's :class:`LeafResult` to ``task.on_leaf`` as soon as
the fold is scored, and returns them all as columns (:class:`LeafTable`), so
that leave-one-out on half a million rows need not build half a million
objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from sklearn_ext.model_selection._plan import FoldPlan

__all__ = ["LeafResult", "LeafTable"]


@dataclass(frozen=True)
class LeafResult:
    """What a backend reports when it has scored one fold.

    Attributes
    ----------
    split : int
        The fold, numbered as the splitter numbers its splits: split ``i`` is
        the ``i``-th ``(train, test)`` pair of ``cv`` and the column
        ``split{i}_test_score`` of every result. Users and callbacks only ever
        see this number.
    scores : dict of str to float
        Test scores by metric name (``"score"`` for a single metric).
    n_samples_fed : int
        Rows passed to the learner since the previous leaf of the same worker;
        summed over all leaves this is the run's total.
    fit_time : float
        Seconds spent training since the previous leaf of the same worker.
    score_time : float
        Seconds spent scoring this leaf.
    estimator : object or None
        The fold's fitted model, when the task asked for it.
    extras : dict of str to object
        What the engine measured besides the scores (e.g. the SMO iterations
        ``n_iter`` of the alpha-seeding backend); the names are listed in the
        backend's :attr:`Backend.extras` and come out as extra result columns.
    leaf : int or None
        The engine's own index of the fold: the chunk that the recursion tree
        holds out (``plan.leaf_order[split]``). Engines work with it; ``None``
        when the result was not made by an engine.
    fit_error : str or None
        The traceback of the fit that failed for this fold (its scores are
        then ``error_score``), as ``cross_validate`` records failed fits.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn_ext.linear_model import PegasosClassifier
    >>> from sklearn_ext.model_selection import tree_cross_validate
    >>> X, y = load_digits(return_X_y=True)
    >>> leaves = []
    >>> _ = tree_cross_validate(
    ...     PegasosClassifier(random_state=0), X, y, cv=4, leaf_callback=leaves.append
    ... )
    >>> leaf = leaves[0]
    >>> leaf.split, sorted(leaf.scores), leaf.n_samples_fed
    (0, ['score'], 1347)
    """

    split: int
    scores: dict[str, float]
    n_samples_fed: int
    fit_time: float
    score_time: float
    estimator: Any = None
    extras: Mapping[str, Any] = field(default_factory=dict)
    leaf: int | None = None
    fit_error: str | None = None

    @property
    def fold(self) -> int:
        """The split index (an alias of :attr:`split`)."""
        return self.split


@dataclass(frozen=True, eq=False)
class LeafTable(Sequence):
    """Leaf results as columns: what every :meth:`Backend.run` returns.

    A sequence of :class:`LeafResult` built on access, so that leave-one-out
    on half a million rows need not build half a million objects. Rows may come
    in any order; :meth:`by_split` sorts them by split index.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import SGDClassifier
    >>> from sklearn_ext.model_selection import (
    ...     CVTask, FoldPlan, LeafTable, PythonTreeBackend
    ... )
    >>> X = np.arange(16.0).reshape(8, 2)
    >>> y = np.array([0, 0, 1, 1, 0, 0, 1, 1])
    >>> task = CVTask(
    ...     estimator=SGDClassifier(max_iter=1, tol=None, shuffle=False),
    ...     X=X, y=y, plan=FoldPlan([[0, 1], [2, 3], [4, 5], [6, 7]], n_samples=8),
    ...     scorer=lambda model, X, y: {"score": model.score(X, y)},
    ...     classes=np.array([0, 1]),
    ... )
    >>> table = PythonTreeBackend().run(task)
    >>> isinstance(table, LeafTable), len(table)
    (True, 4)
    >>> table.by_split().split, int(table.n_samples_fed.sum())
    (array([0, 1, 2, 3]), 16)
    """

    split: np.ndarray
    leaf: np.ndarray
    scores: dict[str, np.ndarray]
    n_samples_fed: np.ndarray
    fit_time: np.ndarray
    score_time: np.ndarray
    estimator: list | None = None
    extras: dict[str, list] = field(default_factory=dict)
    #: Traceback of each row's failed fit (``None`` when it did not fail), or
    #: ``None`` when no fit failed.
    fit_error: list | None = None

    @classmethod
    def from_leaves(cls, leaves: Sequence[LeafResult]) -> LeafTable:
        """The columns of a sequence of :class:`LeafResult`."""
        names = list(dict.fromkeys(n for leaf in leaves for n in leaf.scores))
        extra_names = list(dict.fromkeys(n for leaf in leaves for n in leaf.extras))
        estimators = [leaf.estimator for leaf in leaves]
        errors = [leaf.fit_error for leaf in leaves]
        return cls(
            split=np.array([leaf.split for leaf in leaves], dtype=np.intp),
            leaf=np.array(
                [leaf.split if leaf.leaf is None else leaf.leaf for leaf in leaves],
                dtype=np.intp,
            ),
            scores={
                n: np.array([leaf.scores.get(n, np.nan) for leaf in leaves])
                for n in names
            },
            n_samples_fed=np.array(
                [leaf.n_samples_fed for leaf in leaves], dtype=np.int64
            ),
            fit_time=np.array([leaf.fit_time for leaf in leaves], dtype=float),
            score_time=np.array([leaf.score_time for leaf in leaves], dtype=float),
            estimator=None if all(e is None for e in estimators) else estimators,
            extras={
                n: [leaf.extras.get(n, np.nan) for leaf in leaves] for n in extra_names
            },
            fit_error=None if all(e is None for e in errors) else errors,
        )

    @classmethod
    def from_leaf_columns(
        cls, plan: FoldPlan, scores, n_samples_fed, fit_time, score_time
    ) -> LeafTable:
        """A table from columns indexed by leaf ``0 .. k-1`` (native engines)."""
        leaves = np.arange(plan.n_splits, dtype=np.intp)
        return cls(
            split=plan.split_index[leaves].astype(np.intp),
            leaf=leaves,
            scores={"score": np.asarray(scores, dtype=float)}
            if not isinstance(scores, dict)
            else {name: np.asarray(v, dtype=float) for name, v in scores.items()},
            n_samples_fed=np.asarray(n_samples_fed, dtype=np.int64),
            fit_time=np.asarray(fit_time, dtype=float),
            score_time=np.asarray(score_time, dtype=float),
        )

    def by_split(self) -> LeafTable:
        """The same table with its rows in split order."""
        order = np.argsort(self.split, kind="stable")
        return LeafTable(
            split=self.split[order],
            leaf=self.leaf[order],
            scores={name: values[order] for name, values in self.scores.items()},
            n_samples_fed=self.n_samples_fed[order],
            fit_time=self.fit_time[order],
            score_time=self.score_time[order],
            estimator=None
            if self.estimator is None
            else [self.estimator[i] for i in order],
            extras={
                name: [values[i] for i in order] for name, values in self.extras.items()
            },
            fit_error=None
            if self.fit_error is None
            else [self.fit_error[i] for i in order],
        )

    def __len__(self) -> int:
        return len(self.split)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return LeafResult(
            int(self.split[index]),
            {name: float(values[index]) for name, values in self.scores.items()},
            int(self.n_samples_fed[index]),
            float(self.fit_time[index]),
            float(self.score_time[index]),
            None if self.estimator is None else self.estimator[index],
            {name: values[index] for name, values in self.extras.items()},
            int(self.leaf[index]),
            None if self.fit_error is None else self.fit_error[index],
        )
