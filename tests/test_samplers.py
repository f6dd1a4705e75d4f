"""optuna_treecv.ResumableGridSampler: every grid point once, failed ones again."""

from __future__ import annotations

import optuna
import pytest
from optuna.trial import TrialState

from optuna_treecv import ResumableGridSampler

SPACE = {"a": [0.1, 1.0], "b": [1.0, 10.0], "c": [0.5, 2.0], "d": [3.0, 30.0]}


def test_points_and_index():
    sampler = ResumableGridSampler(SPACE)
    assert len(sampler.points) == 16
    assert sampler.points[0] == {"a": 0.1, "b": 1.0, "c": 0.5, "d": 3.0}
    for i, point in enumerate(sampler.points):
        assert sampler.point_index(point) == i
    assert sampler.point_index({"a": 0.1, "b": 1.0, "c": 0.5, "d": 4.0}) is None
    assert sampler.point_index({"a": 0.1}) is None


def test_reruns_failed_points_and_stops():
    study = optuna.create_study(sampler=ResumableGridSampler(SPACE, seed=0))
    seen = []

    def objective(trial):
        params = {
            name: trial.suggest_float(name, 1e-5, 1e4, log=True) for name in SPACE
        }
        seen.append(tuple(sorted(params.items())))
        if len(seen) in (3, 7):
            raise RuntimeError("interrupted")
        return 0.0

    enqueued = ResumableGridSampler(SPACE).points[5]
    study.enqueue_trial(enqueued)
    study.optimize(objective, n_trials=40, catch=(RuntimeError,))
    assert study.trials[0].params == enqueued
    states = [t.state for t in study.trials]
    assert states.count(TrialState.FAIL) == 2
    assert states.count(TrialState.COMPLETE) == 16  # Stopped by itself, grid done.
    assert len(study.trials) == 18
    assert len(set(seen)) == 16
    # A new sampler on the same study finds nothing left.
    assert ResumableGridSampler(SPACE).n_remaining(study) == 0


def test_resumes_from_the_storage():
    storage = optuna.storages.InMemoryStorage()
    study = optuna.create_study(storage=storage, sampler=ResumableGridSampler(SPACE))
    objective = lambda t: sum(t.suggest_float(n, 1e-5, 1e4) for n in SPACE)
    study.optimize(objective, n_trials=6)
    first = {ResumableGridSampler(SPACE).point_index(t.params) for t in study.trials}
    assert len(first) == 6
    again = optuna.load_study(
        study_name=study.study_name,
        storage=storage,
        sampler=ResumableGridSampler(SPACE, seed=1),
    )
    assert again.sampler.n_remaining(again) == 10
    assert again.sampler.done(again) == first
    again.optimize(objective, n_trials=100)
    points = [again.sampler.point_index(t.params) for t in again.trials]
    assert sorted(points) == list(range(16))  # The 10 missing ones, once each.


def test_trial_not_started_by_the_sampler():
    sampler = ResumableGridSampler(SPACE)
    study = optuna.create_study(sampler=sampler)
    trial = study.ask()
    sampler._running.pop(trial.number)  # As if another sampler had started it.
    with pytest.raises(ValueError, match="was not started by this ResumableGrid"):
        trial.suggest_float("a", 0.01, 10)
