"""Tests of the native TreeCV engine against the Python engine."""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone, is_classifier
from sklearn.linear_model import SGDClassifier

from sklearn_ext import SemiSupervisedAnomalyDetector, tree_cross_validate
from sklearn_ext._fast import _ssad, _tree
from sklearn_ext.anomaly._labels import auroc
from sklearn_ext.linear_model import (
    LeastSquaresSGDRegressor,
    LogisticSGDClassifier,
    PegasosClassifier,
)
from sklearn_ext.model_selection._backends import (
    CVTask,
    LeafTable,
    PythonTreeBackend,
)
from sklearn_ext.model_selection._native import NativeTreeBackend
from sklearn_ext.model_selection._validation import (
    make_fold_plan,
    make_scorer_dict,
    native_metric,
)


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
        metric=native_metric(estimator, scoring),
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
        PegasosClassifier(alpha=1e-2),
        X,
        y,
        cv=5,
        classes=[0, 1, 2, 3],
        return_run_info=True,
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
            LeastSquaresSGDRegressor(),
            X,
            target,
            fit_params={"coef_init": 1},
            return_run_info=True,
        )


def test_bad_parameters_are_reported_by_the_native_tree(global_random_seed):
    X, y = _data(global_random_seed)
    with pytest.raises(ValueError, match="The 'alpha' parameter of PegasosClassifier"):
        tree_cross_validate(PegasosClassifier(alpha=-1), X, y, return_run_info=True)


# -- the engine's model interface (sklearn_ext._fast._tree) ---------------------------
def _ssad_arrays(seed):
    """Features rounded to one decimal (so decisions tie) and labels with zeros."""
    rng = np.random.RandomState(seed)
    phi = np.round(rng.uniform(-1, 1, size=(90, 4)), 1)
    y_true = np.where(rng.rand(90) < 0.3, -1.0, 1.0)
    y_true[:10] = 0.0
    return phi, y_true


def _kernels(seed):
    """An SGD kernel (dense float32) and an SSAD kernel scoring its leaves in C."""
    X, y = _data(seed, n_samples=90, n_classes=3)
    estimator = PegasosClassifier(alpha=1e-2)
    sgd_task = _task(estimator, X.astype(np.float32), y, cv=7, order="randomized")
    sgd, _ = clone(estimator)._native_model(sgd_task)
    phi, y_true = _ssad_arrays(seed)
    ssad = _ssad.SSADModel(3.0, 2.0, 1.0, phi, y_true, y_true)
    return [(sgd, sgd_task.plan), (ssad, sgd_task.plan)]


def _state_on_the_path(model, plan, leaf):
    """The leaf's model, fed node by node from the root with ``feed_child``."""
    state, node = model.new_state(), plan.root
    while node[0] != node[1]:
        child = next(c for c in plan.children(*node) if c[0] <= leaf <= c[1])
        _tree.feed_child(
            model,
            state,
            plan.sample_order,
            plan.bounds,
            *node,
            *child,
            plan.order == "randomized",
            plan.seed or 0,
        )
        node = child
    return state


def _columns(k):
    """scores, n_fed, fit_time, score_time and the stop flag of a walk."""
    return (
        np.full(k, np.nan),
        np.zeros(k, dtype=np.int64),
        np.zeros(k),
        np.zeros(k),
        np.zeros(1, dtype=np.intc),
    )


def _walk(model, plan, node, columns, callback, carried_fed=0):
    randomized = plan.order == "randomized"
    return _tree.run_subtree(
        model,
        model.new_state(),
        plan.sample_order,
        plan.bounds,
        *node,
        randomized,
        plan.seed or 0,
        *columns,
        callback,
        carried_fed,
    )


@pytest.mark.parametrize("which", [0, 1], ids=["sgd", "ssad"])
def test_the_walker_drives_every_kernel_by_one_contract(which, global_random_seed):
    model, plan = _kernels(global_random_seed)[which]
    k = plan.n_splits
    columns = _columns(k)
    scores, n_fed, _, _, stop = columns
    seen = []

    def callback(leaf, state):
        # The leaf's columns are written before the callback runs.
        seen.append((leaf, np.array(state), n_fed[leaf], scores[leaf]))

    # 5 rows fed above this subtree: counted by its first leaf.
    error = _walk(model, plan, (0, k - 1), columns, callback, carried_fed=5)
    assert error is None and stop[0] == 0
    assert [leaf for leaf, *_ in seen] == list(range(k))
    assert n_fed.sum() == plan.n_samples_fed() + 5
    for leaf, state, fed, score in seen:
        assert fed == n_fed[leaf] > 0
        assert_array_equal(state, _state_on_the_path(model, plan, leaf))
        test = plan.sample_order[plan.bounds[leaf] : plan.bounds[leaf + 1]]
        assert_array_equal(score, model.score_rows(state, test))
    assert np.isfinite(scores).sum() >= k - 1


