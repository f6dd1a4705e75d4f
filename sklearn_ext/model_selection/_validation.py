"""``tree_cross_validate``: k-fold CV along the TreeCV recursion tree."""

from __future__ import annotations

import time
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn import get_config
from sklearn.base import BaseEstimator
from sklearn.model_selection._validation import _warn_or_raise_about_fit_failures
from sklearn.utils._param_validation import HasMethods, StrOptions

from sklearn_ext.model_selection._backends import Backend, LeafResult, LeafTable
from sklearn_ext.model_selection._choice import METHODS
from sklearn_ext.model_selection._core import RunCore, stratifies
from sklearn_ext.model_selection._plan import FoldPlan
from sklearn_ext.model_selection._scoring import (
    check_response_methods,
    make_scorer_dict,
    native_metric,
)
from sklearn_ext.model_selection._split import make_fold_plan
from sklearn_ext.utils._param_validation import validate_params

__all__ = [
    "tree_cross_validate",
    "check_response_methods",
    "make_fold_plan",
    "make_scorer_dict",
    "native_metric",
    "stratifies",
]


@validate_params(
    {
        "estimator": [HasMethods("fit")],
        "X": ["array-like", "sparse matrix"],
        "y": ["array-like", None],
        "groups": ["array-like", None],
        "cv": ["cv_object", FoldPlan],
        "scoring": [str, callable, list, tuple, set, dict, None],
        "method": [StrOptions(set(METHODS)), Backend],
        "order": [StrOptions({"fixed", "randomized"}), None],
        "random_state": ["random_state"],
        "n_jobs": [Integral, None],
        "return_estimator": ["boolean"],
        "return_train_score": ["boolean"],
        "classes": ["array-like", None],
        "fit_params": [dict, None],
        "leaf_callback": [callable, None],
        "error_score": [StrOptions({"raise"}), Real],
    },
)
def tree_cross_validate(
    estimator,
    X,
    y=None,
    *,
    groups=None,
    cv=5,
    scoring=None,
    method: str = "auto",
    order: str | None = None,
    random_state=None,
    n_jobs: int | None = None,
    return_estimator: bool = False,
    return_train_score: bool = False,
    classes=None,
    fit_params: dict[str, Any] | None = None,
    leaf_callback: Callable[[LeafResult], None] | None = None,
    error_score=np.nan,
) -> dict[str, Any]:
    """Evaluate scores by k-fold cross-validation along the TreeCV tree.

    The ``k`` fold models of an incremental learner (anything with
    ``partial_fit``) are trained along a balanced binary tree over the chunks
    (Joulani, György and Szepesvári, 2015, Algorithm 1): each node's model is
    updated with the chunks that one half of its hold-out range no longer holds
    out and handed to that half. Every row is fed once per tree level, about
    ``n * log2(2k)`` rows in all instead of ``n * (k - 1)``. Fold scores equal
    those of standard CV for learners whose model does not depend on the order
    of updates (naive Bayes, sufficient statistics) and are within noise of it
    for online learners (SGD, PEGASOS).

    The tree scores each fold's model after one ordered pass of ``partial_fit``
    over its training rows. A learner whose updates depend on how rows are
    batched (``SGDClassifier(shuffle=True)``, ``MLPClassifier``) is fed through
    a :class:`TreeCVEstimator` that keeps fixed batches, so every fold model
    is exactly ``one_pass_estimator(estimator).fit`` on the fold's rows; when
    the learner's own ``fit`` trains differently (several epochs), a
    :class:`~sklearn_ext.model_selection.TreeCVRegimeWarning` says so and
    ``method="standard"`` scores that ``fit`` instead. See "What TreeCV scores"
    in the user guide.

    Parameters
    ----------
    estimator : estimator object
        The learner. TreeCV needs ``partial_fit``; use ``method="standard"``
        for any other estimator.
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Training data. The tree and the standard backend hand the rows to the
        estimator as given (a DataFrame keeps its column names, so fold models
        have ``feature_names_in_``; a list of texts works with a pipeline and
        ``method="standard"``); the native engines need a finite array.
    y : array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
        Targets; ``None`` for clustering and density estimation.
    groups : array-like of shape (n_samples,), default=None
        Group labels, passed to the splitter (e.g. ``GroupKFold``).
    cv : int, FoldPlan or cross-validation generator, default=5
        An int ``k`` (from 2 to ``n_samples``, leave-one-out) gives a
        :class:`StratifiedTreeCVSplitter` for classifiers with a binary or
        multiclass target and a :class:`TreeCVSplitter` otherwise. A
        :class:`FoldPlan`, a ``TreeCVSplitter`` or any scikit-learn splitter
        whose test folds partition the samples (``KFold``, ``StratifiedKFold``,
        ``GroupKFold``...) is accepted; fold ``i`` of the result is its split
        ``i``.
    scoring : str, callable, list, tuple, set or dict, default=None
        As in :func:`sklearn.model_selection.cross_validate`. ``None`` uses the
        estimator's ``score`` for classifiers and regressors, minus the mean
        squared distance to the nearest centre for clusterers and the mean
        ``score_samples`` (mean log-likelihood) for density estimators.
    method : {"auto", "treecv", "standard", "alpha_seeding"} or Backend, \
            default="auto"
        Chosen by :func:`~sklearn_ext.model_selection.choose_backend`, as in
        every other door. ``"treecv"`` runs the TreeCV recursion (a
        ``TypeError`` for an estimator without ``partial_fit``). ``"standard"``
        trains ``k`` independent models with the estimator's own ``fit``, as
        ``cross_validate`` does (a learner whose ``fit`` is one ordered pass is
        fed the same rows, update by update, as the tree feeds them).
        ``"alpha_seeding"``, which ``"auto"`` picks for
        :class:`~sklearn_ext.svm.AlphaSeededSVC` and :class:`sklearn.svm.SVC`,
        solves the kernel SVM folds in order on one shared kernel store, each
        fold's SMO seeded from the previous fold's solution (SIR, Wen et al.,
        2017); every fold reaches LIBSVM's optimum to ``tol``. ``"auto"`` takes
        the fastest of these that applies and falls back to ``"standard"``,
        with a :class:`~sklearn_ext.model_selection.TreeCVFallbackWarning`, for
        an estimator no other backend can run. A configured backend, e.g.
        ``AlphaSeedingBackend(seeding="mir")``, passes engine options.
    order : {"fixed", "randomized"}, default=None
        ``"fixed"`` feeds each update's chunks in ascending chunk order;
        ``"randomized"`` feeds each update's rows in a random order (section 5
        of the paper). ``None`` takes the order of a ``TreeCVSplitter`` given as
        ``cv``, and ``"fixed"`` otherwise.
    random_state : int, RandomState instance or None, default=None
        Seed of the randomized order. Pass an int for reproducible output.
    n_jobs : int, default=None
        Number of joblib workers running subtrees (or folds, for
        ``method="standard"``) in parallel. ``None`` means 1 unless in a
        :func:`joblib.parallel_config` context; ``-1`` means all processors.
    return_estimator : bool, default=False
        Whether to return each fold's fitted model.
    return_train_score : bool, default=False
        Whether to also score each fold's model on its training rows
        (``train_score`` or ``train_<name>``), as in ``cross_validate``.
    classes : array-like of shape (n_classes,), default=None
        All class labels, passed to the first ``partial_fit`` call of each model
        so that a training part lacking a class still works. Defaults to
        ``np.unique(y)`` for classifiers.
    fit_params : dict, default=None
        Parameters passed to ``partial_fit`` (or ``fit``); arrays of length
        ``n_samples`` such as ``sample_weight`` are restricted to the rows fed.
    leaf_callback : callable, default=None
        Called with a :class:`LeafResult` as soon as each fold is scored (its
        ``split`` is the split index, as in the result arrays). It may raise an
        exception to stop the run, which then propagates.
    error_score : "raise" or float, default=np.nan
        As in :func:`~sklearn.model_selection.cross_validate`: the score of a
        fold whose fit or scoring raises, with a ``FitFailedWarning`` or a
        ``UserWarning``; ``"raise"`` re-raises. A failed fit in the tree
        fails every fold trained from it, and when every fit failed the error
        is raised, as ``cross_validate`` does.

    Returns
    -------
    scores : dict
        ``test_score`` (or ``test_<name>`` per metric), ``fit_time`` and
        ``score_time`` arrays of shape (n_splits,), ``estimator`` if asked,
        ``n_samples_fed`` (total rows passed to the learner) and ``backend``
        (the backend that ran), plus one array (or list) per engine extra of
        the backend (:attr:`Backend.extras`; e.g. ``n_iter``, ``seed_time``,
        ``objective`` and, with a warm-start store, ``warm_start_seed``,
        ``warm_start_hits`` and ``warm_start_skips`` for ``alpha_seeding``).
        Every array is in split order. For the tree, ``fit_time[i]`` is the
        training time spent since the previous leaf, so the array sums to the
        total. ``regime_gap`` (a dict: ``gap``, ``fit_score``, ``tree_score``,
        ``splits``, ``metric``) when a tree scored one pass of a learner whose
        own ``fit`` trains differently: that ``fit`` measured on the first two
        splits against the tree's models of the same splits.

    See Also
    --------
    TreeCVSplitter : The splitter whose folds and order this function follows.
    sklearn.model_selection.cross_validate : The standard equivalent.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.naive_bayes import MultinomialNB
    >>> from sklearn_ext import tree_cross_validate
    >>> X, y = load_digits(return_X_y=True)
    >>> result = tree_cross_validate(MultinomialNB(), X, y, cv=10, method="treecv")
    >>> result["test_score"].shape
    (10,)
    >>> result["backend"], result["n_samples_fed"] < 5 * len(X)
    ('python_tree', True)
    >>> tree_cross_validate(MultinomialNB(), X, y, cv=10)["backend"]  # one pass
    'exact'
    """
    _check_params(estimator)
    core = RunCore(
        estimator,
        X,
        y,
        groups=groups,
        cv=cv,
        scoring=scoring,
        method=method,
        order=order,
        random_state=random_state,
        classes=classes,
        fit_params=fit_params,
        n_jobs=n_jobs,
        return_train_score=return_train_score,
        error_score=error_score,
        store=False,
    )
    resolved = core.resolve(estimator)
    tic = time.perf_counter()
    table = core.run(
        resolved, leaf_callback=leaf_callback, return_estimator=return_estimator
    )
    spent = time.perf_counter() - tic
    result = _aggregate(table, resolved.backend.name, error_score)
    gap = core.note_regime(resolved, _first_scores(table), spent)
    if gap is not None:
        result["regime_gap"] = gap.as_dict()
    names = _feature_names(X)
    if return_estimator and names is not None and not resolved.backend.data_as_given:
        for model in result["estimator"]:
            if model is not None and not hasattr(model, "feature_names_in_"):
                model.feature_names_in_ = names
    return result


