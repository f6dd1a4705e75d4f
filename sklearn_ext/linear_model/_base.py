"""Shared machinery of the native incremental linear learners.

Every learner keeps its model as one flat float64 state array (``_state``): the
weight vectors in scaled form, their squared norms, the step counter and, for
averaged learners, the averaged iterate. The Cython kernel
:class:`sklearn_ext._fast._sgd.SGDModel` updates it row by row, for
``partial_fit`` and for the native TreeCV engine, which copies, pushes and pops
it along the recursion tree (``_native_model`` hands it the kernel).
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    RegressorMixin,
    clone,
)
from sklearn.utils import check_array, check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    column_or_1d,
    validate_data,
)

from sklearn_ext._fast import _sgd
from sklearn_ext.utils._fitted_state import FittedStateMixin
from sklearn_ext.utils._prefix_cache import (
    PrefixCache,
    PrefixEpochMixin,
)

#: Values per block of the data-scale pass (256 KiB of float64).
_SCALE_BLOCK = 1 << 15

__all__ = [
    "BaseNativeClassifier",
    "BaseNativeRegressor",
    "BaseNativeSGD",
    "as_kernel_input",
]


def as_kernel_input(X):
    """``(data, indices, indptr)`` of a validated dense array or CSR matrix.

    Dense rows are passed as the raveled C-ordered array with empty
    ``indices``/``indptr``; CSR indices are cast to intp. Explicit zeros stored in
    a CSR matrix are ordinary zero values: they change nothing in the model.
    """
    empty = np.empty(0, dtype=np.intp)
    if sp.issparse(X):
        return (
            np.ascontiguousarray(X.data),
            np.ascontiguousarray(X.indices, dtype=np.intp),
            np.ascontiguousarray(X.indptr, dtype=np.intp),
        )
    return np.ascontiguousarray(X).reshape(-1), empty, empty


def _data_scale(X) -> float:
    """``max |X|`` in one pass and without a copy of ``X``."""
    values = X.data if sp.issparse(X) else X.reshape(-1)
    scale = 0.0
    # Blocks that stay in cache: max and min cost one pass over memory, and
    # no BLAS call (whose threads stall on a loaded machine).
    for start in range(0, values.size, _SCALE_BLOCK):
        block = values[start : start + _SCALE_BLOCK]
        scale = max(scale, float(block.max()), -float(block.min()))
    return scale


class BaseNativeSGD(FittedStateMixin, PrefixEpochMixin, BaseEstimator):
    """Base of the learners whose state the native tree can copy, push and pop.

    Subclasses set ``_loss``, ``_schedule`` and ``_average`` and implement
    ``_kernel_params``; ``fit`` runs ``max_iter`` epochs (shuffled when
    ``shuffle=True``), ``partial_fit`` one pass over the rows in the given order.
    """

    _loss: str
    _schedule: str
    #: ``partial_fit`` updates row by row in the given order (how rows are
    #: batched does not matter) and ``fit`` is ``max_iter`` such passes: what
    #: the run core reads, without importing this package.
    _treecv_row_stream = True
    _average: bool

    _parameter_constraints: dict = {
        "fit_intercept": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
        "cache": [StrOptions({"memory"}), PrefixCache, None],
    }

    # -- hooks --------------------------------------------------------------------
    def _kernel_params(self) -> dict:
        raise NotImplementedError

    def _n_models(self) -> int:
        return 1

    def _encode_y(self, y) -> np.ndarray:
        return np.asarray(y, dtype=np.float64)

    # -- training -----------------------------------------------------------------
    def _validate_X_y(self, X, y, reset: bool):
        return validate_data(
            self,
            X,
            y,
            reset=reset,
            accept_sparse="csr",
            dtype=[np.float64, np.float32],
            order="C",
            y_numeric=not isinstance(self, ClassifierMixin),
        )

    def _check_data_scale(self, X) -> None:
        """Raise if the kernel's squared row norms of ``X`` overflow float64."""
        scale = _data_scale(X)
        if scale > np.sqrt(np.finfo(np.float64).max / (X.shape[1] + 1)):
            # The kernel's squared row norms would overflow: no step applies.
            raise ValueError(
                f"X holds values up to {scale:.3g} in absolute value, too large "
                f"for {type(self).__name__}: the squared row norms overflow "
                f"float64, so no step ({self._step_size()}) can be taken. Scale "
                "the input data, e.g. with StandardScaler or MinMaxScaler."
            )

    def _init_state(self, n_features: int) -> None:
        self._state = _sgd.new_state(self._n_models(), n_features, self._average)

    def _kernel(
        self, X, y_encoded, sample_weight, scoring=None, scaler=None
    ) -> _sgd.SGDModel:
        """The row kernel on the validated ``X`` (see :class:`_sgd.SGDModel`).

        ``scaler`` (a dict, see :class:`_sgd.ScaledSGDModel`): a running scaler
        before the learner, on dense float64 ``X``.
        """
        data, indices, indptr = as_kernel_input(X)
        if scaler is not None:
            return _sgd.ScaledSGDModel(
                self._kernel_params(),
                self._n_models(),
                data,
                X.shape[1],
                np.ascontiguousarray(y_encoded, dtype=np.float64),
                sample_weight,
                scoring,
                scaler,
            )
        return _sgd.SGDModel(
            self._kernel_params(),
            self._n_models(),
            data,
            indices,
            indptr,
            X.shape[1],
            np.ascontiguousarray(y_encoded, dtype=np.float64),
            sample_weight,
            scoring,
        )

    def _feed(self, X, y_encoded, sample_weight, rows) -> None:
        self._kernel(X, y_encoded, sample_weight).feed_rows(
            self._state, np.ascontiguousarray(rows, dtype=np.intp)
        )
        self._check_finite_state(X)

    def _step_size(self) -> str:
        """The step-size rule in words, for the overflow error."""
        params = self._kernel_params()
        if params["schedule"] == "invsqrt":
            return f"eta_t = eta0 / sqrt(t) with eta0={params['eta0']:g}"
        return f"eta_t = 1 / (alpha * t) with alpha={params['alpha']:g}"

    def _check_finite_state(self, X=None) -> None:
        """Raise instead of keeping weights that overflowed (the kernel cannot).

        scikit-learn's SGD raises on overflow too; a model with infinite or NaN
        weights would predict one class whatever the input. The data scale of
        ``X`` is looked at only then, so that valid runs do not pay a pass over
        ``X`` (data too large for the squared row norms gets its own message).
        """
        if np.all(np.isfinite(self._state)):
            return
        if X is not None:
            self._check_data_scale(X)
        scale = "unknown" if X is None else f"{_data_scale(X):.3g}"
        raise ValueError(
            f"The weights of {type(self).__name__} overflowed to infinity or NaN "
            f"after {int(self._state[0])} updates: the step size "
            f"({self._step_size()}) times the data scale (max |X| = {scale}) "
            "is too large for float64. Scale the input data, e.g. with "
            "StandardScaler or MinMaxScaler."
        )

    def _sample_weight(self, sample_weight, X):
        if sample_weight is None:
            return None
        return _check_sample_weight(sample_weight, X, dtype=np.float64)

    def _prepare_targets(self, y, classes, first_call: bool) -> None:
        """Hook for classifiers: set ``classes_`` on the first call."""

    def fit(self, X, y, sample_weight=None):
        """Fit the model with ``max_iter`` passes of stochastic gradient descent.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data (dense or CSR, float32 or float64), finite.
        y : array-like of shape (n_samples,)
            Target values (class labels for classifiers).
        sample_weight : array-like of shape (n_samples,), default=None
            Weights multiplying each row's gradient step.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._validate_params()
        X, y = self._validate_X_y(X, y, reset=True)
        self._prepare_targets(y, None, first_call=True)
        sample_weight = self._sample_weight(sample_weight, X)
        y_encoded = self._encode_y(y)
        self._init_state(X.shape[1])
        rng = check_random_state(self.random_state)
        rows = np.arange(X.shape[0], dtype=np.intp)
        epochs = range(self.max_iter)
        cache = self._resolve_cache()
        if cache is not None and not self.shuffle:
            self._first_epoch_from_prefix(
                cache,
                identity=(getattr(self, "classes_", None), X.shape[1], X.dtype.str),
                columns=[X, y_encoded, sample_weight],
                feed_rows=lambda rows: self._feed(X, y_encoded, sample_weight, rows),
            )
            epochs = range(1, self.max_iter)
        for _ in epochs:
            if self.shuffle:
                rng.shuffle(rows)
            self._feed(X, y_encoded, sample_weight, rows)
        self.n_iter_ = self.max_iter
        self._sync_attributes()
        return self

    def _partial_fit(self, X, y, classes, sample_weight):
        first_call = not hasattr(self, "_state")
        if first_call:
            self._validate_params()
        X, y = self._validate_X_y(X, y, reset=first_call)
        self._prepare_targets(y, classes, first_call=first_call)
        sample_weight = self._sample_weight(sample_weight, X)
        if first_call:
            self._init_state(X.shape[1])
        rows = np.arange(X.shape[0], dtype=np.intp)
        self._feed(X, self._encode_y(y), sample_weight, rows)
        self.n_iter_ = 1
        self._sync_attributes()
        return self

    # -- the native tree ------------------------------------------------------------
    #: Leaf metrics the kernel computes in C (``scoring=None`` is the first,
    #: the mixin's ``score``).
    _native_metrics: tuple[str, ...] = (
        "r2",
        "neg_mean_squared_error",
        "neg_root_mean_squared_error",
        "neg_mean_absolute_error",
    )

    def _native_targets(self, y, classes) -> np.ndarray:
        """``y`` as the kernel reads it, for the whole data set of a CV run."""
        y = check_array(y, ensure_2d=False, dtype=np.float64, input_name="y")
        if y.ndim == 2 and y.shape[1] == 1:
            y = column_or_1d(y, warn=True)  # as fit takes a column vector
        if y.ndim != 1:
            raise ValueError(
                f"{type(self).__name__} needs a 1d target y, got shape {y.shape}."
            )
        return y

    #: The native tree may run this learner after a running scaler in a
    #: pipeline (:class:`~sklearn_ext._fast._sgd.ScaledSGDModel`).
    _native_scaled = True

    def _native_model(self, task, scaler=None):
        """The kernel on a CV task's data, for the native tree.

        Parameters
        ----------
        task : CVTask
            The run (``X``, ``y``, ``fit_params``, ``classes``, ``scoring``).
        scaler : dict, default=None
            A running scaler before this learner (the ``scaler`` of
            :class:`~sklearn_ext._fast._sgd.ScaledSGDModel`); ``X`` must then
            be dense.

        Returns
        -------
        model : sklearn_ext._fast._sgd.SGDModel
            The row kernel, scoring leaves in C when ``task.metric`` (the
            run's native metric) is one of ``_native_metrics``.
        rebuild : callable
            ``rebuild(state)`` is this estimator fitted to the model ``state``
            (the learner's part of it, after a scaler).
        """
        self._validate_params()
        X = check_array(
            task.X,
            accept_sparse="csr",
            dtype=[np.float64, np.float32],
            order="C",
            input_name="X",
        )
        y = self._native_targets(task.y, task.classes)
        unknown = sorted(set(task.fit_params) - {"sample_weight"})
        if unknown:
            raise ValueError(
                f"The native tree supports only sample_weight in fit_params; got "
                f"{unknown}. Use method='standard' or a Python learner for others."
            )
        sample_weight = self._sample_weight(task.fit_params.get("sample_weight"), X)
        scoring = task.metric if task.metric in self._native_metrics else None
        model = self._kernel(X, y, sample_weight, scoring, scaler)
        classes, n_features = getattr(self, "classes_", None), X.shape[1]

        def rebuild(state: np.ndarray) -> BaseNativeSGD:
            estimator = clone(self)
            if classes is not None:
                estimator.classes_ = classes
            estimator.n_features_in_ = n_features
            estimator._state = state
            estimator._check_finite_state(X)
            estimator.n_iter_ = 1
            estimator._sync_attributes()
            return estimator

        return model, rebuild

    # -- model ----------------------------------------------------------------------
    def _sync_attributes(self) -> None:
        """Expose ``coef_``, ``intercept_`` and ``t_`` from the state."""
        self._check_finite_state()
        K = self._n_models()
        n_features = self.n_features_in_
        D = n_features + 1
        state = self._state
        if self._average:
            weights = state[2 + 2 * K + K * D : 2 + 2 * K + 2 * K * D].reshape(K, D)
            weights = weights / state[1] if state[1] > 0 else weights * 0.0
        else:
            v = state[2 + 2 * K : 2 + 2 * K + K * D].reshape(K, D)
            weights = v * state[2 : 2 + K, None]
        self.coef_ = np.ascontiguousarray(weights[:, :n_features])
        if self.fit_intercept:
            self.intercept_ = weights[:, n_features].copy()
        else:
            self.intercept_ = np.zeros(K)
        self.t_ = float(state[0])

    def _decision(self, X) -> np.ndarray:
        check_is_fitted(self, "_state")
        X = validate_data(
            self,
            X,
            reset=False,
            accept_sparse="csr",
            dtype=[np.float64, np.float32],
            order="C",
        )
        data, indices, indptr = as_kernel_input(X)
        return _sgd.decision(
            self._state,
            self._kernel_params(),
            self._n_models(),
            data,
            indices,
            indptr,
            X.shape[1],
            X.shape[0],
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class BaseNativeClassifier(ClassifierMixin, BaseNativeSGD):
    """Binary or one-vs-rest multiclass classifier on the native kernel."""

    _native_metrics = ("accuracy",)

    def _native_targets(self, y, classes) -> np.ndarray:
        # A column vector is taken as fit takes it (with a DataConversionWarning).
        y = column_or_1d(y, warn=True)
        self._prepare_targets(y, classes, first_call=True)
        return self._encode_y(y)

    def _n_models(self) -> int:
        n_classes = len(self.classes_)
        return 1 if n_classes == 2 else n_classes

    def _prepare_targets(self, y, classes, first_call: bool) -> None:
        check_classification_targets(y)
        if first_call:
            if classes is None:
                classes = np.unique(y)
            classes = np.unique(np.asarray(classes))
            if classes.shape[0] < 2:
                raise ValueError(
                    f"{type(self).__name__} needs samples of at least 2 classes in "
                    f"the data, but the data contain only one class: "
                    f"{classes[0]!r}."
                )
            self.classes_ = classes
        unknown = _unknown_labels(y, self.classes_)
        if unknown.size:
            raise ValueError(
                f"y contains labels {unknown.tolist()} that are not in classes "
                f"{self.classes_.tolist()}."
            )

    def _encode_y(self, y) -> np.ndarray:
        return np.searchsorted(self.classes_, y).astype(np.float64)

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Update the model with one pass over the rows, in the given order.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training rows (dense or CSR, float32 or float64), finite.
        y : array-like of shape (n_samples,)
            Class labels.
        classes : array-like of shape (n_classes,), default=None
            All class labels. Required on the first call; ignored afterwards.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights multiplying each row's gradient step.

        Returns
        -------
        self : object
            The updated estimator.
        """
        if not hasattr(self, "_state") and classes is None:
            raise ValueError("classes must be passed on the first call to partial_fit.")
        return self._partial_fit(X, y, classes, sample_weight)

    def decision_function(self, X):
        """Signed distance of each row to the separating hyperplane(s).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            One column per class for multiclass (one-vs-rest), a vector for
            binary problems (positive means ``classes_[1]``).
        """
        scores = self._decision(X)
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        """Class label of each row.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows to classify.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted class labels.
        """
        scores = self._decision(X)
        if scores.shape[1] == 1:
            index = (scores[:, 0] > 0).astype(np.intp)
        else:
            index = scores.argmax(axis=1)
        return self.classes_[index]


class BaseNativeRegressor(RegressorMixin, BaseNativeSGD):
    """Regressor on the native kernel."""

    def partial_fit(self, X, y, sample_weight=None):
        """Update the model with one pass over the rows, in the given order.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training rows (dense or CSR, float32 or float64), finite.
        y : array-like of shape (n_samples,)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights multiplying each row's gradient step.

        Returns
        -------
        self : object
            The updated estimator.
        """
        return self._partial_fit(X, y, None, sample_weight)

    def predict(self, X):
        """Predicted target of each row.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows to predict.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        return self._decision(X)[:, 0]


def _unknown_labels(y, classes) -> np.ndarray:
    """The labels of ``y`` missing from the sorted ``classes``, sorted.

    Numeric labels are looked up by bisection in ``classes`` (no sort of ``y``:
    the native tree's CV runs check all of ``y`` once per run).
    """
    y, classes = np.asarray(y), np.asarray(classes)
    if y.dtype.kind not in "biuf" or classes.dtype.kind not in "biuf":
        return np.setdiff1d(np.unique(y), classes)
    position = np.minimum(np.searchsorted(classes, y), len(classes) - 1)
    missing = classes[position] != y
    return np.unique(y[missing]) if missing.any() else y[:0]
