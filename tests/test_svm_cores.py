"""Alpha-seeded CV on several cores: seeding chains in threads, one kernel store."""

import threading

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.datasets import load_wine
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.preprocessing import scale
from threadpoolctl import threadpool_limits

from sklearn_ext import tree_cross_validate
from sklearn_ext._fast._smo import update_gradient
from sklearn_ext.model_selection import FoldPlan
from sklearn_ext.svm import AlphaSeededSVC, AlphaSeedingBackend, KernelStore
from sklearn_ext.svm._cv import chain_count
from sklearn_ext.svm._kernel_store import available_threads, kernel_matrix


def _rbf_callable(A, B):
    return kernel_matrix(A, B, "rbf", 0.2, 3, 0.0)


def _cv_run(model, X, y, n_jobs, **kwargs):
    plan = FoldPlan.from_cv(StratifiedKFold(8, shuffle=True, random_state=0), X, y)
    return tree_cross_validate(
        model,
        X,
        y,
        cv=plan,
        method=AlphaSeedingBackend(),
        n_jobs=n_jobs,
        **kwargs,
        return_run_info=True,
    )


@pytest.mark.parametrize(
    "params",
    [
        dict(gamma=0.2),  # dense float64 matrix, shared as it is
        dict(gamma=0.2, kernel_dtype="float32"),  # float32 matrix, columns split
        dict(gamma=0.2, cache_size=0.2),  # bounded columns computed natively
        dict(kernel=_rbf_callable, cache_size=0.2),  # bounded, by a Python call
    ],
    ids=["dense64", "dense32", "native-columns", "callable-columns"],
)
@pytest.mark.parametrize("seeding", ["sir", "none"])
def test_two_chains_match_one_within_tol(
    svm_binary, chains_on_small_data, params, seeding
):
    X, y = svm_binary
    model = AlphaSeededSVC(C=10.0, **params)
    backend = AlphaSeedingBackend(seeding=seeding)
    plan = FoldPlan.from_cv(StratifiedKFold(8, shuffle=True, random_state=0), X, y)
    kwargs = dict(cv=plan, method=backend, return_estimator=True)
    one = tree_cross_validate(model, X, y, n_jobs=1, **kwargs, return_run_info=True)
    two = tree_cross_validate(model, X, y, n_jobs=2, **kwargs, return_run_info=True)
    for a, b in zip(one["objective"], two["objective"], strict=True):
        assert_allclose(b, a, rtol=1e-3)
    for fold, (ours, ref) in enumerate(
        zip(two["estimator"], one["estimator"], strict=True)
    ):
        test = plan.test_indices(fold)
        agree = np.mean(ours.predict(X[test]) == ref.predict(X[test]))
        assert agree >= 0.95
    assert_allclose(two["test_score"].mean(), one["test_score"].mean(), atol=0.02)
    if seeding == "none":
        # Cold starts do not depend on the chains: the very same iterations.
        assert np.array_equal(one["n_iter"], two["n_iter"])


def test_chains_multiclass_and_scorers(chains_on_small_data):
    X, y = load_wine(return_X_y=True)
    X = scale(X)
    model = AlphaSeededSVC(C=3.0, gamma=0.05)
    one = _cv_run(model, X, y, 1, scoring=["accuracy", "f1_macro"])
    two = _cv_run(model, X, y, 2, scoring=["accuracy", "f1_macro"])
    assert two["n_iter"].shape == (8,)
    assert_allclose(two["test_accuracy"], one["test_accuracy"], atol=1 / 20)
    assert_allclose(two["test_f1_macro"], one["test_f1_macro"], atol=0.1)


def test_chain_count():
    assert chain_count(1, 10, 10_000) == 1
    assert chain_count(2, 10, 10_000) == 2
    assert chain_count(4, 3, 10_000) == 3  # never more chains than folds
    assert chain_count(2, 10, 50) == 1  # tiny data set: threads do not pay
    assert chain_count(2, 10, 1_499) == 1  # measured: slower at 1,000 rows
    assert chain_count(2, 10, 1_500) == 2
    assert chain_count(None, 10, 10_000) == min(available_threads(), 10)
    assert chain_count(-1, 10, 10_000) >= 1
    with threadpool_limits(limits=1):
        # Inside a one-thread budget (e.g. a joblib worker) the default is one.
        assert available_threads() == 1
        assert chain_count(None, 10, 10_000) == 1


