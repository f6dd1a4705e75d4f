"""Semi-supervised anomaly detection (SSAD) trained by stochastic subgradient steps."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, OutlierMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_ext._fast import _ssad
from sklearn_ext.anomaly._features import cached_features, draw_weights, resolve_gamma
from sklearn_ext.anomaly._labels import auroc, training_labels
from sklearn_ext.utils._fitted_state import FittedStateMixin
from sklearn_ext.utils._prefix_cache import (
    PrefixCache,
    PrefixEpochMixin,
)

__all__ = ["SemiSupervisedAnomalyDetector"]


class SemiSupervisedAnomalyDetector(
    FittedStateMixin, PrefixEpochMixin, OutlierMixin, BaseEstimator
):
    r"""Semi-supervised anomaly detection (SSAD) with random Fourier features.

    The SSAD of Görnitz, Kloft, Rieck and Brefeld (2013) learns a threshold
    ``rho`` on ``f(x) = <w, phi(x)>``: unlabelled rows should score above
    ``rho``, labelled normal rows above ``rho + gamma_m`` and labelled anomalies
    below ``rho - gamma_m``, where the margin ``gamma_m >= 0`` is itself
    rewarded with weight ``kappa``. ``phi`` are ``n_components`` random Fourier
    features of the RBF kernel ``exp(-gamma ||x - x'||^2)`` (drawn as in
    :class:`sklearn.kernel_approximation.RBFSampler`), so the learner is linear
    in ``phi`` and trained by stochastic subgradient steps.

    With labels :math:`y_i \in \{+1, -1, 0\}` (0 = unlabelled), the objective
    over the :math:`n` training rows is

    .. math::

        J(w, \rho, \gamma_m) = \frac12 \left(\|w\|^2 + \rho^2 + \gamma_m^2\right)
            - \rho - \kappa \gamma_m + \frac1n \sum_{i=1}^n \ell_i,

        \ell_i = \begin{cases}
            \eta_u \max(0,\ \rho - \langle w, \phi(x_i)\rangle) & y_i = 0, \\
            \eta_l \max(0,\ \gamma_m - y_i (\langle w, \phi(x_i)\rangle - \rho))
                & y_i = \pm 1,
        \end{cases}

    minimised over :math:`w`, :math:`\rho` and :math:`\gamma_m \ge 0`. It is the
    paper's primal (slack sums divided by ``n``) plus
    :math:`\frac12(\rho^2 + \gamma_m^2)`, which makes it 1-strongly convex in all
    variables and bounded below for every positive setting (the paper's primal
    is unbounded when the slack weights are small, like a one-class SVM with
    ``nu > 1``). Row ``i``, at step ``t`` (counted over all rows fed), takes a
    subgradient step of size ``1 / t`` on :math:`J` restricted to that row (the
    PEGASOS schedule for a 1-strongly convex objective); the model is the last
    iterate.

    Without labelled anomalies (or without any labels) the learner is a
    one-class method: unlabelled rows are pushed above ``rho`` and labelled
    normal rows above ``rho + gamma_m``.

    ``decision_function`` is :math:`\langle w, \phi(x)\rangle - \rho`: positive
    for normal rows, negative for anomalies, like
    :class:`sklearn.svm.OneClassSVM`; :meth:`score` is the area under the ROC
    curve of ``decision_function`` with the normal class positive.

    Parameters
    ----------
    eta_u : float, default=1.0
        Weight of the slack of unlabelled rows (the paper's :math:`\eta_u`).
        Must be positive.
    eta_l : float, default=1.0
        Weight of the slack of labelled rows (:math:`\eta_l`). Must be
        non-negative; 0 ignores the labels.
    kappa : float, default=1.0
        Weight of the margin :math:`\gamma_m` (:math:`\kappa`). Must be
        non-negative; 0 keeps the margin at 0.
    gamma : {"scale", "auto"} or float, default="scale"
        Width of the RBF kernel ``exp(-gamma ||x - x'||^2)``, as in
        :class:`sklearn.svm.OneClassSVM`: ``"scale"`` uses
        ``1 / (n_features * X.var())`` of the training rows, ``"auto"`` uses
        ``1 / n_features``, a float must be positive. :meth:`fit` resolves it
        from the rows it is given, :meth:`partial_fit` from the rows of its
        first call; the value is ``gamma_``. TreeCV's native tree resolves
        ``"scale"`` once from all rows of the CV run, the rows a final ``fit``
        resolves it from (see the native tree backend and ``docs/anomaly.md``).
    n_components : int, default=200
        Number of random Fourier features. The default was chosen by
        measuring detection quality against cost (``docs/anomaly.md``): with
        fewer features the AUROC depends more on ``random_state``; training
        and scoring time grow linearly with it.
    max_iter : int, default=1
        Passes over the data in :meth:`fit`; :meth:`partial_fit` makes one.
        With the defaults (``max_iter=1, shuffle=False``) :meth:`fit` is one
        ordered pass, the model TreeCV scores for each fold, so a search's
        refit is the model its score describes.
    shuffle : bool, default=False
        Whether :meth:`fit` shuffles the rows before each pass.
    random_state : int, RandomState instance or None, default=None
        Seed of the random features and of the shuffling. With an int, the
        features of the rows passed to :meth:`fit` and :meth:`partial_fit` are
        kept in a bounded in-process cache (256 MiB, least recently used out)
        keyed by a digest of ``X`` and ``(gamma_, n_components, random_state)``,
        so fits that differ only in ``eta_u``, ``eta_l`` or ``kappa`` (or
        standard CV feeding the same chunk to several folds) compute them once.
    cache : "memory", PrefixCache or None, default=None
        Share training prefixes between fits (e.g. the folds of a search with
        ``cv=TreeCVSplitter(k)``): with ``shuffle=False`` the first pass of
        :meth:`fit` feeds the rows in the given order in batches of 1024 and
        resumes from the longest prefix found in the cache; the model is the
        same as without it. Ignored when ``shuffle=True``. With
        ``gamma="scale"`` each fit resolves its kernel width from its own rows,
        so the folds of a search share no prefix: pass a number (e.g. the
        ``gamma_`` of a fit on all rows) to share them.

    Attributes
    ----------
    coef_ : ndarray of shape (n_components,)
        The weights ``w`` in feature space.
    offset_ : float
        The threshold ``rho``: ``decision_function = score_samples - offset_``.
    margin_ : float
        The margin :math:`\gamma_m`.
    gamma_ : float
        The kernel width used, ``gamma`` resolved from the training rows.
    random_weights_ : ndarray of shape (`n_features_in_`, n_components)
        Random projection directions, ``N(0, 2 * gamma_)``.
    random_offset_ : ndarray of shape (n_components,)
        Random phases, uniform on ``[0, 2 pi)``.
    t_ : float
        Number of rows fed since the model was initialised.
    n_iter_ : int
        Passes made by the last call to :meth:`fit` (1 after :meth:`partial_fit`).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    sklearn.svm.OneClassSVM : The unsupervised kernel one-class SVM.
    sklearn.linear_model.SGDOneClassSVM : Linear one-class SVM by SGD.

    References
    ----------
    N. Görnitz, M. Kloft, K. Rieck and U. Brefeld, "Toward supervised anomaly
    detection", Journal of Artificial Intelligence Research 46, 2013.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.anomaly import SemiSupervisedAnomalyDetector
    >>> rng = np.random.RandomState(0)
    >>> X = np.r_[rng.normal(size=(200, 2)), rng.uniform(-6, 6, size=(20, 2))]
    >>> y = np.r_[np.ones(200), -np.ones(20)]
    >>> labeled = rng.rand(len(y)) < 0.2  # reveal 20 % of the labels
    >>> ssad = SemiSupervisedAnomalyDetector(eta_u=10, eta_l=10, random_state=0)
    >>> ssad = ssad.fit(X, y, labeled=labeled)
    >>> bool(ssad.gamma_ == 1 / (2 * X.var()))  # gamma="scale"
    True
    >>> ssad.score(X, y) > 0.9  # AUROC with all true labels
    True
    >>> normal, far = ssad.decision_function([[0.0, 0.0], [6.0, 6.0]])
    >>> bool(normal > far)  # the centre of the data is more normal
    True
    """

    #: ``partial_fit`` updates row by row in the given order and ``fit`` is
    #: ``max_iter`` such passes (read by the run core without importing this).
    _treecv_row_stream = True

    _parameter_constraints: dict = {
        "eta_u": [Interval(Real, 0, None, closed="neither")],
        "eta_l": [Interval(Real, 0, None, closed="left")],
        "kappa": [Interval(Real, 0, None, closed="left")],
        "gamma": [
            StrOptions({"scale", "auto"}),
            Interval(Real, 0, None, closed="neither"),
        ],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
        "cache": [StrOptions({"memory"}), PrefixCache, None],
    }

    def __init__(
        self,
        eta_u=1.0,
        eta_l=1.0,
        kappa=1.0,
        gamma="scale",
        *,
        n_components=200,
        max_iter=1,
        shuffle=False,
        random_state=None,
        cache=None,
    ):
        self.eta_u = eta_u
        self.eta_l = eta_l
        self.kappa = kappa
        self.gamma = gamma
        self.n_components = n_components
        self.max_iter = max_iter
        self.shuffle = shuffle
        self.random_state = random_state
        self.cache = cache

    # -- helpers -------------------------------------------------------------------
    def _kernel_args(self) -> tuple[float, float, float]:
        return float(self.eta_u), float(self.eta_l), float(self.kappa)

    def _validate_X(self, X, reset: bool):
        return validate_data(
            self, X, reset=reset, dtype=np.float64, order="C", ensure_min_samples=1
        )

    def _draw_features(self, X, rng=None) -> None:
        """Resolve ``gamma`` from the rows ``X`` and draw the random features."""
        rng = check_random_state(self.random_state) if rng is None else rng
        self.gamma_ = resolve_gamma(self.gamma, X)
        self.random_weights_, self.random_offset_ = draw_weights(
            rng, X.shape[1], int(self.n_components), self.gamma_
        )

    def _features(self, X, cached: bool = False) -> np.ndarray:
        if cached:
            return cached_features(
                X,
                self.random_weights_,
                self.random_offset_,
                self.gamma_,
                self.n_components,
                self.random_state,
            )
        from sklearn_ext.anomaly._features import random_features

        return random_features(X, self.random_weights_, self.random_offset_)

    def _feed(self, phi, y_train, rows) -> None:
        _ssad.SSADModel(*self._kernel_args(), phi, y_train).feed_rows(
            self._state, np.ascontiguousarray(rows, dtype=np.intp)
        )

    # -- training ------------------------------------------------------------------
    def fit(self, X, y=None, labeled=None):
        """Fit the detector with ``max_iter`` passes of stochastic subgradient steps.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows, finite.
        y : array-like of shape (n_samples,), default=None
            Labels: +1 normal, -1 anomaly, 0 unlabelled. ``None`` means all
            rows are unlabelled (a one-class method).
        labeled : array-like of bool of shape (n_samples,), default=None
            Which labels of ``y`` training may see; the others count as
            unlabelled. With cross-validation, pass the true labels as ``y``
            (every held-out fold is scored with them) and the revealed ones
            as ``labeled``. ``None`` reveals all of ``y``.

        Returns
        -------
        self : object
            The fitted detector.
        """
        self._validate_params()
        cache = self._resolve_cache()
        X = self._validate_X(X, reset=True)
        y_train = training_labels(y, labeled, X.shape[0], type(self).__name__)
        rng = check_random_state(self.random_state)
        self._draw_features(X, rng)
        phi = self._features(X, cached=True)
        self._state = _ssad.new_state(int(self.n_components))
        rows = np.arange(X.shape[0], dtype=np.intp)
        epochs = range(self.max_iter)
        if cache is not None and not self.shuffle:
            self._first_epoch_from_prefix(
                cache,
                identity=(self.random_weights_, self.random_offset_),
                columns=[X, y_train],
                feed_rows=lambda rows: self._feed(phi, y_train, rows),
            )
            epochs = range(1, self.max_iter)
        for _ in epochs:
            if self.shuffle:
                rng.shuffle(rows)
            self._feed(phi, y_train, rows)
        self.n_iter_ = self.max_iter
        self._sync_attributes()
        return self

    def partial_fit(self, X, y=None, labeled=None):
        """Update the detector with one pass over the rows, in the given order.

        The first call resolves ``gamma`` from its rows and draws the random
        features (from ``random_state``); later calls keep them.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows, finite.
        y : array-like of shape (n_samples,), default=None
            Labels: +1 normal, -1 anomaly, 0 unlabelled (``None``: all
            unlabelled).
        labeled : array-like of bool of shape (n_samples,), default=None
            Which labels of ``y`` training may see (``None``: all).

        Returns
        -------
        self : object
            The updated detector.
        """
        first_call = not hasattr(self, "_state")
        if first_call:
            self._validate_params()
        X = self._validate_X(X, reset=first_call)
        y_train = training_labels(y, labeled, X.shape[0], type(self).__name__)
        if first_call:
            self._draw_features(X)
            self._state = _ssad.new_state(int(self.n_components))
        phi = self._features(X, cached=True)
        self._feed(phi, y_train, np.arange(X.shape[0], dtype=np.intp))
        self.n_iter_ = 1
        self._sync_attributes()
        return self

    def _sync_attributes(self) -> None:
        state = self._state
        self.coef_ = state[_ssad.OFFSET :] * state[1]
        self.offset_ = float(state[2])
        self.margin_ = float(state[3])
        self.t_ = float(state[0])

    # -- model ---------------------------------------------------------------------
    def decision_function(self, X):
        """Signed score: positive for normal rows, negative for anomalies.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            ``<w, phi(x)> - rho``.
        """
        check_is_fitted(self, "_state")
        X = self._validate_X(X, reset=False)
        return _ssad.decision(self._state, self._features(X))

    def score_samples(self, X):
        """Raw normality score ``<w, phi(x)>`` (higher is more normal).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            ``decision_function(X) + offset_``.
        """
        return self.decision_function(X) + self.offset_

    def predict(self, X):
        """+1 for normal rows (decision >= 0), -1 for anomalies.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to classify.

        Returns
        -------
        y_pred : ndarray of int of shape (n_samples,)
        """
        return np.where(self.decision_function(X) >= 0.0, 1, -1)

    def score(self, X, y):
        """Area under the ROC curve of ``decision_function``, normal class positive.

        Rows labelled 0 (unlabelled) are left out.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.
        y : array-like of shape (n_samples,)
            True labels: +1 normal, -1 anomaly (0 ignored). Both classes must
            be present.

        Returns
        -------
        auroc : float
        """
        check_is_fitted(self, "_state")
        if y is None:
            raise ValueError(
                f"{type(self).__name__}.score needs the true labels y (+1 normal, "
                "-1 anomaly) to compute the AUROC."
            )
        X = self._validate_X(X, reset=False)
        y = training_labels(y, None, X.shape[0], type(self).__name__)
        keep = y != 0
        if np.unique(y[keep]).shape[0] < 2:
            raise ValueError(
                "The AUROC needs rows of both classes (+1 and -1) in y; got only "
                f"{np.unique(y[keep]).tolist()}."
            )
        return auroc(y[keep] > 0, self.decision_function(X[keep]))

    def fit_predict(self, X, y=None, labeled=None):
        """Fit the detector on ``X`` and return :meth:`predict` of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows.
        y : array-like of shape (n_samples,), default=None
            Labels: +1 normal, -1 anomaly, 0 unlabelled.
        labeled : array-like of bool of shape (n_samples,), default=None
            Which labels of ``y`` training may see.

        Returns
        -------
        y_pred : ndarray of int of shape (n_samples,)
            +1 for normal rows, -1 for anomalies.
        """
        return self.fit(X, y, labeled=labeled).predict(X)

    def objective(self, X, y=None, labeled=None) -> float:
        """The training objective :math:`J` of the current model on ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows.
        y : array-like of shape (n_samples,), default=None
            Labels in {-1, 0, +1} (``None``: all unlabelled).
        labeled : array-like of bool of shape (n_samples,), default=None
            Which labels count (``None``: all).

        Returns
        -------
        value : float
        """
        check_is_fitted(self, "_state")
        X = self._validate_X(X, reset=False)
        y_train = training_labels(y, labeled, X.shape[0], type(self).__name__)
        return objective_value(
            self._state, self._features(X), y_train, *self._kernel_args()
        )

    # -- TreeCV hooks ----------------------------------------------------------------
    def _native_model(self, task):
        """The kernel on a CV task's data, for the native tree (see ``_backend``)."""
        from sklearn_ext.anomaly._backend import native_model

        return native_model(self, task)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.target_tags.required = False
        return tags


def objective_value(state, phi, y_train, eta_u, eta_l, kappa) -> float:
    """:math:`J` of the model ``state`` on features ``phi`` with labels ``y_train``."""
    w = state[_ssad.OFFSET :] * state[1]
    rho, margin = float(state[2]), float(state[3])
    f = phi @ w
    unlabelled = y_train == 0
    loss = np.where(
        unlabelled,
        eta_u * np.maximum(0.0, rho - f),
        eta_l * np.maximum(0.0, margin - y_train * (f - rho)),
    )
    regulariser = 0.5 * (w @ w + rho**2 + margin**2) - rho - kappa * margin
    return float(regulariser + loss.mean())
