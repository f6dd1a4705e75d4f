"""The one place where a CV backend is chosen for an estimator."""

from __future__ import annotations

from sklearn_ext.model_selection._backends import (
    Backend,
    PythonTreeBackend,
    StandardBackend,
)
from sklearn_ext.model_selection._native import NativeTreeBackend
from sklearn_ext.svm._backend import AlphaSeedingBackend

__all__ = ["METHODS", "choose_backend"]

METHODS = ("auto", "treecv", "standard", "alpha_seeding")

# Tree backends, fastest first: the first that accepts the estimator runs it.
TREE_BACKENDS: tuple[type[Backend], ...] = (
    NativeTreeBackend,
    PythonTreeBackend,
)


def choose_backend(estimator, method: str = "auto") -> Backend:
    """Pick the backend that runs ``estimator`` for ``method``.

    Parameters
    ----------
    estimator : estimator object
        The (unfitted) learner.
    method : {"auto", "treecv", "standard", "alpha_seeding"}, default="auto"
        ``"treecv"`` and ``"auto"`` take the fastest tree backend that accepts
        the estimator and raise a ``TypeError`` when none does; ``"standard"``
        trains ``k`` independent models. ``"alpha_seeding"`` (also chosen by
        ``"auto"`` for ``AlphaSeededSVC`` and scikit-learn's ``SVC``) solves
        kernel SVM folds on a shared kernel store, each seeded from the last.

    Returns
    -------
    backend : Backend
        An instance whose ``name`` is recorded in the results.

    Examples
    --------
    >>> from sklearn.linear_model import SGDClassifier
    >>> from sklearn_ext.model_selection import choose_backend
    >>> choose_backend(SGDClassifier()).name
    'python_tree'
    >>> choose_backend(SGDClassifier(), "standard").name
    'standard'
    """
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(
            f"The 'method' parameter must be a str among {set(METHODS)}. "
            f"Got {method!r} instead."
        )
    if method == "standard":
        return StandardBackend()
    if method in ("auto", "alpha_seeding") and AlphaSeedingBackend.accepts(estimator):
        return AlphaSeedingBackend()
    if method == "alpha_seeding":
        raise TypeError(
            "method='alpha_seeding' needs an AlphaSeededSVC or a sklearn.svm.SVC "
            f"(without probability or break_ties); got {type(estimator).__name__}."
        )
    for backend in TREE_BACKENDS:
        if backend.accepts(estimator):
            return backend()
    raise TypeError(
        f"TreeCV needs an incremental learner, but {type(estimator).__name__} has "
        "no partial_fit method. Use method='standard' to train k independent "
        "models with fit instead."
    )
