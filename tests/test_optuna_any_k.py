"""Optuna studies at any k: bounded reports, compact fold scores, small saved
models, progress, a bounded ``cv`` command and killed CLI workers (issue 38)."""

from __future__ import annotations

import contextlib
import os
import pickle
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import numpy as np
import optuna
import pytest
from numpy.testing import assert_array_equal
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState
from sklearn.datasets import make_classification

from optuna_treecv import (
    TreeCVObjective,
    TrialRecord,
    _cli_args,
    _cli_cv,
    _cli_timing,
    _cli_tune,
    _objective,
    fold_scores,
    refit_estimator,
)
from optuna_treecv._cli import main
from optuna_treecv._fold_scores import COMPACT_FOLDS, decode_scores, encode_scores
from optuna_treecv._objective import report_counts, reported_folds
from sklearn_ext.linear_model import PegasosClassifier

SPACE = {"alpha": FloatDistribution(1e-5, 1e-1, log=True)}


@pytest.fixture(scope="module")
def data():
    return make_classification(n_samples=400, n_features=8, random_state=0)


class RecordingPruner(optuna.pruners.BasePruner):
    """Prunes a trial at its ``prune_at``-th report (never with ``None``)."""

    def __init__(self, prune_at: int | None = None) -> None:
        self.prune_at = prune_at

    def prune(self, study, trial) -> bool:
        return self.prune_at is not None and (
            len(trial.intermediate_values) >= self.prune_at
        )


def study_with(pruner=None, direction="maximize") -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.create_study(
        direction=direction,
        pruner=pruner or RecordingPruner(),
        sampler=optuna.samplers.RandomSampler(seed=0),
    )


