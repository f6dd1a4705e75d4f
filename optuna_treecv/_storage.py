"""Open an Optuna storage from a URL: SQLite in WAL mode, heartbeats, safe start."""

from __future__ import annotations

import numbers
import random
import time
import warnings
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import TrialState

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial

__all__ = ["open_storage", "retry_running_trials"]

#: How often a new database is retried when other processes create it too.
_FIRST_START_ATTEMPTS = 8
#: Seconds a SQLite connection waits for another process's write lock.
SQLITE_BUSY_TIMEOUT = 60.0
#: Substrings of the errors two processes creating one database may see.
_RACE_MESSAGES = (
    "unique constraint",
    "already exists",
    "duplicate key",
    "database is locked",
    "integrityerror",
)


def open_storage(
    url: str,
    *,
    heartbeat_interval: int | None = None,
    grace_period: int | None = None,
    max_retry: int | None = 3,
) -> optuna.storages.BaseStorage:
    """Open the Optuna storage named by ``url``, SQLite files in WAL mode.

    With SQLite's default rollback journal every commit waits for an fsync,
    and each report and attribute of a trial is a commit of its own. A
    ``sqlite:///PATH`` file is therefore opened in WAL mode with
    ``synchronous=NORMAL``: every commit only appends to the log, the database
    stays consistent and shareable by several processes, and only an OS crash
    or power cut can lose the last commits. The command line and the example
    scripts open their storages with this function.

    Any number of processes may open the same new database at the same moment:
    the one that loses the race to create Optuna's tables retries until the
    winner has finished, instead of failing with a ``UNIQUE constraint``
    error.

    With ``heartbeat_interval`` (database URLs only), each running trial
    records a heartbeat every ``heartbeat_interval`` seconds. When a worker is
    killed, its trial stops beating; the next trial any worker starts on the
    study (``study.optimize``) marks it ``FAIL`` (Optuna's
    :func:`~optuna.storages.fail_stale_trials`) and queues its parameters
    again (:class:`~optuna.storages.RetryHeartbeatStaleTrialCallback`), so a
    resumed study re-runs the killed trial's point. A
    :class:`~optuna.storages.JournalStorage` keeps no heartbeats: recover its
    trials with :func:`retry_running_trials` once every worker has stopped.

    Parameters
    ----------
    url : str
        ``"memory"`` (an :class:`~optuna.storages.InMemoryStorage`),
        ``"journal:PATH"`` (a :class:`~optuna.storages.JournalStorage` on a
        :class:`~optuna.storages.journal.JournalFileBackend`), or a SQLAlchemy
        database URL (``sqlite:///PATH``, ``postgresql+psycopg2://...``, ...)
        for an :class:`~optuna.storages.RDBStorage`.
    heartbeat_interval : int, default=None
        Seconds between two heartbeats of a running trial; ``None`` records
        none. Only for a database URL.
    grace_period : int, default=None
        Seconds without a heartbeat after which a running trial is stale;
        ``None`` means ``2 * heartbeat_interval``. Needs ``heartbeat_interval``.
    max_retry : int or None, default=3
        How many times the parameters of a stale trial are queued again
        (the retries of one point count together); ``None`` retries without
        limit, ``0`` only fails stale trials.

    Returns
    -------
    storage : optuna.storages.BaseStorage
        Ready for ``optuna.create_study(storage=...)`` or ``load_study``.

    Raises
    ------
    ValueError
        If ``url`` is none of the forms above or the storage cannot be opened
        (the message names the URL and the reason), or if a heartbeat setting
        is invalid or given for a storage that cannot keep heartbeats.

    See Also
    --------
    retry_running_trials : Recover the trials of killed workers by hand.

    Examples
    --------
    >>> import os, tempfile
    >>> import optuna
    >>> from optuna_treecv import open_storage
    >>> path = os.path.join(tempfile.mkdtemp(), "study.db")
    >>> storage = open_storage(f"sqlite:///{path}", heartbeat_interval=60)
    >>> study = optuna.create_study(storage=storage, study_name="demo")
    >>> with storage.engine.connect() as connection:
    ...     connection.exec_driver_sql("PRAGMA journal_mode").scalar()
    'wal'
    >>> storage.heartbeat_interval
    60
    >>> open_storage("study.db")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: cannot open storage 'study.db': expected a database URL such as ...
    """
    if not isinstance(url, str):
        raise ValueError(
            f"The 'url' parameter of open_storage must be a str. Got {url!r} instead."
        )
    _check_heartbeat(heartbeat_interval, grace_period, max_retry)
    if heartbeat_interval is not None and (url == "memory" or "://" not in url):
        kind = "an in-memory storage" if url == "memory" else "a JournalStorage"
        raise ValueError(
            f"The 'heartbeat_interval' parameter of open_storage needs a database "
            f"URL; {url!r} opens {kind}, which keeps no heartbeats. Recover the "
            "trials of killed workers with optuna_treecv.retry_running_trials "
            "once every worker has stopped."
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
    kwargs: dict[str, Any] = {"engine_kwargs": _sqlite_wal(url)}
    if heartbeat_interval is not None:
        kwargs.update(
            heartbeat_interval=int(heartbeat_interval),
            grace_period=None if grace_period is None else int(grace_period),
        )
        if max_retry is None or max_retry > 0:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                kwargs["heartbeat_stale_trial_callback"] = (
                    optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry)
                )
    return _open_rdb(url, kwargs)


