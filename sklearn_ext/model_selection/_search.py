"""``TreeCVSearchCV``: a search whose unit of work is one candidate's whole tree."""

from __future__ import annotations

import numbers
import time
import warnings
from collections import defaultdict
from dataclasses import dataclass
from traceback import format_exc
from typing import Any

import numpy as np
from joblib import Parallel, delayed, logger
from sklearn.base import _fit_context, clone
from sklearn.metrics._scorer import _MultimetricScorer
from sklearn.model_selection import ParameterGrid, ParameterSampler
from sklearn.model_selection._search import BaseSearchCV
from sklearn.model_selection._validation import (
    _insert_error_scores,
    _score,
    _warn_or_raise_about_fit_failures,
)
from sklearn.utils import _safe_indexing
from sklearn.utils._metadata_requests import _routing_enabled
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metadata_routing import MetadataRouter, MethodMapping
from sklearn.utils.validation import _check_method_params, indexable

from sklearn_ext.model_selection._backends import (
    Backend,
    CVTask,
    LeafTable,
    PythonTreeBackend,
    StandardBackend,
    summarize_extras,
)
from sklearn_ext.model_selection._choice import choose_backend
from sklearn_ext.model_selection._exact import digest_scope
from sklearn_ext.model_selection._plan import FoldPlan
from sklearn_ext.model_selection._regime import (
    fit_is_one_pass,
    one_pass_estimator,
    scored_estimator,
    warn_about_regime,
)
from sklearn_ext.model_selection._validation import (
    _classes,
    _validate_data,
    make_fold_plan,
    native_metric,
    stratifies,
)
from sklearn_ext.utils._data_scope import data_scope

__all__ = ["TreeCVSearchCV", "warm_start_order"]

