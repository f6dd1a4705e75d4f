"""PEGASOS: primal estimated sub-gradient solver for the linear SVM."""

from __future__ import annotations

from numbers import Real

from sklearn.utils._param_validation import Interval

from sklearn_ext.linear_model._base import BaseNativeClassifier, BaseNativeSGD

__all__ = ["PegasosClassifier"]


class PegasosClassifier(BaseNativeClassifier):
    """Linear SVM trained by PEGASOS (Shalev-Shwartz et al., 2011).

    Each row ``(x, y)``, at step ``t`` (counted over all rows fed so far),
    updates the weights with step ``eta = 1 / (alpha * t)``::

        w <- (1 - eta * alpha) * w + eta * y * x    if y * <w, x> <= 1
        w <- (1 - eta * alpha) * w                  otherwise

    and, with ``project=True``, projects ``w`` onto the ball of radius
    ``1 / sqrt(alpha)`` that holds the SVM optimum. The model is the last iterate,
    as in the paper. Multiclass problems are solved one-vs-rest, all classes fed
    the same rows. The kernel runs in Cython on dense or CSR float32/float64
    input; its state (scaled weight vector, squared norm, step counter) is what
    the native TreeCV engine copies along the recursion tree, so
    :func:`~sklearn_ext.tree_cross_validate` runs the whole tree in C for it.

    With ``fit_intercept=False`` and ``shuffle=False``, one pass reproduces
    ``SGDClassifier(loss="hinge", penalty="l2", alpha=alpha,
    learning_rate="invscaling", eta0=1/alpha, power_t=1, fit_intercept=False,
    shuffle=False, max_iter=1)``.

    Parameters
    ----------
    alpha : float, default=1e-4
        Regularisation strength (the paper's ``lambda``); the objective is
        ``alpha/2 ||w||^2 + mean hinge loss``. Must be positive.
    project : bool, default=False
        Whether to project the weights onto the ``1/sqrt(alpha)`` ball after
        each step (the optional projection step of PEGASOS).
    fit_intercept : bool, default=True
        Whether to learn an intercept. It is the weight of an extra constant
        feature equal to 1, regularised (and projected) with the other weights,
        which keeps PEGASOS' analysis valid.
    max_iter : int, default=1
        Number of passes over the data in :meth:`fit`. :meth:`partial_fit`
        always makes one pass. With the defaults (``max_iter=1,
        shuffle=False``) :meth:`fit` is one ordered pass, the model TreeCV
        scores for each fold, so a search's refit is the model its score
        describes.
    shuffle : bool, default=False
        Whether :meth:`fit` shuffles the rows before each pass.
    random_state : int, RandomState instance or None, default=None
        Seed of the shuffling in :meth:`fit`. Pass an int for reproducible output.
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
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Weights of the last iterate (one row per class for multiclass).
    intercept_ : ndarray of shape (1,) or (n_classes,)
        Intercepts (zero when ``fit_intercept=False``).
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
    LogisticSGDClassifier : The same scheme with the logistic loss.
    sklearn.linear_model.SGDClassifier : General SGD with many losses.

    References
    ----------
    S. Shalev-Shwartz, Y. Singer, N. Srebro and A. Cotter, "Pegasos: primal
    estimated sub-gradient solver for SVM", Mathematical Programming 127, 2011.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_ext.linear_model import PegasosClassifier
    >>> X, y = make_classification(n_samples=200, random_state=0)
    >>> clf = PegasosClassifier(alpha=0.1).fit(X, y)
    >>> clf.coef_.shape
    (1, 20)
    >>> clf.score(X, y) > 0.9
    True
    """

    _loss = "hinge"
    _schedule = "pegasos"
    _average = False

    _parameter_constraints: dict = {
        **BaseNativeSGD._parameter_constraints,
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "project": ["boolean"],
    }

    def __init__(
        self,
        alpha=1e-4,
        *,
        project=False,
        fit_intercept=True,
        max_iter=1,
        shuffle=False,
        random_state=None,
        cache=None,
    ):
        self.alpha = alpha
        self.project = project
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.shuffle = shuffle
        self.random_state = random_state
        self.cache = cache

    def _kernel_params(self) -> dict:
        alpha = float(self.alpha)
        return {
            "loss": self._loss,
            "schedule": self._schedule,
            "alpha": alpha,
            "eta0": 0.0,
            "radius": alpha**-0.5 if self.project else 0.0,
            "average": False,
            "fit_intercept": bool(self.fit_intercept),
        }
