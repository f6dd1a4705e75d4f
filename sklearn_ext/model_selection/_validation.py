"""``tree_cross_validate``: k-fold CV along the TreeCV recursion tree."""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Callable, Iterable
from numbers import Integral, Real
from traceback import format_exc
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn import get_config
from sklearn.base import (
    BaseEstimator,
    is_classifier,
    is_clusterer,
    is_outlier_detector,
    is_regressor,
)
from sklearn.metrics import check_scoring
from sklearn.model_selection import check_cv
from sklearn.utils import check_array
from sklearn.utils._param_validation import HasMethods, StrOptions
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import _num_samples, check_consistent_length

from sklearn_ext.model_selection._backends import (
    Backend,
    CVTask,
    LeafResult,
    LeafTable,
    PythonTreeBackend,
    StandardBackend,
    accepts_classes,
)
from sklearn_ext.model_selection._choice import METHODS, choose_backend
from sklearn_ext.model_selection._plan import (
    FoldPlan,
    _draw_seed,
    check_training_rows,
)
from sklearn_ext.model_selection._regime import scored_estimator, warn_about_regime
from sklearn_ext.model_selection._split import StratifiedTreeCVSplitter, TreeCVSplitter
from sklearn_ext.utils._param_validation import validate_params

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
        fold whose scoring raises, with a ``UserWarning``; ``"raise"``
        re-raises. A failed fit fails every fold of the tree, so its error is
        raised (``cross_validate`` raises too when every fit fails).

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
        total.

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
    backend = choose_backend(estimator, method)
    X_given = X
    as_given = isinstance(backend, PythonTreeBackend | StandardBackend)
    X, y = _validate_data(X, y, as_given=as_given)
    plan = make_fold_plan(
        cv,
        X,
        y,
        groups,
        classifier=stratifies(estimator),
        order=order,
        random_state=random_state,
    )
    check_training_rows(plan, backend)
    check_response_methods(estimator, scoring)
    all_classes = _classes(estimator, y, classes)
    scored, regime = scored_estimator(estimator, backend, classes=all_classes)
    if regime == "one_pass":
        warn_about_regime(estimator, refit=False, stacklevel=4)
    task = CVTask(
        estimator=scored,
        X=X,
        y=y,
        plan=plan,
        scorer=_scoring_errors_as(
            make_scorer_dict(estimator, scoring), scoring, error_score
        ),
        scoring=scoring,
        metric=native_metric(estimator, scoring),
        fit_params=dict(fit_params or {}),
        classes=_classes(scored, y, all_classes, checked=True),
        n_jobs=n_jobs,
        return_estimator=return_estimator,
        on_leaf=leaf_callback,
    )
    result = _aggregate(backend.run(task), backend.name)
    if return_estimator and _feature_names(X_given) is not None and not as_given:
        for model in result["estimator"]:
            if model is not None and not hasattr(model, "feature_names_in_"):
                model.feature_names_in_ = _feature_names(X_given)
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


def _scoring_errors_as(scorer, scoring, error_score):
    """``scorer``, with a fold whose scoring raises scored ``error_score``.

    As scikit-learn's ``_score``: a ``UserWarning`` with the details, unless
    ``error_score="raise"``.
    """
    if error_score == "raise":
        return scorer
    if isinstance(scoring, list | tuple | set | dict):
        names = list(scoring)
    else:
        names = ["score"]

    def score(model, X, y):
        try:
            return scorer(model, X, y)
        except Exception:
            warnings.warn(
                "Scoring failed. The score on this train-test partition for "
                f"these parameters will be set to {error_score}. Details: \n"
                f"{format_exc()}",
                UserWarning,
                stacklevel=2,
            )
            return {name: float(error_score) for name in names}

    return score


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
    elif (
        isinstance(cv, Iterable)
        and not isinstance(cv, str)
        and not hasattr(cv, "split")
    ):
        cv = check_cv(cv)  # (train, test) pairs, as scikit-learn takes them
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


def native_metric(estimator, scoring) -> str | None:
    """The metric a backend may compute itself for ``scoring`` (``CVTask.metric``).

    The ``scoring`` string as given; for ``scoring=None``, ``"accuracy"`` or
    ``"r2"`` when the estimator's ``score`` is scikit-learn's classifier or
    regressor mixin's, else ``"score"`` (its own); ``None`` for a callable or
    several metrics, which only the scorer computes.
    """
    if isinstance(scoring, str):
        return scoring
    if scoring is not None:
        return None
    from sklearn.base import ClassifierMixin, RegressorMixin

    own = getattr(type(estimator), "score", None)
    if own is ClassifierMixin.score:
        return "accuracy"
    if own is RegressorMixin.score:
        return "r2"
    return "score"


