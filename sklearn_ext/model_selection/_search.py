"""``TreeCVSearchCV``: a search whose unit of work is one candidate's whole tree."""

from __future__ import annotations

import contextlib
import numbers
import time
import warnings
from collections import defaultdict
from dataclasses import dataclass
from inspect import signature
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import _fit_context, clone
from sklearn.metrics._scorer import _MultimetricScorer
from sklearn.model_selection import ParameterGrid, ParameterSampler
from sklearn.model_selection._search import BaseSearchCV
from sklearn.model_selection._validation import (
    _insert_error_scores,
    _warn_or_raise_about_fit_failures,
)
from sklearn.utils._metadata_requests import _routing_enabled
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metadata_routing import MetadataRouter, MethodMapping
from sklearn.utils.validation import _check_method_params, indexable

from sklearn_ext.model_selection._backends import Backend, LeafTable
from sklearn_ext.model_selection._choice import METHODS
from sklearn_ext.model_selection._core import Resolved, RunCore
from sklearn_ext.model_selection._plan import FoldPlan
from sklearn_ext.model_selection._racing import race
from sklearn_ext.model_selection._report import (
    SplitHooks,
    print_splits,
    print_starts,
    split_dicts,
    summarize_extras,
)
from sklearn_ext.model_selection._scoring import metric_names
from sklearn_ext.model_selection._split import routed_cv
from sklearn_ext.utils._data_scope import data_scope

__all__ = ["TreeCVSearchCV", "warm_start_order"]


