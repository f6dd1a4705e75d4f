"""Tests for tree_cross_validate and the Python tree / standard backends."""

import copy
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from joblib import parallel_config
from numpy.testing import assert_allclose, assert_array_equal
from scipy import sparse
from sklearn.base import BaseEstimator, ClassifierMixin, DensityMixin
from sklearn.cluster import MiniBatchKMeans
from sklearn.datasets import load_diabetes, load_digits, load_iris
from sklearn.linear_model import LogisticRegression, SGDClassifier, SGDRegressor
from sklearn.model_selection import (
    GroupKFold,
    KFold,
    LeaveOneOut,
    ShuffleSplit,
    StratifiedKFold,
    TimeSeriesSplit,
    cross_validate,
)
from sklearn.naive_bayes import BernoulliNB, MultinomialNB
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_ext import (
    SemiSupervisedAnomalyDetector,
    StratifiedTreeCVSplitter,
    TreeCVSplitter,
    tree_cross_validate,
)
from sklearn_ext.model_selection import (
    TreeCVRegimeWarning,
    one_pass_estimator,
)

# Tests marked with this run a multi-epoch learner (SGD's epochs, MLP's, k-means')
# through the tree on purpose: the regime note is expected there.
REGIME_NOTE = pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")


@pytest.fixture(scope="module")
def digits():
    return load_digits(return_X_y=True)


# -- exactness for order-independent learners -------------------------------------
@pytest.mark.parametrize("estimator", [MultinomialNB(), BernoulliNB()])
def test_naive_bayes_equals_cross_validate_k10(estimator, digits):
    X, y = digits
    # "auto" would pick the exact statistics backend: the tree is asked for.
    ours = tree_cross_validate(
        estimator, X, y, cv=TreeCVSplitter(10), method="treecv", return_run_info=True
    )
    ref = cross_validate(estimator, X, y, cv=KFold(10))
    assert_array_equal(ours["test_score"], ref["test_score"])
    assert ours["backend"] == "python_tree"
    # An int cv stratifies for classifiers, as scikit-learn's cross_validate does.
    ours = tree_cross_validate(
        estimator, X, y, cv=10, method="treecv", return_run_info=True
    )
    ref = cross_validate(estimator, X, y, cv=StratifiedKFold(10))
    assert_array_equal(ours["test_score"], ref["test_score"])


@pytest.mark.parametrize("estimator", [MultinomialNB(), BernoulliNB()])
def test_naive_bayes_leave_one_out(estimator, digits):
    X, y = digits[0][:300], digits[1][:300]
    ours = tree_cross_validate(
        estimator, X, y, cv=TreeCVSplitter(300), method="treecv", return_run_info=True
    )
    ref = cross_validate(estimator, X, y, cv=LeaveOneOut())
    assert_array_equal(ours["test_score"], ref["test_score"])
    assert ours["n_samples_fed"] <= (math.log2(300) + 1) * 300


@settings(max_examples=25, deadline=None)
@given(
    counts=st.integers(20, 60).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.integers(2, n),
            st.integers(0, 2**32 - 1),
            st.sampled_from(["fixed", "randomized"]),
        )
    )
)
def test_property_treecv_equals_standard_for_multinomial_nb(counts):
    n_samples, n_splits, seed, order = counts
    rng = np.random.RandomState(seed)
    X = rng.poisson(3.0, size=(n_samples, 5))
    y = rng.randint(0, 3, size=n_samples)
    cv = TreeCVSplitter(n_splits, shuffle=True, random_state=seed, order=order)

    def log_likelihood(est, X, y):
        return est.predict_log_proba(X)[np.arange(len(y)), y].sum()

    ours = tree_cross_validate(
        MultinomialNB(),
        X,
        y,
        cv=cv,
        scoring=log_likelihood,
        method="treecv",
        return_run_info=True,
    )
    # Reference: one model per fold from a single batch update on all its rows.
    ref = [
        log_likelihood(
            MultinomialNB().partial_fit(X[train], y[train], classes=[0, 1, 2]),
            X[test],
            y[test],
        )
        for train, test in cv.split(X, y)
    ]
    assert_allclose(ours["test_score"], ref, rtol=1e-10)


