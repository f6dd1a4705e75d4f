"""Per-run shortcuts of the Python tree for scikit-learn's SGD classifiers.

On small data a ``partial_fit`` call of ``SGDClassifier`` costs far more than
the learning it does: input validation, class weights, sample weights and a
joblib loop over the one-vs-rest problems run on every call, and the per-leaf
scorer validates again. :class:`SGDClassifierUpdate` does, for the second and
later calls on a model, exactly what ``BaseSGDClassifier._partial_fit`` does
once the model is fitted (the same ``_plain_sgd`` calls with the same
arguments, seeds and class weights), with everything that depends only on the
run computed once: the data converted once, the one-vs-rest targets built
once, the seeds drawn once. :func:`fast_accuracy` scores a linear classifier
as ``accuracy_score(y, model.predict(X))`` does, without the validation.

Both are checked against the public methods in the tests (equal models, equal
scores, bit for bit); they apply only to the exact classes and settings listed
in :func:`sgd_classifier_update`, and the tree uses the public methods for
anything else.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.pipeline import Pipeline
from sklearn.utils.extmath import safe_sparse_dot

from sklearn_ext.model_selection._estimator import TreeCVEstimator

__all__ = [
    "SGDClassifierUpdate",
    "StreamUpdate",
    "fast_accuracy",
    "sgd_classifier_update",
    "stream_update",
]

_SGD_CLASSES = {
    ("sklearn.linear_model._stochastic_gradient", "SGDClassifier"),
    ("sklearn.linear_model._perceptron", "Perceptron"),
    ("sklearn.linear_model._passive_aggressive", "PassiveAggressiveClassifier"),
}


def _internals():
    """scikit-learn's SGD kernels, or None where this version lacks them."""
    try:
        from sklearn.linear_model import _stochastic_gradient as sgd
        from sklearn.utils._seq_dataset import ArrayDataset32, ArrayDataset64
    except ImportError:  # pragma: no cover - another scikit-learn layout
        return None
    needed = ("_plain_sgd32", "_plain_sgd64", "MAX_INT", "_prepare_fit_binary")
    if not all(hasattr(sgd, name) for name in needed):  # pragma: no cover
        return None
    return sgd, ArrayDataset32, ArrayDataset64


def sgd_classifier_update(estimator, X, fit_params) -> SGDClassifierUpdate | None:
    """The run's shortcut for ``estimator.partial_fit``, or None.

    It applies to ``SGDClassifier``, ``Perceptron`` and
    ``PassiveAggressiveClassifier`` (exact classes) on dense data without
    fit parameters, with ``average=False``, ``early_stopping=False``, no
    ``"balanced"`` class weights and an int ``random_state`` (or ``None``
    with ``shuffle=False``, where no random number is used): the settings in
    which every call's seeds and weights are the same.
    """
    cls = type(estimator)
    if (cls.__module__, cls.__name__) not in _SGD_CLASSES or fit_params:
        return None
    if sp.issparse(X) or not isinstance(X, np.ndarray) or X.ndim != 2:
        return None
    params = {"average": False, "shuffle": True, **estimator.get_params()}
    random_state = params["random_state"]
    seeded = isinstance(random_state, int | np.integer) and not isinstance(
        random_state, bool
    )
    if not (seeded or (random_state is None and not params["shuffle"])):
        return None
    if params["average"] or params["early_stopping"]:
        return None
    if isinstance(params["class_weight"], str):
        return None
    internals = _internals()
    if internals is None:  # pragma: no cover
        return None
    return SGDClassifierUpdate(estimator, X, internals)


