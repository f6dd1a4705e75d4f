"""The one place where a CV backend is chosen for an estimator.

Every door (:func:`~sklearn_ext.tree_cross_validate`, ``TreeCVSearchCV``,
``TreeCVEstimator``, ``TreeCVObjective``, the command line, the SVM doors) asks
:func:`choose_backend`, so the same estimator and method give the same backend,
the same warning and the same recorded name everywhere.

The engines are found by name and imported on first use, once an estimator
may be theirs (:data:`_ENGINES`): a run loads only the modules of the backend
it uses, so a run of the Python tree loads neither a learner package nor the
native or SVM kernels, and importing ``sklearn_ext.model_selection`` imports
no learner package.
"""

from __future__ import annotations

import contextlib
import importlib
import warnings
from collections.abc import Callable

from sklearn.utils._param_validation import StrOptions

from sklearn_ext.model_selection._backends import (
    Backend,
    StandardBackend,
)
from sklearn_ext.utils._param_validation import validate_params

__all__ = [
    "METHODS",
    "TreeCVFallbackWarning",
    "backend_class",
    "choose_backend",
    "find_placement",
    "learner_without_partial_fit",
    "resolve_backend",
]

METHODS = ("auto", "exact", "treecv", "standard", "alpha_seeding")


def _svm_like(estimator) -> bool:
    """An SVC or one of our SVMs, alone or last in a pipeline: what the
    alpha-seeding backend may accept (its refusal judges the other steps)."""
    from sklearn.pipeline import Pipeline
    from sklearn.svm import SVC

    if isinstance(estimator, Pipeline) and estimator.steps:
        estimator = estimator.steps[-1][1]
    return isinstance(estimator, SVC) or type(estimator).__module__.startswith(
        "sklearn_ext.svm"
    )


def _native_like(estimator) -> bool:
    """A learner with a native kernel, alone or last in a pipeline: what the
    native tree may accept (its ``accepts`` judges the other steps)."""
    steps = getattr(estimator, "steps", None)
    if isinstance(steps, list) and steps:
        estimator = steps[-1][1]
    return callable(getattr(estimator, "_native_model", None))


#: The engines that may run each method, fastest first: the module and class
#: of each, and a test that the estimator may be theirs, asked before the
#: module is imported (``None``: always import it and ask ``accepts``).
_ENGINES: dict[str, tuple[tuple[str, str, Callable | None], ...]] = {
    "exact": (("sklearn_ext.model_selection._exact", "ExactStatisticsBackend", None),),
    "alpha_seeding": (("sklearn_ext.svm._backend", "AlphaSeedingBackend", _svm_like),),
    "treecv": (
        ("sklearn_ext.model_selection._native", "NativeTreeBackend", _native_like),
        ("sklearn_ext.model_selection._backends", "PythonTreeBackend", None),
    ),
}


def _of_dask(data) -> bool:
    return type(data).__module__.partition(".")[0] in ("dask", "distributed")


def _dask_data(data) -> bool:
    """A Dask collection, or a list of per-worker loaders (``dask.delayed``
    objects, futures or callables), told by types (nothing is imported)."""
    if _of_dask(data):
        return True
    return (
        isinstance(data, (list, tuple))
        and len(data) > 0
        and all(_of_dask(item) or callable(item) for item in data)
    )


#: Where data may live besides the caller's memory: the module and class of
#: each placement, and a test that the data is its own, asked without importing
#: the module (a run on in-memory data imports no distributed library).
_PLACEMENTS: tuple[tuple[str, str, Callable], ...] = (
    ("sklearn_ext.model_selection._dask", "DaskPlacement", _dask_data),
)


def find_placement(X, y=None):
    """The :class:`~sklearn_ext.model_selection._placement.Placement` of ``X``.

    ``None`` for in-memory data. For a Dask collection or a list of
    per-worker loaders, a ``DaskPlacement`` holding the blocks in the
    workers' memory, whose backend trains where they are.
    """
    for module, name, holds in _PLACEMENTS:
        if holds(X) or (y is not None and holds(y)):
            return getattr(importlib.import_module(module), name)(X, y)
    return None