def _check_params(estimator) -> None:
    """Refuse the estimator's invalid parameters as its ``fit`` would, but before
    any work and before any note about the regime that the run would score."""
    if get_config()["skip_parameter_validation"]:
        return
    if isinstance(estimator, BaseEstimator) and hasattr(
        estimator, "_parameter_constraints"
    ):
        estimator._validate_params()


def _feature_names(X):
    from sklearn.utils.validation import _get_feature_names

    return _get_feature_names(X)


def _aggregate(table: LeafTable, backend: str, error_score) -> dict[str, Any]:
    """The result dict, one entry per split in split order, then the extras.

    Failed fits are reported as ``cross_validate`` reports them: a
    ``FitFailedWarning`` when some failed, an error when all did.
    """
    table = table.by_split()
    if table.fit_error is not None:
        _warn_or_raise_about_fit_failures(
            [{"fit_error": error} for error in table.fit_error], error_score
        )
    result: dict[str, Any] = {
        "fit_time": np.asarray(table.fit_time),
        "score_time": np.asarray(table.score_time),
    }
    test = {n: v for n, v in table.scores.items() if not n.startswith("train:")}
    for prefix, scores in (
        ("test", test),
        ("train", {n[6:]: v for n, v in table.scores.items() if n not in test}),
    ):
        for name, values in scores.items():
            result[f"{prefix}_{name}"] = np.asarray(values)
    if table.estimator is not None:
        result["estimator"] = list(table.estimator)
    result["n_samples_fed"] = int(np.sum(table.n_samples_fed))
    result["backend"] = backend
    for name, values in table.extras.items():
        result[name] = _column(values)
    return result


def _first_scores(table: LeafTable) -> dict[int, float]:
    """Split index -> score of the first metric, for the folds that were fit."""
    name = next(iter(table.scores), None)
    if name is None:
        return {}
    errors = table.fit_error or [None] * len(table)
    return {
        int(split): float(score)
        for split, score, error in zip(
            table.split, table.scores[name], errors, strict=True
        )
        if error is None
    }


def _column(values: list):
    """An array of per-split values, or the list when they are not scalars."""
    if all(np.ndim(value) == 0 for value in values):
        return np.asarray(values)
    return list(values)