# Keys of a leaf's scores: a scalar score, one metric of a dict, a train score.
_SCALAR = "score"
_METRIC = "m:"
_TRAIN = "train:"


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
    ``sample_weight`` to the scorers and metadata routing behave as there. Two
    columns are added: ``n_samples_fed`` (rows passed to the learner per
    candidate) and any per-candidate extras the backend reports.

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
        As in ``GridSearchCV``: ``>0`` the number of fits, ``>1`` one line per
        split with the candidate's parameters, ``>2`` its scores.
    return_train_score : bool, default=False
        Whether to score each fold's model on its training rows too
        (``split{i}_train_score``, ``mean_train_score``, ...).
    pre_dispatch : int or str, default="2*n_jobs"
        As in ``GridSearchCV``, for the candidates' joblib jobs.

    Attributes
    ----------
    cv_results_ : dict of numpy (masked) ndarrays
        Per-candidate results, keys as in ``GridSearchCV`` plus
        ``n_samples_fed``.
    best_estimator_ : estimator
        The best candidate refit on all data (if ``refit``), trained the way
        its folds were scored (see above).
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
    """

    _parameter_constraints: dict = {
        **BaseSearchCV._parameter_constraints,
        "param_grid": [dict, list, None],
        "param_distributions": [dict, list, None],
        "n_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "cv": ["cv_object", FoldPlan],
        "order": [StrOptions({"fixed", "randomized"}), None],
        "method": [str, Backend],
        "random_state": ["random_state"],
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

    def _run_search(self, evaluate_candidates, **kwargs):
        """Evaluate the grid, or the ``n_iter`` sampled candidates, at once."""
        evaluate_candidates(self._candidates())

    def _warn_about_regime(self, regimes, candidate_params, base_estimator) -> None:
        """Say once if the scored pass is not what the learner's ``fit`` does."""
        indices = [i for i, regime in enumerate(regimes) if regime == "one_pass"]
        for i in indices:
            model = clone(base_estimator).set_params(
                **clone(candidate_params[i], safe=False)
            )
            if not fit_is_one_pass(model):
                warn_about_regime(model, refit=self.refit is not False, stacklevel=5)
                return

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
        candidates_check = self._candidates  # raises on a bad grid before any work
        candidates_check()
        scorers, refit_metric = self._get_scorers()
        X, y = indexable(X, y)
        params = _check_method_params(X, params=params)
        routed = self._get_routed_params_for_fit(params)
        fit_params = dict(routed.estimator.fit)
        # Without routing every fit parameter goes to partial_fit as to fit.
        stream_params = (
            dict(routed.estimator.get("partial_fit", {}))
            if _routing_enabled()
            else fit_params
        )
        score_params = dict(routed.scorer.score)
        groups = routed.splitter.split.get("groups")

        backend = _base_backend(self)
        X_cv, y_cv = _validate_data(
            X, y, as_given=isinstance(backend, PythonTreeBackend | StandardBackend)
        )
        cv = self.cv
        if not isinstance(cv, numbers.Integral | FoldPlan) and not hasattr(cv, "split"):
            from sklearn.model_selection import check_cv

            cv = check_cv(cv)  # an iterable of (train, test) pairs
        plan = make_fold_plan(
            cv,
            X_cv,
            y_cv,
            groups,
            classifier=stratifies(self.estimator),
            order=self.order,
            random_state=self.random_state,
        )
        self.n_splits_ = plan.n_splits
        classes = (
            np.unique(y_cv)
            if y_cv is not None and _wants_classes(self.estimator)
            else None
        )
        base_estimator = clone(self.estimator)
        # One store for all candidates (e.g. cross-C warm starts), unless the
        # estimator brings its own or opts out; it lives as long as this fit.
        store = None if backend is None else backend.default_store(base_estimator)
        context = _SearchContext(
            X=X_cv,
            y=y_cv,
            plan=plan,
            scorer=scorers,
            scoring=self.scoring,
            method=self.method,
            classes=classes,
            fit_params=stream_params,
            score_params=score_params,
            return_train_score=self.return_train_score,
            error_score=self.error_score,
            verbose=self.verbose,
            store=None if store is None else (type(backend), store),
        )
        regimes: list[str] = []
        all_candidate_params: list[dict] = []
        all_out: list[dict] = []
        all_more_results: dict[str, list] = defaultdict(list)
        results: dict = {}
        parallel = Parallel(n_jobs=self.n_jobs, pre_dispatch=self.pre_dispatch)

        def evaluate_candidates(candidate_params, cv=None, more_results=None):
            nonlocal results
            candidate_params = list(candidate_params)
            n_candidates = len(candidate_params)
            n_splits = plan.n_splits
            if self.verbose > 0:
                print(
                    f"Fitting {n_splits} folds for each of {n_candidates} candidates,"
                    f" totalling {n_candidates * n_splits} fits"
                )
            order = warm_start_order(
                self.estimator, candidate_params, store=store is not None
            )
            ran = parallel(
                delayed(_evaluate_candidate)(
                    clone(base_estimator).set_params(
                        **clone(candidate_params[i], safe=False)
                    ),
                    candidate_params[i],
                    (i, n_candidates),
                    context,
                )
                for i in order
            )
            outcomes: list[Any] = [None] * n_candidates
            for i, outcome in zip(order, ran, strict=True):
                outcomes[i] = outcome
            if not outcomes:
                raise ValueError(
                    "No fits were performed. Was the CV iterator empty? Were there "
                    "no candidates?"
                )
            out = [split for outcome in outcomes for split in outcome.splits]
            _warn_or_raise_about_fit_failures(out, self.error_score)
            if callable(self.scoring):
                _insert_error_scores(out, self.error_score)
            all_candidate_params.extend(candidate_params)
            all_out.extend(out)
            regimes.extend(outcome.regime for outcome in outcomes)
            for key, values in _candidate_columns(outcomes).items():
                all_more_results[key].extend(values)
            for key, value in (more_results or {}).items():
                all_more_results[key].extend(value)
            results = self._format_results(
                all_candidate_params, n_splits, all_out, all_more_results
            )
            return results

        with digest_scope():  # The data is read once for the statistics keys.
            self._run_search(evaluate_candidates)
        self._warn_about_regime(regimes, all_candidate_params, base_estimator)
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

        if self.refit:
            model = clone(base_estimator).set_params(
                **clone(self.best_params_, safe=False)
            )
            refit_params = fit_params
            if regimes[self.best_index_] == "one_pass":
                wrapped = one_pass_estimator(model, classes=classes)
                if type(wrapped) is not type(model):
                    refit_params = stream_params  # the wrapper's fit is partial_fit
                model = wrapped
            lend = store is not None and _takes_store(model)
            if lend:  # the refit reuses what the search kept (the kernel)
                model.set_params(warm_start_store=store)
            tic = time.time()
            if y is None:
                model.fit(X, **refit_params)
            else:
                model.fit(X, y, **refit_params)
            self.refit_time_ = time.time() - tic
            if lend:
                model.set_params(warm_start_store=None)
            self.best_estimator_ = model
            if hasattr(model, "feature_names_in_"):
                self.feature_names_in_ = model.feature_names_in_

        if isinstance(scorers, _MultimetricScorer):
            self.scorer_ = scorers._scorers
        else:
            self.scorer_ = scorers
        self.cv_results_ = results
        return self


