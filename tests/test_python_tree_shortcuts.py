"""The Python tree's cheap copies and shortcuts give what the public methods give.

Snapshots of the state ``partial_fit`` changes must equal deep copies for every
registered learner; the per-run shortcuts (rows gathered once, SGD updates
without the per-call overhead, linear accuracy without the scorer's) must give
bit-identical fold scores and models.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.base import clone
from sklearn.cluster import MiniBatchKMeans
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.linear_model import (
    PassiveAggressiveClassifier,
    PassiveAggressiveRegressor,
    Perceptron,
    SGDClassifier,
    SGDRegressor,
)
from sklearn.model_selection import KFold
from sklearn.naive_bayes import (
    BernoulliNB,
    CategoricalNB,
    ComplementNB,
    GaussianNB,
    MultinomialNB,
)
from sklearn.neural_network import MLPClassifier, MLPRegressor

from sklearn_ext import tree_cross_validate
from sklearn_ext.model_selection import PythonTreeBackend
from sklearn_ext.model_selection._scoring import native_metric
from sklearn_ext.model_selection._shortcuts import (
    fast_accuracy,
    sgd_classifier_update,
)
from sklearn_ext.model_selection._snapshot import (
    restore_snapshot,
    snapshot_attributes,
    snapshots,
    take_snapshot,
)

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")


def _rng(seed=0):
    return np.random.RandomState(seed)


def _learners():
    """Every registered learner, in the settings that change its state most."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return [
            SGDClassifier(random_state=0),
            SGDClassifier(loss="log_loss", average=3, random_state=_rng()),
            SGDRegressor(random_state=0),
            SGDRegressor(average=True, random_state=_rng()),
            Perceptron(random_state=0),
            PassiveAggressiveClassifier(random_state=0),
            PassiveAggressiveRegressor(random_state=0),
            GaussianNB(),
            MultinomialNB(),
            BernoulliNB(),
            ComplementNB(),
            CategoricalNB(min_categories=17),
            MiniBatchKMeans(n_clusters=3, n_init=1, random_state=0),
            MiniBatchKMeans(n_clusters=3, n_init=1, random_state=_rng()),
            MLPClassifier(hidden_layer_sizes=(4,), random_state=0),
            MLPRegressor(hidden_layer_sizes=(4,), solver="sgd", random_state=_rng()),
        ]


@pytest.fixture(scope="module")
def small_digits():
    X, y = load_digits(return_X_y=True)
    return X[:150], y[:150]


def _fit(model, X, y, first=False):
    kind = type(model).__name__
    if kind == "MiniBatchKMeans":
        return model.partial_fit(X)
    if "Regressor" in kind:
        return model.partial_fit(X, y.astype(float))
    if first:
        return model.partial_fit(X, y, classes=np.arange(10))
    return model.partial_fit(X, y)


def _same(a, b, path="model") -> None:
    """Assert that two model states are equal, attribute by attribute."""
    if isinstance(a, np.random.RandomState):
        assert isinstance(b, np.random.RandomState), path
        for x, y in zip(a.get_state(), b.get_state(), strict=True):
            assert_array_equal(x, y, err_msg=path)
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype, path
        assert_array_equal(a, b, err_msg=path)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and sorted(a) == sorted(b), path
        for key in a:
            _same(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list | tuple):
        assert type(a) is type(b) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b), path
    elif a is None or isinstance(a, bool | int | float | str | np.generic):
        assert a == b, path
    elif hasattr(a, "__dict__"):
        assert type(a) is type(b), path
        _same(vars(a), vars(b), path)
    else:  # Cython objects (SGD loss functions): same type and arguments
        assert type(a) is type(b), path
        _same(a.__reduce__()[1], b.__reduce__()[1], path)


