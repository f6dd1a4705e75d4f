"""Least-squares regression by robust stochastic approximation."""

from __future__ import annotations

from numbers import Real

from sklearn.utils._param_validation import Interval

from sklearn_ext.linear_model._base import BaseNativeRegressor, BaseNativeSGD

__all__ = ["LeastSquaresSGDRegressor"]


class LeastSquaresSGDRegressor(BaseNativeRegressor):
    """Linear least squares by robust stochastic approximation (LSQSGD).

    The robust SA of Nemirovski, Juditsky, Lan and Shapiro (2009) for the loss
    ``(<w, x> - y)^2 / 2`` with the weights kept in the l2 ball of radius
    ``radius``: at step ``t`` (counted over all rows fed so far) ::

        w <- project(w - eta_t * (<w, x> - y) * x),   eta_t = eta0 / sqrt(t)

    and the model is the step-weighted average of the iterates,
    ``sum_t eta_t w_t / sum_t eta_t`` (``w_t`` taken after step ``t``). The
    ``t^(-1/2)`` step is the paper's ``n^(-1/2)`` for a stream whose length is
    not known in advance, which is what every TreeCV node is. The kernel runs
    in Cython, and the native TreeCV engine runs the whole recursion in C.

    Parameters
    ----------
    eta0 : float, default=1.0
        Step-size constant. Must be positive.
    radius : float, default=1.0
        Radius of the l2 ball the weights (intercept included) are projected
        onto; ``numpy.inf`` for no constraint. Must be positive.
    fit_intercept : bool, default=True
        Whether to learn an intercept (the weight of a constant feature 1).
    max_iter : int, default=1
        Number of passes over the data in :meth:`fit`.
        With the defaults (``max_iter=1, shuffle=False``) :meth:`fit` is one
        ordered pass, the model TreeCV scores for each fold, so a search's
        refit is the model its score describes.
    shuffle : bool, default=False
        Whether :meth:`fit` shuffles the rows before each pass.
    random_state : int, RandomState instance or None, default=None
        Seed of the shuffling in :meth:`fit`.
    cache : "memory", PrefixCache or None, default=None
        Share training prefixes between fits (e.g. the folds of a search with
        ``cv=TreeCVSplitter(k)``). With ``shuffle=False`` the first epoch of
        :meth:`fit` feeds the rows in the given order in batches of 1024 and
        resumes from the longest prefix found in the cache (keyed by the
        parameters and a sha256 digest of the rows fed); the model is the same
        as without the cache. ``"memory"`` is the process's bounded in-memory
        :class:`~sklearn_ext.model_selection.PrefixCache`. Ignored when
        ``shuffle=True``.

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features)
        Weights of the averaged iterate.
    intercept_ : ndarray of shape (1,)
        Intercept of the averaged iterate (zero when ``fit_intercept=False``).
    t_ : float
        Number of rows fed since the model was initialised.
    n_iter_ : int
        Passes made by the last call to :meth:`fit` (1 after :meth:`partial_fit`).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    References
    ----------
    A. Nemirovski, A. Juditsky, G. Lan and A. Shapiro, "Robust stochastic
    approximation approach to stochastic programming", SIAM Journal on
    Optimization 19(4), 2009.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.linear_model import LeastSquaresSGDRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(500, 3))
    >>> y = X @ [0.5, -0.3, 0.2] + 0.1
    >>> reg = LeastSquaresSGDRegressor(random_state=0).fit(X, y)
    >>> reg.coef_.round(1)
    array([[ 0.5, -0.3,  0.2]])
    >>> reg.score(X, y) > 0.95
    True
    """

    _loss = "squared_error"
    _schedule = "invsqrt"
    _average = True

    _parameter_constraints: dict = {
        **BaseNativeSGD._parameter_constraints,
        "eta0": [Interval(Real, 0, None, closed="neither")],
        "radius": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(
        self,
        eta0=1.0,
        *,
        radius=1.0,
        fit_intercept=True,
        max_iter=1,
        shuffle=False,
        random_state=None,
        cache=None,
    ):
        self.eta0 = eta0
        self.radius = radius
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.shuffle = shuffle
        self.random_state = random_state
        self.cache = cache

    def _kernel_params(self) -> dict:
        radius = float(self.radius)
        return {
            "loss": self._loss,
            "schedule": self._schedule,
            "alpha": 0.0,
            "eta0": float(self.eta0),
            "radius": radius if radius < float("inf") else 0.0,
            "average": True,
            "fit_intercept": bool(self.fit_intercept),
        }
