"""``TreeCVSearchCV(racing=True)``: candidates raced up the tree's ladder (issue 37)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import make_classification
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_ext import PegasosClassifier, TreeCVSearchCV, TreeCVSplitter
from sklearn_ext.model_selection._backends import PythonTreeBackend
from sklearn_ext.model_selection._racing import (
    PRIOR_DF,
    drop_test,
    early_rung_test,
    half_rung_test,
)

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


def test_racing_keeps_the_best_and_drops_the_bad_after_the_half_rung(pair, data):
    plain, raced = pair
    X, _ = data
    results = raced.cv_results_
    assert plain.best_index_ == raced.best_index_ == 0
    assert raced.best_score_ == plain.best_score_
    assert results["race_rung"][raced.best_index_] == 4  # ran to the leaves
    bad = [i for i in range(len(GRID["alpha"])) if i not in GOOD]
    assert (results["race_rung"][bad] == 0.5).all()
    # A dropped candidate was fed half a pass: the root's left child, trained
    # on the right half (chunks 8 to 15 of 16 chunks of 250 rows), no more.
    assert 8 * 250 == len(X) // 2
    assert (results["n_samples_fed"][bad] == len(X) // 2).all()
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
        rungs = list(core.run_levels(resolved, early_rungs=1))
        last = [r for r in rungs if r.rung == results["race_rung"][i]]
        assert len(last) == 1
        assert results["race_score"][i] == last[0].scores["score"]


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


def test_half_rung_test_error_rate_under_the_null():
    # Two models as accurate in expectation, on the same rows, correlated:
    # the bound's test drops at most about alpha of them, usually fewer.
    rng = np.random.default_rng(0)
    alpha, n_rows, drops, tests = 0.05, 2000, 0, 0
    for _ in range(300):
        shared = rng.random(n_rows) < 0.8  # rows both models get right
        own = rng.random((10, n_rows)) < 0.5
        # Each model right on the shared rows, and on half the others.
        right = shared | own
        # A fixed leader, model 0, against the nine others.
        dropped = half_rung_test(right.mean(axis=1), n_rows, alpha)
        drops += int(dropped[1:].sum())
        tests += 9
    assert drops / tests < alpha


def test_half_rung_test_drops_the_clearly_worse_only():
    accuracies = np.array([0.84, 0.835, 0.80, np.nan, 0.70])
    dropped = half_rung_test(accuracies, 16000, 0.0125)
    assert dropped.tolist() == [False, False, True, False, True]
    # Fewer rows, wider bound: 0.04 below the leader is no evidence on 100.
    assert not half_rung_test(np.array([0.84, 0.80]), 100, 0.0125).any()


def test_racing_on_another_metric_tests_the_early_rungs_chunk_by_chunk(data):
    # F1 has no error-rate bound: each early rung is scored on each of the
    # left half's 8 chunks, and early_rung_test drops the clearly bad there
    # (the native tree: the quarter rung); the Python tree's half rung, on
    # half the rows' 8 chunks, leaves them to rung 1.
    native = search(True, scoring="f1", method="auto").fit(*data)
    assert native.best_index_ == 0
    assert (native.cv_results_["race_rung"][[2, 3, 4, 5]] == 0.25).all()
    python = search(True, scoring="f1").fit(*data)
    assert python.best_index_ == 0
    assert (python.cv_results_["race_rung"][[2, 3, 4, 5]] == 1).all()


def test_early_rung_test_is_unpaired():
    # Chunks that differ in difficulty: a candidate 0.01 below the leader on
    # every chunk is not dropped (a paired test would drop it: its
    # differences have no spread), one 0.2 below is.
    leader = np.array([0.95, 0.80, 0.90, 0.70, 0.85, 0.75, 0.92, 0.78])
    scores = [leader, leader - 0.01, leader - 0.2]
    sizes = np.full(8, 1000)
    assert early_rung_test(scores, sizes, 0.05).tolist() == [False, False, True]
    assert drop_test(
        [leader, leader - 0.01 + np.linspace(0, 1e-3, 8), leader - 0.2], sizes, 0.05
    ).tolist() == [False, True, True]
    assert early_rung_test([leader[:1], leader[:1] - 0.5], [1000], 0.05).tolist() == [
        False,
        False,
    ]  # one chunk: no spread to test on


def test_a_regressor_races_from_the_quarter_rung():
    from sklearn.datasets import make_regression

    from sklearn_ext import LeastSquaresSGDRegressor

    X, y = make_regression(n_samples=4000, n_features=8, noise=10.0, random_state=0)
    grid = {"eta0": [0.01, 0.03, 1e-6, 1e-5]}  # r² about 0.99 and far below
    kwargs = {"cv": TreeCVSplitter(16), "refit": False}
    plain = TreeCVSearchCV(LeastSquaresSGDRegressor(), grid, **kwargs).fit(X, y)
    raced = TreeCVSearchCV(LeastSquaresSGDRegressor(), grid, racing=True, **kwargs).fit(
        X, y
    )
    assert raced.best_index_ == plain.best_index_
    rungs = raced.cv_results_["race_rung"]
    assert (rungs[[2, 3]] == 0.25).all()  # dropped after n / 4 rows
    assert (raced.cv_results_["n_samples_fed"][[2, 3]] == len(X) // 4).all()


def test_the_native_tree_races_the_same(pair, data):
    _, raced = pair
    native = search(True, method="auto", return_run_info=True).fit(*data)
    assert set(native.cv_results_["backend"]) == {"native_tree"}
    assert native.best_index_ == raced.best_index_ == 0
    bad = [i for i in range(len(GRID["alpha"])) if i not in GOOD]
    # The native tree pauses the feed: the bad are dropped at an early rung.
    assert np.isin(native.cv_results_["race_rung"][bad], [0.25, 0.5]).all()
    assert (raced.cv_results_["race_rung"][bad] == 0.5).all()  # no quarter rung
    quarter = native.cv_results_["race_rung"] == 0.25
    assert quarter.any()
    # Dropped at the quarter rung: fed half of the right half, no more.
    assert (native.cv_results_["n_samples_fed"][quarter] == len(data[0]) // 4).all()


@pytest.mark.parametrize("method", ["auto", "python_tree"])
@pytest.mark.filterwarnings("ignore:One or more of the test scores are non-finite")
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
