"""TreeCV on a Dask cluster: each update runs where its block lives, only models move.

The TreeCV recursion (:class:`~sklearn_ext.model_selection.FoldPlan`) over the
row blocks of data on the cluster (a persisted ``dask.array`` or
``dask.dataframe``, or blocks made by per-worker loaders; see
:mod:`~sklearn_ext.model_selection._dask_blocks`): a node's model is a future; feeding
it the rows of its sibling chunks is a chain of tasks, one per run of
consecutive blocks held by one worker, each submitted to that worker
(``client.who_has``, then ``client.submit(..., workers=[owner])``) and handed
the model of the previous task. The whole tree is submitted at once, so the
scheduler runs the two subtrees of every node, and the runs of several
candidates, concurrently. Each leaf's model is scored where its test chunk
lives and only its scores come back. The data never reaches the client: the
bytes that move between workers are models, ``O(k log k)`` of them.

This module is imported only for Dask collections
(:func:`~sklearn_ext.model_selection._choice.find_placement`).
"""

from __future__ import annotations

import copy
import sys
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import CancelledError

import numpy as np
from dask.sizeof import sizeof
from distributed import get_client, wait
from distributed.client import FutureCancelledError
from distributed.comm import CommClosedError
from distributed.scheduler import KilledWorker
from sklearn.base import BaseEstimator, clone, is_classifier
from sklearn.pipeline import Pipeline

from sklearn_ext.model_selection._backends import (
    Backend,
    CVTask,
    LeafTable,
    _is_sample_aligned,
    accepts_classes,
)
from sklearn_ext.model_selection._dask_blocks import (
    blocks_of,
    fingerprint,
    labels,
    x_part,
    y_part,
)
from sklearn_ext.model_selection._estimator import (
    TreeCVEstimator,
    balanced_class_weight,
)
from sklearn_ext.model_selection._placement import (
    Placement,
    PlacementError,
    block_fold_plan,
)
from sklearn_ext.model_selection._plan import FoldPlan
from sklearn_ext.model_selection._streaming import stream_refusal

__all__ = ["BACKENDS", "DaskPlacement", "DaskTreeBackend"]

#: Seconds between checks that the blocks' workers are still there.
WATCH_SECONDS = 0.5
#: Rounds of resubmission after lost workers before a run gives up.
MAX_ROUNDS = 4
#: Seconds a finished block held by no worker (released, being computed again)
#: is waited for before the run fails with a :class:`PlacementError`.
HOLDER_SECONDS = 30.0

#: What :meth:`DaskPlacement.watch` is told when a result was lost with its worker.
_LOST = object()

#: What the cluster raises when it lost a result it could not recompute.
_CLUSTER_ERRORS = (
    KilledWorker,
    FutureCancelledError,
    CancelledError,
    CommClosedError,
)


@sizeof.register(BaseEstimator)
def _sizeof_estimator(model) -> int:
    """An estimator's bytes: its attributes' (Dask's default counts any object
    as ``sys.getsizeof``, a few dozen bytes), for the scheduler's memory
    accounting and the workers' transfer logs."""
    # Every attribute (Dask samples ten items of a larger dict).
    return sys.getsizeof(model) + sum(sizeof(v) for v in vars(model).values())


# -- what runs on the workers -------------------------------------------------------
def _same(block):
    return block


def _rows(part, lo: int, hi: int):
    """Rows ``lo:hi`` of an array, sparse matrix or pandas object (by position)."""
    return part.iloc[lo:hi] if hasattr(part, "iloc") else part[lo:hi]


def _x_rows(block, lo: int, hi: int):
    return _rows(x_part(block), lo, hi)


def _y_rows(block, lo: int, hi: int):
    return _rows(y_part(block), lo, hi)


def _feed(state, spans, params, classes, node, X_blocks, y_blocks):
    """The model of ``state`` after ``partial_fit`` on each span, in order.

    ``state`` is ``(model, path)``: the model and, per tree node on its way
    from the root, the rows fed and the seconds spent. The input is never
    changed (a model future may feed both children of a node).
    """
    tic = time.perf_counter()
    model, path = state
    model = copy.deepcopy(model)
    if classes is not None:
        params = {**params, "classes": classes}
    n_rows = 0
    for i, (lo, hi) in enumerate(spans):
        X = _x_rows(X_blocks[i], lo, hi)
        if y_blocks is None:
            model.partial_fit(X, **params)
        else:
            model.partial_fit(X, _y_rows(y_blocks[i], lo, hi), **params)
        n_rows += hi - lo
    seconds = time.perf_counter() - tic
    if path and path[-1][0] == node:  # the node's rows span several workers
        n_before, seconds_before = path[-1][1:]
        path = (*path[:-1], (node, n_before + n_rows, seconds_before + seconds))
    else:
        path = (*path, (node, n_rows, seconds))
    return model, path