# -- online learners: the tree trains the models standard CV trains ----------------
@pytest.mark.parametrize("order", ["fixed", "randomized"])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_sgd_tree_equals_standard_with_same_order(order, n_jobs, global_random_seed):
    # The reference is standard CV of the one-pass estimator (its fit is the
    # regime the tree scores); method="standard" on SGDClassifier itself would
    # score its own fit (1000 epochs). A TreeCVSplitter lists each fold's
    # training rows in the tree's feeding order (an int cv lists them as
    # StratifiedKFold does, for the standard backend).
    X, y = load_iris(return_X_y=True)
    est = SGDClassifier(random_state=global_random_seed)
    seed = global_random_seed if order == "randomized" else None
    cv = StratifiedTreeCVSplitter(8, order=order, random_state=seed)
    kwargs = dict(cv=cv, n_jobs=n_jobs, return_run_info=True)
    with parallel_config(backend="threading"), pytest.warns(TreeCVRegimeWarning):
        tree = tree_cross_validate(est, X, y, return_estimator=True, **kwargs)
    with parallel_config(backend="threading"):
        one_pass = one_pass_estimator(est, classes=np.unique(y))
        ref = tree_cross_validate(one_pass, X, y, method="standard", **kwargs)
    assert_array_equal(tree["test_score"], ref["test_score"])
    assert tree["backend"] == "python_tree" and ref["backend"] == "standard"
    assert tree["n_samples_fed"] < ref["n_samples_fed"]
    assert len({id(e) for e in tree["estimator"]}) == 8


@pytest.mark.parametrize(
    "estimator, name",
    [
        (SGDClassifier(alpha=-1.0), "alpha"),
        (SemiSupervisedAnomalyDetector(max_iter=0), "max_iter"),
    ],
    ids=["SGDClassifier", "SSAD"],
)
def test_invalid_parameters_are_refused_before_any_note(digits, estimator, name):
    """As the learner's fit would refuse them, but first: no regime note, no fold."""
    X, y = digits
    pattern = f"The '{name}' parameter of {type(estimator).__name__} must be"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InvalidParameterError, match=pattern):
            tree_cross_validate(
                estimator, X, np.where(y % 2, 1, -1), cv=3, return_run_info=True
            )


@REGIME_NOTE
def test_parallel_processes_match_sequential(digits):
    X, y = digits
    est = SGDClassifier(random_state=0)
    seq = tree_cross_validate(est, X, y, cv=16, return_run_info=True)
    par = tree_cross_validate(est, X, y, cv=16, n_jobs=2, return_run_info=True)
    assert_array_equal(seq["test_score"], par["test_score"])
    assert seq["n_samples_fed"] == par["n_samples_fed"]


@REGIME_NOTE
def test_regression_and_fit_time_accounting():
    X, y = load_diabetes(return_X_y=True)
    est = SGDRegressor(random_state=0)
    tree = tree_cross_validate(
        est, X, y, cv=5, scoring="neg_mean_squared_error", return_run_info=True
    )
    ref = tree_cross_validate(
        one_pass_estimator(est),
        X,
        y,
        cv=TreeCVSplitter(5),  # an int would list the rows as KFold does
        scoring="neg_mean_squared_error",
        method="standard",
        return_run_info=True,
    )
    assert_array_equal(tree["test_score"], ref["test_score"])
    assert np.all(tree["fit_time"] >= 0) and np.all(tree["score_time"] > 0)
    assert tree["n_samples_fed"] == TreeCVSplitter(5).plan(X).n_samples_fed()
    assert ref["n_samples_fed"] == 4 * len(X)


# -- unsupervised learners ----------------------------------------------------------
@REGIME_NOTE
def test_clustering_scoring_none_is_the_estimators_score():
    # scoring=None means what it means in cross_validate: KMeans.score
    # (minus the test rows' inertia), in every door.
    X, _ = load_iris(return_X_y=True)
    est = MiniBatchKMeans(n_clusters=3, random_state=0, n_init=1)
    result = tree_cross_validate(
        est, X, cv=5, return_estimator=True, return_run_info=True
    )
    plan = TreeCVSplitter(5).plan(X)
    for fold, model in enumerate(result["estimator"]):
        expected = model.score(X[plan.test_indices(fold)])
        assert_allclose(result["test_score"][fold], expected, rtol=1e-10)


class IncrementalGaussian(DensityMixin, BaseEstimator):
    """Diagonal Gaussian density from running sums: order-independent."""

    def partial_fit(self, X, y=None):
        if not hasattr(self, "n_"):
            self.n_, self.s1_, self.s2_ = 0, 0.0, 0.0
        self.n_ += X.shape[0]
        self.s1_ = self.s1_ + X.sum(axis=0)
        self.s2_ = self.s2_ + (X**2).sum(axis=0)
        return self

    def fit(self, X, y=None):
        for attr in ("n_", "s1_", "s2_"):
            self.__dict__.pop(attr, None)
        return self.partial_fit(X)

    def score_samples(self, X):
        mean = self.s1_ / self.n_
        var = self.s2_ / self.n_ - mean**2 + 1e-9
        return -0.5 * np.sum(np.log(2 * np.pi * var) + (X - mean) ** 2 / var, axis=1)


