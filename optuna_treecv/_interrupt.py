"""Ctrl-C that stops a study after the running trial."""

from __future__ import annotations

import signal
import sys
import threading
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
    delivers no signals, this is ``study.optimize``.

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
    try:
        study.optimize(tracked, **optimize_kwargs)
    except KeyboardInterrupt:
        received.append(signal.SIGINT)
    except Exception:
        if not received:
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