def _ready(state):
    """The leaf model, copied, with the rows a batching wrapper keeps waiting fed."""
    tic = time.perf_counter()
    model = copy.deepcopy(state[0])
    if isinstance(model, TreeCVEstimator):
        model.estimator_  # noqa: B018 (the property feeds the waiting rows)
    return model, time.perf_counter() - tic


def _score(state, scorer, spans, keep_model, X_blocks, y_blocks):
    """Scores of the leaf model on its test chunk (all of it on this worker)."""
    model, flush_time = _ready(state)
    tic = time.perf_counter()
    X = _joined([_x_rows(b, *span) for b, span in zip(X_blocks, spans, strict=True)])
    y = None
    if y_blocks is not None:
        y = _joined(
            [_y_rows(b, *span) for b, span in zip(y_blocks, spans, strict=True)]
        )
    args = (X,) if y is None else (X, y)
    scores = {name: float(value) for name, value in scorer(model, *args).items()}
    score_time = time.perf_counter() - tic
    return scores, score_time, state[1], flush_time, model if keep_model else None


def _count(state, spans, X_blocks, y_blocks):
    """Correct predictions of the leaf model on the spans held by this worker."""
    model, flush_time = _ready(state)
    tic = time.perf_counter()
    correct = 0
    n_rows = 0
    for i, (lo, hi) in enumerate(spans):
        predicted = model.predict(_x_rows(X_blocks[i], lo, hi))
        truth = np.asarray(_y_rows(y_blocks[i], lo, hi))
        correct += int(np.count_nonzero(predicted == truth))
        n_rows += hi - lo
    return correct, n_rows, time.perf_counter() - tic, flush_time, state[1]


def _accuracy(name, keep, *counts):
    """Accuracy from the counts of several workers: exactly ``accuracy_score``."""
    correct = sum(c[0] for c in counts)
    n_rows = sum(c[1] for c in counts)
    score_time = sum(c[2] for c in counts)
    # The mean of a 0/1 vector is the exact count divided by n, as here.
    model = keep[0] if keep else None
    return {name: correct / n_rows}, score_time, counts[0][4], counts[0][3], model


def _joined(parts: list):
    if len(parts) == 1:
        return parts[0]
    if hasattr(parts[0], "iloc"):
        import pandas as pd

        return pd.concat(parts)
    if hasattr(parts[0], "tocsr"):
        import scipy.sparse as sp

        return sp.vstack(parts, format="csr")
    return np.concatenate(parts)


