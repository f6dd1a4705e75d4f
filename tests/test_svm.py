"""AlphaSeededSVC, the SMO solver, the kernel store and alpha-seeded CV."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import load_iris, load_wine, make_classification
from sklearn.exceptions import ConvergenceWarning, FitFailedWarning
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.preprocessing import scale
from sklearn.svm import SVC

from sklearn_ext import tree_cross_validate
from sklearn_ext.model_selection import (
    FoldPlan,
    TreeCVFallbackWarning,
    choose_backend,
)
from sklearn_ext.svm import SEEDINGS, AlphaSeededSVC, KernelStore, alpha_seeded_cv
from sklearn_ext.svm._kernel_store import kernel_matrix
from sklearn_ext.svm._solver import SVMParams


@pytest.fixture
def binary_data():
    X, y = make_classification(
        n_samples=240, n_features=8, n_informative=5, flip_y=0.05, random_state=0
    )
    return scale(X), y


def _svc_dual_objective(svc, K):
    """``1/2 a'Qa - e'a`` of each one-vs-one problem of a fitted binary SVC."""
    coef = svc.dual_coef_
    coef = np.asarray(coef.toarray() if sp.issparse(coef) else coef)[0]
    sv = svc.support_
    return 0.5 * coef @ K[np.ix_(sv, sv)] @ coef - np.abs(coef).sum()


@pytest.mark.parametrize(
    "params",
    [
        dict(kernel="rbf", C=10.0, gamma=0.1),
        dict(kernel="linear", C=0.5),
        dict(kernel="poly", C=1.0, gamma=0.2, degree=2, coef0=1.0),
    ],
)
@pytest.mark.parametrize("sparse", [False, True])
def test_folds_match_svc(binary_data, params, sparse):
    X, y = binary_data
    Xs = sp.csr_matrix(X) if sparse else X
    cv = StratifiedKFold(5)
    plan = FoldPlan.from_cv(cv, X, y)
    result = alpha_seeded_cv(
        AlphaSeededSVC(**params), Xs, y, cv=plan, seeding="sir", return_estimator=True
    )
    K = kernel_matrix(X, X, params["kernel"], params.get("gamma"), 2, 1.0)
    for fold, (train, test) in enumerate(cv.split(X, y)):
        svc = SVC(**params).fit(Xs[train], y[train])
        ours = result["estimator"][fold]
        agree = np.mean(svc.predict(Xs[test]) == ours.predict(Xs[test]))
        assert agree >= 0.995
        ref = _svc_dual_objective(svc, K[np.ix_(train, train)])
        assert abs(ours.objective_[0] - ref) <= 1e-3 * abs(ref)


def test_fit_matches_svc_attributes(binary_data):
    X, y = binary_data
    svc = SVC(C=3.0, gamma=0.1).fit(X, y)
    ours = AlphaSeededSVC(C=3.0, gamma=0.1).fit(X, y)
    assert_array_equal(svc.predict(X), ours.predict(X))
    assert_allclose(svc.decision_function(X), ours.decision_function(X), atol=5e-3)
    assert_allclose(svc.intercept_, ours.intercept_, atol=5e-3)
    assert set(ours.support_) ^ set(svc.support_) <= set(
        np.flatnonzero(np.abs(svc.decision_function(X) * (2 * y - 1) - 1) < 1e-2)
    )


@pytest.mark.parametrize("loader", [load_iris, load_wine])
def test_multiclass_matches_svc_ovo(loader):
    X, y = loader(return_X_y=True)
    X = scale(X)
    for shape in ("ovo", "ovr"):
        svc = SVC(C=2.0, gamma=0.1, decision_function_shape=shape).fit(X, y)
        ours = AlphaSeededSVC(C=2.0, gamma=0.1, decision_function_shape=shape).fit(X, y)
        assert_array_equal(svc.predict(X), ours.predict(X))
        assert_allclose(svc.decision_function(X), ours.decision_function(X), atol=1e-2)
    # At tol=1e-3 two SMO solvers may stop at slightly different points of the
    # optimal face; solved tightly, the one-vs-one dual solutions coincide.
    svc = SVC(C=2.0, gamma=0.1, tol=1e-7).fit(X, y)
    ours = AlphaSeededSVC(C=2.0, gamma=0.1, tol=1e-7).fit(X, y)
    assert_array_equal(svc.n_support_, ours.n_support_)
    assert_array_equal(svc.support_, ours.support_)
    assert_allclose(svc.dual_coef_, ours.dual_coef_, atol=1e-3 * svc.C)
    assert_allclose(svc.intercept_, ours.intercept_, atol=1e-3)


def test_multiclass_cv_matches_svc():
    X, y = load_wine(return_X_y=True)
    X = scale(X)
    cv = StratifiedKFold(5)
    result = alpha_seeded_cv(
        SVC(C=5.0, gamma=0.05), X, y, cv=FoldPlan.from_cv(cv, X, y), seeding="sir"
    )
    for fold, (train, test) in enumerate(cv.split(X, y)):
        svc = SVC(C=5.0, gamma=0.05).fit(X[train], y[train])
        assert result["test_score"][fold] == pytest.approx(svc.score(X[test], y[test]))


@pytest.mark.parametrize("seeding", SEEDINGS)
@pytest.mark.parametrize("C", [1.0, 100.0])
def test_every_seeding_reaches_the_cold_objective(binary_data, seeding, C):
    X, y = binary_data
    model = AlphaSeededSVC(C=C, gamma=0.2)
    cold = alpha_seeded_cv(model, X, y, cv=6, seeding="none")
    warm = alpha_seeded_cv(model, X, y, cv=6, seeding=seeding)
    for ref, got in zip(cold["objective"], warm["objective"], strict=True):
        assert_allclose(got, ref, rtol=1e-3)
    assert np.mean(cold["test_score"] == warm["test_score"]) >= 0.8
    if seeding == "none":
        return
    if C == 1.0:
        assert warm["n_iter"].sum() < 0.95 * cold["n_iter"].sum()
    else:
        # At C=100 on 200 rows a fold's optimum is far from its neighbour's:
        # seeding saved under 3 % (0.4 % for keep), less than the spread
        # between SMO paths: summing the shrunk gradients in another order
        # (same values to rounding) moved ATO's sum by 2.4 %. Seeding must not
        # cost more than that spread.
        assert warm["n_iter"].sum() < 1.05 * cold["n_iter"].sum()


def _max_violation(K, y_pm, C, alpha):
    G = y_pm * (K @ (y_pm * alpha)) - 1.0
    up = ((y_pm > 0) & (alpha < C)) | ((y_pm < 0) & (alpha > 0))
    low = ((y_pm > 0) & (alpha > 0)) | ((y_pm < 0) & (alpha < C))
    return np.max(-y_pm[up] * G[up]) - np.min(-y_pm[low] * G[low])


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(6, 40),
    C=st.floats(0.01, 100.0),
    gamma=st.floats(0.01, 5.0),
    start=st.sampled_from(["zero", "random"]),
    shrinking=st.booleans(),
)
def test_kkt_at_exit(seed, n, C, gamma, start, shrinking):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.arange(n) % 2
    rng.shuffle(y)
    initial = rng.uniform(0, C, size=n) if start == "random" else None
    model = AlphaSeededSVC(C=C, gamma=gamma, tol=1e-3, shrinking=shrinking)
    model.fit(X, y, initial_alpha=initial)
    alpha = model._alpha_by_pair[0]
    y_pm = np.where(y == 0, 1.0, -1.0)
    assert np.all(alpha >= 0) and np.all(alpha <= C)
    assert abs(y_pm @ alpha) <= 1e-8 * max(C, 1) * n
    assert _max_violation(rbf_kernel(X, gamma=gamma), y_pm, C, alpha) <= 1e-3 + 1e-9


def test_kernels_agree_across_forms(binary_data):
    X, y = binary_data
    K = rbf_kernel(X, gamma=0.1)
    ref = AlphaSeededSVC(C=2.0, gamma=0.1).fit(X, y)
    pre = AlphaSeededSVC(C=2.0, kernel="precomputed").fit(K, y)
    fun = AlphaSeededSVC(C=2.0, kernel=lambda A, B: rbf_kernel(A, B, gamma=0.1))
    fun.fit(X, y)
    lru = AlphaSeededSVC(C=2.0, gamma=0.1, cache_size=0.05).fit(X, y)
    for other in (pre, fun, lru):
        assert_allclose(other.objective_, ref.objective_, rtol=1e-6)
    # The kernel forms round differently, so SMO takes slightly different paths to
    # tol=1e-3: decision values agree to that order, predictions away from the
    # boundary exactly.
    decision = ref.decision_function(X)
    clear = np.abs(decision) > 1e-2
    for other, inputs in ((pre, K), (fun, X), (lru, X)):
        assert_allclose(other.decision_function(inputs), decision, atol=1e-2)
        assert_array_equal(other.predict(inputs)[clear], ref.predict(X)[clear])


def test_kernel_store_lru_matches_dense(binary_data):
    X, _ = binary_data
    dense = KernelStore(X, "rbf", 0.3, 3, 0.0, cache_size=200)
    lru = KernelStore(X, "rbf", 0.3, 3, 0.0, cache_size=0.01)
    assert dense.is_dense and not lru.is_dense
    rows, cols = np.arange(0, 240, 7), np.arange(3, 240, 11)
    assert_allclose(lru.block(rows, cols), dense.block(rows, cols), rtol=1e-12)
    assert_allclose(lru.diag, dense.diag)


def test_warm_start_and_initial_alpha(binary_data):
    X, y = binary_data
    model = AlphaSeededSVC(C=10.0, gamma=0.1, warm_start=True).fit(X, y)
    cold_iter = model.n_iter_[0]
    model.set_params(C=12.0).fit(X, y)
    assert model.n_iter_[0] < cold_iter
    ref = AlphaSeededSVC(C=12.0, gamma=0.1).fit(X, y)
    assert_allclose(model.objective_, ref.objective_, rtol=1e-3)
    with pytest.raises(ValueError, match="initial_alpha must have shape"):
        AlphaSeededSVC().fit(X, y, initial_alpha=np.zeros(3))


def test_backend_choice_and_tree_cross_validate(binary_data):
    X, y = binary_data
    assert choose_backend(AlphaSeededSVC()).name == "alpha_seeding"
    assert choose_backend(SVC()).name == "alpha_seeding"
    assert choose_backend(SVC(), "standard").name == "standard"
    with pytest.raises(TypeError, match="alpha_seeding"):
        choose_backend(KFold(), "alpha_seeding")
    cv = StratifiedKFold(4)
    ours = tree_cross_validate(SVC(C=5.0, gamma=0.1), X, y, cv=cv, return_run_info=True)
    ref = tree_cross_validate(
        SVC(C=5.0, gamma=0.1), X, y, cv=cv, method="standard", return_run_info=True
    )
    assert ours["backend"] == "alpha_seeding"
    assert np.mean(np.abs(ours["test_score"] - ref["test_score"]) < 1e-9) >= 0.75


def test_bad_parameters(binary_data):
    X, y = binary_data
    with pytest.raises(ValueError, match="The 'C' parameter of AlphaSeededSVC must"):
        AlphaSeededSVC(C=-1).fit(X, y)
    with pytest.raises(ValueError, match="The 'C' parameter"):
        AlphaSeededSVC(C=0.0).fit(X, y)
    with pytest.raises(ValueError, match="The 'gamma' parameter of AlphaSeededSVC"):
        AlphaSeededSVC(gamma=0.0).fit(X, y)
    with pytest.raises(ValueError, match="The 'gamma' parameter"):
        alpha_seeded_cv(AlphaSeededSVC(gamma=-1.0), X, y, cv=3)
    with pytest.raises(
        ValueError, match="The 'seeding' parameter of alpha_seeded_cv must be"
    ):
        alpha_seeded_cv(AlphaSeededSVC(), X, y, cv=3, seeding="warm")
    # probability=True is taken over since issue 20 (tests/test_svm_probability.py).
    with pytest.raises(ValueError, match="break_ties"):
        alpha_seeded_cv(SVC(break_ties=True), X, y, cv=3)


def test_bad_data(binary_data):
    X, y = binary_data
    X_nan = X.copy()
    X_nan[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        AlphaSeededSVC().fit(X_nan, y)
    X_inf = X.copy()
    X_inf[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        alpha_seeded_cv(AlphaSeededSVC(), X_inf, y, cv=3)
    with pytest.raises(ValueError, match="NaN"):
        AlphaSeededSVC().fit(X, y).predict(X_nan)
    with pytest.raises(ValueError, match="Precomputed matrix must be a square"):
        AlphaSeededSVC(kernel="precomputed").fit(X, y)
    K = X @ X.T
    model = AlphaSeededSVC(kernel="precomputed").fit(K, y)
    with pytest.raises(ValueError, match="expecting 240 features"):
        model.predict(K[:, :10])
    with pytest.raises(ValueError, match="has to be greater than one"):
        AlphaSeededSVC().fit(X, np.zeros(len(y)))


def test_one_class_in_a_training_fold(capsys):
    X, y = make_classification(n_samples=40, random_state=0)
    y[:] = 0
    y[:4] = 1  # class 1 only in the first fold
    plan = FoldPlan([np.arange(0, 10), np.arange(10, 40)], n_samples=40)
    with pytest.raises(ValueError, match=r"fold 0 has no sample of class\(es\) \[1\]"):
        alpha_seeded_cv(AlphaSeededSVC(), X, y, cv=plan)
    # method="auto" falls back to standard CV, which fits SVC with fewer classes:
    # an SVM has no partial_fit, every backend scores its fit, so the fallback is
    # a note (verbose > 0) and the recorded backend, not a warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error", TreeCVFallbackWarning)
        # The fold whose training rows hold one class fails, as in cross_validate.
        with pytest.warns(FitFailedWarning):
            auto = tree_cross_validate(
                AlphaSeededSVC(), X, y, cv=plan, return_run_info=True, verbose=1
            )
    assert auto["backend"] == "standard"
    assert "split 0 has no sample of" in capsys.readouterr().out


def test_max_iter_warns(binary_data):
    X, y = binary_data
    with pytest.warns(ConvergenceWarning, match="max_iter=5"):
        model = AlphaSeededSVC(C=100.0, max_iter=5).fit(X, y)
    assert model.n_iter_[0] == 5
    assert model.fit_status_ == 1
    with pytest.warns(ConvergenceWarning, match="raise max_iter"):
        alpha_seeded_cv(AlphaSeededSVC(C=100.0, max_iter=5), X, y, cv=3)


def test_cv_precomputed_and_scorer_match_rbf(binary_data):
    X, y = binary_data
    K = rbf_kernel(X, gamma=0.1)
    rbf = alpha_seeded_cv(AlphaSeededSVC(C=5.0, gamma=0.1), X, y, cv=4)
    pre = alpha_seeded_cv(AlphaSeededSVC(C=5.0, kernel="precomputed"), K, y, cv=4)
    assert_allclose(pre["test_score"], rbf["test_score"])
    # A scorer other than accuracy goes through the fold models' predict.
    bal = alpha_seeded_cv(
        AlphaSeededSVC(C=5.0, gamma=0.1), X, y, cv=4, scoring="balanced_accuracy"
    )
    assert bal["test_score"].shape == (4,)
    via_tree = tree_cross_validate(
        AlphaSeededSVC(C=5.0, kernel="precomputed"),
        K,
        y,
        cv=4,
        scoring="f1",
        return_run_info=True,
    )
    assert via_tree["backend"] == "alpha_seeding"


def test_cv_on_an_lru_store_matches_dense(binary_data):
    X, y = binary_data
    dense = alpha_seeded_cv(AlphaSeededSVC(C=5.0, gamma=0.1), X, y, cv=4)
    lru = alpha_seeded_cv(AlphaSeededSVC(C=5.0, gamma=0.1, cache_size=0.1), X, y, cv=4)
    assert_allclose(lru["test_score"], dense["test_score"])
    for got, ref in zip(lru["objective"], dense["objective"], strict=True):
        assert_allclose(got, ref, rtol=1e-6)


def test_cv_class_weight_matches_svc():
    X, y = load_iris(return_X_y=True)
    X = scale(X)
    cv = StratifiedKFold(5)
    params = dict(C=3.0, gamma=0.2, class_weight="balanced")
    result = alpha_seeded_cv(SVC(**params), X, y, cv=FoldPlan.from_cv(cv, X, y))
    for fold, (train, test) in enumerate(cv.split(X, y)):
        svc = SVC(**params).fit(X[train], y[train])
        assert result["test_score"][fold] == pytest.approx(svc.score(X[test], y[test]))


def test_float32_kernel_store_matches_float64(binary_data):
    X, y = binary_data
    store64 = KernelStore(X, "rbf", 0.3, 3, 0.0, cache_size=200)
    store32 = KernelStore(X, "rbf", 0.3, 3, 0.0, cache_size=200, dtype=np.float32)
    assert store32.is_dense and store32.columns.dense32_matrix.dtype == np.float32
    assert store32.columns.dense32_matrix.nbytes * 2 == store64.nbytes
    rows, cols = np.arange(0, 240, 7), np.arange(3, 240, 11)
    assert_allclose(store32.block(rows, cols), store64.block(rows, cols), rtol=1e-6)
    # Half the memory: a budget too small for float64 still holds float32.
    budget = 1.5 * 8 * 240 * 240 / 2 / 2**20
    assert not KernelStore(X, "rbf", 0.3, 3, 0.0, cache_size=budget).is_dense
    assert KernelStore(
        X, "rbf", 0.3, 3, 0.0, cache_size=budget, dtype=np.float32
    ).is_dense
    ref = AlphaSeededSVC(C=10.0, gamma=0.1).fit(X, y)
    got = AlphaSeededSVC(C=10.0, gamma=0.1, kernel_dtype="float32").fit(X, y)
    assert_array_equal(got.predict(X), ref.predict(X))
    assert_allclose(got.objective_, ref.objective_, rtol=1e-3)
    cold = alpha_seeded_cv(AlphaSeededSVC(C=10.0, gamma=0.1), X, y, cv=4)
    warm = alpha_seeded_cv(
        AlphaSeededSVC(C=10.0, gamma=0.1, kernel_dtype="float32"), X, y, cv=4
    )
    for a, b in zip(cold["objective"], warm["objective"], strict=True):
        assert_allclose(b, a, rtol=1e-3)
    with pytest.raises(ValueError, match="'kernel_dtype' parameter of AlphaSeededSVC"):
        AlphaSeededSVC(kernel_dtype="float16").fit(X, y)
    with pytest.raises(ValueError, match="'dtype' parameter of KernelStore"):
        KernelStore(X, "rbf", 0.3, 3, 0.0, cache_size=200, dtype=np.int32)


def test_sir_replaces_one_removed_vector_by_one_added_point():
    """SIR as published: each removed SV takes the most similar unused point."""
    from sklearn_ext.svm._seeding import _sir

    # Two removed SVs near added point 0, one far from everything; labels +1.
    X = np.array([[0.0], [0.1], [5.0], [0.05], [0.08], [9.0]])
    store = SVMParams.of(AlphaSeededSVC(gamma=1.0)).kernel_store(X, 1.0)
    t_rows = np.array([0, 1, 2])
    r_rows = np.array([3, 4, 5])
    ones = np.ones(3)
    alpha_r = np.array([0.4, 0.7, 0.0])  # the third is no support vector
    alpha_t = _sir(store, t_rows, r_rows, ones, ones, alpha_r, ones, None)
    # The larger alpha goes first and takes its nearest point (1, at 0.1 from
    # row 4); the other takes its nearest point still free (0).
    assert_allclose(alpha_t, [0.4, 0.7, 0.0])
    # No added point of the label: a random unused one takes it (equality is
    # repaired by the caller).
    rng = np.random.default_rng(0)
    other = _sir(store, t_rows, r_rows, -ones, ones, alpha_r, ones, rng)
    assert sorted(other.tolist())[1:] == [0.4, 0.7]


def test_mir_solves_the_published_system():
    """MIR's alpha_T: least squares of equations (17) over the shared points."""
    from sklearn_ext.svm._seeding import _mir

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    store = SVMParams.of(AlphaSeededSVC(gamma=0.5)).kernel_store(X, 0.5)
    s_rows, t_rows, r_rows = np.arange(20), np.arange(20, 25), np.arange(25, 30)
    y_s, y_t, y_r = np.where(rng.random(20) < 0.5, 1.0, -1.0), np.ones(5), np.ones(5)
    alpha_s = np.full(20, 0.5)  # all free: Delta f = 0 on every row
    alpha_r = np.full(5, 0.3)
    C = 100.0
    alpha_t = _mir(
        store,
        s_rows,
        t_rows,
        r_rows,
        y_s,
        y_t,
        y_r,
        alpha_s,
        alpha_r,
        np.full(20, C),
        np.full(5, C),
        np.zeros(20),
        0.0,
    )
    K = store.block(np.arange(30), np.arange(30))
    A = np.vstack([K[np.ix_(s_rows, t_rows)], np.ones((1, 5))])
    b = np.concatenate([K[np.ix_(s_rows, r_rows)] @ alpha_r, [alpha_r.sum()]])
    expected = np.linalg.lstsq(A, b, rcond=None)[0]
    assert_allclose(alpha_t, np.clip(expected, 0, C), atol=1e-5)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_linear_kernel_has_coef_as_svc(sparse, n_classes):
    # coef_ as SVC's: X @ coef_.T + intercept_ is the one-vs-one decision value,
    # the same shape and type as SVC's, equal to SVC's to the solvers' tol.
    X, y = make_classification(
        n_samples=90, n_features=6, n_informative=4, n_classes=n_classes, random_state=0
    )
    data = sp.csr_matrix(X) if sparse else X
    kwargs = {"kernel": "linear", "decision_function_shape": "ovo"}
    ours = AlphaSeededSVC(**kwargs).fit(data, y)
    theirs = SVC(**kwargs).fit(data, y)
    assert type(ours.coef_) is type(theirs.coef_)
    coef = ours.coef_.toarray() if sparse else ours.coef_
    expected = theirs.coef_.toarray() if sparse else theirs.coef_
    assert coef.shape == expected.shape == (n_classes * (n_classes - 1) // 2, 6)
    decision = ours.decision_function(X).reshape(len(X), -1)
    assert_allclose(X @ coef.T + ours.intercept_, decision, atol=1e-10)
    assert_allclose(coef, expected, atol=1e-2 * np.abs(expected).max())
    with pytest.raises(AttributeError, match="only available when using a linear"):
        getattr(AlphaSeededSVC().fit(X, y), "coef_")  # noqa: B009
