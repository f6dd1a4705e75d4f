"""Cross-C warm starts: WarmStartStore, the exact skip, seeded fits and CV."""

import multiprocessing
import pickle
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.datasets import load_iris, make_classification
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import ParameterGrid, StratifiedKFold
from sklearn.preprocessing import scale
from sklearn.svm import SVC

from sklearn_ext import FoldPlan, TreeCVSearchCV
from sklearn_ext.model_selection import choose_backend
from sklearn_ext.model_selection._search import warm_start_order
from sklearn_ext.svm import (
    AlphaSeededSVC,
    AlphaSeedingBackend,
    WarmStartStore,
    alpha_seeded_cv,
    svm_c_path_cv,
)
from sklearn_ext.svm._solver import SVMParams

CS = [0.25, 1.0, 4.0, 16.0, 64.0]


@pytest.fixture
def noisy():
    X, y = make_classification(
        n_samples=200, n_features=8, n_informative=5, flip_y=0.05, random_state=0
    )
    return scale(X), y


@pytest.fixture
def separable():
    X, y = make_classification(
        n_samples=150,
        n_features=10,
        n_informative=8,
        class_sep=2.5,
        flip_y=0.0,
        random_state=1,
    )
    return scale(X), y


@pytest.mark.parametrize("scale_seed", [False, True])
def test_warm_fits_reach_the_cold_objective(noisy, scale_seed):
    X, y = noisy
    store = WarmStartStore(scale=scale_seed)
    # Increasing then decreasing C: seeds come from below and from above.
    for C in [*CS, 2.0, 0.5]:
        warm = AlphaSeededSVC(C=C, gamma=0.2, warm_start_store=store).fit(X, y)
        cold = AlphaSeededSVC(C=C, gamma=0.2).fit(X, y)
        assert_allclose(warm.objective_, cold.objective_, rtol=1e-3)
        assert np.mean(warm.predict(X) == cold.predict(X)) >= 0.99
    assert store.n_hits == len(CS) + 1 and store.n_misses == 1
    assert np.isnan(AlphaSeededSVC(C=1.0, gamma=0.3).fit(X, y).warm_start_C_[0])


def test_seed_is_the_nearest_C(noisy):
    X, y = noisy
    store = WarmStartStore()
    for C in (1.0, 8.0):
        AlphaSeededSVC(C=C, gamma=0.2, warm_start_store=store).fit(X, y)
    model = AlphaSeededSVC(C=2.0, gamma=0.2, warm_start_store=store).fit(X, y)
    assert model.warm_start_C_[0] == 1.0
    model = AlphaSeededSVC(C=5.0, gamma=0.2, warm_start_store=store).fit(X, y)
    assert model.warm_start_C_[0] == 8.0 and not model.warm_start_skipped_[0]


def test_exact_skip(separable):
    X, y = separable
    store = WarmStartStore()
    tight = dict(gamma=0.05, tol=1e-6)
    low = AlphaSeededSVC(C=50.0, warm_start_store=store, **tight).fit(X, y)
    assert np.max(low._alpha_by_pair[0]) < 50.0  # no alpha at its bound
    skipped = AlphaSeededSVC(C=400.0, warm_start_store=store, **tight).fit(X, y)
    assert skipped.warm_start_skipped_[0] and skipped.n_iter_[0] == 0
    assert skipped.warm_start_C_[0] == 50.0
    assert store.n_skips == 1
    cold = AlphaSeededSVC(C=400.0, **tight).fit(X, y)
    assert cold.n_iter_[0] > 0
    # The skipped solution is the cold solution at the larger C.
    assert_allclose(
        skipped.decision_function(X), cold.decision_function(X), rtol=0, atol=1e-4
    )
    assert_allclose(skipped.objective_, cold.objective_, rtol=1e-6)
    assert_array_equal(skipped.predict(X), cold.predict(X))


