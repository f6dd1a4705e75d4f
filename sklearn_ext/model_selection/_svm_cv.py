"""k-fold CV of kernel SVMs: doors onto the run core with the alpha-seeding engine.

:func:`alpha_seeded_cv` is :func:`~sklearn_ext.tree_cross_validate` with the
``alpha_seeding`` backend, :func:`svm_c_path_cv` a
:class:`~sklearn_ext.TreeCVSearchCV` over ``C`` with it: thin doors above
the run core, as the searches are. The SVM package itself (the estimator,
the solver and the CV engine) imports no door; ``sklearn_ext.svm`` re-exports
these two on first access. Importing ``sklearn_ext.model_selection`` does not
import this module.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.svm import SVC
from sklearn.utils._param_validation import StrOptions

from sklearn_ext.model_selection._plan import FoldPlan
from sklearn_ext.model_selection._search import TreeCVSearchCV
from sklearn_ext.model_selection._validation import tree_cross_validate
from sklearn_ext.svm._backend import AlphaSeedingBackend
from sklearn_ext.svm._classes import AlphaSeededSVC, as_alpha_seeded
from sklearn_ext.svm._seeding import SEEDINGS
from sklearn_ext.svm._warm_start import WarmStartStore
from sklearn_ext.utils._param_validation import validate_params

__all__ = ["alpha_seeded_cv", "svm_c_path_cv"]


@validate_params(
    {
        "estimator": [AlphaSeededSVC, SVC],
        "X": ["array-like", "sparse matrix"],
        "y": ["array-like"],
        "cv": ["cv_object", FoldPlan],
        "seeding": [StrOptions(set(SEEDINGS))],
        "scoring": [str, callable, list, tuple, set, dict, None],
        "return_estimator": ["boolean"],
        "random_state": [Integral],
        "n_jobs": [Integral, None],
    },
)
def alpha_seeded_cv(
    estimator,
    X,
    y,
    *,
    cv=10,
    seeding: str = "sir",
    scoring=None,
    return_estimator: bool = False,
    random_state: int = 0,
    n_jobs: int | None = None,
) -> dict[str, Any]:
    """k-fold CV of a kernel SVM, each fold's SMO seeded from the previous fold.

    The same as :func:`~sklearn_ext.tree_cross_validate` with
    ``method=AlphaSeedingBackend(seeding, random_state)``: the same folds,
    fold numbering, scoring and result keys.

    All folds share one kernel store (the full kernel matrix when it fits in
    ``cache_size`` megabytes), so each kernel value is computed once for the
    whole run. Fold ``h + 1`` starts from fold ``h``'s dual solution adapted by
    ``seeding`` (Wen et al., 2017), with its gradient updated from the kernel
    columns of the points that changed, then SMO runs to ``tol``: every fold's
    model is the one LIBSVM would find, to ``tol``.

    Parameters
    ----------
    estimator : AlphaSeededSVC or sklearn.svm.SVC
        The model; an ``SVC``'s parameters are taken over by an
        ``AlphaSeededSVC`` (``break_ties`` is not supported; with
        ``probability=True`` each fold model fits its own Platt sigmoids).
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Data, or the ``(n_samples, n_samples)`` kernel for
        ``kernel="precomputed"``.
    y : array-like of shape (n_samples,)
        Class labels. Every training part must hold every class.
    cv : int, FoldPlan or cross-validation generator, default=10
        An int gives stratified folds (:class:`StratifiedTreeCVSplitter`);
        any splitter whose test folds partition the samples is accepted.
    seeding : {"sir", "mir", "ato", "keep", "none"}, default="sir"
        How fold ``h + 1`` starts from fold ``h``: ``"sir"`` moves each removed
        support vector's alpha to the most kernel-similar added point of the
        same label; ``"mir"`` fits the added alphas by least squares so the free
        support vectors stay on the margin; ``"ato"`` follows the
        adjust-towards-optimum path for a few steps; ``"keep"`` keeps the shared
        alphas and starts the added ones at 0; ``"none"`` starts from 0 (only
        the kernel store is shared).
    scoring : str, callable, list, tuple, set or dict, default=None
        As in :func:`~sklearn_ext.tree_cross_validate`; ``None`` is accuracy
        (computed from the kernel store).
    return_estimator : bool, default=False
        Whether to return each fold's fitted :class:`AlphaSeededSVC`. Without
        it, folds scored by accuracy build no model at all (no copy of their
        support vectors): memory does not grow with the number of folds.
    random_state : int, default=0
        Seed of SIR's random replacements (used only when an added chunk has no
        point of a removed support vector's label).
    n_jobs : int, default=None
        Seeding chains run in parallel threads: the folds are cut into this
        many contiguous chains sharing the kernel store. ``None`` uses every
        thread the process may use (see
        :class:`~sklearn_ext.svm.AlphaSeedingBackend`); ``1`` one chain,
        ``-1`` all CPUs. Each chain's first fold starts cold, so the results
        agree with one chain's within ``tol``.

    Returns
    -------
    result : dict
        The keys of :func:`~sklearn_ext.tree_cross_validate` (``test_score``
        or ``test_<name>`` per metric, ``fit_time`` (seeding plus solving),
        ``score_time``, ``n_samples_fed``, ``backend``, ``estimator`` if
        asked), every array in split order, plus the backend's extras:
        ``n_iter`` (total SMO iterations of each fold, all one-vs-one
        problems), ``seed_time``, ``objective`` (list of per-pair dual
        objectives) and, with the estimator's ``warm_start_store``,
        ``warm_start_seed`` (the stored ``C`` each fold started from, NaN for
        none), ``warm_start_hits`` (problems seeded from the store) and
        ``warm_start_skips`` (problems solved by the exact skip).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import scale
    >>> from sklearn_ext.svm import AlphaSeededSVC, alpha_seeded_cv
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = scale(X)
    >>> cold = alpha_seeded_cv(AlphaSeededSVC(C=10), X, y, cv=10, seeding="none")
    >>> warm = alpha_seeded_cv(AlphaSeededSVC(C=10), X, y, cv=10, seeding="sir")
    >>> bool(warm["n_iter"].sum() < cold["n_iter"].sum())
    True
    >>> bool(abs(warm["test_score"].mean() - cold["test_score"].mean()) < 0.01)
    True
    """
    backend = AlphaSeedingBackend(seeding=seeding, random_state=random_state)
    return tree_cross_validate(
        as_alpha_seeded(estimator),
        X,
        y,
        cv=cv,
        scoring=scoring,
        method=backend,
        return_estimator=return_estimator,
        n_jobs=n_jobs,
        return_run_info=True,
    )


def _check_positive(values, name: str) -> list:
    if isinstance(values, str | bytes) or np.ndim(values) != 1 or len(values) == 0:
        raise ValueError(
            f"The '{name}' parameter of svm_c_path_cv must be a non-empty list of "
            f"floats in the range (0, inf). Got {values!r} instead."
        )
    out = []
    for value in values:
        if name == "gammas" and isinstance(value, str) and value in ("scale", "auto"):
            out.append(value)
            continue
        if (
            not isinstance(value, Real)
            or isinstance(value, bool)
            or not math.isfinite(value)
            or not value > 0
        ):
            raise ValueError(
                f"The '{name}' parameter of svm_c_path_cv must hold floats in the "
                f"range (0, inf). Got {value!r} instead."
            )
        out.append(float(value))
    return out


@validate_params(
    {
        "estimator": [AlphaSeededSVC, SVC],
        "X": ["array-like", "sparse matrix"],
        "y": ["array-like"],
        "Cs": ["array-like"],
        "gammas": ["array-like", None],
        "cv": ["cv_object", FoldPlan],
        "seeding": [StrOptions(set(SEEDINGS))],
        "scoring": [str, callable, list, tuple, dict, None],
        "warm_start_store": [WarmStartStore, None],
        "random_state": [Integral],
    },
)
def svm_c_path_cv(
    estimator,
    X,
    y,
    Cs,
    *,
    gammas=None,
    cv=10,
    seeding: str = "sir",
    scoring=None,
    warm_start_store: WarmStartStore | None = None,
    random_state: int = 0,
) -> dict[str, Any]:
    """k-fold CV scores of a kernel SVM for every ``C`` (and ``gamma``).

    A :class:`~sklearn_ext.TreeCVSearchCV` over ``C`` (and ``gamma``) with
    ``refit=False`` and the alpha-seeding backend, sharing one
    :class:`~sklearn_ext.svm.WarmStartStore`: the same folds, fold numbering,
    scoring and table as that search. Like the ``Cs`` of
    :class:`~sklearn.linear_model.LogisticRegressionCV`:
    for each ``gamma`` the values of ``C`` run in increasing order on one
    kernel store, every fold starting from its own solution at the previous
    ``C`` (or from the previous fold, whichever seed has the lower dual
    objective) and skipped exactly once a smaller ``C`` left no alpha at its
    bound. Every model is the one LIBSVM would find, to ``tol``.

    Parameters
    ----------
    estimator : AlphaSeededSVC or sklearn.svm.SVC
        The model; its ``C`` (and ``gamma`` when ``gammas`` is given) is
        replaced by each value of the path.
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Data, or the precomputed kernel.
    y : array-like of shape (n_samples,)
        Class labels.
    Cs : list of float
        Values of ``C``, each strictly positive, in any order.
    gammas : list of float or {"scale", "auto"}, default=None
        Values of ``gamma``; ``None`` keeps the estimator's.
    cv : int, FoldPlan or cross-validation generator, default=10
        As in :func:`~sklearn_ext.svm.alpha_seeded_cv`.
    seeding : {"sir", "mir", "ato", "keep", "none"}, default="sir"
        Fold-to-fold seeding of the folds without a stored solution.
    scoring : str, callable, list, tuple or dict, default=None
        As in :class:`~sklearn_ext.TreeCVSearchCV`; ``None`` is accuracy.
    warm_start_store : WarmStartStore, default=None
        The store to read and fill; by default the estimator's, else a new one.
        Pass one to continue a path later (e.g. with more ``C`` values).
    random_state : int, default=0
        Seed of SIR's random replacements.

    Returns
    -------
    cv_results : dict
        Keys as in ``GridSearchCV.cv_results_``, one entry per ``(gamma, C)``
        in the given order (``gamma`` outer): ``params``, ``param_C``
        (``param_gamma``), ``split{i}_test_score``, ``mean_test_score``,
        ``std_test_score``, ``rank_test_score``, ``mean_fit_time``,
        ``std_fit_time``, ``mean_score_time``, ``std_score_time`` (the table
        of :class:`~sklearn_ext.TreeCVSearchCV`, with ``n_samples_fed`` the
        training rows of all folds); plus the backend's extras summed over
        the folds: ``n_iter`` (SMO iterations), ``seed_time``,
        ``warm_start_hits`` (one-vs-one problems started from a stored
        solution), ``warm_start_skips`` (problems solved by the exact skip) and
        ``warm_start_seed`` (the stored ``C`` most folds started from).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import scale
    >>> from sklearn_ext.svm import AlphaSeededSVC, svm_c_path_cv
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = scale(X)
    >>> res = svm_c_path_cv(AlphaSeededSVC(), X, y, Cs=[0.1, 1, 10, 100], cv=5)
    >>> res["mean_test_score"].round(3).tolist()
    [0.947, 0.974, 0.977, 0.958]
    >>> res["rank_test_score"].tolist()
    [4, 2, 1, 3]
    """
    Cs = _check_positive(Cs, "Cs")
    gamma_values = None if gammas is None else _check_positive(gammas, "gammas")
    model = as_alpha_seeded(estimator)
    if warm_start_store is None:
        warm_start_store = model.warm_start_store
    if warm_start_store is None:
        warm_start_store = WarmStartStore()
    # gamma outer, C inner: the table's rows in the documented order.
    grid = (
        {"C": Cs}
        if gamma_values is None
        else [{"gamma": [g], "C": Cs} for g in gamma_values]
    )
    search = TreeCVSearchCV(
        model.set_params(warm_start_store=warm_start_store),
        grid,
        scoring=scoring,
        refit=False,
        cv=cv,
        method=AlphaSeedingBackend(seeding=seeding, random_state=random_state),
        error_score="raise",
        return_run_info=True,
    )
    return search.fit(X, y).cv_results_
