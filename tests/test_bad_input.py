"""The bad-input table (issue 17): each case a clear error or a correct result.

One row per case of the audit: degenerate inputs scikit-learn refuses, stores
fed confusing keys, kernels beyond the memory budget, splitters whose training
rows are not the complement of their test folds, and unclear errors. Cases that
already held when the audit ran are kept here so that they keep holding.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import BaseCrossValidator, KFold, cross_validate
from sklearn.neighbors import KernelDensity
from sklearn.preprocessing import scale
from sklearn.svm import SVC

from sklearn_ext import FoldPlan, tree_cross_validate
from sklearn_ext.linear_model import (
    LeastSquaresSGDRegressor,
    LogisticSGDClassifier,
    PegasosClassifier,
)
from sklearn_ext.model_selection import TreeCVFallbackWarning
from sklearn_ext.svm import AlphaSeededSVC, KernelStore, alpha_seeded_cv
from sklearn_ext.svm._solver import PairProblem
from sklearn_ext.svm._training import PairFit

NATIVE = [PegasosClassifier, LogisticSGDClassifier, LeastSquaresSGDRegressor]


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return scale(X), y


@pytest.fixture(scope="module")
def small():
    X, y = make_classification(n_samples=120, n_features=6, random_state=0)
    return scale(X), y


# -- degenerate input: refuse what scikit-learn refuses -----------------------------
@pytest.mark.parametrize("weight", [-1, 0, 0.0, np.inf, np.nan])
def test_class_weight_must_be_positive(small, weight):
    X, y = small
    message = "The 'class_weight' parameter of AlphaSeededSVC must map each class"
    with pytest.raises(ValueError, match=message):
        AlphaSeededSVC(class_weight={0: weight, 1: 1}).fit(X, y)
    with pytest.raises(ValueError, match=message):
        alpha_seeded_cv(AlphaSeededSVC(class_weight={0: weight}), X, y, cv=3)
    if weight in (-1, 0):
        with pytest.raises(ValueError):  # scikit-learn refuses them too
            SVC(class_weight={0: weight, 1: 1}).fit(X, y)


@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly", "sigmoid"])
@pytest.mark.parametrize("factor", [1e300, 1e160])
# The kernel of such rows overflows before it is refused.
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_huge_values_in_X_are_refused(cancer, kernel, factor):
    X, y = cancer
    with pytest.raises(ValueError, match="need to be preprocessed"):
        AlphaSeededSVC(kernel=kernel).fit(X * factor, y)


def test_huge_values_in_a_float32_kernel_are_refused(small):
    # Finite in float64, infinite once stored as float32.
    X, y = small
    with pytest.raises(ValueError, match="kernel values are not finite"):
        AlphaSeededSVC(kernel="linear", kernel_dtype="float32").fit(X * 1e20, y)


def test_non_finite_kernel_in_the_column_cache_is_refused(small):
    X, y = small

    def kernel(A, B):
        K = A @ B.T
        K[K > 2.0] = np.nan
        return K

    with pytest.raises(ValueError, match="kernel values are not finite"):
        AlphaSeededSVC(kernel=kernel, cache_size=0.01).fit(X, y)


def test_non_finite_dual_coefficients_raise_as_in_svc(small):
    X, y = small
    model = AlphaSeededSVC()
    model.classes_ = np.array([0, 1])
    idx = np.arange(4, dtype=np.intp)
    problem = PairProblem(
        0, 1, idx, np.array([1.0, -1.0, 1.0, -1.0]), np.ones(4), np.full(4, np.nan)
    )
    problem.G = np.zeros(4)
    problem.rho = np.nan
    with pytest.raises(ValueError, match="dual coefficients or intercepts are not"):
        model._set_model(PairFit([problem], [None], 0.0), X[:4], 1.0)


@pytest.mark.parametrize("Learner", NATIVE)
def test_native_learners_refuse_overflowing_data(cancer, Learner):
    X, y = cancer
    with pytest.raises(ValueError, match="squared row norms overflow"):
        Learner().fit(X * 1e300, y)
    with pytest.raises(ValueError, match="squared row norms overflow"):
        Learner().fit(sp.csr_matrix(X * 1e300), y)


@pytest.mark.parametrize("Learner", [PegasosClassifier, LogisticSGDClassifier])
def test_native_learners_refuse_overflowing_weights(cancer, Learner):
    X, y = cancer
    # Finite squared norms, but the steps overflow the weights.
    with pytest.raises(ValueError, match=r"overflowed .* step size \(eta_t"):
        Learner().fit(X * 1e150, y)
    with pytest.raises(ValueError, match=r"max \|X\| = 1.21e\+151"):
        Learner().partial_fit(X * 1e150, y, classes=[0, 1])


@pytest.mark.parametrize("Learner", NATIVE)
def test_native_learners_are_fine_on_scaled_data(cancer, Learner):
    X, y = cancer
    model = Learner(max_iter=5, shuffle=True, random_state=0).fit(X, y)
    assert np.all(np.isfinite(model.coef_)) and model.score(X, y) > 0.5


# -- callable kernels within cache_size ------------------------------------------------
def test_callable_kernel_stays_within_cache_size():
    X = np.random.RandomState(0).normal(size=(3000, 4))
    store = KernelStore(X, lambda A, B: rbf_kernel(A, B, gamma=0.5), 0, 3, 0, 1.0)
    assert not store.is_dense  # the dense matrix would take 72 MB
    assert store.nbytes <= 2**20
    rows = np.array([0, 5, 2999])
    reference = rbf_kernel(X[rows], X[rows], gamma=0.5)
    assert_allclose(store.block(rows, rows), reference, rtol=1e-12)
    assert_allclose(store.diag, np.ones(3000))


def test_callable_kernel_model_does_not_depend_on_cache_size(small):
    X, y = small

    def kernel(A, B):
        return rbf_kernel(A, B, gamma=0.3)

    full = AlphaSeededSVC(kernel=kernel, tol=1e-6).fit(X, y)
    bounded = AlphaSeededSVC(kernel=kernel, tol=1e-6, cache_size=0.01).fit(X, y)
    assert_allclose(bounded.decision_function(X), full.decision_function(X), atol=1e-6)
    named = AlphaSeededSVC(gamma=0.3, tol=1e-6).fit(X, y)
    assert_allclose(bounded.decision_function(X), named.decision_function(X), atol=1e-6)


def test_callable_kernel_of_the_wrong_shape_is_refused(small):
    X, y = small
    with pytest.raises(ValueError, match="callable kernel must return"):
        AlphaSeededSVC(kernel=lambda A, B: rbf_kernel(A, B)[:, 1:]).fit(X, y)


# -- cases that held when the audit ran ----------------------------------------
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_X_is_refused(small, bad):
    X, y = small
    X = X.copy()
    X[3, 1] = bad
    with pytest.raises(ValueError, match="Input X contains"):
        AlphaSeededSVC().fit(X, y)
    with pytest.raises(ValueError, match="Input X contains"):
        PegasosClassifier().fit(X, y)
    with pytest.raises(ValueError, match="Input X contains"):
        tree_cross_validate(PegasosClassifier(), X, y, cv=3, return_run_info=True)


def test_one_class_is_refused(small):
    X, _ = small
    with pytest.raises(ValueError, match="number of classes has to be greater"):
        AlphaSeededSVC().fit(X, np.zeros(len(X)))


def test_sparse_input_gives_the_dense_model(small):
    X, y = small
    dense = AlphaSeededSVC(tol=1e-6).fit(X, y)
    sparse = AlphaSeededSVC(tol=1e-6).fit(sp.csr_matrix(X), y)
    assert_allclose(sparse.decision_function(X), dense.decision_function(X), atol=1e-8)


def test_results_do_not_depend_on_n_jobs(small):
    X, y = small
    one = tree_cross_validate(
        PegasosClassifier(random_state=0), X, y, cv=4, return_run_info=True
    )
    two = tree_cross_validate(
        PegasosClassifier(random_state=0), X, y, cv=4, n_jobs=2, return_run_info=True
    )
    assert_array_equal(one["test_score"], two["test_score"])


# -- splitters honoured or refused ------------------------------------------------
class PurgedKFold(BaseCrossValidator):
    """Contiguous K-fold that leaves ``purge`` rows on each side out of training."""

    def __init__(self, n_splits=4, purge=5):
        self.n_splits = n_splits
        self.purge = purge

    def split(self, X, y=None, groups=None):
        n = len(X)
        for test in np.array_split(np.arange(n), self.n_splits):
            keep = np.ones(n, dtype=bool)
            keep[max(test[0] - self.purge, 0) : test[-1] + self.purge + 1] = False
            yield np.flatnonzero(keep), test

    def get_n_splits(self, X=None, y=None, groups=None):
        return self.n_splits


def test_purged_splitter_trains_on_its_own_rows_with_the_standard_backend(small):
    X, y = small
    cv = PurgedKFold(4, purge=10)
    ours = tree_cross_validate(
        LogisticRegression(), X, y, cv=cv, method="standard", return_run_info=True
    )
    reference = cross_validate(LogisticRegression(), X, y, cv=cv)
    assert_allclose(ours["test_score"], reference["test_score"], rtol=1e-12)
    # partial_fit learners are fed the splitter's rows too, one ordered pass.
    pegasos = PegasosClassifier(random_state=0)
    fed = tree_cross_validate(
        pegasos, X, y, cv=cv, method="standard", return_run_info=True
    )
    for split, (train, test) in enumerate(cv.split(X)):
        model = clone(pegasos).partial_fit(X[train], y[train], classes=[0, 1])
        assert fed["test_score"][split] == model.score(X[test], y[test])
    assert fed["n_samples_fed"] == sum(len(t) for t, _ in cv.split(X))


@pytest.mark.parametrize(
    "estimator, method",
    [
        (SGDClassifier(random_state=0), "auto"),
        (SGDClassifier(random_state=0), "treecv"),
        (PegasosClassifier(), "treecv"),
        (AlphaSeededSVC(), "alpha_seeding"),
        (SVC(), "auto"),
    ],
)
def test_purged_splitter_is_refused_by_the_other_backends(small, estimator, method):
    X, y = small
    message = r"cv=PurgedKFold\(n_splits=4, purge=10\) are not the complement.*"
    message += r"Use method='standard'"
    with pytest.raises(ValueError, match=message):
        tree_cross_validate(
            estimator, X, y, cv=PurgedKFold(4, 10), method=method, return_run_info=True
        )


def test_purged_splitter_is_refused_by_alpha_seeded_cv(small):
    X, y = small
    with pytest.raises(ValueError, match="PurgedKFold.*method='standard'"):
        alpha_seeded_cv(AlphaSeededSVC(), X, y, cv=PurgedKFold(4, 10))


def test_fold_plan_keeps_the_splitters_training_rows(small):
    X, _ = small
    cv = PurgedKFold(4, purge=10)
    plan = FoldPlan.from_cv(cv, X)
    assert not plan.complement
    for split, (train, test) in enumerate(cv.split(X)):
        assert_array_equal(plan.train_indices(split), train)
        assert_array_equal(plan.test_indices(split), test)
    moved = plan.reordered([2, 0, 3, 1])  # other leaves, same splits
    for split in range(4):
        leaf, old = moved.leaf_order[split], plan.leaf_order[split]
        assert_array_equal(moved.train_indices(leaf), plan.train_indices(old))
        assert_array_equal(moved.test_indices(leaf), plan.test_indices(old))
    assert FoldPlan.from_cv(KFold(4), X).complement


@pytest.mark.parametrize("as_generator", [False, True])
# A multi-epoch learner through the tree on purpose: the regime note is expected.
@pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")
def test_cv_as_train_test_pairs(small, as_generator):
    X, y = small
    pairs = list(KFold(4).split(X))
    cv = (pair for pair in pairs) if as_generator else pairs
    sgd = SGDClassifier(random_state=0)
    ours = tree_cross_validate(sgd, X, y, cv=cv, return_run_info=True)
    assert_array_equal(
        ours["test_score"],
        tree_cross_validate(sgd, X, y, cv=KFold(4), return_run_info=True)["test_score"],
    )
    overlapping = [
        (np.arange(60, 120), np.arange(70)),
        (np.arange(60), np.arange(60, 120)),
    ]
    with pytest.raises(ValueError, match="do not partition the samples"):
        tree_cross_validate(
            sgd, X, y, cv=overlapping, method="treecv", return_run_info=True
        )
    # method="auto" fits them as given, by the standard backend, with a note.
    with pytest.warns(TreeCVFallbackWarning, match="do not partition the samples"):
        fallback = tree_cross_validate(sgd, X, y, cv=overlapping, return_run_info=True)
    reference = cross_validate(sgd, X, y, cv=overlapping)["test_score"]
    assert fallback["backend"] == "standard"
    assert_array_equal(fallback["test_score"], reference)


# -- unclear errors made clear ---------------------------------------------------------
def test_none_in_an_object_y_is_a_clear_error(small):
    X, y = small
    labels = np.array(["a", "b"], dtype=object)[y]
    labels[3] = None
    with pytest.raises(
        ValueError, match="'y' parameter must not contain None; got None in 1 of"
    ):
        tree_cross_validate(SGDClassifier(), X, labels, cv=3, return_run_info=True)


def test_n_jobs_as_a_string_is_a_clear_error(small):
    X, y = small
    with pytest.raises(ValueError, match="'n_jobs' parameter of tree_cross_validate"):
        tree_cross_validate(
            SGDClassifier(), X, y, cv=3, n_jobs="two", return_run_info=True
        )


def test_scoring_a_model_without_the_method_is_a_clear_error(small):
    X, _ = small
    message = "scoring='accuracy' calls predict, which KernelDensity does not"
    with pytest.raises(AttributeError, match=message):
        tree_cross_validate(
            KernelDensity(),
            X,
            cv=3,
            scoring="accuracy",
            method="standard",
            return_run_info=True,
        )
