"""The native tree: the whole TreeCV recursion in C, for every native learner."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from joblib import effective_n_jobs

from sklearn_ext._fast import _tree
from sklearn_ext.model_selection._backends import Backend, CVTask, LeafTable
from sklearn_ext.model_selection._native_scaled import (
    native_model,
    scaled_parts,
    scaled_refusal,
)

__all__ = ["NativeTreeBackend"]


class NativeTreeBackend(Backend):
    """TreeCV for the native learners, entirely in C.

    A native learner is an estimator with a ``_native_model(task)`` method that
    returns its kernel on the task's data (a ``NativeModel`` of
    :mod:`sklearn_ext._fast._tree`) and a function rebuilding a fitted
    estimator from a model state: the linear learners of
    :mod:`sklearn_ext.linear_model` and
    :class:`~sklearn_ext.anomaly.SemiSupervisedAnomalyDetector` are. One stack
    walker runs the recursion in Cython with one flat model state per tree
    level (copied with ``memcpy``), feeding rows in the plan's order:
    ``"fixed"``, or ``"randomized"`` with the same per-node splitmix64 streams
    as :meth:`FoldPlan.feed`. Every update goes through the learner's own row
    kernel, so fold scores equal those of :class:`PythonTreeBackend` on the
    same plan.

    Leaves are scored in C where the kernel can (accuracy for the linear
    classifiers; mean squared / absolute error and R^2 for the regressor; the
    AUROC for the anomaly detector, each also as ``scoring=None``); any other
    ``scoring`` is computed by the task's scikit-learn scorer on an estimator
    rebuilt from the leaf's state. A leaf whose model overflowed to infinity
    or NaN raises a ``ValueError`` (the estimator's own, when rebuilding it
    from that state raises one) instead of a score.

    With ``n_jobs > 1`` the top of the tree is grown level by level until
    there is one subtree per thread, and the threads walk their subtrees
    without the GIL (threads rather than joblib workers, because the subtrees
    share the kernel's data and write into the same result columns).

    A ``Pipeline`` of a ``StandardScaler``, ``MinMaxScaler`` or
    ``MaxAbsScaler`` and a linear learner runs here too, in the streaming
    regime of every pipeline through the tree: the scaler's running
    statistics and the rows waiting for a full batch are part of the node
    state (:mod:`._native_scaled`), so its fold models are the Python tree's.

    See ``docs/architecture.md`` ("Adding a native learner") for the model
    interface.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn_ext.linear_model import PegasosClassifier
    >>> from sklearn_ext.model_selection import NativeTreeBackend, tree_cross_validate
    >>> X, y = load_digits(return_X_y=True)
    >>> NativeTreeBackend.accepts(PegasosClassifier())
    True
    >>> result = tree_cross_validate(
    ...     PegasosClassifier(random_state=0), X, y, cv=4,
    ...     method=NativeTreeBackend(), return_run_info=True,
    ... )
    >>> result["backend"], result["test_score"].round(3)
    ('native_tree', array([0.84 , 0.851, 0.84 , 0.864]))
    """

    name = "native_tree"
    scores = "one_pass"

    @classmethod
    def accepts(cls, estimator) -> bool:
        return (
            callable(getattr(estimator, "_native_model", None))
            or scaled_parts(estimator) is not None
        )

    def refusal(self, estimator, X, y) -> str | None:
        return scaled_refusal(estimator, X)

    supports_levels = True

    def run_levels(self, task: CVTask):
        """The tree breadth first: one ``LevelEstimate`` per level (one thread)."""
        from sklearn_ext.model_selection._native_levels import native_levels

        yield from native_levels(task, *native_model(task))

    def run(self, task: CVTask) -> LeafTable:
        model, rebuild = native_model(task)
        run = _NativeRun(task, model, rebuild)
        plan = task.plan
        root_state = model.new_state()
        n_jobs = min(effective_n_jobs(task.n_jobs), plan.n_splits)
        if n_jobs <= 1 or plan.n_splits < 4:
            errors = [run.subtree(plan.root, root_state)]
        else:
            errors = _run_threaded(plan, root_state, n_jobs, run.feed, run.subtree)
        for error in errors:
            if isinstance(error, _tree.NonFiniteState):
                rebuild(error.state)  # The estimator's own message, if it has one.
            if error is not None:
                raise error
        if run.keep_leaves:
            return LeafTable.from_leaves(run.leaves)
        return LeafTable.from_leaf_columns(
            plan, run.scores, run.n_fed, run.fit_time, run.score_time
        )


class _NativeRun:
    """One run of the native tree: the kernel, the result columns, the leaves.

    The kernel writes each leaf's score, rows fed and times into the columns;
    leaves go through Python (:meth:`on_leaf`) only when someone needs them
    there: a scoring the kernel does not compute, the fold models, a listener.
    """

    def __init__(self, task: CVTask, model, rebuild) -> None:
        k = task.plan.n_splits
        self.task, self.model, self.rebuild = task, model, rebuild
        self.scores = np.full(k, np.nan)
        self.n_fed = np.zeros(k, dtype=np.int64)
        self.fit_time = np.zeros(k)
        self.score_time = np.zeros(k)
        self.stop = np.zeros(1, dtype=np.intc)
        self.python_score = not model.scores_leaves
        self.streaming = (
            self.python_score or task.return_estimator or task.on_leaf is not None
        )
        # The leaves are kept only when Python made their scores or models; a
        # listener alone leaves the kernel's columns complete, and half a
        # million kept LeafResults would cost the garbage collector seconds.
        self.keep_leaves = self.python_score or task.return_estimator
        self.leaves: list = []
        self.lock = threading.Lock()

    def on_leaf(self, leaf: int, state: np.ndarray) -> None:
        task, leaf = self.task, int(leaf)
        estimator = None
        if self.python_score or task.return_estimator:
            estimator = self.rebuild(np.array(state, dtype=np.float64))
        if self.python_score:
            leaf_scores, leaf_score_time = task.score(estimator, leaf)
        else:
            leaf_scores = {"score": float(self.scores[leaf])}
            leaf_score_time = float(self.score_time[leaf])
        with self.lock:
            if self.stop[0]:
                return  # Another thread's leaf stopped the run meanwhile.
            result = task.leaf_result(
                leaf,
                leaf_scores,
                self.n_fed[leaf],
                self.fit_time[leaf],
                leaf_score_time,
                estimator,
            )
            if self.keep_leaves:
                self.leaves.append(result)
            try:
                task.emit(result)
            except BaseException:
                self.stop[0] = 1  # Before the lock is released.
                raise

    def subtree(self, node, state, carried_fed=0, carried_time=0.0):
        plan = self.task.plan
        return _tree.run_subtree(
            self.model,
            state,
            plan.sample_order,
            plan.bounds,
            node[0],
            node[1],
            plan.order == "randomized",
            plan.seed or 0,
            self.scores,
            self.n_fed,
            self.fit_time,
            self.score_time,
            self.stop,
            self.on_leaf if self.streaming else None,
            carried_fed,
            carried_time,
        )

    def feed(self, parent, node, state):
        plan = self.task.plan
        tic = time.perf_counter()
        n = _tree.feed_child(
            self.model,
            state,
            plan.sample_order,
            plan.bounds,
            *parent,
            *node,
            plan.order == "randomized",
            plan.seed or 0,
        )
        return node, state, n, time.perf_counter() - tic


def _run_threaded(plan, root_state, n_jobs, feed, subtree):
    """Grow the top of the tree level by level, then one subtree per thread."""
    # (node, state, rows fed and time spent on its way down, not yet reported)
    frontier = [(plan.root, root_state, 0, 0.0)]
    with ThreadPoolExecutor(max_workers=n_jobs) as pool:
        while len(frontier) < n_jobs and any(s != e for (s, e), *_ in frontier):
            grown = []
            for node, state, fed, spent in frontier:
                if node[0] == node[1]:
                    grown.append((node, state, fed, spent, None))
                    continue
                left, right = plan.children(*node)
                # The parent's pending work is carried by its left child.
                job = pool.submit(feed, node, left, state.copy())
                grown.append((left, None, fed, spent, job))
                job = pool.submit(feed, node, right, state)
                grown.append((right, None, 0, 0.0, job))
            frontier = []
            for node, state, fed, spent, job in grown:
                if job is not None:
                    _, state, n, dt = job.result()
                    fed, spent = fed + n, spent + dt
                frontier.append((node, state, fed, spent))
        futures = [
            pool.submit(subtree, node, state, fed, spent)
            for node, state, fed, spent in frontier
        ]
        return [future.result() for future in futures]
