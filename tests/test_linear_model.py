"""Tests of the native incremental learners (PEGASOS, logistic SGD, LSQSGD)."""

import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.linear_model import SGDClassifier

from sklearn_ext.linear_model import (
    LeastSquaresSGDRegressor,
    LogisticSGDClassifier,
    PegasosClassifier,
)

CLASSIFIERS = [PegasosClassifier, LogisticSGDClassifier]
ESTIMATORS = [*CLASSIFIERS, LeastSquaresSGDRegressor]


@pytest.fixture
def global_random_seed():
    """A fixed seed (the project's conftest may provide the same fixture)."""
    return 42


def _data(seed, n_samples=120, n_features=5, n_classes=2):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n_samples, n_features))
    score = X[:, 0] + 0.5 * rng.normal(size=n_samples)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return X, y


def _target(estimator_class, X, y):
    if estimator_class is LeastSquaresSGDRegressor:
        return 0.1 * X[:, 0] - 0.05 * X[:, 1]
    return y


@pytest.mark.parametrize("alpha", [1e-4, 1e-2, 1.0])
@pytest.mark.parametrize("sparse", [False, True])
def test_pegasos_reproduces_sgd_classifier(alpha, sparse, global_random_seed):
    # SGDClassifier's invscaling step is eta0 / t**power_t = 1 / (alpha t) and its
    # L2 penalty scales w by (1 - eta alpha) before the hinge step eta y x, taken
    # when y <w, x> <= 1: exactly PEGASOS without projection and intercept.
    X, y = _data(global_random_seed, n_samples=300, n_features=7)
    if sparse:
        X = sp.csr_matrix(np.where(np.abs(X) > 0.8, X, 0.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning of max_iter=1
        sgd = SGDClassifier(
            loss="hinge",
            alpha=alpha,
            learning_rate="invscaling",
            eta0=1 / alpha,
            power_t=1,
            fit_intercept=False,
            shuffle=False,
            max_iter=1,
            tol=None,
        ).fit(X, y)
    pegasos = PegasosClassifier(
        alpha=alpha, fit_intercept=False, shuffle=False, max_iter=1
    ).fit(X, y)
    assert_allclose(pegasos.coef_, sgd.coef_, rtol=1e-10, atol=1e-10)
    assert_array_equal(pegasos.predict(X), sgd.predict(X))


@pytest.mark.parametrize("estimator_class", ESTIMATORS)
def test_partial_fit_is_one_ordered_pass(estimator_class, global_random_seed):
    X, y = _data(global_random_seed)
    y = _target(estimator_class, X, y)
    fitted = estimator_class(shuffle=False, max_iter=1).fit(X, y)
    kwargs = {"classes": np.unique(y)} if estimator_class in CLASSIFIERS else {}
    streamed = estimator_class().partial_fit(X[:50], y[:50], **kwargs)
    streamed.partial_fit(X[50:], y[50:])
    assert_array_equal(streamed.coef_, fitted.coef_)
    assert_array_equal(streamed.intercept_, fitted.intercept_)
    assert streamed.t_ == fitted.t_ == len(X)


@pytest.mark.parametrize("estimator_class", ESTIMATORS)
def test_fit_is_deterministic_given_random_state(estimator_class, global_random_seed):
    X, y = _data(global_random_seed)
    y = _target(estimator_class, X, y)
    # The seed drives the shuffling, which the one-pass defaults leave off.
    shuffled = {"shuffle": True, "max_iter": 5}
    first = estimator_class(random_state=global_random_seed, **shuffled).fit(X, y)
    second = estimator_class(random_state=global_random_seed, **shuffled).fit(X, y)
    other = estimator_class(random_state=global_random_seed + 1, **shuffled).fit(X, y)
    assert_array_equal(first.coef_, second.coef_)
    assert not np.array_equal(first.coef_, other.coef_)


@pytest.mark.parametrize("estimator_class", ESTIMATORS)
def test_default_fit_is_the_one_pass_treecv_scores(estimator_class):
    X, y = _data(0)
    y = _target(estimator_class, X, y)
    fitted = estimator_class().fit(X, y)
    kwargs = {"classes": np.unique(y)} if estimator_class in CLASSIFIERS else {}
    streamed = estimator_class().partial_fit(X[:7], y[:7], **kwargs)
    streamed.partial_fit(X[7:], y[7:])
    assert_array_equal(fitted.coef_, streamed.coef_)
    assert_array_equal(fitted.intercept_, streamed.intercept_)


@pytest.mark.parametrize("estimator_class", ESTIMATORS)
def test_dense_sparse_and_float32_agree(estimator_class, global_random_seed):
    X, y = _data(global_random_seed)
    y = _target(estimator_class, X, y)
    X[np.abs(X) < 0.5] = 0.0
    # Strong regularisation: with tiny alpha the first steps 1 / (alpha t) are
    # huge and float32 rounding would be amplified into a different model.
    params = {"alpha": 0.1} if estimator_class in CLASSIFIERS else {}
    dense = estimator_class(random_state=0, **params).fit(X, y)
    sparse = estimator_class(random_state=0, **params).fit(sp.csr_matrix(X), y)
    single = estimator_class(random_state=0, **params).fit(X.astype(np.float32), y)
    assert_allclose(sparse.coef_, dense.coef_, rtol=1e-12, atol=1e-14)
    # float32 rows enter the float64 kernel unchanged, up to their rounding.
    assert_allclose(single.coef_, dense.coef_, rtol=1e-4, atol=1e-5)


def test_explicit_zeros_are_zero_values(global_random_seed):
    # Explicit zeros stored in a CSR matrix are values like any other: they add
    # nothing to dot products nor to the weights, so the model is bit-identical
    # to the one fitted on the matrix without them.
    X, y = _data(global_random_seed)
    X[np.abs(X) < 0.5] = 0.0
    clean = sp.csr_matrix(X)
    rows, cols = np.nonzero(X == 0)
    explicit = sp.csr_matrix(
        (
            np.r_[clean.data, np.zeros(3)],
            (np.r_[np.nonzero(X)[0], rows[:3]], np.r_[np.nonzero(X)[1], cols[:3]]),
        ),
        shape=X.shape,
    )
    explicit.sum_duplicates()
    assert explicit.nnz == clean.nnz + 3
    for estimator_class in ESTIMATORS:
        target = _target(estimator_class, X, y)
        a = estimator_class(random_state=0).fit(clean, target)
        b = estimator_class(random_state=0).fit(explicit, target)
        assert_array_equal(a.coef_, b.coef_)


def test_multiclass_is_one_vs_rest(global_random_seed):
    X, y = _data(global_random_seed, n_classes=3)
    labels = np.array(["a", "b", "c"])[y]
    for estimator_class in CLASSIFIERS:
        # Several shuffled passes: this tests what the model learns, not one pass.
        clf = estimator_class(alpha=1e-2, max_iter=5, shuffle=True, random_state=0).fit(
            X, labels
        )
        scores = clf.decision_function(X)
        assert scores.shape == (len(X), 3)
        assert clf.coef_.shape == (3, X.shape[1])
        assert_array_equal(clf.predict(X), clf.classes_[np.argmax(scores, axis=1)])
        assert clf.score(X, labels) > 0.6


def test_predict_proba_of_logistic(global_random_seed):
    for n_classes in (2, 3):
        X, y = _data(global_random_seed, n_classes=n_classes)
        clf = LogisticSGDClassifier(alpha=1e-2, random_state=0).fit(X, y)
        proba = clf.predict_proba(X)
        assert proba.shape == (len(X), n_classes)
        assert_allclose(proba.sum(axis=1), 1.0)
        assert_array_equal(clf.classes_[proba.argmax(axis=1)], clf.predict(X))


def test_projection_bounds_the_norm(global_random_seed):
    X, y = _data(global_random_seed)
    X *= 100.0
    alpha = 0.5
    clf = PegasosClassifier(alpha=alpha, project=True, random_state=0).fit(X, y)
    norm = np.sqrt(np.sum(clf.coef_**2) + np.sum(clf.intercept_**2))
    assert norm <= alpha**-0.5 * (1 + 1e-12)
    # The first step sets w = y x / alpha, far outside the ball for large x.
    free = PegasosClassifier(alpha=alpha).partial_fit(X[:1], y[:1], classes=[0, 1])
    assert np.sqrt(np.sum(free.coef_**2)) > alpha**-0.5
    one = PegasosClassifier(alpha=alpha, project=True)
    one.partial_fit(X[:1], y[:1], classes=[0, 1])
    one_norm = np.sqrt(np.sum(one.coef_**2) + np.sum(one.intercept_**2))
    assert_allclose(one_norm, alpha**-0.5)


def test_least_squares_learns_and_stays_in_the_ball(global_random_seed):
    rng = np.random.RandomState(global_random_seed)
    X = rng.normal(size=(2000, 4))
    y = X @ [0.4, -0.2, 0.1, 0.0] + 0.2
    reg = LeastSquaresSGDRegressor(max_iter=5, shuffle=True, random_state=0).fit(X, y)
    assert_allclose(reg.coef_.ravel(), [0.4, -0.2, 0.1, 0.0], atol=0.03)
    assert_allclose(reg.intercept_, [0.2], atol=0.03)
    small = LeastSquaresSGDRegressor(
        radius=0.1, max_iter=5, shuffle=True, random_state=0
    ).fit(X, y)
    assert np.sqrt(np.sum(small.coef_**2) + small.intercept_[0] ** 2) <= 0.1 + 1e-12


@pytest.mark.parametrize("estimator_class", ESTIMATORS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_input_is_rejected(estimator_class, bad, global_random_seed):
    X, y = _data(global_random_seed)
    y = _target(estimator_class, X, y)
    X_bad = X.copy()
    X_bad[3, 1] = bad
    message = "Input X contains (NaN|infinity)"
    with pytest.raises(ValueError, match=message):
        estimator_class().fit(X_bad, y)
    with pytest.raises(ValueError, match=message):
        estimator_class().fit(sp.csr_matrix(X_bad), y)
    fitted = estimator_class().fit(X, y)
    with pytest.raises(ValueError, match=message):
        fitted.predict(X_bad)


def test_non_finite_target_is_rejected(global_random_seed):
    X, y = _data(global_random_seed)
    target = _target(LeastSquaresSGDRegressor, X, y)
    target[0] = np.nan
    with pytest.raises(ValueError, match="Input y contains NaN"):
        LeastSquaresSGDRegressor().fit(X, target)


@pytest.mark.parametrize(
    "estimator, name, value",
    [
        (PegasosClassifier(alpha=-1), "alpha", "-1"),
        (PegasosClassifier(alpha=0), "alpha", "0"),
        (LogisticSGDClassifier(alpha=0.0), "alpha", "0.0"),
        (LeastSquaresSGDRegressor(radius=0), "radius", "0"),
        (LeastSquaresSGDRegressor(radius=-2.5), "radius", "-2.5"),
        (LeastSquaresSGDRegressor(eta0=0), "eta0", "0"),
    ],
)
def test_bad_parameters_are_rejected(estimator, name, value, global_random_seed):
    X, y = _data(global_random_seed)
    message = (
        f"The '{name}' parameter of {type(estimator).__name__} must be a float in "
        f"the range (0.0, inf). Got {value} instead."
    )
    with pytest.raises(ValueError, match=re.escape(message)):
        estimator.fit(X, y)
    kwargs = {} if name in ("radius", "eta0") else {"classes": [0, 1]}
    with pytest.raises(ValueError, match=re.escape(message)):
        estimator.partial_fit(X, y, **kwargs)


@pytest.mark.parametrize("estimator_class", CLASSIFIERS)
def test_single_class_is_rejected(estimator_class, global_random_seed):
    X, _ = _data(global_random_seed)
    message = "needs samples of at least 2 classes in the data, but the data contain"
    with pytest.raises(ValueError, match=message):
        estimator_class().fit(X, np.ones(len(X)))
    with pytest.raises(ValueError, match=message):
        estimator_class().partial_fit(X, np.ones(len(X)), classes=[1])
    # A batch of one class is fine once all classes are declared.
    clf = estimator_class().partial_fit(X, np.ones(len(X)), classes=[0, 1])
    assert_array_equal(clf.classes_, [0, 1])


@pytest.mark.parametrize("estimator_class", CLASSIFIERS)
def test_partial_fit_needs_classes_and_known_labels(estimator_class):
    X, y = _data(0)
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        estimator_class().partial_fit(X, y)
    clf = estimator_class().partial_fit(X, y, classes=[0, 1])
    with pytest.raises(ValueError, match=r"y contains labels \[7\] that are not in"):
        clf.partial_fit(X[:2], [0, 7])


@pytest.mark.parametrize("estimator_class", ESTIMATORS)
def test_partial_fit_with_other_feature_count_is_rejected(estimator_class):
    X, y = _data(0)
    y = _target(estimator_class, X, y)
    kwargs = {"classes": [0, 1]} if estimator_class in CLASSIFIERS else {}
    model = estimator_class().partial_fit(X, y, **kwargs)
    message = (
        f"X has 3 features, but {estimator_class.__name__} is expecting 5 features"
    )
    with pytest.raises(ValueError, match=message):
        model.partial_fit(X[:, :3], y)
    with pytest.raises(ValueError, match=message):
        model.predict(sp.csr_matrix(X[:, :3]))


def test_sample_weight_scales_the_steps(global_random_seed):
    X, y = _data(global_random_seed)
    target = _target(LeastSquaresSGDRegressor, X, y)
    plain = LeastSquaresSGDRegressor(shuffle=False).fit(X, target)
    ones = LeastSquaresSGDRegressor(shuffle=False).fit(
        X, target, sample_weight=np.ones(len(X))
    )
    half = LeastSquaresSGDRegressor(shuffle=False).fit(
        X, target, sample_weight=np.full(len(X), 0.5)
    )
    assert_array_equal(plain.coef_, ones.coef_)
    assert not np.allclose(plain.coef_, half.coef_)


def test_snapshot_and_restore_round_trip(global_random_seed):
    X, y = _data(global_random_seed)
    clf = PegasosClassifier()
    empty = clf._treecv_snapshot()
    clf.partial_fit(X[:60], y[:60], classes=[0, 1])
    taken = clf._treecv_snapshot()
    coef = clf.coef_.copy()
    clf.partial_fit(X[60:], y[60:])
    clf._treecv_restore(taken)
    assert_array_equal(clf.coef_, coef)
    clf._treecv_restore(empty)
    assert not hasattr(clf, "coef_")
