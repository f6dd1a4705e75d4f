"""A per-fold scaler in front of an exact learner, from per-chunk sums and extremes.

``Pipeline([scaler, learner])`` with ``StandardScaler``, ``MinMaxScaler`` or
``MaxAbsScaler``: each fold's scaler is fit on the fold's training rows, as in
``cross_validate``. Its fit is a function of per-chunk statistics (the count,
sum and sum of squares of each column for ``StandardScaler``; each column's
least and greatest value, or greatest absolute value, for the others), so the
fold's scaler is known from the totals minus the held-out chunk, or the
extremes of the other chunks, without reading its rows. Its transform maps
each column affinely, ``Z = (X - offset) * factor + origin``; a learner whose
statistics are moments of ``X`` (Gram matrices, class means and covariances)
has the same statistics on ``Z`` mapped column by column.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.pipeline import Pipeline

from sklearn_ext.model_selection._backends import _as_slice
from sklearn_ext.model_selection._exact._layout import _Chunks
from sklearn_ext.utils._scalers import (
    active_steps,
    scaler_refusal,
    split_scaled,
    step_words,
)

__all__ = [
    "_FoldScaler",
    "_Scaled",
    "_ScalerStats",
    "pipeline_refusal",
    "scaler_key",
]

_ENGINE = "the exact backend"


def pipeline_refusal(pipeline: Pipeline, X) -> str | None:
    """Why the exact backend cannot fold this pipeline's steps, naming the step.

    Its steps before the learner, passthrough ones skipped, must be one of
    the scalers our engines fit per fold
    (:func:`~sklearn_ext.utils._scalers.scaler_refusal`), with the default
    (NumPy) output, on dense ``X``.
    """
    reason = scaler_refusal(pipeline, _ENGINE)
    if reason is not None:
        return reason
    front = active_steps(pipeline.steps)[:-1]
    for name, step in front:
        if _output_container(pipeline, step) != "default":
            return (
                f"{step_words(name, step)} outputs a DataFrame (set_output), which "
                "the exact backend's fold models do not reproduce"
            )
    if front and sp.issparse(X):
        return (
            f"{step_words(*front[0])} scales sparse X; the exact backend scales "
            "dense X only"
        )
    return None


def _output_container(pipeline, step) -> str:
    config = getattr(step, "_sklearn_output_config", {}) or {}
    own = getattr(pipeline, "_sklearn_output_config", {}) or {}
    return config.get("transform", own.get("transform", "default"))


def scaler_key(scaler) -> tuple:
    """The scaler's parameters that change the statistics (``clip`` does not)."""
    if scaler is None:
        return ()
    name = type(scaler).__name__
    if name == "StandardScaler":
        return (name, bool(scaler.with_mean), bool(scaler.with_std))
    if name == "MinMaxScaler":
        return (name, tuple(float(v) for v in scaler.feature_range))
    return (name,)


def _check_scaler(scaler) -> None:
    """The scaler's parameters checked as its ``fit`` checks them."""
    scaler._validate_params()
    if type(scaler).__name__ == "MinMaxScaler":
        low, high = scaler.feature_range
        if low >= high:
            raise ValueError(
                "Minimum of desired feature range must be smaller than maximum. "
                f"Got {tuple(scaler.feature_range)!r}."
            )


@dataclass
class _Scaled:
    """A pipeline the exact backend runs: its scaler (or none) and its learner.

    ``pipeline`` is the unfitted pipeline (what a fold the statistics cannot
    make is fit as); fold models are returned as copies of it holding the
    fold's fitted scaler and learner.
    """

    pipeline: Pipeline
    scaler_name: str | None
    scaler: object
    learner_name: str

    @classmethod
    def of(cls, pipeline: Pipeline) -> _Scaled:
        scaler_step, (learner_name, _) = split_scaled(pipeline)
        if scaler_step is None:
            return cls(pipeline, None, None, learner_name)
        _check_scaler(scaler_step[1])
        return cls(pipeline, *scaler_step, learner_name)

    def assemble(self, fold: _FoldScaler | None, learner) -> Pipeline:
        """The fitted pipeline of one fold: its scaler and its learner."""
        fitted = copy.copy(self.pipeline)
        steps = []
        for name, step in self.pipeline.steps:
            if name == self.learner_name:
                step = learner
            elif name == self.scaler_name:
                step = fold.fitted(step)
                step.n_features_in_ = learner.n_features_in_
            steps.append((name, step))
        fitted.steps = steps
        return fitted