def _chain_threads():
    return [t for t in threading.enumerate() if t.name.startswith("alpha-seeding")]


def test_a_listener_stops_the_chains(svm_binary, chains_on_small_data):
    X, y = svm_binary
    seen = []

    def stop_after_two(leaf):
        seen.append(leaf.split)
        if len(seen) == 2:
            raise KeyError("stop")

    with pytest.raises(KeyError, match="stop"):
        _cv_run(AlphaSeededSVC(gamma=0.2), X, y, 2, leaf_callback=stop_after_two)
    assert len(seen) == 2
    assert _chain_threads() == []


def test_an_error_in_a_chain_reaches_the_caller(chains_on_small_data):
    # The last fold holds every sample of class 2: its training part lacks it.
    X = np.random.default_rng(0).normal(size=(60, 3))
    y = np.repeat([0, 1, 2], 20)
    folds = [np.arange(k, 40, 4) for k in range(4)] + [np.arange(40, 60)]
    plan = FoldPlan(folds, n_samples=60)
    with pytest.raises(ValueError, match="training part of fold 4 has no sample"):
        tree_cross_validate(
            AlphaSeededSVC(gamma=0.5),
            X,
            y,
            cv=plan,
            method="alpha_seeding",
            n_jobs=2,
            return_run_info=True,
        )
    assert _chain_threads() == []


@pytest.mark.parametrize(
    "kernel, params",
    [
        ("rbf", dict(gamma=0.3)),
        ("linear", {}),
        ("poly", dict(gamma=0.2, degree=3, coef0=1.0)),
        ("sigmoid", dict(gamma=0.05, coef0=0.5)),
    ],
)
def test_native_columns_and_partitions_match_the_matrix(svm_binary, kernel, params):
    X, _ = svm_binary
    gamma, degree, coef0 = (
        params.get(k, d) for k, d in [("gamma", 1.0), ("degree", 3), ("coef0", 0.0)]
    )
    full = kernel_matrix(X, X, kernel, gamma, degree, coef0)
    dense = KernelStore(X, kernel, gamma, degree, coef0, cache_size=200)
    cols = KernelStore(X, kernel, gamma, degree, coef0, cache_size=0.05)
    assert dense.is_dense and not cols.is_dense
    assert cols.columns.n_slots < 40  # LRU evictions happen below
    assert_allclose(
        dense.block(np.arange(300), np.arange(300)), full, rtol=1e-12, atol=1e-13
    )
    rows, picked = np.arange(300), np.arange(0, 300, 3)
    assert_allclose(cols.block(rows, picked), full[:, picked], rtol=1e-12, atol=1e-13)
    first, second = cols.partition(2)
    assert first.columns.n_slots + second.columns.n_slots <= cols.columns.n_slots
    # The views share the slot memory, not their LRU state.
    assert np.shares_memory(first.columns.slots_matrix, cols.columns.slots_matrix)
    for view in (first, second, cols):
        assert_allclose(
            view.block(rows, picked[::-1]),
            full[:, picked[::-1]],
            rtol=1e-12,
            atol=1e-13,
        )
    assert dense.partition(2)[1].columns is dense.columns


@pytest.mark.parametrize("cache_size", [200, 0.001])
def test_native_kernel_overflow_raises(cache_size):
    # Squared norms overflow: the rbf kernel's distances are not numbers.
    X = np.full((40, 2), 1e200)
    with np.errstate(over="ignore", invalid="ignore"):
        with pytest.raises(ValueError, match="kernel values are not finite"):
            store = KernelStore(X, "rbf", 1.0, 3, 0.0, cache_size=cache_size)
            assert not store.is_dense
            store.columns.get(0)