def check_response_methods(estimator, scoring) -> None:
    """Raise before any fit if ``scoring`` calls a method ``estimator`` lacks.

    Every fold would fail the same way; the ``AttributeError`` (what
    scikit-learn raises for a missing method) says which scorer and method.
    """
    if scoring is None or callable(scoring):
        return
    try:
        scorer = check_scoring(estimator, scoring)
    except (ValueError, TypeError):
        return  # make_scorer_dict says what is wrong with it
    scorers = getattr(scorer, "_scorers", {"score": scorer})
    for name, one in scorers.items():
        methods = getattr(one, "_response_method", None)
        if methods is None:
            continue
        methods = (methods,) if isinstance(methods, str) else tuple(methods)
        if not any(hasattr(estimator, method) for method in methods):
            which = f"scoring={scoring!r}" if len(scorers) == 1 else f"{name!r}"
            raise AttributeError(
                f"The scorer {which} calls {' or '.join(methods)}, which "
                f"{type(estimator).__name__} does not have with these parameters; "
                "choose a scoring it supports."
            )


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


def _validate_data(X, y, *, as_given: bool = False):
    """Checked ``X`` and ``y``; with ``as_given``, ``X`` only made indexable.

    The native engines need a finite array or CSR matrix; the Python tree and
    the standard backend hand rows to the estimator, which checks them itself
    (DataFrames keep their column names, NaN reaches learners that accept it).
    """
    if as_given and not sp.issparse(X):
        if _num_samples(X) < 2:
            raise ValueError(
                f"Found array with {_num_samples(X)} sample(s) while a minimum "
                "of 2 is required."
            )
        X = X if hasattr(X, "iloc") or hasattr(X, "shape") else _as_rows(X)
    else:
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
    if y is not None:
        check_consistent_length(X, y)
        if y.dtype == object:
            n_none = sum(value is None for value in y.ravel())
            if n_none:
                raise ValueError(
                    f"The 'y' parameter must not contain None; got None in "
                    f"{n_none} of {y.shape[0]} samples."
                )
    return X, y


def _as_rows(X):
    """A list of rows (texts...) as an array that rows can be taken from."""
    array = np.empty(len(X), dtype=object)
    array[:] = list(X)
    return array


def _feature_names(X):
    from sklearn.utils.validation import _get_feature_names

    return _get_feature_names(X)


def _classes(estimator, y, classes, checked=False):
    """All class labels for ``estimator`` (None if it takes no ``classes``).

    ``checked``: ``classes`` already holds every label of ``y`` (a second
    look-up in one run skips the pass over ``y``).
    """
    if not accepts_classes(estimator):
        return None
    if classes is not None:
        classes = np.asarray(classes)
        if y is not None and not checked:
            unknown = np.setdiff1d(np.unique(y), classes)
            if unknown.size:
                raise ValueError(
                    f"The 'classes' parameter must contain every label of y; "
                    f"{unknown.tolist()} are missing from {classes.tolist()}."
                )
        return classes
    return None if y is None else np.unique(y)


def _aggregate(table: LeafTable, backend: str) -> dict[str, Any]:
    """The result dict, one entry per split in split order, then the extras."""
    table = table.by_split()
    result: dict[str, Any] = {
        "fit_time": np.asarray(table.fit_time),
        "score_time": np.asarray(table.score_time),
    }
    if list(table.scores) == ["score"]:
        result["test_score"] = np.asarray(table.scores["score"])
    else:
        for name, values in table.scores.items():
            result[f"test_{name}"] = np.asarray(values)
    if table.estimator is not None:
        result["estimator"] = list(table.estimator)
    result["n_samples_fed"] = int(np.sum(table.n_samples_fed))
    result["backend"] = backend
    for name, values in table.extras.items():
        result[name] = _column(values)
    return result


def _column(values: list):
    """An array of per-split values, or the list when they are not scalars."""
    if all(np.ndim(value) == 0 for value in values):
        return np.asarray(values)
    return list(values)
