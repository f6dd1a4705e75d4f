"""``tree_cross_validate``: k-fold CV along the TreeCV recursion tree."""

from __future__ import annotations

import time
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn import get_config
from sklearn.base import BaseEstimator, is_classifier
from sklearn.exceptions import UnsetMetadataPassedError
from sklearn.metrics import check_scoring
from sklearn.model_selection import check_cv
from sklearn.model_selection._validation import (
    _check_groups_routing_disabled,
    _warn_or_raise_about_fit_failures,
)
from sklearn.utils._metadata_requests import _manual_routing, _routing_enabled
from sklearn.utils._param_validation import HasMethods, StrOptions
from sklearn.utils.metadata_routing import (
    MetadataRouter,
    MethodMapping,
    process_routing,
)

from sklearn_ext.model_selection._backends import Backend, LeafResult, LeafTable
from sklearn_ext.model_selection._choice import METHODS
from sklearn_ext.model_selection._core import RunCore, stratifies
from sklearn_ext.model_selection._plan import FoldPlan
from sklearn_ext.model_selection._report import print_splits, split_dicts
from sklearn_ext.model_selection._scoring import (
    check_response_methods,
    make_scorer_dict,
    native_metric,
)
from sklearn_ext.model_selection._split import make_fold_plan, routed_cv
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
        "verbose": ["verbose"],
        "params": [dict, None],
        "pre_dispatch": [Integral, str],
        "return_indices": ["boolean"],
        "return_run_info": ["boolean"],
        "return_levels": ["boolean"],
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
    verbose: int = 0,
    params: dict[str, Any] | None = None,
    pre_dispatch="2*n_jobs",
    return_indices: bool = False,
    return_run_info: bool = False,
    return_levels: bool = False,
) -> dict[str, Any]:
    """Evaluate scores by k-fold cross-validation along the TreeCV tree.

    The ``k`` fold models of an incremental learner (anything with
    ``partial_fit``) are trained along a balanced binary tree over the chunks
    (Joulani, György and Szepesvári, 2015, Algorithm 1): each node's model is
    updated with the chunks that one half of its hold-out range no longer holds
    out and handed to that half. Every row is fed once per tree level, about
    ``n * log2(2k)`` rows in all instead of ``n * (k - 1)``. Fold scores equal
    those of standard CV for learners whose model does not depend on the order
    of updates (naive Bayes, sufficient statistics); for online learners (SGD,
    PEGASOS) they are the scores of one ordered pass, equal to standard CV of
    that one-pass learner on a ``TreeCVSplitter``'s folds, and the regime gap
    tells how far the learner's own ``fit`` is (``return_run_info=True``).

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
        ``i``. ``None`` means 5. The standard backend fits an int's folds on
        the rows in ``StratifiedKFold``'s (``KFold``'s) order, as
        ``cross_validate``. A splitter whose test folds do not partition the
        samples (``ShuffleSplit``, ``LeavePGroupsOut``) has no tree:
        ``method="auto"`` runs its splits as given by the standard backend,
        with a :class:`~sklearn_ext.model_selection.TreeCVFallbackWarning`.
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
        the fastest of these that applies and falls back to ``"standard"``
        for an estimator no other backend can run: with a
        :class:`~sklearn_ext.model_selection.TreeCVFallbackWarning` when a
        faster backend knows the learner but not this call's data, parameters
        or splitter; for a learner without ``partial_fit`` (and no exact or SVM
        engine), whose standard CV is exactly ``cross_validate``'s, with a note
        at ``verbose > 0`` and ``backend="standard"`` in the run info. A
        configured backend, e.g.
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
    verbose : int, default=0
        As in ``cross_validate``: ``> 1`` prints a ``[CV] END ...`` line per
        split, with its scores from ``> 2``. ``> 0`` also prints the note of a
        learner that runs by standard CV without a warning (one without
        ``partial_fit`` that no exact or SVM engine takes; ``backend`` in the
        run info records it too).
    params : dict, default=None
        ``cross_validate``'s name for the fit parameters (pass these or
        ``fit_params``, not both). With metadata routing enabled they are
        routed by the requests of the splitter's ``split``, the estimator's
        ``fit`` and ``partial_fit`` (what the tree calls) and the scorers'
        ``score``, as ``cross_validate`` routes them; otherwise they go to
        ``fit``. A parameter that ``partial_fit`` does not take makes
        ``method="auto"`` fall back to the standard backend (with a note).
    pre_dispatch : int or str, default="2*n_jobs"
        joblib's ``pre_dispatch`` for the standard backend's fold jobs.
    return_indices : bool, default=False
        Whether to return each split's training and test rows
        (``indices["train"]``, ``indices["test"]``), as ``cross_validate``.
    return_run_info : bool, default=False
        Whether to add what TreeCV measured: ``n_samples_fed``, ``backend``
        and the backend's engine extras. Off by default, so that the result
        has exactly ``cross_validate``'s keys.
    return_levels : bool, default=False
        Whether to walk the tree level by level (breadth first) and return
        each level's estimate as ``levels``: after level ``l`` every row has
        been scored by a model trained without it, a complete ``2**l``-fold
        CV over all rows (see "The tree level by level" in the user guide).
        The fold scores are those of the depth-first walk; the walk keeps
        ``O(k)`` models instead of ``O(log k)`` and runs on one worker. A
        backend without levels gives one level, its leaves'.

    Returns
    -------
    scores : dict
        ``cross_validate``'s keys in its order: ``fit_time`` and
        ``score_time`` arrays of shape (n_splits,), ``estimator`` and
        ``indices`` if asked, ``test_score`` (or ``test_<name>`` per metric)
        and ``train_*`` if asked. With ``return_run_info``: ``n_samples_fed``
        (total rows passed to the learner), ``backend`` (the backend that
        ran) and one array (or list) per engine extra of the backend
        (:attr:`Backend.extras`; e.g. ``n_iter``, ``seed_time``,
        ``objective`` and, with a warm-start store, ``warm_start_seed``,
        ``warm_start_hits`` and ``warm_start_skips`` for ``alpha_seeding``).
        Every array is in split order. For the tree, ``fit_time[i]`` is the
        training time spent since the previous leaf, so the array sums to the
        total. With ``return_run_info``, also ``regime_gap`` (a dict:
        ``gap``, ``fit_score``, ``tree_score``, ``splits``, ``metric``,
        ``stderr``) when a tree scored one pass of a learner whose own ``fit``
        trains differently: that ``fit`` measured on the first splits against
        the tree's models of the same splits (only then is it measured; the
        regime note is said either way, with the numbers when measured).
        With ``return_levels``, ``levels``: a list of
        :class:`~sklearn_ext.model_selection.LevelEstimate`, one per level of
        the tree, the last one the leaves' (whose ``scores`` weight the folds
        by their sizes).

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
    >>> result = tree_cross_validate(
    ...     MultinomialNB(), X, y, cv=10, method="treecv", return_run_info=True
    ... )
    >>> result["test_score"].shape
    (10,)
    >>> result["backend"], result["n_samples_fed"] < 5 * len(X)
    ('python_tree', True)
    >>> tree_cross_validate(MultinomialNB(), X, y, cv=10, return_run_info=True)[
    ...     "backend"
    ... ]  # one pass
    'exact'
    """
    _check_params(estimator)
    routed = _routed_params(estimator, X, y, groups, cv, scoring, error_score, params)
    if fit_params and params:
        raise ValueError(
            "Pass the fit parameters either as params (cross_validate's name) or "
            "as fit_params, not both."
        )
    core = RunCore(
        estimator,
        X,
        y,
        groups=routed.splitter.split.get("groups"),
        cv=routed_cv(cv, routed.splitter.split),
        scoring=scoring,
        method=method,
        order=order,
        random_state=random_state,
        classes=classes,
        fit_params=fit_params or routed.estimator.fit,
        stream_params=routed.estimator.get("partial_fit")
        if _routing_enabled()
        else None,
        score_params=routed.scorer.score,
        n_jobs=n_jobs,
        return_train_score=return_train_score,
        error_score=error_score,
        store=False,
        pre_dispatch=pre_dispatch,
    )
    resolved = core.resolve(estimator)
    if verbose > 0:
        for message in core.notes:  # e.g. a learner without partial_fit
            print(message)
    tic = time.perf_counter()
    table, levels = _run(
        core, resolved, leaf_callback, return_estimator, return_levels, verbose
    )
    spent = time.perf_counter() - tic
    if verbose > 1:  # one dict per split: not built for leave-one-out's sake
        print_splits(verbose, {}, None, split_dicts(table, core))
    result = _aggregate(table, error_score)
    gap = None
    if not resolved.scores_own_fit:
        # Measured (the learner's own fits) only when it is returned; the
        # note is said either way.
        scores = _first_scores(table) if return_run_info else {}
        gap = core.note_regime(resolved, scores, spent)
    if return_indices:
        leaves = [int(leaf) for leaf in core.plan.leaf_order]
        result["indices"] = {
            "train": tuple(core.plan.fit_indices(leaf) for leaf in leaves),
            "test": tuple(core.plan.test_indices(leaf) for leaf in leaves),
        }
        result = _scores_last(result)
    if return_run_info:
        result["n_samples_fed"] = int(np.sum(table.n_samples_fed))
        result["backend"] = resolved.backend.name
        for name, values in table.by_split().extras.items():
            result[name] = _column(values)
        if gap is not None:
            result["regime_gap"] = gap.as_dict()
    if levels is not None:
        result["levels"] = levels
    names = _feature_names(X)
    if return_estimator and names is not None and not resolved.backend.data_as_given:
        for model in result["estimator"]:
            # A pipeline's names are those of its first step.
            first = model.steps[0][1] if hasattr(model, "steps") else model
            if first is not None and not hasattr(first, "feature_names_in_"):
                first.feature_names_in_ = names
    return result


