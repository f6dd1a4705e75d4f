"""Many batches of the streaming regime in one call, for (scaler ->) SGD classifiers.

The streaming regime (:mod:`._regime`) feeds a learner whose updates depend
on batching in fixed batches of ``STREAM_BATCH_SIZE`` rows; a pipeline's batch
first updates every step, is transformed and fed to the learner. Through the
public methods each batch of ``make_pipeline(StandardScaler(),
SGDClassifier())`` costs about a millisecond of validation, class weights,
seeds and dataset set-up for a few dozen microseconds of learning, which made
the default learner slower through the tree than its one-pass configuration
through ``cross_validate``.

:func:`batch_kernel` recognises a fitted ``SGDClassifier`` or ``Perceptron``,
alone or after a ``StandardScaler`` in a :class:`StreamingPipeline`, in the
settings where scikit-learn's ``partial_fit`` is one epoch of ``_plain_sgd``
that the Cython kernel ``sklearn_ext._fast._stream.sgd_stream`` reproduces
bit for bit (see its module docstring); :class:`SGDBatchKernel` then feeds any
number of full batches in one call, drawing each call's seeds as
``partial_fit`` draws them. :class:`TreeCVEstimator` uses it for every full
batch after the first, so the tree's fold models, the refit model and a
user's ``partial_fit`` are the same models as before, only faster; the tests
check them against the public methods. A ``StandardScaler`` before a native
learner of this package gets :class:`ScaledRowsKernel`: all the batches scaled
in one call, then one ``partial_fit`` of the row-by-row learner.
"""

from __future__ import annotations

import functools

import numpy as np
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler

from sklearn_ext.utils._scalers import split_scaled

__all__ = ["SGDBatchKernel", "ScaledRowsKernel", "batch_kernel"]

_LEARNERS = {
    ("sklearn.linear_model._stochastic_gradient", "SGDClassifier"),
    ("sklearn.linear_model._perceptron", "Perceptron"),
}
#: Scalers before a native learner: their running state is a minimum and a
#: maximum per feature, updated for all the batches of a call at once.
_RANGE_SCALERS = (MinMaxScaler, MaxAbsScaler)
_MAX_INT = np.iinfo(np.int32).max


def _exact_class(obj, names) -> bool:
    cls = type(obj)
    return (cls.__module__, cls.__name__) in names


def _parts(model):
    """``(scaler or None, learner)`` of a stream the kernel may run, or None.

    A pipeline's scaler is one that our engines fit per fold
    (:func:`~sklearn_ext.utils._scalers.split_scaled`); which learners
    it may precede is decided in :func:`batch_kernel`.
    """
    from sklearn_ext.model_selection._streaming import StreamingPipeline

    if not isinstance(model, StreamingPipeline):
        return None, model
    parts = split_scaled(model) if type(model) is StreamingPipeline else None
    if parts is None:
        return None
    scaler, (_, learner) = parts
    return (None if scaler is None else scaler[1]), learner


def _streams_rows(learner) -> bool:
    """A native learner of this package: ``partial_fit`` row by row, in order.

    Its state carries over calls untouched (the weights' scale included), so
    ``partial_fit(A); partial_fit(B)`` is ``partial_fit(A + B)``, bit for bit.
    """
    return bool(getattr(learner, "_treecv_row_stream", False)) and hasattr(
        learner, "_state"
    )


def _scaler_arrays(scaler) -> dict:
    """Copies of a fitted scaler's state, as the kernels take it."""
    return {
        "mean": np.array(scaler.mean_),
        "var": np.array(scaler.var_) if scaler.with_std else None,
        "scale": np.array(scaler.scale_) if scaler.with_std else None,
        "count": float(scaler.n_samples_seen_),
        "with_mean": bool(scaler.with_mean),
        "with_std": bool(scaler.with_std),
    }


def _set_scaler(scaler, state: dict, count: float) -> None:
    scaler.mean_ = state["mean"]
    if scaler.with_std:
        scaler.var_, scaler.scale_ = state["var"], state["scale"]
    scaler.n_samples_seen_ = np.float64(count)


