"""The tree level by level (issue 37): each level a complete CV over all rows.

Each level's estimate is checked against a hand-made CV over the level's node
partition (a clone of the learner fed each node's training rows in the tree's
order, scored on the node's rows); the final level against the depth-first run.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone, is_classifier
from sklearn.datasets import make_classification
from sklearn.linear_model import SGDClassifier
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score, r2_score
from sklearn.model_selection import LeaveOneOut
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler, StandardScaler

from sklearn_ext import (
    LeastSquaresSGDRegressor,
    LevelEstimate,
    LogisticSGDClassifier,
    PegasosClassifier,
    SemiSupervisedAnomalyDetector,
    tree_cross_validate,
)
from sklearn_ext.model_selection import (
    NativeTreeBackend,
    PythonTreeBackend,
    StandardBackend,
)
from sklearn_ext.model_selection._core import RunCore
from sklearn_ext.model_selection._levels import n_levels

pytestmark = pytest.mark.filterwarnings(
    "ignore::sklearn_ext.TreeCVRegimeWarning",
    "ignore::sklearn_ext.TreeCVOrderWarning",
)


def _data(n_samples=320, seed=0):
    X, y = make_classification(
        n_samples=n_samples, n_features=6, n_informative=4, random_state=seed
    )
    return StandardScaler().fit_transform(X), y


def _sgd():
    return SGDClassifier(max_iter=1, tol=None, shuffle=False, random_state=0)


def _core(estimator, X, y, backend, cv, order="fixed", **kwargs):
    core = RunCore(
        estimator, X, y, cv=cv, method=backend, order=order, random_state=3, **kwargs
    )
    return core, core.resolve(estimator)


def _nodes_by_level(plan):
    """Each level's nodes, left to right, shallower leaves carried."""
    nodes, levels = [plan.root], []
    while any(s != e for s, e in nodes):
        nodes = [
            child
            for s, e in nodes
            for child in ([(s, e)] if s == e else plan.children(s, e))
        ]
        levels.append(nodes)
    return levels


def _path(plan, node):
    """The nodes from the root's child down to ``node`` (what it was fed)."""
    path = plan.path(node[0])
    return path[1 : path.index(node) + 1]


def _hand_made(estimator, X, y, plan, node, metrics):
    """The node's model by hand: fed its path's rows in order, scored on its rows."""
    model = clone(estimator)
    classes = np.unique(y) if is_classifier(model) else None
    for i, step in enumerate(_path(plan, node)):
        rows = plan.feed(*step)
        if i == 0 and classes is not None:
            model.partial_fit(X[rows], y[rows], classes=classes)
        else:
            model.partial_fit(X[rows], y[rows])
    test = plan.chunk_rows(*node)
    predicted = model.predict(X[test])
    return {name: metric(y[test], predicted) for name, metric in metrics.items()}


BACKENDS = {
    "python": (PythonTreeBackend(), _sgd),
    "python-noshortcuts": (PythonTreeBackend(shortcuts=False), _sgd),
    "native": (NativeTreeBackend(), lambda: PegasosClassifier(random_state=0)),
}


@pytest.mark.parametrize("engine", list(BACKENDS))
@pytest.mark.parametrize("order", ["fixed", "randomized"])
@pytest.mark.parametrize("k", [2, 5, 10, 16])
def test_each_level_is_a_hand_made_cv_of_its_nodes(engine, order, k):
    X, y = _data()
    backend, make = BACKENDS[engine]
    estimator = make()
    core, resolved = _core(estimator, X, y, backend, k, order)
    levels = list(core.run_levels(resolved))
    expected_nodes = _nodes_by_level(core.plan)
    assert [lv.level for lv in levels] == list(range(1, len(expected_nodes) + 1))
    assert len(levels) == n_levels(core.plan)
    assert [lv.final for lv in levels] == [False] * (len(levels) - 1) + [True]
    metrics = {"score": accuracy_score}
    for level, nodes in zip(levels, expected_nodes, strict=True):
        assert level.n_parts == len(nodes)
        hand = [_hand_made(estimator, X, y, core.plan, n, metrics) for n in nodes]
        sizes = [len(core.plan.chunk_rows(*n)) for n in nodes]
        assert_array_equal(level.part_sizes, sizes)
        assert level.part_sizes.sum() == len(X)  # every row scored, once
        assert_array_equal(level.part_scores["score"], [h["score"] for h in hand])
        assert level.scores["score"] == pytest.approx(
            np.average([h["score"] for h in hand], weights=sizes), rel=1e-12
        )
        assert (level.leaves is not None) == level.final


