"""Pipelines through the tree: every step streams with the learner, nothing leaks.

The regime (``StreamingPipeline``): each fixed batch of rows updates every step
in turn (fitted on the first batch, ``partial_fit`` after), is transformed by
the updated step and handed to the next; the learner learns from it with
``partial_fit``. A fold model is that regime on the fold's training rows in
tree order; the returned model is the same regime on all rows.
"""

from __future__ import annotations

import warnings

import numpy as np
import optuna
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from optuna.distributions import CategoricalDistribution
from optuna.trial import FixedTrial
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_breast_cancer
from sklearn.decomposition import IncrementalPCA
from sklearn.feature_selection import SelectFromModel
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import FeatureUnion, make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    MinMaxScaler,
    OneHotEncoder,
    PolynomialFeatures,
    StandardScaler,
    TargetEncoder,
)

from optuna_treecv import TreeCVObjective, refit_estimator
from sklearn_ext import (
    StreamingPipeline,
    TreeCVEstimator,
    TreeCVSearchCV,
    TreeCVSplitter,
    tree_cross_validate,
)
from sklearn_ext.model_selection import TreeCVFallbackWarning, TreeCVRegimeWarning
from sklearn_ext.model_selection._regime import STREAM_BATCH_SIZE

pd = pytest.importorskip("pandas")
pytestmark = pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return X, y


def _scaled_sgd():
    return make_pipeline(StandardScaler(), SGDClassifier(random_state=0))


def _frame(X, y):
    frame = pd.DataFrame(X[:, :6], columns=[f"f{i}" for i in range(6)])
    frame["colour"] = np.where(y == 1, "red", "blue")
    frame.loc[::7, "colour"] = "green"
    return frame


def _columns_pipeline():
    encode = ColumnTransformer(
        [
            ("num", StandardScaler(), [f"f{i}" for i in range(6)]),
            ("cat", OneHotEncoder(), ["colour"]),
        ]
    )
    return make_pipeline(encode, SGDClassifier(random_state=0))


# -- the regime ----------------------------------------------------------------------
def _by_hand(pipeline, X, y, rows, classes):
    """The pipeline streamed by hand over ``rows``: fixed batches, step by step."""
    model = StreamingPipeline([(n, clone(s)) for n, s in pipeline.steps])
    for start in range(0, len(rows), STREAM_BATCH_SIZE):
        batch = rows[start : start + STREAM_BATCH_SIZE]
        model.partial_fit(X[batch], y[batch], classes=classes if start == 0 else None)
    return model


@pytest.mark.parametrize("order", ["fixed", "randomized"])
def test_a_fold_model_is_the_pipeline_streamed_over_its_rows(cancer, order):
    X, y = cancer
    seed = 0 if order == "randomized" else None
    splitter = TreeCVSplitter(5, order=order, random_state=seed)
    pipeline = _scaled_sgd()
    result = tree_cross_validate(
        pipeline, X, y, cv=splitter, return_estimator=True, return_run_info=True
    )
    assert result["backend"] == "python_tree"
    plan = splitter.plan(X, y)
    for fold, model in enumerate(result["estimator"]):
        expected = _by_hand(pipeline, X, y, plan.train_indices(fold), np.unique(y))
        fitted = model.estimator_
        assert_allclose(fitted[-1].coef_, expected[-1].coef_, rtol=1e-12, atol=1e-12)
        test = plan.test_indices(fold)
        assert_array_equal(model.predict(X[test]), expected.predict(X[test]))


def test_nothing_leaks_into_a_fold(cancer):
    X, y = cancer
    splitter = TreeCVSplitter(4)
    result = tree_cross_validate(
        _scaled_sgd(), X, y, cv=splitter, return_estimator=True, return_run_info=True
    )
    plan = splitter.plan(X, y)
    for fold, model in enumerate(result["estimator"]):
        scaler = model.estimator_[0]
        train = plan.train_indices(fold)
        assert scaler.n_samples_seen_ == len(train)
        assert_allclose(scaler.mean_, X[train].mean(axis=0), rtol=1e-10)


def test_scored_is_returned(cancer):
    X, y = cancer
    cv = TreeCVSplitter(5)
    search = TreeCVSearchCV(
        _scaled_sgd(), {"sgdclassifier__alpha": [1e-4, 1e-2]}, cv=cv
    ).fit(X, y)
    assert isinstance(search.best_estimator_, TreeCVEstimator)
    again = cross_val_score(clone(search.best_estimator_), X, y, cv=cv)
    assert search.best_score_ == pytest.approx(again.mean(), abs=1e-12)
    # The streaming regime is said once, with what the pipeline's fit does.
    with pytest.warns(TreeCVRegimeWarning, match="fits each step on all rows"):
        tree_cross_validate(_scaled_sgd(), X, y, cv=3, return_run_info=True)