def test_no_skip_with_alphas_at_the_bound(noisy):
    X, y = noisy
    store = WarmStartStore()
    low = AlphaSeededSVC(C=1.0, gamma=0.2, warm_start_store=store).fit(X, y)
    assert np.max(low._alpha_by_pair[0]) == 1.0
    high = AlphaSeededSVC(C=4.0, gamma=0.2, warm_start_store=store).fit(X, y)
    assert not high.warm_start_skipped_[0] and high.n_iter_[0] > 0


def test_cv_with_store_matches_cold_and_skips(separable):
    X, y = separable
    store = WarmStartStore()
    total_warm = total_cold = 0
    skips = 0
    for C in [1.0, 4.0, 16.0, 64.0, 256.0]:
        model = AlphaSeededSVC(C=C, gamma=0.05, warm_start_store=store)
        warm = alpha_seeded_cv(model, X, y, cv=5)
        cold = alpha_seeded_cv(AlphaSeededSVC(C=C, gamma=0.05), X, y, cv=5)
        for a, b in zip(warm["objective"], cold["objective"], strict=True):
            assert_allclose(a, b, rtol=1e-3)
        assert np.mean(warm["test_score"] == cold["test_score"]) >= 0.8
        total_warm += warm["n_iter"].sum()
        total_cold += cold["n_iter"].sum()
        skips += warm["warm_start_skips"].sum()
        assert warm["warm_start_seed"].shape == (5,)
    assert skips > 0
    assert total_warm < 0.7 * total_cold
    assert "warm_start_seed" not in cold


def test_multiclass_with_store():
    X, y = load_iris(return_X_y=True)
    store = WarmStartStore()
    for C in (1.0, 10.0, 100.0):
        warm = AlphaSeededSVC(C=C, warm_start_store=store).fit(X, y)
        cold = AlphaSeededSVC(C=C).fit(X, y)
        assert_allclose(warm.objective_, cold.objective_, rtol=1e-3)
    assert warm.warm_start_C_.shape == (3,) and np.all(warm.warm_start_C_ == 10.0)
    result = alpha_seeded_cv(AlphaSeededSVC(C=1.0, warm_start_store=store), X, y, cv=3)
    assert np.all(np.isnan(result["warm_start_seed"]))  # folds are new problems


def test_fingerprint_mismatch_starts_cold(noisy):
    X, y = noisy
    plan = FoldPlan(
        [t for _, t in StratifiedKFold(4, shuffle=True, random_state=0).split(X, y)],
        n_samples=X.shape[0],
    )
    store = WarmStartStore()
    model = AlphaSeededSVC(C=1.0, gamma=0.2, warm_start_store=store)
    alpha_seeded_cv(model, X, y, cv=plan)
    changed = X.copy()
    changed[0, 0] += 1.0
    # The same folds and kernel on other data: a warning, then cold starts.
    with pytest.warns(UserWarning, match="fingerprint mismatch"):
        warm = alpha_seeded_cv(model.set_params(C=2.0), changed, y, cv=plan)
    cold = alpha_seeded_cv(AlphaSeededSVC(C=2.0, gamma=0.2), changed, y, cv=plan)
    assert np.all(np.isnan(warm["warm_start_seed"]))
    assert_array_equal(warm["n_iter"], cold["n_iter"])
    for a, b in zip(warm["objective"], cold["objective"], strict=True):
        assert_allclose(a, b, rtol=1e-12)


def test_fits_on_other_data_are_other_problems(noisy):
    X, y = noisy
    store = WarmStartStore()
    AlphaSeededSVC(C=1.0, gamma=0.2, warm_start_store=store).fit(X[:150], y[:150])
    # Same size, other rows (as the folds of a standard CV): a plain miss.
    model = AlphaSeededSVC(C=2.0, gamma=0.2, warm_start_store=store)
    model.fit(X[50:], y[50:])
    assert np.isnan(model.warm_start_C_[0]) and len(store) == 2
    model = AlphaSeededSVC(C=4.0, gamma=0.2, warm_start_store=store)
    assert model.fit(X[:150], y[:150]).warm_start_C_[0] == 1.0


