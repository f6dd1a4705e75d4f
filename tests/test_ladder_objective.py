"""``TreeCVObjective(report="levels")``: the tree's rungs reported (issue 37)."""

from __future__ import annotations

import warnings

import numpy as np
import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState
from sklearn.datasets import make_classification

from optuna_treecv import RungPruner, TreeCVObjective, fold_scores
from optuna_treecv._cli import main
from optuna_treecv._cli_args import _make_pruner
from optuna_treecv._ladder import n_steps, reported_levels, step_of
from sklearn_ext.linear_model import PegasosClassifier
from sklearn_ext.model_selection._backends import PythonTreeBackend
from sklearn_ext.model_selection._levels import EARLY_RUNGS, n_levels

SPACE = {"alpha": FloatDistribution(1e-5, 1e-1, log=True)}
#: The Python tree walks levels for every partial_fit learner.
TREE = PythonTreeBackend()
ALPHA = 1e-3


@pytest.fixture(scope="module")
def data():
    return make_classification(n_samples=600, n_features=8, random_state=0)


class PruneAt(optuna.pruners.BasePruner):
    """Prunes a trial at its ``at``-th report (never with ``None``)."""

    def __init__(self, at: int | None = None) -> None:
        self.at = at
        self.asked: list[int] = []

    def prune(self, study, trial) -> bool:
        self.asked.append(max(trial.intermediate_values))
        return self.at is not None and len(trial.intermediate_values) >= self.at


def one_trial(objective, pruner, alpha=ALPHA) -> optuna.trial.FrozenTrial:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", pruner=pruner)
    study.enqueue_trial({"alpha": alpha})
    study.optimize(objective, n_trials=1)
    return study.trials[0]


def spy_levels(objective, monkeypatch) -> list:
    """Record every estimate the objective pulls from the core's level walk."""
    pulled: list = []
    run_levels = objective.core_.run_levels

    def spy(resolved, **kwargs):
        for estimate in run_levels(resolved, **kwargs):
            pulled.append(estimate)
            yield estimate

    monkeypatch.setattr(objective.core_, "run_levels", spy)
    return pulled


def test_reports_are_the_rungs_of_run_levels(data):
    X, y = data
    objective = TreeCVObjective(
        PegasosClassifier(), SPACE, X, y, cv=8, report="levels", backend=TREE
    )
    pruner = PruneAt(None)
    trial = one_trial(objective, pruner)
    core = objective.core_
    resolved = core.resolve(PegasosClassifier(alpha=ALPHA))
    rungs = list(core.run_levels(resolved, early_rungs=EARLY_RUNGS))
    # The Python tree cannot pause a feed: the half rung only, at its step (2).
    assert [r.rung for r in rungs] == [0.5, 1, 2, 3]
    assert [step_of(r) for r in rungs] == [2, 3, 4, 5]
    assert trial.intermediate_values == {step_of(r): r.scores["score"] for r in rungs}
    cv = trial.user_attrs["cv"]
    assert cv["level_rungs"] == [0.5, 1, 2, 3]
    assert cv["level_scores"] == [r.scores["score"] for r in rungs]
    assert cv["level_n_samples_fed"] == [r.n_samples_fed for r in rungs]
    assert cv["n_samples_fed"] == rungs[-1].n_samples_fed
    # The pruner is asked after the half rung and rungs 1 and 2, never after
    # the leaves' rung.
    assert pruner.asked == [2, 3, 4]


def test_final_value_is_todays_kfold_mean(data):
    X, y = data
    values = {}
    for report in ("levels", "running_mean", None):
        objective = TreeCVObjective(
            PegasosClassifier(), SPACE, X, y, cv=8, report=report, backend=TREE
        )
        trial = one_trial(objective, PruneAt(None))
        values[report] = trial.value
        assert trial.value == pytest.approx(fold_scores(trial).mean(), abs=1e-15)
    assert values["levels"] == values["running_mean"] == values[None]