@pytest.mark.parametrize("engine", list(BACKENDS))
@pytest.mark.parametrize("cv", [5, 10, 16, "loo"])
def test_the_final_level_is_the_depth_first_run(engine, cv):
    X, y = _data(n_samples=24 if cv == "loo" else 320)
    cv = LeaveOneOut() if cv == "loo" else cv
    backend, make = BACKENDS[engine]
    core, resolved = _core(make(), X, y, backend, cv, "randomized")
    *_, final = core.run_levels(resolved)
    ours, theirs = final.leaves.by_split(), core.run(resolved).by_split()
    assert_array_equal(ours.split, theirs.split)
    assert_array_equal(ours.leaf, theirs.leaf)
    assert_array_equal(ours.scores["score"], theirs.scores["score"])
    assert_array_equal(ours.n_samples_fed, theirs.n_samples_fed)
    assert final.n_samples_fed == core.plan.n_samples_fed()
    assert final.n_parts == core.plan.n_splits


def test_the_rows_scored_at_each_level_partition_the_data():
    # The scorer sees the rows by an id column: each level scores each row once.
    X, y = _data()
    X = np.column_stack([X, np.arange(len(X))])
    seen: list[np.ndarray] = []

    def scorer(model, X_test, y_test):
        seen.append(X_test[:, -1].astype(int))
        return 0.0

    core, resolved = _core(GaussianNB(), X, y, PythonTreeBackend(), 10, scoring=scorer)
    scored_rows: dict[tuple, np.ndarray] = {}
    for level, nodes in zip(
        core.run_levels(resolved), _nodes_by_level(core.plan), strict=True
    ):
        new = [n for n in nodes if n not in scored_rows]
        assert len(seen) == len(new)  # carried leaves are not scored again
        for node, rows in zip(new, seen, strict=True):
            scored_rows[node] = rows
        assert level.n_parts == len(nodes)
        every = np.concatenate([scored_rows[n] for n in nodes])
        assert_array_equal(np.sort(every), np.arange(len(X)))
        seen.clear()


def test_python_and_native_engines_give_the_same_levels():
    X, y = _data()
    est = PegasosClassifier(random_state=0)
    native = list(_levels_of(est, X, y, NativeTreeBackend(), 10))
    python = list(_levels_of(est, X, y, PythonTreeBackend(), 10))
    for a, b in zip(native, python, strict=True):
        assert_array_equal(a.part_scores["score"], b.part_scores["score"])
        assert_array_equal(a.part_sizes, b.part_sizes)
        assert a.n_samples_fed == b.n_samples_fed


def _levels_of(estimator, X, y, backend, cv, order="randomized", **kwargs):
    core, resolved = _core(estimator, X, y, backend, cv, order, **kwargs)
    return core.run_levels(resolved)


class _Counted(GaussianNB):
    """GaussianNB counting the rows fed and its live trained models."""

    fed = 0
    live: weakref.WeakSet = weakref.WeakSet()

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        type(self).fed += len(X)
        type(self).live.add(self)
        return super().partial_fit(X, y, classes=classes)


def test_closing_the_walk_stops_feeding():
    X, y = _data()
    _Counted.fed = 0
    levels = _levels_of(_Counted(), X, y, PythonTreeBackend(), 16)
    first = next(levels)
    assert first.level == 1 and first.n_samples_fed == len(X) == _Counted.fed
    levels.close()
    assert _Counted.fed == len(X)
    # An exception thrown in between levels (a pruned trial) stops it too.
    _Counted.fed = 0
    levels = _levels_of(_Counted(), X, y, PythonTreeBackend(), 16)
    second = [next(levels), next(levels)][1]
    with pytest.raises(KeyError, match="pruned"):
        levels.throw(KeyError("pruned"))
    assert _Counted.fed == second.n_samples_fed == 2 * len(X)
    with pytest.raises(StopIteration):
        next(levels)


