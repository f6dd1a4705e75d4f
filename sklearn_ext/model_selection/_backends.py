"""CV backends: one contract, one place that chooses among them.

Every backend takes a :class:`CVTask` (estimator, data, fold plan, scorer) and
returns one :class:`LeafResult` per fold, handing each to ``task.on_leaf`` as soon
as that fold is scored. ``on_leaf`` may raise to stop the run (Optuna pruning);
every backend lets the exception through and stops training.
"""

from __future__ import annotations

import copy
import inspect
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from joblib import Parallel, cpu_count, delayed, effective_n_jobs
from sklearn.base import clone, is_classifier
from sklearn.utils import _safe_indexing
from threadpoolctl import threadpool_limits

from sklearn_ext.model_selection._plan import FoldPlan

__all__ = [
    "LeafResult",
    "LeafTable",
    "CVTask",
    "Backend",
    "PythonTreeBackend",
    "StandardBackend",
]


@dataclass(frozen=True)
class LeafResult:
    """What a backend reports when it has scored one fold.

    Attributes
    ----------
    fold : int
        The fold. Backends report the leaf (chunk) index; ``tree_cross_validate``
        hands users the plan's split index (``plan.split_index[leaf]``).
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
    """

    fold: int
    scores: dict[str, float]
    n_samples_fed: int
    fit_time: float
    score_time: float
    estimator: Any = None


@dataclass(frozen=True, eq=False)
class LeafTable(Sequence):
    """Leaf results as columns, for runs with very many folds.

    A backend may return this instead of a list when nobody listens to single
    leaves (``task.on_leaf`` is None): leave-one-out on half a million rows
    would otherwise build half a million :class:`LeafResult` objects. It is a
    sequence of :class:`LeafResult` built on access, so code that iterates over
    a backend's results keeps working.
    """

    fold: np.ndarray
    scores: dict[str, np.ndarray]
    n_samples_fed: np.ndarray
    fit_time: np.ndarray
    score_time: np.ndarray
    estimator: list | None = None

    @classmethod
    def from_leaves(cls, leaves: Sequence[LeafResult]) -> LeafTable:
        """The columns of a sequence of :class:`LeafResult`."""
        names = list(leaves[0].scores)
        estimators = [leaf.estimator for leaf in leaves]
        return cls(
            fold=np.array([leaf.fold for leaf in leaves], dtype=np.intp),
            scores={n: np.array([leaf.scores[n] for leaf in leaves]) for n in names},
            n_samples_fed=np.array([leaf.n_samples_fed for leaf in leaves]),
            fit_time=np.array([leaf.fit_time for leaf in leaves]),
            score_time=np.array([leaf.score_time for leaf in leaves]),
            estimator=None if all(e is None for e in estimators) else estimators,
        )

    def __len__(self) -> int:
        return len(self.fold)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return LeafResult(
            int(self.fold[index]),
            {name: float(values[index]) for name, values in self.scores.items()},
            int(self.n_samples_fed[index]),
            float(self.fit_time[index]),
            float(self.score_time[index]),
            None if self.estimator is None else self.estimator[index],
        )


@dataclass
class CVTask:
    """Everything a backend needs for one cross-validation run.

    ``X`` is a validated ndarray or CSR matrix and ``y`` an ndarray or ``None``.
    """

    estimator: Any
    X: Any
    y: Any
    plan: FoldPlan
    scorer: Callable[[Any, Any, Any], dict[str, float]]
    #: The user's ``scoring`` argument, for backends that score common metrics
    #: natively; ``scorer`` is the reference they must agree with.
    scoring: Any = None
    fit_params: dict[str, Any] = field(default_factory=dict)
    classes: np.ndarray | None = None
    n_jobs: int | None = None
    return_estimator: bool = False
    on_leaf: Callable[[LeafResult], None] | None = None

    def rows(self, indices: np.ndarray) -> tuple[Any, Any, dict[str, Any]]:
        """``X``, ``y`` and sample-aligned fit params restricted to ``indices``."""
        key = _as_slice(indices)
        X = self.X[key]
        y = None if self.y is None else self.y[key]
        n_samples = self.plan.n_samples
        params = {
            key: _safe_indexing(value, indices)
            if _is_sample_aligned(value, n_samples)
            else value
            for key, value in self.fit_params.items()
        }
        return X, y, params

    def score(self, model, fold: int) -> tuple[dict[str, float], float]:
        tic = time.perf_counter()
        X, y, _ = self.rows(self.plan.test_indices(fold))
        scores = {
            name: float(value) for name, value in self.scorer(model, X, y).items()
        }
        return scores, time.perf_counter() - tic