def _open_rdb(url: str, kwargs: dict[str, Any]) -> optuna.storages.RDBStorage:
    """Open an RDB storage, retrying while other processes create the tables."""
    rng = random.Random()
    for attempt in range(_FIRST_START_ATTEMPTS):
        tic = time.monotonic()
        try:
            with warnings.catch_warnings():
                # The heartbeat arguments are experimental in Optuna.
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return optuna.storages.RDBStorage(url, **kwargs)
        except (
            Exception
        ) as exc:  # SQLAlchemy raises many kinds; all mean "cannot open".
            if _is_lock(exc) and time.monotonic() - tic >= SQLITE_BUSY_TIMEOUT:
                # A lock held past the whole busy wait, not a creation race.
                raise ValueError(
                    f"cannot open storage {url!r}: {describe_storage_error(exc)}"
                ) from None
            message = " ".join(str(exc).split()).split(" (Background on this error")[0]
            text = f"{type(exc).__name__} {message}".lower()
            racing = any(part in text for part in _RACE_MESSAGES)
            if racing and attempt + 1 < _FIRST_START_ATTEMPTS:
                # Another process is creating the same tables: wait for it.
                time.sleep(0.05 * 2**attempt * (1 + rng.random()))
                continue
            raise ValueError(f"cannot open storage {url!r}: {message[:300]}") from None
    raise AssertionError("unreachable")  # pragma: no cover


def describe_storage_error(exc: BaseException) -> str:
    """One line saying why a storage call failed, from the error's real cause.

    Optuna turns every database error raised while committing into a
    :class:`~optuna.exceptions.StorageInternalError` saying "This typically
    happens due to invalid data in the commit, e.g. exceeding max length",
    whatever the cause. A database locked by another process for longer than
    the busy timeout is said as such; any other cause is named after
    Optuna's message.

    Parameters
    ----------
    exc : BaseException
        The error raised by the storage, e.g. from ``create_study``,
        ``study.optimize`` or ``study.tell``.

    Returns
    -------
    message : str
        One line, without newlines.

    Examples
    --------
    >>> import sqlite3
    >>> from optuna.exceptions import StorageInternalError
    >>> from optuna_treecv._storage import describe_storage_error
    >>> try:
    ...     try:
    ...         raise sqlite3.OperationalError("database is locked")
    ...     except sqlite3.OperationalError as cause:
    ...         raise StorageInternalError("... e.g. exceeding max length.") from cause
    ... except StorageInternalError as exc:
    ...     print(describe_storage_error(exc))  # doctest: +ELLIPSIS
    the database is locked: another process held its write lock for longer than ...
    """
    if _is_lock(exc):
        return (
            "the database is locked: another process held its write lock for "
            f"longer than the {SQLITE_BUSY_TIMEOUT:g} s this one waits (a long "
            "transaction, or a process stopped while writing); try again once it "
            "has finished"
        )
    if _is_lock(exc, _SERVER_LOCK_MESSAGES):
        return (
            "the database is locked: another transaction held a lock past the "
            "server's lock wait timeout (a long transaction, or a process stopped "
            "while writing); try again once it has finished"
        )
    message = _one_line(exc)
    causes = list(_causes(exc))[1:]
    if causes and isinstance(exc, optuna.exceptions.StorageInternalError):
        cause = causes[-1]
        # Optuna's guess ("e.g. exceeding max length") gives way to the cause.
        message = f"the database refused a write: {type(cause).__name__}: "
        message += _one_line(cause)
    return message