def test_other_kernels_are_other_problems(noisy):
    X, y = noisy
    store = WarmStartStore()
    AlphaSeededSVC(C=1.0, gamma=0.2, warm_start_store=store).fit(X, y)
    model = AlphaSeededSVC(C=1.0, gamma=0.3, warm_start_store=store).fit(X, y)
    assert np.isnan(model.warm_start_C_[0]) and store.n_misses == 2


def test_bad_input(noisy):
    X, y = noisy
    store = WarmStartStore()
    with pytest.raises(ValueError, match="'C' parameter of a warm start"):
        store.lookup(("k",), "d", 0.0)
    with pytest.raises(ValueError, match="'C' parameter of a warm start"):
        store.lookup(("k",), "d", -1.0)
    with pytest.raises(ValueError, match="'C' parameter of AlphaSeededSVC"):
        AlphaSeededSVC(C=-1.0, warm_start_store=store).fit(X, y)
    with pytest.raises(ValueError, match="'scale' parameter of WarmStartStore"):
        WarmStartStore(scale="yes")
    with pytest.raises(ValueError, match="'max_solutions' parameter"):
        WarmStartStore(max_solutions=0)
    with pytest.raises(ValueError, match="'warm_start_store' parameter"):
        AlphaSeededSVC(warm_start_store="memory").fit(X, y)


def test_clones_share_and_pickles_snapshot(noisy):
    X, y = noisy
    store = WarmStartStore()
    model = AlphaSeededSVC(C=1.0, gamma=0.2, warm_start_store=store)
    assert clone(model).warm_start_store is store
    model.fit(X, y)
    copy = pickle.loads(pickle.dumps(store))
    assert len(copy) == len(store) == 1
    other = AlphaSeededSVC(C=2.0, gamma=0.2, warm_start_store=copy).fit(X, y)
    assert other.warm_start_C_[0] == 1.0 and len(store) == 1


def test_bounded_store(noisy):
    X, y = noisy
    store = WarmStartStore(max_solutions=2)
    for gamma in (0.1, 0.2, 0.3):
        AlphaSeededSVC(C=1.0, gamma=gamma, warm_start_store=store).fit(X, y)
    assert len(store) == 2


def test_threads_share_one_store(noisy):
    X, y = noisy
    store = WarmStartStore()

    def fit(C):
        return AlphaSeededSVC(C=C, gamma=0.2, warm_start_store=store).fit(X, y)

    with ThreadPoolExecutor(4) as pool:
        models = list(pool.map(fit, [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]))
    for model in models:
        cold = AlphaSeededSVC(C=model.C, gamma=0.2).fit(X, y)
        assert_allclose(model.objective_, cold.objective_, rtol=1e-3)
    assert len(store) == 8 and store.n_hits + store.n_misses == 8


def test_c_path_matches_separate_cv_runs(separable):
    X, y = separable
    Cs = [64.0, 1.0, 16.0, 4.0]  # any order; run by increasing C
    res = svm_c_path_cv(AlphaSeededSVC(), X, y, Cs, gammas=[0.05, 0.2], cv=5)
    assert [p["C"] for p in res["params"]] == Cs * 2
    assert [p["gamma"] for p in res["params"]] == [0.05] * 4 + [0.2] * 4
    assert list(res["param_C"]) == Cs * 2
    total_cold = 0
    for i, params in enumerate(res["params"]):
        cold = alpha_seeded_cv(AlphaSeededSVC(**params), X, y, cv=5, seeding="none")
        total_cold += cold["n_iter"].sum()
        splits = [res[f"split{f}_test_score"][i] for f in range(5)]
        assert np.mean(np.isclose(splits, cold["test_score"])) >= 0.8
        assert abs(res["mean_test_score"][i] - cold["test_score"].mean()) <= 0.02
    assert res["n_iter"].sum() < 0.75 * total_cold
    assert res["warm_start_skips"].sum() > 0
    # The smallest C of each gamma starts cold, the others mostly from the store
    # (a fold may prefer the previous fold's seed, with a lower objective).
    assert res["warm_start_hits"][1] == 0 and res["warm_start_hits"][5] == 0
    assert np.all(res["warm_start_hits"][[0, 2, 3, 4, 6, 7]] >= 3)
    best = int(np.argmin(res["rank_test_score"]))
    assert res["mean_test_score"][best] == res["mean_test_score"].max()


