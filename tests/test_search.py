"""Tests for PrefixCache, TreeCVEstimator and TreeCVSearchCV."""

import math
import os

import numpy as np
import pytest
from joblib import parallel_config
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.cluster import MiniBatchKMeans
from sklearn.datasets import load_digits, load_iris, make_classification
from sklearn.exceptions import FitFailedWarning
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn.linear_model import LogisticRegression, SGDClassifier, SGDRegressor
from sklearn.model_selection import (
    GridSearchCV,
    HalvingGridSearchCV,
    KFold,
    RandomizedSearchCV,
    cross_val_score,
    cross_validate,
)
from sklearn.naive_bayes import MultinomialNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_ext import (
    PrefixCache,
    TreeCVEstimator,
    TreeCVSearchCV,
    TreeCVSplitter,
    tree_cross_validate,
)

# Tests marked with this run a multi-epoch learner (SGD's epochs, MLP's, k-means')
# through the tree on purpose: the regime note is expected there.
REGIME_NOTE = pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X, y


def _sgd(**params):
    # shuffle=False: partial_fit is then the same however the rows are batched.
    return SGDClassifier(shuffle=False, random_state=0, **params)


@parametrize_with_checks(
    [
        TreeCVEstimator(SGDClassifier(random_state=0)),
        TreeCVEstimator(SGDRegressor(random_state=0)),
        TreeCVEstimator(MultinomialNB()),
        TreeCVEstimator(MiniBatchKMeans(n_init=1, random_state=0)),
    ]
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


# -- PrefixCache ------------------------------------------------------------------
def test_prefix_cache_memory_bound_and_sharing_semantics():
    cache = PrefixCache(max_bytes=2000)
    for i in range(20):
        cache.put(bytes([i]), np.zeros(40))  # ~450 bytes pickled each
    assert bytes([19]) in cache and bytes([0]) not in cache
    assert cache.get(bytes([19])).shape == (40,)
    assert 0 < cache._memory.nbytes <= 2000
    import copy

    assert copy.deepcopy(cache) is cache  # clone() keeps sharing it


def test_prefix_cache_disk_tier_is_signed_and_bounded(tmp_path):
    writer = PrefixCache(directory=tmp_path, max_disk_bytes=10_000)
    writer.put(b"a" * 24, np.arange(5))
    # Another process: same folder, empty memory.
    reader = PrefixCache(directory=tmp_path)
    assert_array_equal(reader.get(b"a" * 24), np.arange(5))
    # A file this cache did not write is never unpickled.
    foreign = tmp_path / ((b"b" * 24).hex() + ".state")
    foreign.write_bytes(b"TREECV01" + b"\0" * 32 + b"cos\nsystem\n")
    with pytest.warns(RuntimeWarning, match="not written by this prefix cache"):
        assert reader.get(b"b" * 24) is None
    for i in range(30):
        writer.put(bytes([i]) * 24, np.zeros(100))
    own = [p for p in tmp_path.glob("*.state") if p != foreign]
    assert sum(p.stat().st_size for p in own) <= 10_000
    assert foreign.exists()  # Trimming removes only the cache's own files.
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_prefix_cache_unwritable_directory(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(ValueError, match="must be a writable directory"):
        PrefixCache(directory=locked)


def test_prefix_cache_directory_that_is_a_file(tmp_path):
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(ValueError, match="The 'directory' parameter of PrefixCache"):
        PrefixCache(directory=path)


@pytest.mark.parametrize("bad", [-1, 1.5, "big"])
def test_prefix_cache_bad_bounds(bad):
    with pytest.raises(ValueError, match="The 'max_bytes' parameter of PrefixCache"):
        PrefixCache(max_bytes=bad)


# -- TreeCVEstimator ----------------------------------------------------------------
@pytest.mark.parametrize("n_splits", [4, 8, 13])
def test_rows_fed_per_candidate_is_logarithmic(digits, n_splits):
    X, y = digits
    est = TreeCVEstimator(_sgd(), batch_size=32, cache=PrefixCache())
    result = cross_validate(
        est, X, y, cv=TreeCVSplitter(n_splits), return_estimator=True
    )
    fed = sum(e.n_samples_fed_ for e in result["estimator"])
    assert fed <= (math.log2(n_splits) + 0.25) * len(X)
    # A miss is an ordinary fit: the same scores without the cache.
    plain = cross_validate(
        TreeCVEstimator(_sgd(), batch_size=32, cache=None),
        X,
        y,
        cv=TreeCVSplitter(n_splits),
    )
    assert_array_equal(result["test_score"], plain["test_score"])


@pytest.mark.parametrize(
    "n_jobs, backend", [(1, "loky"), (2, "threading"), (2, "loky")]
)
@REGIME_NOTE
def test_grid_search_matches_tree_cross_validate(digits, tmp_path, n_jobs, backend):
    X, y = digits
    cv = TreeCVSplitter(6, shuffle=True, random_state=0, leaf_order="interleaved")
    cache = PrefixCache(directory=tmp_path)
    grid = {"estimator__alpha": [1e-4, 1e-2]}
    search = GridSearchCV(
        TreeCVEstimator(_sgd(), batch_size=50, cache=cache), grid, cv=cv, n_jobs=n_jobs
    )
    with parallel_config(backend=backend):
        search.fit(X, y)
    for i, alpha in enumerate([1e-4, 1e-2]):
        ref = tree_cross_validate(_sgd(alpha=alpha), X, y, cv=cv, return_run_info=True)
        split_scores = [search.cv_results_[f"split{j}_test_score"][i] for j in range(6)]
        assert_array_equal(split_scores, ref["test_score"])
    assert list(tmp_path.glob("*.state"))


def test_random_and_halving_searches_and_cross_val_score(digits):
    X, y = digits
    wrapped = TreeCVEstimator(_sgd(), batch_size=64)
    cv = TreeCVSplitter(4)
    scores = cross_val_score(wrapped, X, y, cv=cv)
    assert scores.shape == (4,)
    RandomizedSearchCV(
        wrapped,
        {"estimator__alpha": [1e-4, 1e-3, 1e-2]},
        n_iter=2,
        cv=cv,
        random_state=0,
    ).fit(X, y)
    # resource="n_samples" subsamples the rows of each iteration: prefixes are
    # shared between the folds of an iteration, not across iterations.
    halving = HalvingGridSearchCV(
        TreeCVEstimator(MultinomialNB(), batch_size=32),
        {"estimator__alpha": [0.1, 0.3, 0.5, 1.0]},
        cv=cv,
        factor=2,
        random_state=0,
    ).fit(X, y)
    assert "mean_test_score" in halving.cv_results_


def test_pipeline_fitting_a_transformer_per_fold_falls_back(digits):
    X, y = digits
    cv = TreeCVSplitter(5)
    cached = make_pipeline(StandardScaler(), TreeCVEstimator(_sgd(), batch_size=64))
    plain = make_pipeline(StandardScaler(), _sgd())
    # The scaler differs per fold, so no prefix matches: plain fits, same scores
    # as the same batches without the wrapper's cache.
    ours = cross_validate(cached, X, y, cv=cv, return_estimator=True)
    nocache = make_pipeline(
        StandardScaler(), TreeCVEstimator(_sgd(), batch_size=64, cache=None)
    )
    ref = cross_validate(nocache, X, y, cv=cv)
    assert_array_equal(ours["test_score"], ref["test_score"])
    assert all(p[-1].n_samples_reused_ == 0 for p in ours["estimator"])
    assert cross_validate(plain, X, y, cv=cv)["test_score"].shape == (5,)


def test_sample_weight_is_routed_and_part_of_the_key(digits):
    X, y = digits
    weights = np.linspace(0.5, 2.0, len(y))
    cache = PrefixCache()
    est = TreeCVEstimator(MultinomialNB(), batch_size=100, cache=cache)
    a = est.fit(X, y, sample_weight=weights).predict_proba(X)
    ref = MultinomialNB().fit(X, y, sample_weight=weights).predict_proba(X)
    assert_allclose(a, ref, rtol=1e-10)
    unweighted = TreeCVEstimator(MultinomialNB(), batch_size=100, cache=cache).fit(X, y)
    assert unweighted.n_samples_reused_ == 0


def test_non_deterministic_learner_warns_and_is_not_shared(digits):
    X, y = digits
    est = TreeCVEstimator(SGDClassifier(), batch_size=100)
    with pytest.warns(UserWarning, match="not deterministic"):
        est.fit(X, y)
    assert est.n_samples_reused_ == 0


@pytest.mark.parametrize(
    "params, error, message",
    [
        (
            {"estimator": LogisticRegression()},
            TypeError,
            "The 'estimator' parameter of TreeCVEstimator must be an object "
            "implementing 'partial_fit'",
        ),
        ({"batch_size": 0}, ValueError, "The 'batch_size' parameter"),
        ({"cache": "disk"}, ValueError, "The 'cache' parameter"),
    ],
)
def test_tree_cv_estimator_bad_params(digits, params, error, message):
    X, y = digits
    est = TreeCVEstimator(_sgd()).set_params(**params)
    with pytest.raises(error, match=message):
        est.fit(X, y)


# -- TreeCVSearchCV -----------------------------------------------------------------
@REGIME_NOTE
def test_tree_search_results_match_tree_cross_validate(digits):
    X, y = digits
    grid = {"alpha": [1e-4, 1e-2], "loss": ["hinge", "log_loss"]}
    search = TreeCVSearchCV(_sgd(), grid, cv=5, return_run_info=True).fit(X, y)
    results = search.cv_results_
    for i, params in enumerate(results["params"]):
        ref = tree_cross_validate(_sgd(**params), X, y, cv=5, return_run_info=True)
        for j in range(5):
            assert results[f"split{j}_test_score"][i] == ref["test_score"][j]
        assert results["n_samples_fed"][i] == ref["n_samples_fed"]
    assert_allclose(
        results["mean_test_score"],
        np.mean([results[f"split{j}_test_score"] for j in range(5)], 0),
    )
    best = int(np.argmax(results["mean_test_score"]))
    assert search.best_index_ == best and results["rank_test_score"][best] == 1
    assert search.best_params_ == results["params"][best]
    assert search.predict(X[:3]).shape == (3,)
    assert search.score(X, y) == search.best_estimator_.score(X, y)
    assert results["param_alpha"].tolist() == [1e-4, 1e-4, 1e-2, 1e-2]


@REGIME_NOTE
def test_tree_search_parallel_candidates_equal_sequential(digits):
    X, y = digits
    grid = {"alpha": [1e-4, 1e-3, 1e-2]}
    seq = TreeCVSearchCV(_sgd(), grid, cv=4).fit(X, y)
    par = TreeCVSearchCV(_sgd(), grid, cv=4, n_jobs=2).fit(X, y)
    assert_array_equal(
        seq.cv_results_["mean_test_score"], par.cv_results_["mean_test_score"]
    )


@REGIME_NOTE
def test_tree_search_random_multimetric_and_callable_refit(digits):
    X, y = digits
    search = TreeCVSearchCV(
        _sgd(),
        param_distributions={"alpha": [1e-5, 1e-4, 1e-3, 1e-2]},
        n_iter=3,
        scoring=["accuracy", "f1_macro"],
        refit="f1_macro",
        cv=3,
        random_state=0,
    ).fit(X, y)
    assert len(search.cv_results_["params"]) == 3
    assert {"mean_test_accuracy", "rank_test_f1_macro"} <= set(search.cv_results_)
    assert (
        search.best_score_
        == search.cv_results_["mean_test_f1_macro"][search.best_index_]
    )
    last = TreeCVSearchCV(
        _sgd(), {"alpha": [1e-4, 1e-2]}, cv=3, refit=lambda results: 1
    ).fit(X, y)
    assert last.best_params_ == {"alpha": 1e-2}
    with pytest.raises(ValueError, match="refit must be set to a scorer key"):
        TreeCVSearchCV(
            _sgd(), {"alpha": [1e-4]}, scoring=["accuracy", "f1_macro"], cv=3
        ).fit(X, y)


@REGIME_NOTE
# error_score=nan on purpose: the search says so, as GridSearchCV does.
@pytest.mark.filterwarnings("ignore:One or more of the test scores are non-finite")
def test_tree_search_error_score(digits):
    X, y = digits
    grid = {"alpha": [1e-4, -1.0]}
    with pytest.warns(FitFailedWarning, match="3 fits failed out of a total of 6"):
        search = TreeCVSearchCV(_sgd(), grid, cv=3).fit(X, y)
    assert np.isnan(search.cv_results_["mean_test_score"][1])
    assert search.best_index_ == 0
    with pytest.raises(ValueError, match="alpha"):
        TreeCVSearchCV(_sgd(), grid, cv=3, error_score="raise").fit(X, y)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({}, "exactly one of 'param_grid' and 'param_distributions'"),
        (
            {"param_grid": {"alpha": [1]}, "param_distributions": {"alpha": [1]}},
            "exactly one",
        ),
        ({"param_distributions": {"alpha": [1]}, "n_iter": 0}, "'n_iter' parameter"),
        ({"param_grid": {"alpha": [1]}, "method": "fast"}, "'method' parameter"),
        ({"param_grid": {"alpha": [1]}, "error_score": "zero"}, "'error_score'"),
    ],
)
def test_tree_search_bad_params(kwargs, message):
    X, y = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match=message):
        TreeCVSearchCV(_sgd(), **kwargs).fit(X, y)