@pytest.mark.parametrize("k", [10, 16])
def test_the_walk_keeps_one_model_per_node_of_a_level(k):
    X, y = _data()
    _Counted.live = weakref.WeakSet()
    levels = _levels_of(_Counted(), X, y, PythonTreeBackend(), k)
    plan = RunCore(_Counted(), X, y, cv=k).plan
    internal = [sum(s != e for s, e in nodes) for nodes in _nodes_by_level(plan)]
    live = []
    for _ in levels:
        gc.collect()
        live.append(len(_Counted.live))
    # One model per node still to grow; a leaf drops its model once scored.
    assert live == internal
    # O(k), where the depth-first walk keeps O(log k): the widest level's.
    assert max(live) >= k // 4 + 1


def test_multi_metric_levels():
    X, y = _data()
    est = _sgd()
    scoring = ["accuracy", "balanced_accuracy"]
    core, resolved = _core(est, X, y, PythonTreeBackend(), 8, scoring=scoring)
    metrics = {"accuracy": accuracy_score, "balanced_accuracy": balanced_accuracy_score}
    for level, nodes in zip(
        core.run_levels(resolved), _nodes_by_level(core.plan), strict=True
    ):
        assert set(level.scores) == set(scoring)
        hand = [_hand_made(est, X, y, core.plan, n, metrics) for n in nodes]
        for name in scoring:
            assert_allclose(
                level.part_scores[name], [h[name] for h in hand], rtol=1e-12
            )


class _FailsAtLevel2(GaussianNB):
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        self.calls_ = getattr(self, "calls_", 0) + 1
        if self.calls_ == 2:
            raise ValueError("a failed fit")
        return super().partial_fit(X, y, classes=classes)


def test_a_failed_fit_ends_with_a_final_level_of_error_scores():
    X, y = _data()
    levels = list(_levels_of(_FailsAtLevel2(), X, y, PythonTreeBackend(), 8))
    assert [lv.final for lv in levels] == [False, True]
    final = levels[-1]
    assert np.isnan(final.scores["score"]) and final.n_parts == 8
    assert final.leaves.fit_error is not None
    assert final.n_samples_fed == levels[0].n_samples_fed
    with pytest.raises(ValueError, match="a failed fit"):
        list(
            _levels_of(
                _FailsAtLevel2(), X, y, PythonTreeBackend(), 8, error_score="raise"
            )
        )


def test_a_backend_without_levels_gives_one_final_level_and_a_note():
    X, y = _data()
    core, resolved = _core(_sgd(), X, y, StandardBackend(), 5)
    (level,) = core.run_levels(resolved)
    table = core.run(resolved)
    assert level.final and level.n_parts == 5 and level.level == 3
    assert_array_equal(
        level.leaves.by_split().scores["score"], table.by_split().scores["score"]
    )
    assert any("no levels" in note for note in core.notes)


def test_a_leaf_callback_sees_every_leaf_and_may_stop_the_walk():
    X, y = _data()
    core, resolved = _core(_sgd(), X, y, PythonTreeBackend(), 5)
    seen = []
    levels = list(core.run_levels(resolved, leaf_callback=seen.append))
    assert sorted(leaf.split for leaf in seen) == list(range(5))

    def stop(leaf):
        raise KeyError("stop")

    with pytest.raises(KeyError, match="stop"):
        list(core.run_levels(resolved, leaf_callback=stop))
    assert levels[-1].final


def test_tree_cross_validate_returns_levels_only_when_asked():
    X, y = _data()
    plain = tree_cross_validate(_sgd(), X, y, cv=10, method="treecv")
    with_levels = tree_cross_validate(
        _sgd(), X, y, cv=10, method="treecv", return_levels=True
    )
    assert "levels" not in plain
    assert set(with_levels) == set(plain) | {"levels"}
    assert_array_equal(with_levels["test_score"], plain["test_score"])
    levels = with_levels["levels"]
    assert all(isinstance(level, LevelEstimate) for level in levels)
    assert [level.n_parts for level in levels] == [2, 4, 8, 10]
    final = levels[-1]
    sizes = final.part_sizes
    by_leaf = final.leaves.scores["score"][np.argsort(final.leaves.leaf)]
    assert final.scores["score"] == pytest.approx(np.average(by_leaf, weights=sizes))