def test_c_path_table_is_the_search_table(separable):
    """svm_c_path_cv gives TreeCVSearchCV's cv_results_ for the same candidates."""
    X, y = separable
    Cs = [4.0, 1.0, 16.0]
    res = svm_c_path_cv(AlphaSeededSVC(gamma=0.1), X, y, Cs, cv=4)
    search = TreeCVSearchCV(
        AlphaSeededSVC(gamma=0.1), {"C": Cs}, cv=4, return_run_info=True
    ).fit(X, y)
    table = search.cv_results_
    # Both tables carry the backend's extras, warm starts included (the
    # search's own store, since cross-C warm starts are on by default).
    extra = {"warm_start_seed", "warm_start_hits", "warm_start_skips"}
    assert {"n_iter", "seed_time"} | extra <= set(table)
    assert set(res) == set(table)
    assert res["params"] == table["params"] and list(res["param_C"]) == Cs
    assert_array_equal(res["n_samples_fed"], table["n_samples_fed"])
    assert_array_equal(res["warm_start_hits"], table["warm_start_hits"])
    for f in range(4):
        assert_allclose(res[f"split{f}_test_score"], table[f"split{f}_test_score"])
    assert_array_equal(res["rank_test_score"], table["rank_test_score"])


def test_c_path_bad_input(noisy):
    X, y = noisy
    with pytest.raises(ValueError, match="'Cs' parameter of svm_c_path_cv"):
        svm_c_path_cv(AlphaSeededSVC(), X, y, [1.0, 0.0])
    with pytest.raises(ValueError, match="'Cs' parameter of svm_c_path_cv"):
        svm_c_path_cv(AlphaSeededSVC(), X, y, [])
    with pytest.raises(ValueError, match="'gammas' parameter of svm_c_path_cv"):
        svm_c_path_cv(AlphaSeededSVC(), X, y, [1.0], gammas=[-1.0])


def test_search_orders_candidates_by_C(separable):
    X, y = separable
    store = WarmStartStore()
    grid = {"C": [64.0, 1.0, 16.0, 4.0], "gamma": [0.05]}
    order = warm_start_order(
        AlphaSeededSVC(warm_start_store=store), list(ParameterGrid(grid))
    )
    assert order == [1, 3, 2, 0]
    assert warm_start_order(AlphaSeededSVC(), list(ParameterGrid(grid))) == [0, 1, 2, 3]
    search = TreeCVSearchCV(AlphaSeededSVC(warm_start_store=store), grid, cv=5).fit(
        X, y
    )
    plain = TreeCVSearchCV(AlphaSeededSVC(), grid, cv=5).fit(X, y)
    assert [p["C"] for p in search.cv_results_["params"]] == [64.0, 1.0, 16.0, 4.0]
    assert_allclose(
        search.cv_results_["mean_test_score"],
        plain.cv_results_["mean_test_score"],
        atol=0.02,
    )
    assert store.n_skips > 0 and store.n_hits >= 15
    assert search.best_params_["C"] in grid["C"]


