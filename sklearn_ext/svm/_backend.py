"""The ``alpha_seeding`` CV backend: kernel SVMs with a shared kernel store."""

from __future__ import annotations

import time
from contextlib import closing
from typing import ClassVar

import numpy as np
from sklearn.svm import SVC
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d

from sklearn_ext.model_selection._backends import Backend, CVTask, LeafTable
from sklearn_ext.svm._classes import (
    AlphaSeededSVC,
    FoldModels,
    as_alpha_seeded,
    check_fit_input,
    check_params,
)
from sklearn_ext.svm._cv import chain_count, run_folds
from sklearn_ext.svm._scaled import (
    FoldScaling,
    ScaledFoldModels,
    scaling_refusal,
    split_pipeline,
)
from sklearn_ext.svm._seeding import SEEDINGS
from sklearn_ext.svm._solver import SVMParams
from sklearn_ext.svm._warm_start import WarmStartStore, store_in_use

__all__ = ["AlphaSeedingBackend"]


class AlphaSeedingBackend(Backend):
    """Solve the folds in order, each seeded from the previous one.

    Runs :class:`~sklearn_ext.svm.AlphaSeededSVC` and scikit-learn's
    :class:`~sklearn.svm.SVC` (whose parameters an ``AlphaSeededSVC`` takes
    over; the fold models are ``AlphaSeededSVC`` instances). All folds share one
    kernel store. The folds, in leaf order, are cut into as many contiguous
    seeding chains as ``n_jobs`` asks, each fold seeded from the previous one
    of its chain; the chains run in threads (the SMO loops and kernel reads
    release the GIL, the dense matrix is shared read-only, column caches are
    split so the memory budget holds). ``n_jobs=None`` (the default) uses
    every thread the process may use (:func:`joblib.cpu_count`, capped by the
    BLAS/OpenMP thread limit in force, so a joblib worker limited to one
    thread runs one chain), never more chains than folds, and one chain below
    1,500 rows; ``n_jobs=1`` runs one chain. Own threads rather than joblib:
    the chains share one in-memory kernel store, which processes could not.
    A chain's first fold starts cold, so results agree with one chain's within
    ``tol``, not bit for bit. ``LeafResult.n_samples_fed`` is the fold's
    number of training rows and ``fit_time`` its seeding plus solving time.
    With ``probability=True`` (``SVC``'s included) each fold model also fits its
    own Platt sigmoids from an internal CV on its training rows (counted in
    ``fit_time``), so probability scorers such as ``neg_log_loss`` work. A fold
    model is built only when it is used: returned (``return_estimator=True``)
    or scored by a scorer other than accuracy. Accuracy is read from the kernel
    store, so a fold scored that way keeps no model, no copy of its support
    vectors and no sigmoids, and memory stays flat in k.

    Parameters
    ----------
    seeding : {"sir", "mir", "ato", "keep", "none"}, default="sir"
        How fold ``h + 1`` starts from fold ``h``, see
        :func:`~sklearn_ext.svm.alpha_seeded_cv`.
    random_state : int, default=0
        Seed of SIR's random replacements.
    warm_start_store : WarmStartStore, WarmStartSession, None or False, \
            default=None
        A store of solutions shared across runs (cross-C warm starts); replaces
        the estimator's own ``warm_start_store`` when given. ``False`` runs
        without a store, and declines the one a search or a study would give
        (see :meth:`default_store`).

    Notes
    -----
    Extras of each leaf: ``n_iter`` (SMO iterations over the fold's one-vs-one
    problems), ``seed_time``, ``objective`` (the per-pair dual objectives)
    and, when a warm-start store is in use, ``warm_start_seed`` (the stored
    ``C`` the fold started from, NaN for none), ``warm_start_hits`` (problems
    seeded from the store) and ``warm_start_skips`` (problems solved by the
    exact skip).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import scale
    >>> from sklearn_ext import AlphaSeededSVC, tree_cross_validate
    >>> from sklearn_ext.svm import AlphaSeedingBackend
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> result = tree_cross_validate(
    ...     AlphaSeededSVC(), scale(X), y, cv=5,
    ...     method=AlphaSeedingBackend(seeding="mir"), return_run_info=True,
    ... )
    >>> result["backend"], result["n_iter"].shape
    ('alpha_seeding', (5,))
    """

    name = "alpha_seeding"
    extras: ClassVar[dict[str, str | None]] = {
        "n_iter": "sum",
        "seed_time": "sum",
        "kernel_time": "sum",
        "objective": None,
        "warm_start_seed": "mode",
        "warm_start_hits": "sum",
        "warm_start_skips": "sum",
    }

    def __init__(
        self, seeding: str = "sir", random_state: int = 0, warm_start_store=None
    ) -> None:
        if not isinstance(seeding, str) or seeding not in SEEDINGS:
            raise ValueError(
                "The 'seeding' parameter of AlphaSeedingBackend must be a str "
                f"among {set(SEEDINGS)}. Got {seeding!r} instead."
            )
        self.seeding = seeding
        self.random_state = random_state
        self.warm_start_store = warm_start_store

    def __repr__(self) -> str:
        return f"AlphaSeedingBackend(seeding={self.seeding!r})"

    @classmethod
    def accepts(cls, estimator) -> bool:
        parts = split_pipeline(estimator)
        if parts is not None:
            # Its other steps are judged with the data (refusal), so that a
            # fallback names the step that cannot be kept.
            estimator = parts[1][1]
        if isinstance(estimator, AlphaSeededSVC):
            return True
        # probability=True is taken over (each fold model calibrates itself).
        return type(estimator) is SVC and estimator.break_ties is not True

    def refusal(self, estimator, X, y) -> str | None:
        """A pipeline step other than a per-feature scaler before the SVM.

        See :func:`~sklearn_ext.svm._scaled.scaling_refusal`; a precomputed
        kernel cannot follow a scaler either.
        """
        parts = split_pipeline(estimator)
        if parts is None:
            return None
        reason = scaling_refusal(estimator)
        kernel = parts[1][1].kernel
        if reason is None and isinstance(kernel, str) and kernel == "precomputed":
            reason = "its SVM's kernel is precomputed, which no scaler may precede"
        if reason is None and isinstance(kernel, str) and kernel == "sigmoid":
            # Seen on breast_cancer after StandardScaler: a seeded start ends
            # at another stationary point than LIBSVM's cold start.
            reason = (
                "its SVM's sigmoid kernel is not positive semi-definite, so a "
                "seeded SMO may stop at another solution than LIBSVM's"
            )
        return reason

    def with_store(self, store, estimator) -> AlphaSeedingBackend:
        if not all(callable(getattr(store, m, None)) for m in ("lookup", "put")):
            raise TypeError(
                "The alpha_seeding backend keeps a WarmStartStore (or a "
                f"WarmStartSession) between runs; got store={store!r}."
            )
        return AlphaSeedingBackend(self.seeding, self.random_state, store)

    def default_store(self, estimator) -> WarmStartStore | None:
        """A new :class:`WarmStartStore` for a search or a study, unless one is set.

        Searches and Optuna studies over a kernel SVM run many CVs on the same
        data at other values of ``C``: a store of their own gives each fold a
        warm start from its solution at the nearest ``C`` already run, and
        keeps the kernel matrix between runs. ``None`` when this backend or the
        estimator already names a store, or opts out with
        ``warm_start_store=False``.
        """
        if self.warm_start_store is not None:
            return None
        parts = split_pipeline(estimator)
        svm = estimator if parts is None else parts[1][1]
        if getattr(svm, "warm_start_store", None) is not None:
            return None
        return WarmStartStore()

    def plan_refusal(self, estimator, plan, y) -> str | None:
        """A training part without some class (``SVC`` would fit fewer classes)."""
        if y is None or np.ndim(y) != 1:
            return None
        classes, codes = np.unique(y, return_inverse=True)
        total = np.bincount(codes)
        for leaf in range(plan.n_splits):
            held = np.bincount(codes[plan.test_indices(leaf)], minlength=total.size)
            if np.any(held == total):
                split = int(plan.split_index[leaf])
                missing = classes[held == total].tolist()
                return (
                    f"the training part of split {split} has no sample of "
                    f"class(es) {missing}, and alpha-seeded CV needs every class "
                    "in every training part"
                )
        return None

    def run(self, task: CVTask) -> LeafTable:
        if task.fit_params:
            raise ValueError(
                "The alpha_seeding backend takes no fit parameters; got "
                f"{sorted(task.fit_params)}. Use method='standard'."
            )
        parts = split_pipeline(task.estimator)
        reason = None if parts is None else self.refusal(task.estimator, None, None)
        if reason is not None:
            raise TypeError(
                f"The alpha_seeding backend cannot run this pipeline: {reason}."
            )
        model = as_alpha_seeded(task.estimator if parts is None else parts[1][1])
        if self.warm_start_store is not None:
            model.set_params(warm_start_store=self.warm_start_store)
        with_store = store_in_use(model.warm_start_store) is not None
        if parts is None:
            X, y = check_fit_input(model, task.X, task.y)
            scaling, make_model = None, FoldModels(model, X, y)
        else:
            # Each fold scales the data as given (the pipeline's scaler sees it).
            check_params(model)
            X, y = task.X, column_or_1d(task.y, warn=True)
            check_classification_targets(y)
            scaling = FoldScaling(parts[0], X, SVMParams.of(model))
            make_model = ScaledFoldModels(task.estimator, model, y)
        # Accuracy is computed from the shared kernel store (the test rows'
        # kernel values are already there); other metrics go through the scorer.
        native = task.metric == "accuracy"
        test_rows = task.plan.test_indices

        def accuracy(solution):
            # In the chain's thread: the kernel reads release the GIL.
            tic = time.perf_counter()
            test = test_rows(solution.fold)
            value = solution.accuracy(test, y[test])
            return {"score": value}, time.perf_counter() - tic

        leaves = []
        folds = run_folds(
            SVMParams.of(model),
            X,
            y,
            task.plan,
            seeding=self.seeding,
            random_state=self.random_state,
            n_chains=chain_count(task.n_jobs, task.plan.n_splits, task.plan.n_samples),
            score=accuracy if native else None,
            # A fold model is built only for someone to use: returned, or
            # scored through predict/decision_function. Scored natively and
            # not returned, a fold keeps no model (no support-vector copy).
            make_model=make_model if task.return_estimator or not native else None,
            scaling=scaling,
        )
        # Closed on the way out, so that a stopped run waits for its chains.
        with closing(folds):
            for solution in folds:
                self._emit(task, solution, native, with_store, leaves)
        return LeafTable.from_leaves(leaves)

    @staticmethod
    def _emit(task, solution, native, with_store, leaves) -> None:
        if native:
            scores, score_time = solution.scores
        else:
            scores, score_time = task.score(solution.model, solution.fold)
        extras = {
            "n_iter": solution.n_iter,
            "seed_time": solution.seed_time,
            "objective": solution.objective,
        }
        if solution.kernel_time is not None:
            extras["kernel_time"] = solution.kernel_time
        if with_store:
            extras.update(
                warm_start_seed=np.nan
                if solution.warm_start_C is None
                else solution.warm_start_C,
                warm_start_hits=solution.warm_start_hits,
                warm_start_skips=solution.warm_start_skips,
            )
        leaf = task.leaf_result(
            solution.fold,
            scores,
            solution.n_train,
            solution.seed_time + solution.fit_time + (solution.kernel_time or 0.0),
            score_time,
            solution.model,
            extras,
        )
        leaves.append(leaf)
        task.emit(leaf)
