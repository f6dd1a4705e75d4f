"""Pipelines that stream: every step updated batch by batch, then the learner.

scikit-learn's ``Pipeline`` has no ``partial_fit`` (its issue 3299: should every
transformer be refitted on each batch?). :class:`StreamingPipeline` answers it
for the pipelines whose steps can stream: each batch of rows first updates
every step in turn (the first batch fits it, later batches update it with
``partial_fit``), is transformed by the updated step and handed to the next; the
last step learns from the transformed batch with ``partial_fit``. The whole
pipeline is the model state, so TreeCV's nodes carry it, and a fold model never
sees its held-out rows: nothing leaks.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, PolynomialFeatures
from sklearn.utils import _safe_indexing, get_tags

__all__ = [
    "StreamingPipeline",
    "learns_nothing",
    "stream_refusal",
    "streaming_pipeline",
]

#: Transformers whose ``fit`` learns only the input's shape (and their own
#: parameters), so fitting them on the first batch is fitting them on all rows.
_SHAPE_ONLY = (PolynomialFeatures,)
_ENCODERS = (OneHotEncoder, OrdinalEncoder)


class StreamingPipeline(Pipeline):
    """A ``Pipeline`` with ``partial_fit``: each batch updates every step in turn.

    :meth:`partial_fit` takes one batch of rows through the steps: each
    transformer is updated with the batch (fitted on the first batch,
    ``partial_fit`` on later ones; a stateless transformer is only fitted
    once), then transforms it for the next step; the final estimator learns
    from the transformed batch with its own ``partial_fit``. ``fit`` is
    ``Pipeline.fit`` (every step on all rows). TreeCV streams a pipeline this
    way: :func:`~sklearn_ext.tree_cross_validate` and the searches wrap it in a
    :class:`TreeCVEstimator` that keeps fixed batches, so the fold models and
    the returned model are the same streaming regime.

    The steps that stream: transformers with ``partial_fit``
    (``StandardScaler``, ``MinMaxScaler``, ``MaxAbsScaler``,
    ``IncrementalPCA``, ``HashingVectorizer``...), stateless ones
    (``FunctionTransformer``, ``Normalizer``, ``Binarizer``), those whose fit
    learns only the input's shape (``PolynomialFeatures``), encoders whose
    categories are given (``OneHotEncoder(categories=[...])``;
    :func:`streaming_pipeline` fixes ``categories="auto"`` from all rows, the way
    ``classes`` are), ``"passthrough"``, and ``ColumnTransformer`` /
    ``FeatureUnion`` of such parts. The final step needs ``partial_fit``.

    Parameters
    ----------
    steps : list of (str, estimator) tuples
        As in :class:`sklearn.pipeline.Pipeline`.
    memory : None
        Not used for streaming (as in ``Pipeline``).
    transform_input : list of str, default=None
        As in ``Pipeline``.
    verbose : bool, default=False
        As in ``Pipeline``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import SGDClassifier
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn_ext.model_selection import StreamingPipeline
    >>> X, y = load_iris(return_X_y=True)
    >>> model = StreamingPipeline(
    ...     [("scale", StandardScaler()), ("sgd", SGDClassifier(random_state=0))]
    ... )
    >>> for rows in np.array_split(np.random.RandomState(0).permutation(150), 3):
    ...     model = model.partial_fit(X[rows], y[rows], classes=[0, 1, 2])
    >>> int(model.named_steps["scale"].n_samples_seen_)
    150
    """

    def partial_fit(self, X, y=None, classes=None, **params):
        """Update every step with one batch of rows, in order.

        Parameters
        ----------
        X : iterable or array-like
            One batch of rows, as the first step takes them.
        y : array-like of shape (n_samples,), default=None
            Targets of the batch.
        classes : array-like of shape (n_classes,), default=None
            All class labels, passed to the final step's first ``partial_fit``.
        **params : dict
            ``<step>__<param>`` parameters, as ``Pipeline.fit`` takes them,
            passed to that step's update (per-sample arrays must be the
            batch's).

        Returns
        -------
        self : StreamingPipeline
            The updated pipeline.
        """
        first = not hasattr(self, "n_batches_")
        if first:
            reason = stream_refusal(self, fixed_up_front=False)
            if reason is not None:
                raise ValueError(f"StreamingPipeline cannot stream: {reason}.")
        routed = _route(self, params)
        for index, (name, step) in enumerate(self.steps[:-1]):
            if step is None or step == "passthrough":
                continue
            updated = _update(step, X, y, first, routed[name])
            self.steps[index] = (name, updated)
            X = updated.transform(X)
        name, final = self.steps[-1]
        final_params = dict(routed[name])
        if classes is not None:
            final_params["classes"] = classes
        if final is not None and final != "passthrough":
            final.partial_fit(X, y, **final_params)
        self.n_batches_ = getattr(self, "n_batches_", 0) + 1
        return self


def _route(pipeline: Pipeline, params: dict[str, Any]) -> dict[str, dict]:
    """``<step>__<param>`` parameters by step, as ``Pipeline.fit`` splits them."""
    routed: dict[str, dict] = {name: {} for name, _ in pipeline.steps}
    for key, value in params.items():
        step, _, param = key.partition("__")
        if not param or step not in routed:
            raise ValueError(
                "StreamingPipeline.partial_fit does not accept the "
                f"{key!r} parameter. Pass parameters to a step as "
                "'<step>__<param>', e.g. "
                f"'{pipeline.steps[-1][0]}__sample_weight'."
            )
        routed[step][param] = value
    return routed


def _update(step, X, y, first: bool, params: dict):
    """``step`` updated with one batch: fitted on the first, then updated."""
    if first:
        return step.fit(X, y, **params)
    if isinstance(step, ColumnTransformer):
        for index, (name, child, columns) in enumerate(step.transformers_):
            if _is_noop(child):
                continue
            part = _safe_indexing(X, columns, axis=1)
            updated = _update(child, part, y, False, {})
            step.transformers_[index] = (name, updated, columns)
        return step
    if isinstance(step, FeatureUnion):
        for index, (name, child) in enumerate(step.transformer_list):
            if not _is_noop(child):
                step.transformer_list[index] = (name, _update(child, X, y, False, {}))
        return step
    if callable(getattr(step, "partial_fit", None)):
        return step.partial_fit(X, y, **params)
    return step  # stateless, shape-only or an encoder with fixed categories


def _is_noop(step) -> bool:
    return step is None or (isinstance(step, str) and step in ("drop", "passthrough"))


def stream_refusal(pipeline, *, fixed_up_front: bool = True) -> str | None:
    """Why ``pipeline`` cannot stream, naming the step, or ``None``.

    Parameters
    ----------
    pipeline : Pipeline
        A scikit-learn pipeline (or :class:`StreamingPipeline`).
    fixed_up_front : bool, default=True
        Whether :func:`streaming_pipeline` will fix the categories of the
        encoders on the input's own columns from all rows (so that
        ``categories="auto"`` is accepted there).

    Returns
    -------
    reason : str or None
    """
    *steps, (last_name, last) = pipeline.steps
    for position, (name, step) in enumerate(steps):
        why = _step_refusal(step, fixed_up_front and position == 0)
        if why is not None:
            return f"its step {name!r} ({_short(step)}) cannot stream: {why}"
    if not (_is_noop(last) or callable(getattr(last, "partial_fit", None))):
        return (
            f"its final step {last_name!r} ({_short(last)}) has no partial_fit method"
        )
    return None


def _step_refusal(step, on_input: bool = False) -> str | None:
    """Why one transformer cannot stream, or ``None``.

    ``on_input``: the step reads the input's own columns, where an encoder's
    ``"auto"`` categories are fixed up front.
    """
    if _is_noop(step):
        return None
    if isinstance(step, ColumnTransformer):
        parts = [(name, child) for name, child, _ in step.transformers]
        parts.append(("remainder", step.remainder))
    elif isinstance(step, FeatureUnion):
        parts, on_input = list(step.transformer_list), False
    elif isinstance(step, Pipeline):
        parts, on_input = list(step.steps), False
    else:
        return _leaf_refusal(step, on_input)
    for name, child in parts:
        why = _step_refusal(child, on_input)
        if why is not None:
            return f"its part {name!r} ({_short(child)}) cannot stream: {why}"
    return None


def _leaf_refusal(step, on_input: bool) -> str | None:
    if isinstance(step, _ENCODERS):
        params = step.get_params()
        if params.get("min_frequency") is not None or params.get("max_categories"):
            return (
                "its infrequent categories are counted over all of fit's rows, "
                "which a stream never sees at once"
            )
        if isinstance(params["categories"], str) and not on_input:
            return (
                "categories='auto' is learnt from all of fit's rows; give the "
                "categories, or put the encoder first (or in a ColumnTransformer "
                "on the input's columns) so that they are fixed up front"
            )
        return None
    if callable(getattr(step, "partial_fit", None)):
        return None
    if not get_tags(step).requires_fit or isinstance(step, _SHAPE_ONLY):
        return None
    if _is_simple_imputer(step):
        if step.strategy == "constant" and not step.add_indicator:
            return None  # fills with its constant: nothing learnt from rows
        exact = step.strategy == "mean"
        return (
            f"strategy={step.strategy!r} is "
            + ("a sum over rows, which could stream exactly, but" if exact else "")
            + (" " if exact else "learnt from all rows at once, and ")
            + "SimpleImputer has no partial_fit to update it"
        )
    return (
        f"it has no partial_fit and {type(step).__name__}.fit learns from all rows "
        "at once"
    )


def _is_simple_imputer(step) -> bool:
    # Not imported here: sklearn.impute loads much of scikit-learn; a step that
    # is a SimpleImputer has loaded it already.
    impute = sys.modules.get("sklearn.impute")
    return impute is not None and isinstance(step, impute.SimpleImputer)


def learns_nothing(step) -> bool:
    """Whether fitting ``step`` on any rows is fitting it on all of them.

    True for stateless transformers, those whose fit learns only the input's
    shape, encoders with given categories, ``"passthrough"``, and
    ``ColumnTransformer`` / ``FeatureUnion`` of such parts: a pipeline of them
    before a learner whose ``fit`` is one ordered pass streams to the very
    model its own ``fit`` trains.
    """
    if _is_noop(step):
        return True
    if isinstance(step, ColumnTransformer):
        parts = [child for _, child, _ in step.transformers] + [step.remainder]
        return all(learns_nothing(child) for child in parts)
    if isinstance(step, FeatureUnion):
        return all(learns_nothing(child) for _, child in step.transformer_list)
    if isinstance(step, _ENCODERS):
        return _leaf_refusal(step, False) is None
    if _is_simple_imputer(step):
        return _leaf_refusal(step, False) is None
    return not get_tags(step).requires_fit or isinstance(step, _SHAPE_ONLY)


def streaming_pipeline(pipeline: Pipeline, X) -> StreamingPipeline:
    """An unfitted :class:`StreamingPipeline` of ``pipeline``'s steps.

    Encoders with ``categories="auto"`` on the input's own columns (the first
    step, or a part of a first ``ColumnTransformer``) get the categories their
    ``fit`` finds in all of ``X`` (the way ``classes`` are fixed from all of
    ``y``): every fold then encodes alike, as ``fit`` on all rows would.

    Parameters
    ----------
    pipeline : Pipeline
        The user's pipeline.
    X : array-like
        All the rows the runs will see.

    Returns
    -------
    pipeline : StreamingPipeline
    """
    params = pipeline.get_params(deep=False)
    steps = [(name, clone(step)) for name, step in params.pop("steps")]
    streaming = StreamingPipeline(steps, **params)
    if X is not None and steps:
        name, first = steps[0]
        streaming.steps[0] = (name, _with_categories(first, X))
    return streaming


def _with_categories(step, X):
    """``step`` with the categories of its encoders on ``X``'s columns fixed."""
    if isinstance(step, _ENCODERS) and _auto(step):
        return step.set_params(categories=_categories(step, X))
    if isinstance(step, ColumnTransformer):
        transformers = []
        for name, child, columns in step.transformers:
            if isinstance(child, _ENCODERS) and _auto(child):
                part = _safe_indexing(X, columns, axis=1)
                child = clone(child).set_params(categories=_categories(child, part))
            transformers.append((name, child, columns))
        step.set_params(transformers=transformers)
    return step


def _auto(encoder) -> bool:
    params = encoder.get_params()
    return (
        isinstance(params["categories"], str)
        and params.get("min_frequency") is None
        and not params.get("max_categories")
    )


def _categories(encoder, X) -> list[np.ndarray]:
    """The categories the encoder's own ``fit`` finds in ``X``."""
    return [np.asarray(c) for c in clone(encoder).fit(X).categories_]


def _short(step, limit: int = 60) -> str:
    text = " ".join(repr(step).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
