"""Tests of the native TreeCV engine against the Python engine."""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import is_classifier

from sklearn_ext import FoldPlan, tree_cross_validate
from sklearn_ext.linear_model import (
    LeastSquaresSGDRegressor,
    LogisticSGDClassifier,
    PegasosClassifier,
)
from sklearn_ext.model_selection import choose_backend
from sklearn_ext.model_selection._backends import (
    CVTask,
    LeafTable,
    PythonTreeBackend,
)
from sklearn_ext.model_selection._native import NativeTreeBackend
from sklearn_ext.model_selection._validation import make_fold_plan, make_scorer_dict


@pytest.fixture
def global_random_seed():
    """A fixed seed (the project's conftest may provide the same fixture)."""
    return 42


def _data(seed, n_samples=150, n_features=6, n_classes=2):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n_samples, n_features))
    X[np.abs(X) < 0.3] = 0.0
    score = X[:, 0] + 0.5 * rng.normal(size=n_samples)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return X, y


def _regression_target(X):
    return 0.1 * X[:, 0] - 0.05 * X[:, 1] + 0.3


def _task(estimator, X, y, *, cv, order, scoring=None, **kwargs):
    plan = make_fold_plan(
        cv, X, y, classifier=is_classifier(estimator), order=order, random_state=7
    )
    classes = np.unique(y) if is_classifier(estimator) else None
    kwargs.setdefault("classes", classes)
    return CVTask(
        estimator=estimator,
        X=X,
        y=y,
        plan=plan,
        scorer=make_scorer_dict(estimator, scoring),
        scoring=scoring,
        **kwargs,
    )


def _scores(leaves, name="score"):
    leaves = sorted(leaves, key=lambda leaf: leaf.fold)
    return np.array([leaf.scores[name] for leaf in leaves])


CASES = [
    (PegasosClassifier(alpha=1e-2), 2, None),
    (PegasosClassifier(alpha=1e-3, project=True), 3, "accuracy"),
    (LogisticSGDClassifier(alpha=1e-2), 3, None),
    (LeastSquaresSGDRegressor(), None, None),
    (LeastSquaresSGDRegressor(radius=0.5), None, "neg_mean_squared_error"),
    (LeastSquaresSGDRegressor(), None, "neg_mean_absolute_error"),
]


@pytest.mark.parametrize("estimator, n_classes, scoring", CASES)
@pytest.mark.parametrize("order", ["fixed", "randomized"])
@pytest.mark.parametrize("container", ["dense", "csr", "float32"])
def test_native_equals_python_engine(
    estimator, n_classes, scoring, order, container, global_random_seed
):
    X, y = _data(global_random_seed, n_classes=n_classes or 2)
    if n_classes is None:
        y = _regression_target(X)
    if container == "csr":
        X = sp.csr_matrix(X)
    elif container == "float32":
        X = X.astype(np.float32)
    task = _task(estimator, X, y, cv=9, order=order, scoring=scoring)
    python = PythonTreeBackend().run(task)
    native = NativeTreeBackend().run(task)
    assert isinstance(native, LeafTable)
    assert_allclose(_scores(native), _scores(python), rtol=0, atol=1e-12)
    assert_array_equal(
        [leaf.n_samples_fed for leaf in sorted(native, key=lambda leaf: leaf.fold)],
        [leaf.n_samples_fed for leaf in python],
    )
    assert sum(leaf.n_samples_fed for leaf in native) == task.plan.n_samples_fed()


@pytest.mark.parametrize("order", ["fixed", "randomized"])
@pytest.mark.parametrize("n_jobs", [2, 3])
def test_threads_give_the_same_scores(order, n_jobs, global_random_seed):
    X, y = _data(global_random_seed, n_classes=3)
    estimator = PegasosClassifier(alpha=1e-2)
    serial = NativeTreeBackend().run(_task(estimator, X, y, cv=11, order=order))
    task = _task(estimator, X, y, cv=11, order=order, n_jobs=n_jobs)
    threaded = NativeTreeBackend().run(task)
    assert_array_equal(_scores(threaded), _scores(serial))
    assert sum(leaf.n_samples_fed for leaf in threaded) == task.plan.n_samples_fed()


@pytest.mark.parametrize("order", ["fixed", "randomized"])
def test_leave_one_out_equals_python_engine(order, global_random_seed):
    X, y = _data(global_random_seed, n_samples=40)
    task = _task(LogisticSGDClassifier(alpha=1e-2), X, y, cv=40, order=order)
    assert_array_equal(
        _scores(NativeTreeBackend().run(task)), _scores(PythonTreeBackend().run(task))
    )