def test_kfold_default_n_jobs_uses_chains(svm_binary, chains_on_small_data):
    # The default (n_jobs=None) runs as many chains as there are threads to use.
    X, y = svm_binary
    plan = FoldPlan.from_cv(KFold(6, shuffle=True, random_state=1), X, y)
    result = tree_cross_validate(
        AlphaSeededSVC(gamma=0.2), X, y, cv=plan, return_run_info=True
    )
    ref = tree_cross_validate(
        AlphaSeededSVC(gamma=0.2), X, y, cv=plan, n_jobs=1, return_run_info=True
    )
    assert result["backend"] == "alpha_seeding"
    if available_threads() > 1:
        # A second chain starts cold: more iterations than one chain.
        assert result["n_iter"].sum() > ref["n_iter"].sum()
    assert_allclose(result["test_score"], ref["test_score"], atol=0.05)


def test_gradient_products_mix_cached_and_computed_columns(svm_binary):
    X, y = svm_binary
    y_pm = np.where(y > 0, 1.0, -1.0)
    dense = KernelStore(X, "rbf", 0.3, 3, 0.0, cache_size=200)
    cols = KernelStore(X, "rbf", 0.3, 3, 0.0, cache_size=0.05)
    for g in range(0, 30, 3):
        cols.columns.get(g)  # some changed columns are cached, most are not
    before = cols.columns.n_computed
    idx = np.arange(1, 300, 2, dtype=np.intp)
    changed = np.arange(0, 120, dtype=np.intp)
    delta = np.random.default_rng(0).normal(size=120)
    got, ref = np.zeros(idx.shape[0]), np.zeros(idx.shape[0])
    update_gradient(cols.columns, idx, y_pm[idx], got, changed, delta)
    update_gradient(dense.columns, idx, y_pm[idx], ref, changed, delta)
    assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
    # The missing columns were computed in blocks, not pushed through the LRU.
    assert cols.columns.n_computed == before


@pytest.mark.parametrize("cache_size", [100, 0.5], ids=["dense", "native-columns"])
def test_smo_reads_kernel_columns_without_the_gil(cache_size):
    # Two seeding chains only pay if the solver never takes the GIL: a Python
    # thread holding it must not stop SMO. The main thread spins in Python
    # with a switch interval far longer than the spin, so a solver that asked
    # for the GIL (as reading a column once did, on every return) would stand
    # still until the spin ends.
    import sys
    import time

    from sklearn_ext._fast._smo import smo_solve

    rng = np.random.RandomState(0)
    n = 1000
    X = rng.normal(size=(n, 20))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    store = KernelStore(X, "rbf", 0.05, 3, 0.0, cache_size=cache_size)
    idx = np.arange(n, dtype=np.intp)
    alpha, G = np.zeros(n), np.full(n, -1.0)
    done = threading.Event()

    def solve():
        # tol=0 never stops early: max_iter iterations, about half a second.
        try:
            smo_solve(
                store.columns,
                idx,
                y,
                np.full(n, 1e3),
                store.diag.copy(),
                alpha,
                G,
                0.0,
                150_000,
                False,
            )
        finally:
            done.set()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(30.0)
    try:
        worker = threading.Thread(target=solve)
        worker.start()
        # The solver's progress is read from its thread's CPU clock (the
        # arrays it works on are its own until it returns), which reading
        # does not release the GIL for.
        clock = time.pthread_getcpuclockid(worker.ident)
        while time.clock_gettime(clock) < 0.02 and not done.is_set():
            time.sleep(0.001)  # releases the GIL until the solver runs
        assert not done.is_set()
        before = time.clock_gettime(clock)
        stop = time.perf_counter() + 0.2
        while time.perf_counter() < stop:  # pure Python: holds the GIL
            pass
        ran = time.clock_gettime(clock) - before
    finally:
        sys.setswitchinterval(interval)
        worker.join()
    assert ran > 0.05, f"SMO stood still while Python ran ({ran:.3f} s of CPU)"
