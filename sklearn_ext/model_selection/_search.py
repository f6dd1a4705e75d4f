"""``TreeCVSearchCV``: a search whose unit of work is one candidate's whole tree."""

from __future__ import annotations

import numbers
import time
import warnings
from collections.abc import Mapping

import numpy as np
from joblib import Parallel, delayed
from scipy.stats import rankdata
from sklearn.base import clone, is_classifier
from sklearn.exceptions import FitFailedWarning
from sklearn.metrics import check_scoring
from sklearn.model_selection import ParameterGrid, ParameterSampler
from sklearn.model_selection._search import BaseSearchCV

from sklearn_ext.model_selection._backends import Backend, summarize_extras
from sklearn_ext.model_selection._choice import METHODS, backend_class
from sklearn_ext.model_selection._validation import (
    _validate_data,
    make_fold_plan,
    stratifies,
    tree_cross_validate,
)

__all__ = ["TreeCVSearchCV"]


class TreeCVSearchCV(BaseSearchCV):
    """Grid or randomized search with each candidate's k-fold CV run by TreeCV.

    scikit-learn's searches dispatch every (candidate, fold) pair as its own
    fit. This search dispatches every *candidate* as one unit of work that runs
    :func:`tree_cross_validate` on one shared :class:`FoldPlan`, so each
    candidate costs about ``log2(2k)`` data passes whatever ``n_jobs`` is and
    whichever joblib backend (threads, processes, Dask) runs it. Native learners
    get the native tree through the same backend choice. The results have the
    keys of :class:`~sklearn.model_selection.GridSearchCV`'s ``cv_results_``
    (``split{i}_test_score``, ``mean_test_score``, ``std_test_score``,
    ``rank_test_score``, ``params``, ``param_<name>``, fit and score times) plus
    ``n_samples_fed``.

    For a kernel SVM holding a :class:`~sklearn_ext.svm.WarmStartStore`
    (``AlphaSeededSVC(warm_start_store=...)``), candidates that differ only in
    ``C`` run by increasing ``C``, each fold starting from its solution at the
    previous ``C`` (or skipped exactly); ``cv_results_`` keeps the candidates'
    own order.

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
        As in :func:`tree_cross_validate`; several metrics need ``refit`` to
        name one of them or to be a callable.
    refit : bool, str or callable, default=True
        Refit the best candidate on all data, as in ``GridSearchCV``. A callable
        gets ``cv_results_`` and returns the best index (e.g.
        :func:`one_standard_error_rule`).
    cv : int, FoldPlan or cross-validation generator, default=5
        The folds, built once and shared by all candidates.
    order : {"fixed", "randomized"}, default=None
        Feeding order, see :func:`tree_cross_validate`.
    method : {"auto", "treecv", "standard", "alpha_seeding"} or Backend, \
            default="auto"
        Backend choice, see :func:`tree_cross_validate`: the same resolver
        and fallback for every candidate.
    n_jobs : int, default=None
        Candidates evaluated in parallel through joblib.
    random_state : int, RandomState instance or None, default=None
        Seeds the candidate sampling and the randomized order.
    error_score : "raise" or float, default=np.nan
        Score of a candidate whose CV raised; ``"raise"`` re-raises.
    verbose : int, default=0
        joblib verbosity.

    Attributes
    ----------
    cv_results_ : dict of numpy (masked) ndarrays
        Per-candidate results, keys as in ``GridSearchCV`` plus ``n_samples_fed``.
    best_estimator_ : estimator
        The best candidate refit on all data (if ``refit``).
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

    See Also
    --------
    TreeCVEstimator : The same sharing inside scikit-learn's own searches.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.linear_model import SGDClassifier
    >>> from sklearn_ext import TreeCVSearchCV
    >>> X, y = load_digits(return_X_y=True)
    >>> search = TreeCVSearchCV(
    ...     SGDClassifier(random_state=0), {"alpha": [1e-4, 1e-2]}, cv=8
    ... ).fit(X, y)
    >>> sorted(search.best_params_)
    ['alpha']
    >>> search.cv_results_["split7_test_score"].shape
    (2,)
    """

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
    ):
        self.estimator = estimator
        self.param_grid = param_grid
        self.param_distributions = param_distributions
        self.n_iter = n_iter
        self.scoring = scoring
        self.refit = refit
        self.cv = cv
        self.order = order
        self.method = method
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.error_score = error_score
        self.verbose = verbose

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
        if not isinstance(self.n_iter, numbers.Integral) or self.n_iter < 1:
            raise ValueError(
                "The 'n_iter' parameter of TreeCVSearchCV must be an int in the "
                f"range [1, inf). Got {self.n_iter!r} instead."
            )
        return list(
            ParameterSampler(
                self.param_distributions, self.n_iter, random_state=self.random_state
            )
        )

    def fit(self, X, y=None, *, groups=None, **fit_params):
        """Run each candidate's TreeCV and refit the best one.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,), default=None
            Targets.
        groups : array-like of shape (n_samples,), default=None
            Group labels for the splitter.
        **fit_params : dict
            Passed to ``partial_fit`` (per-sample arrays restricted to the rows
            fed) and to the refit.

        Returns
        -------
        self : object
            The fitted search.
        """
        if not isinstance(self.method, Backend) and (
            not isinstance(self.method, str) or self.method not in METHODS
        ):
            raise ValueError(
                "The 'method' parameter of TreeCVSearchCV must be a str among "
                f"{set(METHODS)} or a Backend. Got {self.method!r} instead."
            )
        if not (
            self.error_score == "raise" or isinstance(self.error_score, numbers.Real)
        ):
            raise ValueError(
                "The 'error_score' parameter of TreeCVSearchCV must be 'raise' or a "
                f"float. Got {self.error_score!r} instead."
            )
        candidates = self._candidates()
        multimetric = isinstance(self.scoring, list | tuple | set | Mapping)
        if multimetric:
            self._check_refit_for_multimetric(
                self.scoring if isinstance(self.scoring, Mapping) else set(self.scoring)
            )
        X, y = _validate_data(X, y)
        plan = make_fold_plan(
            self.cv,
            X,
            y,
            groups,
            classifier=stratifies(self.estimator),
            order=self.order,
            random_state=self.random_state,
        )
        classes = (
            np.unique(y) if is_classifier(self.estimator) and y is not None else None
        )
        parallel = Parallel(n_jobs=self.n_jobs, verbose=self.verbose)
        order = warm_start_order(self.estimator, candidates)
        ordered = parallel(
            delayed(_evaluate_candidate)(
                clone(self.estimator).set_params(**candidates[i]),
                X,
                y,
                plan,
                self.scoring,
                self.method,
                classes,
                fit_params,
                self.error_score,
            )
            for i in order
        )
        outcomes = [None] * len(candidates)
        for i, outcome in zip(order, ordered, strict=True):
            outcomes[i] = outcome
        self.multimetric_ = multimetric
        self.n_splits_ = plan.n_splits
        self.cv_results_ = _results_table(
            candidates, outcomes, plan.n_splits, self.error_score
        )
        self.scorer_ = (
            check_scoring(self.estimator, self.scoring)
            if not multimetric
            else {
                name: check_scoring(self.estimator, scoring=name)
                for name in _metric_names(outcomes)
            }
        )
        if self.refit is not False:
            if callable(self.refit):
                self.best_index_ = int(self.refit(self.cv_results_))
                if not 0 <= self.best_index_ < len(candidates):
                    raise IndexError("best_index_ index out of range")
            else:
                metric = self.refit if isinstance(self.refit, str) else "score"
                self.best_index_ = int(
                    np.argmin(self.cv_results_[f"rank_test_{metric}"])
                )
                self.best_score_ = float(
                    self.cv_results_[f"mean_test_{metric}"][self.best_index_]
                )
            self.best_params_ = candidates[self.best_index_]
            tic = time.perf_counter()
            self.best_estimator_ = clone(self.estimator).set_params(**self.best_params_)
            if y is None:
                self.best_estimator_.fit(X, **fit_params)
            else:
                self.best_estimator_.fit(X, y, **fit_params)
            self.refit_time_ = time.perf_counter() - tic
            if hasattr(self.best_estimator_, "feature_names_in_"):
                self.feature_names_in_ = self.best_estimator_.feature_names_in_
        return self