def _range_state(scaler) -> bool:
    """A fitted MinMaxScaler or MaxAbsScaler on dense float64 rows."""
    names = ("max_abs_",) if hasattr(scaler, "max_abs_") else ("data_min_", "data_max_")
    return all(
        isinstance(getattr(scaler, name, None), np.ndarray)
        and getattr(scaler, name).dtype == np.float64
        for name in names
    )


def _range_batches(scaler, X: np.ndarray, batch_size: int) -> np.ndarray:
    """``partial_fit`` then ``transform`` of a MinMax/MaxAbs scaler, batch by batch.

    The running minimum and maximum after each batch are cumulative minima
    and maxima (exact), so every batch's scale is computed at once, with the
    scaler's own operations; the scaler is left in the state of the last batch.
    """
    n_batches = len(X) // batch_size
    batches = X.reshape(n_batches, batch_size, X.shape[1])
    if hasattr(scaler, "max_abs_"):
        seen = np.vstack([scaler.max_abs_, np.abs(batches).max(axis=1)])
        max_abs = np.maximum.accumulate(seen, axis=0)[1:]
        scale = _handle_zeros(max_abs)
        scaled = batches / scale[:, None, :]
        scaler.max_abs_, scaler.scale_ = max_abs[-1], scale[-1]
    else:
        low, high = scaler.feature_range
        data_min = np.minimum.accumulate(
            np.vstack([scaler.data_min_, batches.min(axis=1)]), axis=0
        )[1:]
        data_max = np.maximum.accumulate(
            np.vstack([scaler.data_max_, batches.max(axis=1)]), axis=0
        )[1:]
        data_range = data_max - data_min
        scale = (np.float64(high) - np.float64(low)) / _handle_zeros(data_range)
        offset = np.float64(low) - data_min * scale
        scaled = batches * scale[:, None, :]
        scaled += offset[:, None, :]
        if scaler.clip:
            np.clip(scaled, low, high, out=scaled)
        scaler.data_min_, scaler.data_max_ = data_min[-1], data_max[-1]
        scaler.data_range_, scaler.scale_, scaler.min_ = (
            data_range[-1],
            scale[-1],
            offset[-1],
        )
    scaler.n_samples_seen_ += n_batches * batch_size
    return scaled.reshape(X.shape)


def _handle_zeros(scale: np.ndarray) -> np.ndarray:
    """scikit-learn's ``_handle_zeros_in_scale`` (near-zero scales become 1)."""
    scale = scale.copy()
    scale[scale < 10 * np.finfo(scale.dtype).eps] = 1.0
    return scale


def _scaler_state(scaler) -> bool:
    """Whether a fitted scaler's state is the dense, NaN-free one the kernel updates."""
    if not (scaler.with_mean or scaler.with_std):
        return False
    count = getattr(scaler, "n_samples_seen_", None)
    if count is None or np.ndim(count) != 0 or not count > 0:
        return False
    arrays = [scaler.mean_] + ([scaler.var_, scaler.scale_] if scaler.with_std else [])
    return all(
        isinstance(a, np.ndarray) and a.dtype == np.float64 and a.ndim == 1
        for a in arrays
    )


def _learner_settings(learner) -> dict | None:
    """The kernel's arguments for a fitted learner, or None where it does not apply."""
    from sklearn_ext._fast import _stream

    if not _exact_class(learner, _LEARNERS) or not hasattr(learner, "t_"):
        return None
    coef = getattr(learner, "coef_", None)
    if not (
        isinstance(coef, np.ndarray)
        and coef.dtype == np.float64
        and coef.flags.c_contiguous
        and coef.flags.writeable
    ):
        return None
    if learner.average or learner.early_stopping or learner.penalty not in (None, "l2"):
        return None
    if learner.verbose:
        return None  # _plain_sgd's epoch report is left to partial_fit
    if isinstance(learner.class_weight, str):
        return None
    loss = learner._loss_function_
    kind = _stream.LOSSES.get(type(loss).__name__)
    if kind is None or type(loss).__module__ != "sklearn.linear_model._sgd_fast":
        return None
    rate = _stream.LEARNING_RATES.get(learner.learning_rate)
    if rate is None:
        return None
    alpha = float(learner.alpha)
    if rate == _stream.LEARNING_RATES["optimal"]:
        # _plain_sgd's initial step: for these losses the gradient at
        # (1, -typw) is at most 1, so eta0 = typw.
        typw = np.sqrt(1.0 / np.sqrt(alpha))
        optimal_init = 1.0 / (typw / 1.0 * alpha)
    else:
        optimal_init = 0.0
    reduced = loss.__reduce__()[1]
    return {
        "loss": kind,
        "threshold": float(reduced[0]) if reduced else 0.0,
        "l2": learner.penalty == "l2",
        "alpha": alpha,
        "rate": rate,
        "eta0": float(learner.eta0),
        "power_t": float(learner.power_t),
        "optimal_init": float(optimal_init),
        "fit_intercept": bool(learner.fit_intercept),
    }


