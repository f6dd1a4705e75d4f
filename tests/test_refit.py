"""The one-standard-error rule and the study -> model helpers."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import optuna
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_array_equal
from optuna.distributions import FloatDistribution
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.linear_model import RidgeClassifier, SGDClassifier
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.neural_network import MLPClassifier

from optuna_treecv import TreeCVObjective, refit_estimator, select_trial
from sklearn_ext import PegasosClassifier
from sklearn_ext.model_selection import TreeCVRegimeWarning, one_standard_error_rule

optuna.logging.set_verbosity(optuna.logging.WARNING)


def results(means, stderrs, alphas):
    """cv_results_ with 4 split columns giving the wanted means and stderrs."""
    means, stderrs = np.asarray(means, float), np.asarray(stderrs, float)
    # Splits m -/+ d: std(ddof=1) = d * sqrt(4/3), stderr = that / 2.
    d = stderrs * 2 / np.sqrt(4 / 3)
    out = {"params": [{"alpha": a} for a in alphas], "mean_test_score": means}
    for i, sign in enumerate([-1, 1, -1, 1]):
        out[f"split{i}_test_score"] = means + sign * d
    return out


def test_picks_simplest_within_one_standard_error():
    cv = results([0.80, 0.90, 0.88, 0.85], [0.01, 0.03, 0.01, 0.01], [1, 2, 3, 4])
    # Band: 0.90 - 0.03 = 0.87 holds alphas 2 and 3.
    assert one_standard_error_rule("alpha")(cv) == 1
    assert one_standard_error_rule("alpha", greater_is_simpler=True)(cv) == 2
    assert one_standard_error_rule("alpha", n_std_errors=0)(cv) == 1
    wide = one_standard_error_rule("alpha", greater_is_simpler=True, n_std_errors=2)
    assert wide(cv) == 3
    assert one_standard_error_rule(lambda p: -p["alpha"])(cv) == 2


def test_stderr_column_wins_over_splits_and_metric_choice():
    cv = {
        "params": [{"C": 1}, {"C": 2}],
        "mean_test_acc": [0.5, 0.6],
        "stderr_test_acc": [0.0, 0.2],
        "mean_test_f1": [0.9, 0.1],
        "stderr_test_f1": [0.0, 0.0],
    }
    assert one_standard_error_rule("C", metric="acc")(cv) == 0
    assert one_standard_error_rule("C", metric="f1")(cv) == 0
    with pytest.raises(ValueError, match="several metrics"):
        one_standard_error_rule("C")(cv)
    with pytest.raises(ValueError, match="'metric' 'auc' is not in the results"):
        one_standard_error_rule("C", metric="auc")(cv)


def test_as_gridsearch_refit_and_picklable():
    X, y = make_classification(n_samples=200, random_state=0)
    rule = one_standard_error_rule("alpha", greater_is_simpler=True)
    search = GridSearchCV(
        RidgeClassifier(), {"alpha": [1e-3, 1e-1, 1e1, 1e3]}, refit=rule, cv=4
    )
    search.fit(X, y)
    assert search.best_index_ == rule(search.cv_results_)
    means = search.cv_results_["mean_test_score"]
    assert (
        search.best_params_["alpha"]
        >= search.cv_results_["params"][int(np.argmax(means))]["alpha"]
    )
    assert pickle.loads(pickle.dumps(clone(search))).refit(search.cv_results_) == (
        search.best_index_
    )


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"param": 3}, TypeError, "'param' parameter"),
        ({"param": "a", "n_std_errors": -1}, ValueError, "'n_std_errors'"),
        ({"param": "a", "greater_is_simpler": "yes"}, TypeError, "greater_is_"),
    ],
)
def test_rule_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        one_standard_error_rule(**kwargs)


# A multi-epoch learner through the tree on purpose: the regime note is expected.
@pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")
def test_select_trial_and_refit_estimator():
    X, y = make_classification(n_samples=300, random_state=0)
    sgd = SGDClassifier(max_iter=5, tol=None, random_state=0)
    space = {"alpha": FloatDistribution(1e-5, 1.0, log=True)}
    study = optuna.create_study(
        direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0)
    )
    study.optimize(TreeCVObjective(sgd, space, X, y, cv=4), n_trials=8)
    best = select_trial(study)
    assert best.number == study.best_trial.number
    simple = select_trial(study, simplest="alpha", greater_is_simpler=True)
    attrs = simple.user_attrs
    assert simple.params["alpha"] >= best.params["alpha"]
    assert attrs["mean_test_score"] >= (
        best.value - best.user_attrs["stderr_test_score"]
    )
    model = refit_estimator(study, sgd, X, y, simplest="alpha", greater_is_simpler=True)
    # Scored by one pass of partial_fit, so refit the same way (a wrapper).
    assert model.estimator_.alpha == simple.params["alpha"]
    assert model.optuna_trial_.number == simple.number
    assert hasattr(model.estimator_, "coef_")

    def space_fn(trial):
        return {"alpha": 10 ** trial.suggest_float("log_alpha", -5, 0)}

    study2 = optuna.create_study(direction="maximize")
    study2.optimize(TreeCVObjective(sgd, space_fn, X, y, cv=3), n_trials=2)
    model2 = refit_estimator(study2, sgd, X, y, params=space_fn)
    expected = 10 ** study2.best_params["log_alpha"]
    assert model2.estimator_.alpha == pytest.approx(expected)


# An MLP far from one pass is scored by its own fit ("auto"), whose small
# max_iter does not converge here: on purpose.
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize(
    "estimator",
    [
        SGDClassifier(random_state=0),
        PegasosClassifier(),
        MLPClassifier(hidden_layer_sizes=(8,), learning_rate_init=0.01, random_state=0),
    ],
    ids=["SGDClassifier", "PegasosClassifier", "MLPClassifier"],
)
def test_refit_estimator_reproduces_the_trials_value(estimator):
    X, y = make_classification(n_samples=300, n_informative=5, random_state=0)
    objective = TreeCVObjective(
        estimator, {"alpha": FloatDistribution(1e-4, 1e-1, log=True)}, X, y, cv=4
    )
    study = optuna.create_study(
        direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TreeCVRegimeWarning)
        study.optimize(objective, n_trials=3)
    model = refit_estimator(study, estimator, X, y)
    plan = objective.fold_plan_
    if model.optuna_trial_.regime == "fit":  # the splitter's own rows, as fitted
        splits = [(plan.fit_indices(f), plan.test_indices(f)) for f in plan.leaf_order]
    else:  # one pass over each fold's rows in the tree's feeding order
        splits = list(plan.split())
    scores = cross_val_score(clone(model), X, y, cv=splits)
    assert abs(scores.mean() - study.best_value) <= 1e-12
    again = clone(model).fit(X, y)
    assert_array_equal(again.predict(X), model.predict(X))


def test_select_trial_needs_objective_trials():
    study = optuna.create_study(directions=["maximize", "minimize"])
    with pytest.raises(ValueError, match="no complete trial"):
        select_trial(study)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0, 1),  # mean
            st.floats(0, 0.2),  # standard error
            st.integers(0, 5),  # complexity
        ),
        min_size=1,
        max_size=12,
    ),
    st.floats(0, 3),
)
def test_rule_invariants(candidates, n_std_errors):
    means, stderrs, values = map(np.array, zip(*candidates, strict=True))
    cv = {
        "params": [{"depth": int(v)} for v in values],
        "mean_test_score": means,
        "stderr_test_score": stderrs,
    }
    chosen = one_standard_error_rule("depth", n_std_errors=n_std_errors)(cv)
    best = int(np.argmax(means))
    threshold = means[best] - n_std_errors * stderrs[best]
    assert means[chosen] >= threshold
    # No candidate within the band is simpler.
    within = means >= threshold
    assert values[chosen] == values[within].min()


def test_refit_estimator_after_standard_cv_is_the_learners_fit():
    X, y = make_classification(n_samples=200, random_state=0)
    sgd = SGDClassifier(max_iter=20, tol=None, random_state=0)
    space = {"alpha": FloatDistribution(1e-4, 1e-1, log=True)}
    study = optuna.create_study(direction="maximize")
    objective = TreeCVObjective(sgd, space, X, y, cv=3, backend="standard")
    study.optimize(objective, n_trials=2)
    model = refit_estimator(study, sgd, X, y)
    assert type(model) is SGDClassifier
    expected = clone(sgd).set_params(**study.best_params).fit(X, y)
    assert_array_equal(model.coef_, expected.coef_)