class TreeCVFallbackWarning(UserWarning):
    """``method="auto"`` fell back to standard k-fold CV for an estimator.

    Raised once per call, search ``fit`` or study when a learner with
    ``partial_fit`` cannot be run by the tree on this call's data, parameters,
    fit parameters or splitter (``class_weight="balanced"``, a pipeline step
    that cannot stream, ``ShuffleSplit``...): the run then trains ``k``
    independent models with ``fit``, recorded as ``backend="standard"``, so
    what is scored changed (``fit``, not one pass). Pass
    ``method="standard"`` to choose that explicitly.

    A learner without ``partial_fit`` (``LogisticRegression``,
    ``DecisionTreeClassifier``, a pipeline ending in one) is not warned
    about: every backend scores its own ``fit``, and its standard CV is
    exactly ``cross_validate``'s (``GridSearchCV``'s). The doors print that
    note at ``verbose > 0`` and record ``backend="standard"`` with the run.

    Examples
    --------
    >>> import warnings
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.linear_model import SGDClassifier
    >>> from sklearn_ext.model_selection import (
    ...     TreeCVFallbackWarning, tree_cross_validate
    ... )
    >>> X, y = load_digits(return_X_y=True)
    >>> learner = SGDClassifier(max_iter=1, tol=None, class_weight="balanced")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always", TreeCVFallbackWarning)
    ...     result = tree_cross_validate(learner, X, y, cv=3, return_run_info=True)
    >>> result["backend"]
    'standard'
    >>> any(w.category is TreeCVFallbackWarning for w in caught)
    True
    """


def _engines(method: str, estimator=None) -> tuple[type[Backend], ...]:
    """The backends that may run ``method`` (for ``estimator``), fastest first.

    An engine whose precheck says ``estimator`` cannot be its own is left out
    without importing its module.
    """
    engines = []
    for module, name, may_accept in _ENGINES.get(method, ()):
        if estimator is not None and may_accept is not None:
            if not may_accept(estimator):
                continue
        engines.append(getattr(importlib.import_module(module), name))
    return tuple(engines)


