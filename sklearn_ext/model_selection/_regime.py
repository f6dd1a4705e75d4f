"""The training regime TreeCV scores, and the estimator that reproduces it.

The tree backends train each fold's model by feeding its training rows to
``partial_fit`` once, in the fold plan's order: one ordered pass, the
*streaming regime*. A learner whose own ``fit`` does something else (several
epochs, shuffling, early stopping) would be scored in one regime and returned in
another; this module says which learners are in that case and builds the
estimator whose ``fit`` is the scored regime, so that the model a search or a
study returns is the model its score describes.
"""

from __future__ import annotations

import warnings

from sklearn.base import clone
from sklearn.pipeline import Pipeline

from sklearn_ext.model_selection._estimator import TreeCVEstimator
from sklearn_ext.model_selection._streaming import learns_nothing, streaming_pipeline

__all__ = [
    "STREAM_BATCH_SIZE",
    "TreeCVRegimeWarning",
    "fit_is_one_pass",
    "one_pass_estimator",
    "regime_estimator",
    "scored_estimator",
    "streams_batch_invariantly",
    "warn_about_regime",
]

#: Rows per ``partial_fit`` call of the streaming regime for learners whose
#: updates depend on how rows are batched (shuffling inside a call, mini-batches).
STREAM_BATCH_SIZE = 256


class TreeCVRegimeWarning(UserWarning):
    """TreeCV scores one ordered pass of ``partial_fit``, not the learner's ``fit``.

    Raised once per message (Python's default warning filter) when the
    learner's own ``fit`` would train differently; pass ``method="standard"`` to
    score that ``fit`` instead.

    Examples
    --------
    >>> import warnings
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.linear_model import SGDClassifier
    >>> from sklearn_ext.model_selection import (
    ...     TreeCVRegimeWarning, tree_cross_validate
    ... )
    >>> X, y = load_digits(return_X_y=True)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always", TreeCVRegimeWarning)
    ...     _ = tree_cross_validate(SGDClassifier(random_state=0), X, y, cv=3)
    >>> [str(w.message)[:45] for w in caught if w.category is TreeCVRegimeWarning]
    ['TreeCV scores SGDClassifier after one ordered']
    """


def _streams_rows(estimator) -> bool:
    """A native learner: ``partial_fit`` is row by row, ``fit`` is such passes."""
    return bool(getattr(estimator, "_treecv_row_stream", False))


def _is_naive_bayes(estimator) -> bool:
    from sklearn.naive_bayes import _BaseNB

    return isinstance(estimator, _BaseNB)


def _is_sklearn_sgd(estimator) -> bool:
    from sklearn.linear_model._stochastic_gradient import BaseSGD

    return isinstance(estimator, BaseSGD)


def streams_batch_invariantly(estimator) -> bool:
    """Whether ``partial_fit`` gives the same model however the rows are batched.

    True for the native learners and SSAD (row-by-row updates in the given
    order), naive Bayes (sums over rows), scikit-learn's SGD family with
    ``shuffle=False`` and :class:`TreeCVEstimator` (which keeps its batch
    boundaries across calls). Other learners (``shuffle=True`` inside a call,
    mini-batches) are fed through a :class:`TreeCVEstimator` by the tree.
    """
    if isinstance(estimator, TreeCVEstimator) or _streams_rows(estimator):
        return True
    if _is_naive_bayes(estimator):
        return True
    if _is_sklearn_sgd(estimator):
        return not estimator.shuffle
    return False