def batch_kernel(model) -> SGDBatchKernel | None:
    """The kernel that feeds full batches to the fitted ``model``, or None.

    Parameters
    ----------
    model : estimator object
        The learner of a :class:`TreeCVEstimator` (its ``_stream``) after at
        least one batch: an ``SGDClassifier`` or ``Perceptron`` (exact
        classes) with a hinge, perceptron, squared-hinge or modified-Huber
        loss, an L2 penalty or none, a constant, optimal or inverse-scaling
        learning rate, no averaging, no early stopping, no ``"balanced"``
        class weights, float64 weights and an int ``random_state`` (or, for
        a binary problem, ``None`` or a ``RandomState``), not verbose; a
        :class:`StreamingPipeline` of a ``StandardScaler`` and such a learner;
        or one of a ``StandardScaler`` and a native learner of this package
        (:class:`ScaledRowsKernel`).

    Returns
    -------
    kernel : SGDBatchKernel, ScaledRowsKernel or None
    """
    parts = _parts(model)
    if parts is None:
        return None
    scaler, learner = parts
    if type(scaler) in _RANGE_SCALERS:
        if not (_streams_rows(learner) and _range_state(scaler)):
            return None
        return ScaledRowsKernel(scaler, learner)
    if scaler is not None and not _scaler_state(scaler):
        return None
    if _streams_rows(learner):
        return None if scaler is None else ScaledRowsKernel(scaler, learner)
    settings = _learner_settings(learner)
    if settings is None:
        return None
    seed = learner.random_state
    fixed = isinstance(seed, int | np.integer) and not isinstance(seed, bool)
    if not fixed and len(learner.classes_) > 2:
        return None  # one-vs-rest seeds of a generator: left to partial_fit
    return SGDBatchKernel(scaler, learner, settings, fixed)


@functools.lru_cache(maxsize=64)
def _fixed_seeds(random_state: int, n_problems: int) -> np.ndarray:
    """The shuffle seeds every call of an int-seeded learner draws, per problem."""
    if n_problems == 1:
        states = [np.random.RandomState(random_state)]
    else:
        seeds = np.random.RandomState(random_state).randint(_MAX_INT, size=n_problems)
        states = [np.random.RandomState(seed) for seed in seeds]
    row = []
    for rs in states:
        rs.randint(1, _MAX_INT)  # the dataset's seed, unused
        row.append(rs.randint(_MAX_INT))
    seeds = np.array(row, dtype=np.uint32)
    seeds.flags.writeable = False
    return seeds