def test_tree_search_standard_method_and_kfold(digits):
    X, y = digits
    search = TreeCVSearchCV(
        MultinomialNB(), {"alpha": [0.5, 1.0]}, cv=KFold(5), method="standard"
    ).fit(X, y)
    ref = GridSearchCV(MultinomialNB(), {"alpha": [0.5, 1.0]}, cv=KFold(5)).fit(X, y)
    assert_array_equal(
        search.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"]
    )


# -- native learners share prefixes in fit, without a wrapper -----------------------
@pytest.mark.parametrize("max_iter", [1, 3])
def test_native_fit_resumes_from_cached_prefix(max_iter):
    from sklearn_ext import LeastSquaresSGDRegressor, PegasosClassifier

    # 8 chunks of 1024 rows: every shared prefix ends on a batch boundary.
    X, y = make_classification(8192, 10, random_state=0)
    cv = TreeCVSplitter(8)
    for estimator, target in [
        (PegasosClassifier(shuffle=False, max_iter=max_iter), y),
        (LeastSquaresSGDRegressor(shuffle=False, max_iter=max_iter), X[:, 0]),
    ]:
        cache = PrefixCache()
        shared = cross_validate(
            estimator.set_params(cache=cache), X, target, cv=cv, return_estimator=True
        )
        plain = cross_validate(
            estimator.set_params(cache=None), X, target, cv=cv, return_estimator=True
        )
        for a, b in zip(shared["estimator"], plain["estimator"], strict=True):
            assert_array_equal(a.coef_, b.coef_)
        # Every fold after the first finds a prefix, except the one that starts
        # the tree's other half (leaf 4 shares nothing with leaves 0-3).
        assert cache.hits == 6
    with pytest.raises(ValueError, match="The 'cache' parameter of PegasosClassifier"):
        PegasosClassifier(shuffle=False, cache="disk").fit(X, y)