@REGIME_NOTE
def test_density_scored_by_mean_log_likelihood():
    X, _ = load_iris(return_X_y=True)

    def scoring(est, X, y=None):
        return est.score_samples(X).mean()

    tree = tree_cross_validate(
        IncrementalGaussian(),
        X,
        cv=TreeCVSplitter(7),
        scoring=scoring,
        return_run_info=True,
    )
    ref = cross_validate(IncrementalGaussian(), X, cv=KFold(7), scoring=scoring)
    assert_allclose(tree["test_score"], ref["test_score"], rtol=1e-10)


# -- snapshot / restore -------------------------------------------------------------
class SnapshotNB(MultinomialNB):
    """MultinomialNB that saves and reverts its counts instead of being copied."""

    snapshots = 0

    def _treecv_snapshot(self):
        type(self).snapshots += 1
        return copy.deepcopy(self.__dict__)

    def _treecv_restore(self, state):
        self.__dict__.clear()
        self.__dict__.update(state)

    def __deepcopy__(self, memo):
        raise AssertionError("the snapshot strategy must not copy the model")


def test_snapshot_restore_strategy(digits):
    X, y = digits
    SnapshotNB.snapshots = 0
    ours = tree_cross_validate(
        SnapshotNB(), X, y, cv=TreeCVSplitter(6), return_run_info=True
    )
    ref = cross_validate(MultinomialNB(), X, y, cv=KFold(6))
    assert_array_equal(ours["test_score"], ref["test_score"])
    assert SnapshotNB.snapshots == 5  # one per internal node


# -- scoring, params, groups, callbacks ---------------------------------------------
def test_multimetric_and_callable_scoring(digits):
    X, y = digits
    result = tree_cross_validate(
        MultinomialNB(),
        X,
        y,
        cv=4,
        scoring=["accuracy", "f1_macro"],
        return_run_info=True,
    )
    assert {"test_accuracy", "test_f1_macro"} <= set(result)
    ref = cross_validate(MultinomialNB(), X, y, cv=4, scoring=["accuracy", "f1_macro"])
    assert_array_equal(result["test_f1_macro"], ref["test_f1_macro"])
    custom = tree_cross_validate(
        MultinomialNB(), X, y, cv=4, scoring=lambda est, X, y: 1.0, return_run_info=True
    )
    assert_array_equal(custom["test_score"], np.ones(4))


def test_sample_weight_is_sliced_per_update(digits):
    X, y = digits
    weights = np.random.RandomState(0).uniform(0.5, 2.0, size=len(y))
    ours = tree_cross_validate(
        MultinomialNB(),
        X,
        y,
        cv=TreeCVSplitter(5),
        fit_params={"sample_weight": weights},
        scoring="neg_log_loss",
        return_run_info=True,
    )
    ref = cross_validate(
        MultinomialNB(),
        X,
        y,
        cv=KFold(5),
        params={"sample_weight": weights},
        scoring="neg_log_loss",
    )
    assert_allclose(ours["test_score"], ref["test_score"], rtol=1e-10)


def test_group_kfold_folds_are_kept(digits):
    X, y = digits
    groups = np.arange(len(y)) % 7
    cv = GroupKFold(7)
    ours = tree_cross_validate(
        MultinomialNB(), X, y, groups=groups, cv=cv, return_run_info=True
    )
    ref = cross_validate(MultinomialNB(), X, y, groups=groups, cv=cv)
    assert_array_equal(ours["test_score"], ref["test_score"])


@REGIME_NOTE
def test_missing_class_in_a_training_part():
    X, y = load_iris(return_X_y=True)
    order = np.argsort(y, kind="stable")
    X, y = X[order], y[order]
    # Chunk 0 holds every sample of class 0: fold 0's model never sees it.
    cv = KFold(3)
    result = tree_cross_validate(
        SGDClassifier(random_state=0),
        X,
        y,
        cv=cv,
        return_estimator=True,
        return_run_info=True,
    )
    assert_array_equal(result["estimator"][0].classes_, [0, 1, 2])
    assert result["test_score"][0] == 0.0
    with pytest.raises(ValueError, match=r"\[2\] are missing from \[0, 1\]"):
        tree_cross_validate(
            SGDClassifier(), X, y, cv=cv, classes=[0, 1], return_run_info=True
        )


def test_standard_method_runs_any_estimator(digits):
    X, y = digits[0][:400], digits[1][:400]
    est = LogisticRegression(max_iter=200)
    ours = tree_cross_validate(
        est,
        X,
        y,
        cv=StratifiedTreeCVSplitter(4),
        method="standard",
        return_run_info=True,
    )
    ref = cross_validate(est, X, y, cv=StratifiedKFold(4))
    assert_allclose(ours["test_score"], ref["test_score"])
    assert ours["backend"] == "standard"


