"""The alpha-seeded CV engine: every fold of a plan solved on one kernel store.

The engine knows the solver's public interface only (:class:`SVMParams`, the
per-pair loop :func:`~sklearn_ext.svm._training.train_pairs`), never the
estimator: whoever wants fold models (the ``alpha_seeding`` backend) passes a
``make_model`` that builds one from a fold's solved pairs, and
``probability=True``'s internal CV (:mod:`sklearn_ext.svm._platt`) runs it
without any.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from joblib import effective_n_jobs

from sklearn_ext.svm._kernel_store import (
    KernelStore,
    available_threads,
    kernel_budget,
)
from sklearn_ext.svm._seeding import SEEDINGS
from sklearn_ext.svm._solver import PairDecisions, SVMParams, check_solved
from sklearn_ext.svm._training import (
    FoldKernel,
    FoldStart,
    PairFit,
    StoreKeys,
    train_pairs,
)
from sklearn_ext.utils._threads import blas_limits

__all__ = [
    "FoldSolution",
    "TestFolds",
    "chain_count",
    "run_folds",
]

#: Below this many rows a run uses one seeding chain: threads cost more than
#: they give on folds solved in milliseconds (benchmarks/bench_svm_chains.py:
#: two chains 0.95-1.09x of one at 1,000 rows, 1.30-1.63x at 1,500).
MIN_ROWS_FOR_CHAINS = 1500


class TestFolds:
    """The folds of a run given by their test rows, solved in this order.

    What the engine reads of a :class:`~sklearn_ext.FoldPlan` (``n_splits``
    and ``test_indices``), for callers without a plan (the internal CV of
    ``probability=True``).

    Parameters
    ----------
    tests : sequence of ndarray of int
        The test rows of each fold.
    """

    __test__ = False  # not a pytest class

    def __init__(self, tests: Sequence[np.ndarray]) -> None:
        self.tests = list(tests)
        self.n_splits = len(self.tests)

    def test_indices(self, fold: int) -> np.ndarray:
        """The test rows of fold ``fold``."""
        return self.tests[fold]


@dataclass
class FoldSolution:
    """What one fold of an alpha-seeded run produced."""

    fold: int
    #: The fold's solved pairs (problems and seeds).
    pairs: PairFit
    #: The fitted fold model, or ``None`` when the run builds none
    #: (``run_folds(make_model=None)``).
    model: Any
    #: The fold's decision functions, by global rows (see ``accuracy``).
    decisions: PairDecisions
    n_iter: int
    objective: np.ndarray
    seed_time: float
    fit_time: float
    n_train: int
    store: KernelStore | None = None
    warm_start_C: float | None = None
    warm_start_hits: int = 0
    warm_start_skips: int = 0
    #: What ``run_folds``'s ``score`` returned for this fold, if given.
    scores: Any = None
    #: A scaled fold's time to fit its scalers, scale the rows and build (or
    #: find) its kernel; ``None`` when the folds share one kernel.
    kernel_time: float | None = None

    def accuracy(self, test_rows, y_test) -> float:
        """Accuracy on global rows ``test_rows``, reading the kernel store."""
        predicted = self.decisions.predict(self.store.columns, test_rows)
        return float(np.mean(predicted == y_test))


#: ``make_model(pairs, rows, gamma)``: the fitted model of a fold from its
#: solved pairs, its training rows and the run's resolved ``gamma``.
MakeModel = Callable[[PairFit, np.ndarray, float], Any]


def run_folds(
    params: SVMParams,
    X,
    y,
    plan,
    *,
    seeding: str = "sir",
    random_state: int = 0,
    n_chains: int = 1,
    score=None,
    make_model: MakeModel | None = None,
    scaling=None,
):
    """Solve every fold of ``plan``, each seeded from the previous one of its chain.

    The folds (in leaf order) are cut into ``n_chains`` contiguous seeding
    chains (fewer if there are fewer folds). One chain runs in the calling
    thread; several run in as many threads, sharing the kernel store (see
    :meth:`KernelStore.partition`), with the SMO loops free of the GIL. Each
    chain's first fold starts cold, the others from their predecessor: every
    fold is still solved to ``tol``, so the models agree with one chain's
    within ``tol``.

    Yields one :class:`FoldSolution` per fold as soon as it is solved (in any
    order with several chains); the caller scores it and may raise to stop
    the run (running chains finish their current fold, then stop; close the
    generator to wait for them). ``score``, if given, is called as
    ``score(solution)`` in the thread that solved the fold, and its result is
    kept in ``solution.scores``.

    Parameters
    ----------
    params : SVMParams
        The problem (kernel, ``C``, class weights, store).
    X : {ndarray, CSR matrix} of shape (n_samples, n_features)
        Checked data (float64, C order), or the precomputed kernel.
    y : ndarray of shape (n_samples,)
        Class labels; every training part must hold every class.
    plan : FoldPlan or TestFolds
        The folds: ``n_splits`` and ``test_indices(fold)``.
    seeding : {"sir", "mir", "ato", "keep", "none"}, default="sir"
        The fold-to-fold seeding.
    random_state : int, default=0
        Seed of SIR's random replacements.
    n_chains : int, default=1
        Seeding chains (threads).
    score : callable, default=None
        Called on each solution in its chain's thread.
    make_model : callable, default=None
        ``make_model(pairs, rows, gamma)`` builds the fold's model (kept in
        ``solution.model`` and counted in its ``fit_time``). Without it no
        fold model is built: a fold keeps only its solved pairs and its
        decision functions by global rows (``solution.decisions``), which is
        all that scoring from the kernel store (``solution.accuracy``) reads:
        no copy of the support vectors, nothing that grows with the folds.
    scaling : FoldScaling, default=None
        The per-fold scalers of a ``Pipeline([scaler, SVM])``
        (:mod:`sklearn_ext.svm._scaled`). Each fold then gets its own scaled
        rows, ``gamma`` and kernel store (kept across runs at other ``C`` by
        the warm-start store, within the kernel budget); the previous fold's
        alphas still seed it, with their gradient computed afresh on the
        fold's kernel. ``make_model`` is then called with the fold's
        :class:`~sklearn_ext.svm._scaled.ScaledFold` as a fourth argument.
    """
    if not isinstance(seeding, str) or seeding not in SEEDINGS:
        raise ValueError(
            f"The 'seeding' parameter must be a str among {set(SEEDINGS)}. Got "
            f"{seeding!r} instead."
        )
    classes, y_enc = np.unique(y, return_inverse=True)
    n_classes = classes.shape[0]
    if n_classes < 2:
        raise ValueError(
            f"The number of classes has to be greater than one; got {n_classes} class"
        )
    # gamma="scale" is computed once on the whole data set so that all folds
    # share one kernel (per fold it differs by O(1/k) of the variance).
    chains = [
        chain.tolist()
        for chain in np.array_split(np.arange(plan.n_splits), max(1, n_chains))
        if chain.shape[0]
    ]
    if scaling is None:
        gamma = params.resolve_gamma(X)
        keys = StoreKeys(params, X, y, gamma)
        store = keys.kernel_store(X, gamma)
    else:
        # Each fold resolves its own gamma and builds its own kernel; the
        # folds solved at once (one per chain) share the kernel budget.
        gamma = float("nan")
        keys = StoreKeys(params, X, y, gamma)
        store = None
    run = _Run(params, classes, y_enc, gamma, keys, seeding, score, make_model)
    if scaling is not None:
        run.scaling = scaling
        run.kernel_limit = kernel_budget(params.cache_size)
        params_per_chain = kernel_budget(params.cache_size) / 2**20 / len(chains)
        run.fold_params = replace(params, cache_size=params_per_chain)
    if len(chains) == 1:
        rng = np.random.default_rng(random_state)
        previous = None
        for fold in chains[0]:
            solution, previous = run.solve(plan, fold, store, previous, rng)
            yield solution
        return
    yield from _run_chains(run, plan, store, chains, random_state)


@dataclass
class _Run:
    """What every fold of one alpha-seeded run shares."""

    params: SVMParams
    classes: np.ndarray
    y_enc: np.ndarray
    gamma: float
    keys: StoreKeys
    seeding: str
    score: Any = None
    make_model: MakeModel | None = None
    #: The per-fold scalers (a scaled pipeline's run), its kernels' budget
    #: in bytes and the problem with each chain's share of it.
    scaling: Any = None
    kernel_limit: float = 0.0
    fold_params: SVMParams | None = None

    def _fold_kernel(self, plan, fold, rows):
        """A scaled fold's data, keys and kernel store (and their build time)."""
        tic = time.perf_counter()

        def build() -> FoldKernel:
            scaled = self.scaling.fold(plan.fit_indices(fold))
            return FoldKernel(
                scaled, self.fold_params.kernel_store(scaled.X, scaled.gamma)
            )

        kept = self.keys.fold_kernel(self.scaling.key, rows, build, self.kernel_limit)
        scaled = kept.scaled
        keys = self.keys.for_fold(
            scaled.X, scaled.gamma, self.scaling.key, self.fold_params
        )
        return scaled, keys, kept.store, time.perf_counter() - tic

    def solve(self, plan, fold, store, previous, rng):
        """Seed fold ``fold`` from ``previous`` (its chain's last problems), solve.

        Returns the :class:`FoldSolution` and the fold's problems (the next
        fold's seed).
        """
        rows, labels = self._training_rows(plan, fold)
        keys, gamma, scaled, kernel_time = self.keys, self.gamma, None, None
        if self.scaling is not None:
            scaled, keys, store, kernel_time = self._fold_kernel(plan, fold, rows)
            gamma = scaled.gamma
        tic = time.perf_counter()
        start = FoldStart(
            keys,
            store,
            rows,
            previous,
            self.seeding,
            rng,
            kernel_changed=scaled is not None,
        )
        fit = train_pairs(
            keys,
            store,
            self.y_enc,
            rows,
            self.params.class_C(self.classes, labels),
            start,
            fold_rows=rows,
        )
        problems, seeds = fit.problems, fit.seeds
        model = None
        if self.make_model is not None:
            extra = () if scaled is None else (scaled,)
            model = self.make_model(fit, rows, gamma, *extra)
        else:
            # Only the scores are asked for: no model, no Platt sigmoids.
            check_solved(problems, self.params.owner, self.params.max_iter)
        solution = FoldSolution(
            fold=fold,
            pairs=fit,
            model=model,
            decisions=PairDecisions(problems, self.classes),
            n_iter=int(sum(p.n_iter for p in problems)),
            objective=np.array([p.objective() for p in problems]),
            seed_time=fit.seeded_at - tic,
            fit_time=time.perf_counter() - fit.seeded_at,
            n_train=int(rows.shape[0]),
            store=store,
            warm_start_C=next(
                (float(found[0].C) for found in seeds if found is not None), None
            ),
            warm_start_hits=sum(found is not None for found in seeds),
            warm_start_skips=sum(
                found is not None and bool(found[1]) for found in seeds
            ),
        )
        if self.score is not None:
            solution.scores = self.score(solution)
        if scaled is not None:
            solution.kernel_time = kernel_time
            # The fold's own kernel is of no use to the next fold: let it go
            # (the warm-start store keeps it for a run at another C).
            solution.store = None
        return solution, problems

    def _training_rows(self, plan, fold):
        """The fold's training rows and their labels; every class must be there."""
        train_mask = np.ones(self.y_enc.shape[0], dtype=bool)
        train_mask[plan.test_indices(fold)] = False
        rows = np.flatnonzero(train_mask).astype(np.intp)
        labels = self.y_enc[rows]
        counts = np.bincount(labels, minlength=self.classes.shape[0])
        if not counts.all():
            missing = self.classes[counts == 0]
            raise ValueError(
                f"The training part of fold {fold} has no sample of class(es) "
                f"{missing.tolist()}; alpha-seeded CV needs every class in every "
                "training part (SVC would fit a model with fewer classes). Use a "
                "stratified cv or fewer folds."
            )
        return rows, labels


