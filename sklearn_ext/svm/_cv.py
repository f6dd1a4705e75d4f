"""k-fold cross-validation of kernel SVMs with alpha seeding."""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from numbers import Integral
from typing import Any

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import clone
from sklearn.svm import SVC
from sklearn.utils._param_validation import StrOptions

from sklearn_ext.model_selection._plan import FoldPlan
from sklearn_ext.model_selection._validation import tree_cross_validate
from sklearn_ext.svm._classes import (
    AlphaSeededSVC,
    _PairDecisions,
    _pairs,
    _StoreKeys,
    check_solved,
)
from sklearn_ext.svm._kernel_store import KernelStore, available_threads
from sklearn_ext.svm._seeding import SEEDINGS, seed_pair
from sklearn_ext.svm._solver import PairProblem, pair_rows
from sklearn_ext.utils._param_validation import validate_params
from sklearn_ext.utils._threads import blas_limits

__all__ = [
    "alpha_seeded_cv",
    "as_alpha_seeded",
    "chain_count",
    "is_native_scoring",
    "FoldSolution",
    "run_folds",
]

#: Below this many rows a run uses one seeding chain: threads cost more than
#: they give on folds solved in milliseconds (benchmarks/bench_svm_chains.py:
#: two chains 0.95-1.09x of one at 1,000 rows, 1.30-1.63x at 1,500).
MIN_ROWS_FOR_CHAINS = 1500

#: SVC parameters that AlphaSeededSVC takes over as they are.
_SHARED_PARAMS = (
    "C",
    "kernel",
    "degree",
    "gamma",
    "coef0",
    "shrinking",
    "tol",
    "cache_size",
    "class_weight",
    "max_iter",
    "decision_function_shape",
)


def as_alpha_seeded(estimator) -> AlphaSeededSVC:
    """An unfitted :class:`AlphaSeededSVC` with the parameters of ``estimator``.

    ``estimator`` is an ``AlphaSeededSVC`` (cloned) or a
    :class:`sklearn.svm.SVC` without ``break_ties`` (``probability`` and
    ``random_state`` are taken over). SVC's
    default ``cache_size`` (200 MB, which makes a few thousand rows fall back to
    kernel columns) becomes ``"auto"``: the fast path needs no tuning, and the
    cache size never changes the model.
    """
    if isinstance(estimator, AlphaSeededSVC):
        return clone(estimator)
    if isinstance(estimator, SVC) and type(estimator) is SVC:
        params = estimator.get_params()
        if params["break_ties"] is True:
            raise ValueError(
                "Alpha-seeded CV reproduces SVC's decision function and votes; "
                "SVC(break_ties=True) is not supported."
            )
        shared = {name: params[name] for name in _SHARED_PARAMS}
        # SVC.probability defaults to "deprecated" in recent scikit-learn.
        shared["probability"] = params["probability"] is True
        shared["random_state"] = params["random_state"]
        if shared["cache_size"] == SVC().cache_size:
            shared["cache_size"] = "auto"
        return AlphaSeededSVC(**shared)
    raise TypeError(
        "Alpha-seeded CV needs an AlphaSeededSVC or a sklearn.svm.SVC; got "
        f"{type(estimator).__name__}."
    )


@dataclass
class FoldSolution:
    """What one fold of an alpha-seeded run produced."""

    fold: int
    #: The fitted fold model, or ``None`` when the run keeps no models
    #: (``run_folds(keep_models=False)``).
    model: AlphaSeededSVC | None
    #: The fold's decision functions, by global rows (see ``accuracy``).
    decisions: _PairDecisions
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

    def accuracy(self, test_rows, y_test) -> float:
        """Accuracy on global rows ``test_rows``, reading the kernel store."""
        predicted = self.decisions.predict(self.store.columns, test_rows)
        return float(np.mean(predicted == y_test))