@pytest.mark.parametrize("scoring", [["accuracy", "f1_macro"], "f1_macro"])
def test_native_levels_scored_in_python(scoring):
    # Metrics the kernel does not compute: each node's model rebuilt and scored.
    X, y = _data()
    est = PegasosClassifier(random_state=0)
    core, resolved = _core(
        est, X, y, NativeTreeBackend(), 6, "randomized", scoring=scoring
    )
    names = ["score"] if isinstance(scoring, str) else scoring
    metrics = {
        name: accuracy_score if name == "accuracy" else _f1_macro for name in names
    }
    levels = list(core.run_levels(resolved))
    for level, nodes in zip(levels, _nodes_by_level(core.plan), strict=True):
        hand = [_hand_made(est, X, y, core.plan, n, metrics) for n in nodes]
        for name in names:
            assert_allclose(
                level.part_scores[name], [h[name] for h in hand], rtol=1e-12
            )
    theirs = core.run(resolved).by_split()
    for name in names:
        assert_array_equal(
            levels[-1].leaves.by_split().scores[name], theirs.scores[name]
        )


def _f1_macro(y_true, y_pred):
    return f1_score(y_true, y_pred, average="macro")


def test_native_regressor_levels():
    # R^2 in the kernel (not additive over blocks of rows: scored node by node).
    X, y = _data()
    y = X[:, 0] - 0.5 * X[:, 1] + 0.1 * np.sin(np.arange(len(X)))
    est = LeastSquaresSGDRegressor(random_state=0)
    core, resolved = _core(est, X, y, NativeTreeBackend(), 10, "randomized")
    levels = list(core.run_levels(resolved))
    for level, nodes in zip(levels, _nodes_by_level(core.plan), strict=True):
        hand = [_hand_made(est, X, y, core.plan, n, {"score": r2_score}) for n in nodes]
        assert_allclose(
            level.part_scores["score"], [h["score"] for h in hand], rtol=1e-9
        )
    theirs = core.run(resolved).by_split()
    ours = levels[-1].leaves.by_split()
    assert_array_equal(ours.scores["score"], theirs.scores["score"])


@pytest.mark.parametrize("scoring", [None, "f1_macro"])
def test_native_levels_raise_the_learners_overflow_error(scoring):
    X, y = _data(n_samples=120)
    X = X + 1.0  # no zero rows
    with pytest.raises(ValueError, match=r"overflowed .* step size \(eta_t"):
        tree_cross_validate(
            PegasosClassifier(), X * 1e150, y, cv=8, scoring=scoring, return_levels=True
        )
    # Refused when the kernel is made: a failed fit too, as in the depth-first run.
    with pytest.raises(ValueError, match="squared row norms overflow"):
        tree_cross_validate(PegasosClassifier(), X * 1e300, y, return_levels=True)


def test_four_rows_at_a_time_score_as_one_row_at_a_time():
    # The kernel's decision values of dense rows come four at a time (for the
    # leaves and each level): bit-identical to one row at a time.
    X, y = _data(n_samples=203)
    for est in (PegasosClassifier(), LeastSquaresSGDRegressor()):
        est.fit(X, y if is_classifier(est) else X[:, 0])
        together = est.decision_function(X) if is_classifier(est) else est.predict(X)
        alone = [
            (est.decision_function if is_classifier(est) else est.predict)(X[i : i + 1])
            for i in range(len(X))
        ]
        assert_array_equal(together, np.concatenate(alone))


@pytest.mark.parametrize(
    "estimator",
    [
        SGDClassifier(shuffle=True, random_state=0),  # fed through TreeCVEstimator
        make_pipeline(StandardScaler(), SGDClassifier(random_state=0)),
    ],
    ids=["batched", "pipeline"],
)
def test_wrapped_learners_walk_level_by_level(estimator):
    X, y = _data()
    kwargs = dict(cv=6, method="treecv", return_run_info=True)
    plain = tree_cross_validate(estimator, X, y, **kwargs)
    ours = tree_cross_validate(estimator, X, y, return_levels=True, **kwargs)
    assert_array_equal(ours["test_score"], plain["test_score"])
    assert ours["n_samples_fed"] == plain["n_samples_fed"]
    assert [level.n_parts for level in ours["levels"]] == [2, 4, 6]
    assert all(np.isfinite(level.scores["score"]) for level in ours["levels"])


@pytest.mark.parametrize("order", ["fixed", "randomized"])
def test_a_scaled_native_pipeline_walks_level_by_level(order):
    # A scaler before a native learner runs in the native tree (its running
    # statistics in the node state): the levels agree with the Python tree's.
    X, y = _data()
    X = X * [1.0, 10.0, 0.1, 3.0, 1.0, 100.0] + 5.0
    est = make_pipeline(StandardScaler(), PegasosClassifier(random_state=0))
    native = list(_levels_of(est, X, y, "auto", 10, order=order))
    python = list(_levels_of(est, X, y, PythonTreeBackend(), 10, order=order))
    core, resolved = _core(est, X, y, "auto", 10, order)
    assert resolved.backend.name == "native_tree"
    for a, b in zip(native, python, strict=True):
        assert_allclose(a.part_scores["score"], b.part_scores["score"], rtol=1e-12)
    ours = native[-1].leaves.by_split().scores["score"]
    assert_array_equal(ours, core.run(resolved).by_split().scores["score"])