def test_c_path_uses_the_estimators_empty_store(separable):
    X, y = separable
    store = WarmStartStore()
    assert bool(store) and len(store) == 0
    svm_c_path_cv(
        AlphaSeededSVC(gamma=0.05, warm_start_store=store), X, y, [1, 4], cv=3
    )
    assert len(store) == 6 and store.n_hits == 3


@pytest.mark.parametrize(
    "params", [dict(class_weight="balanced"), dict(kernel_dtype="float32")]
)
def test_c_path_multiclass_matches_cold(params):
    X, y = load_iris(return_X_y=True)
    Cs = [0.1, 1.0, 10.0, 100.0]
    res = svm_c_path_cv(AlphaSeededSVC(**params), X, y, Cs, cv=5)
    for i, C in enumerate(Cs):
        cold = alpha_seeded_cv(AlphaSeededSVC(C=C, **params), X, y, cv=5)
        assert abs(res["mean_test_score"][i] - cold["test_score"].mean()) <= 0.02
    assert res["warm_start_hits"][1:].sum() > 0


# -- keys by content (issue 17, items 1 and 2) ------------------------------------
def _kkt_gap(model, X, y, kernel) -> float:
    """LIBSVM's stopping measure ``m(a) - M(a)`` of a binary model, recomputed.

    ``kernel(A, B)`` gives the true kernel; a warm fit may return a stored
    solution only if it meets the tolerance on the true problem.
    """
    classes = model.classes_
    y_pm = np.where(y == classes[0], 1.0, -1.0)
    alpha = model._alpha_by_pair[0]
    C = SVMParams.of(model).class_C(classes, np.searchsorted(classes, y))
    C_i = np.where(y_pm > 0, C[0], C[1])
    K = kernel(X, X)
    G = y_pm * (K @ (y_pm * alpha)) - 1.0
    up = ((y_pm > 0) & (alpha < C_i)) | ((y_pm < 0) & (alpha > 0))
    low = ((y_pm > 0) & (alpha > 0)) | ((y_pm < 0) & (alpha < C_i))
    return float(np.max(-y_pm[up] * G[up]) - np.min(-y_pm[low] * G[low]))


def _rbf(gamma):
    from sklearn.metrics.pairwise import rbf_kernel

    return lambda A, B: rbf_kernel(A, B, gamma=gamma)


@pytest.mark.parametrize("keep_kernel", [True, False])
def test_closure_kernels_never_take_each_others_solutions(noisy, keep_kernel):
    # Python reuses the id of a collected closure: a kernel identified by name
    # and id found an earlier gamma's solution (and kernel matrix) and skipped.
    X, y = noisy
    store = WarmStartStore(keep_kernel=keep_kernel)
    for gamma in [0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 0.02, 0.5]:
        warm = AlphaSeededSVC(C=10.0, kernel=_rbf(gamma), warm_start_store=store)
        warm.fit(X, y)
        assert not warm.warm_start_skipped_[0]
        cold = AlphaSeededSVC(C=10.0, kernel=_rbf(gamma)).fit(X, y)
        assert _kkt_gap(warm, X, y, _rbf(gamma)) <= 1e-3 + 1e-9
        assert_allclose(warm.objective_, cold.objective_, rtol=1e-3)
        assert np.mean(warm.predict(X) == cold.predict(X)) >= 0.99
        del warm  # let the closure's id be reused


def test_keyed_kernel_skips_and_keys_separate(noisy):
    from sklearn_ext.svm import KeyedKernel

    X, y = noisy
    store = WarmStartStore()
    kernel = KeyedKernel(_rbf(0.2), key="rbf:0.2")
    AlphaSeededSVC(C=1.0, kernel=kernel, warm_start_store=store).fit(X, y)
    again = AlphaSeededSVC(C=1.0, kernel=KeyedKernel(_rbf(0.2), key="rbf:0.2"))
    again.set_params(warm_start_store=store).fit(X, y)
    assert again.warm_start_skipped_[0] and again.n_iter_[0] == 0
    other = AlphaSeededSVC(C=1.0, kernel=KeyedKernel(_rbf(2.0), key="rbf:2.0"))
    other.set_params(warm_start_store=store).fit(X, y)
    assert np.isnan(other.warm_start_C_[0])
    with pytest.raises(ValueError, match="'key' parameter of KeyedKernel"):
        KeyedKernel(_rbf(0.2), key="")
    with pytest.raises(TypeError, match="'function' parameter of KeyedKernel"):
        KeyedKernel("rbf", key="rbf")


