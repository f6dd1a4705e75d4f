"""The backend contract, checked on every backend (in the spirit of
``parametrize_with_checks``): leaf stream and split numbering, stopping from the
callback, engine extras, ``return_estimator``, multi-metric scoring and
``n_jobs`` equality. A new backend gets these checks by adding one case."""

from __future__ import annotations

import gc
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import make_classification
from sklearn.linear_model import RidgeClassifier, SGDClassifier
from sklearn.metrics import get_scorer
from sklearn.model_selection import StratifiedKFold
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ext import (
    AlphaSeededSVC,
    PegasosClassifier,
    SemiSupervisedAnomalyDetector,
    tree_cross_validate,
)
from sklearn_ext.model_selection import (
    ExactStatisticsBackend,
    FoldPlan,
    LeafTable,
    NativeTreeBackend,
    PythonTreeBackend,
    StandardBackend,
    choose_backend,
)
from sklearn_ext.svm import AlphaSeedingBackend

K = 6

# The contract runs SGDClassifier through the tree on purpose: its regime note is
# expected (tests/test_search_parity.py checks that it is given).
pytestmark = pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")


def _classification():
    X, y = make_classification(
        n_samples=240, n_features=8, n_informative=5, random_state=0
    )
    return StandardScaler().fit_transform(X), y


def _anomalies():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(220, 4)), rng.normal(3.0, 1.0, size=(20, 4))])
    y = np.r_[np.ones(220, dtype=int), -np.ones(20, dtype=int)]
    order = rng.permutation(len(y))
    return X[order], y[order]


# (id, backend, estimator factory, data factory, metrics for multi-metric scoring)
CASES = [
    (
        "python_tree",
        PythonTreeBackend(),
        lambda: SGDClassifier(random_state=0),
        _classification,
        ["accuracy", "balanced_accuracy"],
    ),
    (
        "standard",
        StandardBackend(),
        lambda: SGDClassifier(random_state=0),
        _classification,
        ["accuracy", "balanced_accuracy"],
    ),
    (
        "native_tree",
        NativeTreeBackend(),
        lambda: PegasosClassifier(alpha=1e-2),
        _classification,
        ["accuracy", "balanced_accuracy"],
    ),
    (
        "native_tree_ssad",
        NativeTreeBackend(),
        lambda: SemiSupervisedAnomalyDetector(
            n_components=20, gamma=0.2, random_state=0
        ),
        _anomalies,
        ["accuracy", "balanced_accuracy"],
    ),
    (
        "alpha_seeding",
        AlphaSeedingBackend(),
        lambda: AlphaSeededSVC(C=1.0, gamma=0.1),
        _classification,
        ["accuracy", "balanced_accuracy"],
    ),
    (
        "exact",
        ExactStatisticsBackend(),
        lambda: GaussianNB(),
        _classification,
        ["accuracy", "balanced_accuracy"],
    ),
    (
        "exact_least_squares",
        ExactStatisticsBackend(),
        lambda: RidgeClassifier(alpha=1.0),
        _classification,
        ["accuracy", "balanced_accuracy"],
    ),
    (
        "exact_scaled",
        ExactStatisticsBackend(),
        lambda: make_pipeline(StandardScaler(), RidgeClassifier(alpha=1.0)),
        _classification,
        ["accuracy", "balanced_accuracy"],
    ),
]
IDS = [case[0] for case in CASES]


def _plans(y) -> dict[str, FoldPlan]:
    n_samples = len(y)
    folds = StratifiedKFold(K, shuffle=True, random_state=1).split(
        np.zeros(n_samples), y
    )
    chunks = [test for _, test in folds]
    return {
        "fixed": FoldPlan(chunks, n_samples),
        "randomized": FoldPlan(chunks, n_samples, order="randomized", seed=3),
        "interleaved": FoldPlan(chunks, n_samples, leaf_order="interleaved"),
    }


@pytest.fixture(params=CASES, ids=IDS)
def case(request):
    return request.param


def test_backend_is_the_one_auto_chooses(case):
    name, backend, make, _, _ = case
    assert backend.accepts(make())
    chosen = choose_backend(make())
    assert type(chosen) is type(backend) or name == "standard"


