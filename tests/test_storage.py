"""optuna_treecv.open_storage: the storage forms, SQLite in WAL mode, bad URLs,
heartbeats (a SIGKILLed worker's trial is failed and retried), the recovery of
storages without heartbeats, and several workers creating one new database."""

import multiprocessing
import os
import signal
import time
from pathlib import Path

import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState
from sklearn.datasets import make_classification
from sklearn.linear_model import SGDClassifier
from test_scale_out import postgres_url  # noqa: F401 (a fixture)

from optuna_treecv import (
    TreeCVObjective,
    open_storage,
    retry_running_trials,
    suggest_params,
)


def _journal_mode(storage) -> str:
    with storage.engine.connect() as connection:
        return connection.exec_driver_sql("PRAGMA journal_mode").scalar()


def test_sqlite_file_in_wal_mode_keeps_trials(tmp_path):
    url = f"sqlite:///{tmp_path / 'study.db'}"
    storage = open_storage(url)
    assert isinstance(storage, optuna.storages.RDBStorage)
    assert _journal_mode(storage) == "wal"
    study = optuna.create_study(storage=storage, study_name="s")
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=3)
    # Reopened (by this function or by Optuna itself), every trial is there.
    again = optuna.load_study(study_name="s", storage=open_storage(url))
    assert len(again.trials) == 3
    assert len(optuna.load_study(study_name="s", storage=url).trials) == 3


def test_in_memory_sqlite_is_left_alone():
    storage = open_storage("sqlite:///:memory:")
    assert isinstance(storage, optuna.storages.RDBStorage)
    assert _journal_mode(storage) == "memory"


def test_memory_and_journal(tmp_path):
    assert isinstance(open_storage("memory"), optuna.storages.InMemoryStorage)
    storage = open_storage(f"journal:{tmp_path / 'log.jsonl'}")
    assert isinstance(storage, optuna.storages.JournalStorage)
    study = optuna.create_study(storage=storage)
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=2)
    assert (tmp_path / "log.jsonl").stat().st_size > 0


@pytest.mark.parametrize(
    "url, match",
    [
        ("study.db", "cannot open storage 'study.db': expected a database URL"),
        ("nosuchdb://x", "cannot open storage 'nosuchdb://x'"),
        ("sqlite:////no/such/dir/x.db", "cannot open storage 'sqlite:////no/such"),
        ("journal:/no/such/dir/log", "cannot open storage 'journal:/no/such/dir/log'"),
    ],
)
def test_bad_url(url, match):
    with pytest.raises(ValueError, match=match):
        open_storage(url)


def test_url_not_a_string():
    with pytest.raises(ValueError, match="The 'url' parameter of open_storage"):
        open_storage(None)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"heartbeat_interval": 0}, "'heartbeat_interval' parameter of open_storage"),
        ({"heartbeat_interval": 1.5}, "'heartbeat_interval' parameter"),
        ({"grace_period": 5}, "'grace_period' parameter of open_storage needs"),
        ({"heartbeat_interval": 5, "grace_period": 5}, "must exceed"),
        ({"heartbeat_interval": 5, "max_retry": -1}, "'max_retry' parameter"),
    ],
)
def test_bad_heartbeat_settings(tmp_path, kwargs, match):
    with pytest.raises(ValueError, match=match):
        open_storage(f"sqlite:///{tmp_path / 'h.db'}", **kwargs)


@pytest.mark.parametrize("url", ["memory", "journal:{tmp}/log"])
def test_heartbeat_needs_a_database(tmp_path, url):
    with pytest.raises(ValueError, match="needs a database URL.*retry_running_trials"):
        open_storage(url.format(tmp=tmp_path), heartbeat_interval=10)


def test_heartbeat_settings_reach_optuna(tmp_path):
    url = f"sqlite:///{tmp_path / 'h.db'}"
    storage = open_storage(url, heartbeat_interval=3, grace_period=7, max_retry=2)
    assert (storage.heartbeat_interval, storage.grace_period) == (3, 7)
    callback = storage.get_heartbeat_stale_trial_callback()
    assert isinstance(callback, optuna.storages.RetryHeartbeatStaleTrialCallback)
    no_retry = open_storage(url, heartbeat_interval=3, max_retry=0)
    assert no_retry.get_heartbeat_stale_trial_callback() is None
    assert open_storage(url).heartbeat_interval is None


def test_retry_running_trials_journal(tmp_path):
    # A killed worker's trial in a journal stays RUNNING; the recovery fails it
    # and queues its point, which the next optimize runs first.
    path = tmp_path / "log"
    study = optuna.create_study(storage=open_storage(f"journal:{path}"))
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=1)
    killed = study.ask({"x": optuna.distributions.FloatDistribution(0, 1)})
    resumed = optuna.load_study(
        study_name=study.study_name, storage=open_storage(f"journal:{path}")
    )
    assert [t.number for t in retry_running_trials(resumed)] == [killed.number]
    resumed.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=1)
    trials = resumed.trials
    assert [t.state.name for t in trials] == ["COMPLETE", "FAIL", "COMPLETE"]
    assert trials[2].params == trials[1].params
    assert trials[2].system_attrs["failed_trial"] == killed.number
    # Nothing left to recover; a point is retried at most max_retry times.
    assert retry_running_trials(resumed) == []
    again = resumed.ask()
    again.suggest_float("x", 0, 1)
    assert len(retry_running_trials(resumed, max_retry=0)) == 1
    assert [t.state.name for t in resumed.trials][-1] == "FAIL"


def test_retry_running_trials_bad_max_retry():
    with pytest.raises(ValueError, match="'max_retry' parameter of retry_running"):
        retry_running_trials(optuna.create_study(), max_retry=-2)