def backend_class(name: str) -> type[Backend]:
    """The backend class recorded as ``name`` in results (``"python_tree"``...)."""
    for method in ("exact", "alpha_seeding", "treecv"):
        for cls in _engines(method):
            if cls.name == name:
                return cls
    if name == StandardBackend.name:
        return StandardBackend
    for module, _, _ in _PLACEMENTS:
        with contextlib.suppress(ImportError):  # its library is not installed
            for cls in importlib.import_module(module).BACKENDS:
                if cls.name == name:
                    return cls
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
        least squares, LDA, k-NN; ridge, least squares, LDA and Gaussian naive
        Bayes also after a per-fold ``StandardScaler``, ``MinMaxScaler`` or
        ``MaxAbsScaler`` in a ``Pipeline``:
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
        to ``"standard"`` (with a :class:`TreeCVFallbackWarning` for a learner
        with ``partial_fit``; one without it, whose every backend scores its
        ``fit``, simply runs there). A
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
    >>> name, caught
    ('standard', [])
    """
    backend = resolve_backend(estimator, method)
    if store is not None:
        backend = backend.with_store(store, estimator)
    return backend


def resolve_backend(
    estimator, method, X=None, y=None, *, say=None, note=None
) -> Backend:
    """The backend that runs ``estimator`` on ``X``, ``y`` for ``method``.

    What :func:`choose_backend` does, also asking each candidate backend's
    :meth:`Backend.refusal` about the data: ``method="auto"`` passes over a
    backend that refuses it, and the fallback warning says why; a method named
    explicitly raises a ``TypeError`` with the reason. The warning goes
    through ``say`` (the run core's, which says each note once per search or
    study) when given; the fallback of a learner without ``partial_fit``
    goes to ``note`` (a callable taking the message), not to a warning, and
    so does a refusal of a faster engine when a slower one of the same method
    runs the estimator (a scaled pipeline the native tree refuses, run by the
    Python tree): what is scored is the same, only the speed differs.
    """
    owner = type(estimator).__name__
    if isinstance(method, Backend):
        if not method.accepts(estimator):
            raise TypeError(
                f"The backend {method!r} cannot run {owner}: its accepts() "
                "returned False."
            )
        _refuse_named(method, estimator, X, y, repr(method))
        return method
    if method == "standard":
        return StandardBackend()
    if method not in METHODS:
        raise ValueError(
            f"The 'method' parameter must be a str among {set(METHODS)} or a "
            f"Backend. Got {method!r} instead."
        )
    methods = ("exact", "alpha_seeding", "treecv") if method == "auto" else (method,)
    candidates = tuple(c for m in methods for c in _engines(m, estimator))
    refusals = []
    for cls in candidates:
        if not cls.accepts(estimator):
            continue
        backend = cls()
        reason = None if X is None else backend.refusal(estimator, X, y)
        if reason is None:
            if refusals and note is not None:
                # A faster engine passed: say why, with the engine that runs.
                note(
                    f"The {refusals[-1][0]} backend cannot run {owner} "
                    f"({refusals[-1][1]}); the {backend.name} backend runs it."
                )
            return backend
        if method != "auto":
            _refuse_named(backend, estimator, X, y, f"method={method!r}")
        refusals.append((backend.name, reason))
    _cannot_run(estimator, method)
    return _fall_back(estimator, [reason for _, reason in refusals], say, note)


def _fall_back(estimator, refusals: list[str], say, note) -> Backend:
    """The standard backend of ``method="auto"``, with the fallback said.

    A fallback changes what is scored for a learner with ``partial_fit``: the
    tree would score one ordered pass, the standard backend scores ``fit``. It
    is said with a :class:`TreeCVFallbackWarning`. Every backend that can run
    a learner without ``partial_fit`` (exact statistics, alpha seeding,
    standard) scores its own ``fit``, so only the speed changed: that is said
    as a note (``note``: the run core's, printed by the doors at
    ``verbose > 0``) and recorded as ``backend="standard"``, not warned about.
    Its standard CV is exactly ``cross_validate``'s (``GridSearchCV``'s), and
    a warning ``GridSearchCV`` does not give would break code that counts the
    warnings of a ``fit``.
    """
    owner = type(estimator).__name__
    quiet = learner_without_partial_fit(estimator)
    reason = (
        # Each engine that took the estimator says why it cannot run it here
        # (the exact backend names a pipeline's step, the tree its learner).
        "; ".join(dict.fromkeys(refusals))
        if refusals
        else quiet
        if quiet is not None
        else "no tree backend accepts it"
    )
    message = (
        f"TreeCV cannot run {owner} ({reason}); method='auto' falls back to "
        "standard k-fold CV, training each fold with fit (recorded as "
        "backend='standard'). Pass method='standard' to choose it explicitly."
    )
    if quiet is not None:
        if note is not None:
            note(message)
    elif say is None:
        warnings.warn(message, TreeCVFallbackWarning, stacklevel=5)
    else:
        say(lambda: warnings.warn(message, TreeCVFallbackWarning, stacklevel=2))
    return StandardBackend()


def learner_without_partial_fit(estimator) -> str | None:
    """Why no tree can ever run ``estimator``'s learner, or ``None``.

    The learner is the estimator itself or a pipeline's final step; the reason
    is that it has no ``partial_fit`` (``"it has no partial_fit method"``, or
    the pipeline's final step named).
    """
    steps = getattr(estimator, "steps", None)
    if isinstance(steps, list) and steps:
        name, last = steps[-1]
        if last is None or last == "passthrough":
            return None
        if callable(getattr(last, "partial_fit", None)):
            return None
        return (
            f"its final step {name!r} ({type(last).__name__}) has no partial_fit method"
        )
    if callable(getattr(estimator, "partial_fit", None)):
        return None
    return "it has no partial_fit method"


def _refuse_named(backend: Backend, estimator, X, y, asked: str) -> None:
    """Raise the backend's refusal of this data, for a method asked by name."""
    reason = None if X is None else backend.refusal(estimator, X, y)
    if reason is not None:
        raise TypeError(
            f"{asked} cannot run {type(estimator).__name__} on this data: "
            f"{reason}. Use method='auto' to fall back to standard k-fold CV, or "
            "method='standard'."
        )


def _cannot_run(estimator, method) -> None:
    """Raise for a method named explicitly that no backend of it accepts."""
    owner = type(estimator).__name__
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
            "(without break_ties), alone or after per-feature scalers in a "
            f"Pipeline; got {owner}. Use "
            "method='standard' or method='auto'."
        )
    if method == "treecv":
        reason = (
            "it has no partial_fit method"
            if not callable(getattr(estimator, "partial_fit", None))
            else "no tree backend accepts it"
        )
        raise TypeError(
            f"method='treecv' cannot run {owner}: {reason}. Use "
            "method='standard' to train k independent models with fit, or "
            "method='auto' to fall back to it."
        )