def test_native_multiclass_levels():
    # One weight vector per class (four rows at a time, for each class).
    X, y = make_classification(
        n_samples=330, n_features=6, n_informative=4, n_classes=3, random_state=1
    )
    X = StandardScaler().fit_transform(X)
    est = LogisticSGDClassifier(random_state=0)
    core, resolved = _core(est, X, y, NativeTreeBackend(), 7, "randomized")
    levels = list(core.run_levels(resolved))
    metrics = {"score": accuracy_score}
    for level, nodes in zip(levels, _nodes_by_level(core.plan), strict=True):
        hand = [_hand_made(est, X, y, core.plan, n, metrics) for n in nodes]
        assert_array_equal(level.part_scores["score"], [h["score"] for h in hand])
    theirs = core.run(resolved).by_split().scores["score"]
    assert_array_equal(levels[-1].leaves.by_split().scores["score"], theirs)


def test_native_anomaly_detector_levels():
    # The AUROC in the kernel, node by node; the leaves those of the run.
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(220, 4)), rng.normal(3.0, 1.0, size=(20, 4))])
    y = np.r_[np.ones(220, dtype=int), -np.ones(20, dtype=int)]
    order = rng.permutation(len(y))
    X, y = X[order], y[order]
    est = SemiSupervisedAnomalyDetector(n_components=20, gamma=0.2, random_state=0)
    core, resolved = _core(est, X, y, NativeTreeBackend(), 6, "fixed")
    levels = list(core.run_levels(resolved))
    assert [level.n_parts for level in levels] == [2, 4, 6]
    assert all(np.isfinite(level.scores["score"]) for level in levels)
    theirs = core.run(resolved).by_split().scores["score"]
    assert_array_equal(levels[-1].leaves.by_split().scores["score"], theirs)


# -- the early rungs -------------------------------------------------------------------
@pytest.mark.parametrize("engine", list(BACKENDS))
@pytest.mark.parametrize("order", ["fixed", "randomized"])
@pytest.mark.parametrize("k", [2, 5, 16])
def test_the_half_rung_is_a_hand_made_hold_out_estimate(engine, order, k):
    X, y = _data()
    backend, make = BACKENDS[engine]
    estimator = make()
    core, resolved = _core(estimator, X, y, backend, k, order)
    half, *levels = core.run_levels(resolved, early_rungs=1)
    plan = core.plan
    left, right = plan.children(*plan.root)
    # The root's left child: fed the right half in tree order, scored on the
    # left half (which it never saw).
    hand = _hand_made(estimator, X, y, plan, left, {"score": accuracy_score})
    assert half.partial and not half.final and half.leaves is None
    assert (half.level, half.n_parts, half.rung) == (1, 1, 0.5)
    assert half.scores["score"] == hand["score"]
    assert_array_equal(half.part_sizes, [len(plan.chunk_rows(*left))])
    assert half.n_samples_fed == len(plan.chunk_rows(*right))
    # Level 1's first part, bit for bit; the levels as without the half rung.
    first = levels[0]
    assert first.part_scores["score"][0] == half.part_scores["score"][0]
    assert first.part_sizes[0] == half.part_sizes[0]
    plain = list(core.run_levels(resolved))
    assert [lv.partial for lv in levels] == [False] * len(plain)
    for ours, theirs in zip(levels, plain, strict=True):
        assert (ours.level, ours.n_parts) == (theirs.level, theirs.n_parts)
        assert ours.scores == theirs.scores
        assert ours.n_samples_fed == theirs.n_samples_fed
        for name, values in theirs.part_scores.items():
            assert_array_equal(ours.part_scores[name], values)


