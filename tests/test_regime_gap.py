"""The regime gap: the learner's own fit against the tree's one pass, measured.

Measured once per call, search or study on the first splits, paired with the
tree's models of the same splits; told in the regime note and recorded with the
results. It must be close to the true gap (``cross_validate`` of the learner's
``fit`` on the same folds minus the tree's mean).
"""

from __future__ import annotations

import warnings

import numpy as np
import optuna
import pytest
from optuna.distributions import CategoricalDistribution
from sklearn.datasets import load_digits
from sklearn.linear_model import Perceptron, SGDClassifier
from sklearn.model_selection import cross_validate

from optuna_treecv import TreeCVObjective
from sklearn_ext import (
    PegasosClassifier,
    TreeCVSearchCV,
    TreeCVSplitter,
    tree_cross_validate,
)
from sklearn_ext.model_selection import TreeCVRegimeWarning


@pytest.fixture(scope="module")
def digits():
    return load_digits(return_X_y=True)


@pytest.mark.parametrize(
    "learner", [SGDClassifier(random_state=0), Perceptron(random_state=0)], ids=str
)
def test_the_reported_gap_is_close_to_the_true_gap(digits, learner):
    X, y = digits
    cv = TreeCVSplitter(10)
    with pytest.warns(TreeCVRegimeWarning, match=r"Measured on \d+ splits"):
        tree = tree_cross_validate(learner, X, y, cv=cv, return_run_info=True)
    own = cross_validate(learner, X, y, cv=cv)["test_score"]
    gap = tree["regime_gap"]
    n = len(gap["splits"])
    assert gap["splits"] == list(range(n)) and n >= 2
    assert gap["fit_score"] == pytest.approx(own[:n].mean(), abs=1e-12)
    assert gap["tree_score"] == pytest.approx(tree["test_score"][:n].mean())
    true_gap = own.mean() - tree["test_score"].mean()
    # Within 0.02 of the truth, or within what its own standard error says.
    assert abs(gap["gap"] - true_gap) < max(0.02, 3 * (gap["stderr"] or 0))


def test_no_gap_where_the_tree_is_the_learners_fit(digits):
    X, y = digits
    with warnings.catch_warnings():
        warnings.simplefilter("error", TreeCVRegimeWarning)
        result = tree_cross_validate(
            PegasosClassifier(), X, y, cv=5, return_run_info=True
        )
        one_pass = SGDClassifier(max_iter=1, tol=None, shuffle=False)
        standard = tree_cross_validate(
            SGDClassifier(), X, y, cv=5, method="standard", return_run_info=True
        )
        tree_cross_validate(one_pass, X, y, cv=5, return_run_info=True)
    assert "regime_gap" not in result and "regime_gap" not in standard


def test_the_search_measures_its_best_candidate_once(digits, monkeypatch):
    from sklearn_ext.model_selection import _core

    X, y = digits
    calls = []
    measure = _core.measure_gap
    monkeypatch.setattr(_core, "measure_gap", lambda *a: calls.append(1) or measure(*a))
    grid = {"alpha": [1e-4, 1e-3, 1e-2]}
    with pytest.warns(TreeCVRegimeWarning, match="Measured on"):
        search = TreeCVSearchCV(SGDClassifier(random_state=0), grid, cv=5).fit(X, y)
    assert len(calls) == 1
    gap = search.regime_gap_
    best = search.best_index_
    splits = gap["splits"]
    tree = [search.cv_results_[f"split{i}_test_score"][best] for i in splits]
    assert gap["tree_score"] == pytest.approx(np.mean(tree))
    plain = TreeCVSearchCV(PegasosClassifier(), {"alpha": [1e-4]}, cv=5).fit(X, y)
    assert not hasattr(plain, "regime_gap_")  # GridSearchCV's attributes only


def test_a_study_measures_once_and_records_it(digits):
    X, y = digits
    space = {"alpha": CategoricalDistribution([1e-4, 1e-3, 1e-2])}
    objective = TreeCVObjective(SGDClassifier(random_state=0), space, X, y, cv=5)
    study = optuna.create_study(direction="maximize")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        study.optimize(objective, n_trials=4)
    notes = [w for w in caught if w.category is TreeCVRegimeWarning]
    assert len(notes) == 1 and "Measured on" in str(notes[0].message)
    measured = [t for t in study.trials if "regime_gap" in t.user_attrs["cv"]]
    assert len(measured) == 1
    assert objective.core_.gap_.gap == measured[0].user_attrs["cv"]["regime_gap"]["gap"]
    # The study says which of the learner's recorded parameters one pass ignores.
    regime = study.user_attrs["treecv_regime"]
    assert regime["scored"] == "one_pass"
    assert {"max_iter", "tol", "n_iter_no_change"} <= set(regime["unused_by_one_pass"])


def test_a_plain_call_does_not_pay_for_the_gap(digits, monkeypatch):
    from sklearn_ext.model_selection import _backends

    X, y = digits
    fits = []
    standard_fold = _backends._standard_fold
    monkeypatch.setattr(
        _backends, "_standard_fold", lambda *a: fits.append(1) or standard_fold(*a)
    )
    with pytest.warns(TreeCVRegimeWarning) as caught:
        result = tree_cross_validate(SGDClassifier(random_state=0), X, y, cv=5)
    assert "regime_gap" not in result and not fits
    assert "Measured" not in str(caught[0].message)
    with pytest.warns(TreeCVRegimeWarning, match="Measured on"):
        tree_cross_validate(
            SGDClassifier(random_state=0), X, y, cv=5, return_run_info=True
        )
    assert fits  # asked for, it is measured


