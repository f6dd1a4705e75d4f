"""The native tree level by level: :func:`._levels.walk_levels` over kernel states.

A level of the native tree is a list of flat model states (numpy arrays). The
walk is a Python loop over the nodes of a level, each node one call of the
kernel: ``_tree.feed_child`` (the row feed of the depth-first walker, without
the GIL) and ``NativeModel.score_rows`` (the leaf score of the depth-first
walker, on any node's rows). Both are the walker's own routines, so the leaves
equal :meth:`NativeTreeBackend.run`'s bit for bit; the loop costs a few
microseconds per node.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np

from sklearn_ext._fast import _tree
from sklearn_ext.model_selection._backends import CVTask, LeafResult, LeafTable
from sklearn_ext.model_selection._levels import LevelEstimate, walk_levels

__all__ = ["native_levels"]

#: Rows fed and scored together: a block stays in the processor's cache
#: between its feed to one child and its scoring by the other.
FUSED_BLOCK = 4096


class _NativeLevels:
    """The native tree's :class:`~._levels.LevelEngine`: states fed by the kernel."""

    splits_feeds = True

    def __init__(self, task: CVTask, model, rebuild) -> None:
        plan = task.plan
        self.task, self.model, self.rebuild = task, model, rebuild
        self.order, self.bounds = plan.sample_order, plan.bounds
        self.randomized = plan.order == "randomized"
        self.seed = plan.seed or 0
        # Python scores what the kernel cannot (another scoring, several metrics).
        self.python_score = not model.scores_leaves
        # Accuracy adds up over blocks of rows exactly (as counts of hits).
        self.fuse = model.scores_leaves and task.metric == "accuracy"
        #: The node whose feed is being split, and its rows (:meth:`feed_part`).
        self._fed: tuple | None = None

    def root(self) -> np.ndarray:
        return self.model.new_state()

    def fork(self, state: np.ndarray) -> np.ndarray:
        return state.copy()

    def feed(self, parent, node, sibling, state) -> tuple[int, float]:
        tic = time.perf_counter()
        n = _tree.feed_child(
            self.model,
            state,
            self.order,
            self.bounds,
            *parent,
            *node,
            self.randomized,
            self.seed,
        )
        return int(n), time.perf_counter() - tic

    def feed_part(self, node, state, start: int, stop: int) -> tuple[int, float]:
        # The kernel's one update, row after row: a feed split in pieces gives
        # the model of the whole feed, bit for bit (as feed_scoring's blocks).
        # The pieces of one node's feed share its rows, made once.
        if self._fed is None or self._fed[0] != node:
            self._fed = (node, self.task.plan.feed(*node))
        rows = self._fed[1][start:stop]
        if stop >= len(self._fed[1]):  # the last piece: not kept for the walk
            self._fed = None
        tic = time.perf_counter()
        self.model.feed_rows(state, rows)
        return len(rows), time.perf_counter() - tic

    def feed_scoring(self, parent, node, sibling, state, scored):
        if not self.fuse:
            return (*self.feed(parent, node, sibling, state), None)
        self._check_finite(sibling[0], scored)
        rows = self.task.plan.feed(*node)  # as feed_child feeds them
        fit_time = score_time = 0.0
        correct = 0
        for start in range(0, len(rows), FUSED_BLOCK):
            block = rows[start : start + FUSED_BLOCK]
            tic = time.perf_counter()
            self.model.feed_rows(state, block)
            toc = time.perf_counter()
            # The block's accuracy times its size: its exact count of hits.
            correct += round(self.model.score_rows(scored, block) * len(block))
            fit_time += toc - tic
            score_time += time.perf_counter() - toc
        return len(rows), fit_time, ({"score": correct / len(rows)}, score_time)

    def score(self, node, state) -> tuple[dict[str, float], float]:
        self._check_finite(node[0], state)
        tic = time.perf_counter()
        if self.python_score:
            estimator = self.rebuild(np.array(state, dtype=np.float64))
            rows = self.task.plan.chunk_rows(*node)
            scores = self.task._scores(estimator, rows, None)
        else:
            rows = self.order[self.bounds[node[0]] : self.bounds[node[1] + 1]]
            scores = {"score": float(self.model.score_rows(state, rows))}
        return scores, time.perf_counter() - tic

    def leaf(
        self, leaf: int, state, n_fed: int, fit_time: float, scored=None
    ) -> LeafResult:
        self._check_finite(leaf, state)
        task, estimator = self.task, None
        if self.python_score or task.return_estimator:
            estimator = self.rebuild(np.array(state, dtype=np.float64))
        if scored is not None:
            scores, score_time = scored
        elif self.python_score:  # as the depth-first walk's leaves
            scores, score_time = task.score(estimator, leaf)
        else:
            scores, score_time = self.score((leaf, leaf), state)
        result = task.leaf_result(leaf, scores, n_fed, fit_time, score_time, estimator)
        task.emit(result)
        return result

    def _check_finite(self, leaf: int, state: np.ndarray) -> None:
        """Raise what the depth-first walk raises for a state that overflowed."""
        if np.isfinite(state).all():
            return
        error = _tree.NonFiniteState(leaf, state.copy())
        self.rebuild(error.state)  # the estimator's own message, if it has one
        raise error


def native_levels(task: CVTask, model, rebuild) -> Iterator[LevelEstimate]:
    """The level walk of :class:`NativeTreeBackend` (one thread), on the kernel
    ``model`` of the task's estimator and its ``rebuild`` (of an estimator from
    a state), as the backend's ``run`` makes them."""
    engine = _NativeLevels(task, model, rebuild)
    return walk_levels(
        task.plan,
        engine,
        task.names,
        LeafTable.from_leaves,
        early_rungs=task.early_rungs,
        early_chunks=task.early_chunks,
    )
