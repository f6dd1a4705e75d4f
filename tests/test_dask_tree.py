"""TreeCV on Dask collections: updates run where the blocks are, only models move.

The peer (joblib's Dask backend, which ships X to the workers) is covered by
tests/test_dask.py; here X and y are ``dask.array`` blocks on a LocalCluster.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from sklearn_ext import PegasosClassifier, TreeCVSearchCV, tree_cross_validate
from sklearn_ext.model_selection import block_fold_plan
from sklearn_ext.model_selection._placement import PlacementError, block_bounds

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X[:1200], y[:1200]


def blocked(X, y, n_blocks):
    """X and y as dask arrays whose blocks are sliced from one array's blocks
    (each block of y on the worker of its block of X)."""
    rows = -(-len(X) // n_blocks)
    Xy = da.from_array(np.column_stack([X, y]), chunks=(rows, X.shape[1] + 1))
    Xy = Xy.persist()
    dX, dy = Xy[:, :-1], Xy[:, -1].astype(y.dtype)
    return dX, dy


def one_pass_sgd():
    return SGDClassifier(max_iter=1, tol=None, shuffle=False, random_state=0)


def test_block_bounds_follow_blocks():
    # k <= blocks: runs of whole blocks, the longer runs first.
    assert block_bounds([10] * 5, 2).tolist() == [0, 30, 50]
    assert block_bounds([10] * 4, 4).tolist() == [0, 10, 20, 30, 40]
    # k > blocks: each block split where it lies, the first blocks more often.
    assert block_bounds([10, 10], 5).tolist() == [0, 4, 7, 10, 15, 20]
    with pytest.raises(ValueError, match="holds only 2 rows"):
        block_bounds([2, 10], 6)
    plan = block_fold_plan([10, 10], 5)
    assert plan.n_splits == 5 and plan.test_indices(3).tolist() == list(range(10, 15))


@pytest.mark.parametrize(
    "estimator",
    [
        one_pass_sgd(),
        PegasosClassifier(random_state=0),
        # A streaming pipeline (scaler updated batch by batch, then SGD), and
        # SGD with its epochs: both fed through a TreeCVEstimator's batches.
        make_pipeline(StandardScaler(), one_pass_sgd()),
        SGDClassifier(random_state=0),
    ],
    ids=["sgd-one-pass", "pegasos", "streaming-pipeline", "sgd-batched"],
)
@pytest.mark.parametrize("n_blocks, k", [(6, 4), (4, 10)])
def test_scores_equal_the_in_memory_tree(client, digits, estimator, n_blocks, k):
    X, y = digits
    dX, dy = blocked(X, y, n_blocks)
    result = tree_cross_validate(estimator, dX, dy, cv=k, return_run_info=True)
    memory = tree_cross_validate(
        estimator, X, y, cv=block_fold_plan(dX, k), return_run_info=True
    )
    assert result["backend"] == "dask_tree"
    assert_array_equal(result["test_score"], memory["test_score"])
    assert result["n_samples_fed"] == memory["n_samples_fed"]
    assert np.all(result["fit_time"] >= 0) and np.all(result["score_time"] > 0)


@pytest.mark.parametrize("scoring", ["f1_macro", ["accuracy", "balanced_accuracy"]])
def test_other_metrics_on_chunks_spanning_workers(client, digits, scoring):
    # 9 blocks, k=4: test chunks of 2 or 3 blocks, held by both workers.
    X, y = digits
    dX, dy = blocked(X, y, 9)
    result = tree_cross_validate(one_pass_sgd(), dX, dy, cv=4, scoring=scoring)
    memory = tree_cross_validate(
        one_pass_sgd(), X, y, cv=block_fold_plan(dX, 4), scoring=scoring
    )
    for key in memory:
        if key.startswith("test_"):
            assert_array_equal(result[key], memory[key])


def test_fold_models_come_back(client, digits):
    # Pegasos updates row by row: the same models bit for bit. SGD folds its
    # weight scale into the weights at the end of each partial_fit call, which
    # the Dask tree makes per block: the same models to the last bits.
    X, y = digits
    dX, dy = blocked(X, y, 5)
    for estimator, rtol in (
        (PegasosClassifier(random_state=0), 0),
        (one_pass_sgd(), 1e-12),
    ):
        result = tree_cross_validate(estimator, dX, dy, cv=5, return_estimator=True)
        memory = tree_cross_validate(
            estimator, X, y, cv=block_fold_plan(dX, 5), return_estimator=True
        )
        pairs = zip(result["estimator"], memory["estimator"], strict=True)
        for model, reference in pairs:
            scale = np.abs(reference.coef_).max()
            assert_allclose(model.coef_, reference.coef_, rtol=0, atol=rtol * scale)


def test_only_models_move(client, digits):
    # No block of X or y is ever fetched by another worker.
    X, y = digits
    dX, dy = blocked(X, y, 8)
    client.run(lambda dask_worker: dask_worker.transfer_incoming_log.clear())
    tree_cross_validate(one_pass_sgd(), dX, dy, cv=8)
    logs = client.run(lambda dask_worker: list(dask_worker.transfer_incoming_log))
    moved = [key for log in logs.values() for entry in log for key in entry["keys"]]
    data_keys = {dX.name, dy.name}
    assert moved, "the models must travel between the two workers"
    assert not [key for key in moved if isinstance(key, tuple) and key[0] in data_keys]


def test_leaf_callback_stops_the_run(client, digits):
    X, y = digits
    dX, dy = blocked(X, y, 4)
    seen = []

    def stop(leaf):
        seen.append(leaf.split)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        tree_cross_validate(one_pass_sgd(), dX, dy, cv=8, leaf_callback=stop)
    assert len(seen) == 1


def test_search_on_dask_equals_in_memory(client, digits):
    X, y = digits
    dX, dy = blocked(X, y, 6)
    grid = {"alpha": [1e-4, 1e-2]}
    search = TreeCVSearchCV(one_pass_sgd(), grid, cv=4).fit(dX, dy)
    memory = TreeCVSearchCV(one_pass_sgd(), grid, cv=block_fold_plan(dX, 4)).fit(X, y)
    # Candidates in parallel: joblib threads (the client stays in this process).
    parallel = TreeCVSearchCV(one_pass_sgd(), grid, cv=4, n_jobs=2).fit(dX, dy)
    for other in (memory, parallel):
        assert_array_equal(
            search.cv_results_["mean_test_score"], other.cv_results_["mean_test_score"]
        )
    # The refit is one pass over the blocks, where they are.
    assert search.best_estimator_.predict(X[:5]).shape == (5,)


def test_objective_on_dask_equals_in_memory(client, digits):
    optuna = pytest.importorskip("optuna")
    from optuna.distributions import FloatDistribution

    from optuna_treecv import TreeCVObjective

    X, y = digits
    dX, dy = blocked(X, y, 6)
    space = {"alpha": FloatDistribution(1e-5, 1e-1, log=True)}
    values = []
    for data, cv in (((dX, dy), 4), ((X, y), block_fold_plan(dX, 4))):
        study = optuna.create_study(
            direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0)
        )
        study.optimize(TreeCVObjective(one_pass_sgd(), space, *data, cv=cv), 2)
        values.append([t.value for t in study.trials])
    assert values[0] == values[1]


def test_errors_are_clear(client, digits):
    X, y = digits
    dX, dy = blocked(X, y, 4)
    with pytest.raises(TypeError, match="would gather X"):
        tree_cross_validate(one_pass_sgd(), dX, dy, cv=4, method="standard")
    with pytest.raises(TypeError, match="no partial_fit method"):
        tree_cross_validate(LinearSVC(), dX, dy, cv=4)
    with pytest.raises(ValueError, match="order='randomized' cannot run"):
        tree_cross_validate(one_pass_sgd(), dX, dy, cv=4, order="randomized")
    with pytest.raises(TypeError, match="pass y as a dask array"):
        tree_cross_validate(one_pass_sgd(), dX, y, cv=4)
    with pytest.raises(ValueError, match="return_train_score"):
        tree_cross_validate(one_pass_sgd(), dX, dy, cv=4, return_train_score=True)


@pytest.mark.slow
def test_a_worker_lost_mid_run_is_recomputed(digits):
    # Worker processes: one is killed when the first leaf comes back; the
    # blocks and models it held are recomputed from their lineage.
    X, y = digits
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        dX, dy = blocked(X, y, 8)
        killed = []

        def kill_one(leaf):
            if killed:
                return
            victim = sorted(client.scheduler_info()["workers"])[0]
            killed.append(victim)
            try:
                client.run(os._exit, 1, workers=[victim])
            except Exception:  # noqa: BLE001 - the worker dies answering
                pass

        result = tree_cross_validate(
            PegasosClassifier(random_state=0), dX, dy, cv=8, leaf_callback=kill_one
        )
    memory = tree_cross_validate(
        PegasosClassifier(random_state=0), X, y, cv=block_fold_plan(dX, 8)
    )
    assert killed
    assert_array_equal(result["test_score"], memory["test_score"])


def test_lost_data_is_a_clear_error(digits):
    # A block whose future was cancelled is gone for good: no score, an error.
    # A cluster of its own: the forced cancel must not reach the module's client.
    X, y = digits
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        dX, dy = blocked(X, y, 4)
        dX, dy = client.persist(dX), client.persist(dy)
        distributed.wait([dX, dy])
        client.cancel(distributed.futures_of(dX)[:1], force=True)
        with pytest.raises(PlacementError, match="lost work of this run"):
            tree_cross_validate(one_pass_sgd(), dX, dy, cv=4)


def test_a_released_block_is_waited_for(client, digits, monkeypatch):
    # A finished block that no worker holds for a moment (released by an
    # earlier handle of the same key, being computed again) is waited for.
    X, y = digits
    dX, dy = blocked(X, y, 4)
    expected = tree_cross_validate(one_pass_sgd(), dX, dy, cv=4)["test_score"]
    real = type(client).who_has
    calls = []

    def who_has_forgetting_once(self, futures=None, **kwargs):
        who = dict(real(self, futures, **kwargs))
        calls.append(1)
        if len(calls) == 1:
            who[next(iter(who))] = ()
        return who

    monkeypatch.setattr(type(client), "who_has", who_has_forgetting_once)
    again = tree_cross_validate(one_pass_sgd(), dX, dy, cv=4)["test_score"]
    assert len(calls) >= 2
    assert_array_equal(again, expected)


def test_a_block_held_by_no_worker_is_a_clear_error(client, digits, monkeypatch):
    from sklearn_ext.model_selection import _dask

    X, y = digits
    dX, dy = blocked(X, y, 4)
    real = type(client).who_has

    def who_has_nobody(self, futures=None, **kwargs):
        return {key: () for key in real(self, futures, **kwargs)}

    monkeypatch.setattr(type(client), "who_has", who_has_nobody)
    monkeypatch.setattr(_dask, "HOLDER_SECONDS", 0.2)
    with pytest.raises(PlacementError, match="No worker holds the blocks"):
        tree_cross_validate(one_pass_sgd(), dX, dy, cv=4)