# -- the placement --------------------------------------------------------------------
class DaskPlacement(Placement):
    """Row blocks on a Dask cluster and the client that holds them.

    Built by the run core when ``X`` is a Dask collection or a list of
    per-worker loaders (:func:`~sklearn_ext.model_selection._dask_blocks.blocks_of`):
    a ``dask.array`` is persisted with one block along the columns, a
    ``dask.dataframe`` keeps its partitions, each loader runs once on a
    worker; ``y`` is aligned to the row blocks of ``X``.

    Parameters
    ----------
    X : dask array, dask DataFrame or list of loaders
        The data.
    y : dask array, dask Series or DataFrame, list of loaders, or None
        The targets (``None`` when the loaders give ``(X, y)`` pairs).
    """

    name = "dask"

    def __getstate__(self):
        raise TypeError(
            "A run on Dask collections cannot be sent to another process (its "
            "client stays here): run candidates in threads, e.g. under "
            "joblib.parallel_config(backend='threading'); the cluster runs their "
            "tasks concurrently."
        )

    def __init__(self, X, y=None) -> None:
        try:
            self.client = get_client()
        except ValueError:
            raise ValueError(
                "X is a Dask collection but no distributed.Client is active: start "
                "one (distributed.Client(...)) so that TreeCV runs where the blocks "
                "are, or pass X.compute() to run in memory."
            ) from None
        self.blocks = blocks_of(self.client, X, y)
        self.X, self.y = self.blocks.X, self.blocks.y
        self.y_ndim = self.blocks.y_ndim
        self.block_rows = self.blocks.rows
        self.starts = np.concatenate([[0], np.cumsum(self.block_rows)])
        self.n_samples = int(self.starts[-1])
        self.X_blocks = self.blocks.X_blocks
        self.y_source = self.blocks.y_blocks
        self.y_blocks = self.y_source
        self.owners()  # the blocks are in memory, y with X

    def _colocated(self, owners: Sequence[str]) -> list:
        """The blocks of ``y``, each on the worker of its block of ``X``.

        A block of ``y`` held elsewhere is copied to its ``X`` block's worker
        (a label block is ``1 / n_features`` of its ``X`` block), once: until
        the owner changes. ``y`` sliced from the same persisted array as ``X``
        needs no copy.
        """
        held = self.y_source + self.y_blocks
        who = self.client.who_has(held)
        placed = []
        for i, owner in enumerate(owners):
            here = [
                b
                for b in (self.y_source[i], self.y_blocks[i])
                if owner in who.get(b.key, ())
            ]
            placed.append(
                here[0]
                if here
                else self.client.submit(
                    _same,
                    self.y_source[i],
                    workers=[owner],
                    allow_other_workers=False,
                    pure=False,
                )
            )
        wait(placed)
        return placed

    def plan(self, cv, *, order=None, random_state=None) -> FoldPlan:
        if order not in (None, "fixed"):
            raise ValueError(
                f"order={order!r} cannot run on a Dask collection: it feeds rows "
                "in an order across blocks. Use order='fixed' (shuffle the rows "
                "before persisting them instead)."
            )
        if cv is None:
            cv = 5
        if isinstance(cv, FoldPlan):
            return _check_contiguous(cv, self.n_samples)
        if isinstance(cv, (int, np.integer)) and not isinstance(cv, bool):
            return block_fold_plan(self.block_rows, int(cv))
        raise TypeError(
            "On a Dask collection, cv must be an int (chunks follow the blocks; see "
            "block_fold_plan) or a FoldPlan of contiguous chunks in row order. Got "
            f"{cv!r}."
        )

    def classes(self, estimator, classes=None):
        if classes is not None:
            return np.asarray(classes)
        if self.y_source is None or not is_classifier(estimator) or self.y_ndim != 1:
            return None
        return labels(self.client, self.blocks)

    def fingerprint(self) -> tuple[int, int, str]:
        """Rows, columns and a hash of the content, each block hashed where it is."""
        return (
            self.n_samples,
            self.blocks.n_features,
            fingerprint(self.client, self.blocks),
        )

    def backend(self, estimator, method):
        owner = type(estimator).__name__
        if isinstance(method, DaskTreeBackend):
            backend = method.on(self)
        elif method in ("auto", "treecv"):
            backend = DaskTreeBackend(self)
        else:
            raise TypeError(
                f"method={method!r} would gather X from the cluster: on a Dask "
                "collection only the Dask tree trains where the blocks are "
                "(method='auto' or 'treecv'). Pass X.compute() to run "
                f"method={method!r} in memory."
            )
        if not backend.accepts(estimator):
            raise TypeError(
                f"The Dask tree cannot run {owner}: it has no partial_fit method "
                "(and is not a pipeline). Pass X.compute() to run standard k-fold "
                "CV in memory."
            )
        reason = backend.refusal(estimator, self.X, self.y)
        if reason is not None:
            raise TypeError(f"The Dask tree cannot run {owner}: {reason}.")
        return backend

    def check_params(self, fit_params, score_params, return_train_score) -> None:
        """Refuse what would send per-row data from the client, before any run."""
        aligned = [
            name
            for params in (fit_params, score_params)
            for name, value in params.items()
            if _is_sample_aligned(value, self.n_samples)
        ]
        if aligned:
            raise ValueError(
                f"Per-sample parameters {sorted(aligned)} cannot be sent with a Dask "
                "collection's blocks; fold them into X or y."
            )
        if return_train_score:
            raise ValueError(
                "return_train_score=True would score every fold on its whole "
                "training part; it is not available on a Dask collection."
            )

    def owners(self) -> list[str]:
        """The worker holding each row block of ``X``, once all are in memory
        (a block lost with its worker is recomputed from its lineage), with
        the blocks of ``y`` brought to them."""
        try:
            owners = self._holders()
            if self.y_source is not None:
                self.y_blocks = self._colocated(owners)
        except _CLUSTER_ERRORS as exc:
            raise _lost(exc) from exc
        return owners

    def _holders(self) -> list[str]:
        """One worker holding each block of ``X``, once every block is held.

        A block that is finished but held by no worker was released and is
        being computed again (the same key dropped by an earlier handle of
        this client, or lost with its worker): it is waited for again, for at
        most :data:`HOLDER_SECONDS`.
        """
        deadline = time.monotonic() + HOLDER_SECONDS
        while True:
            wait(self.X_blocks + (self.y_source or []))
            who = self.client.who_has(self.X_blocks)
            if all(who.get(f.key) for f in self.X_blocks):
                return [who[f.key][0] for f in self.X_blocks]
            if time.monotonic() > deadline:
                lost = [f.key for f in self.X_blocks if not who.get(f.key)]
                raise PlacementError(
                    f"No worker holds the blocks {lost} of X after "
                    f"{HOLDER_SECONDS:g} s; run again once the cluster is healthy."
                )
            time.sleep(WATCH_SECONDS / 10)

    def spans(self, start: int, stop: int, owners: Sequence[str]):
        """Rows ``start:stop`` as runs of blocks held by one worker each.

        Returns a list of ``(owner, blocks, spans)``: the block indices and the
        ``(lo, hi)`` rows within each block.
        """
        runs: list[tuple[str, list[int], list[tuple[int, int]]]] = []
        block = int(np.searchsorted(self.starts, start, side="right") - 1)
        while start < stop:
            end = min(stop, int(self.starts[block + 1]))
            span = (start - int(self.starts[block]), end - int(self.starts[block]))
            if runs and runs[-1][0] == owners[block]:
                runs[-1][1].append(block)
                runs[-1][2].append(span)
            else:
                runs.append((owners[block], [block], [span]))
            start, block = end, block + 1
        return runs

    def feed(self, state, start, stop, params, classes, node, owners, key):
        """Submit the chain of updates feeding rows ``start:stop`` to ``state``."""
        for i, (owner, blocks, spans) in enumerate(self.spans(start, stop, owners)):
            state = self.client.submit(
                _feed,
                state,
                spans,
                params,
                classes,
                node,
                [self.X_blocks[b] for b in blocks],
                None if self.y_blocks is None else [self.y_blocks[b] for b in blocks],
                key=f"{key}-{i}",
                workers=[owner],
                # Strict, as LightGBM's Dask training: a loose restriction
                # lets work stealing run the update elsewhere and move the
                # block. A lost owner is seen by watch(), which resubmits.
                allow_other_workers=False,
                pure=False,
            )
        return state

    def fit(self, model, *, classes=None, fit_params=None):
        params = dict(fit_params or {})
        for _ in range(MAX_ROUNDS):
            owners = self.owners()
            key = f"treecv-fit-{uuid.uuid4().hex[:12]}"
            state = (model, ())
            state = self.feed(
                state, 0, self.n_samples, params, classes, None, owners, key
            )
            ready = self.client.submit(_ready, state, key=f"{key}-ready")
            for _, outcome in self.watch([ready], owners):
                return outcome[0]
        raise _lost(RuntimeError(f"workers lost in {MAX_ROUNDS} rounds"))

    def watch(self, futures: list, owners: Sequence[str]):
        """Yield ``(future, result)`` as each of ``futures`` ends.

        Stops early (the caller resubmits on the new owners) when a worker
        holding a block left the cluster: the updates restricted to it would
        wait forever, and so would a result it held that had not come back
        yet. An error of the cluster becomes :class:`PlacementError`; the
        futures not yielded are cancelled when the caller stops.
        """
        left = set(futures)
        needed = set(owners)
        try:
            while left:
                try:
                    done, _ = wait(
                        left, timeout=WATCH_SECONDS, return_when="FIRST_COMPLETED"
                    )
                except TimeoutError:
                    done = set()
                for future in done:
                    outcome = self._outcome(future, needed)
                    if outcome is _LOST:
                        return
                    left.discard(future)
                    yield future, outcome
                if left and not self._alive(needed):
                    return
        except _CLUSTER_ERRORS as exc:
            raise _lost(exc) from exc
        finally:
            if left:
                self.client.cancel(list(left))

    def _alive(self, needed: set) -> bool:
        return needed <= set(self.client.scheduler_info(n_workers=-1)["workers"])

    def _outcome(self, future, needed: set):
        """The result of a finished future, or ``_LOST`` when a block's worker
        left before it came back (held there, it would be recomputed by a task
        restricted to the worker that is gone)."""
        while True:
            try:
                return future.result(timeout=WATCH_SECONDS)
            except TimeoutError:
                if not self._alive(needed):
                    return _LOST