def _as_slice(indices: np.ndarray) -> np.ndarray | slice:
    """A slice (a view, no copy) when ``indices`` is a contiguous increasing run."""
    n = len(indices)
    if n and indices[-1] - indices[0] == n - 1 and np.all(np.diff(indices) == 1):
        return slice(int(indices[0]), int(indices[-1]) + 1)
    return indices


def _is_sample_aligned(value, n_samples: int) -> bool:
    return (
        hasattr(value, "__len__")
        and not isinstance(value, str | bytes)
        and (len(value) == n_samples)
    )


class Backend(ABC):
    """A way to compute the per-fold scores of a fold plan."""

    #: Name recorded in the results (``"backend"``).
    name: ClassVar[str]

    @classmethod
    @abstractmethod
    def accepts(cls, estimator) -> bool:
        """Whether this backend can run ``estimator``."""

    @abstractmethod
    def run(self, task: CVTask) -> list[LeafResult] | LeafTable:
        """Score every fold of ``task.plan``, streaming leaves to ``task.on_leaf``.

        A backend may return a :class:`LeafTable` (columns, also a sequence of
        leaves) instead of a list when ``task.on_leaf`` is None.
        """


# -- the Python tree ---------------------------------------------------------------
class _Learner:
    """A model being trained along the tree, with its bookkeeping."""

    __slots__ = ("model", "fitted")

    def __init__(self, model, fitted: bool = False) -> None:
        self.model = model
        self.fitted = fitted

    def fork(self) -> _Learner:
        return _Learner(copy.deepcopy(self.model), self.fitted)


class _Meter:
    """Training work done since the last leaf was emitted."""

    __slots__ = ("n_samples_fed", "fit_time")

    def __init__(self, n_samples_fed: int = 0, fit_time: float = 0.0) -> None:
        self.n_samples_fed = n_samples_fed
        self.fit_time = fit_time

    def take(self) -> tuple[int, float]:
        taken = (self.n_samples_fed, self.fit_time)
        self.n_samples_fed, self.fit_time = 0, 0.0
        return taken


def _partial_fit(task: CVTask, learner: _Learner, rows: np.ndarray, meter: _Meter):
    X, y, params = task.rows(rows)
    if not learner.fitted and task.classes is not None:
        params = {**params, "classes": task.classes}
    tic = time.perf_counter()
    learner.model.partial_fit(X, y, **params)
    meter.fit_time += time.perf_counter() - tic
    meter.n_samples_fed += len(rows)
    learner.fitted = True


def _has_snapshot(model) -> bool:
    return callable(getattr(model, "_treecv_snapshot", None)) and callable(
        getattr(model, "_treecv_restore", None)
    )


