"""A grid sampler for long grids in persistent storages: linear cost, resumable."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from optuna.samplers import GridSampler
from optuna.trial import TrialState

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

__all__ = ["ResumableGridSampler"]


def _grid_points(space: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every point of the grid, as parameter dicts, names in sorted order."""
    names = sorted(space)
    return [
        dict(zip(names, values, strict=True))
        for values in itertools.product(*map(space.get, names))
    ]


class ResumableGridSampler(GridSampler):
    """Optuna's :class:`~optuna.samplers.GridSampler`, resumable and linear in cost.

    Two changes for grids of thousands of points in a persistent storage:

    - **Linear cost.** The stock sampler (Optuna 5.0) lists all trials of the
      study and compares their stored search spaces after every trial, a cost
      growing with the number of trials (quadratic over the grid). This one
      reads the study once and then keeps the set of finished grid points in
      memory, updated in ``after_trial``.
    - **Resuming.** A grid point is done only when a trial with its parameters
      is ``COMPLETE``. The stock sampler also counts ``FAIL`` trials as
      visited, so the point of a trial interrupted by Ctrl-C would never be
      evaluated. Here such points are evaluated again by the next run, and the
      study stops by itself once every point is complete.

    Grid points are identified by their parameter values (nothing extra is
    written to the storage), visited in an order shuffled by ``seed``. Use one
    process per study (threads of ``optimize(n_jobs=...)`` included). Enqueued
    trials (:meth:`optuna.study.Study.enqueue_trial`) keep their own parameters.

    Parameters
    ----------
    search_space : dict of str to sequence
        The values of each parameter; the grid is their product. The objective
        suggests each parameter with any distribution that contains its values
        (``trial.suggest_float(name, low, high, log=True)`` for example).
    seed : int, default=0
        Seeds the order in which the grid points are visited.

    Attributes
    ----------
    points : list of dict
        Every grid point, as a parameter dict.

    Examples
    --------
    >>> import optuna
    >>> from optuna_treecv import ResumableGridSampler
    >>> optuna.logging.set_verbosity(optuna.logging.WARNING)
    >>> sampler = ResumableGridSampler({"x": [1.0, 2.0], "y": [10.0, 20.0]})
    >>> study = optuna.create_study(sampler=sampler)
    >>> def objective(trial):
    ...     return trial.suggest_float("x", 1, 2) * trial.suggest_float("y", 10, 20)
    >>> study.optimize(objective, n_trials=100)  # Stops after the 4 grid points.
    >>> len(study.trials), sampler.n_remaining(study), study.best_value
    (4, 0, 10.0)
    """

    def __init__(
        self, search_space: Mapping[str, Sequence[Any]], seed: int = 0
    ) -> None:
        super().__init__(search_space, seed=seed)
        self.points = _grid_points(search_space)
        self._names = sorted(search_space)
        self._index = {self._key(p): i for i, p in enumerate(self.points)}
        self._order = np.random.RandomState(seed).permutation(len(self.points))
        self._next = 0
        self._done: set[int] | None = None
        self._running: dict[int, int] = {}  # trial number -> grid point
        self._lock = threading.Lock()

    def _key(self, params: Mapping[str, Any]) -> tuple:
        return tuple(float(params[name]) for name in self._names)

    def point_index(self, params: Mapping[str, Any]) -> int | None:
        """The index in :attr:`points` of ``params``, or None when off the grid."""
        try:
            return self._index.get(self._key(params))
        except (KeyError, TypeError, ValueError):
            return None

    def _sync(self, study: optuna.Study) -> set[int]:
        """Read the study's complete grid points once (call under the lock)."""
        if self._done is None:
            self._done = set()
            for trial in study.get_trials(
                deepcopy=False, states=(TrialState.COMPLETE,)
            ):
                index = self.point_index(trial.params)
                if index is not None:
                    self._done.add(index)
        return self._done

    def done(self, study: optuna.Study) -> set[int]:
        """Indices of the grid points with a ``COMPLETE`` trial in ``study``."""
        with self._lock:
            return set(self._sync(study))

    def n_remaining(self, study: optuna.Study) -> int:
        """The number of grid points still to evaluate in ``study``."""
        with self._lock:
            return len(self.points) - len(self._sync(study))

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        """Assign the next grid point not done nor running to ``trial``."""
        if "fixed_params" in trial.system_attrs:  # Enqueued: its own point.
            return
        with self._lock:
            done = self._sync(study)
            running = set(self._running.values())  # Threads of this process.
            index = None
            while self._next < len(self._order):
                candidate = int(self._order[self._next])
                self._next += 1
                if candidate not in done and candidate not in running:
                    index = candidate
                    break
            if index is None:  # Every point done or running: retry one not done
                # (a point whose trial failed earlier in this run), else repeat.
                left = sorted(set(range(len(self.points))) - done - running)
                index = left[0] if left else 0
            self._running[trial.number] = index

    def sample_relative(self, study, trial, search_space) -> dict[str, Any]:
        """Nothing: every parameter is sampled independently from the grid point."""
        return {}

    def sample_independent(self, study, trial, param_name, param_distribution) -> Any:
        """The value of ``param_name`` at the trial's grid point."""
        with self._lock:
            index = self._running.get(trial.number)
        if index is None:
            raise ValueError(
                f"Trial {trial.number} was not started by this ResumableGridSampler "
                "(enqueued trials must fix every parameter)."
            )
        return self.points[index][param_name]

    def after_trial(self, study, trial, state, values) -> None:
        """Record a completed grid point; stop the study when all are complete."""
        with self._lock:
            self._running.pop(trial.number, None)
            # By the parameters the trial ran with (an enqueued trial has its own).
            index = self.point_index(trial.params)
            if index is not None and state == TrialState.COMPLETE:
                self._sync(study).add(index)
            if self._done is not None and len(self._done) == len(self.points):
                study.stop()