def test_pruning_stops_feeding_rows(data, monkeypatch):
    X, y = data
    objective = TreeCVObjective(
        PegasosClassifier(), SPACE, X, y, cv=16, report="levels", backend=TREE
    )
    pulled = spy_levels(objective, monkeypatch)
    trial = one_trial(objective, PruneAt(1))
    assert trial.state == TrialState.PRUNED
    assert len(pulled) == 1 and pulled[0].partial and pulled[0].level == 1
    cv = trial.user_attrs["cv"]
    # Half a pass: the root's left child fed the right half, chunks 8 to 15
    # of 600 rows (8 of 37 rows; the first 8 chunks have 38), nothing more.
    plan = objective.core_.plan
    assert plan.children(0, 15) == ((0, 7), (8, 15))
    assert cv["n_samples_fed"] == pulled[0].n_samples_fed == 600 - plan.bounds[8]
    assert pulled[0].n_samples_fed == 8 * 37 and pulled[0].part_sizes.tolist() == [304]
    assert cv["pruned_at_level"] == 0.5
    assert cv["level_rungs"] == [0.5]
    assert cv["level_scores"] == [pulled[0].scores["score"]]
    assert np.isnan(fold_scores(trial)).all()  # no fold finished
    assert trial.intermediate_values == {2: pulled[0].scores["score"]}


def test_rung_1_prunes_after_one_pass(data, monkeypatch):
    X, y = data
    objective = TreeCVObjective(
        PegasosClassifier(), SPACE, X, y, cv=16, report="levels", backend=TREE
    )
    pulled = spy_levels(objective, monkeypatch)
    trial = one_trial(objective, PruneAt(2))
    assert trial.state == TrialState.PRUNED
    assert [r.rung for r in pulled] == [0.5, 1]
    # One pass: every row fed once (half the rows into each of two models).
    assert trial.user_attrs["cv"]["n_samples_fed"] == len(X)
    assert trial.user_attrs["cv"]["pruned_at_level"] == 1


def test_a_later_rung_prunes_after_that_rung(data, monkeypatch):
    X, y = data
    objective = TreeCVObjective(
        PegasosClassifier(), SPACE, X, y, cv=16, report="levels", backend=TREE
    )
    pulled = spy_levels(objective, monkeypatch)
    trial = one_trial(objective, PruneAt(3))
    assert trial.state == TrialState.PRUNED
    assert [r.rung for r in pulled] == [0.5, 1, 2]
    assert trial.user_attrs["cv"]["n_samples_fed"] == 2 * len(X)


def test_reports_are_bounded_by_max_reports(data):
    X, y = data
    objective = TreeCVObjective(
        PegasosClassifier(),
        SPACE,
        X,
        y,
        cv=64,
        report="levels",
        backend=TREE,
        max_reports=3,
    )
    trial = one_trial(objective, PruneAt(None))
    # The Python tree has no quarter rung (step 1): steps 2 and the last.
    assert sorted(trial.intermediate_values) == [2, 8]
    assert len(trial.user_attrs["cv"]["level_scores"]) == 7  # recorded, not reported
    assert reported_levels(64, 32) == frozenset(range(1, 9))
    assert reported_levels(64, 3) == frozenset([1, 2, 8])
    assert n_levels(64) == 6 and n_levels(5) == 3 and n_steps(64) == 8


def test_no_levels_walk_without_a_pruner(data, monkeypatch):
    X, y = data
    objective = TreeCVObjective(
        PegasosClassifier(), SPACE, X, y, cv=8, report="levels", backend=TREE
    )
    pulled = spy_levels(objective, monkeypatch)
    trial = one_trial(objective, optuna.pruners.NopPruner())
    assert pulled == [] and trial.intermediate_values == {}
    assert trial.state == TrialState.COMPLETE


def test_multi_objective_does_not_report(data):
    X, y = data
    objective = TreeCVObjective(
        PegasosClassifier(), SPACE, X, y, cv=4, report="levels", backend=TREE
    )
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(directions=["maximize", "minimize"])
    study.optimize(objective, n_trials=1)
    assert study.trials[0].intermediate_values == {}


