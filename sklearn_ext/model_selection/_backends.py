"""CV backends: one contract, one place that chooses among them.

Every backend takes a :class:`CVTask` (estimator, data, fold plan, scorer) and
returns one :class:`LeafResult` per fold, handing each to ``task.on_leaf`` as soon
as that fold is scored. ``on_leaf`` may raise to stop the run (Optuna pruning);
every backend lets the exception through and stops training.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import time
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from traceback import format_exc
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, cpu_count, delayed, effective_n_jobs
from sklearn.base import clone, is_classifier
from sklearn.pipeline import Pipeline
from sklearn.utils import _safe_indexing, get_tags
from sklearn.utils.validation import _is_arraylike, _make_indexable, _num_samples

from sklearn_ext.model_selection._estimator import (
    TreeCVEstimator,
    balanced_class_weight,
)
from sklearn_ext.model_selection._leaves import LeafResult, LeafTable
from sklearn_ext.model_selection._levels import Meter as _Meter
from sklearn_ext.model_selection._levels import TreeLevels, walk_levels
from sklearn_ext.model_selection._plan import FoldPlan
from sklearn_ext.model_selection._shortcuts import (
    _NotApplicable,
    fast_accuracy,
    sgd_classifier_update,
    stream_update,
)
from sklearn_ext.model_selection._snapshot import (
    restore_snapshot,
    snapshots,
    take_snapshot,
)
from sklearn_ext.model_selection._streaming import stream_refusal
from sklearn_ext.utils._threads import threadpool_controller

__all__ = [
    "CVTask",
    "Backend",
    "PythonTreeBackend",
    "StandardBackend",
]


@dataclass
class CVTask:
    """Everything a backend needs for one cross-validation run.

    ``X`` is a validated ndarray or CSR matrix, or for a backend that takes
    data as given (:attr:`Backend.data_as_given`) the user's data made
    indexable (a DataFrame, a list of rows or texts, NaN for an imputer);
    ``y`` is an ndarray or ``None``. Built by the run core
    (:class:`~sklearn_ext.model_selection._core.RunCore`), which decides the
    scorer, the native metric, the classes and the stores once.

    Examples
    --------
    A backend run by hand on a four-fold plan of eight rows (the doors build
    the task themselves):

    >>> import numpy as np
    >>> from sklearn.linear_model import SGDClassifier
    >>> from sklearn_ext.model_selection import CVTask, FoldPlan, PythonTreeBackend
    >>> task = CVTask(
    ...     estimator=SGDClassifier(max_iter=1, tol=None, shuffle=False),
    ...     X=np.arange(16.0).reshape(8, 2),
    ...     y=np.array([0, 0, 1, 1, 0, 0, 1, 1]),
    ...     plan=FoldPlan([[0, 1], [2, 3], [4, 5], [6, 7]], n_samples=8),
    ...     scorer=lambda model, X, y: {"score": model.score(X, y)},
    ...     classes=np.array([0, 1]),
    ... )
    >>> task.plan.test_indices(0)
    array([0, 1])
    >>> len(PythonTreeBackend().run(task))
    4
    """

    estimator: Any
    X: Any
    y: Any
    plan: FoldPlan
    scorer: Callable[[Any, Any, Any], dict[str, float]]
    fit_params: dict[str, Any] = field(default_factory=dict)
    #: The one metric a backend may compute itself, decided once by the run
    #: core: the ``scoring`` string, or for ``scoring=None`` ``"accuracy"`` /
    #: ``"r2"`` (the classifier's / regressor's mixin ``score``) or
    #: ``"score"`` (the estimator's own ``score``); ``None`` when every leaf
    #: must go through ``scorer`` (a callable or several metrics, score
    #: parameters, train scores).
    metric: str | None = None
    classes: np.ndarray | None = None
    n_jobs: int | None = None
    return_estimator: bool = False
    #: How many early rungs a level walk (``run_levels``) yields first, the
    #: half rung last (``LevelEstimate.partial``); set by ``RunCore.run_levels``.
    early_rungs: int = 0
    #: Whether the early rungs are also scored chunk by chunk
    #: (``LevelEstimate.chunk_scores``); set by ``RunCore.run_levels``.
    early_chunks: bool = False
    on_leaf: Callable[[LeafResult], None] | None = None
    #: Parameters of the scorers; per-sample arrays are restricted to the
    #: rows scored.
    score_params: dict[str, Any] = field(default_factory=dict)
    #: Also score each fold's model on its training rows (``"train:<name>"``).
    return_train_score: bool = False
    #: The score of a fold whose fit fails (``"raise"``: the error propagates).
    error_score: Any = "raise"
    #: The names of the metrics ``scorer`` returns (``("score",)`` for one).
    names: tuple[str, ...] = ("score",)
    pre_dispatch: Any = "2*n_jobs"  # joblib's, for a backend's fold jobs
    #: ``around_fit((split, model, X, y, params))``: the context of each fold's
    #: own ``fit`` (scikit-learn's callback hooks).
    around_fit: Callable[..., Any] = contextlib.nullcontext

    def rows(self, indices: np.ndarray) -> tuple[Any, Any, dict[str, Any]]:
        """``X``, ``y`` and sample-aligned fit params restricted to ``indices``."""
        key = _as_slice(indices)
        X = _take(self.X, key)
        y = None if self.y is None else _take(self.y, key)
        return X, y, _restricted(self.fit_params, indices, self.plan.n_samples)

    def score(
        self, model, leaf: int, columns: np.ndarray | None = None
    ) -> tuple[dict[str, float], float]:
        """Scores of ``model`` on the rows that ``leaf`` holds out, and the time.

        ``columns`` (the training rows) slices a precomputed kernel or distance
        matrix by columns too, as scikit-learn does for pairwise estimators.
        """
        tic = time.perf_counter()
        scores = self._scores(model, self.plan.test_indices(leaf), columns)
        if self.return_train_score:
            train = self._scores(model, self.plan.train_indices(leaf), columns)
            scores.update({f"train:{name}": value for name, value in train.items()})
        return scores, time.perf_counter() - tic

    def _scores(self, model, rows, columns) -> dict[str, float]:
        X, y, _ = self.rows(rows)
        if columns is not None:  # a precomputed kernel: the training columns
            X = _safe_indexing(X, columns, axis=1)
        params = _restricted(self.score_params, rows, self.plan.n_samples)
        return {
            name: float(value)
            for name, value in self.scorer(model, X, y, **params).items()
        }

    def score_names(self) -> list[str]:
        """The names of the scores of a leaf (``"score"`` for one metric)."""
        names = list(self.names)
        if self.return_train_score:
            names += [f"train:{name}" for name in names]
        return names

    def leaf_result(
        self,
        leaf: int,
        scores: dict[str, float],
        n_samples_fed: int,
        fit_time: float,
        score_time: float,
        estimator=None,
        extras: Mapping[str, Any] | None = None,
        fit_error: str | None = None,
    ) -> LeafResult:
        """The :class:`LeafResult` of ``leaf``, numbered by its split index."""
        return LeafResult(
            int(self.plan.split_index[leaf]),
            scores,
            int(n_samples_fed),
            float(fit_time),
            float(score_time),
            estimator if self.return_estimator else None,
            dict(extras or {}),
            int(leaf),
            fit_error,
        )

    def emit(self, leaf: LeafResult) -> None:
        """Hand ``leaf`` to the listener; an exception it raises stops the run."""
        if self.on_leaf is not None:
            self.on_leaf(leaf)


def _as_slice(indices: np.ndarray) -> np.ndarray | slice:
    """A slice (a view, no copy) when ``indices`` is a contiguous increasing run."""
    n = len(indices)
    if n and indices[-1] - indices[0] == n - 1 and np.all(np.diff(indices) == 1):
        return slice(int(indices[0]), int(indices[-1]) + 1)
    return indices


def _restricted(params: dict[str, Any], indices, n_samples: int) -> dict[str, Any]:
    """``params`` with their per-sample arrays restricted to ``indices``."""
    return {
        key: _safe_indexing(_make_indexable(value), indices)
        if _is_sample_aligned(value, n_samples)
        else value
        for key, value in params.items()
    }


def _is_sample_aligned(value, n_samples: int) -> bool:
    with contextlib.suppress(TypeError):  # as _check_method_params splits them
        if _is_arraylike(value) or sp.issparse(value):
            return _num_samples(value) == n_samples
    return False


class Backend(ABC):
    """A way to compute the per-fold scores of a fold plan.

    Subclasses set :attr:`name`, implement :meth:`accepts` and :meth:`run`,
    and may take engine options in ``__init__`` (a configured instance can be
    passed as ``method`` wherever a method name is accepted). See
    ``docs/architecture.md`` for the contract and how to add a backend.

    Examples
    --------
    >>> from sklearn.linear_model import SGDClassifier
    >>> from sklearn_ext.linear_model import PegasosClassifier
    >>> from sklearn_ext.model_selection import Backend, choose_backend
    >>> backend = choose_backend(PegasosClassifier())
    >>> backend, isinstance(backend, Backend), backend.scores
    (NativeTreeBackend(), True, 'one_pass')
    >>> backend.accepts(SGDClassifier())
    False
    """

    #: Name recorded in the results (``"backend"``).
    name: ClassVar[str]

    #: Engine extras this backend puts in :attr:`LeafResult.extras`, each with
    #: how a run sums them up in a search's ``cv_results_`` and a trial's
    #: attributes: ``"sum"``, ``"mode"`` (the most frequent non-NaN value) or
    #: ``None`` (per fold only).
    extras: ClassVar[dict[str, str | None]] = {}

    #: What each fold's model is: ``"fit"``, the learner's own ``fit`` on the
    #: fold's training rows (standard, exact statistics, alpha seeding), or
    #: ``"one_pass"``, one ordered pass of ``partial_fit`` over them (the trees).
    #: The run core decides the regime, the warning and the refit from it.
    scores: ClassVar[str] = "fit"

    #: Whether ``task.X`` reaches the learner as the user gave it (a DataFrame,
    #: a list, NaN for an imputer) instead of checked into a finite ndarray or
    #: CSR matrix first, as the native engines need.
    data_as_given: ClassVar[bool] = False

    #: Whether the backend trains each fold on the plan's own training rows
    #: (``plan.train_indices``) when a splitter's are not the complement of its
    #: test fold; the others are refused such plans (``check_training_rows``).
    own_training_rows: ClassVar[bool] = False

    #: Whether :meth:`run_levels` walks the tree level by level, a generator of
    #: ``LevelEstimate`` (:mod:`._levels`); :meth:`RunCore.run_levels` is the door.
    supports_levels: ClassVar[bool] = False

    #: The store handed to the estimator's ``warm_start_store`` (see
    #: :meth:`with_store`), or None.
    store = None

    @classmethod
    @abstractmethod
    def accepts(cls, estimator) -> bool:
        """Whether this backend can run ``estimator``."""

    def refusal(self, estimator, X, y) -> str | None:
        """Why this backend cannot run ``estimator`` on this data, or ``None``.

        ``X`` and ``y`` are the data as the user gave them. The run core asks
        once per run: ``method="auto"`` then takes the next backend (the
        fallback warning gives the reason); a backend asked for by name raises
        a ``TypeError`` with it.
        """
        return None

    @abstractmethod
    def run(self, task: CVTask) -> LeafTable:
        """Score every fold of ``task.plan``, streaming leaves to ``task.emit``.

        Returns every leaf (the stopped ones excepted: an exception raised by
        ``task.on_leaf`` propagates and ends the run), in any order.
        """

    def with_store(self, store, estimator) -> Backend:
        """A copy of this backend that reads and fills ``store`` across runs.

        A store keeps what one run can give the next (the alpha-seeding
        backend's :class:`~sklearn_ext.svm.WarmStartStore`). By default a
        store is handed to an estimator that takes one: ``estimator``'s
        ``warm_start_store`` parameter is set for every fit of the run. A
        ``TypeError`` says when neither the backend nor the estimator keeps
        one.
        """
        if "warm_start_store" not in estimator.get_params():
            raise TypeError(
                f"The {self.name!r} backend keeps no store between runs, and "
                f"{type(estimator).__name__} has no 'warm_start_store' parameter "
                f"to hand it to; got store={store!r}."
            )
        backend = copy.copy(self)
        backend.store = store
        return backend

    def default_store(self, estimator):
        """A store of its own for one search or one study, or ``None``.

        :class:`~sklearn_ext.TreeCVSearchCV` (once per ``fit``) and
        ``TreeCVObjective`` (once per objective) ask the backend that runs
        ``estimator`` for it when the user gave no store, and hand it to every
        run with :meth:`with_store`. ``None`` (the default) means none: only
        backends whose runs gain from each other's work return one (the
        ``alpha_seeding`` backend's :class:`~sklearn_ext.svm.WarmStartStore`,
        cross-C warm starts).
        """
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


# -- the Python tree ---------------------------------------------------------------
class _Learner:
    """A model being trained along the tree, with its bookkeeping."""

    __slots__ = ("model", "fitted")

    def __init__(self, model, fitted: bool = False) -> None:
        self.model = model
        self.fitted = fitted

    def fork(self) -> _Learner:
        return _Learner(copy.deepcopy(self.model), self.fitted)


class _TreeRun:
    """One run of the Python tree: the rows gathered once, the shortcuts chosen once.

    The rows are copied once in the plan's chunk order (no copy when the
    chunks already follow each other in ``X``), so that with a fixed feeding
    order every update and every test fold is a contiguous block, a view of
    that copy. A randomized order gathers each update's rows from the copy.
    With ``shortcuts``, models are snapshot instead of deep-copied where the
    learner allows it (:mod:`._snapshot`), SGD classifiers are updated without
    the per-call overhead of ``partial_fit`` and linear classifiers scored
    without the scorer's (:mod:`._shortcuts`).
    """

    def __init__(self, task: CVTask, shortcuts: bool) -> None:
        plan = task.plan
        self.task = task
        self.plan = plan
        self.bounds = plan.bounds
        order = plan.sample_order
        if np.array_equal(order, np.arange(plan.n_samples)):
            self.X, self.y, self.params = task.X, task.y, task.fit_params
        else:
            self.X = _take(task.X, order)
            self.y = None if task.y is None else task.y[order]
            self.params = {
                key: _safe_indexing(value, order)
                if _is_sample_aligned(value, plan.n_samples)
                else value
                for key, value in task.fit_params.items()
            }
        self.aligned = [
            key
            for key, value in self.params.items()
            if _is_sample_aligned(value, plan.n_samples)
        ]
        self.position = None
        if plan.order == "randomized":
            self.position = np.empty(plan.n_samples, dtype=np.intp)
            self.position[order] = np.arange(plan.n_samples, dtype=np.intp)
        self.shortcuts = shortcuts
        self.update = None
        self.fast_score = None
        # Leaves scored on the gathered rows, without restricting score
        # parameters or scoring the training rows too, which task.score does.
        self.own_scoring = not (task.score_params or task.return_train_score)
        # The shortcuts skip the learner's checks of X: they need a finite
        # numeric array, checked here once per run.
        if shortcuts and _finite_numeric(self.X):
            self.update = sgd_classifier_update(
                task.estimator, self.X, self.params
            ) or stream_update(task.estimator, self.X, self.params)
            if self.own_scoring and task.y is not None and task.y.ndim == 1:
                self.fast_score = fast_accuracy(task.estimator, task.metric)

    def fed(self, node: tuple[int, int], sibling: tuple[int, int]):
        """Where the rows fed to obtain ``node`` are: a slice or positions."""
        if self.position is not None:
            return self.position[self.plan.feed(*node)]
        return slice(int(self.bounds[sibling[0]]), int(self.bounds[sibling[1] + 1]))

    def fit(self, learner: _Learner, key, meter: _Meter) -> None:
        if learner.fitted and self.update is not None:
            tic = time.perf_counter()
            self.update(learner.model, key, self.y)
            meter.fit_time += time.perf_counter() - tic
            meter.n_samples_fed += _n_rows(key)
            return
        X = _take(self.X, key)
        y = None if self.y is None else self.y[key]
        params = self.params
        if self.aligned:
            params = {**params}
            for name in self.aligned:
                params[name] = _safe_indexing(params[name], key)
        if not learner.fitted and self.task.classes is not None:
            params = {**params, "classes": self.task.classes}
        tic = time.perf_counter()
        learner.model.partial_fit(X, y, **params)
        meter.fit_time += time.perf_counter() - tic
        meter.n_samples_fed += _n_rows(key)
        learner.fitted = True

    def score(self, model, leaf: int, end: int | None = None):
        """Scores of ``model`` on chunks ``leaf .. end`` (``end``: a level's node,
        one chunk or more: its test metrics only; without ``end``, a leaf's,
        train scores included when asked for)."""
        if end is not None:
            if not self.own_scoring:  # the test metrics of the node's rows
                tic = time.perf_counter()
                rows = self.plan.chunk_rows(leaf, end)
                scores = self.task._scores(model, rows, None)
                return scores, time.perf_counter() - tic
        elif not self.own_scoring:
            return self.task.score(model, leaf)
        end = leaf if end is None else end
        tic = time.perf_counter()
        key = slice(int(self.bounds[leaf]), int(self.bounds[end + 1]))
        X = _take(self.X, key)
        y = None if self.y is None else self.y[key]
        scores = None
        if self.fast_score is not None:
            try:
                scores = self.fast_score(model, X, y)
            except _NotApplicable:
                self.fast_score = None
        if scores is None:
            scores = {
                name: float(value)
                for name, value in self.task.scorer(model, X, y).items()
            }
        return scores, time.perf_counter() - tic

    def subtree(self, node, learner: _Learner, meter: _Meter):
        """Depth-first TreeCV below ``node``; yields leaves in fold order."""
        start, end = node
        task = self.task
        if start == end:
            _flush(learner.model, meter)
            scores, score_time = self.score(learner.model, start)
            fed, fit_time = meter.take()
            model = copy.deepcopy(learner.model) if task.return_estimator else None
            yield task.leaf_result(start, scores, fed, fit_time, score_time, model)
            return
        left, right = self.plan.children(start, end)
        if self.shortcuts and snapshots(learner.model):
            state = take_snapshot(learner.model), learner.fitted
            self.fit(learner, self.fed(left, right), meter)
            yield from self.subtree(left, learner, meter)
            restore_snapshot(learner.model, state[0])
            learner.fitted = state[1]
        else:
            forked = learner.fork()
            self.fit(forked, self.fed(left, right), meter)
            yield from self.subtree(left, forked, meter)
            del forked
        self.fit(learner, self.fed(right, left), meter)
        yield from self.subtree(right, learner, meter)

    def grow(self, node, sibling, learner: _Learner, meter: _Meter):
        self.fit(learner, self.fed(node, sibling), meter)
        return node, learner, meter

    def collect(self, node, learner: _Learner, meter: _Meter):
        return list(self.subtree(node, learner, meter))


def _flush(model, meter: _Meter) -> None:
    """Feed the rows a batching wrapper keeps waiting, as training.

    A :class:`TreeCVEstimator` feeds rows short of a full batch when it is
    first used (and keeps the result): doing it here makes a fit that fails
    on them a failed fit of the fold, as in ``cross_validate``, rather than a
    failed scoring.
    """
    if isinstance(model, TreeCVEstimator):
        tic = time.perf_counter()
        model.estimator_  # noqa: B018 (the property feeds the waiting rows)
        meter.fit_time += time.perf_counter() - tic


def _finite_numeric(X) -> bool:
    """Whether ``X`` is a 2-D numeric ndarray without NaN or infinity."""
    if not isinstance(X, np.ndarray) or X.ndim != 2 or X.dtype.kind not in "biuf":
        return False
    return X.dtype.kind != "f" or bool(np.isfinite(X).all())


def _take(X, key):
    """Rows ``key`` (a slice or positions) of an array, CSR matrix, frame or list."""
    if isinstance(X, np.ndarray) or (hasattr(X, "shape") and not hasattr(X, "iloc")):
        return X[key]
    if isinstance(key, slice):
        key = np.arange(key.start, key.stop)
    return _safe_indexing(X, key)


def _n_rows(key) -> int:
    if isinstance(key, slice):
        return key.stop - key.start
    return len(key)


class PythonTreeBackend(Backend):
    """Algorithm 1 of the TreeCV paper around any ``partial_fit`` estimator.

    A node's model is saved before the left child's update and reused for the
    right child, so a sequential run holds one model per tree level,
    ``O(log k)``. The rows are gathered once per run in the plan's chunk
    order, so that every update and test fold is a contiguous block.

    Parameters
    ----------
    shortcuts : bool, default=True
        Save a node's model by a snapshot of exactly the state ``partial_fit``
        changes, for scikit-learn's ``SGDClassifier``, ``SGDRegressor``,
        ``Perceptron``, ``PassiveAggressiveClassifier``/``Regressor``, the
        naive Bayes family, ``MiniBatchKMeans`` and
        ``MLPClassifier``/``Regressor``, and for any learner that provides
        ``_treecv_snapshot()`` returning its state and
        ``_treecv_restore(state)`` putting it back (section 4.1 of the paper);
        deep-copy any other. Update SGD classifiers after their first call
        and score linear classifiers by accuracy without the per-call
        validation of ``partial_fit`` and of the scorer. The fold scores are
        the same either way (bit for bit); ``False`` runs the public methods
        and deep copies only, the reference the shortcuts are tested against.

    Notes
    -----
    With ``n_jobs > 1`` the top levels are trained in parallel, node by node,
    until there is a subtree per worker; the subtrees then run in parallel
    under a thread limit of ``cpu_count() // n_jobs`` each.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.linear_model import SGDClassifier
    >>> from sklearn_ext import tree_cross_validate
    >>> from sklearn_ext.model_selection import PythonTreeBackend
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> est = SGDClassifier(max_iter=1, tol=None, shuffle=False, random_state=0)
    >>> fast = tree_cross_validate(est, X, y, cv=10, method=PythonTreeBackend())
    >>> reference = tree_cross_validate(
    ...     est, X, y, cv=10, method=PythonTreeBackend(shortcuts=False))
    >>> bool((fast["test_score"] == reference["test_score"]).all())
    True
    """

    name = "python_tree"
    scores = "one_pass"
    data_as_given = True

    def __init__(self, shortcuts: bool = True) -> None:
        if not isinstance(shortcuts, bool):
            raise ValueError(
                "The 'shortcuts' parameter of PythonTreeBackend must be an "
                f"instance of 'bool'. Got {shortcuts!r} instead."
            )
        self.shortcuts = shortcuts

    @classmethod
    def accepts(cls, estimator) -> bool:
        return callable(getattr(estimator, "partial_fit", None)) or isinstance(
            estimator, Pipeline
        )

    def refusal(self, estimator, X, y) -> str | None:
        if isinstance(estimator, Pipeline):
            reason = stream_refusal(estimator)
            if reason is not None:
                return reason
        return balanced_class_weight(estimator)

    def run(self, task: CVTask) -> LeafTable:
        run = _TreeRun(task, self.shortcuts)
        root = _Learner(_estimator(self, task))
        n_jobs = effective_n_jobs(task.n_jobs)
        if n_jobs == 1 or task.plan.n_splits < 4:
            return _emit_all(task, run.subtree(task.plan.root, root, _Meter()))
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
                    jobs.append(delayed(run.grow)(left, right, learner.fork(), meter))
                    jobs.append(delayed(run.grow)(right, left, learner, _Meter()))
                frontier = parallel(jobs)
        parallel = Parallel(n_jobs=n_jobs, return_as="generator_unordered")
        with threadpool_controller().limit(limits=max(1, cpu_count() // n_jobs)):
            subtrees = parallel(
                delayed(run.collect)(node, learner, meter)
                for node, learner, meter in frontier
            )
            return _emit_all(
                task,
                (leaf for leaves in subtrees for leaf in leaves),
                outputs=subtrees,
            )

    supports_levels = True

    def run_levels(self, task: CVTask):
        """The tree breadth first: one ``LevelEstimate`` per level (one worker)."""
        # The walk takes the root's model over (no local keeps it alive).
        root = _Learner(_estimator(self, task))
        levels = TreeLevels(_TreeRun(task, self.shortcuts), root, _flush)
        del root
        yield from walk_levels(
            task.plan,
            levels,
            task.names,
            LeafTable.from_leaves,
            early_rungs=task.early_rungs,
            early_chunks=task.early_chunks,
        )

    def __repr__(self) -> str:
        return (
            "PythonTreeBackend()"
            if self.shortcuts
            else ("PythonTreeBackend(shortcuts=False)")
        )


def _identity(node, learner, meter):
    return node, learner, meter


def _emit_all(task: CVTask, leaves, *, outputs=None) -> LeafTable:
    """Hand each leaf to the listener as it comes.

    ``outputs`` is the joblib output generator ``leaves`` reads from: when the
    listener stops the run, it is closed at once, cancelling the folds still
    running, without joblib's warning that they were (the stop is on purpose:
    a pruned trial, a Ctrl-C).
    """
    results = []
    try:
        for leaf in leaves:
            results.append(leaf)
            task.emit(leaf)
    except BaseException:
        if outputs is not None:
            with warnings.catch_warnings():
                warnings.filterwarnings(
                    "ignore", message=".*input task iterator", category=UserWarning
                )
                outputs.close()
        raise
    return LeafTable.from_leaves(results)


# -- the standard reference ---------------------------------------------------------
class StandardBackend(Backend):
    """``k`` independent fits: scikit-learn's standard CV, the reference and fallback.

    Each fold's model is the estimator's own ``fit`` on the splitter's own
    training rows, in the splitter's own order (:meth:`FoldPlan.fit_indices`),
    exactly as in ``cross_validate``: the same fold scores for every splitter
    and learner, order-sensitive ones included. This is the switch that
    scores a learner's ``fit`` when it trains differently from the one ordered
    pass the tree scores (``SGDClassifier``'s epochs). A splitter's own
    training rows (a purged K-fold's) are honoured as given. A fold whose fit
    fails is scored ``task.error_score`` with its traceback, as in
    ``cross_validate``, unless that is ``"raise"``.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.linear_model import Ridge
    >>> from sklearn_ext.model_selection import StandardBackend, tree_cross_validate
    >>> X, y = load_digits(return_X_y=True)
    >>> result = tree_cross_validate(
    ...     Ridge(), X, y, cv=3, method=StandardBackend(), return_run_info=True
    ... )
    >>> result["backend"], result["test_score"].round(3)
    ('standard', array([0.523, 0.568, 0.428]))
    """

    name = "standard"
    data_as_given = True
    own_training_rows = True
    y_as_given = True  # a list stays a list, as cross_validate hands it

    @classmethod
    def accepts(cls, estimator) -> bool:
        return callable(getattr(estimator, "fit", None))

    def run(self, task: CVTask) -> LeafTable:
        n_jobs = effective_n_jobs(task.n_jobs)
        # In the tree's leaf order, the order every backend visits the folds in.
        leaves = range(task.plan.n_splits)
        estimator = _estimator(self, task)
        if n_jobs == 1:
            return _emit_all(
                task, (_standard_fold(task, estimator, leaf) for leaf in leaves)
            )
        parallel = Parallel(
            n_jobs=n_jobs,
            return_as="generator_unordered",
            pre_dispatch=task.pre_dispatch,
        )
        folds = parallel(
            delayed(_standard_fold)(task, estimator, leaf) for leaf in leaves
        )
        return _emit_all(task, folds, outputs=folds)


def _estimator(backend: Backend, task: CVTask):
    """An unfitted copy of the task's estimator, holding the backend's store."""
    estimator = clone(task.estimator)
    if backend.store is not None:
        estimator.set_params(warm_start_store=backend.store)
    return estimator


def _standard_fold(task: CVTask, estimator, fold: int) -> LeafResult:
    model = clone(estimator)
    pairwise = get_tags(model).input_tags.pairwise
    rows = task.plan.fit_indices(fold)
    X, y, params = task.rows(rows)
    if pairwise:  # a precomputed kernel: training columns too
        X = _safe_indexing(X, rows, axis=1)
    tic = time.perf_counter()
    try:
        split = int(task.plan.split_index[fold])
        with task.around_fit((split, model, X, y, params)):
            if y is None:
                model.fit(X, **params)
            else:
                model.fit(X, y, **params)
    except Exception:
        if task.error_score == "raise":
            raise
        fit_time = time.perf_counter() - tic
        scores = {name: float(task.error_score) for name in task.score_names()}
        return task.leaf_result(
            fold, scores, len(rows), fit_time, 0.0, fit_error=format_exc()
        )
    fit_time = time.perf_counter() - tic
    scores, score_time = task.score(model, fold, columns=rows if pairwise else None)
    return task.leaf_result(fold, scores, len(rows), fit_time, score_time, model)


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
