"""optuna_treecv.open_storage: the storage forms, SQLite in WAL mode, bad URLs."""

import optuna
import pytest

from optuna_treecv import open_storage


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