class PythonTreeBackend(Backend):
    """Algorithm 1 of the TreeCV paper around any ``partial_fit`` estimator.

    A node's model is copied (``copy.deepcopy``) before the left child's update and
    reused in place for the right child, so a sequential run holds one model per
    tree level, ``O(log k)``. A learner may instead provide
    ``_treecv_snapshot()`` returning its state and ``_treecv_restore(state)``
    putting it back (section 4.1 of the paper); then no copies are made.
    With ``n_jobs > 1`` the top levels are trained in parallel, node by node,
    until there is a subtree per worker; the subtrees then run in parallel.
    """

    name = "python_tree"

    @classmethod
    def accepts(cls, estimator) -> bool:
        return callable(getattr(estimator, "partial_fit", None))

    def run(self, task: CVTask) -> list[LeafResult]:
        root = _Learner(clone(task.estimator))
        n_jobs = effective_n_jobs(task.n_jobs)
        if n_jobs == 1 or task.plan.n_splits < 4:
            return _emit_all(task, _subtree(task, task.plan.root, root, _Meter()))
        frontier = [(task.plan.root, root, _Meter())]
        # Grow the top of the tree level by level until every worker has a subtree.
        with Parallel(n_jobs=n_jobs) as parallel:
            while len(frontier) < n_jobs and any(s != e for (s, e), _, _ in frontier):
                jobs = []
                for node, learner, meter in frontier:
                    if node[0] == node[1]:
                        jobs.append(delayed(_identity)(node, learner, meter))
                        continue
                    left, right = task.plan.children(*node)
                    # The parent's pending work is carried by its left child.
                    jobs.append(delayed(_grow)(task, left, learner.fork(), meter))
                    jobs.append(delayed(_grow)(task, right, learner, _Meter()))
                frontier = parallel(jobs)
        parallel = Parallel(n_jobs=n_jobs, return_as="generator_unordered")
        with threadpool_limits(limits=max(1, cpu_count() // n_jobs)):
            subtrees = parallel(
                delayed(_collect_subtree)(task, node, learner, meter)
                for node, learner, meter in frontier
            )
            return _emit_all(task, (leaf for leaves in subtrees for leaf in leaves))


def _identity(node, learner, meter):
    return node, learner, meter


def _grow(task: CVTask, node, learner: _Learner, meter: _Meter):
    _partial_fit(task, learner, task.plan.feed(*node), meter)
    return node, learner, meter


def _collect_subtree(task: CVTask, node, learner: _Learner, meter: _Meter):
    return list(_subtree(task, node, learner, meter))


def _subtree(task: CVTask, node, learner: _Learner, meter: _Meter):
    """Depth-first TreeCV below ``node``; yields leaves in fold order."""
    start, end = node
    if start == end:
        scores, score_time = task.score(learner.model, start)
        fed, fit_time = meter.take()
        model = None
        if task.return_estimator:
            model = copy.deepcopy(learner.model)
        yield LeafResult(start, scores, fed, fit_time, score_time, model)
        return
    left, right = task.plan.children(start, end)
    if _has_snapshot(learner.model):
        state = (learner.model._treecv_snapshot(), learner.fitted)
        _partial_fit(task, learner, task.plan.feed(*left), meter)
        yield from _subtree(task, left, learner, meter)
        learner.model._treecv_restore(state[0])
        learner.fitted = state[1]
    else:
        forked = learner.fork()
        _partial_fit(task, forked, task.plan.feed(*left), meter)
        yield from _subtree(task, left, forked, meter)
        del forked
    _partial_fit(task, learner, task.plan.feed(*right), meter)
    yield from _subtree(task, right, learner, meter)


def _emit_all(task: CVTask, leaves) -> list[LeafResult]:
    results = []
    for leaf in leaves:
        results.append(leaf)
        if task.on_leaf is not None:
            task.on_leaf(leaf)
    return results


# -- the standard reference ---------------------------------------------------------
class StandardBackend(Backend):
    """``k`` independent fits: the reference and the fallback.

    An estimator with ``partial_fit`` is fed each fold's training rows in the
    plan's order, update by update, exactly as the tree feeds them; any other
    estimator is fit with ``fit`` on the fold's training rows.
    """

    name = "standard"

    @classmethod
    def accepts(cls, estimator) -> bool:
        return callable(getattr(estimator, "fit", None))

    def run(self, task: CVTask) -> list[LeafResult]:
        n_jobs = effective_n_jobs(task.n_jobs)
        folds = range(task.plan.n_splits)
        if n_jobs == 1:
            return _emit_all(task, (_standard_fold(task, fold) for fold in folds))
        parallel = Parallel(n_jobs=n_jobs, return_as="generator_unordered")
        leaves = parallel(delayed(_standard_fold)(task, fold) for fold in folds)
        results = _emit_all(task, leaves)
        return sorted(results, key=lambda leaf: leaf.fold)


def _standard_fold(task: CVTask, fold: int) -> LeafResult:
    learner = _Learner(clone(task.estimator))
    meter = _Meter()
    if PythonTreeBackend.accepts(learner.model):
        for rows in task.plan.train_segments(fold):
            _partial_fit(task, learner, rows, meter)
    else:
        rows = task.plan.train_indices(fold)
        X, y, params = task.rows(rows)
        tic = time.perf_counter()
        learner.model.fit(X, y, **params)
        meter.fit_time += time.perf_counter() - tic
        meter.n_samples_fed += len(rows)
    scores, score_time = task.score(learner.model, fold)
    fed, fit_time = meter.take()
    model = learner.model if task.return_estimator else None
    return LeafResult(fold, scores, fed, fit_time, score_time, model)


def accepts_classes(estimator) -> bool:
    """Whether ``partial_fit`` takes the ``classes`` of a classifier."""
    if not is_classifier(estimator) or not hasattr(estimator, "partial_fit"):
        return False
    try:
        parameters = inspect.signature(estimator.partial_fit).parameters
    except (TypeError, ValueError):
        return False
    return "classes" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )
