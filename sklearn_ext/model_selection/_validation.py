"""``tree_cross_validate``: k-fold CV along the TreeCV recursion tree."""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.base import (
    is_classifier,
    is_clusterer,
    is_outlier_detector,
    is_regressor,
)
from sklearn.metrics import check_scoring
from sklearn.utils import check_array
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_consistent_length

from sklearn_ext.model_selection._backends import (
    CVTask,
    LeafResult,
    LeafTable,
    accepts_classes,
)
from sklearn_ext.model_selection._choice import METHODS, choose_backend
from sklearn_ext.model_selection._plan import FoldPlan, _draw_seed, check_order
from sklearn_ext.model_selection._split import StratifiedTreeCVSplitter, TreeCVSplitter

__all__ = [
    "tree_cross_validate",
    "make_fold_plan",
    "make_scorer_dict",
    "stratifies",
]


def stratifies(estimator) -> bool:
    """Whether an int ``cv`` stratifies on ``y`` for ``estimator``.

    True for classifiers and for outlier detectors (whose ``y`` holds the
    normal/anomaly labels, so that every fold gets its share of anomalies).
    """
    return is_classifier(estimator) or is_outlier_detector(estimator)


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
    classes=None,
    fit_params: dict[str, Any] | None = None,
    leaf_callback: Callable[[LeafResult], None] | None = None,
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

    Parameters
    ----------
    estimator : estimator object
        The learner. TreeCV needs ``partial_fit``; use ``method="standard"``
        for any other estimator.
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Training data. Must be finite.
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
    method : {"auto", "treecv", "standard", "alpha_seeding"}, default="auto"
        ``"auto"`` and ``"treecv"`` run the TreeCV recursion (a ``TypeError`` is
        raised for an estimator without ``partial_fit``). ``"standard"`` trains
        ``k`` independent models fed the same rows in the same order, the
        reference to compare against. ``"alpha_seeding"``, which ``"auto"``
        picks for :class:`~sklearn_ext.svm.AlphaSeededSVC` and
        :class:`sklearn.svm.SVC`, solves the kernel SVM folds in order on one
        shared kernel store, each fold's SMO seeded from the previous fold's
        solution (SIR, Wen et al., 2017); every fold reaches LIBSVM's
        optimum to ``tol``. The fold models are ``AlphaSeededSVC`` instances
        and ``n_samples_fed`` counts the training rows of each fold.
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
    classes : array-like of shape (n_classes,), default=None
        All class labels, passed to the first ``partial_fit`` call of each model
        so that a training part lacking a class still works. Defaults to
        ``np.unique(y)`` for classifiers.
    fit_params : dict, default=None
        Parameters passed to ``partial_fit`` (or ``fit``); arrays of length
        ``n_samples`` such as ``sample_weight`` are restricted to the rows fed.
    leaf_callback : callable, default=None
        Called with a :class:`LeafResult` as soon as each fold is scored. It may
        raise an exception to stop the run, which then propagates.

    Returns
    -------
    scores : dict
        ``test_score`` (or ``test_<name>`` per metric), ``fit_time`` and
        ``score_time`` arrays of shape (n_splits,), ``estimator`` if asked,
        ``n_samples_fed`` (total rows passed to the learner) and ``backend``
        (the backend that ran). For the tree, ``fit_time[i]`` is the training
        time spent since the previous leaf, so the array sums to the total.

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
    >>> result = tree_cross_validate(MultinomialNB(), X, y, cv=10)
    >>> result["test_score"].shape
    (10,)
    >>> result["backend"], result["n_samples_fed"] < 5 * len(X)
    ('python_tree', True)
    """
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(
            "The 'method' parameter of tree_cross_validate must be a str among "
            f"{set(METHODS)}. Got {method!r} instead."
        )
    if order is not None:
        check_order(order, "tree_cross_validate")
    backend = choose_backend(estimator, method)
    X, y = _validate_data(X, y)
    if fit_params is not None and not isinstance(fit_params, dict):
        raise TypeError(
            f"The 'fit_params' parameter of tree_cross_validate must be a dict or "
            f"None. Got {fit_params!r} instead."
        )
    plan = make_fold_plan(
        cv,
        X,
        y,
        groups,
        classifier=stratifies(estimator),
        order=order,
        random_state=random_state,
    )
    task = CVTask(
        estimator=estimator,
        X=X,
        y=y,
        plan=plan,
        scorer=make_scorer_dict(estimator, scoring),
        scoring=scoring,
        fit_params=dict(fit_params or {}),
        classes=_classes(estimator, y, classes),
        n_jobs=n_jobs,
        return_estimator=return_estimator,
        on_leaf=None if leaf_callback is None else _by_split(plan, leaf_callback),
    )
    leaves = backend.run(task)
    if not isinstance(leaves, LeafTable):
        leaves = LeafTable.from_leaves(leaves)
    return _aggregate(leaves, plan, backend.name)


def _as_split(plan: FoldPlan, leaf: LeafResult) -> LeafResult:
    return dataclasses.replace(leaf, fold=int(plan.split_index[leaf.fold]))


def _by_split(plan: FoldPlan, callback):
    def on_leaf(leaf: LeafResult) -> None:
        callback(_as_split(plan, leaf))

    return on_leaf


def make_fold_plan(
    cv, X, y=None, groups=None, *, classifier=False, order=None, random_state=None
) -> FoldPlan:
    """Turn a ``cv`` argument into the run's :class:`FoldPlan`.

    Parameters
    ----------
    cv : int, FoldPlan, TreeCVSplitter or cross-validation generator
        See :func:`tree_cross_validate`. A plan is returned as it is.
    X, y, groups : array-like
        The data, targets and groups handed to the splitter.
    classifier : bool, default=False
        Whether an int ``cv`` should stratify on a binary or multiclass ``y``
        (see :func:`stratifies`).
    order : {"fixed", "randomized"} or None, default=None
        Feeding order; ``None`` takes a ``TreeCVSplitter``'s own order.
    random_state : int, RandomState instance or None, default=None
        Seed of the randomized order when ``order`` is given.

    Returns
    -------
    plan : FoldPlan
    """
    n_samples = X.shape[0]
    if isinstance(cv, FoldPlan):
        if cv.n_samples != n_samples:
            raise ValueError(
                f"The fold plan given as cv covers {cv.n_samples} samples but X "
                f"has {n_samples}."
            )
        if order is not None and order != cv.order:
            raise ValueError(
                f"order={order!r} differs from the order of the fold plan given "
                f"as cv ({cv.order!r}); leave order=None to use the plan's."
            )
        return cv
    if isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
        if not 2 <= cv <= n_samples:
            raise ValueError(
                f"The 'cv' parameter must be an int in the range [2, n_samples="
                f"{n_samples}] or a cross-validation generator. Got {cv!r} instead."
            )
        stratify = (
            classifier
            and y is not None
            and (type_of_target(y) in ("binary", "multiclass"))
        )
        if stratify and np.min(np.unique(y, return_counts=True)[1]) < cv:
            stratify = False  # StratifiedKFold cannot fill every chunk with a class.
        cv = (StratifiedTreeCVSplitter if stratify else TreeCVSplitter)(cv)
    elif not hasattr(cv, "split") or isinstance(cv, str):
        raise ValueError(
            "The 'cv' parameter must be an int in the range [2, n_samples], a "
            "FoldPlan or a cross-validation generator with a split method. Got "
            f"{cv!r} instead."
        )
    if isinstance(cv, TreeCVSplitter):
        if order is None or order == cv.order:
            return cv.plan(X, y, groups)
        # Same chunks and leaf order, the feeding order asked for here.
        return FoldPlan(
            cv._test_folds(X, y, groups),
            n_samples,
            order=order,
            seed=_draw_seed(random_state) if order == "randomized" else None,
            leaf_order=cv.leaf_order,
        )
    return FoldPlan.from_cv(
        cv, X, y, groups, order=order or "fixed", random_state=random_state
    )


def make_scorer_dict(estimator, scoring) -> Callable[[Any, Any, Any], dict[str, float]]:
    """A scorer ``(model, X, y) -> {name: value}`` for ``scoring``.

    ``scoring=None`` picks the estimator's natural score: ``score`` for
    classifiers, regressors and outlier detectors that define one (e.g. the
    AUROC of :class:`~sklearn_ext.anomaly.SemiSupervisedAnomalyDetector`),
    minus the mean squared distance to the nearest centre for clusterers and
    the mean of ``score_samples`` for density estimators.
    """
    if scoring is None:
        if is_clusterer(estimator):
            return _named(_neg_mean_squared_distance)
        has_score = is_outlier_detector(estimator) and callable(
            getattr(estimator, "score", None)
        )
        if not (
            is_classifier(estimator) or is_regressor(estimator) or has_score
        ) and hasattr(estimator, "score_samples"):
            return _named(_mean_score_samples)
    try:
        scorer = check_scoring(estimator, scoring)
    except (ValueError, TypeError) as exc:
        raise ValueError(
            f"Invalid scoring={scoring!r} for {type(estimator).__name__}: {exc}"
        ) from None
    if isinstance(scoring, list | tuple | set | dict):
        return scorer
    return _named(scorer)


def _named(scorer) -> Callable[[Any, Any, Any], dict[str, float]]:
    def score(model, X, y):
        return {"score": scorer(model, X, y)}

    return score


def _neg_mean_squared_distance(model, X, y=None) -> float:
    """Minus the mean squared distance of ``X`` to the nearest cluster centre."""
    centers = np.asarray(model.cluster_centers_)
    if hasattr(X, "toarray"):
        X = X.toarray()
    X = np.asarray(X, dtype=float)
    sq = (
        np.einsum("ij,ij->i", X, X)[:, None]
        - 2 * X @ centers.T
        + np.einsum("ij,ij->i", centers, centers)[None, :]
    )
    return -float(np.mean(np.maximum(sq.min(axis=1), 0.0)))


def _mean_score_samples(model, X, y=None) -> float:
    """Mean of ``score_samples``: the mean log-likelihood of a density model."""
    return float(np.mean(model.score_samples(X)))


def _validate_data(X, y):
    X = check_array(
        X,
        accept_sparse="csr",
        dtype=None,
        ensure_all_finite=True,
        ensure_min_samples=2,
        input_name="X",
    )
    if y is not None:
        y = check_array(
            y,
            ensure_2d=False,
            dtype=None,
            ensure_all_finite=True,
            ensure_min_samples=2,
            input_name="y",
        )
        check_consistent_length(X, y)
    return X, y


def _classes(estimator, y, classes):
    if not accepts_classes(estimator):
        return None
    if classes is not None:
        classes = np.asarray(classes)
        if y is not None:
            unknown = np.setdiff1d(np.unique(y), classes)
            if unknown.size:
                raise ValueError(
                    f"The 'classes' parameter must contain every label of y; "
                    f"{unknown.tolist()} are missing from {classes.tolist()}."
                )
        return classes
    return None if y is None else np.unique(y)


def _aggregate(table: LeafTable, plan: FoldPlan, backend: str) -> dict[str, Any]:
    """The result dict, folds in the plan's split order (backends number leaves)."""
    order = np.argsort(plan.split_index[table.fold], kind="stable")
    result: dict[str, Any] = {
        "fit_time": np.asarray(table.fit_time)[order],
        "score_time": np.asarray(table.score_time)[order],
    }
    if list(table.scores) == ["score"]:
        result["test_score"] = np.asarray(table.scores["score"])[order]
    else:
        for name, values in table.scores.items():
            result[f"test_{name}"] = np.asarray(values)[order]
    if table.estimator is not None:
        result["estimator"] = [table.estimator[i] for i in order]
    result["n_samples_fed"] = int(np.sum(table.n_samples_fed))
    result["backend"] = backend
    return result