class TreeCVSearchCV(BaseSearchCV):
    """Grid or randomized search with each candidate's k-fold CV run by TreeCV.

    scikit-learn's searches dispatch every (candidate, fold) pair as its own
    fit. This search dispatches every *candidate* as one unit of work that runs
    the TreeCV tree on one shared :class:`FoldPlan`, so each candidate costs
    about ``log2(2k)`` data passes whatever ``n_jobs`` is and whichever joblib
    backend (threads, processes, Dask) runs it. Native learners get the native
    tree through the same backend choice.

    Everything else is :class:`~sklearn.model_selection.GridSearchCV`'s:
    ``cv_results_`` is built by scikit-learn's own table code (same keys,
    dtypes, masked ``param_*`` columns, ranks and ties), and ``refit``
    (``True``, ``False``, a metric name, a callable), dict, list and callable
    ``scoring``, ``return_train_score``, ``error_score``, ``verbose``,
    ``sample_weight`` to the scorers, metadata routing and scikit-learn's
    callbacks (``set_callbacks``, e.g. ``sklearn.callback.ProgressBar``)
    behave as there. With ``return_run_info=True`` columns are added:
    ``n_samples_fed`` (rows passed to the learner per candidate), ``backend``
    (the backend that ran it) and any per-candidate extras the backend
    reports. A splitter whose test folds do not partition the samples
    (``ShuffleSplit``) runs by the standard backend, with a
    :class:`TreeCVFallbackWarning`. A learner without ``partial_fit`` (that
    no exact or SVM engine takes) runs by standard CV as in ``GridSearchCV``,
    without a warning: ``verbose > 0`` prints that note, and the ``backend``
    column records it.

    **What is scored is what is returned.** The tree scores each fold's model
    after one ordered pass of ``partial_fit`` over its training rows. When the
    learner's own ``fit`` trains differently (``SGDClassifier``'s epochs and
    shuffling), a :class:`TreeCVRegimeWarning` says so once, and
    ``best_estimator_`` is a :class:`TreeCVEstimator` around the learner, whose
    ``fit`` is that one pass: ``cross_val_score(clone(best_estimator_), X, y,
    cv=<the same folds>)`` gives ``best_score_``. ``method="standard"`` scores
    the learner's own ``fit`` instead (k independent fits).

    A kernel SVM (:class:`~sklearn_ext.svm.AlphaSeededSVC`, ``SVC``) gets
    cross-C warm starts by default: the search gives its candidates a
    :class:`~sklearn_ext.svm.WarmStartStore` of its own (unless the estimator
    holds one, or opts out with ``warm_start_store=False``), candidates that
    differ only in ``C`` run by increasing ``C``, each fold starting from its
    solution at the previous ``C`` (or skipped exactly), and the refit reuses
    the kernel matrix. ``cv_results_`` keeps the candidates' own order, and
    its ``warm_start_hits`` column counts the warm starts. The store lives as
    long as ``fit`` (see ``Backend.default_store``).

    Parameters
    ----------
    estimator : estimator object
        The learner; needs ``partial_fit`` unless ``method="standard"``.
    param_grid : dict or list of dicts, default=None
        Grid of candidates, as in ``GridSearchCV``. Exactly one of
        ``param_grid`` and ``param_distributions`` must be given.
    param_distributions : dict or list of dicts, default=None
        Distributions to sample ``n_iter`` candidates from, as in
        ``RandomizedSearchCV``.
    n_iter : int, default=10
        Number of sampled candidates (with ``param_distributions``).
    scoring : str, callable, list, tuple or dict, default=None
        As in ``GridSearchCV``; several metrics need ``refit`` to name one of
        them, to be a callable or to be ``False``.
    refit : bool, str or callable, default=True
        Refit the best candidate on all data, as in ``GridSearchCV``. A callable
        gets ``cv_results_`` and returns the best index (e.g.
        :func:`one_standard_error_rule`).
    cv : int, FoldPlan, cross-validation generator or iterable, default=5
        The folds, built once and shared by all candidates. The test folds
        must partition the samples (``KFold``, ``StratifiedKFold``,
        ``GroupKFold``, a list of such ``(train, test)`` pairs...).
    order : {"fixed", "randomized"}, default=None
        Feeding order, see :func:`tree_cross_validate`.
    method : {"auto", "treecv", "standard", "alpha_seeding"}, default="auto"
        Backend choice, see :func:`tree_cross_validate`. ``"standard"`` scores
        the learner's own ``fit``.
    n_jobs : int, default=None
        Candidates evaluated in parallel through joblib.
    random_state : int, RandomState instance or None, default=None
        Seeds the candidate sampling and the randomized order.
    error_score : "raise" or float, default=np.nan
        Score of a candidate whose CV raised; ``"raise"`` re-raises. A
        candidate's tree fails as a whole: every split gets this score.
    verbose : int, default=0
        As in ``GridSearchCV``: ``>0`` the number of fits (and the note of a
        learner that runs by standard CV for want of ``partial_fit``), ``>1``
        one line per split with the candidate's parameters, ``>2`` its scores.
    return_train_score : bool, default=False
        Whether to score each fold's model on its training rows too
        (``split{i}_train_score``, ``mean_train_score``, ...).
    pre_dispatch : int or str, default="2*n_jobs"
        As in ``GridSearchCV``, for the candidates' joblib jobs.
    return_run_info : bool, default=False
        Whether ``cv_results_`` also holds what TreeCV measured per candidate:
        ``n_samples_fed`` (rows passed to the learner), ``backend`` (its name,
        e.g. ``"native_tree"`` or ``"standard"``) and the backend's
        engine extras summed per candidate (e.g. ``n_iter`` and
        ``warm_start_hits`` for ``alpha_seeding``). Off by default, so that
        ``cv_results_`` has exactly ``GridSearchCV``'s keys.
    racing : bool, default=False
        Whether to race the candidates up the tree's ladder instead of running
        each to its leaves. Walked level by level, a candidate's tree gives
        after level ``l`` (``l`` passes) a complete ``2**l``-fold CV over all
        rows, its *rung*. The racing search advances every candidate one rung
        at a time (the running candidates' rungs in parallel threads, up to
        ``n_jobs``) and after each rung but the last drops the candidates
        clearly worse than the leader (the best rung estimate): a one-sided
        paired t-test over the rung's parts (the same held-out rows for every
        candidate), each candidate's variance moderated toward the
        candidates' common spread (:func:`~sklearn_ext.model_selection.\
_racing.drop_test`), in the spirit of CVST (Krueger et al., JMLR 2015).
        It also drops after the two *early rungs*: models trained on a
        quarter of the rows (rung 0.25, after about ``n / 4`` rows fed) and
        on the right half (the half rung, 0.5, after ``n / 2``), scored on
        the left half; on accuracy by a test whose variance bound needs only
        the two accuracies (:func:`~sklearn_ext.model_selection._racing.\
half_rung_test`), on another metric by an unpaired test over the left
        half's chunks (:func:`~sklearn_ext.model_selection._racing.\
early_rung_test`). Only the survivors run to the leaves; ``best_*`` and
        ``refit`` choose among them as without racing. A dropped candidate
        keeps its row in ``cv_results_`` with NaN fold scores and times (so
        it ranks last), and the columns ``race_rung`` (the rung it stopped
        at, 0.25 and 0.5 for the early rungs; the last rung, ``ceil(log2(k))``, for
        survivors), ``race_score`` (its last rung's estimate of the raced
        metric) and ``n_samples_fed`` (rows fed to it) are added for every
        candidate. The raced metric is the single one, or the one ``refit``
        names. A backend without levels (standard CV, the SVM and exact
        engines) runs its candidates to the leaves: nothing is dropped.
    racing_alpha : float in (0, 1), default=0.05
        The error rate of the race: each test drops a candidate whose
        expected rung score equals the leader's with probability at most
        ``racing_alpha / (ceil(log2(k)) + 1)`` (Bonferroni over the
        ``ceil(log2(k)) - 1`` rungs that test and the two early rungs), so a
        candidate as good as the leader survives the race with probability at
        least ``1 - racing_alpha``, under the tests' models (part differences
        independent and normal; at the early rungs, rows exchangeable) and
        against a fixed leader. What the test does not cover is the rungs'
        bias: a rung scores models trained on ``1 - 2**-l`` of the rows (the
        early rungs on a quarter and a half), and a candidate that gains more
        from more data than the leader can be dropped though the full k-fold
        CV would rank it first (see "Racing" in the user guide for the measured rate).

    Attributes
    ----------
    cv_results_ : dict of numpy (masked) ndarrays
        Per-candidate results, keys as in ``GridSearchCV`` (plus
        ``n_samples_fed``, ``backend`` and the engine extras with
        ``return_run_info``; ``race_rung``, ``race_score`` and
        ``n_samples_fed`` with ``racing``).
    best_estimator_ : estimator
        The best candidate refit on all data (if ``refit``), trained the way
        its folds were scored (see above).
    regime_gap_ : dict
        Set only when the tree scored one pass of a learner whose own ``fit``
        trains differently: that ``fit`` measured against the tree's models on
        the first splits (``gap``, ``fit_score``, ``tree_score``, ``splits``,
        ``metric``, ``stderr``, ``large``; see "What TreeCV scores" in the user
        guide), of the best candidate; with ``method="auto"`` a large gap turns
        the search to the learner's own ``fit`` (every candidate scored again).
        Otherwise the search has ``GridSearchCV``'s attributes.
    best_score_ : float
        Mean CV score of the best candidate (not with a callable ``refit``).
    best_params_ : dict
        Parameters of the best candidate.
    best_index_ : int
        Index of the best candidate in ``cv_results_``.
    scorer_ : callable or dict
        The scorer(s) used.
    n_splits_ : int
        Number of folds.
    refit_time_ : float
        Seconds to refit the best candidate.
    multimetric_ : bool
        Whether several metrics were computed.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit`` (with ``refit``, when ``X`` had
        string column names); ``classes_`` and ``n_features_in_`` are the
        refit model's, as in ``GridSearchCV``.

    See Also
    --------
    TreeCVEstimator : The same sharing inside scikit-learn's own searches.

    Examples
    --------
    >>> from sklearn.base import clone
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.model_selection import cross_val_score
    >>> from sklearn_ext import PegasosClassifier, TreeCVSearchCV, TreeCVSplitter
    >>> X, y = load_digits(return_X_y=True)
    >>> search = TreeCVSearchCV(
    ...     PegasosClassifier(), {"alpha": [1e-4, 1e-2]}, cv=TreeCVSplitter(8)
    ... ).fit(X, y)
    >>> sorted(search.best_params_)
    ['alpha']
    >>> search.cv_results_["split7_test_score"].shape
    (2,)
    >>> refit = clone(search.best_estimator_)
    >>> again = cross_val_score(refit, X, y, cv=TreeCVSplitter(8))
    >>> bool(abs(again.mean() - search.best_score_) < 1e-12)
    True

    Racing drops the clearly worse candidates after a quarter of a pass (the
    quarter rung, 0.25), half a pass (the half rung, 0.5), one (rung 1) or two:

    >>> from sklearn.datasets import make_classification
    >>> X, y = make_classification(
    ...     n_samples=4000, n_features=10, n_informative=6, random_state=0
    ... )
    >>> grid = {"alpha": [0.1, 1.0, 1e-6, 1e3]}
    >>> raced = TreeCVSearchCV(
    ...     PegasosClassifier(), grid, cv=TreeCVSplitter(16), racing=True
    ... ).fit(X, y)
    >>> raced.cv_results_["race_rung"].tolist()  # rung 4 is the leaves'
    [4.0, 4.0, 0.5, 0.25]
    >>> raced.best_params_
    {'alpha': 0.1}
    """

    _parameter_constraints: dict = {
        **BaseSearchCV._parameter_constraints,
        "param_grid": [dict, list, None],
        "param_distributions": [dict, list, None],
        "n_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "cv": ["cv_object", FoldPlan],
        "order": [StrOptions({"fixed", "randomized"}), None],
        "method": [StrOptions(set(METHODS)), Backend],
        "random_state": ["random_state"],
        "return_run_info": ["boolean"],
        "racing": ["boolean"],
        "racing_alpha": [Interval(numbers.Real, 0, 1, closed="neither")],
    }

    def __init__(
        self,
        estimator,
        param_grid=None,
        *,
        param_distributions=None,
        n_iter=10,
        scoring=None,
        refit=True,
        cv=5,
        order=None,
        method="auto",
        n_jobs=None,
        random_state=None,
        error_score=np.nan,
        verbose=0,
        return_train_score=False,
        pre_dispatch="2*n_jobs",
        return_run_info=False,
        racing=False,
        racing_alpha=0.05,
    ):
        super().__init__(
            estimator=estimator,
            scoring=scoring,
            n_jobs=n_jobs,
            refit=refit,
            cv=cv,
            verbose=verbose,
            pre_dispatch=pre_dispatch,
            error_score=error_score,
            return_train_score=return_train_score,
        )
        self.param_grid = param_grid
        self.param_distributions = param_distributions
        self.n_iter = n_iter
        self.order = order
        self.method = method
        self.random_state = random_state
        self.return_run_info = return_run_info
        self.racing = racing
        self.racing_alpha = racing_alpha

    def _candidates(self) -> list[dict]:
        if (self.param_grid is None) == (self.param_distributions is None):
            raise ValueError(
                "TreeCVSearchCV needs exactly one of 'param_grid' and "
                "'param_distributions'. Got param_grid="
                f"{self.param_grid!r} and param_distributions="
                f"{self.param_distributions!r}."
            )
        if self.param_grid is not None:
            return list(ParameterGrid(self.param_grid))
        return list(
            ParameterSampler(
                self.param_distributions, self.n_iter, random_state=self.random_state
            )
        )

    def _run_search(self, evaluate_candidates, *, callback_ctx=None):
        """Evaluate the grid, or the ``n_iter`` sampled candidates, at once.

        With ``callback_ctx`` (scikit-learn's callbacks), inside a ``"search"``
        task of one ``"candidate-split-evaluation"`` subtask per candidate and
        split, as ``GridSearchCV`` and ``RandomizedSearchCV`` do.
        """
        candidates = self._candidates()
        if callback_ctx is None:
            evaluate_candidates(candidates)
            return
        search_ctx = callback_ctx.subcontext(
            task_name="search",
            max_subtasks=len(candidates) * self.n_splits_,
            sequential_subtasks=False,
        ).call_on_fit_task_begin(estimator=self)
        evaluate_candidates(candidates, callback_ctx=search_ctx)
        search_ctx.call_on_fit_task_end(estimator=self)

    def get_metadata_routing(self):
        """Get metadata routing of this object.

        As ``GridSearchCV``'s, with ``fit`` also routed to the estimator's
        ``partial_fit`` (what the tree calls).

        Returns
        -------
        routing : MetadataRouter
        """
        mapping = MethodMapping().add(caller="fit", callee="fit")
        if callable(getattr(self.estimator, "partial_fit", None)):
            mapping.add(caller="fit", callee="partial_fit")
        router = MetadataRouter(owner=self).add(
            estimator=self.estimator, method_mapping=mapping
        )
        scorer, _ = self._get_scorers()
        router.add(
            scorer=scorer,
            method_mapping=MethodMapping()
            .add(caller="score", callee="score")
            .add(caller="fit", callee="score"),
        )
        router.add(
            splitter=self.cv,
            method_mapping=MethodMapping().add(caller="fit", callee="split"),
        )
        return router

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None, **params):
        """Run each candidate's TreeCV and refit the best one.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,), default=None
            Targets.
        **params : dict
            As in ``GridSearchCV.fit``: ``groups`` goes to the splitter,
            ``sample_weight`` to the scorers that accept it, and everything
            to ``partial_fit`` (per-sample arrays restricted to the rows fed)
            and to the refit. With metadata routing enabled, routed by the
            requests of the estimator (``fit`` and ``partial_fit``), the
            scorers and the splitter.

        Returns
        -------
        self : object
            The fitted search.
        """
        # The data does not change during one fit: the warm-start keys of all
        # candidates and of the refit hash X once.
        with data_scope():
            return self._fit(X, y, params)

    def _fit(self, X, y, params):
        self._candidates()  # raises on a bad grid before any work
        scorers, refit_metric = self._get_scorers()
        X, y = indexable(X, y)
        params = _check_method_params(X, params=params)
        routed = self._get_routed_params_for_fit(params)
        weight = params.get("sample_weight")
        metadata = None if weight is None else {"sample_weight": weight}
        root_ctx = self._init_callback_context(
            max_subtasks=1 + (self.refit is not False)
        ).call_on_fit_task_begin(estimator=self, X=X, y=y, metadata=metadata)
        core = self._core(X, y, routed)
        self.n_splits_ = core.plan.n_splits
        runs, results, out, spent = self._search(core, root_ctx)
        refit_metric = self._pick_best(results, out, refit_metric)
        gap = self._note_regime(core, runs, results, refit_metric, spent)
        if core.fit_instead_:
            # One pass was far from the learner's fit on the best candidate:
            # "auto" scores every candidate by that fit (the gap is kept).
            # (scikit-learn's callbacks saw the search once: the one task
            # their context holds.)
            runs, results, out, _ = self._search(core, None)
            refit_metric = self._pick_best(results, out, refit_metric)
        if gap is not None:  # GridSearchCV's attributes, and this one when measured
            self.regime_gap_ = gap.as_dict()
        if self.refit:
            self._refit_best(core, runs[self.best_index_], X, y, root_ctx, metadata)

        if isinstance(scorers, _MultimetricScorer):
            self.scorer_ = scorers._scorers
        else:
            self.scorer_ = scorers
        self.cv_results_ = results
        root_ctx.call_on_fit_task_end(estimator=self, X=X, y=y, metadata=metadata)
        return self

    def _search(self, core: RunCore, root_ctx):
        """Run ``_run_search`` on ``core``: the runs, ``cv_results_``, the
        ``_fit_and_score``-style dicts and the seconds it took."""
        runs: list[Resolved] = []
        evaluate_candidates = self._candidate_evaluator(core, runs)
        # The data does not change during one fit: it is hashed once.
        with data_scope(core.memo):
            tic = time.perf_counter()
            if (
                root_ctx is not None
                and "callback_ctx" in signature(self._run_search).parameters
            ):
                self._run_search(evaluate_candidates, callback_ctx=root_ctx)
            else:  # a subclass's own _run_search
                self._run_search(evaluate_candidates)
            spent = time.perf_counter() - tic
        return runs, evaluate_candidates.results, evaluate_candidates.out, spent

    def _pick_best(self, results, all_out, refit_metric):
        """``GridSearchCV``'s choice of the best candidate; the refit metric."""
        self.multimetric_ = isinstance(all_out[0]["test_scores"], dict)
        if callable(self.scoring) and self.multimetric_:
            self._check_refit_for_multimetric(all_out[0]["test_scores"])
            refit_metric = self.refit
        if self.refit or not self.multimetric_:
            self.best_index_ = int(
                self._select_best_index(self.refit, refit_metric, results)
            )
            if not callable(self.refit):
                self.best_score_ = results[f"mean_test_{refit_metric}"][
                    self.best_index_
                ]
            self.best_params_ = results["params"][self.best_index_]
        return refit_metric

    def _note_regime(self, core: RunCore, runs, results, refit_metric, spent):
        """The regime gap of the best candidate (or the first); with
        ``method="auto"`` a large one turns ``core`` to the learner's fit."""
        index = getattr(self, "best_index_", 0)
        metric = refit_metric if isinstance(refit_metric, str) else "score"
        key = f"split{{}}_test_{metric}"
        if key.format(0) not in results:
            return None
        scores = {
            i: float(results[key.format(i)][index]) for i in range(core.plan.n_splits)
        }
        return core.note_regime(runs[index], scores, spent, act=True)

    def _core(self, X, y, routed) -> RunCore:
        """The run core of one ``fit``: data, plan, scorers and parameters."""
        return RunCore(
            self.estimator,
            X,
            y,
            groups=routed.splitter.split.get("groups"),
            cv=routed_cv(self.cv, routed.splitter.split),
            scoring=self.scoring,
            method=self.method,
            order=self.order,
            random_state=self.random_state,
            fit_params=dict(routed.estimator.fit),
            # Without routing every fit parameter goes to partial_fit as to fit
            # (the core falls back to fit for one partial_fit does not take).
            stream_params=dict(routed.estimator.get("partial_fit", {}))
            if _routing_enabled()
            else None,
            score_params=dict(routed.scorer.score),
            return_train_score=self.return_train_score,
            error_score=self.error_score,
            refit=self.refit is not False,
            check_base=False,
        )

    def _refit_best(self, core: RunCore, best: Resolved, X, y, root_ctx, metadata):
        """Refit the best candidate inside the ``"refit-with-best-params"`` task."""
        refit_ctx = root_ctx.subcontext(task_name="refit-with-best-params")

        @contextlib.contextmanager
        def around_fit(model):
            with refit_ctx.propagate_callback_context(model):
                refit_ctx.call_on_fit_task_begin(
                    estimator=self, X=X, y=y, metadata=metadata
                )
                yield

        tic = time.time()
        model = core.refit(best, X, y, around_fit=around_fit)
        self.refit_time_ = time.time() - tic
        self.best_estimator_ = model
        if hasattr(model, "feature_names_in_"):
            self.feature_names_in_ = model.feature_names_in_
        refit_ctx.call_on_fit_task_end(estimator=self, X=X, y=y, metadata=metadata)

    def _candidate_evaluator(self, core: RunCore, runs: list[Resolved]):
        """``evaluate_candidates`` of ``_run_search``, on the one core.

        Each candidate's backend and regime are decided once, here in the
        caller's process (``runs``); the joblib jobs only run them.
        """
        base_estimator = clone(self.estimator)
        store = core.store_of(base_estimator)
        candidates_so_far: list[dict] = []
        more: dict[str, list] = defaultdict(list)
        parallel = Parallel(
            n_jobs=self.n_jobs, pre_dispatch=self.pre_dispatch, prefer=core.prefer
        )

        def evaluate_candidates(
            candidate_params, cv=None, more_results=None, callback_ctx=None
        ):
            candidate_params = list(candidate_params)
            n_candidates, n_splits = len(candidate_params), core.plan.n_splits
            if self.verbose > 0:
                print(
                    f"Fitting {n_splits} folds for each of {n_candidates} "
                    f"candidates, totalling {n_candidates * n_splits} fits"
                )
            resolved = [
                core.resolve(clone(base_estimator).set_params(**clone(p, safe=False)))
                for p in candidate_params
            ]
            if self.verbose > 0:
                print_notes(core, evaluate_candidates)
            order = warm_start_order(
                self.estimator, candidate_params, store=store is not None
            )
            contexts = _split_contexts(callback_ctx, n_candidates, n_splits)
            if self.racing:
                outcomes = race_candidates(
                    self, core, resolved, candidate_params, contexts
                )
            else:
                outcomes = self._run_candidates(
                    parallel, core, resolved, candidate_params, order, contexts
                )
            if not outcomes:
                raise ValueError(
                    "No fits were performed. Was the CV iterator empty? Were there "
                    "no candidates?"
                )
            out = [split for outcome in outcomes for split in outcome.splits]
            _warn_or_raise_about_fit_failures(out, self.error_score)
            if callable(self.scoring):
                _insert_error_scores(out, self.error_score)
            runs.extend(resolved)
            candidates_so_far.extend(candidate_params)
            evaluate_candidates.out.extend(out)
            columns = _candidate_columns(outcomes)
            for key, values in columns.items():
                if self.return_run_info or (self.racing and key in RACE_COLUMNS):
                    more[key].extend(values)
            for key, value in (more_results or {}).items():
                more[key].extend(value)
            with race_warnings(self.racing, outcomes):
                evaluate_candidates.results = self._format_results(
                    candidates_so_far, n_splits, evaluate_candidates.out, more
                )
            return evaluate_candidates.results

        evaluate_candidates.out = []
        evaluate_candidates.results = {}
        evaluate_candidates.notes_said = 0
        return evaluate_candidates

    def _run_candidates(
        self, parallel, core: RunCore, resolved, candidate_params, order, contexts
    ) -> list[_Outcome]:
        """Each candidate's whole tree as one joblib job, in ``order``; the
        outcomes in the candidates' own order."""
        n_candidates = len(resolved)
        ran = parallel(
            delayed(_evaluate_candidate)(
                core,
                resolved[i],
                candidate_params[i],
                (i, n_candidates),
                self.verbose,
                contexts[i],
                self,
            )
            for i in order
        )
        outcomes: list[Any] = [None] * n_candidates
        for i, outcome in zip(order, ran, strict=True):
            outcomes[i] = outcome
        return outcomes