def test_progress_hears_each_rung(data):
    X, y = data
    calls = []
    objective = TreeCVObjective(
        PegasosClassifier(),
        SPACE,
        X,
        y,
        cv=4,
        report="levels",
        backend=TREE,
        progress=lambda *args: calls.append(args[1:]),
    )
    one_trial(objective, PruneAt(None))
    assert calls == [(0, 4, len(X) // 2), (0, 4, len(X)), (4, 4, 2 * len(X))]


@pytest.mark.parametrize("report", ["level", "LEVELS", 1])
def test_bad_report_is_refused(data, report):
    X, y = data
    with pytest.raises(ValueError, match="The 'report' parameter of TreeCVObjective"):
        TreeCVObjective(PegasosClassifier(), SPACE, X, y, report=report, backend=TREE)


def test_cli_tunes_with_levels(tmp_path, capsys):
    storage = f"sqlite:///{tmp_path / 'cli.db'}"
    argv = ["tune", "pegasos", "iris", "--cv", "8", "--n-trials", "3"]
    argv += ["--storage", storage, "--study-name", "s", "--report", "levels"]
    code = main(argv + ["--no-progress-bar", "--no-baseline"])
    out, err = capsys.readouterr()
    assert code == 0, err
    study = optuna.load_study(study_name="s", storage=storage)
    assert study.user_attrs["treecv_report"] == "levels"
    steps = [sorted(t.intermediate_values) for t in study.trials[:2]]
    assert steps == [[1, 2, 3, 4, 5]] * 2, steps


def test_cli_refuses_levels_with_wilcoxon(capsys):
    code = main(["tune", "sgd", "iris", "--pruner", "wilcoxon", "--report", "levels"])
    assert code == 2
    assert "--report per-fold" in capsys.readouterr().err


def test_cli_pruners_count_rungs():
    assert _make_pruner("hyperband", 16, "levels")._max_resource == 6
    assert _make_pruner("successive-halving", 10_000, "levels")._min_resource == 1
    assert _make_pruner("hyperband", 16)._max_resource == 16


def test_native_tree_reports_its_rungs(data):
    X, y = data
    objective = TreeCVObjective(PegasosClassifier(), SPACE, X, y, cv=8, report="levels")
    trial = one_trial(objective, PruneAt(None))
    core = objective.core_
    resolved = core.resolve(PegasosClassifier(alpha=ALPHA))
    assert resolved.backend.name == trial.user_attrs["cv"]["backend"] == "native_tree"
    rungs = list(core.run_levels(resolved, early_rungs=EARLY_RUNGS))
    assert [r.rung for r in rungs] == [0.25, 0.5, 1, 2, 3]
    assert [step_of(r) for r in rungs] == [1, 2, 3, 4, 5]
    assert trial.intermediate_values == {step_of(r): r.scores["score"] for r in rungs}
    assert trial.user_attrs["cv"]["level_rungs"] == [0.25, 0.5, 1, 2, 3]


def test_native_tree_prunes_after_a_quarter_pass(data, monkeypatch):
    X, y = data
    objective = TreeCVObjective(
        PegasosClassifier(), SPACE, X, y, cv=16, report="levels"
    )
    pulled = spy_levels(objective, monkeypatch)
    trial = one_trial(objective, PruneAt(1))
    assert trial.state == TrialState.PRUNED
    (quarter,) = pulled
    # The root's left child fed half of the right half (8 chunks of 37 rows),
    # scored on the left half (8 chunks of 38), nothing more.
    assert quarter.rung == 0.25 and quarter.n_samples_fed == 8 * 37 // 2
    assert quarter.part_sizes.tolist() == [304]
    cv = trial.user_attrs["cv"]
    assert cv["pruned_at_level"] == 0.25 and cv["level_rungs"] == [0.25]
    assert cv["n_samples_fed"] == 148
    assert trial.intermediate_values == {1: quarter.scores["score"]}


@pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")
def test_a_scaled_native_pipeline_walks_levels(data):
    # The native tree walks the levels of its scaled pipelines too.
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sklearn_ext import tree_cross_validate

    X, y = data
    pipe = make_pipeline(StandardScaler(), PegasosClassifier())
    kwargs = {"cv": 8, "return_run_info": True}
    walked = tree_cross_validate(pipe, X, y, return_levels=True, **kwargs)
    plain = tree_cross_validate(pipe, X, y, **kwargs)
    assert walked["backend"] == "native_tree"
    assert [rung.level for rung in walked["levels"]] == [1, 2, 3]
    assert np.array_equal(walked["test_score"], plain["test_score"])


def _study_with_rungs(completed: list[dict[int, float]]) -> optuna.Study:
    """A study whose completed trials reported ``completed``'s values."""
    study = optuna.create_study(direction="maximize")
    for values in completed:
        study.add_trial(
            optuna.trial.create_trial(
                value=values[max(values)],
                params={},
                distributions={},
                intermediate_values=values,
            )
        )
    return study


def _running(values: dict[int, float]) -> optuna.trial.FrozenTrial:
    return optuna.trial.create_trial(
        state=TrialState.RUNNING,
        params={},
        distributions={},
        intermediate_values=values,
    )


def test_rung_pruner_judges_each_rung_on_its_own_value():
    # Every trial's first rung reads high (0.9), later ones lower (0.7): the
    # best value so far carries 0.9 past every later check; the rung's own
    # value, 0.6 where the others read 0.7, does not.
    completed = [{1: 0.9, 2: 0.7 + 0.001 * i} for i in range(6)]
    study = _study_with_rungs(completed)
    trial = _running({1: 0.9, 2: 0.6})
    percentile = optuna.pruners.PercentilePruner(25.0, n_startup_trials=5)
    assert not percentile.prune(study, trial)
    assert RungPruner(percentile).prune(study, trial)
    # Its value at the step as good as the others': kept.
    assert not RungPruner(percentile).prune(study, _running({1: 0.9, 2: 0.71}))
    # The trial itself is left as it was.
    assert trial.intermediate_values == {1: 0.9, 2: 0.6}


def test_rung_pruner_keeps_the_wrapped_pruners_steps():
    # interval_steps=2 checks at steps 0, 2, 4...: the masked steps still count.
    study = _study_with_rungs([{0: 0.9, 1: 0.9, 2: 0.9, 3: 0.9}] * 6)
    percentile = optuna.pruners.PercentilePruner(
        25.0, n_startup_trials=5, interval_steps=2
    )
    wrapped = RungPruner(percentile)
    assert not wrapped.prune(study, _running({0: 0.95, 1: 0.95, 2: 0.95, 3: 0.1}))
    assert wrapped.prune(study, _running({0: 0.95, 1: 0.95, 2: 0.1}))
    assert repr(wrapped).startswith("RungPruner(")
    with pytest.raises(TypeError, match="RungPruner's 'pruner'"):
        RungPruner("median")


def test_cli_wraps_median_and_percentile_for_levels():
    for name in ("median", "percentile"):
        levels = _make_pruner(name, 16, "levels")
        assert isinstance(levels, RungPruner)
        assert isinstance(levels.pruner, optuna.pruners.PercentilePruner)
        assert not isinstance(_make_pruner(name, 16), RungPruner)
    assert isinstance(
        _make_pruner("median", 16, "levels").pruner, optuna.pruners.MedianPruner
    )


def test_levels_with_a_bare_best_so_far_pruner_warns_once(data, recwarn):
    X, y = data
    objective = TreeCVObjective(
        PegasosClassifier(), SPACE, X, y, cv=8, report="levels", backend=TREE
    )
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        direction="maximize", pruner=optuna.pruners.MedianPruner()
    )
    with pytest.warns(UserWarning, match=r"RungPruner\(MedianPruner\(\.\.\.\)\)"):
        study.optimize(objective, n_trials=2)
    assert sum("RungPruner" in str(w.message) for w in recwarn) <= 1  # once
    wrapped = optuna.create_study(
        direction="maximize", pruner=RungPruner(optuna.pruners.MedianPruner())
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        TreeCVObjective(
            PegasosClassifier(), SPACE, X, y, cv=8, report="levels", backend=TREE
        )
        wrapped.optimize(
            TreeCVObjective(
                PegasosClassifier(), SPACE, X, y, cv=8, report="levels", backend=TREE
            ),
            n_trials=1,
        )


def test_the_gallery_example_runs_and_the_ladder_feeds_fewer_rows(monkeypatch):
    # examples/plot_fidelity_ladder.py: the numbers its CHANGELOG entry quotes.
    pytest.importorskip("matplotlib")
    import runpy
    from pathlib import Path

    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.setattr("matplotlib.pyplot.show", lambda: None)
    example = Path(__file__).resolve().parents[1] / "examples/plot_fidelity_ladder.py"
    studies = runpy.run_path(str(example))["studies"]
    fed = {
        report: sum(t.user_attrs["cv"]["n_samples_fed"] for t in study.trials)
        for report, study in studies.items()
    }
    assert fed["levels"] * 1.4 < fed["running_mean"]
    best = {report: study.best_value for report, study in studies.items()}
    assert abs(best["levels"] - best["running_mean"]) < 0.002