def test_unkeyed_callable_solutions_only_seed(noisy):
    X, y = noisy
    kernel = _rbf(0.2)
    store = WarmStartStore()
    AlphaSeededSVC(C=1.0, kernel=kernel, warm_start_store=store).fit(X, y)
    again = AlphaSeededSVC(C=1.0, kernel=kernel, warm_start_store=store).fit(X, y)
    # Seeded from its own optimum: SMO confirms it (next to no iterations).
    assert again.warm_start_C_[0] == 1.0 and not again.warm_start_skipped_[0]
    assert again.n_iter_[0] <= 2


def test_tol_is_part_of_the_key(noisy):
    X, y = noisy
    store = WarmStartStore()
    loose = AlphaSeededSVC(C=1.0, gamma=0.2, tol=1.0, warm_start_store=store)
    loose.fit(X, y)
    tight = AlphaSeededSVC(C=1.0, gamma=0.2, tol=1e-6, warm_start_store=store)
    tight.fit(X, y)
    cold = AlphaSeededSVC(C=1.0, gamma=0.2, tol=1e-6).fit(X, y)
    assert not tight.warm_start_skipped_[0] and tight.n_iter_[0] > 0
    assert_allclose(tight.objective_, cold.objective_, rtol=1e-8)
    assert _kkt_gap(tight, X, y, _rbf(0.2)) <= 1e-6 + 1e-9
    # The tight solution now serves any looser tolerance as it is.
    again = AlphaSeededSVC(C=1.0, gamma=0.2, tol=1e-2, warm_start_store=store)
    assert again.fit(X, y).warm_start_skipped_[0]
    assert_allclose(again.objective_, cold.objective_, rtol=1e-8)


def test_kernel_precision_is_part_of_the_key(noisy):
    X, y = noisy
    store = WarmStartStore()
    AlphaSeededSVC(C=1.0, kernel_dtype="float32", warm_start_store=store).fit(X, y)
    model = AlphaSeededSVC(C=1.0, warm_start_store=store).fit(X, y)
    assert np.isnan(model.warm_start_C_[0])


def test_class_weight_is_part_of_the_key(noisy):
    X, y = noisy
    store = WarmStartStore()
    AlphaSeededSVC(C=1.0, gamma=0.2, warm_start_store=store).fit(X, y)
    weighted = AlphaSeededSVC(
        C=1.0, gamma=0.2, class_weight={0: 3.0}, warm_start_store=store
    ).fit(X, y)
    cold = AlphaSeededSVC(C=1.0, gamma=0.2, class_weight={0: 3.0}).fit(X, y)
    assert np.isnan(weighted.warm_start_C_[0])
    assert_allclose(weighted.objective_, cold.objective_, rtol=1e-6)


_FIT_SPACE = dict(
    C=[0.1, 1.0, 10.0, 100.0],
    tol=[1e-1, 1e-3, 1e-5],
    kernel=["rbf:0.1", "rbf:1.0", "closure:0.1", "closure:1.0", "keyed:0.1"],
    class_weight=[None, {0: 2.0}],
)


