"""CV scores of a kernel SVM along a path of ``C`` values, with warm starts."""

from __future__ import annotations

import math
import time
from numbers import Real
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.utils.validation import check_array, check_consistent_length

from sklearn_ext.svm._cv import as_alpha_seeded, is_native_scoring, run_folds
from sklearn_ext.svm._warm_start import WarmStartStore

__all__ = ["svm_c_path_cv"]


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

    Like the ``Cs`` of :class:`~sklearn.linear_model.LogisticRegressionCV`:
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
    scoring : str or callable, default=None
        A scikit-learn scorer; ``None`` is accuracy.
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
        training rows of all folds); plus ``n_iter`` (SMO iterations over all
        folds), ``warm_start_hits`` (folds
        started from a stored solution) and ``warm_start_skips`` (one-vs-one
        problems solved by the exact skip).

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
    from sklearn_ext.model_selection._plan import FoldPlan
    from sklearn_ext.model_selection._search import _results_table
    from sklearn_ext.model_selection._validation import make_fold_plan, make_scorer_dict

    Cs = _check_positive(Cs, "Cs")
    gamma_values = None if gammas is None else _check_positive(gammas, "gammas")
    model = as_alpha_seeded(estimator)
    if warm_start_store is None:
        warm_start_store = getattr(model, "warm_start_store", None)
    if warm_start_store is None:
        warm_start_store = WarmStartStore()
    X = check_array(X, accept_sparse="csr", dtype=None, ensure_all_finite=True)
    y = check_array(y, ensure_2d=False, dtype=None)
    check_consistent_length(X, y)
    plan = (
        cv
        if isinstance(cv, FoldPlan)
        else make_fold_plan(cv, X, y, classifier=True, order="fixed")
    )
    scorer = make_scorer_dict(model, scoring)
    native = is_native_scoring(scoring)
    candidates = [
        {"C": C} if gamma_values is None else {"C": C, "gamma": g}
        for g in (gamma_values or [None])
        for C in Cs
    ]
    n = len(candidates)
    k = plan.n_splits
    outcomes = [
        {
            "test_score": np.empty(k),
            "fit_time": np.empty(k),
            "score_time": np.empty(k),
            "n_samples_fed": 0,
        }
        for _ in candidates
    ]
    n_iter = np.zeros(n, dtype=np.int64)
    hits = np.zeros(n, dtype=np.int64)
    skips = np.zeros(n, dtype=np.int64)
    # Within a gamma, from the smallest C up: the skip needs a smaller C done.
    order = sorted(range(n), key=lambda i: (i // len(Cs), candidates[i]["C"], i))
    for i in order:
        fold_model = clone(model).set_params(
            warm_start_store=warm_start_store, **candidates[i]
        )
        outcome = outcomes[i]
        for solution in run_folds(
            fold_model, X, y, plan, seeding=seeding, random_state=random_state
        ):
            f = solution.fold
            test = plan.test_indices(f)
            tic = time.perf_counter()
            if native:
                score = solution.accuracy(test, y[test])
            else:
                score = next(iter(scorer(solution.model, X[test], y[test]).values()))
            outcome["score_time"][f] = time.perf_counter() - tic
            outcome["test_score"][f] = score
            outcome["fit_time"][f] = solution.seed_time + solution.fit_time
            outcome["n_samples_fed"] += solution.n_train
            n_iter[i] += solution.n_iter
            hits[i] += solution.warm_start_C is not None
            skips[i] += solution.warm_start_skips
    results = _results_table(candidates, outcomes, k, error_score=np.nan)
    results["n_iter"] = n_iter
    results["warm_start_hits"] = hits
    results["warm_start_skips"] = skips
    return results