# -- method="auto" acts on a large gap (searches and studies) -----------------------


@pytest.fixture(scope="module")
def diabetes():
    from sklearn.datasets import load_diabetes
    from sklearn.preprocessing import scale

    X, y = load_diabetes(return_X_y=True)
    rows = np.random.RandomState(0).permutation(len(y))
    return scale(X[rows]), y[rows]


@pytest.mark.parametrize(
    "splits, fit_score, tree_score, stderr, large",
    [
        (3, 0.95, 0.90, 0.001, False),  # 5 % of the score: told, kept
        (3, 0.95, 0.80, 0.001, True),  # 16 %: turned to fit
        (3, 0.95, 0.80, 0.04, False),  # within noise (t(2) = 4.3)
        (10, 0.95, 0.80, 0.04, True),  # the same, measured on ten splits
        (2, 0.95, 0.80, 0.02, False),  # two splits: t(1) = 12.7
        (1, 0.95, 0.10, float("nan"), False),  # no noise measured: never
        (3, 0.95, 0.96, 0.001, False),  # the tree better
        (3, -1.0, -3.0, 0.1, True),  # scores below zero: the magnitude
    ],
)
def test_the_rule_of_a_large_gap(splits, fit_score, tree_score, stderr, large):
    from sklearn_ext.model_selection._gap import RegimeGap

    gap = RegimeGap("score", tuple(range(splits)), fit_score, tree_score, 0.1, stderr)
    assert gap.is_large is large
    assert gap.as_dict()["large"] is large


def test_auto_turns_a_search_to_fit_on_a_large_gap(diabetes):
    from sklearn.linear_model import SGDRegressor
    from sklearn.model_selection import cross_val_score

    X, y = diabetes
    cv = TreeCVSplitter(5)
    grid = {"alpha": [1e-4, 1e-2, 1e-1]}
    with pytest.warns(TreeCVRegimeWarning, match="method='auto' therefore scores"):
        search = TreeCVSearchCV(
            SGDRegressor(random_state=0), grid, cv=cv, return_run_info=True
        ).fit(X, y)
    assert search.regime_gap_["large"] and search.regime_gap_["gap"] > 0.2
    # Every candidate scored SGDRegressor.fit, the refit is that fit, and the
    # best score describes it.
    assert type(search.best_estimator_) is SGDRegressor
    fed = search.cv_results_["n_samples_fed"]
    assert np.all(fed == 4 * len(y))  # k fits of (k - 1) / k of the rows, each
    again = cross_val_score(clone_of(search.best_estimator_), X, y, cv=cv)
    assert search.best_score_ == pytest.approx(again.mean(), abs=1e-12)
    # Asked for the tree, it keeps the tree.
    with pytest.warns(TreeCVRegimeWarning, match="Pass method='standard'"):
        kept = TreeCVSearchCV(
            SGDRegressor(random_state=0), grid, cv=cv, method="treecv"
        ).fit(X, y)
    assert type(kept.best_estimator_) is not SGDRegressor


def clone_of(estimator):
    from sklearn.base import clone

    return clone(estimator)


def test_auto_keeps_the_tree_on_a_small_gap(digits):
    X, y = digits
    with pytest.warns(TreeCVRegimeWarning, match="Pass method='standard'"):
        search = TreeCVSearchCV(
            PegasosClassifier(), {"alpha": [1e-4]}, cv=5, method="auto"
        ).fit(X, y)
        search = TreeCVSearchCV(
            SGDClassifier(random_state=0), {"alpha": [1e-4, 1e-3]}, cv=5
        ).fit(X, y)
    assert not search.regime_gap_["large"]
    assert type(search.best_estimator_) is not SGDClassifier  # one pass, kept


def test_auto_turns_a_study_to_fit_on_a_large_gap(diabetes):
    from sklearn.linear_model import SGDRegressor

    X, y = diabetes
    space = {"alpha": CategoricalDistribution([1e-4, 1e-3, 1e-2])}
    objective = TreeCVObjective(SGDRegressor(random_state=0), space, X, y, cv=5)
    study = optuna.create_study(direction="maximize")
    with pytest.warns(TreeCVRegimeWarning, match="method='auto' therefore scores"):
        study.optimize(objective, n_trials=3)
    regimes = [t.user_attrs["cv"]["regime"] for t in study.trials]
    assert regimes == ["fit"] * 3  # the first trial too, scored again by fit
    first = study.trials[0].user_attrs["cv"]
    assert first["regime_gap"]["large"]
    assert study.user_attrs["treecv_regime"]["scored"] == "fit"
    expected = cross_validate(
        SGDRegressor(random_state=0, alpha=study.trials[0].params["alpha"]),
        X,
        y,
        cv=5,
    )["test_score"].mean()
    assert study.trials[0].value == pytest.approx(expected, abs=1e-12)
