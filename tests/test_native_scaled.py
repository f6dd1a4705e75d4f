"""A running scaler before a native learner, in the native tree's node state.

``Pipeline([StandardScaler | MinMaxScaler | MaxAbsScaler, native learner])``
runs in the native engine in the streaming regime of every pipeline (fixed
batches of ``STREAM_BATCH_SIZE`` rows counted from a fold's first row, each
updating the scaler, then scaled and fed to the learner; a fold's waiting rows
fed as one last batch). Its folds must be the Python tree's on the same
pipeline, bit for bit, and the model its refit returns the same regime.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, StandardScaler

from sklearn_ext import (
    StreamingPipeline,
    TreeCVEstimator,
    TreeCVSplitter,
    one_pass_estimator,
    tree_cross_validate,
)
from sklearn_ext.linear_model import (
    LeastSquaresSGDRegressor,
    LogisticSGDClassifier,
    PegasosClassifier,
)
from sklearn_ext.model_selection import (
    NativeTreeBackend,
    PythonTreeBackend,
    TreeCVFallbackWarning,
)
from sklearn_ext.model_selection._regime import STREAM_BATCH_SIZE

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")

SCALERS = {
    "standard": StandardScaler(),
    "standard-no-mean": StandardScaler(with_mean=False),
    "standard-no-std": StandardScaler(with_std=False),
    "minmax": MinMaxScaler(),
    "minmax-range-clip": MinMaxScaler(feature_range=(-1.0, 2.0), clip=True),
    "maxabs": MaxAbsScaler(),
    "maxabs-clip": MaxAbsScaler(clip=True),
}


def _data(n: int = 1100, seed: int = 0, n_classes: int = 2):
    """Unscaled features (offsets and spreads far apart), a learnable target."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 6) * [1.0, 10.0, 300.0, 0.01, 3.0, 1.0] + [5, -3, 0, 1, 2, 0]
    X[:, 5] = 4.0  # a constant feature: the scalers' zero-scale rule
    signal = X[:, 0] + 0.1 * X[:, 1] + 0.002 * X[:, 2] + rng.randn(n)
    y = np.digitize(signal, np.quantile(signal, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return X, y


def _splitter(k, order):
    seed = 0 if order == "randomized" else None
    return TreeCVSplitter(k, order=order, random_state=seed)


def _both(pipeline, X, y, cv, **kwargs):
    """The native and the Python tree's runs of ``pipeline`` on the same folds."""
    native = tree_cross_validate(
        pipeline, X, y, cv=cv, return_estimator=True, return_run_info=True, **kwargs
    )
    python = tree_cross_validate(
        pipeline,
        X,
        y,
        cv=cv,
        method=PythonTreeBackend(),
        return_estimator=True,
        return_run_info=True,
        **kwargs,
    )
    assert native["backend"] == "native_tree"
    assert python["backend"] == "python_tree"
    return native, python


def _assert_same_model(native, python):
    """Two fitted wrappers of a scaled pipeline hold the same model, bit for bit."""
    assert isinstance(native, TreeCVEstimator)
    (_, scaler_a), (_, learner_a) = native.estimator_.steps
    (_, scaler_b), (_, learner_b) = python.estimator_.steps
    names = ("mean_", "var_", "scale_", "data_min_", "data_max_", "data_range_")
    names += ("min_", "max_abs_", "n_samples_seen_", "n_features_in_")
    for name in names:
        a, b = getattr(scaler_a, name, "absent"), getattr(scaler_b, name, "absent")
        if b is None or isinstance(b, str):
            assert a is b if b is None else a == b, name
        else:
            assert_array_equal(a, b, err_msg=name)
    assert_array_equal(learner_a.coef_, learner_b.coef_)
    assert_array_equal(learner_a.intercept_, learner_b.intercept_)
    assert learner_a.t_ == learner_b.t_
    assert_array_equal(
        getattr(learner_a, "classes_", []), getattr(learner_b, "classes_", [])
    )


# -- the same folds as the Python tree -------------------------------------------
@pytest.mark.parametrize("scaler", list(SCALERS))
@pytest.mark.parametrize("k", [2, 10, "loo"])
@pytest.mark.parametrize("order", ["fixed", "randomized"])
def test_folds_are_the_python_trees_bit_for_bit(scaler, k, order):
    n = 300 if k == "loo" else 1100  # leave-one-out: 299 rows, 43 waiting
    X, y = _data(n)
    pipeline = make_pipeline(clone(SCALERS[scaler]), PegasosClassifier(alpha=1e-3))
    cv = _splitter(n if k == "loo" else k, order)
    native, python = _both(pipeline, X, y, cv)
    assert_array_equal(native["test_score"], python["test_score"])
    assert native["n_samples_fed"] == python["n_samples_fed"]
    for a, b in zip(native["estimator"], python["estimator"], strict=True):
        _assert_same_model(a, b)


@pytest.mark.parametrize("learner", [LogisticSGDClassifier(), PegasosClassifier()])
def test_multiclass_with_classes_given(learner):
    """One-vs-rest over given classes, one of which no row has."""
    X, y = _data(900, seed=1, n_classes=3)
    pipeline = make_pipeline(StandardScaler(), learner)
    native, python = _both(
        pipeline, X, y, _splitter(7, "randomized"), classes=[0, 1, 2, 3]
    )
    assert_array_equal(native["test_score"], python["test_score"])
    for a, b in zip(native["estimator"], python["estimator"], strict=True):
        assert_array_equal(a.classes_, [0, 1, 2, 3])
        _assert_same_model(a, b)


@pytest.mark.parametrize("scoring", ["r2", "neg_mean_squared_error"])
def test_a_regressor_scores_as_the_python_tree_to_rounding(scoring):
    X, _ = _data(800, seed=2)
    y = X[:, 0] - 0.05 * X[:, 1] + np.random.RandomState(2).randn(len(X))
    pipeline = make_pipeline(MinMaxScaler(), LeastSquaresSGDRegressor())
    native, python = _both(pipeline, X, y, _splitter(6, "fixed"), scoring=scoring)
    # Metrics in C sum in another order than scikit-learn's: rounding apart.
    assert_allclose(native["test_score"], python["test_score"], rtol=1e-12)
    for a, b in zip(native["estimator"], python["estimator"], strict=True):
        _assert_same_model(a, b)


def test_a_python_scorer_and_threads():
    X, y = _data(1000, seed=3)
    pipeline = make_pipeline(StandardScaler(), PegasosClassifier(alpha=1e-3))
    cv = _splitter(8, "fixed")
    native, python = _both(pipeline, X, y, cv, scoring="balanced_accuracy")
    assert_array_equal(native["test_score"], python["test_score"])
    for a, b in zip(native["estimator"], python["estimator"], strict=True):
        _assert_same_model(a, b)
    threaded = tree_cross_validate(pipeline, X, y, cv=cv, n_jobs=2)
    plain = tree_cross_validate(pipeline, X, y, cv=cv)
    assert_array_equal(threaded["test_score"], plain["test_score"])


@pytest.mark.parametrize("scoring", [None, "balanced_accuracy"])
def test_levels_are_the_python_trees(scoring):
    """The level walk scores inner nodes: each flushes its waiting rows too."""
    X, y = _data(1500, seed=6)
    pipeline = make_pipeline(StandardScaler(), PegasosClassifier(alpha=1e-3))
    cv = _splitter(12, "randomized")
    runs = [
        tree_cross_validate(
            pipeline, X, y, cv=cv, method=method, scoring=scoring, return_levels=True
        )
        for method in (NativeTreeBackend(), PythonTreeBackend())
    ]
    native, python = (run["levels"] for run in runs)
    assert [level.n_parts for level in native] == [level.n_parts for level in python]
    for a, b in zip(native, python, strict=True):
        assert_array_equal(a.part_scores["score"], b.part_scores["score"])
    assert_array_equal(runs[0]["test_score"], runs[1]["test_score"])


# -- scored = returned, and nothing leaks ------------------------------------------
def _by_hand(pipeline, X, y, rows, classes):
    """The pipeline streamed by hand over ``rows``: fixed batches, step by step."""
    model = StreamingPipeline([(n, clone(s)) for n, s in pipeline.steps])
    for start in range(0, len(rows), STREAM_BATCH_SIZE):
        batch = rows[start : start + STREAM_BATCH_SIZE]
        model.partial_fit(X[batch], y[batch], classes=classes if start == 0 else None)
    return model


@pytest.mark.parametrize("scaler", ["standard", "minmax", "maxabs"])
def test_a_fold_is_its_rows_streamed_by_hand_in_tree_order(scaler):
    X, y = _data(1300, seed=4)
    pipeline = make_pipeline(clone(SCALERS[scaler]), PegasosClassifier(alpha=1e-3))
    splitter = _splitter(5, "randomized")
    result = tree_cross_validate(
        pipeline, X, y, cv=splitter, return_estimator=True, return_run_info=True
    )
    assert result["backend"] == "native_tree"
    plan = splitter.plan(X, y)
    for fold, model in enumerate(result["estimator"]):
        train = plan.train_indices(fold)
        hand = TreeCVEstimator(clone(pipeline), batch_size=256, cache=None)
        _assert_same_model(model, hand.fit(X[train], y[train]))
        by_hand = _by_hand(pipeline, X, y, train, np.unique(y))
        assert_array_equal(model.estimator_[-1].coef_, by_hand[-1].coef_)
        # No leakage: the fold's scaler saw its training rows, and only them.
        fold_scaler = model.estimator_[0]
        assert fold_scaler.n_samples_seen_ == len(train)
        if scaler == "standard":
            assert_array_equal(fold_scaler.mean_, by_hand[0].mean_)
            assert_allclose(fold_scaler.mean_, X[train].mean(axis=0), rtol=1e-12)
        elif scaler == "minmax":
            assert_array_equal(fold_scaler.data_min_, X[train].min(axis=0))
            assert_array_equal(fold_scaler.data_max_, X[train].max(axis=0))
        else:
            assert_array_equal(fold_scaler.max_abs_, np.abs(X[train]).max(axis=0))


def test_the_refit_is_a_fold_free_stream_by_hand():
    X, y = _data(1000, seed=5)
    pipeline = make_pipeline(StandardScaler(), PegasosClassifier(alpha=1e-3))
    refit = one_pass_estimator(pipeline, classes=np.unique(y)).fit(X, y)
    by_hand = _by_hand(pipeline, X, y, np.arange(len(y)), np.unique(y))
    assert_array_equal(refit.estimator_[-1].coef_, by_hand[-1].coef_)
    assert_array_equal(refit.estimator_[0].var_, by_hand[0].var_)
    # A fold whose held-out chunk comes last in the feeding order is trained
    # on the first rows in order: the refit regime on those rows.
    plan = TreeCVSplitter(2).plan(X, y)
    result = tree_cross_validate(pipeline, X, y, cv=plan, return_estimator=True)
    train = plan.train_indices(1)
    assert_array_equal(train, np.arange(len(train)))
    again = one_pass_estimator(pipeline, classes=np.unique(y)).fit(X[train], y[train])
    _assert_same_model(result["estimator"][1], again)


# -- what the native tree does not run ---------------------------------------------
def test_a_refused_scaler_names_its_step_and_parameter(capsys):
    X, y = _data(600)
    pipeline = Pipeline(
        [
            ("scale", StandardScaler(with_mean=False, with_std=False)),
            ("svm", PegasosClassifier()),
        ]
    )
    result = tree_cross_validate(pipeline, X, y, cv=4, verbose=1, return_run_info=True)
    assert result["backend"] == "python_tree"
    out = capsys.readouterr().out
    assert "native_tree backend cannot run Pipeline" in out
    assert "'scale' (StandardScaler) has with_mean=False and with_std=False" in out
    assert "the python_tree backend runs it" in out
    with pytest.raises(TypeError, match="with_mean=False and with_std=False"):
        tree_cross_validate(pipeline, X, y, cv=4, method=NativeTreeBackend())


@pytest.mark.parametrize(
    ("X_of", "words"),
    [
        (lambda X: X.astype(np.float32), "dtype float32"),
        (sp.csr_matrix, "X is sparse"),
    ],
)
def test_refused_data_is_named_and_runs_the_python_tree(capsys, X_of, words):
    X, y = _data(600)
    pipeline = make_pipeline(MaxAbsScaler(), PegasosClassifier())
    result = tree_cross_validate(
        pipeline, X_of(X), y, cv=4, verbose=1, return_run_info=True
    )
    assert result["backend"] == "python_tree"
    out = capsys.readouterr().out
    assert words in out and "'maxabsscaler' (MaxAbsScaler)" in out


@pytest.mark.parametrize(
    "pipeline",
    [
        make_pipeline(StandardScaler(), MinMaxScaler(), PegasosClassifier()),
        make_pipeline(type("MyScaler", (StandardScaler,), {})(), PegasosClassifier()),
    ],
    ids=["two-scalers", "a-subclass"],
)
def test_other_shapes_run_the_python_tree(pipeline):
    X, y = _data(600)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TreeCVFallbackWarning)
        result = tree_cross_validate(pipeline, X, y, cv=4, return_run_info=True)
    assert result["backend"] == "python_tree"
