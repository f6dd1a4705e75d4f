"""One question, one answer, whichever door it goes through.

For the same fold plan (fixed, randomized, interleaved) every door gives the
same fold scores by split index, the same metrics and the same result keys; an
estimator a method cannot run gets the same documented outcome everywhere."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from optuna.distributions import CategoricalDistribution
from optuna.trial import FixedTrial
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.linear_model import LogisticRegression, RidgeClassifier, SGDClassifier
from sklearn.preprocessing import scale

from optuna_treecv import TreeCVObjective
from optuna_treecv._cli import main
from sklearn_ext import (
    AlphaSeededSVC,
    StratifiedTreeCVSplitter,
    TreeCVSearchCV,
    alpha_seeded_cv,
    svm_c_path_cv,
    tree_cross_validate,
)

PLANS = {
    "fixed": dict(order="fixed"),
    "randomized": dict(order="randomized", random_state=0),
    "interleaved": dict(order="fixed", leaf_order="interleaved"),
}


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return scale(X[:300]), y[:300]


def _plan(kind, X, y):
    return StratifiedTreeCVSplitter(4, **PLANS[kind]).plan(X, y)


def _objective_splits(estimator, params, X, y, plan):
    objective = TreeCVObjective(estimator, params, X, y, cv=plan)
    trial = FixedTrial({name: d.choices[0] for name, d in params.items()})
    value = objective(trial)
    details = trial.user_attrs["cv"]
    splits = [details[f"split{i}_test_score"] for i in range(plan.n_splits)]
    assert value == details["mean_test_score"]
    return np.array(splits), details


@pytest.mark.parametrize("kind", list(PLANS))
# A multi-epoch learner through the tree on purpose: the regime note is expected.
@pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")
def test_incremental_learner_same_scores_through_every_door(cancer, kind):
    X, y = cancer
    plan = _plan(kind, X, y)
    estimator = SGDClassifier(alpha=1e-3, random_state=0)
    direct = tree_cross_validate(estimator, X, y, cv=plan, return_run_info=True)
    search = TreeCVSearchCV(estimator, {"alpha": [1e-3]}, cv=plan, refit=False)
    table = search.fit(X, y).cv_results_
    splits, attrs = _objective_splits(
        estimator, {"alpha": CategoricalDistribution([1e-3])}, X, y, plan
    )
    for i in range(plan.n_splits):
        assert table[f"split{i}_test_score"][0] == direct["test_score"][i]
    assert_array_equal(splits, direct["test_score"])
    assert attrs["backend"] == direct["backend"] == "python_tree"
    assert attrs["n_samples_fed"] == direct["n_samples_fed"]


@pytest.mark.parametrize("kind", list(PLANS))
def test_svm_same_scores_through_every_door(cancer, kind):
    """The issue's case: the SVM doors used to return folds in leaf order."""
    X, y = cancer
    plan = _plan(kind, X, y)
    estimator = AlphaSeededSVC(C=1.0)
    direct = tree_cross_validate(estimator, X, y, cv=plan, return_run_info=True)
    seeded = alpha_seeded_cv(estimator, X, y, cv=plan)
    path = svm_c_path_cv(estimator, X, y, Cs=[1.0], cv=plan)
    search = TreeCVSearchCV(
        estimator, {"C": [1.0]}, cv=plan, refit=False, return_run_info=True
    )
    table = search.fit(X, y).cv_results_
    splits, attrs = _objective_splits(
        estimator, {"C": CategoricalDistribution([1.0])}, X, y, plan
    )
    assert_array_equal(seeded["test_score"], direct["test_score"])
    assert_array_equal(splits, direct["test_score"])
    for i in range(plan.n_splits):
        assert path[f"split{i}_test_score"][0] == direct["test_score"][i]
        assert table[f"split{i}_test_score"][0] == direct["test_score"][i]
    # The same keys: alpha_seeded_cv is tree_cross_validate with the SVM backend.
    assert set(seeded) == set(direct)
    assert_array_equal(seeded["n_iter"], direct["n_iter"])
    assert attrs["n_iter"] == int(direct["n_iter"].sum())
    assert table["n_iter"][0] == direct["n_iter"].sum()


@pytest.mark.parametrize("kind", list(PLANS))
def test_exact_statistics_same_scores_through_every_door(cancer, kind):
    X, y = cancer
    plan = _plan(kind, X, y)
    estimator = RidgeClassifier(alpha=1.0)
    direct = tree_cross_validate(estimator, X, y, cv=plan, return_run_info=True)
    search = TreeCVSearchCV(estimator, {"alpha": [1.0]}, cv=plan, refit=False)
    table = search.fit(X, y).cv_results_
    splits, attrs = _objective_splits(
        estimator, {"alpha": CategoricalDistribution([1.0])}, X, y, plan
    )
    for i in range(plan.n_splits):
        assert table[f"split{i}_test_score"][0] == direct["test_score"][i]
    assert_array_equal(splits, direct["test_score"])
    assert attrs["backend"] == direct["backend"] == "exact"


