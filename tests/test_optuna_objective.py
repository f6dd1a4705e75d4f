"""TreeCVObjective: values, attributes, reports, pruning and bad input."""

from __future__ import annotations

import json
import math
import warnings

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

from optuna_treecv import StudyIdentityError, TreeCVObjective, suggest_params
from sklearn_ext import TreeCVSplitter, tree_cross_validate
from sklearn_ext.model_selection import TreeCVFallbackWarning

optuna.logging.set_verbosity(optuna.logging.WARNING)

# The trials run SGDClassifier(max_iter=5) through the tree on purpose: its regime
# note is expected (tests/test_search_parity.py checks that it is given).
pytestmark = pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")

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
        # One attribute holds the details; the summary has columns of its own.
        attrs = trial.user_attrs["cv"]
        assert set(trial.user_attrs) == {"cv", "mean_test_score", "stderr_test_score"}
        for key in ("mean_test_score", "stderr_test_score"):
            assert trial.user_attrs[key] == attrs[key]
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
    expected = tree_cross_validate(
        GaussianNB(), X, y, cv=5, method="treecv", return_run_info=True
    )
    assert_allclose(value, expected["test_score"].mean(), rtol=1e-12)


def test_attributes_survive_sqlite_round_trip(data, tmp_path):
    X, y = data
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(storage=storage, study_name="rt", direction="maximize")
    study.optimize(TreeCVObjective(sgd(), SPACE, X, y, cv=4), n_trials=2)
    loaded = optuna.load_study(study_name="rt", storage=storage)
    assert [t.user_attrs for t in loaded.trials] == [t.user_attrs for t in study.trials]
    for trial in loaded.trials:
        splits = [trial.user_attrs["cv"][f"split{i}_test_score"] for i in range(4)]
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
    assert set(pruned.user_attrs) == {"cv"}
    details = pruned.user_attrs["cv"]
    assert "mean_test_score" not in details
    assert {k for k in details if k.startswith("split")} == {
        "split0_test_score",
        "split1_test_score",
    }
    assert 0 < details["n_samples_fed"] < full.user_attrs["cv"]["n_samples_fed"]


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
    reference = tree_cross_validate(
        GaussianNB(), X, y, cv=objective.cv, return_run_info=True
    )["test_score"]
    orders = []
    for trial in study.trials:
        attrs = trial.user_attrs["cv"]
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
    assert study2.trials[0].user_attrs["cv"]["fold_order"] == orders[0]


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
            trial.user_attrs["cv"]["std_test_score"],
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
    # Every backend scores LogisticRegression.fit: no warning, the trial records
    # the backend and the objective's core keeps the note.
    with warnings.catch_warnings():
        warnings.simplefilter("error", TreeCVFallbackWarning)
        study.optimize(objective, n_trials=1)
    assert study.trials[0].user_attrs["cv"]["backend"] == "standard"
    assert objective.core_.notes == [
        "TreeCV cannot run LogisticRegression (it has no partial_fit method); "
        "method='auto' falls back to standard k-fold CV, training each fold with "
        "fit (recorded as backend='standard'). Pass method='standard' to choose it "
        "explicitly."
    ]


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


class PruneAfterReports(BasePruner):
    """Prune every odd-numbered trial once it has reported ``n`` values."""

    def __init__(self, n: int) -> None:
        self.n = n

    def prune(self, study, trial) -> bool:
        return trial.number % 2 == 1 and len(trial.intermediate_values) >= self.n


# -- storage writes per trial --------------------------------------------------------
class CountingStorage(optuna.storages.InMemoryStorage):
    """An in-memory storage counting the trial writes an objective makes."""

    def __init__(self) -> None:
        super().__init__()
        self.attrs: list[str] = []
        self.reports = 0

    def set_trial_user_attr(self, trial_id, key, value) -> None:
        self.attrs.append(key)
        super().set_trial_user_attr(trial_id, key, value)

    def set_trial_intermediate_value(self, trial_id, step, value) -> None:
        self.reports += 1
        super().set_trial_intermediate_value(trial_id, step, value)


def test_few_storage_writes_per_trial(data):
    X, y = data
    storage = CountingStorage()
    study = optuna.create_study(
        storage=storage, direction="maximize", pruner=PruneAtStep(2)
    )
    objective = TreeCVObjective(sgd(), SPACE, X, y, cv=6)
    study.optimize(objective, n_trials=2)  # Trial 1 is pruned after 3 folds.
    # Study identity: written once, before the first trial.
    identity = [k for k in storage.attrs if k.startswith("treecv_")]
    assert identity == []  # Study attributes do not go through trial writes.
    complete, pruned = study.trials
    assert pruned.state == TrialState.PRUNED
    # 3 attribute writes for a complete trial, 1 for a pruned one; a report per fold.
    assert storage.attrs == ["mean_test_score", "stderr_test_score", "cv", "cv"]
    assert storage.reports == 6 + 3
    assert len(complete.intermediate_values) == 6