def _fit_in_store(X, y, store, C, tol, kernel, class_weight):
    """One fit through ``store``; the KKT gap on the true kernel and its tol."""
    from sklearn_ext.svm import KeyedKernel

    kind, gamma = kernel.split(":")
    gamma = float(gamma)
    if kind == "rbf":
        spec = dict(kernel="rbf", gamma=gamma)
    elif kind == "closure":
        spec = dict(kernel=_rbf(gamma))
    else:
        spec = dict(kernel=KeyedKernel(_rbf(gamma), key=f"rbf:{gamma}"))
    params = dict(C=C, tol=tol, class_weight=class_weight, **spec)
    model = AlphaSeededSVC(warm_start_store=store, **params).fit(X, y)
    return _kkt_gap(model, X, y, _rbf(gamma)), tol


def _check_fits(X, y, fits, store, n_threads):
    def run(fit):
        return _fit_in_store(X, y, store, *fit)

    if n_threads == 1:
        results = [run(fit) for fit in fits]
    else:
        with ThreadPoolExecutor(n_threads) as pool:
            results = list(pool.map(run, fits))
    for gap, tol in results:
        assert gap <= tol * (1 + 1e-9) + 1e-9


def test_any_sequence_of_fits_gives_the_cold_models():
    """Property: fits through one shared store meet their tol on the true problem.

    Any order of C, tol, kernels (named, closures without a key, keyed) and
    class weights, in one thread or four: every warm model satisfies the KKT
    conditions of its own problem to its own tol, as a cold fit does.
    """
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    X, y = make_classification(
        n_samples=60, n_features=4, n_informative=3, n_redundant=0, random_state=3
    )
    X = scale(X)
    fit = st.tuples(*(st.sampled_from(values) for values in _FIT_SPACE.values()))

    @settings(
        max_examples=30,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(
        fits=st.lists(fit, min_size=2, max_size=8),
        n_threads=st.sampled_from([1, 4]),
        keep_kernel=st.booleans(),
    )
    def check(fits, n_threads, keep_kernel):
        store = WarmStartStore(keep_kernel=keep_kernel)
        _check_fits(X, y, fits, store, n_threads)

    check()


def _fit_in_store_star(args):
    return _fit_in_store(*args)


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="needs fork"
)
def test_fits_in_processes_through_a_shared_store():
    """Worker processes get a snapshot of the store: still the cold models."""
    X, y = make_classification(
        n_samples=60, n_features=4, n_informative=3, n_redundant=0, random_state=3
    )
    X = scale(X)
    store = WarmStartStore()
    first = [(1.0, 1.0, "rbf:0.1", None), (1.0, 1.0, "keyed:0.1", None)]
    _check_fits(X, y, first, store, 1)
    fits = [
        (C, tol, kernel, None)
        for C in (1.0, 10.0)
        for tol in (1e-1, 1e-5)
        for kernel in ("rbf:0.1", "keyed:0.1", "closure:0.1")
    ]
    with multiprocessing.get_context("fork").Pool(2) as pool:
        # Each task pickles the store: a worker holds a snapshot plus its own.
        results = pool.map(_fit_in_store_star, [(X, y, store, *fit) for fit in fits])
    for gap, tol in results:
        assert gap <= tol * (1 + 1e-9) + 1e-9


def test_bounded_store_in_bytes(noisy):
    X, y = noisy
    one = 2 * 8 * X.shape[0]  # alpha and gradient, float64, over all rows
    store = WarmStartStore(max_bytes=2 * one)
    for gamma in (0.1, 0.2, 0.3):
        AlphaSeededSVC(C=1.0, gamma=gamma, warm_start_store=store).fit(X, y)
    assert len(store) == 2 and store.nbytes == 2 * one
    # The bound is hard: a solution larger than it is not kept at all.
    tiny = WarmStartStore(max_bytes=1)
    AlphaSeededSVC(C=1.0, warm_start_store=tiny).fit(X, y)
    AlphaSeededSVC(C=1.0, gamma=0.3, warm_start_store=tiny).fit(X, y)
    assert len(tiny) == 0 and tiny.nbytes == 0
    with pytest.raises(ValueError, match="'max_bytes' parameter of WarmStartStore"):
        WarmStartStore(max_bytes=0)