def _base_backend(search) -> Backend | None:
    """The backend the search's own estimator would run with, if any.

    It says whether the candidates take ``X`` as given (the Python tree and
    the standard backend hand rows to the estimator, which checks them itself:
    text pipelines, NaN-aware learners; the native engines need a finite
    array) and gives the search's default store.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # said again, once, by the candidates' run
        try:
            return choose_backend(search.estimator, search.method)
        except (TypeError, ValueError):
            return None


def _takes_store(model) -> bool:
    """Whether ``model`` has a ``warm_start_store`` parameter left at ``None``."""
    params = model.get_params(deep=False) if hasattr(model, "get_params") else {}
    return "warm_start_store" in params and params["warm_start_store"] is None


def _wants_classes(estimator) -> bool:
    from sklearn.base import is_classifier

    return is_classifier(estimator)


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
class _SearchContext:
    """What every candidate's run shares (sent once per joblib job)."""

    X: Any
    y: Any
    plan: FoldPlan
    scorer: Any
    scoring: Any
    method: Any
    classes: Any
    fit_params: dict
    score_params: dict
    return_train_score: bool
    error_score: Any
    verbose: int
    #: The search's own store and the backend class that keeps it, or None.
    store: tuple | None = None


@dataclass
class _Outcome:
    """One candidate's run: ``_fit_and_score``-style dicts, one per split."""

    splits: list[dict]
    regime: str
    columns: dict[str, Any]


@dataclass
class _SearchTask(CVTask):
    """A CV task scored as ``GridSearchCV`` scores: scorer, score params, train."""

    sklearn_scorer: Any = None
    score_params: dict | None = None
    return_train_score: bool = False
    error_score: Any = np.nan

    def score(self, model, fold: int, columns=None) -> tuple[dict[str, float], float]:
        tic = time.perf_counter()
        test = self.plan.test_indices(fold)
        scores = self._scores(model, test, "", columns)
        if self.return_train_score:
            train = self.plan.train_indices(fold)
            scores.update(self._scores(model, train, _TRAIN, columns))
        return scores, time.perf_counter() - tic

    def _scores(self, model, rows, prefix: str, columns) -> dict[str, float]:
        X, y, _ = self.rows(rows)
        if columns is not None:  # a precomputed kernel: the training columns
            X = _safe_indexing(X, columns, axis=1)
        params = _check_method_params(self.X, params=self.score_params, indices=rows)
        value = _score(model, X, y, self.sklearn_scorer, params, self.error_score)
        if isinstance(value, dict):
            return {f"{prefix}{_METRIC}{name}": v for name, v in value.items()}
        return {f"{prefix}{_SCALAR}": value}


def _native_scoring_allowed(context: _SearchContext, scoring) -> bool:
    """Whether a backend may compute ``scoring`` itself (same value, faster)."""
    return (
        (scoring is None or isinstance(scoring, str))
        and not context.score_params
        and not context.return_train_score
    )


class _ScoredByScikitLearn:
    """A ``scoring`` no backend computes natively: leaves go through the scorer."""

    def __repr__(self) -> str:
        return "<scikit-learn scorer>"


def _evaluate_candidate(estimator, parameters, progress, context: _SearchContext):
    """Run one candidate's CV; ``_fit_and_score``-style results, one per split."""
    backend = choose_backend(estimator, context.method)
    if context.store is not None and type(backend) is context.store[0]:
        backend = backend.with_store(context.store[1], estimator)
    scored, regime = scored_estimator(estimator, backend, classes=context.classes)
    scoring = context.scorer
    user_scoring = context.scoring
    task = _SearchTask(
        estimator=scored,
        X=context.X,
        y=context.y,
        plan=context.plan,
        scorer=None,
        scoring=user_scoring
        if _native_scoring_allowed(context, user_scoring)
        else _ScoredByScikitLearn(),
        metric=native_metric(estimator, user_scoring)
        if _native_scoring_allowed(context, user_scoring)
        else None,
        fit_params=dict(context.fit_params),
        classes=_classes(scored, context.y, context.classes),
        sklearn_scorer=scoring,
        score_params=context.score_params,
        return_train_score=context.return_train_score,
        error_score=context.error_score,
    )
    plan = context.plan
    _print_starts(context, parameters, progress, plan.n_splits)
    tic = time.time()
    try:
        table = backend.run(task)
    except Exception:
        if context.error_score == "raise":
            raise
        fit_time = time.time() - tic
        splits = [
            _failed_split(
                context,
                len(plan.test_indices(int(plan.leaf_order[j]))),
                fit_time / plan.n_splits,
                format_exc(),
            )
            for j in range(plan.n_splits)
        ]
        _print_splits(context, parameters, progress, splits)
        return _Outcome(splits, regime, {"n_samples_fed": 0})
    splits = _splits_of(table, plan)
    _print_splits(context, parameters, progress, splits)
    return _Outcome(splits, regime, _columns_of(table, backend))