def test_nop_pruner_reads_and_writes_no_reports(data, monkeypatch):
    X, y = data
    storage = CountingStorage()
    study = optuna.create_study(
        storage=storage, direction="maximize", pruner=optuna.pruners.NopPruner()
    )
    asked = []
    monkeypatch.setattr(
        optuna.pruners.NopPruner, "prune", lambda self, s, t: asked.append(1)
    )
    study.optimize(TreeCVObjective(sgd(), SPACE, X, y, cv=5), n_trials=2)
    assert storage.reports == 0 and asked == []
    assert all(t.intermediate_values == {} for t in study.trials)
    assert all(len(t.user_attrs["cv"]) > 5 for t in study.trials)


@pytest.mark.parametrize(
    "estimator, backend",
    [
        (sgd(), "python_tree"),
        (sgd(), "standard"),
        # method="auto" picks the exact statistics backend for naive Bayes.
        (GaussianNB(), "exact"),
    ],
)
@pytest.mark.parametrize("report", ["running_mean", "per_fold"])
def test_pruned_trial_records_every_reported_fold(data, estimator, backend, report):
    # Each intermediate value has its fold's score in the "cv" attribute.
    X, y = data
    method = "standard" if backend == "standard" else "auto"
    space = SPACE if isinstance(estimator, SGDClassifier) else {}
    objective = TreeCVObjective(
        estimator, space, X, y, cv=6, backend=method, report=report, random_state=0
    )
    study = optuna.create_study(direction="maximize", pruner=PruneAfterReports(3))
    study.optimize(objective, n_trials=2)
    pruned = study.trials[1]
    assert pruned.state == TrialState.PRUNED
    details = pruned.user_attrs["cv"]
    splits = sorted(int(k[5:-11]) for k in details if k.startswith("split"))
    assert len(splits) == len(pruned.intermediate_values) >= 2
    if report == "per_fold":
        assert splits == sorted(pruned.intermediate_values)
        for fold in splits:
            score = details[f"split{fold}_test_score"]
            assert pruned.intermediate_values[fold] == score
    else:
        last = max(pruned.intermediate_values)
        mean = np.mean([details[f"split{f}_test_score"] for f in splits])
        assert_allclose(pruned.intermediate_values[last], mean, rtol=1e-12)
    assert details["backend"] == backend


# -- study identity ------------------------------------------------------------------
def test_study_records_its_identity(data, tmp_path):
    X, y = data
    storage = f"sqlite:///{tmp_path / 'id.db'}"
    study = optuna.create_study(storage=storage, study_name="s", direction="maximize")
    objective = TreeCVObjective(sgd(), SPACE, X, y, cv=4, scoring="accuracy")
    study.optimize(objective, n_trials=1)
    attrs = optuna.load_study(study_name="s", storage=storage).user_attrs
    assert attrs["treecv_learner"] == "sklearn.linear_model.SGDClassifier"
    assert attrs["treecv_learner_params"]["max_iter"] == 5
    assert "alpha" not in attrs["treecv_learner_params"]  # Searched, not fixed.
    assert attrs["treecv_data"].startswith("400x10, hash ")
    assert attrs["treecv_folds"].startswith("4 folds, fixed order, hash ")
    assert attrs["treecv_scoring"] == "accuracy"
    assert attrs["treecv_search_space"] == {
        "alpha": "FloatDistribution(high=0.1, log=True, low=1e-05, step=None)"
    }
    assert attrs["treecv_report"] == "running_mean"
    json.dumps(attrs)
    # The same settings, rebuilt (as another process would): resumes.
    again = TreeCVObjective(sgd(), SPACE, X, y, cv=4, scoring="accuracy")
    optuna.load_study(study_name="s", storage=storage).optimize(again, n_trials=1)
    assert len(study.trials) == 2