def print_notes(core: RunCore, said) -> None:
    """Print the run core's notes not printed yet (``said.notes_said`` counts them).

    A learner without ``partial_fit`` runs by standard CV, as in
    ``GridSearchCV``, without a warning: ``verbose > 0`` says so here.
    """
    for message in core.notes[said.notes_said :]:
        print(message)
    said.notes_said = len(core.notes)


def _split_contexts(callback_ctx, n_candidates: int, n_splits: int) -> list:
    """One ``"candidate-split-evaluation"`` context per candidate and split.

    Made ahead of the jobs, as ``GridSearchCV`` makes them, numbered candidate
    by candidate; ``None`` per candidate without callbacks.
    """
    if callback_ctx is None:
        return [None] * n_candidates
    return [
        [
            callback_ctx.subcontext(
                task_name="candidate-split-evaluation", task_id=i * n_splits + j
            )
            for j in range(n_splits)
        ]
        for i in range(n_candidates)
    ]


def warm_start_order(
    estimator, candidates: list[dict], *, store: bool = False
) -> list[int]:
    """The order to run ``candidates`` in: by increasing ``C`` within each group.

    Only with a store (``store=True``: the search's own) or for an estimator
    with a ``warm_start_store`` (a parameter named so, nested ones included,
    not ``None`` or ``False``): candidates that differ only in a parameter
    named ``C`` (or ``*__C``) then run from the smallest ``C`` up, so that
    each starts from the previous solution and the exact skip can apply.
    Groups keep the order of their first candidate; otherwise the order is
    unchanged.
    """
    params = estimator.get_params() if hasattr(estimator, "get_params") else {}
    has_store = store or any(
        (name == "warm_start_store" or name.endswith("__warm_start_store"))
        and value is not None
        and value is not False
        for name, value in params.items()
    )
    if not has_store:
        return list(range(len(candidates)))

    def is_C(name: str) -> bool:
        return name == "C" or name.endswith("__C")

    first: dict[str, int] = {}
    keys = []
    for i, candidate in enumerate(candidates):
        rest = repr(sorted((k, repr(v)) for k, v in candidate.items() if not is_C(k)))
        first.setdefault(rest, i)
        Cs = [v for k, v in candidate.items() if is_C(k)]
        C = float(Cs[0]) if Cs and isinstance(Cs[0], numbers.Real) else 0.0
        keys.append((first[rest], C, i))
    return [key[2] for key in sorted(keys)]