def test_byte_bound_is_hard_along_a_c_grid(noisy):
    # Issue 35: max_bytes=20_000 held 364 kB after 40 values of C (one problem
    # kept every C's solution); now the problem keeps its newest that fit.
    X, y = noisy
    one = 2 * 8 * X.shape[0]
    store = WarmStartStore(max_bytes=max(20_000, 3 * one))
    for C in np.logspace(-2, 2, 40):
        AlphaSeededSVC(C=C, gamma=0.1, warm_start_store=store).fit(X, y)
        assert store.nbytes <= store.max_bytes
    assert 0 < len(store) <= store.max_bytes // one
    # The newest solution is kept: the next C starts from it.
    again = AlphaSeededSVC(C=100.0, gamma=0.1, warm_start_store=store).fit(X, y)
    assert again.warm_start_C_[0] == 100.0


@pytest.mark.parametrize(
    "estimator", [AlphaSeededSVC(gamma=0.05), SVC(gamma=0.05)], ids=["ours", "SVC"]
)
def test_search_warm_starts_by_default(separable, estimator):
    X, y = separable
    grid = {"C": [64.0, 1.0, 16.0, 4.0, 0.25]}
    search = TreeCVSearchCV(estimator, grid, cv=5, return_run_info=True).fit(X, y)
    res = search.cv_results_
    # The candidates ran by increasing C on a store of the search's own: all
    # but the smallest C start (at least their first fold) from a stored one.
    hits = res["warm_start_hits"]
    smallest = grid["C"].index(0.25)
    assert hits[smallest] == 0 and np.all(np.delete(hits, smallest) >= 1)
    assert res["warm_start_skips"].sum() > 0
    # Same scores as without warm starts; the store is not left behind.
    if isinstance(estimator, SVC):
        method = AlphaSeedingBackend(warm_start_store=False)
        cold = TreeCVSearchCV(estimator, grid, cv=5, method=method).fit(X, y)
    else:
        cold = TreeCVSearchCV(
            clone(estimator).set_params(warm_start_store=False), grid, cv=5
        ).fit(X, y)
    assert "warm_start_hits" not in cold.cv_results_
    assert_allclose(res["mean_test_score"], cold.cv_results_["mean_test_score"])
    assert search.best_params_ == cold.best_params_
    # The refit borrowed the search's store (its kernel) and gave it back.
    assert search.best_estimator_.get_params().get("warm_start_store") is None
    assert_allclose(
        search.best_estimator_.decision_function(X),
        cold.best_estimator_.decision_function(X),
        atol=1e-3,
    )
    assert estimator.get_params().get("warm_start_store") is None


def test_search_keeps_the_users_store(separable):
    X, y = separable
    store = WarmStartStore()
    search = TreeCVSearchCV(
        AlphaSeededSVC(gamma=0.05, warm_start_store=store),
        {"C": CS},
        cv=3,
        return_run_info=True,
    ).fit(X, y)
    assert search.cv_results_["warm_start_hits"].sum() > 0
    assert len(store) == 3 * len(CS) + 1  # every fold at every C, and the refit
    assert search.best_estimator_.warm_start_store is store


def test_default_store_hook(separable):
    backend = AlphaSeedingBackend()
    assert isinstance(backend.default_store(AlphaSeededSVC()), WarmStartStore)
    assert isinstance(backend.default_store(SVC()), WarmStartStore)
    assert backend.default_store(AlphaSeededSVC(warm_start_store=False)) is None
    assert (
        backend.default_store(AlphaSeededSVC(warm_start_store=WarmStartStore())) is None
    )
    assert AlphaSeedingBackend(warm_start_store=False).default_store(SVC()) is None
    # Other backends keep none.
    assert choose_backend(SGDClassifier()).default_store(SGDClassifier()) is None