@pytest.mark.parametrize(
    "estimator, scoring",
    [
        (LogisticSGDClassifier(alpha=1e-2), "neg_log_loss"),
        (PegasosClassifier(alpha=1e-2), "balanced_accuracy"),
        (PegasosClassifier(alpha=1e-2), ["accuracy", "f1_macro"]),
        (LeastSquaresSGDRegressor(), "explained_variance"),
    ],
)
def test_other_metrics_fall_back_to_the_scorer(estimator, scoring, global_random_seed):
    X, y = _data(global_random_seed, n_classes=3)
    if not is_classifier(estimator):
        y = _regression_target(X)
    task = _task(
        estimator, sp.csr_matrix(X), y, cv=6, order="randomized", scoring=scoring
    )
    native = NativeTreeBackend().run(task)
    python = PythonTreeBackend().run(task)
    for name in python[0].scores:
        assert_allclose(_scores(native, name), _scores(python, name), atol=1e-12)


def test_tree_cross_validate_picks_the_native_tree(global_random_seed):
    X, y = _data(global_random_seed)
    assert choose_backend(PegasosClassifier()).name == "native_tree"
    result = tree_cross_validate(PegasosClassifier(alpha=1e-2), X, y, cv=5)
    assert result["backend"] == "native_tree"
    assert result["test_score"].shape == (5,)
    assert set(result) == {
        "fit_time",
        "score_time",
        "test_score",
        "n_samples_fed",
        "backend",
    }
    standard = tree_cross_validate(
        PegasosClassifier(alpha=1e-2), X, y, cv=5, method="standard"
    )
    assert standard["backend"] == "standard"


def test_return_estimator_rebuilds_the_fold_models(global_random_seed):
    X, y = _data(global_random_seed, n_classes=3)
    task = _task(
        LogisticSGDClassifier(alpha=1e-2),
        X,
        y,
        cv=5,
        order="fixed",
        return_estimator=True,
    )
    native = NativeTreeBackend().run(task)
    python = PythonTreeBackend().run(task)
    for a, b in zip(native, python, strict=True):
        assert_array_equal(a.estimator.coef_, b.estimator.coef_)
        assert_array_equal(a.estimator.intercept_, b.estimator.intercept_)
        assert_array_equal(a.estimator.predict(X), b.estimator.predict(X))


def test_training_part_lacking_a_class(global_random_seed):
    X, y = _data(global_random_seed)
    y = y.copy()
    y[:3] = 2  # class 2 lives in the first chunk only
    # Contiguous chunks (too few of class 2 to stratify): fold 0 trains without it.
    task = _task(PegasosClassifier(alpha=1e-2), X, y, cv=5, order="fixed")
    assert_allclose(
        _scores(NativeTreeBackend().run(task)),
        _scores(PythonTreeBackend().run(task)),
        atol=1e-12,
    )
    result = tree_cross_validate(
        PegasosClassifier(alpha=1e-2), X, y, cv=5, classes=[0, 1, 2, 3]
    )
    assert result["backend"] == "native_tree"


def test_sample_weight_and_unsupported_fit_params(global_random_seed):
    X, y = _data(global_random_seed)
    target = _regression_target(X)
    weight = np.random.RandomState(global_random_seed).uniform(0.1, 2, len(X))
    task = _task(
        LeastSquaresSGDRegressor(),
        X,
        target,
        cv=6,
        order="randomized",
        fit_params={"sample_weight": weight},
    )
    assert_allclose(
        _scores(NativeTreeBackend().run(task)),
        _scores(PythonTreeBackend().run(task)),
        atol=1e-12,
    )
    with pytest.raises(ValueError, match="supports only sample_weight in fit_params"):
        tree_cross_validate(
            LeastSquaresSGDRegressor(), X, target, fit_params={"coef_init": 1}
        )


def test_bad_parameters_are_reported_by_the_native_tree(global_random_seed):
    X, y = _data(global_random_seed)
    with pytest.raises(ValueError, match="The 'alpha' parameter of PegasosClassifier"):
        tree_cross_validate(PegasosClassifier(alpha=-1), X, y)


def test_columnar_results_follow_the_split_order(global_random_seed):
    X, y = _data(global_random_seed)
    chunks = np.array_split(np.arange(len(X)), 8)
    plan = FoldPlan(chunks, len(X), leaf_order="interleaved")
    native = tree_cross_validate(PegasosClassifier(alpha=1e-2), X, y, cv=plan)
    python = tree_cross_validate(
        PegasosClassifier(alpha=1e-2), X, y, cv=plan, method=PythonTreeBackend()
    )
    assert native["backend"] == "native_tree"
    assert python["backend"] == "python_tree"
    assert_array_equal(native["test_score"], python["test_score"])
    assert native["n_samples_fed"] == python["n_samples_fed"] == plan.n_samples_fed()
