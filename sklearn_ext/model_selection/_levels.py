"""The tree level by level: a complete CV estimate over all rows after each level.

The depth-first walk of the TreeCV tree (:class:`PythonTreeBackend`,
:class:`NativeTreeBackend`) finishes fold after fold and keeps one model per
tree level, ``O(log k)``. Walked breadth first, level ``l`` holds the models of
every node at depth ``l``: each was trained on every row except its node's
chunks, so scoring each node's model on its node's held-out rows (one
prediction pass over the data per level) scores every row once, by a model that
never saw it. Level ``l`` is a complete ``2**l``-fold CV over all rows, after
``l`` passes; the last level is the ``k``-fold CV of the leaves. The walk keeps
the models of one level, ``O(k)``.

:func:`walk_levels` is that walk for any engine; an engine gives it a
:class:`LevelEngine`: how to start, copy, feed and score a node's model, and
how to report a leaf. :class:`PythonTreeBackend` walks with
:class:`_PythonLevels` (below), :class:`NativeTreeBackend` with the native one
(:mod:`._native_levels`). Every consumer runs a walk through
:meth:`RunCore.run_levels`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from sklearn_ext.model_selection._plan import FoldPlan

__all__ = [
    "EARLY_RUNGS",
    "LevelEstimate",
    "LevelEngine",
    "TreeLevels",
    "n_levels",
    "walk_levels",
]

#: The early rungs the doors ask a walk for (``report="levels"`` and the
#: racing search): the quarter rung and the half rung. Measured in the user
#: guide's ladder page (a third, the eighth rung, cost a study its best).
EARLY_RUNGS = 2


@dataclass(frozen=True)
class LevelEstimate:
    """One level of the TreeCV tree as a cross-validation estimate over all rows.

    A part of level ``l`` is a node of the tree at depth ``l``: its model was
    trained on every row outside the node's chunks and is scored on them. The
    parts of a level partition the rows, so its estimate is a complete
    ``n_parts``-fold CV: every row is scored once, by a model that never saw it,
    trained on about ``1 - 2**-l`` of the data. A leaf shallower than ``l``
    (``k`` not a power of two) stays a part of every deeper level, unchanged.

    Attributes
    ----------
    level : int
        The level, from 1; the last one is the leaves'.
    n_parts : int
        Parts at this level (``2**level`` where the tree is full).
    scores : dict of str to float
        Each test metric over all held-out rows of the level: the mean of the
        part scores weighted by the part sizes (``"score"`` for one metric).
        Train scores (``return_train_score``) are the leaves' only, in
        :attr:`leaves`.
    part_scores : dict of str to ndarray of shape (n_parts,)
        Each metric per part, in plan order (parts left to right).
    part_sizes : ndarray of shape (n_parts,)
        Held-out rows per part.
    n_samples_fed : int
        Rows fed to the learner so far, over the whole run.
    final : bool
        Whether this is the leaves' level (the last).
    leaves : LeafTable or None
        At the final level, exactly what the backend's ``run`` returns for the
        same task (the same fold scores, bit for bit, for a deterministic
        learner); ``None`` before.
    partial : bool
        Whether this is an *early rung*: level 1's first part alone
        (``level=1``, ``n_parts=1``), the root's left child scored on the left
        half while it is fed the right half, before the right child is fed. It
        is an honest hold-out estimate over the left half's rows, by a model
        that never saw them. The last early rung, the *half rung*, comes when
        the left child's feed is done (about ``n / 2`` rows); level 1's first
        part is the same score, bit for bit (not refitted). Only walks asked
        for them (``RunCore.run_levels(early_rungs=...)``) yield them;
        ``False`` for every other estimate.
    feed_share : float
        For an early rung, the share of the root's left child's feed done when
        it was scored: ``1.0`` for the half rung, ``0.5`` for the quarter rung
        (about ``n / 4`` rows fed); ``1.0`` for every other estimate.
    chunk_scores : dict of str to ndarray, or None
        For an early rung walked with ``early_chunks``, each metric per chunk
        of the held-out half (a chunk is one fold's rows), in plan order: a
        test over chunks compares two early rungs on any metric (the racing
        search's ``early_rung_test``, where the metric is not accuracy).
        ``None`` otherwise.
    chunk_sizes : ndarray or None
        Held-out rows per chunk, with :attr:`chunk_scores`.

    See Also
    --------
    sklearn_ext.tree_cross_validate : ``return_levels=True`` returns them.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.linear_model import SGDClassifier
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn_ext import tree_cross_validate
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> est = SGDClassifier(max_iter=1, tol=None, shuffle=False, random_state=0)
    >>> result = tree_cross_validate(
    ...     est, X, y, cv=8, method="treecv", return_levels=True)
    >>> [(rung.level, rung.n_parts) for rung in result["levels"]]
    [(1, 2), (2, 4), (3, 8)]
    >>> rung = result["levels"][0]  # a 2-fold CV over all rows, after one pass
    >>> int(rung.part_sizes.sum()) == len(X)
    True
    >>> result["levels"][-1].final
    True

    The early rungs come first when asked for (here through the run core; this
    learner's Python tree cannot pause a feed, so it has the half rung only):

    >>> from sklearn_ext.model_selection._core import RunCore
    >>> core = RunCore(est, X, y, cv=8, method="treecv")
    >>> rungs = list(core.run_levels(core.resolve(est), early_rungs=2))
    >>> [(r.rung, r.n_parts, r.partial) for r in rungs]
    [(0.5, 1, True), (1, 2, False), (2, 4, False), (3, 8, False)]
    >>> bool(rungs[0].scores["score"] == rungs[1].part_scores["score"][0])
    True
    """

    level: int
    n_parts: int
    scores: dict[str, float]
    part_scores: dict[str, np.ndarray]
    part_sizes: np.ndarray
    n_samples_fed: int
    final: bool
    # LeafTable lives in ._backends, which imports this module: named only.
    leaves: LeafTable | None = None  # noqa: F821
    partial: bool = False
    feed_share: float = 1.0
    chunk_scores: dict[str, np.ndarray] | None = None
    chunk_sizes: np.ndarray | None = None

    @property
    def rung(self) -> float:
        """The rung: ``0.5 * feed_share`` for an early rung (``0.5`` for the
        half rung, ``0.25`` for the quarter rung), else :attr:`level`."""
        return 0.5 * self.feed_share if self.partial else self.level

    @classmethod
    def of_parts(
        cls,
        level: int,
        part_scores: dict[str, np.ndarray],
        part_sizes: np.ndarray,
        n_samples_fed: int,
        leaves: LeafTable | None = None,  # noqa: F821
        partial: bool = False,
        feed_share: float = 1.0,
        chunks: tuple[dict, np.ndarray] | None = None,
    ) -> LevelEstimate:
        """The estimate of a level from its parts (final when ``leaves`` is given;
        an early rung when ``partial``, with its ``(chunk_scores, chunk_sizes)``
        when ``chunks``)."""
        sizes = np.asarray(part_sizes, dtype=np.int64)
        chunk_scores, chunk_sizes = (None, None) if chunks is None else chunks
        columns = {name: np.asarray(v, dtype=float) for name, v in part_scores.items()}
        return cls(
            level=int(level),
            n_parts=len(sizes),
            scores={
                name: float(np.average(values, weights=sizes))
                for name, values in columns.items()
            },
            part_scores=columns,
            part_sizes=sizes,
            n_samples_fed=int(n_samples_fed),
            final=leaves is not None,
            leaves=leaves,
            partial=bool(partial),
            feed_share=float(feed_share),
            chunk_scores=chunk_scores,
            chunk_sizes=chunk_sizes,
        )

    @classmethod
    def of_leaves(
        cls,
        plan: FoldPlan,
        table: LeafTable,  # noqa: F821
        names,
        level: int | None = None,
    ) -> LevelEstimate:
        """The final estimate of a run's leaves (a backend without levels)."""
        ordered = np.argsort(table.leaf, kind="stable")
        sizes = np.array(
            [len(plan.test_indices(int(leaf))) for leaf in table.leaf[ordered]],
            dtype=np.int64,
        )
        return cls.of_parts(
            n_levels(plan) if level is None else level,
            {name: table.scores[name][ordered] for name in names},
            sizes,
            int(np.sum(table.n_samples_fed)),
            table,
        )


def n_levels(plan: FoldPlan | int) -> int:
    """Levels of the tree of a plan (or of ``k`` folds) below the root:
    ``ceil(log2(k))``, at least 1.

    Examples
    --------
    >>> from sklearn_ext.model_selection._levels import n_levels
    >>> n_levels(16), n_levels(10), n_levels(2)
    (4, 4, 1)
    """
    k = plan if isinstance(plan, int | np.integer) else plan.n_splits
    return max(1, int(k - 1).bit_length())


class LevelEngine(Protocol):
    """What :func:`walk_levels` asks of an engine; ``state`` is its model."""

    #: Whether a node's feed may be split in consecutive pieces, the model
    #: after the last piece equal to the model fed at once (bit for bit):
    #: :meth:`feed_part` is then used for the early rungs before the half rung.
    splits_feeds: bool

    def root(self) -> Any:
        """The model of the root: untrained."""

    def fork(self, state) -> Any:
        """An independent copy of ``state``."""

    def feed(self, parent, node, sibling, state) -> tuple[int, float]:
        """Turn the model of ``parent`` into that of its child ``node``, in place.

        Returns the rows fed and the seconds spent.
        """

    def feed_part(self, node, state, start: int, stop: int) -> tuple[int, float]:
        """Feed rows ``start:stop`` of :meth:`feed`'s rows for ``node`` (an
        engine that :attr:`splits_feeds`); the rows fed and the seconds."""

    def feed_scoring(self, parent, node, sibling, state, scored):
        """:meth:`feed`, and the scores of ``scored`` (the sibling's finished
        model) on the rows fed, which are the sibling's held-out rows, in the
        same pass over them: ``(rows, seconds, (scores, score_seconds))``, or
        ``(rows, seconds, None)`` when the engine scores them apart.
        """

    def score(self, node, state) -> tuple[dict[str, float], float]:
        """The test scores of an internal node's model on its held-out rows."""

    def leaf(self, leaf: int, state, n_fed: int, fit_time: float, scored=None):
        """Score and report (``task.emit``) a leaf; its ``LeafResult``.

        ``scored``: its ``(scores, seconds)`` from :meth:`feed_scoring`, if any.
        """


class Meter:
    """Training work below a node not yet reported at a leaf (both walks')."""

    __slots__ = ("n_samples_fed", "fit_time")

    def __init__(self, n_samples_fed: int = 0, fit_time: float = 0.0) -> None:
        self.n_samples_fed, self.fit_time = n_samples_fed, fit_time

    def take(self) -> tuple[int, float]:
        taken = (self.n_samples_fed, self.fit_time)
        self.n_samples_fed, self.fit_time = 0, 0.0
        return taken


class _Part:
    """A node of the current level: its model, its pending work, its scores."""

    __slots__ = ("node", "state", "meter", "scores")

    def __init__(self, node, state, meter: Meter, scores=None) -> None:
        self.node, self.state, self.meter, self.scores = node, state, meter, scores


def walk_levels(
    plan: FoldPlan,
    engine: LevelEngine,
    names,
    table,
    *,
    early_rungs: int = 0,
    early_chunks: bool = False,
) -> Iterator[LevelEstimate]:
    """Walk the tree of ``plan`` breadth first; one :class:`LevelEstimate` per level.

    Each level is grown from the previous one (a node's left child trains on a
    copy of its model, its right child on the model itself) and every new
    node is scored on its held-out rows. Rows fed and training time are
    reported at the leaf the depth-first walk reports them at (the leftmost
    leaf below the node fed), so the final leaves equal the depth-first run's.
    Closing the generator stops the walk: nothing more is fed. ``names`` are
    the test metrics; ``table(leaves)`` makes the final level's ``leaves``
    (``LeafTable.from_leaves``).

    With ``early_rungs`` (``e``), the root's left child is scored on its
    held-out rows (the left half) while it is fed, before its sibling, after
    ``1 / 2**(e - 1)``, ..., ``1 / 2`` and all of its feed, and each score is
    yielded first, as a ``partial`` estimate of level 1 (its one part); level
    1 keeps the last one, the half rung. An engine that cannot split a feed
    (:attr:`LevelEngine.splits_feeds`) yields the half rung only. With
    ``early_chunks``, each early rung is also scored chunk by chunk
    (:attr:`LevelEstimate.chunk_scores`: one more prediction pass over the
    left half).
    """
    bounds = plan.bounds
    parts = [_Part(plan.root, engine.root(), Meter())]
    leaves: list = []
    n_fed, level = 0, 0
    shares = _early_shares(early_rungs, engine.splits_feeds)
    while any(part.node[0] != part.node[1] for part in parts):
        level += 1
        early = None
        if level == 1 and shares:
            early = _EarlyRungs(engine, bounds, names, shares, early_chunks)
        parts, n_fed = yield from _grow(plan, engine, parts, n_fed, leaves, early)
        sizes = [bounds[p.node[1] + 1] - bounds[p.node[0]] for p in parts]
        scores = {n: [p.scores.get(n, np.nan) for p in parts] for n in names}
        final = all(part.node[0] == part.node[1] for part in parts)
        done = table(leaves) if final else None
        yield LevelEstimate.of_parts(level, scores, sizes, n_fed, done)


def _early_shares(early_rungs: int, splits_feeds: bool) -> list[float]:
    """The shares of the left child's feed scored at: ``[.., 0.25, 0.5, 1.0]``."""
    count = int(early_rungs) if splits_feeds else min(int(early_rungs), 1)
    return [2.0**-j for j in range(count - 1, -1, -1)]


class _EarlyRungs:
    """The early rungs of level 1's first part: where to pause its feed, and the
    estimate of each pause."""

    def __init__(self, engine, bounds, names, shares: list[float], chunks: bool):
        self.engine, self.bounds, self.names = engine, bounds, names
        self.shares, self.chunks = shares, chunks

    def stops(self, parent, node) -> list[tuple[float, int]]:
        """``(share, rows fed by then)`` per early rung of ``node``'s feed."""
        sibling = _sibling(parent, node)
        n_rows = int(self.bounds[sibling[1] + 1] - self.bounds[sibling[0]])
        return [(share, round(n_rows * share)) for share in self.shares]

    def estimate(self, node, scores, n_fed: int, share: float, chunks=None):
        """The early rung of ``node``, its ``scores`` and :meth:`chunked`'s."""
        size = self.bounds[node[1] + 1] - self.bounds[node[0]]
        values = {n: [scores.get(n, np.nan)] for n in self.names}
        return LevelEstimate.of_parts(
            1,
            values,
            [size],
            n_fed,
            partial=True,
            feed_share=share,
            chunks=chunks,
        )

    def chunked(self, node, state) -> tuple[dict, np.ndarray] | None:
        """Each metric of ``state`` per chunk of ``node``, and the chunk sizes
        (``None`` unless asked for)."""
        if not self.chunks:
            return None
        chunks = range(node[0], node[1] + 1)
        scored = [self.engine.score((c, c), state)[0] for c in chunks]
        values = {
            n: np.array([one.get(n, np.nan) for one in scored]) for n in self.names
        }
        sizes = np.diff(self.bounds[node[0] : node[1] + 2]).astype(np.int64)
        return values, sizes


def _grow(plan: FoldPlan, engine: LevelEngine, parts, n_fed: int, leaves: list, early):
    """The next level's parts, scored (leaves carried as they are); the rows fed.

    A generator returning ``(parts, n_fed)``: when ``early`` (an
    :class:`_EarlyRungs`) is given, it yields the early rungs of the first
    node's left child as it is fed and scored; else nothing. A node's children
    are scored as soon as both are fed; the engine may score the left child
    while it feeds the right one the same rows.
    """
    grown = []
    for part in parts:
        start, end = part.node
        if start == end:
            grown.append(part)
            continue
        left, right = plan.children(start, end)
        # The left child carries the parent's pending work, as in the
        # depth-first walk, whose next leaf is the left child's first.
        left_part = _Part(left, engine.fork(part.state), part.meter)
        right_part = _Part(right, part.state, Meter())
        part.state = None  # the right child owns the parent's model now
        first = early is not None and not grown
        if first:
            # Scored before its sibling is fed: honest hold-out estimates over
            # the rows it never saw, as its feed goes on.
            n_fed = yield from _feed_early(engine, part.node, left_part, n_fed, early)
            # Chunks first: a leaf (k = 2) drops its model once scored.
            chunks = early.chunked(left, left_part.state)
            _score(engine, left_part, leaves)
            yield early.estimate(left, left_part.scores, n_fed, 1.0, chunks)
            n_right, seconds = engine.feed(part.node, right, left, right_part.state)
            scored = None
        else:
            n, seconds = engine.feed(part.node, left, right, left_part.state)
            left_part.meter.n_samples_fed += n
            left_part.meter.fit_time += seconds
            n_fed += n
            # The right child is fed the left child's rows: the left child,
            # now trained, may be scored on them in the same pass.
            n_right, seconds, scored = engine.feed_scoring(
                part.node, right, left, right_part.state, left_part.state
            )
        right_part.meter.n_samples_fed += n_right
        right_part.meter.fit_time += seconds
        n_fed += n_right
        if not first:
            _score(engine, left_part, leaves, scored)
        _score(engine, right_part, leaves)
        grown += [left_part, right_part]
    return grown, n_fed


def _feed_early(engine: LevelEngine, parent, part: _Part, n_fed: int, early):
    """Feed ``part`` (the root's left child) whole, pausing at each early rung
    before the half rung to score it and yield the estimate; the rows fed."""
    stops = early.stops(parent, part.node)
    if len(stops) == 1:  # the half rung alone: one feed
        sibling = _sibling(parent, part.node)
        n, seconds = engine.feed(parent, part.node, sibling, part.state)
        part.meter.n_samples_fed += n
        part.meter.fit_time += seconds
        return n_fed + n
    done = 0
    for share, stop in stops:
        n, seconds = engine.feed_part(part.node, part.state, done, stop)
        done = stop
        part.meter.n_samples_fed += n
        part.meter.fit_time += seconds
        n_fed += n
        if share < 1.0:
            scores, _ = engine.score(part.node, part.state)
            chunks = early.chunked(part.node, part.state)
            yield early.estimate(part.node, scores, n_fed, share, chunks)
    return n_fed


def _sibling(parent, node) -> tuple[int, int]:
    """The sibling of ``node``, a child of ``parent``."""
    start, end = parent
    mid = (start + end) // 2
    return (mid + 1, end) if node[1] == mid else (start, mid)


def _score(engine: LevelEngine, part: _Part, leaves: list, scored=None) -> None:
    start, end = part.node
    if start != end:
        scores, _ = engine.score(part.node, part.state) if scored is None else scored
        part.scores = scores
        return
    fed, fit_time = part.meter.take()
    result = engine.leaf(start, part.state, fed, fit_time, scored)
    leaves.append(result)
    part.scores = result.scores
    part.state = None  # a leaf is not fed again: its model is dropped


# -- the Python tree ------------------------------------------------------------------
class TreeLevels:
    """The Python tree's :class:`LevelEngine`: a ``_TreeRun``'s updates and scores.

    ``run`` is the run's ``_TreeRun``, ``root`` its untrained ``_Learner`` and
    ``flush(model, meter)`` feeds the rows a batching wrapper keeps waiting
    (``PythonTreeBackend.run_levels`` hands them over: this module imports no
    backend).
    """

    #: ``partial_fit`` on a node's rows at once is not ``partial_fit`` on two
    #: pieces for every learner (a shuffled epoch, a last partial batch).
    splits_feeds = False

    def __init__(self, run, root, flush) -> None:
        self.run, self.task, self._root, self.flush = run, run.task, root, flush

    def root(self):
        root, self._root = self._root, None  # the walk owns it (and drops it)
        return root

    def fork(self, state):
        return state.fork()

    def feed(self, parent, node, sibling, state) -> tuple[int, float]:
        meter = Meter()
        self.run.fit(state, self.run.fed(node, sibling), meter)
        return meter.n_samples_fed, meter.fit_time

    def feed_part(self, node, state, start: int, stop: int) -> tuple[int, float]:
        raise NotImplementedError("The Python tree does not split a node's feed.")

    def feed_scoring(self, parent, node, sibling, state, scored):
        return (*self.feed(parent, node, sibling, state), None)

    def score(self, node, state) -> tuple[dict[str, float], float]:
        return self.run.score(state.model, *node)

    def leaf(self, leaf: int, state, n_fed: int, fit_time: float, scored=None):
        meter = Meter(n_fed, fit_time)
        self.flush(state.model, meter)
        scores, score_time = self.run.score(state.model, leaf)
        # The leaf's model is not trained any further: no copy needed.
        model = state.model if self.task.return_estimator else None
        result = self.task.leaf_result(
            leaf, scores, meter.n_samples_fed, meter.fit_time, score_time, model
        )
        self.task.emit(result)
        return result