@dataclass
class _FoldScaler:
    """A fold's scaler: its fitted attributes and its map of each column.

    ``transform(X) = (X - offset) * factor + origin``; ``constant`` marks the
    columns constant on the fold's training rows (their centred moments are
    exactly zero, whatever the rounding of the sums).
    """

    attributes: dict
    offset: np.ndarray
    factor: np.ndarray
    origin: np.ndarray
    constant: np.ndarray

    def centred_points(self, shift: np.ndarray, mean_from_shift: np.ndarray):
        """Transformed points given as ``shift + mean_from_shift`` (rows or a vector).

        ``shift - offset`` is formed first, so a fold mean near the shift
        keeps its digits.
        """
        return ((shift - self.offset) + mean_from_shift) * self.factor + self.origin

    def transform_exactly(self, values: np.ndarray) -> np.ndarray:
        """``values`` transformed with the scaler's own operations.

        Bit for bit what its ``transform`` gives for columns whose fitted
        attributes are ``fit``'s to the bit (the constant columns).
        """
        attributes = self.attributes
        values = np.array(values, dtype=np.float64)
        if "max_abs_" in attributes:
            return values / attributes["scale_"]
        if "data_min_" in attributes:
            values *= attributes["scale_"]
            values += attributes["min_"]
            return values
        if attributes.get("mean_") is not None:
            values -= self.offset  # the mean, or zeros without centring
        if attributes.get("scale_") is not None:
            values /= attributes["scale_"]
        return values

    def fitted(self, scaler):
        """A copy of ``scaler`` with the fold's fitted attributes."""
        fitted = copy.copy(scaler)
        for name, value in self.attributes.items():
            setattr(fitted, name, value)
        return fitted


