"""Logistic regression trained with PEGASOS-style stochastic gradient steps."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from sklearn_ext.linear_model._pegasos import PegasosClassifier

__all__ = ["LogisticSGDClassifier"]


class LogisticSGDClassifier(PegasosClassifier):
    """L2-regularised logistic regression by stochastic gradient descent.

    The update of :class:`PegasosClassifier` with the logistic loss
    ``log(1 + exp(-y <w, x>))`` in place of the hinge loss: step
    ``eta = 1 / (alpha * t)``, weight decay ``1 - eta * alpha``, optional
    projection onto the ``1/sqrt(alpha)`` ball, last iterate. Multiclass problems
    are solved one-vs-rest; :meth:`predict_proba` normalises the one-vs-rest
    probabilities. Runs in Cython and in the native TreeCV engine like
    :class:`PegasosClassifier`.

    Parameters
    ----------
    alpha : float, default=1e-4
        Regularisation strength; the objective is ``alpha/2 ||w||^2 + mean log
        loss``. Must be positive.
    project : bool, default=False
        Whether to project the weights onto the ``1/sqrt(alpha)`` ball after
        each step.
    fit_intercept : bool, default=True
        Whether to learn an intercept (the weight of a constant feature 1,
        regularised with the other weights).
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
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Weights of the last iterate.
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
    PegasosClassifier : The same scheme with the hinge loss.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_ext.linear_model import LogisticSGDClassifier
    >>> X, y = make_classification(n_samples=200, random_state=0)
    >>> clf = LogisticSGDClassifier(alpha=0.1).fit(X, y)
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)
    >>> clf.score(X, y) > 0.9
    True
    """

    _loss = "log_loss"

    def predict_proba(self, X):
        """Probability of each class (normalised one-vs-rest for multiclass).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        decision = self._decision(X)
        scores = expit(decision)
        if scores.shape[1] == 1:
            proba = np.hstack([1.0 - scores, scores])
            predicted = (decision[:, 0] > 0).astype(np.intp)
        else:
            total = scores.sum(axis=1, keepdims=True)
            total[total == 0.0] = 1.0
            proba = scores / total
            predicted = decision.argmax(axis=1)
        return _ties_broken_as_predicted(proba, predicted)

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        return np.log(self.predict_proba(X))


def _ties_broken_as_predicted(proba: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """``proba`` whose row-wise argmax is ``predicted`` (:meth:`predict`'s class).

    Very confident rows saturate the sigmoid: two classes with decisions of 90
    and 180 both get ``expit = 1.0`` in float64, so their normalised
    probabilities are equal (0.5 and 0.5) although the exact ones differ by
    about ``exp(-90)`` in the order of the decisions. ``argmax`` would then
    pick the first of the tied classes while :meth:`predict` picks the larger
    decision; the predicted class's probability is raised by one unit in the
    last place, which is within the rounding of the tie, so the two agree.
    """
    rows = np.flatnonzero(proba.argmax(axis=1) != predicted)
    if rows.size:
        cols = predicted[rows]
        proba[rows, cols] = np.nextafter(proba[rows].max(axis=1), np.inf)
    return proba