def fit_is_one_pass(estimator) -> bool:
    """Whether ``estimator.fit`` is one ordered pass of ``partial_fit`` over the rows.

    Then the fold models TreeCV scores are ``fit`` on the fold's training rows
    and the estimator itself reproduces the scored regime.

    Parameters
    ----------
    estimator : estimator object
        A learner, a :class:`TreeCVEstimator` or a pipeline.

    Returns
    -------
    one_pass : bool
        True for naive Bayes, a :class:`TreeCVEstimator`, scikit-learn's SGD
        family and the native learners with ``max_iter=1`` and no shuffling or
        early stopping, and a pipeline of steps that learn nothing from rows
        ending in one of those.

    Examples
    --------
    >>> from sklearn.linear_model import SGDClassifier
    >>> from sklearn.naive_bayes import GaussianNB
    >>> from sklearn_ext.model_selection import fit_is_one_pass
    >>> fit_is_one_pass(SGDClassifier())  # up to 1000 shuffled epochs
    False
    >>> fit_is_one_pass(SGDClassifier(max_iter=1, tol=None, shuffle=False))
    True
    >>> fit_is_one_pass(GaussianNB())
    True
    """
    if isinstance(estimator, TreeCVEstimator) or _is_naive_bayes(estimator):
        return True
    if isinstance(estimator, Pipeline):
        # Steps that learn nothing from rows, then a one-pass learner.
        *steps, (_, last) = estimator.steps
        return all(learns_nothing(step) for _, step in steps) and fit_is_one_pass(last)
    if _streams_rows(estimator):
        return estimator.max_iter == 1 and not estimator.shuffle
    if _is_sklearn_sgd(estimator):
        params = estimator.get_params()
        return (
            params.get("max_iter") == 1
            and not params.get("shuffle", False)
            and not params.get("early_stopping", False)
            and not params.get("warm_start", False)
        )
    return False


def one_pass_estimator(estimator, *, classes=None, X=None):
    """An unfitted estimator whose ``fit`` is the regime TreeCV scores.

    Parameters
    ----------
    estimator : estimator object
        A learner with ``partial_fit``.
    classes : array-like of shape (n_classes,), default=None
        All class labels of a classifier, so that a fit on rows lacking a class
        still knows it.
    X : array-like, default=None
        All the rows, for a pipeline: the categories of its encoders are fixed
        from them (see :func:`~sklearn_ext.model_selection.streaming_pipeline`).

    Returns
    -------
    estimator : estimator object
        A clone of ``estimator`` when its ``fit`` already is one ordered pass
        (:func:`fit_is_one_pass`), otherwise a :class:`TreeCVEstimator` around
        it (around a :class:`StreamingPipeline` of a pipeline's steps) feeding
        batches of ``STREAM_BATCH_SIZE`` rows, without a cache.
        ``clone(result).fit(X, y)`` trains the same model again.

    Examples
    --------
    >>> from sklearn.linear_model import SGDClassifier
    >>> from sklearn_ext.model_selection import one_pass_estimator
    >>> one_pass_estimator(SGDClassifier(random_state=0))
    TreeCVEstimator(batch_size=256, cache=None,
                    estimator=SGDClassifier(random_state=0))
    """
    if fit_is_one_pass(estimator):
        return clone(estimator)
    return _stream_wrapper(clone(estimator), classes, X)


def _stream_wrapper(estimator, classes, X) -> TreeCVEstimator:
    """The streaming regime's estimator: fixed batches, a pipeline streamed."""
    if isinstance(estimator, Pipeline):
        estimator = streaming_pipeline(estimator, X)
    return TreeCVEstimator(
        estimator, batch_size=STREAM_BATCH_SIZE, classes=classes, cache=None
    )


#: The parameters only ``fit`` uses: one pass of ``partial_fit`` ignores them
#: (the number of passes, the convergence test, early stopping's held-out
#: rows). Where one pass is scored, a recorded ``max_iter=1000`` is not 1000
#: passes: a study's ``treecv_regime`` attribute names these parameters.
FIT_ONLY_PARAMS = (
    "max_iter",
    "tol",
    "early_stopping",
    "n_iter_no_change",
    "validation_fraction",
)


def _fit_differences(estimator) -> str:
    """What ``estimator.fit`` does that one ordered pass does not, in words."""
    if isinstance(estimator, Pipeline):
        return "fits each step on all rows before the next"
    params = estimator.get_params(deep=False)
    parts = []
    if isinstance(params.get("max_iter"), int) and params["max_iter"] > 1:
        parts.append(f"up to max_iter={params['max_iter']} passes")
    if params.get("shuffle") is True:
        parts.append("shuffle=True")
    if params.get("early_stopping") is True:
        parts.append("early_stopping=True")
    if not parts:
        return "is not known to be one such pass"
    return "makes " + ", ".join(parts)


