"""The names scikit-learn's own test files call, bound to TreeCV's doors.

``benchmarks/bench_sklearn_suites.py`` runs scikit-learn's installed
``model_selection/tests/test_search.py`` and ``test_validation.py`` with one
line added after their imports, which rebinds ``GridSearchCV`` and
``RandomizedSearchCV`` (or ``cross_validate`` and ``cross_val_score``) to the
definitions below. Nothing else in the test files changes.

``GridSearchCV`` and ``RandomizedSearchCV`` here are ``TreeCVSearchCV`` with
scikit-learn's constructor signatures (so ``clone``, ``get_params`` and
``set_params`` see the same parameter names); ``cross_validate`` and
``cross_val_score`` are ``tree_cross_validate`` with ``cross_validate``'s
keywords. Every call is counted, so that the harness can tell a test that ran
TreeCV from one that passed without it.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import check_scoring

from sklearn_ext import TreeCVSearchCV, tree_cross_validate

#: Calls of the doors since the counters were last reset (one per test): ``n``
#: counts constructions of the searches and calls of the functions, ``runs``
#: the calls that run TreeCV (a search's ``fit``, a function's call).
CALLS = {"n": 0, "runs": 0}


class _Counted:
    """Counts the ``fit`` calls of a search (where its TreeCV runs)."""

    def fit(self, X, y=None, **params):
        CALLS["runs"] += 1
        return super().fit(X, y, **params)


class GridSearchCV(_Counted, TreeCVSearchCV):
    """``TreeCVSearchCV`` over a grid, with ``GridSearchCV``'s signature."""

    def __init__(
        self,
        estimator,
        param_grid,
        *,
        scoring=None,
        n_jobs=None,
        refit=True,
        cv=None,
        verbose=0,
        pre_dispatch="2*n_jobs",
        error_score=np.nan,
        return_train_score=False,
    ):
        CALLS["n"] += 1
        super().__init__(
            estimator,
            param_grid,
            scoring=scoring,
            n_jobs=n_jobs,
            refit=refit,
            cv=cv,
            verbose=verbose,
            pre_dispatch=pre_dispatch,
            error_score=error_score,
            return_train_score=return_train_score,
        )


class RandomizedSearchCV(_Counted, TreeCVSearchCV):
    """``TreeCVSearchCV`` over sampled candidates, with
    ``RandomizedSearchCV``'s signature."""

    def __init__(
        self,
        estimator,
        param_distributions,
        *,
        n_iter=10,
        scoring=None,
        n_jobs=None,
        refit=True,
        cv=None,
        verbose=0,
        pre_dispatch="2*n_jobs",
        random_state=None,
        error_score=np.nan,
        return_train_score=False,
    ):
        CALLS["n"] += 1
        super().__init__(
            estimator,
            param_distributions=param_distributions,
            n_iter=n_iter,
            scoring=scoring,
            n_jobs=n_jobs,
            refit=refit,
            cv=cv,
            verbose=verbose,
            pre_dispatch=pre_dispatch,
            random_state=random_state,
            error_score=error_score,
            return_train_score=return_train_score,
        )


def cross_validate(
    estimator,
    X,
    y=None,
    *,
    groups=None,
    scoring=None,
    cv=None,
    n_jobs=None,
    verbose=0,
    params=None,
    pre_dispatch="2*n_jobs",
    return_train_score=False,
    return_estimator=False,
    return_indices=False,
    error_score=np.nan,
):
    """``tree_cross_validate`` called with ``cross_validate``'s keywords."""
    CALLS["n"] += 1
    CALLS["runs"] += 1
    return tree_cross_validate(
        estimator,
        X,
        y,
        groups=groups,
        scoring=scoring,
        cv=cv,
        n_jobs=n_jobs,
        verbose=verbose,
        params=params,
        pre_dispatch=pre_dispatch,
        return_train_score=return_train_score,
        return_estimator=return_estimator,
        return_indices=return_indices,
        error_score=error_score,
    )


def cross_val_score(
    estimator,
    X,
    y=None,
    *,
    groups=None,
    scoring=None,
    cv=None,
    n_jobs=None,
    verbose=0,
    params=None,
    pre_dispatch="2*n_jobs",
    error_score=np.nan,
):
    """The test scores of :func:`cross_validate`, as ``cross_val_score``."""
    scorer = check_scoring(estimator, scoring=scoring)
    result = cross_validate(
        estimator,
        X,
        y,
        groups=groups,
        scoring={"score": scorer},
        cv=cv,
        n_jobs=n_jobs,
        verbose=verbose,
        params=params,
        pre_dispatch=pre_dispatch,
        error_score=error_score,
    )
    return result["test_score"]