def _run(core, resolved, leaf_callback, return_estimator, return_levels, verbose):
    """The run's leaves, and its levels when asked (else ``None``)."""
    if not return_levels:
        table = core.run(
            resolved, leaf_callback=leaf_callback, return_estimator=return_estimator
        )
        return table, None
    n_notes = len(core.notes)
    levels = list(
        core.run_levels(
            resolved, leaf_callback=leaf_callback, return_estimator=return_estimator
        )
    )
    if verbose > 0:
        for message in core.notes[n_notes:]:  # a backend without levels
            print(message)
    return levels[-1].leaves, levels


def _routed_params(estimator, X, y, groups, cv, scoring, error_score, params):
    """``params`` routed as ``cross_validate`` routes them.

    With metadata routing enabled, by the requests of the splitter's
    ``split``, the estimator's ``fit`` *and* ``partial_fit`` (which the tree
    calls) and the scorers' ``score``; otherwise ``params`` go to ``fit``,
    ``groups`` to the splitter and nothing to the scorers.
    """
    _check_groups_routing_disabled(groups)
    params = {} if params is None else params
    if not _routing_enabled():
        return _manual_routing(
            {
                "splitter": {"split": {"groups": groups}},
                "estimator": {"fit": params},
                "scorer": {"score": {}},
            }
        )
    splitter = cv
    if not (hasattr(cv, "split") or isinstance(cv, FoldPlan)):
        splitter = check_cv(cv, y, classifier=is_classifier(estimator))
    scorers = check_scoring(
        estimator, scoring=scoring, raise_exc=(error_score == "raise")
    )
    mapping = MethodMapping().add(caller="fit", callee="fit")
    if callable(getattr(estimator, "partial_fit", None)):
        mapping.add(caller="fit", callee="partial_fit")
    router = (
        MetadataRouter(owner="tree_cross_validate")
        .add(
            splitter=splitter,
            method_mapping=MethodMapping().add(caller="fit", callee="split"),
        )
        .add(estimator=estimator, method_mapping=mapping)
        .add(
            scorer=scorers,
            method_mapping=MethodMapping().add(caller="fit", callee="score"),
        )
    )
    try:
        return process_routing(router, "fit", **params)
    except UnsetMetadataPassedError as e:
        raise UnsetMetadataPassedError(
            message=str(e).replace("tree_cross_validate.fit", "tree_cross_validate"),
            unrequested_params=e.unrequested_params,
            routed_params=e.routed_params,
        ) from None


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


def _aggregate(table: LeafTable, error_score) -> dict[str, Any]:
    """The result dict, keyed as ``cross_validate``'s, one entry per split.

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
    if table.estimator is not None:
        result["estimator"] = list(table.estimator)
    for name, values in table.scores.items():
        if not name.startswith("train:"):
            result[f"test_{name}"] = np.asarray(values)
            train = table.scores.get(f"train:{name}")
            if train is not None:
                result[f"train_{name}"] = np.asarray(train)
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


def _scores_last(result: dict[str, Any]) -> dict[str, Any]:
    """``cross_validate``'s key order: times, estimators, indices, then scores."""
    first = ("fit_time", "score_time", "estimator", "indices")
    ordered = {key: result[key] for key in first if key in result}
    ordered.update((key, value) for key, value in result.items() if key not in first)
    return ordered


def _column(values: list):
    """An array of per-split values, or the list when they are not scalars."""
    if all(np.ndim(value) == 0 for value in values):
        return np.asarray(values)
    return list(values)