def _causes(exc: BaseException):
    """``exc`` and the errors it was raised from, outermost first."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


#: What SQLite says when its busy timeout ran out on another connection's lock.
_SQLITE_LOCK_MESSAGES = ("database is locked", "database table is locked")
#: What MySQL and PostgreSQL say when their lock wait timeout ran out.
_SERVER_LOCK_MESSAGES = ("lock wait timeout exceeded", "due to lock timeout")


def _is_lock(exc: BaseException, messages=_SQLITE_LOCK_MESSAGES) -> bool:
    """Whether ``exc`` comes from a database locked by another connection."""
    return any(
        type(e).__name__ == "OperationalError"
        and any(part in str(e).lower() for part in messages)
        for e in _causes(exc)
    )


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()).split(" (Background on this error")[0]
    return text[:300] or type(exc).__name__


def _check_heartbeat(heartbeat_interval, grace_period, max_retry) -> None:
    for name, value in (
        ("heartbeat_interval", heartbeat_interval),
        ("grace_period", grace_period),
    ):
        if value is not None and (
            not isinstance(value, numbers.Integral)
            or isinstance(value, bool)
            or value < 1
        ):
            raise ValueError(
                f"The '{name}' parameter of open_storage must be an int in the "
                f"range [1, inf) or None. Got {value!r} instead."
            )
    if grace_period is not None and heartbeat_interval is None:
        raise ValueError(
            "The 'grace_period' parameter of open_storage needs 'heartbeat_interval'."
        )
    if grace_period is not None and grace_period <= heartbeat_interval:
        raise ValueError(
            "The 'grace_period' parameter of open_storage must exceed "
            f"heartbeat_interval={heartbeat_interval}, or a live trial may be "
            f"failed between two heartbeats. Got {grace_period!r} instead."
        )
    if max_retry is not None and (
        not isinstance(max_retry, numbers.Integral)
        or isinstance(max_retry, bool)
        or max_retry < 0
    ):
        raise ValueError(
            "The 'max_retry' parameter of open_storage must be an int in the range "
            f"[0, inf) or None. Got {max_retry!r} instead."
        )


def _sqlite_wal(url: str) -> dict[str, Any] | None:
    """Engine arguments opening a SQLite file in WAL mode, ``synchronous=NORMAL``."""
    prefix = "sqlite:///"
    path = url[len(prefix) :] if url.startswith(prefix) else ""
    if not path or path.startswith(":memory:") or "?" in path:
        return None

    def connect():
        import sqlite3

        connection = sqlite3.connect(
            path, timeout=SQLITE_BUSY_TIMEOUT, check_same_thread=False
        )
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        return connection

    return {"creator": connect}


def retry_running_trials(
    study: optuna.Study, *, max_retry: int | None = 3
) -> list[FrozenTrial]:
    """Fail the study's ``RUNNING`` trials and queue their parameters again.

    The recovery for storages without heartbeats
    (:class:`~optuna.storages.JournalStorage`, or a database opened without
    ``heartbeat_interval``): a worker killed by ``SIGKILL``, a lost node or
    an out-of-memory killer leaves its trial ``RUNNING`` forever. **Call this
    only when no worker is running** (the storage cannot tell a killed
    worker's trial from a live one): each ``RUNNING`` trial is set to
    ``FAIL`` and its parameters are queued as a ``WAITING`` trial, which the
    next ``study.optimize`` runs first. The queued trial carries the same
    system attributes as :class:`~optuna.storages.RetryHeartbeatStaleTrialCallback`
    writes (``failed_trial``, ``retry_history``), so both recoveries read
    alike.

    Parameters
    ----------
    study : optuna.Study
        The study to recover.
    max_retry : int or None, default=3
        A point already retried ``max_retry`` times is only failed; ``None``
        retries without limit.

    Returns
    -------
    failed : list of FrozenTrial
        The trials that were ``RUNNING`` and are now ``FAIL``.

    Examples
    --------
    >>> import optuna
    >>> from optuna_treecv import retry_running_trials
    >>> optuna.logging.set_verbosity(optuna.logging.WARNING)
    >>> study = optuna.create_study()
    >>> killed = study.ask({"x": optuna.distributions.FloatDistribution(0, 1)})
    >>> [t.number for t in retry_running_trials(study)]
    [0]
    >>> [t.state.name for t in study.trials]
    ['FAIL', 'WAITING']
    """
    if max_retry is not None and (
        not isinstance(max_retry, numbers.Integral) or max_retry < 0
    ):
        raise ValueError(
            "The 'max_retry' parameter of retry_running_trials must be an int in "
            f"the range [0, inf) or None. Got {max_retry!r} instead."
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        retry = optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry)
    failed = []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        try:
            frozen = study.tell(trial.number, state=TrialState.FAIL)
        except (ValueError, RuntimeError):  # Finished by its worker meanwhile.
            continue
        failed.append(frozen)
        if max_retry is None or max_retry > 0:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                retry(study, frozen)
    return failed