class _ScalerStats:
    """Per-chunk counts, shifted sums and sums of squares, least and greatest values.

    Columns are shifted by their mean over all rows before the sums, so that
    a fold's variance (mean of squares minus squared mean) cancels no leading
    digits. Each fold's extremes are those of the other chunks, from prefix
    and suffix extremes of the chunks'.
    """

    def __init__(self, X, chunks: _Chunks, scaler) -> None:
        self.scaler = scaler
        self.name = type(scaler).__name__
        k, n_features = chunks.n_chunks, X.shape[1]
        self.n_features = n_features
        self.sizes = chunks.sizes.astype(np.int64)
        self.shift = X.mean(axis=0)
        self.chunk_s1 = np.zeros((k, n_features))
        self.chunk_s2 = np.zeros((k, n_features))
        low = np.full((k, n_features), np.inf)
        high = np.full((k, n_features), -np.inf)
        for chunk in range(k):
            part = X[_as_slice(chunks.rows(chunk))]
            if part.shape[0] == 0:
                continue
            D = part - self.shift
            self.chunk_s1[chunk] = D.sum(axis=0)
            self.chunk_s2[chunk] = np.einsum("ij,ij->j", D, D)
            low[chunk] = part.min(axis=0)
            high[chunk] = part.max(axis=0)
        self.s1 = self.chunk_s1.sum(axis=0)
        self.s2 = self.chunk_s2.sum(axis=0)
        self.low_before, self.low_after = _running(low, np.minimum, np.inf)
        self.high_before, self.high_after = _running(high, np.maximum, -np.inf)

    def extremes(self, leaf: int) -> tuple[np.ndarray, np.ndarray]:
        """Each column's least and greatest value on the fold's training rows."""
        low = np.minimum(self.low_before[leaf], self.low_after[leaf + 1])
        high = np.maximum(self.high_before[leaf], self.high_after[leaf + 1])
        return low, high

    def fold(self, leaf: int) -> _FoldScaler:
        """The scaler that ``fit`` on fold ``leaf``'s training rows makes.

        The last fold asked is kept: its model, its pipeline and its score
        each ask for it in turn.
        """
        last = getattr(self, "_last", None)
        if last is not None and last[0] == leaf:
            return last[1]
        fold = self._fold(leaf)
        self._last = (leaf, fold)
        return fold

    def _fold(self, leaf: int) -> _FoldScaler:
        n = int(self.sizes.sum() - self.sizes[leaf])
        low, high = self.extremes(leaf)
        constant = low == high
        zeros = np.zeros(self.n_features)
        if self.name == "StandardScaler":
            return self._standard(leaf, n, constant)
        if self.name == "MinMaxScaler":
            lower, upper = (float(v) for v in self.scaler.feature_range)
            data_range = high - low
            scale = (upper - lower) / _handle_zeros(data_range)
            attributes = {
                "n_samples_seen_": n,
                "data_min_": low,
                "data_max_": high,
                "data_range_": data_range,
                "scale_": scale,
                "min_": lower - low * scale,
            }
            origin = np.full(self.n_features, lower)
            return _FoldScaler(attributes, low, scale, origin, constant)
        max_abs = np.maximum(np.abs(low), np.abs(high))
        scale = _handle_zeros(max_abs)
        attributes = {"n_samples_seen_": n, "max_abs_": max_abs, "scale_": scale}
        return _FoldScaler(attributes, zeros, 1.0 / scale, zeros, constant)

    def _standard(self, leaf: int, n: int, constant: np.ndarray) -> _FoldScaler:
        scaler, d = self.scaler, self.n_features
        zeros, ones = np.zeros(d), np.ones(d)
        if not (scaler.with_mean or scaler.with_std):
            attributes = {
                "n_samples_seen_": np.int64(n),
                "mean_": None,
                "var_": None,
                "scale_": None,
            }
            return _FoldScaler(attributes, zeros, ones, zeros, constant)
        m1 = (self.s1 - self.chunk_s1[leaf]) / n
        mean = self.shift + m1
        # A constant column's mean is its value, exactly (low == high).
        mean[constant] = self.extremes(leaf)[0][constant]
        attributes = {"n_samples_seen_": np.float64(n), "mean_": mean}
        offset = mean if scaler.with_mean else zeros
        if not scaler.with_std:
            attributes.update(var_=None, scale_=None)
            return _FoldScaler(attributes, offset, ones, zeros, constant)
        var = np.maximum((self.s2 - self.chunk_s2[leaf]) / n - m1 * m1, 0.0)
        var[constant] = 0.0
        eps = np.finfo(np.float64).eps
        near_constant = constant | (var <= n * eps * var + (n * mean * eps) ** 2)
        scale = np.sqrt(var)
        scale[near_constant] = 1.0
        attributes.update(var_=var, scale_=scale)
        return _FoldScaler(attributes, offset, 1.0 / scale, zeros, constant)


def _handle_zeros(scale: np.ndarray) -> np.ndarray:
    """``_handle_zeros_in_scale`` of scikit-learn: near-zero scales become 1."""
    scale = scale.copy()
    scale[scale < 10 * np.finfo(scale.dtype).eps] = 1.0
    return scale


def _running(values: np.ndarray, reduce, edge: float):
    """Extremes of the chunks before each chunk and from each chunk on."""
    pad = np.full((1, values.shape[1]), edge)
    before = reduce.accumulate(np.vstack([pad, values]), axis=0)
    after = reduce.accumulate(np.vstack([pad, values[::-1]]), axis=0)[::-1]
    return before, after