def _check_contiguous(plan: FoldPlan, n_samples: int) -> FoldPlan:
    if (
        plan.n_samples != n_samples
        or not plan.complement
        or plan.order != "fixed"
        or not np.array_equal(plan.sample_order, np.arange(n_samples))
    ):
        raise ValueError(
            "On a Dask collection, a FoldPlan given as cv must hold contiguous "
            "chunks in row order, train on their complements and feed them in "
            "the fixed order (see block_fold_plan)."
        )
    return plan


def _lost(exc: BaseException) -> PlacementError:
    return PlacementError(
        f"The Dask cluster lost work of this run and could not recompute it "
        f"({type(exc).__name__}: {exc}). No score was computed from it; run again "
        "once the cluster is healthy (data given by client.scatter has no lineage "
        "to recompute it from: persist a collection built from its source)."
    )


# -- the backend -------------------------------------------------------------------
class DaskTreeBackend(Backend):
    """TreeCV on a Dask cluster: models move to the blocks, never the data.

    Chosen by ``method="auto"`` or ``"treecv"`` whenever ``X`` is a
    ``dask.array``, a ``dask.dataframe`` (its partitions are the blocks) or a
    list of per-worker loaders (each makes a block on a worker) and a
    ``distributed.Client`` is active; the fold plan's chunks follow the blocks
    (:func:`~sklearn_ext.model_selection.block_fold_plan`). Every node's
    update is a task on the worker holding the rows it feeds, given the
    parent's model as a future; the update is the learner's own
    ``partial_fit``, so the fold scores are those of the in-memory tree on
    the same plan (native learners, streaming pipelines and
    :class:`TreeCVEstimator` included: their batches do not depend on where
    the blocks begin). Each leaf is scored where its test chunk lives; a
    test chunk spanning blocks of several workers is scored by counting
    correct predictions on each (accuracy, exactly), or for another metric
    by moving its blocks to one worker. A worker lost during the run costs a
    recomputation of its blocks from Dask's lineage and a new submission of
    the leaves not yet scored (the same scores); what cannot be recomputed
    raises :class:`PlacementError`.

    Parameters
    ----------
    placement : DaskPlacement, default=None
        The data's blocks; set by the run core.

    Examples
    --------
    >>> import dask.array as da
    >>> from distributed import Client
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.linear_model import SGDClassifier
    >>> from sklearn_ext import tree_cross_validate
    >>> client = Client(processes=False, n_workers=2, dashboard_address=":0")
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> dX, dy = da.from_array(X, chunks=100), da.from_array(y, chunks=100)
    >>> est = SGDClassifier(max_iter=1, tol=None, shuffle=False, random_state=0)
    >>> result = tree_cross_validate(est, dX, dy, cv=4, return_run_info=True)
    >>> result["backend"], result["test_score"].shape
    ('dask_tree', (4,))
    >>> client.close()
    """

    name = "dask_tree"
    scores = "one_pass"
    data_as_given = True
    y_as_given = True

    def __init__(self, placement: DaskPlacement | None = None) -> None:
        self.placement = placement

    def on(self, placement: DaskPlacement) -> DaskTreeBackend:
        """This backend on ``placement``'s blocks."""
        backend = copy.copy(self)
        backend.placement = placement
        return backend

    @classmethod
    def accepts(cls, estimator) -> bool:
        return callable(getattr(estimator, "partial_fit", None)) or isinstance(
            estimator, Pipeline
        )

    def refusal(self, estimator, X, y) -> str | None:
        if self.placement is None:
            return (
                f"X is a {type(X).__name__}, not a Dask collection on an active client"
            )
        if isinstance(estimator, Pipeline):
            reason = stream_refusal(estimator, fixed_up_front=False)
            if reason is not None:
                return reason
        return balanced_class_weight(estimator)

    def run(self, task: CVTask) -> LeafTable:
        if self.placement is None:
            raise TypeError("DaskTreeBackend runs on a Dask collection's blocks.")
        return _DaskTreeRun(task, self.placement).run()

    def __repr__(self) -> str:
        return "DaskTreeBackend()"