def warn_about_regime(
    estimator,
    *,
    refit: bool,
    gap=None,
    turned_to_fit: bool = False,
    stacklevel: int = 3,
) -> None:
    """Say once, in plain words, that TreeCV scores a pass that ``fit`` does not.

    Nothing is said for a learner whose ``fit`` is one ordered pass. ``gap``
    (a :class:`~sklearn_ext.model_selection._gap.RegimeGap`) adds how far the
    learner's own ``fit`` was from the tree's models on the same folds;
    ``turned_to_fit`` says that ``method="auto"`` scores ``fit`` from now on
    because that gap was large.
    """
    if fit_is_one_pass(estimator):
        return
    name = type(estimator).__name__
    measured = "" if gap is None else " " + gap.words(name)
    if turned_to_fit:
        warnings.warn(
            f"TreeCV's one ordered pass of partial_fit is far from {name}.fit "
            f"on this data.{measured} method='auto' therefore scores {name}.fit "
            "(k fits per candidate, the standard backend) for this search or "
            "study, and the refit model is fitted by it. Pass method='treecv' to "
            "keep the one pass.",
            TreeCVRegimeWarning,
            stacklevel=stacklevel,
        )
        return
    returned = (
        "The refit model is trained the same way on all rows (a TreeCVEstimator "
        f"around {name}), so the score describes it."
        if refit
        else f"A model trained by {name}.fit would differ from the ones scored."
    )
    warnings.warn(
        f"TreeCV scores {name} after one ordered pass of partial_fit over each "
        f"fold's training rows, while {name}.fit {_fit_differences(estimator)}."
        f"{measured} {returned} Pass method='standard' to score {name}.fit "
        "instead (k fits), or configure the learner for one ordered pass.",
        TreeCVRegimeWarning,
        stacklevel=stacklevel,
    )


def scored_estimator(estimator, backend, *, classes=None, X=None):
    """What ``backend`` runs for ``estimator``, and the regime it then scores.

    Parameters
    ----------
    estimator : estimator object
        The user's learner.
    backend : Backend
        The backend chosen for it.
    classes : array-like of shape (n_classes,), default=None
        All class labels, for the wrapper of a classifier.
    X : array-like, default=None
        All the rows of the run, for a pipeline's encoders.

    Returns
    -------
    estimator : estimator object
        ``estimator`` itself, or a :class:`TreeCVEstimator` around it (around a
        :class:`StreamingPipeline` of a pipeline) when a tree would otherwise
        feed a learner whose updates depend on batching.
    regime : {"one_pass", "fit"}
        ``"one_pass"`` when the folds are one ordered pass of ``partial_fit``
        (the tree backends), ``"fit"`` when they are the learner's own ``fit``
        (the standard, alpha-seeding and exact statistics backends).
    """
    if backend.scores == "fit":
        return estimator, "fit"
    if isinstance(estimator, Pipeline):
        return _stream_wrapper(estimator, classes, X), "one_pass"
    if not callable(getattr(estimator, "partial_fit", None)):
        return estimator, "fit"
    if streams_batch_invariantly(estimator):
        return estimator, "one_pass"
    return _stream_wrapper(estimator, classes, X), "one_pass"


def regime_estimator(estimator, regime: str, classes=None, X=None):
    """An unfitted estimator whose ``fit`` trains the way ``regime`` scored.

    Parameters
    ----------
    estimator : estimator object
        The learner.
    regime : {"fit", "one_pass"}
        What the folds were (:attr:`Backend.scores`).
    classes : array-like of shape (n_classes,), default=None
        All class labels, for the wrapper of a classifier.
    X : array-like, default=None
        The rows it will be fitted on, for a pipeline's encoders.

    Returns
    -------
    estimator : estimator object
        A clone of ``estimator`` for ``"fit"`` (or a learner that cannot
        stream), else :func:`one_pass_estimator` of it.
    """
    streams = isinstance(estimator, Pipeline) or callable(
        getattr(estimator, "partial_fit", None)
    )
    if regime == "fit" or not streams:
        return clone(estimator)
    return one_pass_estimator(estimator, classes=classes, X=X)