@pytest.mark.parametrize("engine", list(BACKENDS))
def test_the_half_rung_leaves_the_final_level_bit_equal_to_run(engine):
    X, y = _data()
    backend, make = BACKENDS[engine]
    core, resolved = _core(make(), X, y, backend, 10, "randomized")
    *_, final = core.run_levels(resolved, early_rungs=1)
    ours, theirs = final.leaves.by_split(), core.run(resolved).by_split()
    assert_array_equal(ours.leaf, theirs.leaf)
    assert_array_equal(ours.scores["score"], theirs.scores["score"])
    assert_array_equal(ours.n_samples_fed, theirs.n_samples_fed)
    assert_array_equal(ours.fit_error, theirs.fit_error)


def test_closing_after_the_half_rung_feeds_the_first_child_only():
    X, y = _data()  # 320 rows, 16 chunks of 20: the right half is 160 rows
    _Counted.fed = 0
    levels = _counted_levels(16, early_rungs=1)
    half = next(levels)
    assert half.partial and half.n_samples_fed == _Counted.fed == len(X) // 2 == 160
    levels.close()
    assert _Counted.fed == 160  # the root's right child was never fed
    # Without the half rung the first estimate comes after one pass.
    _Counted.fed = 0
    assert next(_counted_levels(16)).n_samples_fed == _Counted.fed == len(X)


def _counted_levels(k, **kwargs):
    X, y = _data()
    core, resolved = _core(_Counted(), X, y, PythonTreeBackend(), k, "randomized")
    return core.run_levels(resolved, **kwargs)


def test_the_half_rung_of_several_metrics_and_a_backend_without_levels():
    X, y = _data()
    scoring = ["accuracy", "f1"]
    core, resolved = _core(_sgd(), X, y, PythonTreeBackend(), 8, scoring=scoring)
    half, first, *_ = core.run_levels(resolved, early_rungs=1)
    assert set(half.scores) == {"accuracy", "f1"}
    for name in scoring:
        assert half.part_scores[name][0] == first.part_scores[name][0]
    core, resolved = _core(GaussianNB(), X, y, StandardBackend(), 8)
    (only,) = core.run_levels(resolved, early_rungs=1)  # nothing to split
    assert only.final and not only.partial


def _hand_made_prefix(estimator, X, y, plan, node, share):
    """The root's child ``node`` by hand: fed the first ``share`` of its feed."""
    rows = plan.feed(*node)
    rows = rows[: round(len(rows) * share)]
    model = clone(estimator).partial_fit(X[rows], y[rows], classes=np.unique(y))
    test = plan.chunk_rows(*node)
    return accuracy_score(y[test], model.predict(X[test])), len(rows)


@pytest.mark.parametrize("order", ["fixed", "randomized"])
@pytest.mark.parametrize("k", [2, 5, 16])
def test_the_early_rungs_are_hand_made_hold_out_estimates(order, k):
    # The native tree pauses the root's left child's feed at 1/4 and 1/2 of
    # it (early_rungs=3): each pause scored on the left half, then the half
    # rung, then the levels exactly as without early rungs.
    X, y = _data()
    estimator = PegasosClassifier(random_state=0)
    core, resolved = _core(estimator, X, y, NativeTreeBackend(), k, order)
    *early, half = list(core.run_levels(resolved, early_rungs=3))[:3]
    plan = core.plan
    left, _ = plan.children(*plan.root)
    assert [(r.rung, r.feed_share) for r in [*early, half]] == [
        (0.125, 0.25),
        (0.25, 0.5),
        (0.5, 1.0),
    ]
    for rung in [*early, half]:
        score, fed = _hand_made_prefix(estimator, X, y, plan, left, rung.feed_share)
        assert rung.partial and (rung.level, rung.n_parts) == (1, 1)
        assert rung.scores["score"] == score
        assert rung.n_samples_fed == fed
        assert_array_equal(rung.part_sizes, [len(plan.chunk_rows(*left))])
    levels = list(core.run_levels(resolved, early_rungs=3))[3:]
    plain = list(core.run_levels(resolved))
    for ours, theirs in zip(levels, plain, strict=True):
        assert not ours.partial
        assert ours.scores == theirs.scores
        assert ours.n_samples_fed == theirs.n_samples_fed
    ours = levels[-1].leaves.by_split()
    theirs = core.run(resolved).by_split()
    assert_array_equal(ours.scores["score"], theirs.scores["score"])
    assert_array_equal(ours.n_samples_fed, theirs.n_samples_fed)