class SGDBatchKernel:
    """Full batches of the streaming regime fed to one fitted stream.

    Parameters
    ----------
    scaler : StandardScaler or None
        The stream's fitted scaler, updated in place.
    learner : SGDClassifier or Perceptron
        The stream's fitted learner, updated in place.
    settings : dict
        The kernel arguments from the learner's parameters.
    fixed_seed : bool
        Whether ``random_state`` is an int (every call draws the same seeds).
    """

    def __init__(self, scaler, learner, settings: dict, fixed_seed: bool) -> None:
        self.scaler = scaler
        self.learner = learner
        self.settings = settings
        self.fixed_seed = fixed_seed

    def _seeds(self, n_batches: int, n_problems: int) -> np.ndarray:
        """The shuffle seed of each call and one-vs-rest problem, as fit_binary draws.

        Each call draws, per problem, the dataset's seed and then the
        shuffle seed from ``check_random_state(random_state)``; for several
        classes the problems' generators are seeded from it first
        (``_fit_multiclass``).
        """
        from sklearn.utils import check_random_state

        learner = self.learner
        if self.fixed_seed:
            row = _fixed_seeds(int(learner.random_state), n_problems)
            return np.tile(row, (n_batches, 1))
        rs = check_random_state(learner.random_state)
        seeds = np.empty((n_batches, 1), dtype=np.uint32)
        for b in range(n_batches):
            rs.randint(1, _MAX_INT)  # the dataset's seed, unused
            seeds[b, 0] = rs.randint(_MAX_INT)
        return seeds

    def __call__(self, stream, X: np.ndarray, y: np.ndarray, batch_size: int) -> int:
        """Feed the full batches of ``X`` (rows in order); the rows fed.

        ``stream`` is the model the kernel was made for (a pipeline's
        ``n_batches_`` is counted on it).
        """
        from sklearn_ext._fast._stream import sgd_stream

        learner, scaler = self.learner, self.scaler
        n_batches = len(X) // batch_size
        if n_batches == 0:
            return 0
        n = n_batches * batch_size
        X, y = X[:n], y[:n]
        classes = learner.classes_
        positives = [classes[1]] if len(classes) == 2 else list(classes)
        targets = np.empty((len(positives), n))
        for k, label in enumerate(positives):
            targets[k] = np.where(y == label, 1.0, -1.0)
        weights = learner._expanded_class_weight
        if len(classes) == 2:
            pos, neg = np.array([weights[1]]), np.array([weights[0]])
        else:
            pos, neg = np.asarray(weights, dtype=float), np.ones(len(classes))
        kwargs = {} if scaler is None else _scaler_arrays(scaler)
        intercept = np.array(learner.intercept_, dtype=np.float64)
        t, count, failed = sgd_stream(
            np.ascontiguousarray(X, dtype=np.float64),
            batch_size,
            targets,
            learner.coef_,
            intercept,
            pos,
            neg,
            self._seeds(n_batches, len(positives)),
            bool(learner.shuffle),
            t=float(learner.t_),
            **self.settings,
            **kwargs,
        )
        fed = n_batches if failed < 0 else failed
        learner.intercept_ = intercept
        learner.t_ = t
        learner.n_iter_ = 1
        if scaler is not None:
            _set_scaler(scaler, kwargs, count)
        if hasattr(stream, "n_batches_"):
            stream.n_batches_ += fed + (failed >= 0)
        if failed >= 0:
            raise ValueError(
                "Floating-point under-/overflow occurred at epoch #1. Scaling "
                "input data with StandardScaler or MinMaxScaler might help."
            )
        return n


class ScaledRowsKernel:
    """Full batches of a ``StandardScaler`` before a native learner, in one call.

    Each batch updates the scaler and is scaled by it (one Cython call for
    all the batches, ``sklearn_ext._fast._stream.scale_batches``); the
    learner, whose updates are row by row and carry over calls, then takes all
    the scaled batches in one ``partial_fit``: the model of one
    ``partial_fit`` per batch, bit for bit.

    Parameters
    ----------
    scaler : StandardScaler
        The stream's fitted scaler, updated in place.
    learner : estimator object
        The stream's fitted native learner (``PegasosClassifier``...).
    """

    def __init__(self, scaler, learner) -> None:
        self.scaler = scaler
        self.learner = learner

    def __call__(self, stream, X: np.ndarray, y, batch_size: int) -> int:
        """Feed the full batches of ``X`` (rows in order); the rows fed."""
        from sklearn_ext._fast._stream import scale_batches

        n = (len(X) // batch_size) * batch_size
        if n == 0:
            return 0
        X = np.ascontiguousarray(X[:n], dtype=np.float64)
        if type(self.scaler) in _RANGE_SCALERS:
            scaled = _range_batches(self.scaler, X, batch_size)
        else:
            scaled = np.empty_like(X)
            state = _scaler_arrays(self.scaler)
            count = scale_batches(X, batch_size, out=scaled, **state)
            _set_scaler(self.scaler, state, count)
        self.learner.partial_fit(scaled, y[:n])
        if hasattr(stream, "n_batches_"):
            stream.n_batches_ += n // batch_size
        return n