class SGDClassifierUpdate:
    """``partial_fit`` of a fitted SGD classifier on rows of one run's data.

    Parameters
    ----------
    estimator : SGDClassifier, Perceptron or PassiveAggressiveClassifier
        The run's (unfitted) estimator; its parameters fix every constant.
    X : ndarray of shape (n_samples, n_features)
        The run's rows, in the order the keys given to :meth:`__call__` index.
    internals : tuple
        scikit-learn's SGD module and dataset classes.
    """

    def __init__(self, estimator, X: np.ndarray, internals) -> None:
        self._sgd, dataset32, dataset64 = internals
        # partial_fit's own conversion: float32 stays, anything else is float64.
        dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.float64
        self.X = np.ascontiguousarray(X, dtype=dtype)
        self._dataset = dataset32 if dtype == np.float32 else dataset64
        self._plain_sgd = self._sgd._get_plain_sgd_function(input_dtype=dtype)
        self._estimator = estimator
        self._ones = np.ones(X.shape[0], dtype=dtype)
        self._no_validation = np.zeros(X.shape[0], dtype=np.bool_)
        self._targets: list[np.ndarray] | None = None

    def _prepare(self, model, y: np.ndarray) -> None:
        """Constants that need the fitted model: targets, seeds, kernel arguments."""
        est = self._estimator
        sgd = self._sgd
        name = type(est).__name__
        if name == "PassiveAggressiveClassifier":
            alpha, learning_rate = 1.0, "pa1" if est.loss == "hinge" else "pa2"
        else:
            alpha, learning_rate = est.alpha, est.learning_rate
        classes = model.classes_
        binary = len(classes) == 2
        positives = [1] if binary else list(range(len(classes)))
        label_encode = type(model._loss_function_).__name__ == "CyHalfBinomialLoss"
        self._targets = []
        for i in positives:
            y_i, *_ = sgd._prepare_fit_binary(
                model, y, i, input_dtype=self.X.dtype, label_encode=label_encode
            )
            self._targets.append(y_i)
        # The seeds each call draws: from random_state for a binary problem,
        # from one seed per class for one-vs-rest (fit_binary, _fit_multiclass).
        if est.random_state is None:
            self._seeds = [(1, 0)] * len(positives)  # unused: no shuffling
        else:
            if binary:
                states = [np.random.RandomState(est.random_state)]
            else:
                seeds = np.random.RandomState(est.random_state).randint(
                    sgd.MAX_INT, size=len(classes)
                )
                states = [np.random.RandomState(seed) for seed in seeds]
            self._seeds = [
                (rs.randint(1, np.iinfo(np.int32).max), rs.randint(sgd.MAX_INT))
                for rs in states
            ]
        weights = model._expanded_class_weight
        self._weights = (
            [(weights[1], weights[0])]
            if binary
            else [(weights[i], 1.0) for i in positives]
        )
        self._binary = binary
        self._constants = (
            est._get_penalty_type(est.penalty),
            alpha,
            est._get_l1_ratio(),
            int(est.n_iter_no_change),
            est.tol if est.tol is not None else -np.inf,
            int(est.fit_intercept),
            int(est.verbose),
            int(est.shuffle),
            est._get_learning_rate_type(learning_rate),
            est.eta0,
            est.power_t,
        )

    def __call__(self, model, key, y: np.ndarray) -> None:
        """Update the fitted ``model`` with the rows ``key`` of the run's data.

        ``y`` is the run's whole target, indexed by the same ``key``.
        """
        if self._targets is None:
            self._prepare(model, y)
        X = self.X[key]
        n_samples = X.shape[0]
        sample_weight = self._ones[:n_samples]
        mask = self._no_validation[:n_samples]
        (
            penalty,
            alpha,
            l1_ratio,
            n_iter_no_change,
            tol,
            fit_intercept,
            verbose,
            shuffle,
            learning_rate,
            eta0,
            power_t,
        ) = self._constants
        loss = model._loss_function_
        t = model.t_
        n_iter = 0.0
        for i, target in enumerate(self._targets):
            dataset_seed, seed = self._seeds[i]
            dataset = self._dataset(X, target[key], sample_weight, seed=dataset_seed)
            coef = model.coef_.ravel() if self._binary else model.coef_[i]
            intercept = model.intercept_[0 if self._binary else i]
            pos_weight, neg_weight = self._weights[i]
            coef, intercept, _, _, n_iter_i = self._plain_sgd(
                coef,
                intercept,
                None,
                0,
                loss,
                penalty,
                alpha,
                l1_ratio,
                dataset,
                mask,
                False,
                None,
                n_iter_no_change,
                1,
                tol,
                fit_intercept,
                verbose,
                shuffle,
                seed,
                pos_weight,
                neg_weight,
                learning_rate,
                eta0,
                power_t,
                0,
                t,
                1.0,
                0,
            )
            if self._binary:
                model.t_ += n_iter_i * n_samples
                model.n_iter_ = n_iter_i
                model.coef_ = coef.reshape(1, -1)
                model.intercept_ = np.atleast_1d(intercept)
                return
            model.intercept_[i] = intercept
            n_iter = max(n_iter, n_iter_i)
        model.t_ += n_iter * n_samples
        model.n_iter_ = n_iter