@pytest.mark.parametrize("plan_kind", ["fixed", "randomized", "interleaved"])
def test_leaves_are_numbered_by_split(case, plan_kind):
    """Split i of every result is the plan's split i, whatever the leaf order."""
    _, backend, make, data, _ = case
    X, y = data()
    plan = _plans(y)[plan_kind]
    seen = []
    result = tree_cross_validate(
        make(),
        X,
        y,
        cv=plan,
        method=backend,
        scoring="accuracy",
        return_estimator=True,
        leaf_callback=seen.append,
        return_run_info=True,
    )
    assert result["backend"] == backend.name
    # The stream visits the leaves in tree order and names each by its split.
    assert [leaf.split for leaf in seen] == plan.split_index.tolist()
    assert [leaf.leaf for leaf in seen] == list(range(K))
    assert all(leaf.fold == leaf.split for leaf in seen)
    for leaf in seen:
        assert result["test_score"][leaf.split] == leaf.scores["score"]
    assert sum(leaf.n_samples_fed for leaf in seen) == result["n_samples_fed"]
    # Scoring fold model i on the plan's split i reproduces test_score[i].
    scorer = get_scorer("accuracy")
    for i, (train, test) in enumerate(plan.split()):
        model = result["estimator"][i]
        assert_allclose(
            scorer(model, X[test], y[test]), result["test_score"][i], atol=1e-12
        )
        assert np.intersect1d(train, test).size == 0


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_callback_stops_the_run(case, n_jobs):
    _, backend, make, data, _ = case
    X, y = data()
    calls = []

    def stop(leaf):
        calls.append(leaf.split)
        if len(calls) == 3:
            raise KeyboardInterrupt("stop")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(KeyboardInterrupt, match="stop"):
            tree_cross_validate(
                make(),
                X,
                y,
                cv=12,
                method=backend,
                n_jobs=n_jobs,
                leaf_callback=stop,
                return_run_info=True,
            )
        gc.collect()  # Whatever the stopped run left behind is finalized here.
    assert len(calls) == 3
    # The stop is on purpose: no word of the folds it leaves unfinished (joblib's
    # "tasks ... have been cancelled" on every pruned Optuna trial).
    said = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert not [m for m in said if "cancelled" in m or "not used" in m], said


def test_extras_are_declared_and_come_out_as_columns(case):
    _, backend, make, data, _ = case
    X, y = data()
    seen = []
    result = tree_cross_validate(
        make(),
        X,
        y,
        cv=K,
        method=backend,
        leaf_callback=seen.append,
        return_run_info=True,
    )
    names = set(seen[0].extras)
    assert names <= set(type(backend).extras)
    for name in names:
        assert len(result[name]) == K
        for leaf in seen:
            value = result[name][leaf.split]
            assert np.array_equal(np.asarray(value), np.asarray(leaf.extras[name]))
    base = {"test_score", "fit_time", "score_time", "n_samples_fed", "backend"}
    # A tree scoring one pass of a learner whose fit differs adds the gap.
    assert set(result) - {"regime_gap"} == base | names


def test_return_estimator_gives_fitted_fold_models(case):
    _, backend, make, data, _ = case
    X, y = data()
    result = tree_cross_validate(
        make(), X, y, cv=K, method=backend, return_run_info=True
    )
    assert "estimator" not in result
    result = tree_cross_validate(
        make(), X, y, cv=K, method=backend, return_estimator=True, return_run_info=True
    )
    assert len(result["estimator"]) == K
    for model in result["estimator"]:
        assert model.predict(X[:5]).shape == (5,)


def test_multi_metric_scoring(case):
    _, backend, make, data, metrics = case
    X, y = data()
    single = {
        name: tree_cross_validate(
            make(), X, y, cv=K, method=backend, scoring=name, return_run_info=True
        )["test_score"]
        for name in metrics
    }
    multi = tree_cross_validate(
        make(), X, y, cv=K, method=backend, scoring=metrics, return_run_info=True
    )
    for name in metrics:
        assert_allclose(multi[f"test_{name}"], single[name], atol=1e-12)
    assert "test_score" not in multi


@pytest.mark.parametrize("plan_kind", ["fixed", "randomized"])
@pytest.mark.parametrize("scoring", ["default", "second_metric"])
def test_n_jobs_gives_the_same_scores_and_leaves(case, plan_kind, scoring):
    """Threads give the serial scores, and stream every leaf once (also where the
    leaves are scored in Python: a metric a native kernel does not compute)."""
    _, backend, make, data, metrics = case
    X, y = data()
    plan = _plans(y)[plan_kind]
    scoring = None if scoring == "default" else metrics[1]
    results = []
    for n_jobs in (1, 2):
        seen = []
        result = tree_cross_validate(
            make(),
            X,
            y,
            cv=plan,
            method=backend,
            scoring=scoring,
            n_jobs=n_jobs,
            leaf_callback=seen.append,
            return_run_info=True,
        )
        assert sorted(leaf.split for leaf in seen) == list(range(K))
        assert sum(leaf.n_samples_fed for leaf in seen) == result["n_samples_fed"]
        results.append(result)
    one, two = results
    assert_array_equal(one["test_score"], two["test_score"])
    assert one["n_samples_fed"] == two["n_samples_fed"]


def test_run_returns_a_leaf_table(case):
    """``Backend.run`` has one return shape, with or without a listener."""
    from sklearn_ext.model_selection import CVTask
    from sklearn_ext.model_selection._validation import make_scorer_dict

    _, backend, make, data, _ = case
    X, y = data()
    plan = _plans(y)["interleaved"]
    estimator = make()
    for on_leaf in (None, lambda leaf: None):
        task = CVTask(
            estimator=estimator,
            X=X,
            y=y,
            plan=plan,
            scorer=make_scorer_dict(estimator, None),
            classes=np.unique(y),
            on_leaf=on_leaf,
        )
        table = backend.run(task)
        assert isinstance(table, LeafTable)
        assert sorted(table.split.tolist()) == list(range(K))
        assert_array_equal(plan.split_index[table.leaf], table.split)
        by_split = table.by_split()
        assert by_split.split.tolist() == list(range(K))