@dataclass
class _Outcome:
    """One candidate's run: ``_fit_and_score``-style dicts, one per split."""

    splits: list[dict]
    columns: dict[str, Any]
    #: Whether a racing search dropped it before the leaves.
    dropped: bool = False


#: The columns a racing search adds to ``cv_results_``.
RACE_COLUMNS = ("race_rung", "race_score", "n_samples_fed")


def race_candidates(search, core: RunCore, resolved, candidate_params, contexts):
    """Race the candidates up the ladder (``racing=True``): one outcome each.

    Survivors get their fold scores; a dropped candidate gets NaN fold scores
    and times, and ``race_rung`` / ``race_score`` say where it stopped.
    """
    refit = search.refit if isinstance(search.refit, str) else None
    metric = refit if isinstance(search.scoring, list | tuple | set | dict) else None
    racers = race(
        core,
        resolved,
        metric=metric,
        alpha=search.racing_alpha,
        n_jobs=search.n_jobs,
        say=print if search.verbose > 0 else None,
    )
    outcomes = []
    n_candidates = len(resolved)
    for racer, parameters, split_ctx in zip(
        racers, candidate_params, contexts, strict=True
    ):
        progress = (racer.index, n_candidates)
        print_starts(search.verbose, parameters, progress, core.plan.n_splits)
        if split_ctx is not None:
            SplitHooks(split_ctx, search, core).finish()
        last = racer.last
        if racer.leaves is not None:
            splits = split_dicts(racer.leaves, core)
            columns = _columns_of(racer.leaves, racer.resolved.backend)
            print_splits(search.verbose, parameters, progress, splits)
        else:
            splits = _dropped_splits(core)
            columns = {"n_samples_fed": 0, "backend": racer.resolved.backend.name}
        columns["race_rung"] = 0 if last is None else last.rung
        columns["race_score"] = racer.rungs[-1] if racer.rungs else np.nan
        if last is not None:
            columns["n_samples_fed"] = int(last.n_samples_fed)
        outcomes.append(_Outcome(splits, columns, racer.dropped_at is not None))
    return outcomes