# -- every door --------------------------------------------------------------------
def test_every_door_streams_a_frame_through_a_column_transformer(cancer):
    X, y = cancer
    frame = _frame(X, y)
    cv = TreeCVSplitter(4)
    direct = tree_cross_validate(
        _columns_pipeline(),
        frame,
        y,
        cv=cv,
        return_estimator=True,
        return_run_info=True,
    )
    assert direct["backend"] == "python_tree"
    assert list(direct["estimator"][0].feature_names_in_) == list(frame.columns)
    grid = {"sgdclassifier__alpha": [1e-4]}
    search = TreeCVSearchCV(_columns_pipeline(), grid, cv=cv).fit(frame, y)
    sklearn_grid = GridSearchCV(
        TreeCVEstimator(_columns_pipeline(), batch_size=STREAM_BATCH_SIZE, cache=None),
        {"estimator__sgdclassifier__alpha": [1e-4]},
        cv=cv,
    ).fit(frame, y)
    objective = TreeCVObjective(
        _columns_pipeline(),
        {"sgdclassifier__alpha": CategoricalDistribution([1e-4])},
        frame,
        y,
        cv=cv,
    )
    value = objective(FixedTrial({"sgdclassifier__alpha": 1e-4}))
    mean = direct["test_score"].mean()
    assert search.best_score_ == pytest.approx(mean, abs=1e-12)
    assert sklearn_grid.best_score_ == pytest.approx(mean, abs=1e-12)
    assert value == pytest.approx(mean, abs=1e-12)
    assert list(search.feature_names_in_) == list(frame.columns)
    # The study's model: trained as its trials scored it, on all rows.
    study = optuna.create_study(direction="maximize")
    study.enqueue_trial({"sgdclassifier__alpha": 1e-4})
    study.optimize(objective, n_trials=1)
    model = refit_estimator(study, _columns_pipeline(), frame, y)
    assert isinstance(model, TreeCVEstimator)
    assert model.predict(frame.iloc[:5]).shape == (5,)


@pytest.mark.parametrize(
    "transformer",
    [
        MinMaxScaler(),
        IncrementalPCA(n_components=5),
        FunctionTransformer(np.log1p),
        PolynomialFeatures(2),
        SimpleImputer(strategy="constant", fill_value=0.0),
        FeatureUnion([("scale", StandardScaler()), ("pca", IncrementalPCA(3))]),
    ],
    ids=lambda t: type(t).__name__,
)
def test_streamable_steps_run_the_tree(cancer, transformer):
    X, y = cancer
    pipeline = make_pipeline(
        clone(transformer), StandardScaler(), SGDClassifier(random_state=0)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", TreeCVFallbackWarning)
        result = tree_cross_validate(pipeline, X[:, :8], y, cv=4, return_run_info=True)
    assert result["backend"] == "python_tree"
    assert np.all(result["test_score"] > 0.6)


# -- steps that cannot stream: the fallback names them -------------------------------
@pytest.mark.parametrize(
    "step, words",
    [
        (SimpleImputer(strategy="median"), "strategy='median' is learnt from all"),
        (SimpleImputer(strategy="mean"), "a sum over rows, which could stream exactly"),
        (SelectFromModel(LogisticRegression()), "SelectFromModel.fit learns from all"),
        (TargetEncoder(), "TargetEncoder.fit learns from all"),
    ],
    ids=lambda v: type(v).__name__ if not isinstance(v, str) else "",
)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_step_that_cannot_stream_is_named(cancer, step, words):
    X, y = cancer
    pipeline = make_pipeline(step, SGDClassifier(random_state=0))
    name = pipeline.steps[0][0]
    with pytest.warns(TreeCVFallbackWarning, match=f"its step '{name}'") as caught:
        result = tree_cross_validate(pipeline, X[:, :5], y, cv=3, return_run_info=True)
    assert words in str(caught[0].message)
    assert result["backend"] == "standard"
    with pytest.raises(TypeError, match=f"method='treecv' cannot run Pipeline.*{name}"):
        tree_cross_validate(
            pipeline, X[:, :5], y, cv=3, method="treecv", return_run_info=True
        )


def test_a_final_step_without_partial_fit_falls_back(cancer, capsys):
    # As for the bare learner: every backend would score its fit, so standard CV
    # runs it without a warning, said at verbose > 0 and recorded.
    X, y = cancer
    pipeline = make_pipeline(StandardScaler(), LogisticRegression())
    with warnings.catch_warnings():
        warnings.simplefilter("error", TreeCVFallbackWarning)
        result = tree_cross_validate(pipeline, X, y, cv=3, return_run_info=True)
        assert result["backend"] == "standard"
        tree_cross_validate(pipeline, X, y, cv=3, verbose=1)
    assert "final step 'logisticregression'" in capsys.readouterr().out


def test_an_encoder_after_another_step_cannot_fix_its_categories(cancer):
    X, y = cancer
    frame = _frame(X, y)[["colour"]]
    pipeline = make_pipeline(
        FunctionTransformer(), OneHotEncoder(), SGDClassifier(random_state=0)
    )
    with pytest.warns(TreeCVFallbackWarning, match="categories='auto' is learnt"):
        tree_cross_validate(pipeline, frame, y, cv=3, return_run_info=True)


# -- StreamingPipeline itself ---------------------------------------------------------
def test_streaming_pipeline_routes_step_parameters(cancer):
    X, y = cancer
    weights = np.linspace(0.5, 2.0, len(y))
    model = StreamingPipeline([("scale", StandardScaler()), ("nb", GaussianNB())])
    model.partial_fit(X, y, classes=[0, 1], nb__sample_weight=weights)
    reference = GaussianNB().fit(StandardScaler().fit_transform(X), y, weights)
    assert_allclose(model[-1].theta_, reference.theta_)
    with pytest.raises(ValueError, match="'<step>__<param>'"):
        StreamingPipeline([("nb", GaussianNB())]).partial_fit(
            X, y, classes=[0, 1], sample_weight=weights
        )
    auto = StreamingPipeline([("hot", OneHotEncoder()), ("nb", GaussianNB())])
    with pytest.raises(ValueError, match="cannot stream: its step 'hot'"):
        auto.partial_fit(X[:, :1].astype(int), y, classes=[0, 1])
