"""The many-batch kernel of the streaming regime gives the public methods' model.

``TreeCVEstimator`` feeds the full batches of a (``StandardScaler`` ->)
``SGDClassifier`` / ``Perceptron`` through one Cython call
(``sklearn_ext.model_selection._sgd_stream``) instead of one ``partial_fit``
per batch. The regime is unchanged: every model must equal, bit for bit, the
one the public methods give batch by batch, however the rows arrive (``fit``,
``partial_fit`` in uneven calls, the tree's chunks and leaf flushes).
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.base import clone, is_classifier
from sklearn.datasets import load_digits
from sklearn.linear_model import Perceptron, SGDClassifier
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, StandardScaler

from sklearn_ext import (
    LeastSquaresSGDRegressor,
    LogisticSGDClassifier,
    PegasosClassifier,
    StreamingPipeline,
    TreeCVEstimator,
    TreeCVSearchCV,
    TreeCVSplitter,
    tree_cross_validate,
)
from sklearn_ext.model_selection._regime import STREAM_BATCH_SIZE
from sklearn_ext.model_selection._sgd_stream import ScaledRowsKernel, batch_kernel

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")

BATCH = 32


@pytest.fixture(scope="module")
def data():
    X, y = load_digits(return_X_y=True)
    rng = np.random.RandomState(0)
    X = X * rng.uniform(0.5, 20.0, size=X.shape[1]) + rng.normal(size=X.shape[1])
    return X, y


def _learners():
    return [
        SGDClassifier(random_state=0),
        SGDClassifier(random_state=1, loss="modified_huber", alpha=1e-3),
        SGDClassifier(
            random_state=2,
            loss="squared_hinge",
            penalty=None,
            learning_rate="invscaling",
            eta0=0.01,
        ),
        SGDClassifier(random_state=3, learning_rate="constant", eta0=0.001),
        SGDClassifier(random_state=4, shuffle=False, fit_intercept=False),
        Perceptron(random_state=5),
    ]


def _streams():
    out = []
    for learner in _learners():
        out.append(learner)
        out.append(make_pipeline(StandardScaler(), clone(learner)))
    out.append(make_pipeline(StandardScaler(with_mean=False), SGDClassifier()))
    out.append(make_pipeline(StandardScaler(with_std=False), Perceptron()))
    return out


def _by_hand(estimator, X, y, batch, classes=None):
    """The public methods, one ``partial_fit`` per batch."""
    if hasattr(estimator, "steps"):
        model = StreamingPipeline([(n, clone(s)) for n, s in estimator.steps])
    else:
        model = clone(estimator)
    classes = np.unique(y) if classes is None else classes
    for start in range(0, len(y), batch):
        rows = slice(start, start + batch)
        first = {"classes": classes} if start == 0 and is_classifier(model) else {}
        model.partial_fit(X[rows], y[rows], **first)
    return model


def _assert_same_model(fast, slow):
    if hasattr(slow, "steps"):
        assert fast.n_batches_ == slow.n_batches_
        for (_, a), (_, b) in zip(fast.steps, slow.steps, strict=True):
            _assert_same_state(a, b)
    else:
        _assert_same_state(fast, slow)


def _assert_same_state(a, b):
    names = ("coef_", "intercept_", "t_", "n_iter_", "mean_", "var_", "scale_")
    names = (*names, "_state", "min_", "data_min_", "data_max_", "data_range_")
    names = (*names, "max_abs_")
    for name in (*names, "n_samples_seen_"):
        if hasattr(b, name):
            value = getattr(b, name)
            if value is None:
                assert getattr(a, name) is None
            else:
                assert_array_equal(getattr(a, name), value, err_msg=name)


def _seeded(estimator, seed: int):
    """Where ``random_state`` is None, the global generator seeded alike."""
    np.random.seed(seed)  # noqa: NPY002 (what partial_fit draws from)
    return estimator


@pytest.mark.parametrize("n_classes", [2, 10])
@pytest.mark.parametrize("estimator", _streams(), ids=repr)
def test_fit_is_the_public_methods_batch_by_batch(data, estimator, n_classes):
    X, y = data
    y = y if n_classes == 10 else (y >= 5).astype(int)
    if batch_kernel(_by_hand(estimator, X[:BATCH], y[:BATCH], BATCH)) is None:
        assert hasattr(estimator, "steps") and estimator[-1].random_state is None
        assert n_classes > 2  # a generator's one-vs-rest seeds: partial_fit runs
    wrapper = TreeCVEstimator(estimator, batch_size=BATCH, cache=None)
    fast = _seeded(wrapper, 7).fit(X, y).estimator_
    after_fast = np.random.rand()  # noqa: NPY002
    slow = _by_hand(_seeded(estimator, 7), X, y, BATCH)
    _assert_same_model(fast, slow)
    _by_hand(_seeded(estimator, 7), X, y, BATCH)
    # As many draws from the global generator as partial_fit makes.
    assert np.random.rand() == after_fast  # noqa: NPY002


@pytest.mark.parametrize("estimator", _streams()[:4], ids=repr)
def test_uneven_partial_fit_calls_and_flushes(data, estimator):
    X, y = data
    classes = np.unique(y)
    wrapper = TreeCVEstimator(estimator, batch_size=BATCH, cache=None)
    edges = [0, 5, 40, 41, 300, 333, 1000, len(y)]
    for start, stop in zip(edges[:-1], edges[1:], strict=True):
        wrapper.partial_fit(X[start:stop], y[start:stop], classes=classes)
        # Rows short of a batch are fed to a copy, as one shorter batch.
        expected = _by_hand(estimator, X[:stop], y[:stop], BATCH, classes)
        _assert_same_model(wrapper.estimator_, expected)


def test_tree_fold_models_are_the_public_methods_exactly(data):
    X, y = data
    splitter = TreeCVSplitter(7)
    pipeline = make_pipeline(StandardScaler(), SGDClassifier(random_state=0))
    result = tree_cross_validate(pipeline, X, y, cv=splitter, return_estimator=True)
    plan = splitter.plan(X, y)
    for fold, model in enumerate(result["estimator"]):
        rows = plan.train_indices(fold)
        expected = _by_hand(pipeline, X[rows], y[rows], STREAM_BATCH_SIZE)
        _assert_same_model(model.estimator_, expected)
        test = plan.test_indices(fold)
        score = np.mean(expected.predict(X[test]) == y[test])
        assert result["test_score"][fold] == score


@pytest.mark.parametrize(
    "estimator",
    [
        SGDClassifier(random_state=0, average=True),
        SGDClassifier(random_state=0, penalty="l1"),
        SGDClassifier(random_state=0, penalty="elasticnet"),
        SGDClassifier(random_state=0, loss="log_loss"),
        SGDClassifier(random_state=0, learning_rate="adaptive", eta0=0.1),
        make_pipeline(MinMaxScaler(), SGDClassifier(random_state=0)),
        make_pipeline(
            StandardScaler(), StandardScaler(), SGDClassifier(random_state=0)
        ),
    ],
    ids=repr,
)
def test_settings_the_kernel_does_not_reproduce_use_partial_fit(data, estimator):
    X, y = data
    model = _by_hand(estimator, X[:BATCH], y[:BATCH], BATCH)
    assert batch_kernel(model) is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = TreeCVEstimator(estimator, batch_size=BATCH, cache=None).fit(X, y)
        _assert_same_model(fast.estimator_, _by_hand(estimator, X, y, BATCH))


def test_a_float32_or_nan_batch_is_left_to_the_steps(data):
    X, y = data
    pipeline = make_pipeline(StandardScaler(), SGDClassifier(random_state=0))
    model = TreeCVEstimator(pipeline, batch_size=BATCH, cache=None)
    model.fit(X.astype(np.float32), y)
    _assert_same_model(
        model.estimator_, _by_hand(pipeline, X.astype(np.float32), y, BATCH)
    )
    bad = X.copy()
    bad[100, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        TreeCVEstimator(pipeline, batch_size=BATCH, cache=None).fit(bad, y)


def test_a_copy_of_a_stream_does_not_share_state(data):
    X, y = data
    model = TreeCVEstimator(
        make_pipeline(StandardScaler(), SGDClassifier(random_state=0)),
        batch_size=BATCH,
        cache=None,
    ).partial_fit(X[:100], y[:100], classes=np.unique(y))
    twin = copy.deepcopy(model)
    model.partial_fit(X[100:500], y[100:500])
    twin.partial_fit(X[100:500], y[100:500])
    _assert_same_model(model.estimator_, twin.estimator_)
    assert model.estimator_[-1].coef_ is not twin.estimator_[-1].coef_


# -- a scaler before a native learner -------------------------------------------------
def _scaled_native():
    return [
        make_pipeline(StandardScaler(), PegasosClassifier()),
        make_pipeline(StandardScaler(with_mean=False), LogisticSGDClassifier()),
        make_pipeline(StandardScaler(with_std=False), PegasosClassifier(alpha=0.1)),
        make_pipeline(MinMaxScaler(), PegasosClassifier()),
        make_pipeline(MinMaxScaler((-1, 2), clip=True), LogisticSGDClassifier()),
        make_pipeline(MaxAbsScaler(), PegasosClassifier()),
    ]


@pytest.mark.parametrize("estimator", _scaled_native(), ids=repr)
def test_a_scaler_before_a_native_learner_scales_all_batches_at_once(data, estimator):
    # The learner updates row by row and keeps its state over calls, so the
    # scaled batches are fed to it in one call: the same model as batch by batch.
    X, y = data
    classes = np.unique(y)
    started = _by_hand(estimator, X[:BATCH], y[:BATCH], BATCH, classes)
    assert isinstance(batch_kernel(started), ScaledRowsKernel)
    fast = TreeCVEstimator(estimator, batch_size=BATCH, cache=None).fit(X, y)
    _assert_same_model(fast.estimator_, _by_hand(estimator, X, y, BATCH))
    wrapper = TreeCVEstimator(estimator, batch_size=BATCH, cache=None)
    for start, stop in [(0, 50), (50, 51), (51, 700), (700, len(y))]:
        wrapper.partial_fit(X[start:stop], y[start:stop], classes=classes)
        expected = _by_hand(estimator, X[:stop], y[:stop], BATCH, classes)
        _assert_same_model(wrapper.estimator_, expected)


def test_a_scaled_native_regressor_and_the_tree(data):
    X, y = data
    y = y.astype(float) + X[:, 10] / 50.0
    pipeline = make_pipeline(StandardScaler(), LeastSquaresSGDRegressor())
    fast = TreeCVEstimator(pipeline, batch_size=BATCH, cache=None).fit(X, y)
    _assert_same_model(fast.estimator_, _by_hand(pipeline, X, y, BATCH, classes=None))
    splitter = TreeCVSplitter(5)
    result = tree_cross_validate(pipeline, X, y, cv=splitter, return_estimator=True)
    plan = splitter.plan(X, y)
    for fold, model in enumerate(result["estimator"]):
        rows = plan.train_indices(fold)
        expected = _by_hand(pipeline, X[rows], y[rows], STREAM_BATCH_SIZE, None)
        _assert_same_model(model.estimator_, expected)


@pytest.mark.parametrize(
    "estimator",
    [
        make_pipeline(StandardScaler(), PegasosClassifier()),
        make_pipeline(StandardScaler(), SGDClassifier(random_state=0)),
        SGDClassifier(random_state=0),
    ],
    ids=repr,
)
def test_scored_is_returned_through_the_kernels(data, estimator):
    # The search's refit is the same regime on all rows: its clone, fitted on
    # each fold's training rows, scores exactly what the tree scored.
    X, y = data
    cv = TreeCVSplitter(5)
    grid = {
        f"{estimator.steps[-1][0]}__alpha"
        if hasattr(estimator, "steps")
        else "alpha": [
            1e-4,
            1e-2,
        ]
    }
    search = TreeCVSearchCV(estimator, grid, cv=cv).fit(X, y)
    again = cross_val_score(clone(search.best_estimator_), X, y, cv=cv)
    assert search.best_score_ == again.mean()
