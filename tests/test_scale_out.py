"""Scale-out: threads, and worker processes sharing one study through a storage.

Each storage test starts 3 processes on one study; every completed trial must be
recorded exactly once, with its attributes. The PostgreSQL test starts a
throwaway server (initdb in a temporary directory) when the binaries and
psycopg2 are installed, and is skipped otherwise (``.ci/run`` installs both).
"""

from __future__ import annotations

import glob
import multiprocessing
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState
from sklearn.datasets import make_classification
from sklearn.linear_model import SGDClassifier

from optuna_treecv import TreeCVObjective

optuna.logging.set_verbosity(optuna.logging.WARNING)

N_WORKERS = 3
N_TRIALS = 3  # per worker


def worker(url: str, name: str, n_trials: int) -> None:
    """One worker process: load the shared study and run trials."""
    from optuna_treecv import open_storage

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    X, y = make_classification(n_samples=300, random_state=0)
    objective = TreeCVObjective(
        SGDClassifier(max_iter=5, tol=None, random_state=0),
        {"alpha": FloatDistribution(1e-5, 1e-1, log=True)},
        X,
        y,
        cv=4,
    )
    storage = open_storage(url) if url.startswith("journal:") else url
    study = optuna.load_study(
        study_name=name, storage=storage, pruner=optuna.pruners.NopPruner()
    )
    study.optimize(objective, n_trials=n_trials)


def run_workers(url: str, name: str, storage) -> optuna.Study:
    optuna.create_study(study_name=name, storage=storage, direction="maximize")
    # Forked workers skip re-importing scikit-learn and Optuna (seconds each);
    # each opens its own connection to the storage.
    context = multiprocessing.get_context("fork")
    procs = [
        context.Process(target=worker, args=(url, name, N_TRIALS))
        for _ in range(N_WORKERS)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
        assert proc.exitcode == 0, f"worker exited with {proc.exitcode}"
    return optuna.load_study(study_name=name, storage=storage)


def check_all_recorded_once(study: optuna.Study) -> None:
    trials = study.get_trials(deepcopy=False)
    assert len(trials) == N_WORKERS * N_TRIALS
    assert sorted(t.number for t in trials) == list(range(N_WORKERS * N_TRIALS))
    assert len({t._trial_id for t in trials}) == len(trials)
    for trial in trials:
        assert trial.state == TrialState.COMPLETE
        details = trial.user_attrs["cv"]
        splits = [details[f"split{i}_test_score"] for i in range(4)]
        assert trial.value == pytest.approx(np.mean(splits), rel=1e-12)
        assert details["backend"] == "python_tree"
        # The workers' NopPruner reads no reports: none are written.
        assert trial.intermediate_values == {}


# A multi-epoch learner through the tree on purpose: the regime note is expected.
@pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")
def test_threads():
    X, y = make_classification(n_samples=300, random_state=0)
    objective = TreeCVObjective(
        SGDClassifier(max_iter=5, tol=None, random_state=0),
        {"alpha": FloatDistribution(1e-5, 1e-1, log=True)},
        X,
        y,
        cv=4,
    )
    study = optuna.create_study(direction="maximize", pruner=optuna.pruners.NopPruner())
    study.optimize(objective, n_trials=N_WORKERS * N_TRIALS, n_jobs=3)
    check_all_recorded_once(study)


def test_three_processes_sqlite(tmp_path):
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    check_all_recorded_once(run_workers(url, "sqlite", url))


def test_three_processes_journal_file(tmp_path):
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    path = tmp_path / "journal.log"
    storage = JournalStorage(JournalFileBackend(str(path)))
    check_all_recorded_once(run_workers(f"journal:{path}", "journal", storage))


# -- a throwaway PostgreSQL server ---------------------------------------------------
def _pg_bindir() -> Path | None:
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def postgres_url():
    pytest.importorskip("psycopg2", reason="psycopg2 is not installed")
    bindir = _pg_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) are not installed")
    prefix: list[str] = []
    if os.geteuid() == 0:  # initdb refuses to run as root.
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user")
        prefix = ["runuser", "-u", "postgres", "--"]
    root = Path(tempfile.mkdtemp(prefix="treecv-pg-"))
    data = root / "data"
    if prefix:
        shutil.chown(root, "postgres")
    port = _free_port()

    def pg(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*prefix, *args], capture_output=True, text=True, timeout=120
        )

    init = pg(str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust")
    if init.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"initdb failed: {init.stderr.strip()[-300:]}")
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
    start = pg(
        str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l",
        str(root / "log"), "-w", "start",
    )  # fmt: skip
    if start.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"pg_ctl start failed: {start.stderr.strip()[-300:]}")
    try:
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/postgres"
    finally:
        pg(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-W", "stop")
        for _ in range(50):  # The postmaster removes its pid file on exit.
            if not (data / "postmaster.pid").exists():
                break
            time.sleep(0.1)
        shutil.rmtree(root, ignore_errors=True)


def test_three_processes_postgresql(postgres_url):
    check_all_recorded_once(run_workers(postgres_url, "postgres", postgres_url))


def test_unreachable_postgresql_is_a_clear_cli_error(capsys):
    pytest.importorskip("psycopg2", reason="psycopg2 is not installed")
    from optuna_treecv._cli import main

    url = f"postgresql+psycopg2://nobody@127.0.0.1:{_free_port()}/none"
    assert main(["tune", "sgd", "iris", "--storage", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("optuna-treecv: error: cannot open storage")
    assert err.count("\n") == 1
