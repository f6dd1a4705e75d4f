"""optimize_until_interrupted: Ctrl-C stops a study after the running trial."""

import os
import signal
import sys
import threading

import optuna
import pytest
from optuna.trial import TrialState

from optuna_treecv import optimize_until_interrupted

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGINT")

optuna.logging.set_verbosity(optuna.logging.WARNING)


def ctrl_c():
    os.kill(os.getpid(), signal.SIGINT)


def test_no_ctrl_c_is_study_optimize():
    study = optuna.create_study()
    assert not optimize_until_interrupted(
        study, lambda t: t.suggest_float("x", 0, 1), n_trials=4
    )
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 4


def test_first_ctrl_c_keeps_the_running_trial_and_stops(capsys):
    study = optuna.create_study()

    def objective(trial):
        if trial.number == 1:
            ctrl_c()  # Delivered at once, in the middle of the trial.
        return trial.number

    before = signal.getsignal(signal.SIGINT)
    assert optimize_until_interrupted(study, objective, n_trials=10)
    assert signal.getsignal(signal.SIGINT) is before  # Restored.
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 2
    assert study.trials[1].value == 1  # The interrupted trial's result is kept.
    assert "stopping after the running trial" in capsys.readouterr().err


def test_second_ctrl_c_aborts_the_running_trial():
    study = optuna.create_study()

    def objective(trial):
        ctrl_c()
        ctrl_c()  # Raises KeyboardInterrupt here.
        raise AssertionError("not reached")

    assert optimize_until_interrupted(study, objective, n_trials=10)
    assert [t.state for t in study.trials] == [TrialState.FAIL]


def test_a_callback_ctrl_c_between_trials():
    study = optuna.create_study()
    assert optimize_until_interrupted(
        study,
        lambda t: 1.0,
        n_trials=10,
        callbacks=[lambda study, trial: ctrl_c() if trial.number == 2 else None],
    )
    assert len(study.trials) == 3


def test_errors_without_ctrl_c_propagate():
    study = optuna.create_study()

    def objective(trial):
        raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        optimize_until_interrupted(study, objective, n_trials=2)


def test_outside_the_main_thread_is_plain_optimize():
    study = optuna.create_study()
    out = []
    thread = threading.Thread(
        target=lambda: out.append(
            optimize_until_interrupted(study, lambda t: 0.0, n_trials=2)
        )
    )
    thread.start()
    thread.join()
    assert out == [False] and len(study.trials) == 2