@pytest.mark.parametrize("learner", _learners(), ids=lambda e: type(e).__name__)
def test_snapshot_of_a_fitted_learner_equals_a_deep_copy(learner, small_digits):
    X, y = small_digits
    model = _fit(clone(learner), X[:50], y[:50], first=True)
    copied = copy.deepcopy(model)
    user_rng = getattr(model, "random_state", None)
    state = take_snapshot(model)
    _fit(model, X[50:100], y[50:100])
    restore_snapshot(model, state)
    _same(vars(model), vars(copied))
    assert getattr(model, "random_state", None) is user_rng
    # And both continue alike.
    _same(vars(_fit(model, X[100:], y[100:])), vars(_fit(copied, X[100:], y[100:])))


@pytest.mark.parametrize("learner", _learners(), ids=lambda e: type(e).__name__)
def test_snapshot_of_an_unfitted_learner_restores_it_unfitted(learner, small_digits):
    X, y = small_digits
    model = clone(learner)
    copied = copy.deepcopy(model)
    state = take_snapshot(model)
    _fit(model, X[:50], y[:50], first=True)
    restore_snapshot(model, state)
    _same(vars(model), vars(copied))
    _same(
        vars(_fit(model, X[50:], y[50:], first=True)),
        vars(_fit(copied, X[50:], y[50:], first=True)),
    )


@pytest.mark.parametrize("learner", _learners(), ids=lambda e: type(e).__name__)
def test_registry_lists_every_attribute_partial_fit_changes(learner, small_digits):
    X, y = small_digits
    model = clone(learner)
    before = copy.deepcopy(vars(model))
    _fit(model, X[:50], y[:50], first=True)
    _fit(model, X[50:], y[50:])
    listed = set(snapshot_attributes(model))
    for name, value in vars(model).items():
        if name in listed:
            continue
        assert name in before, f"{name} is set by partial_fit but not saved"
        if isinstance(value, np.random.RandomState):
            continue  # a user's generator: saved by its state
        _same(value, before[name], name)


def test_unregistered_learners_and_subclasses_are_deep_copied():
    class MyNB(MultinomialNB):
        pass

    assert snapshot_attributes(MyNB()) is None
    assert take_snapshot(MyNB()) is None
    assert not snapshots(MyNB())
    assert snapshots(MultinomialNB())


# -- the tree: shortcuts on and off give the same folds -------------------------------
def _tree_learners():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return [
            SGDClassifier(max_iter=1, tol=None, shuffle=False, random_state=0),
            SGDClassifier(max_iter=1, tol=None, shuffle=False),
            SGDClassifier(loss="log_loss", shuffle=False, random_state=3),
            SGDClassifier(
                class_weight={0: 2.0, 1: 0.5},
                learning_rate="invscaling",
                eta0=0.1,
                shuffle=False,
                random_state=1,
            ),
            SGDClassifier(average=True, shuffle=False, random_state=0),
            SGDClassifier(random_state=_rng(2)),  # shuffles: fed in fixed batches
            Perceptron(shuffle=False, random_state=1),
            PassiveAggressiveClassifier(
                loss="squared_hinge", shuffle=False, random_state=0
            ),
            GaussianNB(),
            MLPClassifier(hidden_layer_sizes=(3,), random_state=0),
        ]


_CASES = [
    (learner, order, "digits")
    for learner in _tree_learners()
    for order in ("fixed", "randomized")
] + [(learner, "fixed", "breast_cancer") for learner in _tree_learners()[:8]]


@pytest.mark.parametrize(("learner", "order", "data"), _CASES, ids=repr)
# A multi-epoch learner through the tree on purpose: the regime note is expected.
@pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")
def test_shortcuts_give_the_same_fold_scores_and_models(learner, order, data):
    loader = load_digits if data == "digits" else load_breast_cancer
    X, y = loader(return_X_y=True)
    X, y = X[::3], y[::3]
    if isinstance(learner, MLPClassifier):
        X = X / 16.0
    results = []
    for shortcuts in (True, False):
        rs = getattr(learner, "random_state", None)
        est = clone(learner)
        if isinstance(rs, np.random.RandomState):
            est.set_params(random_state=copy.deepcopy(rs))
        results.append(
            tree_cross_validate(
                est,
                X,
                y,
                cv=13,
                method=PythonTreeBackend(shortcuts=shortcuts),
                order=order,
                random_state=0,
                return_estimator=True,
                return_run_info=True,
            )
        )
    fast, reference = results
    assert_array_equal(fast["test_score"], reference["test_score"])
    assert fast["n_samples_fed"] == reference["n_samples_fed"]
    for a, b in zip(fast["estimator"], reference["estimator"], strict=True):
        if hasattr(a, "coef_"):
            assert_array_equal(a.coef_, b.coef_)
            assert_array_equal(a.intercept_, b.intercept_)
            assert a.t_ == b.t_ and a.n_iter_ == b.n_iter_


