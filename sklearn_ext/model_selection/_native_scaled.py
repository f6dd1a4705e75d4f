"""A running scaler before a native learner, in the native tree's node state.

``Pipeline([StandardScaler() | MinMaxScaler() | MaxAbsScaler(), learner])``,
with a linear learner of :mod:`sklearn_ext.linear_model` last, streams in the
regime of every pipeline through the tree (a :class:`TreeCVEstimator` around a
:class:`StreamingPipeline`, batches of ``STREAM_BATCH_SIZE`` rows): each batch
updates the scaler with scikit-learn's ``partial_fit`` operations, is
transformed by the updated scaler and fed to the learner; a fold's waiting
rows are fed as one last batch. The kernel
(:class:`~sklearn_ext._fast._sgd.ScaledSGDModel`) keeps the scaler's running
statistics and the waiting rows in the node state, so the native tree runs
such a pipeline as it runs the bare learner, and its fold models are those of
the Python tree on the same pipeline, bit for bit.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.pipeline import Pipeline

from sklearn_ext.model_selection._estimator import TreeCVEstimator
from sklearn_ext.model_selection._scoring import native_metric
from sklearn_ext.model_selection._streaming import StreamingPipeline
from sklearn_ext.utils._scalers import setting_refusal, split_scaled, step_words

__all__ = [
    "native_model",
    "scaled_parts",
    "scaled_refusal",
]

_ENGINE = "the native tree"


def scaled_parts(estimator):
    """``((scaler name, scaler), (learner name, learner))`` of a pipeline the
    native tree may run, or None.

    ``estimator`` is the user's ``Pipeline`` (or ``StreamingPipeline``), or the
    :class:`TreeCVEstimator` around one that the run core scores: one of the
    scalers our engines fit per fold (:func:`~sklearn_ext.utils._scalers.split_scaled`,
    passthrough steps skipped), then a learner that declares ``_native_scaled``.
    """
    if isinstance(estimator, TreeCVEstimator):
        estimator = estimator.estimator
    if type(estimator) not in (Pipeline, StreamingPipeline):
        return None
    parts = split_scaled(estimator)
    if parts is None or parts[0] is None:
        return None
    if not getattr(parts[1][1], "_native_scaled", False):
        return None
    return parts


def scaled_refusal(estimator, X) -> str | None:
    """Why the native tree cannot run this scaled pipeline on ``X``, or None.

    Names the step and the parameter (or what about ``X``) it does not run;
    ``None`` for an estimator that is not such a pipeline.
    """
    parts = scaled_parts(estimator)
    if parts is None:
        return None
    (name, scaler), _ = parts
    what = step_words(name, scaler)
    params = scaler.get_params()
    kind = type(scaler).__name__
    if kind == "StandardScaler":
        if not (params["with_mean"] or params["with_std"]):
            setting = "with_mean=False and with_std=False"
            return setting_refusal(name, scaler, setting, _ENGINE)
    elif kind == "MinMaxScaler":
        low, high = params["feature_range"]
        if not low < high:
            setting = f"feature_range={params['feature_range']!r}"
            return setting_refusal(name, scaler, setting, _ENGINE)
    if sp.issparse(X):
        return f"X is sparse, and {_ENGINE} runs {what} on dense rows only"
    dtype = _dtype(X)
    if dtype is None or not (dtype == np.float64 or dtype.kind in "biu"):
        return (
            f"{what} would scale X of dtype {dtype} in that dtype, and "
            f"{_ENGINE} runs it on float64 rows only"
        )
    return None


def _dtype(X):
    """The dtype ``X`` is checked into (a DataFrame's common one), or None."""
    dtypes = getattr(X, "dtypes", None)
    if dtypes is not None and not isinstance(X, np.ndarray):
        try:
            return np.result_type(*[np.dtype(d) for d in dtypes])
        except TypeError:
            return None
    dtype = getattr(X, "dtype", None)
    return np.asarray(X).dtype if dtype is None else np.dtype(dtype)


def native_model(task):
    """``(kernel, rebuild)`` of the task's estimator, for the native tree.

    A native learner's own ``_native_model``; for a scaled pipeline (the
    :class:`TreeCVEstimator` the run core scores) the learner's kernel with
    the running scaler, and ``rebuild(state)`` the fitted wrapper that the
    Python tree's fold has: the scaler's statistics and the learner of the
    leaf's state, its waiting rows fed.
    """
    estimator = task.estimator
    if callable(getattr(estimator, "_native_model", None)):
        return clone(estimator)._native_model(task)
    (scaler_name, scaler), (learner_name, learner) = scaled_parts(estimator)
    batch_size = int(getattr(estimator, "batch_size", 0) or 0)
    if not isinstance(estimator, TreeCVEstimator) or batch_size < 1:
        raise TypeError(
            "The native tree runs a scaled pipeline in the streaming regime: "
            f"a TreeCVEstimator around it; got {type(estimator).__name__}."
        )
    metric = task.metric
    if metric == "score":  # Pipeline.score is the learner's on the scaled rows
        metric = native_metric(learner, None)
    learner_task = dataclasses.replace(
        task,
        metric=metric,
    )
    learner = clone(learner)
    model, rebuild_learner = learner._native_model(
        learner_task, _scaler_settings(scaler, batch_size)
    )

    def rebuild(state: np.ndarray) -> TreeCVEstimator:
        leaf = model.flushed(np.ascontiguousarray(state, dtype=np.float64))
        fitted = rebuild_learner(leaf[: model.n_learner_state].copy())
        return _fold_model(
            estimator,
            (scaler_name, scaler),
            (learner_name, fitted),
            model,
            leaf,
            task.classes,
        )

    return model, rebuild


def _scaler_settings(scaler, batch_size: int) -> dict:
    """The kernel's ``scaler`` dict of a scikit-learn scaler."""
    from sklearn_ext._fast._sgd import SCALERS

    params = scaler.get_params()
    low, high = params.get("feature_range", (0.0, 1.0))
    return {
        "kind": SCALERS[type(scaler).__name__],
        "with_mean": bool(params.get("with_mean", True)),
        "with_std": bool(params.get("with_std", True)),
        "clip": bool(params.get("clip", False)),
        "low": float(low),
        "high": float(high),
        "batch_size": batch_size,
    }


def _fold_model(wrapper, scaler_step, learner_step, model, state, classes):
    """A fitted ``TreeCVEstimator`` as the Python tree's fold: its stream set."""
    scaler_name, scaler = scaler_step
    scaler = clone(scaler)
    arrays = model.scaler_arrays(state)
    count = arrays.pop("n_samples_seen_")
    n_features = len(arrays["scale_"])
    if type(scaler).__name__ == "StandardScaler":
        scaler.mean_ = arrays["mean_"]
        scaler.var_ = arrays["var_"] if scaler.with_std else None
        scaler.scale_ = arrays["scale_"] if scaler.with_std else None
        scaler.n_samples_seen_ = np.int64(count)
    else:
        for name, value in arrays.items():
            setattr(scaler, name, value)
        if hasattr(scaler, "data_min_"):
            scaler.data_range_ = scaler.data_max_ - scaler.data_min_
        scaler.n_samples_seen_ = int(count)
    scaler.n_features_in_ = n_features
    fitted = clone(wrapper)
    pipeline = clone(wrapper.estimator)
    pipeline.steps = [
        (name, scaler if name == scaler_name else learner_step[1])
        if name in (scaler_name, learner_step[0])
        else (name, step)
        for name, step in pipeline.steps
    ]
    if isinstance(pipeline, StreamingPipeline):
        pipeline.n_batches_ = math.ceil(count / wrapper.batch_size)
    fitted._set_stream(pipeline, classes, int(count))
    fitted.n_samples_fed_ = int(count)
    fitted.n_samples_reused_ = 0
    fitted.n_features_in_ = n_features
    return fitted