def test_closing_after_the_quarter_rung_feeds_a_quarter_of_the_rows():
    X, y = _data()  # 320 rows, k = 16: the quarter rung after 80 rows
    estimator = PegasosClassifier(random_state=0)
    core, resolved = _core(estimator, X, y, NativeTreeBackend(), 16, "randomized")
    levels = core.run_levels(resolved, early_rungs=2)
    quarter = next(levels)
    assert quarter.rung == 0.25 and quarter.n_samples_fed == len(X) // 4
    levels.close()


def test_an_engine_that_cannot_pause_a_feed_gives_the_half_rung_only():
    # The Python tree feeds a node's rows in one partial_fit call (a shuffled
    # epoch or a last partial batch would differ in two).
    X, y = _data()
    core, resolved = _core(_sgd(), X, y, PythonTreeBackend(), 8)
    rungs = list(core.run_levels(resolved, early_rungs=2))
    assert [r.rung for r in rungs] == [0.5, 1, 2, 3]


@pytest.mark.parametrize("engine", ["python", "native"])
@pytest.mark.parametrize("k", [2, 16])
def test_early_chunks_score_each_chunk_of_the_held_out_half(engine, k):
    # Asked for, each early rung is scored chunk by chunk as well (a paired
    # test over chunks compares two early rungs on any metric).
    X, y = _data()
    backend, make = BACKENDS[engine]
    estimator = make()
    core, resolved = _core(estimator, X, y, backend, k, "randomized")
    rungs = list(core.run_levels(resolved, early_rungs=2, early_chunks=True))
    plan = core.plan
    left, _ = plan.children(*plan.root)
    early = [r for r in rungs if r.partial]
    assert len(early) == (2 if engine == "native" else 1)
    for rung in early:
        rows = plan.feed(*left)
        rows = rows[: round(len(rows) * rung.feed_share)]
        model = clone(estimator).partial_fit(X[rows], y[rows], classes=np.unique(y))
        chunks = range(left[0], left[1] + 1)
        sizes = [len(plan.chunk_rows(c, c)) for c in chunks]
        hand = [
            accuracy_score(
                y[plan.chunk_rows(c, c)], model.predict(X[plan.chunk_rows(c, c)])
            )
            for c in chunks
        ]
        assert_array_equal(rung.chunk_sizes, sizes)
        assert_allclose(rung.chunk_scores["score"], hand, rtol=0, atol=1e-15)
        # The chunks' accuracies add up to the rung's.
        assert np.average(hand, weights=sizes) == pytest.approx(rung.scores["score"])
    assert all(r.chunk_scores is None for r in rungs if not r.partial)
    plain = list(core.run_levels(resolved, early_rungs=2))
    assert all(r.chunk_scores is None for r in plain)
    assert plain[-1].scores == rungs[-1].scores


@pytest.mark.parametrize("scaler", [StandardScaler(), MinMaxScaler()])
@pytest.mark.parametrize("learner", [PegasosClassifier, LogisticSGDClassifier])
def test_scaled_native_pipelines_pause_their_feed_bit_for_bit(scaler, learner):
    # The scaled kernel keeps its running statistics and the rows waiting for
    # a full batch in the node state: a feed paused at the quarter rung ends
    # in the same model as one fed at once.
    X, y = make_classification(n_samples=3000, n_features=8, random_state=0)
    pipe = make_pipeline(scaler, learner(random_state=0))
    core, resolved = _core(pipe, X * 10 + 3, y, "treecv", 16, "randomized")
    assert resolved.backend.name == "native_tree"
    early = list(core.run_levels(resolved, early_rungs=2))
    assert [r.rung for r in early[:3]] == [0.25, 0.5, 1]
    ours = early[-1].leaves.by_split().scores["score"]
    assert_array_equal(ours, core.run(resolved).by_split().scores["score"])


def test_early_chunks_score_the_held_out_rows_only():
    # With train scores asked for, a chunk of an early rung is still scored on
    # its own rows (the leaves' train scores are computed at the leaves).
    X, y = _data()
    core, resolved = _core(
        _sgd(), X, y, PythonTreeBackend(), 8, scoring="f1", return_train_score=True
    )
    seen = []
    scores = core.scorer

    def spy(model, X_rows, y_rows, **kwargs):
        seen.append(len(y_rows))
        return scores(model, X_rows, y_rows, **kwargs)

    core.scorer = spy
    half = next(iter(core.run_levels(resolved, early_rungs=1, early_chunks=True)))
    assert set(half.chunk_scores) == {"score"}
    assert max(seen) <= len(X) // 2  # no training rows scored