def test_shortcuts_with_float32_sample_weight_and_scorers():
    X, y = load_breast_cancer(return_X_y=True)
    X = X.astype(np.float32)
    weights = np.random.RandomState(0).uniform(0.5, 2.0, size=len(y))
    est = SGDClassifier(max_iter=1, tol=None, shuffle=False, random_state=0)
    for kwargs in (
        {"scoring": "accuracy"},
        {"scoring": ["accuracy", "roc_auc"]},
        {"fit_params": {"sample_weight": weights}},
        {"cv": KFold(7, shuffle=True, random_state=0)},
    ):
        kwargs = {"cv": 9, **kwargs}
        fast = tree_cross_validate(
            est, X, y, method=PythonTreeBackend(), **kwargs, return_run_info=True
        )
        ref = tree_cross_validate(
            est,
            X,
            y,
            method=PythonTreeBackend(shortcuts=False),
            **kwargs,
            return_run_info=True,
        )
        for key in fast:
            if key.startswith("test_"):
                assert_array_equal(fast[key], ref[key])


# The fold holding the NaN row fails to score (nan, with a warning) before a fit
# on that row raises.
@pytest.mark.filterwarnings("ignore:Scoring failed:UserWarning")
def test_shortcuts_need_finite_numeric_rows():
    X, y = load_breast_cancer(return_X_y=True)
    X = X.copy()
    X[5, 3] = np.nan  # in the left half: not in the run's first update
    est = SGDClassifier(max_iter=1, tol=None, shuffle=False, random_state=0)
    with pytest.raises(ValueError, match="NaN"):
        tree_cross_validate(
            est, X, y, cv=4, method=PythonTreeBackend(), return_run_info=True
        )


def test_shortcuts_apply_only_where_they_are_exact():
    X = np.zeros((4, 2))
    sgd = SGDClassifier(random_state=0)
    assert sgd_classifier_update(sgd, X, {}) is not None
    assert sgd_classifier_update(sgd, X, {"sample_weight": np.ones(4)}) is None
    assert sgd_classifier_update(SGDClassifier(average=True), X, {}) is None
    assert sgd_classifier_update(SGDClassifier(random_state=_rng()), X, {}) is None
    assert sgd_classifier_update(SGDClassifier(), X, {}) is None  # shuffles
    assert sgd_classifier_update(SGDClassifier(early_stopping=True), X, {}) is None
    assert sgd_classifier_update(SGDRegressor(), X, {}) is None

    class MySGD(SGDClassifier):
        pass

    assert sgd_classifier_update(MySGD(random_state=0), X, {}) is None
    # The run's native metric (CVTask.metric), decided once by the run core.
    assert fast_accuracy(sgd, native_metric(sgd, None)) is not None
    assert fast_accuracy(sgd, "accuracy") is not None
    assert fast_accuracy(sgd, "f1_macro") is None
    assert fast_accuracy(sgd, None) is None  # a callable or several metrics
    assert fast_accuracy(GaussianNB(), "accuracy") is None


def test_backend_option_is_validated_and_shown():
    assert repr(PythonTreeBackend()) == "PythonTreeBackend()"
    assert repr(PythonTreeBackend(shortcuts=False)) == (
        "PythonTreeBackend(shortcuts=False)"
    )
    with pytest.raises(ValueError, match="The 'shortcuts' parameter of"):
        PythonTreeBackend(shortcuts="yes")