class _SerializedStore:
    """A warm-start store whose reads and writes take turns (chains share it)."""

    def __init__(self, store) -> None:
        self._store = store
        self._lock = threading.Lock()

    def lookup(self, *args, **kwargs):
        with self._lock:
            return self._store.lookup(*args, **kwargs)

    def put(self, *args, **kwargs):
        with self._lock:
            return self._store.put(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._store, name)


def _run_chains(run: _Run, plan, store: KernelStore, chains, random_state):
    """Run the seeding chains in threads; yield their solutions as they come."""
    # A scaled run's folds build their own stores: nothing to share.
    views = [None] * len(chains) if store is None else store.partition(len(chains))
    if run.keys.store is not None:
        run.keys.store = _SerializedStore(run.keys.store)
    results: queue.SimpleQueue = queue.SimpleQueue()
    stop = threading.Event()

    def chain(c: int, folds: list[int]) -> None:
        rng = np.random.default_rng(random_state if c == 0 else (random_state, c))
        previous = None
        try:
            for fold in folds:
                if stop.is_set():
                    return
                solution, previous = run.solve(plan, fold, views[c], previous, rng)
                results.put(solution)
        except BaseException as exc:  # handed to the caller's thread
            results.put(exc)
        finally:
            results.put(None)

    threads = [
        threading.Thread(target=chain, args=(c, folds), name=f"alpha-seeding-chain-{c}")
        for c, folds in enumerate(chains)
    ]
    # One BLAS thread per chain; nested runs (probability=True's inner CV)
    # then see a one-thread budget and run one chain.
    with blas_limits(1):
        for thread in threads:
            thread.start()
        try:
            running = len(threads)
            while running:
                item = results.get()
                if item is None:
                    running -= 1
                elif isinstance(item, BaseException):
                    raise item
                else:
                    yield item
        finally:
            stop.set()
            for thread in threads:
                thread.join()


def chain_count(n_jobs, n_splits: int, n_samples: int) -> int:
    """How many seeding chains a run of ``n_splits`` folds uses.

    ``n_jobs=None`` means every thread this process may use
    (:func:`available_threads`), since users do not tune thread counts;
    otherwise joblib's meaning (``-1`` all CPUs, ``-2`` all but one). Never
    more chains than folds, and one chain below :data:`MIN_ROWS_FOR_CHAINS`
    rows, where starting threads costs more than it gives.
    """
    if n_samples < MIN_ROWS_FOR_CHAINS or n_splits < 2:
        return 1
    n = available_threads() if n_jobs is None else effective_n_jobs(n_jobs)
    return max(1, min(int(n), n_splits))
