"""TreeCVObjective: values, attributes, reports, pruning and bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import optuna
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from optuna.distributions import (
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.pruners import BasePruner
from optuna.trial import FixedTrial, TrialState
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.naive_bayes import GaussianNB

from optuna_treecv import TreeCVObjective, suggest_params
from sklearn_ext import TreeCVSplitter, tree_cross_validate

optuna.logging.set_verbosity(optuna.logging.WARNING)

SPACE = {"alpha": FloatDistribution(1e-5, 1e-1, log=True)}


@pytest.fixture(scope="module")
def data():
    return make_classification(
        n_samples=400, n_features=10, n_informative=5, random_state=0
    )


def sgd():
    return SGDClassifier(max_iter=5, tol=None, random_state=0)


class PruneAtStep(BasePruner):
    """Prune every trial whose number is odd once it reported ``step``."""

    def __init__(self, step: int) -> None:
        self.step = step

    def prune(self, study, trial) -> bool:
        return (
            trial.number % 2 == 1
            and trial.last_step is not None
            and trial.last_step >= self.step
        )


def test_value_is_mean_of_stored_split_scores(data):
    X, y = data
    objective = TreeCVObjective(sgd(), SPACE, X, y, cv=6, random_state=0)
    study = optuna.create_study(direction="maximize")
    study.optimize(objective, n_trials=3)
    for trial in study.trials:
        attrs = trial.user_attrs
        splits = [attrs[f"split{i}_test_score"] for i in range(6)]
        assert trial.value == attrs["mean_test_score"]
        assert_allclose(trial.value, np.mean(splits), rtol=1e-12)
        assert_allclose(attrs["std_test_score"], np.std(splits), rtol=1e-12)
        assert_allclose(
            attrs["stderr_test_score"], np.std(splits, ddof=1) / math.sqrt(6)
        )
        assert attrs["backend"] == "python_tree"
        assert attrs["n_samples_fed"] == objective.fold_plan_.n_samples_fed()
        assert attrs["fit_time"] > 0
        # JSON-safe plain Python values, as SQLite and Journal storages need.
        json.dumps(attrs)
        assert all(type(attrs[f"split{i}_test_score"]) is float for i in range(6))
        assert type(attrs["n_samples_fed"]) is int
        # Intermediate values: the running mean, step = leaves done - 1.
        inter = trial.intermediate_values
        assert sorted(inter) == list(range(6))
        assert_allclose(inter[5], trial.value, rtol=1e-12)
        assert_allclose(inter[0], splits[0])


def test_matches_tree_cross_validate(data):
    X, y = data
    objective = TreeCVObjective(GaussianNB(), {}, X, y, cv=5, backend="standard")
    value = objective(FixedTrial({}))
    expected = tree_cross_validate(GaussianNB(), X, y, cv=5, method="treecv")
    assert_allclose(value, expected["test_score"].mean(), rtol=1e-12)


def test_attributes_survive_sqlite_round_trip(data, tmp_path):
    X, y = data
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(storage=storage, study_name="rt", direction="maximize")
    study.optimize(TreeCVObjective(sgd(), SPACE, X, y, cv=4), n_trials=2)
    loaded = optuna.load_study(study_name="rt", storage=storage)
    assert [t.user_attrs for t in loaded.trials] == [t.user_attrs for t in study.trials]
    for trial in loaded.trials:
        splits = [trial.user_attrs[f"split{i}_test_score"] for i in range(4)]
        assert trial.value == pytest.approx(np.mean(splits), rel=1e-12)


def test_pruner_prunes_and_records_pruned_state(data):
    X, y = data
    objective = TreeCVObjective(sgd(), SPACE, X, y, cv=8)
    study = optuna.create_study(direction="maximize", pruner=PruneAtStep(1))
    for _ in range(4):
        trial = study.ask()
        try:
            value = objective(trial)
        except optuna.TrialPruned:
            study.tell(trial, state=TrialState.PRUNED)
        else:
            study.tell(trial, value)
    states = [t.state for t in study.trials]
    assert states == [TrialState.COMPLETE, TrialState.PRUNED] * 2
    full, pruned = study.trials[0], study.trials[1]
    assert sorted(pruned.intermediate_values) == [0, 1]
    assert "mean_test_score" not in pruned.user_attrs
    assert {k for k in pruned.user_attrs if k.startswith("split")} == {
        "split0_test_score",
        "split1_test_score",
    }
    assert 0 < pruned.user_attrs["n_samples_fed"] < full.user_attrs["n_samples_fed"]


def test_median_pruner_in_optimize(data):
    X, y = data
    space = {"alpha": FloatDistribution(1e-5, 1e2, log=True)}
    study = optuna.create_study(
        direction="maximize",
        sampler=optuna.samplers.RandomSampler(seed=0),
        pruner=optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=0),
    )
    study.optimize(TreeCVObjective(sgd(), space, X, y, cv=5), n_trials=12)
    states = {t.state for t in study.trials}
    assert TrialState.PRUNED in states and TrialState.COMPLETE in states


@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")
def test_per_fold_reports_each_fold_in_a_shuffled_order(data):
    X, y = data
    objective = TreeCVObjective(
        GaussianNB(), {}, X, y, cv=8, report="per_fold", random_state=0
    )
    study = optuna.create_study(
        direction="maximize", pruner=optuna.pruners.WilcoxonPruner()
    )
    study.optimize(objective, n_trials=3)
    reference = tree_cross_validate(GaussianNB(), X, y, cv=objective.cv)["test_score"]
    orders = []
    for trial in study.trials:
        attrs = trial.user_attrs
        orders.append(attrs["fold_order"])
        assert sorted(attrs["fold_order"]) == list(range(8))
        # Step = fold index of the base plan, value = that fold's own score.
        assert sorted(trial.intermediate_values) == list(range(8))
        for i in range(8):
            assert trial.intermediate_values[i] == attrs[f"split{i}_test_score"]
        # GaussianNB does not depend on the feeding order: same fold scores.
        splits = [attrs[f"split{i}_test_score"] for i in range(8)]
        assert_allclose(splits, reference, rtol=1e-12)
    assert orders[0] != orders[1]
    # Reproducible: the order depends on random_state and the trial number only.
    again = TreeCVObjective(
        GaussianNB(), {}, X, y, cv=8, report="per_fold", random_state=0
    )
    study2 = optuna.create_study(direction="maximize")
    study2.optimize(again, n_trials=1)
    assert study2.trials[0].user_attrs["fold_order"] == orders[0]


@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")
def test_running_mean_with_wilcoxon_warns(data):
    X, y = data
    study = optuna.create_study(
        direction="maximize", pruner=optuna.pruners.WilcoxonPruner()
    )
    with pytest.warns(UserWarning, match="report='per_fold'"):
        study.optimize(TreeCVObjective(sgd(), SPACE, X, y, cv=3), n_trials=1)


def test_permuted_plan_keeps_folds_order_and_seed(data):
    X, y = data
    cv = TreeCVSplitter(6, order="randomized", random_state=0)
    objective = TreeCVObjective(sgd(), SPACE, X, y, cv=cv, report="per_fold")
    base = objective.fold_plan_
    assert base.order == "randomized"
    perm = np.array([3, 0, 5, 1, 4, 2])
    plan = base.reordered(perm)
    assert (plan.order, plan.seed) == (base.order, base.seed)
    for j, fold in enumerate(perm):
        assert_array_equal(plan.test_indices(j), base.test_indices(int(fold)))
    # Same trial number, same leaf order and feeding order: the same value.
    value = objective(FixedTrial({"alpha": 1e-3}, number=1))
    assert objective(FixedTrial({"alpha": 1e-3}, number=1)) == value


def test_multi_objective_returns_mean_and_std_without_reports(data):
    X, y = data
    study = optuna.create_study(directions=["maximize", "minimize"])
    study.optimize(TreeCVObjective(sgd(), SPACE, X, y, cv=4), n_trials=2)
    for trial in study.trials:
        assert trial.values == [
            trial.user_attrs["mean_test_score"],
            trial.user_attrs["std_test_score"],
        ]
        assert trial.intermediate_values == {}


def test_callable_params_and_int_categorical_spaces(data):
    X, y = data

    def space(trial):
        loss = trial.suggest_categorical("loss", ["hinge", "log_loss"])
        return {"loss": loss, "max_iter": trial.suggest_int("epochs", 1, 3)}

    objective = TreeCVObjective(sgd(), space, X, y, cv=3)
    study = optuna.create_study(direction="maximize")
    study.optimize(objective, n_trials=2)
    assert set(study.trials[0].params) == {"loss", "epochs"}
    dict_space = {
        "loss": CategoricalDistribution(["hinge", "log_loss"]),
        "max_iter": IntDistribution(1, 3),
    }
    assert suggest_params(FixedTrial({"loss": "hinge", "max_iter": 2}), dict_space) == {
        "loss": "hinge",
        "max_iter": 2,
    }


def test_auto_falls_back_to_standard_for_fit_only_estimators(data):
    X, y = data
    space = {"C": FloatDistribution(0.1, 10, log=True)}
    objective = TreeCVObjective(LogisticRegression(), space, X, y, cv=3)
    study = optuna.create_study(direction="maximize")
    with pytest.warns(UserWarning, match="falls back to standard"):
        study.optimize(objective, n_trials=1)
    assert study.trials[0].user_attrs["backend"] == "standard"


@pytest.mark.parametrize(
    "params, kwargs, error, match",
    [
        ({"alpha": [1e-4, 1e-3]}, {}, TypeError, r"params\['alpha'\].*Categorical"),
        ({"alpha": 0.1}, {}, TypeError, r"must be an optuna.distributions object"),
        ("alpha", {}, TypeError, "must be a dict from parameter name"),
        ({"alpah": FloatDistribution(0, 1)}, {}, ValueError, "Invalid parameter"),
        (SPACE, {"scoring": "acuracy"}, ValueError, "Invalid scoring='acuracy'"),
        (SPACE, {"scoring": ["accuracy"]}, ValueError, "one metric"),
        (SPACE, {"backend": "fast"}, ValueError, "'backend' parameter"),
        (SPACE, {"report": "mean"}, ValueError, "'report' parameter"),
        (SPACE, {"cv": 1}, ValueError, "'cv' parameter"),
    ],
)
def test_bad_input(data, params, kwargs, error, match):
    X, y = data
    with pytest.raises(error, match=match):
        TreeCVObjective(sgd(), params, X, y, **kwargs)


def test_callable_params_must_return_a_dict(data):
    X, y = data
    objective = TreeCVObjective(sgd(), lambda trial: [1], X, y, cv=3)
    with pytest.raises(TypeError, match="must return a dict"):
        objective(FixedTrial({}))