def stream_update(estimator, X: np.ndarray, fit_params) -> StreamUpdate | None:
    """The run's shortcut for a :class:`TreeCVEstimator`'s later ``partial_fit``.

    The run core has checked the rows once (finite, numeric); the wrapper's
    ``partial_fit`` would check each chunk again. Applies to float64 rows
    without fit parameters; the model is the one ``partial_fit`` gives.
    """
    if type(estimator) is not TreeCVEstimator or fit_params:
        return None
    if X.dtype != np.float64:
        return None
    return StreamUpdate(X)


class StreamUpdate:
    """Feed rows ``key`` of the run's (checked) data to a started wrapper."""

    def __init__(self, X: np.ndarray) -> None:
        self.X = X

    def __call__(self, model, key, y) -> None:
        rows = None if y is None else y[key]
        model._stream_rows(self.X[key], rows, {}, finite=True)


def _predicts_linearly(cls) -> bool:
    return (
        getattr(cls, "predict", None) is LinearClassifierMixin.predict
        and getattr(cls, "decision_function", None)
        is LinearClassifierMixin.decision_function
    )


def fast_accuracy(estimator, metric) -> Any:
    """``accuracy_score(y, model.predict(X))`` for linear classifiers, or None.

    Applies when the run's native metric (``CVTask.metric``) is
    ``"accuracy"`` and the model predicts with scikit-learn's
    ``LinearClassifierMixin``, on dense data, also inside a
    :class:`TreeCVEstimator` (alone or as a pipeline's last step, after
    the other steps' ``transform``). Returns
    ``score(model, X, y) -> {"score": float}``.
    """
    if metric != "accuracy":
        return None
    if type(estimator) is TreeCVEstimator:
        inner = estimator.estimator
        if isinstance(inner, Pipeline):
            inner = inner.steps[-1][1]
        return _wrapped_accuracy if _predicts_linearly(type(inner)) else None
    return _linear_accuracy if _predicts_linearly(type(estimator)) else None


def _wrapped_accuracy(model, X, y) -> dict[str, float]:
    """What ``TreeCVEstimator.score`` gives for a linear classifier inside."""
    inner = model.estimator_
    if isinstance(inner, Pipeline):
        for _, step in inner.steps[:-1]:
            if not (step is None or step == "passthrough"):
                X = step.transform(X)
        inner = inner.steps[-1][1]
    return _linear_accuracy(inner, X, y)


def _linear_accuracy(model, X, y) -> dict[str, float]:
    if sp.issparse(X) or y is None or y.ndim != 1:
        raise _NotApplicable
    coef = model.coef_
    scores = safe_sparse_dot(X, coef.T if coef.ndim == 2 else coef, dense_output=True)
    scores = scores + model.intercept_
    if scores.ndim > 1 and scores.shape[1] == 1:
        scores = scores.reshape(-1)
    if scores.ndim == 1:
        indices = (scores > 0).astype(np.intp)
    else:
        indices = scores.argmax(axis=1)
    predicted = np.take(model.classes_, indices, axis=0)
    return {"score": float(np.average(y == predicted))}


class _NotApplicable(Exception):
    """The shortcut does not apply to these rows; use the scorer."""