def test_metadata_routing_sends_sample_weight_to_partial_fit(digits):
    from sklearn import config_context

    X, y = digits
    weights = np.linspace(0.5, 2.0, len(y))
    with config_context(enable_metadata_routing=True):
        inner = MultinomialNB().set_partial_fit_request(sample_weight=True)
        est = TreeCVEstimator(inner, batch_size=100, cache=None)
        # Its score takes sample_weight too, so it must say whether it wants it.
        est.set_score_request(sample_weight=True)
        proba = est.fit(X, y, sample_weight=weights).predict_proba(X)
        scores = cross_validate(
            est, X, y, cv=TreeCVSplitter(4), params={"sample_weight": weights}
        )["test_score"]
    ref = MultinomialNB().fit(X, y, sample_weight=weights).predict_proba(X)
    assert_allclose(proba, ref, rtol=1e-10)
    assert scores.shape == (4,)


def test_tree_search_runs_native_learners_on_the_native_tree(digits):
    from sklearn_ext import PegasosClassifier

    X, y = digits
    grid = {"alpha": [1e-4, 1e-2]}
    search = TreeCVSearchCV(PegasosClassifier(), grid, cv=5, refit=False).fit(X, y)
    for i, alpha in enumerate([1e-4, 1e-2]):
        ref = tree_cross_validate(
            PegasosClassifier(alpha=alpha), X, y, cv=5, return_run_info=True
        )
        assert ref["backend"] == "native_tree"
        split_scores = [search.cv_results_[f"split{j}_test_score"][i] for j in range(5)]
        assert_array_equal(split_scores, ref["test_score"])
