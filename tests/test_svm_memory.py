"""Alpha-seeded CV keeps per fold only what is asked for: memory flat in k."""

import tracemalloc

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.datasets import load_wine, make_classification
from sklearn.metrics import get_scorer
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import scale

from sklearn_ext import TreeCVSearchCV, tree_cross_validate
from sklearn_ext.model_selection import FoldPlan
from sklearn_ext.svm import (
    AlphaSeededSVC,
    AlphaSeedingBackend,
    WarmStartStore,
    _classes,
    alpha_seeded_cv,
)
from sklearn_ext.svm._solver import PairProblem, check_solved


def _plan(X, y, k):
    return FoldPlan.from_cv(StratifiedKFold(k, shuffle=True, random_state=0), X, y)


@pytest.fixture
def set_model_calls(monkeypatch):
    """Counts the fold models built (``AlphaSeededSVC._set_model`` calls)."""
    calls = []
    original = AlphaSeededSVC._set_model

    def counting(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(AlphaSeededSVC, "_set_model", counting)
    return calls


def _compare_runs(slim, full):
    assert_array_equal(slim["test_score"], full["test_score"])
    assert_array_equal(slim["n_iter"], full["n_iter"])
    assert_array_equal(slim["n_samples_fed"], full["n_samples_fed"])
    for a, b in zip(slim["objective"], full["objective"], strict=True):
        assert_array_equal(a, b)
    assert "estimator" not in slim


@pytest.mark.parametrize("n_jobs", [1, 2])
@pytest.mark.parametrize("multiclass", [False, True], ids=["binary", "wine"])
def test_scores_without_fold_models_equal_scores_with_them(
    svm_binary, chains_on_small_data, set_model_calls, n_jobs, multiclass
):
    X, y = svm_binary
    if multiclass:
        X, y = load_wine(return_X_y=True)
        X = scale(X)
    plan = _plan(X, y, 6)
    model = AlphaSeededSVC(C=10.0, gamma=0.2)
    kwargs = dict(cv=plan, method=AlphaSeedingBackend(), n_jobs=n_jobs)
    slim = tree_cross_validate(model, X, y, **kwargs, return_run_info=True)
    assert set_model_calls == []  # scored natively, not returned: no model built
    full = tree_cross_validate(
        model, X, y, return_estimator=True, **kwargs, return_run_info=True
    )
    assert len(set_model_calls) == plan.n_splits
    _compare_runs(slim, full)
    # The native scores are the returned models' own.
    for fold, estimator in enumerate(full["estimator"]):
        test = plan.test_indices(fold)
        assert slim["test_score"][fold] == estimator.score(X[test], y[test])


def test_warm_start_extras_without_fold_models(svm_binary, set_model_calls):
    X, y = svm_binary
    plan = _plan(X, y, 5)
    runs = {}
    for keep in (False, True):
        store = WarmStartStore()
        for C in (1.0, 4.0):
            # Same store history in both: C=1 first, then C=4 seeded from it.
            runs[keep] = alpha_seeded_cv(
                AlphaSeededSVC(C=C, gamma=0.2, warm_start_store=store),
                X,
                y,
                cv=plan,
                n_jobs=1,
                return_estimator=keep,
            )
    assert len(set_model_calls) == 2 * plan.n_splits
    slim, full = runs[False], runs[True]
    _compare_runs(slim, full)
    for key in ("warm_start_seed", "warm_start_hits", "warm_start_skips"):
        assert_array_equal(slim[key], full[key])
    assert slim["warm_start_hits"].sum() > 0


@pytest.mark.parametrize("scoring", ["balanced_accuracy", "roc_auc"])
def test_other_scorers_still_get_fold_models(svm_binary, set_model_calls, scoring):
    X, y = svm_binary
    plan = _plan(X, y, 4)
    model = AlphaSeededSVC(C=3.0, gamma=0.2)
    result = alpha_seeded_cv(model, X, y, cv=plan, scoring=scoring)
    assert len(set_model_calls) == plan.n_splits
    full = alpha_seeded_cv(model, X, y, cv=plan, scoring=scoring, return_estimator=True)
    scorer = get_scorer(scoring)
    for fold, estimator in enumerate(full["estimator"]):
        test = plan.test_indices(fold)
        assert result["test_score"][fold] == scorer(estimator, X[test], y[test])


def test_search_door_builds_models_only_for_train_scores(svm_binary, set_model_calls):
    X, y = svm_binary
    plan = _plan(X, y, 4)
    grid = {"C": [1.0, 10.0]}
    kwargs = dict(cv=plan, method="alpha_seeding", refit=False, n_jobs=1)
    slim = TreeCVSearchCV(AlphaSeededSVC(gamma=0.2), grid, **kwargs).fit(X, y)
    assert set_model_calls == []
    full = TreeCVSearchCV(
        AlphaSeededSVC(gamma=0.2), grid, return_train_score=True, **kwargs
    ).fit(X, y)
    assert len(set_model_calls) == 2 * plan.n_splits
    for i in range(plan.n_splits):
        key = f"split{i}_test_score"
        assert_array_equal(slim.cv_results_[key], full.cv_results_[key])
    assert np.all(full.cv_results_["mean_train_score"] > 0.5)


def test_probability_sigmoids_only_for_models_someone_uses(svm_binary, monkeypatch):
    X, y = svm_binary
    plan = _plan(X, y, 4)
    calls = []
    original = _classes.platt_scaling

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(_classes, "platt_scaling", counting)
    model = AlphaSeededSVC(C=3.0, gamma=0.2, probability=True, random_state=0)
    accuracy = alpha_seeded_cv(model, X, y, cv=plan)
    assert calls == []  # accuracy reads no probability
    log_loss = alpha_seeded_cv(
        model, X, y, cv=plan, scoring=["accuracy", "neg_log_loss"]
    )
    assert len(calls) == plan.n_splits
    assert_array_equal(accuracy["test_score"], log_loss["test_accuracy"])
    assert np.all(log_loss["test_neg_log_loss"] < 0)


def test_pair_decisions_check_what_fitting_checks():
    problem = PairProblem(
        0,
        1,
        np.arange(2, dtype=np.intp),
        np.array([1.0, -1.0]),
        np.ones(2),
        np.array([0.5, 0.5]),
        np.zeros(2),
    )
    problem.rho = np.nan
    with pytest.raises(ValueError, match="dual coefficients or intercepts are not"):
        check_solved([problem], "AlphaSeededSVC", -1)


def _traced_peak(X, y, k, n_jobs):
    plan = _plan(X, y, k)
    tracemalloc.start()
    try:
        alpha_seeded_cv(
            AlphaSeededSVC(C=1.0, gamma=1.0 / X.shape[1]), X, y, cv=plan, n_jobs=n_jobs
        )
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_peak_memory_flat_in_k(chains_on_small_data, n_jobs):
    # Wide rows, nearly all support vectors: a fold model would copy most of X.
    X, y = make_classification(
        n_samples=600, n_features=300, n_informative=20, random_state=0
    )
    X = scale(X)
    kernel = 8 * X.shape[0] ** 2
    low, high = _traced_peak(X, y, 4, n_jobs), _traced_peak(X, y, 30, n_jobs)
    assert high <= 1.1 * low
    # Beyond the kernel matrix, less than half a copy of X: no fold's support
    # vectors (2.9 MB on one chain and 5.7 MB on two when each fold built its
    # model; 0.2 and 0.45 MB without).
    assert high - kernel < 0.5 * X.nbytes