#: The backends of this placement, for results that record a backend's name.
BACKENDS = (DaskTreeBackend,)


class _DaskTreeRun:
    """One run: the whole tree submitted as futures, leaves gathered as they end."""

    def __init__(self, task: CVTask, placement: DaskPlacement) -> None:
        self.task, self.placement = task, placement
        self.client = placement.client
        self.owners = placement.owners()
        self.key = f"treecv-{uuid.uuid4().hex[:12]}"
        self.classes = task.classes if accepts_classes(task.estimator) else None
        self.count = (
            task.metric == "accuracy"
            and len(task.names) == 1
            and placement.y_source is not None
            and placement.y_ndim == 1
        )
        self.leaves: dict = {}

    def run(self) -> LeafTable:
        """Submit the tree, then emit each leaf as it ends.

        If a worker holding blocks is lost, the leaves not yet scored are
        submitted again on the blocks' new workers (the blocks come back from
        their lineage); the updates are deterministic, so their scores are
        those the first round would have given.
        """
        done: dict = {}
        for round_ in range(MAX_ROUNDS):
            self.owners = self.placement.owners()
            self.leaves = {}
            self.round = round_
            self.grow(self.task.plan.root, (clone(self.task.estimator), ()), done)
            futures = list(self.leaves)
            for future, outcome in self.placement.watch(futures, self.owners):
                leaf = self.leaves[future]
                done[leaf] = self.leaf_result(leaf, outcome)
                self.task.emit(done[leaf])
            if len(done) == self.task.plan.n_splits:
                return LeafTable.from_leaves(list(done.values()))
        raise _lost(RuntimeError(f"workers lost in {MAX_ROUNDS} rounds"))

    def grow(self, node, state, done) -> None:
        """Submit the updates and scoring of the subtree below ``node``."""
        start, end = node
        if all(leaf in done for leaf in range(start, end + 1)):
            return
        if start == end:
            self.leaves[self.score(start, state)] = start
            return
        bounds = self.task.plan.bounds
        left, right = self.task.plan.children(start, end)
        for child, sibling in ((left, right), (right, left)):
            fed = self.placement.feed(
                state,
                int(bounds[sibling[0]]),
                int(bounds[sibling[1] + 1]),
                self.task.fit_params,
                self.classes,
                child,
                self.owners,
                f"{self.key}-{self.round}-feed-{child[0]}-{child[1]}",
            )
            self.grow(child, fed, done)

    def score(self, leaf: int, state):
        """A future of the leaf's scores, computed where its test rows are."""
        placement, task = self.placement, self.task
        bounds = task.plan.bounds
        runs = placement.spans(int(bounds[leaf]), int(bounds[leaf + 1]), self.owners)
        key = f"{self.key}-{self.round}-score-{leaf}"
        keep = task.return_estimator
        if self.count and len(runs) > 1:
            counts = [
                self.client.submit(
                    _count,
                    state,
                    spans,
                    [placement.X_blocks[b] for b in blocks],
                    [placement.y_blocks[b] for b in blocks],
                    key=f"{key}-{i}",
                    workers=[owner],
                    allow_other_workers=False,
                )
                for i, (owner, blocks, spans) in enumerate(runs)
            ]
            models = (
                [self.client.submit(_ready, state, key=f"{key}-model")] if keep else []
            )
            return self.client.submit(
                _accuracy,
                task.names[0],
                models,
                *counts,
                key=key,
            )
        blocks = [b for _, bs, _ in runs for b in bs]
        spans = [s for _, _, ss in runs for s in ss]
        # With several runs (another metric): the largest one's worker scores.
        owner = max(runs, key=lambda r: sum(hi - lo for lo, hi in r[2]))[0]
        return self.client.submit(
            _score,
            state,
            task.scorer,
            spans,
            keep,
            [placement.X_blocks[b] for b in blocks],
            None
            if placement.y_blocks is None
            else [placement.y_blocks[b] for b in blocks],
            key=key,
            workers=[owner],
            allow_other_workers=False,
        )

    def leaf_result(self, leaf: int, outcome):
        scores, score_time, path, flush_time, model = outcome
        # A node's updates count at its leftmost leaf, so the columns sum up.
        mine = [(n, s) for node, n, s in path if node[0] == leaf]
        n_fed = sum(n for n, _ in mine)
        fit_time = sum(s for _, s in mine) + flush_time
        if isinstance(model, tuple):  # _ready's (model, seconds)
            model = model[0]
        return self.task.leaf_result(leaf, scores, n_fed, fit_time, score_time, model)