def test_svm_doors_keep_every_metric(cancer):
    X, y = cancer
    plan = _plan("interleaved", X, y)
    metrics = ["accuracy", "f1"]
    direct = tree_cross_validate(
        AlphaSeededSVC(), X, y, cv=plan, scoring=metrics, return_run_info=True
    )
    seeded = alpha_seeded_cv(AlphaSeededSVC(), X, y, cv=plan, scoring=metrics)
    path = svm_c_path_cv(AlphaSeededSVC(), X, y, Cs=[1.0], cv=plan, scoring=metrics)
    for name in metrics:
        assert_array_equal(seeded[f"test_{name}"], direct[f"test_{name}"])
        for i in range(plan.n_splits):
            assert path[f"split{i}_test_{name}"][0] == direct[f"test_{name}"][i]
        assert f"rank_test_{name}" in path


def test_engine_options_reach_the_engine_through_tree_cross_validate(cancer):
    from sklearn_ext.svm import AlphaSeedingBackend

    X, y = cancer
    cold = tree_cross_validate(
        AlphaSeededSVC(),
        X,
        y,
        cv=5,
        method=AlphaSeedingBackend(seeding="none"),
        return_run_info=True,
    )
    sir = tree_cross_validate(AlphaSeededSVC(), X, y, cv=5, return_run_info=True)
    same = alpha_seeded_cv(AlphaSeededSVC(), X, y, cv=5, seeding="none")
    assert_array_equal(cold["n_iter"], same["n_iter"])
    assert cold["n_iter"].sum() > sir["n_iter"].sum()


# -- an estimator the method cannot run ----------------------------------------------
def test_fallback_is_the_same_through_every_door(capsys):
    # A learner without partial_fit: every backend scores its fit, so standard
    # CV runs without a warning (GridSearchCV gives none), noted at verbose > 0
    # and recorded as backend="standard", through every door.
    X, y = load_iris(return_X_y=True)
    estimator = LogisticRegression(max_iter=500)
    plan = StratifiedTreeCVSplitter(5).plan(X, y)
    message = "TreeCV cannot run LogisticRegression (it has no partial_fit method)"

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        direct = tree_cross_validate(
            estimator, X, y, cv=plan, return_run_info=True, verbose=1
        )
        assert capsys.readouterr().out.count(message) == 1
        search = TreeCVSearchCV(
            estimator, {"C": [1.0, 2.0]}, cv=plan, verbose=1, return_run_info=True
        ).fit(X, y)
        assert capsys.readouterr().out.count(message) == 1  # once per fit
        splits, attrs = _objective_splits(
            estimator, {"C": CategoricalDistribution([1.0])}, X, y, plan
        )
        tree_cross_validate(estimator, X, y, cv=plan)
    assert capsys.readouterr().out == ""  # verbose=0 prints nothing
    assert direct["backend"] == attrs["backend"] == "standard"
    assert list(search.cv_results_["backend"]) == ["standard", "standard"]
    assert_array_equal(splits, direct["test_score"])
    assert search.cv_results_["mean_test_score"][0] == direct["test_score"].mean()
    # Named explicitly, a method that cannot run the estimator refuses, everywhere.
    with pytest.raises(TypeError, match="method='treecv' cannot run"):
        tree_cross_validate(
            estimator, X, y, cv=plan, method="treecv", return_run_info=True
        )
    with pytest.raises(TypeError, match="method='treecv' cannot run"):
        TreeCVSearchCV(
            estimator, {"C": [1.0]}, cv=plan, method="treecv", error_score="raise"
        ).fit(X, y)
    objective = TreeCVObjective(
        estimator, {"C": CategoricalDistribution([1.0])}, X, y, backend="treecv"
    )
    with pytest.raises(TypeError, match="method='treecv' cannot run"):
        objective(FixedTrial({"C": 1.0}))


@pytest.mark.parametrize("command", ["cv", "tune"])
def test_fallback_through_the_command_line(command, capsys, tmp_path):
    argv = [command, "sklearn.linear_model:LogisticRegression", "iris", "--cv", "4"]
    if command == "tune":
        argv += ["--n-trials", "2", "--space", "C=cat:0.5,1.0"]
        argv += ["--storage", f"sqlite:///{tmp_path}/s.db"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Traceback" not in out + err
    assert "standard" in out