def run_folds(
    estimator,
    X,
    y,
    plan,
    *,
    seeding: str = "sir",
    random_state: int = 0,
    n_chains: int = 1,
    score=None,
    keep_models: bool = True,
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

    With ``keep_models=False`` no fold model is built (``solution.model`` is
    ``None``): a fold keeps only its decision functions by global rows
    (``solution.decisions``), which is all that scoring from the kernel store
    (``solution.accuracy``) reads. No copy of the support vectors, no Platt
    sigmoids (``probability=True``), nothing that grows with the folds.
    """
    if not isinstance(seeding, str) or seeding not in SEEDINGS:
        raise ValueError(
            f"The 'seeding' parameter must be a str among {set(SEEDINGS)}. Got "
            f"{seeding!r} instead."
        )
    model = as_alpha_seeded(estimator)
    model._validate_params()
    X, y = model._check_fit_data(X, y)
    classes, y_enc = np.unique(y, return_inverse=True)
    n_classes = classes.shape[0]
    if n_classes < 2:
        raise ValueError(
            f"The number of classes has to be greater than one; got {n_classes} class"
        )
    # gamma="scale" is computed once on the whole data set so that all folds
    # share one kernel (per fold it differs by O(1/k) of the variance).
    gamma = model._resolve_gamma(X)
    keys = _StoreKeys(model, X, y, gamma)
    store = keys.kernel_store(X, gamma)
    run = _Run(model, X, y, classes, y_enc, gamma, keys, seeding, score, keep_models)
    chains = [
        chain.tolist()
        for chain in np.array_split(np.arange(plan.n_splits), max(1, n_chains))
        if chain.shape[0]
    ]
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

    model: AlphaSeededSVC
    X: Any
    y: np.ndarray
    classes: np.ndarray
    y_enc: np.ndarray
    gamma: float
    keys: _StoreKeys
    seeding: str
    score: Any = None
    keep_models: bool = True

    def solve(self, plan, fold, store, previous, rng):
        """Seed fold ``fold`` from ``previous`` (its chain's last problems), solve.

        Returns the :class:`FoldSolution` and the fold's problems (the next
        fold's seed).
        """
        model, keys, y_enc, classes = self.model, self.keys, self.y_enc, self.classes
        n_classes = classes.shape[0]
        tic = time.perf_counter()
        train_mask = np.ones(y_enc.shape[0], dtype=bool)
        train_mask[plan.test_indices(fold)] = False
        rows = np.flatnonzero(train_mask).astype(np.intp)
        labels = y_enc[rows]
        counts = np.bincount(labels, minlength=n_classes)
        if not counts.all():
            missing = classes[counts == 0]
            raise ValueError(
                f"The training part of fold {fold} has no sample of class(es) "
                f"{missing.tolist()}; alpha-seeded CV needs every class in every "
                "training part (SVC would fit a model with fewer classes). Use a "
                "stratified cv or fewer folds."
            )
        c_by_class = model._class_C_for(classes, labels)
        problems = []
        seeds = []
        for p, (a, b) in enumerate(_pairs(n_classes)):
            idx, y_pm = pair_rows(y_enc, rows, a, b)
            C = np.where(y_pm > 0, c_by_class[a], c_by_class[b])
            # A solution of this very fold at a nearby C beats the previous
            # fold's at this C: same rows, and possibly an exact skip.
            found = keys.lookup(rows, a, b, idx.shape[0])
            if found is not None or previous is None:
                problem = PairProblem(
                    a,
                    b,
                    idx,
                    y_pm,
                    C,
                    np.zeros(idx.shape[0]),
                    np.full(idx.shape[0], -1.0),
                )
            if found is not None:
                keys.seed(store, problem, found)
            if previous is not None and (found is None or not found[1]):
                # Of two seeds, start from the one with the lower dual objective.
                by_fold = seed_pair(
                    store, previous[p], idx, y_pm, C, seeding=self.seeding, rng=rng
                )
                if found is None or by_fold.objective() < problem.objective():
                    problem, found = by_fold, None
            seeds.append(found)
            problems.append(problem)
        seed_time = time.perf_counter() - tic
        tic = time.perf_counter()
        for problem, found in zip(problems, seeds, strict=True):
            keys.solve(store, problem, found, rows, seeded=True)
        if self.keep_models:
            fold_model, fit_time = self._fold_model(rows, problems, seeds, tic)
        else:
            # Only the scores are asked for: no model, no Platt sigmoids.
            fold_model, fit_time = None, time.perf_counter() - tic
            check_solved(problems, type(model).__name__, model.max_iter)
        solution = FoldSolution(
            fold=fold,
            model=fold_model,
            decisions=_PairDecisions(problems, classes),
            n_iter=int(sum(p.n_iter for p in problems)),
            objective=np.array([p.objective() for p in problems]),
            seed_time=seed_time,
            fit_time=fit_time,
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
        return solution, problems

    def _fold_model(self, rows, problems, seeds, tic):
        """The fold's fitted :class:`AlphaSeededSVC` and its ``fit_time``.

        ``tic`` is when solving started: ``fit_time`` counts the Platt
        sigmoids, not the fitted attributes.
        """
        model, X, y = self.model, self.X, self.y
        fold_model = clone(model)
        fold_model.classes_ = self.classes
        if fold_model.probability:
            # Each fold model gets its own Platt sigmoids from an internal CV
            # on its training rows, as SVC(probability=True) fitted on them.
            # A store of its own: the inner folds' kernels are not the run's.
            platt = clone(fold_model).set_params(warm_start_store=None)
            sub = X[np.ix_(rows, rows)] if model.kernel == "precomputed" else X[rows]
            platt._fit_platt(sub, y[rows])
            fold_model.probA_, fold_model.probB_ = platt.probA_, platt.probB_
        else:
            fold_model.probA_ = fold_model.probB_ = np.empty(0)
        fit_time = time.perf_counter() - tic
        fold_model.n_features_in_ = X.shape[1]
        fold_model._set_model(problems, X, self.gamma, self.classes.shape[0])
        fold_model._set_seeds(seeds)
        return fold_model, fit_time


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
    views = store.partition(len(chains))
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


def is_native_scoring(scoring) -> bool:
    """Whether ``scoring`` is accuracy, which folds score from the kernel store."""
    return scoring is None or (isinstance(scoring, str) and scoring == "accuracy")


@validate_params(
    {
        "estimator": [AlphaSeededSVC, SVC],
        "X": ["array-like", "sparse matrix"],
        "y": ["array-like"],
        "cv": ["cv_object", FoldPlan],
        "seeding": [StrOptions(set(SEEDINGS))],
        "scoring": [str, callable, list, tuple, set, dict, None],
        "return_estimator": ["boolean"],
        "random_state": [Integral],
        "n_jobs": [Integral, None],
    },
)
def alpha_seeded_cv(
    estimator,
    X,
    y,
    *,
    cv=10,
    seeding: str = "sir",
    scoring=None,
    return_estimator: bool = False,
    random_state: int = 0,
    n_jobs: int | None = None,
) -> dict[str, Any]:
    """k-fold CV of a kernel SVM, each fold's SMO seeded from the previous fold.

    The same as :func:`~sklearn_ext.tree_cross_validate` with
    ``method=AlphaSeedingBackend(seeding, random_state)``: the same folds,
    fold numbering, scoring and result keys.

    All folds share one kernel store (the full kernel matrix when it fits in
    ``cache_size`` megabytes), so each kernel value is computed once for the
    whole run. Fold ``h + 1`` starts from fold ``h``'s dual solution adapted by
    ``seeding`` (Wen et al., 2017), with its gradient updated from the kernel
    columns of the points that changed, then SMO runs to ``tol``: every fold's
    model is the one LIBSVM would find, to ``tol``.

    Parameters
    ----------
    estimator : AlphaSeededSVC or sklearn.svm.SVC
        The model; an ``SVC``'s parameters are taken over by an
        ``AlphaSeededSVC`` (``break_ties`` is not supported; with
        ``probability=True`` each fold model fits its own Platt sigmoids).
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Data, or the ``(n_samples, n_samples)`` kernel for
        ``kernel="precomputed"``.
    y : array-like of shape (n_samples,)
        Class labels. Every training part must hold every class.
    cv : int, FoldPlan or cross-validation generator, default=10
        An int gives stratified folds (:class:`StratifiedTreeCVSplitter`);
        any splitter whose test folds partition the samples is accepted.
    seeding : {"sir", "mir", "ato", "keep", "none"}, default="sir"
        How fold ``h + 1`` starts from fold ``h``: ``"sir"`` moves each removed
        support vector's alpha to the most kernel-similar added point of the
        same label; ``"mir"`` fits the added alphas by least squares so the free
        support vectors stay on the margin; ``"ato"`` follows the
        adjust-towards-optimum path for a few steps; ``"keep"`` keeps the shared
        alphas and starts the added ones at 0; ``"none"`` starts from 0 (only
        the kernel store is shared).
    scoring : str, callable, list, tuple, set or dict, default=None
        As in :func:`~sklearn_ext.tree_cross_validate`; ``None`` is accuracy
        (computed from the kernel store).
    return_estimator : bool, default=False
        Whether to return each fold's fitted :class:`AlphaSeededSVC`. Without
        it, folds scored by accuracy build no model at all (no copy of their
        support vectors): memory does not grow with the number of folds.
    random_state : int, default=0
        Seed of SIR's random replacements (used only when an added chunk has no
        point of a removed support vector's label).
    n_jobs : int, default=None
        Seeding chains run in parallel threads: the folds are cut into this
        many contiguous chains sharing the kernel store. ``None`` uses every
        thread the process may use (see
        :class:`~sklearn_ext.svm.AlphaSeedingBackend`); ``1`` one chain,
        ``-1`` all CPUs. Each chain's first fold starts cold, so the results
        agree with one chain's within ``tol``.

    Returns
    -------
    result : dict
        The keys of :func:`~sklearn_ext.tree_cross_validate` (``test_score``
        or ``test_<name>`` per metric, ``fit_time`` (seeding plus solving),
        ``score_time``, ``n_samples_fed``, ``backend``, ``estimator`` if
        asked), every array in split order, plus the backend's extras:
        ``n_iter`` (total SMO iterations of each fold, all one-vs-one
        problems), ``seed_time``, ``objective`` (list of per-pair dual
        objectives) and, with the estimator's ``warm_start_store``,
        ``warm_start_seed`` (the stored ``C`` each fold started from, NaN for
        none), ``warm_start_hits`` (problems seeded from the store) and
        ``warm_start_skips`` (problems solved by the exact skip).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import scale
    >>> from sklearn_ext.svm import AlphaSeededSVC, alpha_seeded_cv
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = scale(X)
    >>> cold = alpha_seeded_cv(AlphaSeededSVC(C=10), X, y, cv=10, seeding="none")
    >>> warm = alpha_seeded_cv(AlphaSeededSVC(C=10), X, y, cv=10, seeding="sir")
    >>> bool(warm["n_iter"].sum() < cold["n_iter"].sum())
    True
    >>> bool(abs(warm["test_score"].mean() - cold["test_score"].mean()) < 0.01)
    True
    """
    from sklearn_ext.svm._backend import AlphaSeedingBackend  # imports this module

    backend = AlphaSeedingBackend(seeding=seeding, random_state=random_state)
    return tree_cross_validate(
        as_alpha_seeded(estimator),
        X,
        y,
        cv=cv,
        scoring=scoring,
        method=backend,
        return_estimator=return_estimator,
        n_jobs=n_jobs,
    )