@pytest.mark.parametrize(
    "change, match",
    [
        ({"X": "other"}, r"Changed: the data \(X and y\): recorded 400x10, hash \w+"),
        ({"y": "other"}, r"the data \(X and y\)"),
        ({"cv": 5}, "the fold plan: recorded 4 folds"),
        ({"scoring": "f1"}, "the scoring: recorded accuracy, now f1"),
        (
            {"params": {"alpha": FloatDistribution(1e-3, 1.0, log=True)}},
            r"the search space: alpha FloatDistribution\(high=0.1, log=True, "
            r"low=1e-05, step=None\) -> FloatDistribution\(high=1.0, log=True, "
            r"low=0.001, step=None\)",
        ),
        ({"params": {"l1_ratio": FloatDistribution(0, 1)}}, "alpha .* -> \\(none\\)"),
        ({"estimator": "eta0"}, "the learner's fixed parameters: eta0 0.01 -> 0.5"),
        ({"estimator": "class"}, "the learner: recorded sklearn.linear_model.SGDC"),
        ({"report": "per_fold"}, "the reported values"),
    ],
)
def test_resuming_with_other_settings_is_refused(data, change, match):
    X, y = data
    study = optuna.create_study(study_name="iris", direction="maximize")
    kwargs = {"cv": 4, "scoring": "accuracy"}
    study.optimize(TreeCVObjective(sgd(), SPACE, X, y, **kwargs), n_trials=1)
    estimator, params = sgd(), SPACE
    if change.get("X") == "other":
        X = X + 1.0
    if change.get("y") == "other":
        y = 1 - y
    if change.get("estimator") == "eta0":
        estimator.set_params(eta0=0.5)
    if change.get("estimator") == "class":
        from sklearn.linear_model import Perceptron

        estimator = Perceptron(max_iter=5, tol=None, random_state=0)
    params = change.get("params", params)
    for key in ("cv", "scoring", "report"):
        if key in change:
            kwargs[key] = change[key]
    other = TreeCVObjective(estimator, params, X, y, **kwargs)
    with pytest.raises(StudyIdentityError, match=match) as info:
        study.optimize(other, n_trials=1)
    assert "Start a new study instead (another study_name)" in str(info.value)
    assert info.value.study_name == "iris"
    # A name moved into or out of the space is one change, not two.
    assert len(info.value.changes) == 1
    # Refused before sampling: the only new trial is the failed one.
    assert [t.state for t in study.trials][1:] in ([], [TrialState.FAIL])
    # A new study takes the new settings.
    fresh = optuna.create_study(study_name="iris-2", direction="maximize")
    fresh.optimize(other, n_trials=1)
    assert fresh.trials[0].state == TrialState.COMPLETE


def test_study_with_trials_of_other_code_is_refused_up_front(data):
    X, y = data
    study = optuna.create_study(study_name="other", direction="maximize")
    study.optimize(lambda t: t.suggest_float("x", 0, 1) + 10.0, n_trials=2)
    objective = TreeCVObjective(sgd(), SPACE, X, y, cv=3)
    with pytest.raises(StudyIdentityError, match="made by other code") as info:
        objective.check_study(study)
    assert "2 finished trial(s) that no TreeCVObjective scored" in str(info.value)
    assert "trial #0 searched: x" in str(info.value)
    with pytest.raises(StudyIdentityError):
        study.optimize(objective, n_trials=1)
    # Refused before any CV: nothing recorded, the new trial failed at once.
    assert not study.user_attrs
    assert [t.state for t in study.trials][2:] == [TrialState.FAIL]
    # Queued or failed trials of other code, and empty studies, are adopted.
    queued = optuna.create_study(direction="maximize")
    queued.enqueue_trial({"alpha": 1e-3})
    queued.optimize(lambda t: 1 / 0, n_trials=1, catch=(ZeroDivisionError,))
    queued.enqueue_trial({"alpha": 1e-3})
    queued.optimize(objective, n_trials=1)
    assert queued.trials[-1].state == TrialState.COMPLETE


def test_identity_values_are_stable_across_processes(data):
    X, y = data

    def scorer(estimator, X, y):
        return estimator.score(X, y)

    est = SGDClassifier(random_state=np.random.RandomState(0), max_iter=5)
    objective = TreeCVObjective(est, lambda t: {}, X, y, cv=3, scoring=scorer)
    identity = objective.check_study(optuna.create_study())
    # No memory addresses: a RandomState instance is named by its type.
    assert identity["treecv_learner_params"]["random_state"] == "RandomState object"
    assert identity["treecv_search_space"].startswith("callable ")
    assert identity["treecv_scoring"].endswith("scorer")
    assert " at 0x" not in json.dumps(identity)


def test_a_fold_that_cannot_be_scored_fails_the_trial_with_its_reason(data):
    # Hinge loss has no predict_proba: the trial fails with that reason, not nan.
    X, y = data
    space = {"loss": CategoricalDistribution(["hinge", "log_loss"])}
    estimator = sgd().set_params(loss="log_loss")
    objective = TreeCVObjective(estimator, space, X, y, cv=3, scoring="neg_log_loss")
    assert np.isfinite(objective(FixedTrial({"loss": "log_loss"})))
    with pytest.raises((AttributeError, ValueError), match="predict_proba"):
        objective(FixedTrial({"loss": "hinge"}))