def _failed_split(context, n_test: int, fit_time: float, error: str) -> dict:
    if isinstance(context.scorer, _MultimetricScorer):
        scores: Any = {name: context.error_score for name in context.scorer._scorers}
    else:
        scores = context.error_score
    split = {
        "fit_error": error,
        "test_scores": scores,
        "n_test_samples": n_test,
        "fit_time": fit_time,
        "score_time": 0.0,
    }
    if context.return_train_score:
        split["train_scores"] = scores.copy() if isinstance(scores, dict) else scores
    return split


def _splits_of(table: LeafTable, plan: FoldPlan) -> list[dict]:
    table = table.by_split()
    splits = []
    for i in range(len(table)):
        leaf = {name: float(values[i]) for name, values in table.scores.items()}
        split = {
            "fit_error": None,
            "test_scores": _unflatten(leaf, ""),
            "n_test_samples": len(plan.test_indices(int(table.leaf[i]))),
            "fit_time": float(table.fit_time[i]),
            "score_time": float(table.score_time[i]),
        }
        if any(name.startswith(_TRAIN) for name in leaf):
            split["train_scores"] = _unflatten(leaf, _TRAIN)
        splits.append(split)
    return splits


def _unflatten(leaf: dict[str, float], prefix: str):
    if prefix + _SCALAR in leaf:
        return leaf[prefix + _SCALAR]
    start = prefix + _METRIC
    return {k[len(start) :]: v for k, v in leaf.items() if k.startswith(start)}


def _columns_of(table: LeafTable, backend) -> dict[str, Any]:
    """Per-candidate extra columns: rows fed, and the backend's summed extras."""
    columns: dict[str, Any] = {"n_samples_fed": int(np.sum(table.n_samples_fed))}
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


def _progress_msg(verbose: int, split: int, n_splits: int, progress) -> str:
    """The ``" 2/5; 1/4"`` of ``_fit_and_score``'s lines: split, then candidate."""
    if verbose <= 2:
        return ""
    message = f" {split + 1}/{n_splits}"
    if verbose > 9:
        message += f"; {progress[0] + 1}/{progress[1]}"
    return message


def _params_msg(parameters) -> str:
    return ", ".join(f"{k}={parameters[k]}" for k in sorted(parameters))


def _print_starts(context: _SearchContext, parameters, progress, n_splits) -> None:
    """``GridSearchCV``'s START lines (``verbose > 9``), before the tree runs.

    The tree trains a candidate's folds together, so all of them start here;
    ``GridSearchCV`` prints each START just before its own fit.
    """
    if context.verbose <= 9:
        return
    params_msg = _params_msg(parameters)
    for j in range(n_splits):
        progress_msg = _progress_msg(context.verbose, j, n_splits, progress)
        start_msg = f"[CV{progress_msg}] START {params_msg}"
        print(f"{start_msg}{(80 - len(start_msg)) * '.'}")


def _print_splits(context: _SearchContext, parameters, progress, splits) -> None:
    """``GridSearchCV``'s per-split lines (``verbose > 1``), after the tree ran."""
    verbose = context.verbose
    if verbose <= 1:
        return
    params_msg = _params_msg(parameters)
    for j, split in enumerate(splits):
        progress_msg = _progress_msg(verbose, j, len(splits), progress)
        end_msg = f"[CV{progress_msg}] END "
        result_msg = params_msg + (";" if params_msg else "")
        test, train = split["test_scores"], split.get("train_scores")
        if verbose > 2:
            if isinstance(test, dict):
                for name in sorted(test):
                    result_msg += f" {name}: ("
                    if train is not None:
                        result_msg += f"train={train[name]:.3f}, "
                    result_msg += f"test={test[name]:.3f})"
            else:
                result_msg += ", score="
                if train is not None:
                    result_msg += f"(train={train:.3f}, test={test:.3f})"
                else:
                    result_msg += f"{test:.3f}"
        total = split["fit_time"] + split["score_time"]
        result_msg += f" total time={logger.short_format_time(total)}"
        end_msg += "." * (80 - len(end_msg) - len(result_msg))
        print(end_msg + result_msg)
