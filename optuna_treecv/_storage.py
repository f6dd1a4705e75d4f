"""Open an Optuna storage from a URL, with SQLite files in WAL mode."""

from __future__ import annotations

from typing import Any

import optuna

__all__ = ["open_storage"]


def open_storage(url: str) -> optuna.storages.BaseStorage:
    """Open the Optuna storage named by ``url``, SQLite files in WAL mode.

    With SQLite's default rollback journal every commit waits for an fsync,
    and a 10-fold :class:`~optuna_treecv.TreeCVObjective` trial makes some 30
    commits (reports, pruning reads, attributes): often more time than its CV.
    A ``sqlite:///PATH`` file is therefore opened in WAL mode with
    ``synchronous=NORMAL``: every commit only appends to the log, the database
    stays consistent and shareable by several processes, and only an OS crash
    or power cut can lose the last commits. The command line and the example
    scripts open their storages with this function.

    Parameters
    ----------
    url : str
        ``"memory"`` (an :class:`~optuna.storages.InMemoryStorage`),
        ``"journal:PATH"`` (a :class:`~optuna.storages.JournalStorage` on a
        :class:`~optuna.storages.journal.JournalFileBackend`), or a SQLAlchemy
        database URL (``sqlite:///PATH``, ``postgresql+psycopg2://...``, ...)
        for an :class:`~optuna.storages.RDBStorage`.

    Returns
    -------
    storage : optuna.storages.BaseStorage
        Ready for ``optuna.create_study(storage=...)`` or ``load_study``.

    Raises
    ------
    ValueError
        If ``url`` is none of the forms above or the storage cannot be opened;
        the message names the URL and the reason.

    Examples
    --------
    >>> import os, tempfile
    >>> import optuna
    >>> from optuna_treecv import open_storage
    >>> path = os.path.join(tempfile.mkdtemp(), "study.db")
    >>> storage = open_storage(f"sqlite:///{path}")
    >>> study = optuna.create_study(storage=storage, study_name="demo")
    >>> with storage.engine.connect() as connection:
    ...     connection.exec_driver_sql("PRAGMA journal_mode").scalar()
    'wal'
    >>> open_storage("study.db")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: cannot open storage 'study.db': expected a database URL such as ...
    """
    if not isinstance(url, str):
        raise ValueError(
            f"The 'url' parameter of open_storage must be a str. Got {url!r} instead."
        )
    if url == "memory":
        return optuna.storages.InMemoryStorage()
    if url.startswith("journal:"):
        from optuna.storages.journal import JournalFileBackend

        try:
            return optuna.storages.JournalStorage(
                JournalFileBackend(url[len("journal:") :])
            )
        except OSError as exc:
            raise ValueError(f"cannot open storage {url!r}: {exc}.") from None
    if "://" not in url:
        raise ValueError(
            f"cannot open storage {url!r}: expected a database URL such as "
            "sqlite:///optuna.db, journal:PATH or memory."
        )
    try:
        return optuna.storages.RDBStorage(url, engine_kwargs=_sqlite_wal(url))
    except Exception as exc:  # SQLAlchemy raises many kinds; all mean "cannot open".
        message = " ".join(str(exc).split()).split(" (Background on this error")[0]
        raise ValueError(f"cannot open storage {url!r}: {message[:300]}") from None


def _sqlite_wal(url: str) -> dict[str, Any] | None:
    """Engine arguments opening a SQLite file in WAL mode, ``synchronous=NORMAL``."""
    prefix = "sqlite:///"
    path = url[len(prefix) :] if url.startswith(prefix) else ""
    if not path or path.startswith(":memory:") or "?" in path:
        return None

    def connect():
        import sqlite3

        connection = sqlite3.connect(path, timeout=60.0, check_same_thread=False)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        return connection

    return {"creator": connect}