def warm_start_order(estimator, candidates: list[dict]) -> list[int]:
    """The order to run ``candidates`` in: by increasing ``C`` within each group.

    Only for an estimator with a ``warm_start_store`` (a parameter named so,
    nested ones included): candidates that differ only in a parameter named
    ``C`` (or ``*__C``) then run from the smallest ``C`` up, so that each
    starts from the previous solution and the exact skip can apply. Groups
    keep the order of their first candidate; otherwise the order is unchanged.
    """
    params = estimator.get_params() if hasattr(estimator, "get_params") else {}
    has_store = any(
        (name == "warm_start_store" or name.endswith("__warm_start_store"))
        and value is not None
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


def _evaluate_candidate(
    estimator, X, y, plan, scoring, method, classes, fit_params, error_score
):
    try:
        return tree_cross_validate(
            estimator,
            X,
            y,
            cv=plan,
            scoring=scoring,
            method=method,
            classes=classes,
            fit_params=fit_params,
        )
    except Exception as exc:
        if error_score == "raise":
            raise
        warnings.warn(
            f"TreeCV of candidate {estimator!r} failed; its score is set to "
            f"{error_score}. Details: {type(exc).__name__}: {exc}",
            FitFailedWarning,
            stacklevel=2,
        )
        return None


def _metric_names(outcomes) -> list[str]:
    for outcome in outcomes:
        if outcome is not None:
            return [key[len("test_") :] for key in outcome if key.startswith("test_")]
    raise ValueError(
        "All candidates failed to fit; set error_score='raise' to see the error."
    )


def _results_table(candidates, outcomes, n_splits, error_score) -> dict:
    names = _metric_names(outcomes)
    nan_row = np.full(n_splits, np.nan)
    results: dict = {}
    for key in ("fit_time", "score_time"):
        rows = np.array([nan_row if o is None else o[key] for o in outcomes])
        results[f"mean_{key}"] = rows.mean(axis=1)
        results[f"std_{key}"] = rows.std(axis=1)
    keys = sorted({key for params in candidates for key in params})
    for key in keys:
        column = np.ma.MaskedArray(np.empty(len(candidates), dtype=object), mask=True)
        for i, params in enumerate(candidates):
            if key in params:
                column[i] = params[key]
        results[f"param_{key}"] = column
    results["params"] = candidates
    for name in names:
        error_row = np.full(
            n_splits, np.nan if error_score == "raise" else float(error_score)
        )
        scores = np.array(
            [error_row if o is None else o[f"test_{name}"] for o in outcomes]
        )
        for i in range(n_splits):
            results[f"split{i}_test_{name}"] = scores[:, i]
        means = scores.mean(axis=1)
        results[f"mean_test_{name}"] = means
        results[f"std_test_{name}"] = scores.std(axis=1)
        ranked = np.where(np.isnan(means), -np.inf, means)
        results[f"rank_test_{name}"] = rankdata(-ranked, method="min").astype(np.int32)
    results["n_samples_fed"] = np.array(
        [0 if o is None else o["n_samples_fed"] for o in outcomes]
    )
    results.update(_extras_columns(outcomes))
    return results


def _extras_columns(outcomes) -> dict[str, np.ndarray]:
    """One column per engine extra, each candidate's run summed up."""
    summaries = [
        None
        if outcome is None
        else summarize_extras(backend_class(outcome["backend"]).extras, outcome)
        for outcome in outcomes
    ]
    names = {name: None for s in summaries if s is not None for name in s}
    columns = {}
    for name in names:
        values = [np.nan if s is None else s.get(name, np.nan) for s in summaries]
        values = [np.nan if v is None else v for v in values]
        columns[name] = np.asarray(values)
    return columns