def test_sparse_input(digits):
    X, y = digits
    ours = tree_cross_validate(
        MultinomialNB(), sparse.csr_matrix(X), y, cv=5, return_run_info=True
    )
    ref = tree_cross_validate(MultinomialNB(), X, y, cv=5, return_run_info=True)
    assert_array_equal(ours["test_score"], ref["test_score"])


# -- bad input ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "X, y, kwargs, error, message",
    [
        (
            np.ones((10, 2)),
            np.arange(10) % 2,
            {"cv": 1},
            ValueError,
            r"The 'cv' parameter of tree_cross_validate must be an int in the "
            r"range \[2, inf\)",
        ),
        (np.ones((10, 2)), np.arange(10) % 2, {"cv": 11}, ValueError, "Got 11 instead"),
        (
            np.ones((10, 2)),
            np.arange(9) % 2,
            {},
            ValueError,
            r"inconsistent numbers of samples: \[10, 9\]",
        ),
        (
            np.array([[np.nan, 1.0]] * 10),
            np.arange(10) % 2,
            {},
            ValueError,
            "Input X contains NaN",
        ),
        (
            np.array([[np.inf, 1.0]] * 10),
            np.arange(10) % 2,
            {},
            ValueError,
            "Input X contains infinity",
        ),
        (
            np.ones((10, 2)),
            np.r_[np.nan, np.ones(9)],
            {},
            ValueError,
            "Input y contains NaN",
        ),
        (np.ones((0, 2)), np.ones(0), {}, ValueError, r"Found array with 0 sample"),
        (
            np.ones((10, 2)),
            np.arange(10) % 2,
            {"cv": ShuffleSplit(3), "method": "treecv"},
            ValueError,
            "do not partition the samples",
        ),
        (
            np.ones((10, 2)),
            np.arange(10) % 2,
            {"cv": TimeSeriesSplit(3), "method": "treecv"},
            ValueError,
            "do not partition the samples",
        ),
        (
            np.ones((10, 2)),
            np.arange(10) % 2,
            {"cv": "five"},
            ValueError,
            "The 'cv' parameter of tree_cross_validate must be",
        ),
        (
            np.ones((10, 2)),
            np.arange(10) % 2,
            {"method": "fast"},
            ValueError,
            "The 'method' parameter of tree_cross_validate",
        ),
        (
            np.ones((10, 2)),
            np.arange(10) % 2,
            {"order": "sorted"},
            ValueError,
            "The 'order' parameter of tree_cross_validate",
        ),
        (
            np.ones((10, 2)),
            np.arange(10) % 2,
            {"scoring": "no_such_metric"},
            ValueError,
            "Invalid scoring='no_such_metric'",
        ),
        (
            np.ones((10, 2)),
            np.arange(10) % 2,
            {"fit_params": [1]},
            TypeError,
            "The 'fit_params' parameter",
        ),
    ],
)
def test_bad_input(X, y, kwargs, error, message):
    with pytest.raises(error, match=message):
        tree_cross_validate(MultinomialNB(), X, y, **kwargs)


def test_estimator_without_partial_fit():
    X, y = load_iris(return_X_y=True)
    # method="auto" runs standard CV, which scores fit as every backend of such a
    # learner does: recorded, not warned about.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = tree_cross_validate(
            LogisticRegression(max_iter=1000), X, y, return_run_info=True
        )
    assert result["backend"] == "standard"
    # A method named explicitly refuses.
    with pytest.raises(
        TypeError,
        match=r"method='treecv' cannot run LogisticRegression: it has no "
        r"partial_fit method.*method='standard'",
    ):
        tree_cross_validate(
            LogisticRegression(), X, y, method="treecv", return_run_info=True
        )


class OrderSensitive(ClassifierMixin, BaseEstimator):
    """Records the rows it is fed, to check the tree's order."""

    def partial_fit(self, X, y, classes=None):
        self.rows_ = [*getattr(self, "rows_", []), *X[:, 0].astype(int).tolist()]
        self.classes_ = np.asarray(classes if classes is not None else self.classes_)
        return self

    def fit(self, X, y):
        self.rows_ = []
        return self.partial_fit(X, y, classes=np.unique(y))

    def predict(self, X):
        return np.full(len(X), self.classes_[0])


@REGIME_NOTE
def test_models_see_the_splitters_training_order():
    X = np.arange(20, dtype=float).reshape(-1, 1)
    y = np.arange(20) % 2
    cv = TreeCVSplitter(5, order="randomized", random_state=3)
    result = tree_cross_validate(
        OrderSensitive(), X, y, cv=cv, return_estimator=True, return_run_info=True
    )
    for (train, _), model in zip(cv.split(X, y), result["estimator"], strict=True):
        # A learner not known to be batch-invariant is fed through TreeCVEstimator.
        assert model.estimator_.rows_ == train.tolist()