# -- worker processes: a killed worker, and a crowd on a new file --------------------
SPACE = {"alpha": FloatDistribution(1e-5, 1e-1, log=True)}


def _objective() -> TreeCVObjective:
    X, y = make_classification(n_samples=200, random_state=0)
    return TreeCVObjective(
        SGDClassifier(max_iter=5, tol=None, random_state=0), SPACE, X, y, cv=4
    )


def _blocked_worker(url: str, name: str, flag: str) -> None:
    """Start one trial, say so in ``flag``, then hang until killed."""
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    storage = open_storage(url, heartbeat_interval=1, grace_period=2)
    study = optuna.load_study(study_name=name, storage=storage)

    def hang(trial):
        suggest_params(trial, SPACE)  # The point the retry must run again.
        Path(flag).write_text(str(trial.number))
        time.sleep(120)

    study.optimize(hang, n_trials=1)


def check_killed_worker_is_retried(url: str, name: str, tmp_path: Path) -> None:
    storage = open_storage(url, heartbeat_interval=1, grace_period=2)
    optuna.create_study(study_name=name, storage=storage, direction="maximize")
    flag = tmp_path / f"{name}.started"
    proc = multiprocessing.get_context("fork").Process(
        target=_blocked_worker, args=(url, name, str(flag))
    )
    proc.start()
    try:
        for _ in range(600):
            if flag.exists() or not proc.is_alive():
                break
            time.sleep(0.05)
        assert flag.exists(), "the worker never started its trial"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(timeout=30)
    study = optuna.load_study(study_name=name, storage=storage)
    (killed,) = study.get_trials()
    assert killed.state == TrialState.RUNNING  # As Optuna leaves it.
    time.sleep(3.5)  # Past the grace period (SQLite's clock ticks in seconds).
    # The study resumes: the stale trial is failed, its point run again.
    study.optimize(_objective(), n_trials=1)
    killed, retried = study.get_trials()
    assert killed.state == TrialState.FAIL
    assert retried.state == TrialState.COMPLETE
    assert retried.params == killed.params
    assert retried.system_attrs["failed_trial"] == killed.number
    assert retried.user_attrs["cv"]["backend"] == "python_tree"


# A multi-epoch learner through the tree on purpose: the regime note is expected.
@pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")
def test_killed_worker_is_failed_and_retried_sqlite(tmp_path):
    url = f"sqlite:///{tmp_path / 'killed.db'}"
    check_killed_worker_is_retried(url, "killed", tmp_path)


# A multi-epoch learner through the tree on purpose: the regime note is expected.
@pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")
def test_killed_worker_is_failed_and_retried_postgresql(request, tmp_path):
    # The throwaway server of the scale-out tests (skipped without one).
    url = request.getfixturevalue("postgres_url")
    check_killed_worker_is_retried(url, "killed", tmp_path)


def _crowd_worker(url: str, barrier, errors: str) -> None:
    try:
        optuna.logging.set_verbosity(optuna.logging.ERROR)
        barrier.wait(timeout=300)
        storage = open_storage(url)  # All at the same moment, on a new file.
        study = optuna.create_study(
            study_name="crowd",
            storage=storage,
            direction="maximize",
            load_if_exists=True,
            pruner=optuna.pruners.NopPruner(),
        )
        study.optimize(_objective(), n_trials=2)
    except BaseException:
        import traceback

        with open(errors, "a") as f:  # Said by the test if it fails.
            f.write(traceback.format_exc())
        raise


def test_workers_open_one_new_sqlite_file_at_once(tmp_path):
    url = f"sqlite:///{tmp_path / 'new.db'}"
    errors = tmp_path / "errors.txt"
    # From a fresh server process, not forked from this one: a child forked
    # from the test process would inherit the locks and thread pools its
    # earlier tests left (a hang under load). The server imports once.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["test_storage"])
    barrier = context.Barrier(3)
    procs = [
        context.Process(target=_crowd_worker, args=(url, barrier, str(errors)))
        for _ in "abc"
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=600)
    said = errors.read_text() if errors.exists() else ""
    assert [proc.exitcode for proc in procs] == [0, 0, 0], said
    study = optuna.load_study(study_name="crowd", storage=url)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 6


def test_storage_errors_say_their_cause(tmp_path, monkeypatch):
    import sqlite3

    from optuna.exceptions import StorageInternalError
    from sqlalchemy.exc import OperationalError

    from optuna_treecv import _storage
    from optuna_treecv._storage import describe_storage_error

    monkeypatch.setattr(_storage, "SQLITE_BUSY_TIMEOUT", 0.2)
    url = f"sqlite:///{tmp_path / 'locked.db'}"
    study = optuna.create_study(study_name="s", storage=open_storage(url))
    holder = sqlite3.connect(tmp_path / "locked.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StorageInternalError, match="exceeding max length") as info:
            study.set_user_attr("a", 1)
    finally:
        holder.close()
    said = describe_storage_error(info.value)
    assert said.startswith("the database is locked: another process held its write")
    assert "0.2 s" in said and "\n" not in said

    def internal(message):
        try:
            try:
                raise OperationalError("UPDATE ...", {}, Exception(message))
            except OperationalError as cause:
                raise StorageInternalError("... e.g. exceeding max length.") from cause
        except StorageInternalError as exc:
            return exc

    server = describe_storage_error(internal("(1205, 'Lock wait timeout exceeded')"))
    assert server.startswith("the database is locked: another transaction held a")
    other = describe_storage_error(internal("disk I/O error"))
    assert other.startswith("the database refused a write: OperationalError: ")
    assert "disk I/O error" in other and "max length" not in other