def _dropped_splits(core: RunCore) -> list[dict]:
    """The split dicts of a dropped candidate: NaN scores and times."""
    names = metric_names(core.scoring)
    multimetric = isinstance(core.scoring, list | tuple | set | dict)
    nan = {name: np.nan for name in names} if multimetric else np.nan
    splits = []
    for split in range(core.plan.n_splits):
        leaf = int(core.plan.leaf_order[split])
        entry = {
            "fit_error": None,
            "test_scores": nan,
            "n_test_samples": len(core.plan.test_indices(leaf)),
            "fit_time": np.nan,
            "score_time": np.nan,
        }
        if core.return_train_score:
            entry["train_scores"] = nan
        splits.append(entry)
    return splits


@contextlib.contextmanager
def race_warnings(racing: bool, outcomes: list[_Outcome]):
    """Silence scikit-learn's "non-finite scores" warning for dropped candidates
    (NaN by design) when every candidate that ran to the leaves is finite."""
    dropped = [o.dropped for o in outcomes]
    survivors_finite = all(
        np.isfinite(_flat_scores(o.splits)).all()
        for o, gone in zip(outcomes, dropped, strict=True)
        if not gone
    )
    with warnings.catch_warnings():
        if racing and any(dropped) and survivors_finite:
            warnings.filterwarnings(
                "ignore", message="One or more of the .* scores are non-finite"
            )
        yield