# -- reports that scale -------------------------------------------------------------
@pytest.mark.parametrize("k", [2, 10, 32, 33, 100, 1_000, 10_000, 581_012])
def test_report_counts_are_bounded_and_end_at_k(k):
    counts = report_counts(k)
    assert len(counts) <= 32 and counts[-1] == k
    assert np.all(np.diff(counts) > 0)
    if k <= 32:
        assert_array_equal(counts, np.arange(1, k + 1))  # Every fold, as before.
    else:
        assert counts[0] == max(1, k // 1024)
        # Geometric: the ratio of neighbours is about constant (rounding aside).
        ratios = counts[1:] / counts[:-1]
        assert ratios.max() < 3.5


@pytest.mark.parametrize("k, m", [(10, 32), (200, 8), (10_000, 32)])
def test_reported_folds_are_a_fixed_even_sample(k, m):
    folds = reported_folds(k, m)
    assert len(folds) == min(k, m) and folds[0] == 0 and folds[-1] == k - 1
    assert np.all(np.diff(folds) > 0)
    if k > m:
        gaps = np.diff(folds)
        assert gaps.max() - gaps.min() <= 1


def test_running_mean_reports_at_the_counts_only(data):
    X, y = data
    objective = TreeCVObjective(PegasosClassifier(), SPACE, X, y, cv=400)
    study = study_with()
    study.optimize(objective, n_trials=2)
    counts = report_counts(400)
    for trial in study.trials:
        assert trial.state == TrialState.COMPLETE
        steps = sorted(trial.intermediate_values)
        assert steps == [int(c) - 1 for c in counts]
        scores = fold_scores(trial)
        # The value at each step is the running mean of the folds done then
        # (one thread: folds finish in leaf order).
        plan = objective.fold_plan_
        done = scores[plan.split_index[np.arange(400)]]
        for count in counts:
            expected = np.mean(done[:count])
            assert trial.intermediate_values[int(count) - 1] == pytest.approx(
                expected, abs=1e-12
            )


def test_small_k_reports_every_fold_as_before(data):
    X, y = data
    objective = TreeCVObjective(PegasosClassifier(), SPACE, X, y, cv=10)
    study = study_with()
    study.optimize(objective, n_trials=1)
    trial = study.trials[0]
    assert sorted(trial.intermediate_values) == list(range(10))
    cv = trial.user_attrs["cv"]
    assert [f"split{i}_test_score" in cv for i in range(10)] == [True] * 10
    assert "test_scores" not in cv and cv["n_splits"] == 10
    assert_array_equal(
        fold_scores(trial), [cv[f"split{i}_test_score"] for i in range(10)]
    )


def test_per_fold_reports_a_fixed_sample_in_a_shuffled_order(data):
    X, y = data
    objective = TreeCVObjective(
        PegasosClassifier(),
        SPACE,
        X,
        y,
        cv=200,
        report="per_fold",
        random_state=0,
        max_reports=8,
    )
    study = study_with()
    study.optimize(objective, n_trials=3)
    sample = reported_folds(200, 8).tolist()
    orders = []
    for trial in study.trials:
        assert sorted(trial.intermediate_values) == sample
        scores = fold_scores(trial)
        for fold in sample:
            assert trial.intermediate_values[fold] == scores[fold]
        order = trial.user_attrs["cv"]["fold_order"]
        assert sorted(order) == sample
        orders.append(order)
    assert len({tuple(o) for o in orders}) > 1  # Shuffled per trial.


def test_a_pruned_trial_at_large_k_keeps_its_folds_compactly(data):
    X, y = data
    objective = TreeCVObjective(PegasosClassifier(), SPACE, X, y, cv=400)
    study = study_with(RecordingPruner(prune_at=3))
    study.optimize(objective, n_trials=1)
    (trial,) = study.trials
    assert trial.state == TrialState.PRUNED
    count = int(report_counts(400)[2])
    scores = fold_scores(trial)
    assert scores.shape == (400,) and np.sum(~np.isnan(scores)) == count
    cv = trial.user_attrs["cv"]
    assert not any(key.startswith("split") for key in cv)
    assert "mean_test_score" not in trial.user_attrs


def test_compact_attribute_is_small_and_exact(data):
    X, y = data
    objective = TreeCVObjective(PegasosClassifier(), SPACE, X, y, cv=400)
    study = study_with()
    study.optimize(objective, n_trials=1)
    trial = study.trials[0]
    cv = trial.user_attrs["cv"]
    assert set(cv["test_scores"]) == {"format", "n_splits", "dtype", "values", "data"}
    # Leave-one-out accuracy: 0 or 1 per fold, a bit more than a bit each.
    assert len(cv["test_scores"]["data"]) < 400
    scores = fold_scores(cv)  # The attribute itself is read too.
    assert set(np.unique(scores)) <= {0.0, 1.0}
    assert np.mean(scores) == trial.value == trial.user_attrs["mean_test_score"]


@pytest.mark.parametrize(
    "scores",
    [
        np.random.default_rng(0).random(70_000),  # More distinct values than codes.
        np.random.default_rng(1).integers(0, 3, 500) / 2.0,
        np.array([0.5, np.nan, 1.0, np.nan, -0.0]),
        np.arange(COMPACT_FOLDS + 1) / 7.0,
        np.random.default_rng(2).integers(0, 1_000, 30_000) / 7.0,  # Two bytes.
    ],
)
def test_encoded_scores_read_back_exactly(scores):
    encoded = encode_scores(scores)
    distinct = len(np.unique(scores))
    expected = (
        "<u1" if distinct <= 256 else "<u2" if 3 * distinct <= scores.size else "<f8"
    )
    assert encoded["dtype"] == expected
    decoded = decode_scores(pickle.loads(pickle.dumps(encoded)))
    assert decoded.dtype == np.float64
    assert_array_equal(decoded, scores)  # NaN at the same places.


def test_fold_scores_refuses_what_is_not_a_trial_of_ours():
    with pytest.raises(ValueError, match="no 'cv' attribute"):
        fold_scores({"cv": 3})
    with pytest.raises(ValueError, match="Not a fold-score array"):
        decode_scores({"format": "other"})


def test_max_reports_and_progress_are_checked(data):
    X, y = data
    with pytest.raises(ValueError, match="'max_reports' parameter .* Got 1"):
        TreeCVObjective(PegasosClassifier(), SPACE, X, y, max_reports=1)
    with pytest.raises(TypeError, match="'progress' parameter"):
        TreeCVObjective(PegasosClassifier(), SPACE, X, y, progress=3)


def test_progress_is_called_with_folds_and_rows(data, monkeypatch):
    X, y = data
    monkeypatch.setattr(_objective, "PROGRESS_INTERVAL", 0.0)
    calls = []
    objective = TreeCVObjective(
        PegasosClassifier(),
        SPACE,
        X,
        y,
        cv=50,
        progress=lambda trial, *rest: calls.append((trial.number, *rest)),
    )
    study = study_with()
    study.optimize(objective, n_trials=1)
    assert [c[1] for c in calls] == list(range(1, 51))
    assert {c[0] for c in calls} == {0} and {c[2] for c in calls} == {50}
    fed = [c[3] for c in calls]
    assert (
        fed == sorted(fed)
        and fed[-1] == study.trials[0].user_attrs["cv"]["n_samples_fed"]
    )


# -- the saved model is a model -------------------------------------------------------
def test_refit_model_holds_a_small_record_of_its_trial(data):
    X, y = data
    objective = TreeCVObjective(PegasosClassifier(), SPACE, X, y, cv=400)
    study = study_with()
    study.optimize(objective, n_trials=2)
    model = refit_estimator(study, PegasosClassifier(), X, y)
    record = model.optuna_trial_
    best = study.best_trial
    assert isinstance(record, TrialRecord)
    assert (record.number, record.params, record.value) == (
        best.number,
        best.params,
        best.value,
    )
    assert (record.regime, record.backend) == ("one_pass", "native_tree")
    assert record.study_name == study.study_name
    assert record.trial(study) == best
    # The record, not the trial's 400 fold scores, travels with the model.
    assert len(pickle.dumps(record)) < 600
    assert len(pickle.dumps(model)) < len(pickle.dumps(best))
    other = optuna.create_study(study_name="other")
    with pytest.raises(ValueError, match="not of study 'other'"):
        record.trial(other)


# -- the command line -----------------------------------------------------------------
def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cv_no_standard_runs_treecv_only(capsys):
    # The learner alone (no scaler, issue 31) runs the native tree.
    code, out, err = run(
        ["cv", "pegasos", "iris", "--cv", "5", "--no-standard", "--preprocess", "none"],
        capsys,
    )
    assert code == 0, err
    assert "native_tree" in out and "\nstandard " not in out
    assert "Standard CV not run (--no-standard)." in out


def test_cv_refuses_a_long_standard_run_with_an_estimate(capsys, monkeypatch):
    # Every standard run counts as long here: 0 s stand for the hour.
    monkeypatch.setattr(_cli_timing, "PROBE_ABOVE", 0.0)
    monkeypatch.setattr(_cli_cv, "STANDARD_LIMIT", 0.0)
    code, out, err = run(["cv", "pegasos", "iris", "--cv", "150"], capsys)
    assert code == 0, err
    assert "\nstandard " not in out
    assert re.search(
        r"Standard CV not run: it would take about \d+ s \(its first 3 folds took "
        r"[\d.]+ s fitting and scoring, x 150 folds\)\. --force-standard runs it",
        out,
    ), out
    code, out, err = run(
        ["cv", "pegasos", "iris", "--cv", "150", "--force-standard"], capsys
    )
    assert code == 0, err
    assert "\nstandard " in out and "not run" not in out


def test_tune_estimates_a_long_baseline_and_shows_progress(
    tmp_path, capsys, monkeypatch
):
    import joblib

    monkeypatch.setattr(_cli_timing, "PROBE_ABOVE", 0.0)
    monkeypatch.setattr(_cli_tune, "PROGRESS_EVERY", 0.0)
    monkeypatch.setattr(_objective, "PROGRESS_INTERVAL", 0.0)
    path = tmp_path / "model.joblib"
    code, out, err = run(
        ["tune", "pegasos", "iris", "--cv", "150", "--n-trials", "2",
         "--storage", f"sqlite:///{tmp_path / 'cli.db'}", "--study-name", "s",
         "--save-model", path],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    assert re.search(
        r"one standard 150-fold CV of the best parameters would take about .* "
        r"\(its first 3 folds took [\d.]+ s, extrapolated\)",
        out,
    ), out
    assert re.search(r"trial #0: \d+ of 150 folds scored, [\d,]+ rows fed", err)
    model = joblib.load(path)
    assert isinstance(model.optuna_trial_, TrialRecord)
    assert path.stat().st_size < 4_000  # A linear model and its record.


SLOW_LEARNER = """
import os
import time
from sklearn_ext.linear_model import PegasosClassifier


class SlowPegasos(PegasosClassifier):
    def _native_model(self, task):
        if os.environ.get("SLOW_PEGASOS"):
            time.sleep(60)  # Long enough to be killed inside the trial's CV.
        return super()._native_model(task)
"""


class SlowWorkers:
    """``optuna-treecv tune`` processes on one SQLite study, the first trial
    of a worker started with ``slow=True`` held for a minute in its CV."""

    def __init__(self, tmp_path) -> None:
        (tmp_path / "slowlearner.py").write_text(SLOW_LEARNER)
        self.db = tmp_path / "workers.db"
        self.url = f"sqlite:///{self.db}"
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = os.pathsep.join(
            [str(tmp_path), *filter(None, [self.env.get("PYTHONPATH")])]
        )

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "optuna_treecv", "tune",
                "slowlearner:SlowPegasos", "iris", "--cv", "3", "--n-trials", "1",
                "--space", "alpha=float:1e-5:1e-1:log", "--storage", self.url,
                "--study-name", "s", "--heartbeat", "1", "--pruner", "none",
                "--no-progress-bar", "--no-baseline"]  # fmt: skip

    def start_slow(self) -> subprocess.Popen:
        """A worker, returned once its trial is running (a heartbeat recorded)."""
        proc = subprocess.Popen(
            self.argv(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**self.env, "SLOW_PEGASOS": "1"},
        )
        deadline = time.monotonic() + 120
        try:
            while not (
                self.count("SELECT COUNT(*) FROM trial_heartbeats")
                and self.count("SELECT COUNT(*) FROM trial_params")
            ):
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "no heartbeat in 120 s"
                time.sleep(0.05)
        except BaseException:
            proc.kill()
            proc.communicate()
            raise
        return proc

    def count(self, query: str) -> int:
        try:
            with contextlib.closing(sqlite3.connect(self.db, timeout=10)) as db:
                return db.execute(query).fetchone()[0]
        except sqlite3.Error:  # No tables yet.
            return 0

    def trials(self) -> list:
        return optuna.load_study(study_name="s", storage=self.url).trials


@pytest.mark.slow
def test_a_killed_cli_worker_trial_is_failed_and_retried(tmp_path):
    """SIGKILL a real ``optuna-treecv tune`` inside its first trial; the next
    worker (another CLI process) fails that trial and runs its point again."""
    workers = SlowWorkers(tmp_path)
    proc = workers.start_slow()
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert [t.state for t in workers.trials()] == [TrialState.RUNNING]
    time.sleep(3.5)  # Past the grace period: twice the heartbeat.
    done = subprocess.run(
        workers.argv(),
        capture_output=True,
        text=True,
        env=workers.env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    killed, retried = workers.trials()
    assert killed.state == TrialState.FAIL
    assert retried.state == TrialState.COMPLETE
    assert retried.params == killed.params
    assert retried.system_attrs["failed_trial"] == killed.number
    assert "1 trials in" in done.stdout and "1 complete" in done.stdout


@pytest.mark.slow
def test_ctrl_c_twice_in_a_long_trial_leaves_no_trial_running(tmp_path):
    workers = SlowWorkers(tmp_path)
    proc = workers.start_slow()
    lines: list[str] = []
    told = threading.Event()

    def read_stderr():
        for line in proc.stderr:
            lines.append(line)
            if "Ctrl-C: stopping after the running trial" in line:
                told.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    proc.send_signal(signal.SIGINT)  # Stop after the trial...
    # ...no: now, once told (two signals before Python's handler runs are one).
    assert told.wait(60), "".join(lines)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)  # its few lines of output fit in the pipe
    out = proc.stdout.read()
    reader.join(timeout=10)
    err = "".join(lines)
    assert proc.returncode == 130, err
    assert "Interrupted (Ctrl-C)" in out
    assert [t.state for t in workers.trials()] == [TrialState.FAIL]


@pytest.mark.slow
def test_sigterm_in_a_long_trial_leaves_no_trial_running(tmp_path):
    workers = SlowWorkers(tmp_path)
    proc = workers.start_slow()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "terminated (SIGTERM): the running trial is recorded as failed" in err
    assert [t.state for t in workers.trials()] == [TrialState.FAIL]


@pytest.mark.parametrize(
    "name, k, expected",
    [
        ("wilcoxon", 10, {"_n_startup_steps": 2}),
        ("wilcoxon", 10_000, {"_n_startup_steps": 14}),
        ("successive-halving", 10, {"_min_resource": 1}),
        ("successive-halving", 581_012, {"_min_resource": 566}),
    ],
)
def test_cli_pruners_start_at_the_first_report(name, k, expected):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        pruner = _cli_args._make_pruner(name, k)
    for attribute, value in expected.items():
        assert getattr(pruner, attribute) == value


@pytest.mark.parametrize("progress", [None, print])
def test_leaves_stay_in_the_engine_without_reports_or_progress(
    data, monkeypatch, progress
):
    X, y = data
    objective = TreeCVObjective(
        PegasosClassifier(), SPACE, X, y, cv=400, progress=progress
    )
    listeners = []
    run = objective.core_.run

    def spy(resolved, **kwargs):
        listeners.append(kwargs["leaf_callback"])
        return run(resolved, **kwargs)

    monkeypatch.setattr(objective.core_, "run", spy)
    study = study_with(optuna.pruners.NopPruner())
    study.optimize(objective, n_trials=1)
    assert (listeners[0] is None) == (progress is None)
    assert fold_scores(study.trials[0]).mean() == study.trials[0].value


@pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")
def test_regime_gap_is_measured_from_the_compact_scores(data):
    from sklearn.linear_model import SGDClassifier

    X, y = data
    objective = TreeCVObjective(SGDClassifier(random_state=0), SPACE, X, y, cv=200)
    study = study_with()
    study.optimize(objective, n_trials=1)
    cv = study.trials[0].user_attrs["cv"]
    assert "test_scores" in cv  # Beyond COMPACT_FOLDS.
    gap = cv["regime_gap"]
    assert objective.core_.gap_.gap == gap["gap"]
    assert np.isfinite(gap["gap"])


def test_a_native_run_with_a_listener_returns_the_kernel_columns(data):
    # The listener sees every leaf; the table comes from the kernel's columns
    # (no list of half a million LeafResults), the same as without a listener.
    from sklearn_ext.model_selection._core import RunCore

    X, y = data
    core = RunCore(PegasosClassifier(), X, y, cv=400)
    resolved = core.resolve(PegasosClassifier())
    seen = []
    listened = core.run(resolved, leaf_callback=seen.append).by_split()
    quiet = core.run(resolved).by_split()
    assert sorted(leaf.split for leaf in seen) == list(range(400))
    assert_array_equal(listened.scores["score"], quiet.scores["score"])
    assert_array_equal(listened.n_samples_fed, quiet.n_samples_fed)
    assert_array_equal(listened.split, quiet.split)
    assert_array_equal(listened.leaf, quiet.leaf)
    assert_array_equal(
        listened.scores["score"], [seen_leaf.scores["score"] for seen_leaf in
                                   sorted(seen, key=lambda leaf: leaf.split)]
    )  # fmt: skip
