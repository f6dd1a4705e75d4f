"""The one place where a CV backend is chosen for an estimator.

Every door (:func:`~sklearn_ext.tree_cross_validate`, ``TreeCVSearchCV``,
``TreeCVEstimator``, ``TreeCVObjective``, the command line, the SVM doors) asks
:func:`choose_backend`, so the same estimator and method give the same backend,
the same warning and the same recorded name everywhere.

The exact statistics and native tree backends live in this package and are
imported with it. The alpha-seeding backend belongs to the SVM package, which
imports the backend contract from here: it is imported on first use only, so
that importing ``sklearn_ext.model_selection`` imports no learner package.
"""

from __future__ import annotations

import warnings

from sklearn.utils._param_validation import StrOptions

from sklearn_ext.model_selection._backends import (
    Backend,
    PythonTreeBackend,
    StandardBackend,
)
from sklearn_ext.model_selection._exact import ExactStatisticsBackend
from sklearn_ext.model_selection._native import NativeTreeBackend
from sklearn_ext.utils._param_validation import validate_params

__all__ = ["METHODS", "TreeCVFallbackWarning", "backend_class", "choose_backend"]

METHODS = ("auto", "exact", "treecv", "standard", "alpha_seeding")

#: The backends that may run each method, fastest first (``alpha_seeding``'s
#: is imported on first use, see :func:`_engines`).
_ENGINES: dict[str, tuple[type[Backend], ...]] = {
    "exact": (ExactStatisticsBackend,),
    "treecv": (NativeTreeBackend, PythonTreeBackend),
}


class TreeCVFallbackWarning(UserWarning):
    """``method="auto"`` fell back to standard k-fold CV for an estimator.

    Raised once per call site when no faster backend accepts the estimator
    (e.g. one without ``partial_fit``): the run then trains ``k`` independent
    models with ``fit``, recorded as ``backend="standard"``. Pass
    ``method="standard"`` to choose that explicitly.
    """


def _engines(method: str) -> tuple[type[Backend], ...]:
    """The backends that may run ``method``, fastest first."""
    if method == "alpha_seeding":
        # The SVM package imports this one for the backend contract: importing
        # it here, at first use, keeps model_selection free of learner packages.
        from sklearn_ext.svm._backend import AlphaSeedingBackend

        return (AlphaSeedingBackend,)
    return _ENGINES.get(method, ())


def backend_class(name: str) -> type[Backend]:
    """The backend class recorded as ``name`` in results (``"python_tree"``...)."""
    for method in ("exact", "alpha_seeding", "treecv"):
        for cls in _engines(method):
            if cls.name == name:
                return cls
    if name == StandardBackend.name:
        return StandardBackend
    raise ValueError(f"Unknown backend name {name!r}.")


@validate_params(
    {
        "estimator": [object],
        "method": [StrOptions(set(METHODS)), Backend],
        "store": [None, object],
    },
)
def choose_backend(estimator, method="auto", *, store=None) -> Backend:
    """Pick the backend that runs ``estimator`` for ``method``.

    Parameters
    ----------
    estimator : estimator object
        The (unfitted) learner.
    method : {"auto", "exact", "treecv", "standard", "alpha_seeding"} or \
            Backend, default="auto"
        ``"exact"`` computes per-chunk sufficient statistics once and forms
        each fold's model as the total minus its chunk (naive Bayes, ridge,
        least squares, LDA:
        :class:`~sklearn_ext.model_selection.ExactStatisticsBackend`).
        ``"treecv"`` takes the fastest tree backend that accepts the estimator
        (the native tree for the learners of :mod:`sklearn_ext.linear_model`
        and :class:`~sklearn_ext.SemiSupervisedAnomalyDetector`, else the
        Python tree for any ``partial_fit`` estimator). ``"alpha_seeding"``
        solves kernel SVM folds on a shared kernel store, each seeded from the
        last (:class:`~sklearn_ext.AlphaSeededSVC` and scikit-learn's ``SVC``
        without ``break_ties``). ``"standard"`` trains ``k``
        independent models. ``"auto"`` takes ``"exact"`` where it applies,
        then ``"alpha_seeding"``, then ``"treecv"``, and otherwise falls back
        to ``"standard"`` with a :class:`TreeCVFallbackWarning`. A
        :class:`Backend` instance (e.g. ``AlphaSeedingBackend(seeding="mir")``)
        carries engine options.
    store : object, default=None
        A store shared across runs (e.g. a
        :class:`~sklearn_ext.svm.WarmStartStore`), handed to the chosen
        backend with :meth:`Backend.with_store`.

    Returns
    -------
    backend : Backend
        An instance whose ``name`` is recorded in the results.

    Raises
    ------
    TypeError
        When a method named explicitly (or a backend instance) cannot run the
        estimator, or the chosen backend keeps no store.

    Examples
    --------
    >>> import warnings
    >>> from sklearn.linear_model import LogisticRegression, SGDClassifier
    >>> from sklearn_ext.model_selection import choose_backend
    >>> choose_backend(SGDClassifier()).name
    'python_tree'
    >>> choose_backend(SGDClassifier(), "standard").name
    'standard'
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     name = choose_backend(LogisticRegression()).name
    >>> name, caught[0].category.__name__
    ('standard', 'TreeCVFallbackWarning')
    """
    backend = _choose(estimator, method)
    if store is not None:
        backend = backend.with_store(store, estimator)
    return backend


def _choose(estimator, method) -> Backend:
    owner = type(estimator).__name__
    if isinstance(method, Backend):
        if not method.accepts(estimator):
            raise TypeError(
                f"The backend {method!r} cannot run {owner}: its accepts() "
                "returned False."
            )
        return method
    if method == "standard":
        return StandardBackend()
    candidates = {
        "auto": _engines("exact") + _engines("alpha_seeding") + _engines("treecv"),
        "exact": _engines("exact"),
        "treecv": _engines("treecv"),
        "alpha_seeding": _engines("alpha_seeding"),
    }[method]
    for cls in candidates:
        if cls.accepts(estimator):
            return cls()
    if method == "exact":
        raise TypeError(
            f"method='exact' cannot run {owner}: it runs only the learners whose "
            "model is made from sufficient statistics (see "
            "sklearn_ext.model_selection.exact_learners()), with the parameters "
            "docs/exact.md lists. Use method='auto'."
        )
    if method == "alpha_seeding":
        raise TypeError(
            "method='alpha_seeding' needs an AlphaSeededSVC or a sklearn.svm.SVC "
            f"(without break_ties); got {owner}. Use "
            "method='standard' or method='auto'."
        )
    reason = (
        "it has no partial_fit method"
        if not callable(getattr(estimator, "partial_fit", None))
        else "no tree backend accepts it"
    )
    if method == "treecv":
        raise TypeError(
            f"method='treecv' cannot run {owner}: {reason}. Use "
            "method='standard' to train k independent models with fit, or "
            "method='auto' to fall back to it."
        )
    warnings.warn(
        f"TreeCV cannot run {owner} ({reason}); method='auto' falls back to "
        "standard k-fold CV, training each fold with fit (recorded as "
        "backend='standard'). Pass method='standard' to choose it explicitly.",
        TreeCVFallbackWarning,
        stacklevel=4,
    )
    return StandardBackend()