def _flat_scores(splits: list[dict]) -> np.ndarray:
    values = []
    for split in splits:
        for key in ("test_scores", "train_scores"):
            score = split.get(key)
            if isinstance(score, dict):
                values.extend(score.values())
            elif score is not None:
                values.append(score)
    return np.asarray(values, dtype=float)


def _evaluate_candidate(
    core: RunCore,
    resolved: Resolved,
    parameters,
    progress,
    verbose: int,
    contexts=None,
    caller=None,
):
    """Run one candidate's CV; ``_fit_and_score``-style results, one per split.

    ``contexts`` (one callback context per split) get scikit-learn's hooks:
    around each fold's own ``fit`` on the standard backend, after the tree
    for the folds a tree trained together.
    """
    print_starts(verbose, parameters, progress, core.plan.n_splits)
    hooks = None if contexts is None else SplitHooks(contexts, caller, core)
    try:
        table = core.run(resolved, around_fit=hooks and hooks.around_fit)
    finally:
        if hooks is not None:
            hooks.finish()
    splits = split_dicts(table, core)
    print_splits(verbose, parameters, progress, splits)
    return _Outcome(splits, _columns_of(table, resolved.backend))


def _columns_of(table: LeafTable, backend) -> dict[str, Any]:
    """Per-candidate extra columns: rows fed, the backend's name and its
    summed extras."""
    columns: dict[str, Any] = {
        "n_samples_fed": int(np.sum(table.n_samples_fed)),
        "backend": backend.name,
    }
    for name, value in summarize_extras(backend.extras, table.extras).items():
        columns[name] = np.nan if value is None else value
    return columns


def _candidate_columns(outcomes: list[_Outcome]) -> dict[str, list]:
    keys = list(dict.fromkeys(k for o in outcomes for k in o.columns))
    return {
        key: [
            o.columns.get(key, 0 if key == "n_samples_fed" else np.nan)
            for o in outcomes
        ]
        for key in keys
    }
