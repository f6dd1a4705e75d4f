"""``TreeCVSearchCV(racing=True)``: candidates raced up the tree's ladder (issue 37)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import make_classification
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_ext import PegasosClassifier, TreeCVSearchCV, TreeCVSplitter
from sklearn_ext.model_selection._backends import PythonTreeBackend
from sklearn_ext.model_selection._racing import PRIOR_DF, drop_test

#: One clearly best alpha (0.1), a close second, clearly bad ones (a one-pass
#: PEGASOS on these data: 0.838, 0.832 and 0.75 to 0.79 by 16-fold CV).
GRID = {"alpha": [0.1, 1.0, 1e-6, 1e-5, 100.0, 1000.0]}
GOOD = {0, 1}


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=4000, n_features=10, n_informative=6, flip_y=0.02, random_state=0
    )
    return X, y


def search(racing=True, **kwargs):
    params = {"cv": TreeCVSplitter(16), "racing": racing, "refit": False}
    # The Python tree walks levels for every partial_fit learner.
    params["method"] = PythonTreeBackend()
    return TreeCVSearchCV(PegasosClassifier(), GRID, **{**params, **kwargs})


@pytest.fixture(scope="module")
def pair(data):
    X, y = data
    return search(False).fit(X, y), search(True).fit(X, y)


def test_racing_keeps_the_best_and_drops_the_bad_after_rung_one(pair, data):
    plain, raced = pair
    X, _ = data
    results = raced.cv_results_
    assert plain.best_index_ == raced.best_index_ == 0
    assert raced.best_score_ == plain.best_score_
    assert results["race_rung"][raced.best_index_] == 4  # ran to the leaves
    bad = [i for i in range(len(GRID["alpha"])) if i not in GOOD]
    assert (results["race_rung"][bad] == 1).all()
    # A dropped candidate was fed one pass: every row once.
    assert (results["n_samples_fed"][bad] == len(X)).all()
    assert results["n_samples_fed"][0] == 4 * len(X)
    # Without racing every candidate feeds 4 passes.
    assert int(np.sum(results["n_samples_fed"])) < len(GRID["alpha"]) * 4 * len(X) / 2


def test_cv_results_of_dropped_candidates(pair):
    plain, raced = pair
    results = raced.cv_results_
    dropped = results["race_rung"] < 4
    assert dropped.any()
    for i in range(16):
        split = results[f"split{i}_test_score"]
        assert np.isnan(split[dropped]).all()
        assert np.array_equal(
            split[~dropped], plain.cv_results_[f"split{i}_test_score"][~dropped]
        )
    assert np.isnan(results["mean_fit_time"][dropped]).all()
    assert (results["rank_test_score"][dropped] > (~dropped).sum()).all()
    assert np.isfinite(results["race_score"]).all()
    assert set(plain.cv_results_) | {"race_rung", "race_score", "n_samples_fed"} == set(
        results
    )


def test_race_score_is_the_last_rung(pair, data):
    from sklearn_ext.model_selection._core import RunCore

    _, raced = pair
    X, y = data
    core = RunCore(
        PegasosClassifier(), X, y, cv=TreeCVSplitter(16), method=PythonTreeBackend()
    )
    results = raced.cv_results_
    for i, params in enumerate(results["params"]):
        resolved = core.resolve(PegasosClassifier(**params))
        rungs = list(core.run_levels(resolved))
        last = rungs[int(results["race_rung"][i]) - 1]
        assert results["race_score"][i] == last.scores["score"]


def test_racing_in_parallel_threads_gives_the_same_race(pair, data):
    X, y = data
    _, raced = pair
    parallel = search(True, n_jobs=2).fit(*data)
    assert np.array_equal(
        parallel.cv_results_["race_rung"], raced.cv_results_["race_rung"]
    )
    assert parallel.best_index_ == raced.best_index_


def test_refit_takes_the_best_survivor(data):
    raced = search(True, refit=True).fit(*data)
    assert raced.best_params_ == {"alpha": 0.1}
    assert raced.best_estimator_.alpha == 0.1


class _NoLevels(ClassifierMixin, BaseEstimator):
    """A learner without partial_fit: standard CV, a backend without levels."""

    def __init__(self, shift=0.0):
        self.shift = shift

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.w_ = np.linalg.lstsq(X, 2.0 * y - 1.0, rcond=None)[0]
        return self

    def predict(self, X):
        return (X @ self.w_ + self.shift > 0).astype(int)


def test_a_backend_without_levels_drops_nothing(data):
    X, y = data
    grid = {"shift": [0.0, 5.0, -5.0]}
    raced = TreeCVSearchCV(_NoLevels(), grid, cv=4, racing=True).fit(X, y)
    assert (raced.cv_results_["race_rung"] == 2).all()
    assert np.isfinite(raced.cv_results_["mean_test_score"]).all()
    assert raced.best_params_ == {"shift": 0.0}


def test_racing_needs_one_metric(data):
    X, y = data
    with pytest.raises(ValueError, match="'refit' must name one of"):
        search(True, scoring=["accuracy", "f1"]).fit(X[:400], y[:400])
    raced = search(True, scoring=["accuracy", "f1"], refit="f1").fit(X, y)
    assert raced.best_index_ == 0


@pytest.mark.parametrize(
    "params, match",
    [
        ({"racing": "yes"}, "'racing' parameter"),
        ({"racing_alpha": 0.0}, "'racing_alpha' parameter"),
        ({"racing_alpha": 1.5}, "'racing_alpha' parameter"),
    ],
)
def test_bad_racing_parameters_are_refused(data, params, match):
    X, y = data
    with pytest.raises(InvalidParameterError, match=match):
        search(**params).fit(X[:100], y[:100])


def test_drop_test_error_rate_under_the_null():
    # Candidates as good as the leader: dropped at about alpha, not more.
    rng = np.random.default_rng(0)
    alpha, n_parts, drops, tests = 0.05, 4, 0, 0
    for _ in range(400):
        leader = rng.normal(0.8, 0.01, n_parts)
        others = leader + rng.normal(0.0, 0.01, (9, n_parts))
        dropped = drop_test([leader, *others], np.full(n_parts, 100), alpha)
        drops += int(dropped[1:].sum())
        tests += 9
    assert drops / tests < 1.5 * alpha
    assert PRIOR_DF >= 1


def test_drop_test_drops_the_clearly_worse_only():
    sizes = np.array([300, 300])
    leader = np.array([0.90, 0.91])
    close, bad, erratic = [0.899, 0.906], [0.71, 0.70], [0.92, 0.88]
    dropped = drop_test([leader, close, bad, erratic], sizes, 0.05)
    assert dropped.tolist() == [False, False, True, False]
    # No spread across parts anywhere: no estimate of the noise, no drop.
    assert not drop_test([leader, leader - 0.1], sizes, 0.05).any()


def test_the_native_tree_races_the_same(pair, data):
    _, raced = pair
    native = search(True, method="auto", return_run_info=True).fit(*data)
    assert set(native.cv_results_["backend"]) == {"native_tree"}
    assert native.best_index_ == raced.best_index_ == 0
    bad = [i for i in range(len(GRID["alpha"])) if i not in GOOD]
    assert (native.cv_results_["race_rung"][bad] == 1).all()


@pytest.mark.parametrize("method", ["auto", "python_tree"])
def test_a_failing_candidate_scores_error_score(data, method):
    from sklearn.exceptions import FitFailedWarning

    X, y = data
    grid = {"alpha": [0.1, -1.0, 1000.0]}  # a negative alpha fails its fit
    backend = PythonTreeBackend() if method == "python_tree" else method
    kwargs = {"cv": TreeCVSplitter(8), "racing": True, "method": backend}
    with pytest.warns(FitFailedWarning):
        raced = TreeCVSearchCV(PegasosClassifier(), grid, **kwargs).fit(X, y)
    assert np.isnan(raced.cv_results_["mean_test_score"][1])
    assert raced.best_index_ == 0
    with pytest.raises(ValueError, match="'alpha' parameter"):
        TreeCVSearchCV(PegasosClassifier(), grid, error_score="raise", **kwargs).fit(
            X, y
        )
