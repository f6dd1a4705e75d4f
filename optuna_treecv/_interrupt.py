"""Ctrl-C that stops a study after the running trial."""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import optuna

__all__ = ["optimize_until_interrupted"]


def optimize_until_interrupted(
    study: optuna.Study,
    func: Callable[[optuna.Trial], Any],
    **optimize_kwargs: Any,
) -> bool:
    """Run ``study.optimize`` so that Ctrl-C stops it after the running trial.

    Python turns Ctrl-C (SIGINT) into a :class:`KeyboardInterrupt` wherever
    the main thread happens to be: inside a storage write, while a storage
    lock is held, or in a finalizer run by the garbage collector, where Python
    prints "Exception ignored" and drops it, so that the study goes on as if
    nothing had happened. Here the first Ctrl-C asks the study to stop
    (:meth:`optuna.study.Study.stop`) once the running trial has finished: its
    result is kept and no storage write is cut in half. A second Ctrl-C
    aborts the running trial at once.

    Trials of this call left RUNNING by an abort are marked FAIL, so that a
    resumed study does not count them as in progress. The previous SIGINT
    handler is restored on return. Outside the main thread, where Python
    delivers no signals, Ctrl-C is left to Python.

    A worker paused longer than the storage's heartbeat grace period (SIGSTOP,
    a laptop asleep, a paused VM) finds on resume that another worker has
    failed its trial as stale (and queued its point again). Optuna would then
    stop the whole study with ``ValueError: Cannot tell a FAIL trial``; here
    the late result is dropped with a one-line note on stderr and the worker
    goes on with its remaining trials (``n_trials`` and ``timeout`` count
    from the start of this call).

    Parameters
    ----------
    study : optuna.study.Study
        The study to optimize.
    func : callable
        The objective, as for :meth:`optuna.study.Study.optimize`.
    **optimize_kwargs
        Passed to :meth:`optuna.study.Study.optimize` (``n_trials``,
        ``timeout``, ``callbacks``, ``catch``, ...).

    Returns
    -------
    interrupted : bool
        Whether Ctrl-C stopped the study. A shell reports an interrupted
        command with exit status 130 (128 + SIGINT).

    See Also
    --------
    optuna.study.Study.stop : Stop a study from an objective or a callback.

    Examples
    --------
    >>> import optuna
    >>> from optuna_treecv import optimize_until_interrupted
    >>> optuna.logging.set_verbosity(optuna.logging.WARNING)
    >>> study = optuna.create_study()
    >>> def objective(trial):
    ...     return trial.suggest_float("x", -1.0, 1.0) ** 2
    >>> optimize_until_interrupted(study, objective, n_trials=3)
    False
    >>> len(study.trials)
    3
    """
    from optuna.trial import TrialState

    received: list[int] = []
    started: list[int] = []

    def on_sigint(signum, frame):
        received.append(signum)
        if len(received) > 1:
            raise KeyboardInterrupt
        print(
            "\nCtrl-C: stopping after the running trial (Ctrl-C again to abort it).",
            file=sys.stderr,
            flush=True,
        )
        try:
            study.stop()
        except RuntimeError:  # Between optimize's trials: nothing is running.
            raise KeyboardInterrupt from None

    def tracked(trial):
        started.append(trial.number)
        return func(trial)

    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, on_sigint) if main_thread else None
    n_trials = optimize_kwargs.pop("n_trials", None)
    timeout = optimize_kwargs.pop("timeout", None)
    tic = time.monotonic()
    try:
        while True:
            left = None if n_trials is None else n_trials - len(started)
            seconds = None if timeout is None else timeout - (time.monotonic() - tic)
            if (left is not None and left <= 0) or (
                seconds is not None and seconds <= 0
            ):
                break
            try:
                study.optimize(
                    tracked, n_trials=left, timeout=seconds, **optimize_kwargs
                )
                break
            except ValueError:
                late = None if received else _failed_meanwhile(study, started)
                if late is None:
                    raise
                print(
                    f"Trial #{late} was failed as stale by another worker while "
                    "this one was paused past the heartbeat grace period; its late "
                    "result is dropped and the study goes on.",
                    file=sys.stderr,
                    flush=True,
                )
    except KeyboardInterrupt:
        received.append(signal.SIGINT)
    except Exception as exc:
        if not received:
            storage_error = _storage_error_behind(exc)
            if storage_error is not None and storage_error is not exc:
                # When a storage write fails as Optuna tells a trial, its own
                # bookkeeping then fails on an assertion; the write is the news.
                raise storage_error  # noqa: B904 - it is in exc's chain already
            raise
    finally:
        if main_thread:
            signal.signal(signal.SIGINT, previous)
    if received:
        for number in started:
            try:
                study.tell(number, state=TrialState.FAIL, skip_if_finished=True)
            except (ValueError, RuntimeError):  # Finished, or the storage is gone.
                pass
    return bool(received)


def _failed_meanwhile(study: optuna.Study, started: list[int]) -> int | None:
    """The number of this call's last trial if the storage already holds it FAIL.

    That is what Optuna's "Cannot tell a FAIL trial" means after a pause: the
    trial was finished by someone else (``fail_stale_trials``) before its own
    worker could tell its result.
    """
    from optuna.trial import TrialState

    if not started:
        return None
    number = started[-1]
    trials = study.get_trials(deepcopy=False)
    if number < len(trials) and trials[number].number == number:
        trial = trials[number]
    else:
        trial = next((t for t in trials if t.number == number), None)
    if trial is None or trial.state != TrialState.FAIL:
        return None
    return number


def _storage_error_behind(exc: BaseException) -> BaseException | None:
    """The first :class:`~optuna.exceptions.StorageInternalError` in ``exc``'s chain."""
    from optuna.exceptions import StorageInternalError

    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, StorageInternalError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None