def test_a_raising_callback_stops_every_walker_sharing_the_flag(global_random_seed):
    model, plan = _kernels(global_random_seed)[0]
    k = plan.n_splits
    columns = _columns(k)
    stop = columns[-1]
    calls = []

    class Stop(Exception):
        pass

    def callback(leaf, state):
        calls.append(leaf)
        if len(calls) == 2:
            raise Stop

    assert isinstance(_walk(model, plan, (0, 3), columns, callback), Stop)
    assert stop[0] == 1 and calls == [0, 1]  # The exception is returned, not raised.
    # Another subtree sharing the flag stops too.
    assert _walk(model, plan, (4, k - 1), columns, callback) is None
    assert calls == [0, 1]


def test_the_ssad_kernel_scores_the_auroc_of_the_python_engine(global_random_seed):
    model, _ = _kernels(global_random_seed)[1]
    phi, y_true = _ssad_arrays(global_random_seed)
    rng = np.random.RandomState(global_random_seed)
    state = model.new_state()
    state[[1, 2]] = 1.0, 0.1
    state[_ssad.OFFSET :] = np.round(rng.normal(size=4), 1)
    rows = np.arange(90, dtype=np.intp)[::-1].copy()
    keep = y_true[rows] != 0
    expected = auroc(y_true[rows][keep] > 0, _ssad.decision(state, phi[rows][keep]))
    assert model.score_rows(state, rows) == expected
    one_class = rows[y_true[rows] > 0]
    assert np.isnan(model.score_rows(state, one_class))


def test_the_engine_checks_its_arguments(global_random_seed):
    model, plan = _kernels(global_random_seed)[0]
    with pytest.raises(ValueError, match=r"\(0, 1\) is not a child of the node"):
        _tree.feed_child(
            model, model.new_state(), plan.sample_order, plan.bounds, 0, 6, 0, 1, 0, 0
        )
    with pytest.raises(ValueError, match="A state of SGDModel has"):
        model.feed_rows(np.zeros(3), np.arange(2, dtype=np.intp))
    with pytest.raises(ValueError, match=r"\(0, 7\) is not a node of the fold plan"):
        _tree.run_subtree(
            model,
            model.new_state(),
            plan.sample_order,
            plan.bounds,
            0,
            7,
            0,
            0,
            *_columns(7),
        )


def test_any_estimator_with_a_native_model_runs_on_the_native_tree():
    assert NativeTreeBackend.accepts(PegasosClassifier())
    assert NativeTreeBackend.accepts(SemiSupervisedAnomalyDetector())
    assert not NativeTreeBackend.accepts(SGDClassifier())


@pytest.mark.parametrize("scoring", [None, "f1_macro"])
@pytest.mark.parametrize("n_jobs", [None, 2])
def test_overflowing_models_raise_the_learners_error(scoring, n_jobs):
    X, y = _data(0, n_samples=120)
    X = X + 1.0  # no zero rows
    with pytest.raises(ValueError, match=r"overflowed .* step size \(eta_t"):
        tree_cross_validate(
            PegasosClassifier(),
            X * 1e150,
            y,
            cv=8,
            scoring=scoring,
            n_jobs=n_jobs,
            return_run_info=True,
        )
    with pytest.raises(ValueError, match="squared row norms overflow"):
        tree_cross_validate(
            PegasosClassifier(), X * 1e300, y, cv=8, n_jobs=n_jobs, return_run_info=True
        )


def test_the_walker_stops_at_a_non_finite_state():
    X, y = _data(0, n_samples=60)
    task = _task(PegasosClassifier(), (X + 1.0) * 1e150, y, cv=4, order="fixed")
    model, _ = clone(task.estimator)._native_model(task)
    columns = _columns(4)
    calls = []
    error = _walk(model, task.plan, (0, 3), columns, lambda *args: calls.append(args))
    assert isinstance(error, _tree.NonFiniteState) and columns[-1][0] == 1
    assert error.leaf == 0 and not np.all(np.isfinite(error.state))
    assert calls == [] and np.isnan(columns[0]).all()  # Neither scored nor reported.
