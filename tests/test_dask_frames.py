"""TreeCV on Dask DataFrames and on blocks made by per-worker loaders.

The blocks are a frame's partitions, or what each loader makes on a worker;
the updates run where they are, and the scores equal the in-memory tree's on
the same plan (tests/test_dask_tree.py covers dask arrays).
"""

from __future__ import annotations

import functools
import os
import threading

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from sklearn_ext import PegasosClassifier, TreeCVSearchCV, tree_cross_validate
from sklearn_ext.model_selection import block_fold_plan

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")
pd = pytest.importorskip("pandas")

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")

COLUMNS = [f"pixel{i}" for i in range(64)]


@pytest.fixture(scope="module")
def frame():
    """Digits as a pandas frame: 64 named pixels, a category, the target."""
    X, y = load_digits(return_X_y=True)
    frame = pd.DataFrame(X[:1200], columns=COLUMNS)
    frame["shade"] = np.array(list("abcd"))[np.arange(1200) % 4]
    frame["target"] = y[:1200]
    return frame


@pytest.fixture(scope="module")
def dd():
    """dask.dataframe (it needs pyarrow; the loaders' tests do not)."""
    pytest.importorskip("pyarrow")
    return pytest.importorskip("dask.dataframe")


def on_cluster(dd, frame, n_partitions, columns=COLUMNS):
    """X and y taken from one persisted frame (each y partition with its X's)."""
    ddf = dd.from_pandas(frame, npartitions=n_partitions, sort=False).persist()
    return ddf[columns], ddf["target"]


def one_pass_sgd():
    return SGDClassifier(max_iter=1, tol=None, shuffle=False, random_state=0)


@pytest.mark.parametrize(
    "estimator",
    [one_pass_sgd(), PegasosClassifier(random_state=0)],
    ids=["sgd-one-pass", "pegasos"],
)
@pytest.mark.parametrize("k", [4, 10])
def test_frame_scores_equal_the_in_memory_tree(client, dd, frame, estimator, k):
    dX, dy = on_cluster(dd, frame, 6)
    result = tree_cross_validate(
        estimator, dX, dy, cv=k, return_run_info=True, return_estimator=True
    )
    # The same pandas frame in memory, on the same plan.
    memory = tree_cross_validate(
        estimator,
        frame[COLUMNS],
        frame["target"],
        cv=block_fold_plan(dX, k),
        return_run_info=True,
    )
    assert result["backend"] == "dask_tree"
    assert_array_equal(result["test_score"], memory["test_score"])
    assert result["n_samples_fed"] == memory["n_samples_fed"]
    # The column names stay with the blocks: models know them, as in memory.
    for model in result["estimator"]:
        assert_array_equal(model.feature_names_in_, COLUMNS)


def test_column_transformer_selects_by_name(client, dd, frame):
    # A streaming pipeline: the scaler updated batch by batch, the encoder's
    # categories given (they cannot be found from all rows on a cluster).
    columns = COLUMNS + ["shade"]
    pipeline = make_pipeline(
        ColumnTransformer(
            [
                ("pixels", StandardScaler(), COLUMNS[10:40]),
                ("shade", OneHotEncoder(categories=[list("abcd")]), ["shade"]),
            ]
        ),
        one_pass_sgd(),
    )
    dX, dy = on_cluster(dd, frame, 5, columns)
    result = tree_cross_validate(pipeline, dX, dy, cv=4, return_estimator=True)
    memory = tree_cross_validate(
        pipeline, frame[columns], frame["target"], cv=block_fold_plan(dX, 4)
    )
    assert_array_equal(result["test_score"], memory["test_score"])
    assert result["test_score"].min() > 0.5
    assert_array_equal(result["estimator"][0].feature_names_in_, columns)


def test_search_and_objective_on_a_frame(client, dd, frame):
    optuna = pytest.importorskip("optuna")
    from optuna.distributions import FloatDistribution

    from optuna_treecv import TreeCVObjective

    dX, dy = on_cluster(dd, frame, 6)
    plan = block_fold_plan(dX, 4)
    grid = {"alpha": [1e-4, 1e-2]}
    search = TreeCVSearchCV(one_pass_sgd(), grid, cv=4).fit(dX, dy)
    memory = TreeCVSearchCV(one_pass_sgd(), grid, cv=plan).fit(
        frame[COLUMNS], frame["target"]
    )
    assert_array_equal(
        search.cv_results_["mean_test_score"], memory.cv_results_["mean_test_score"]
    )
    assert_array_equal(search.feature_names_in_, COLUMNS)
    assert_array_equal(search.best_estimator_.feature_names_in_, COLUMNS)
    space = {"alpha": FloatDistribution(1e-5, 1e-1, log=True)}
    values = []
    for data, cv in (((dX, dy), 4), ((frame[COLUMNS], frame["target"]), plan)):
        study = optuna.create_study(
            direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0)
        )
        study.optimize(TreeCVObjective(one_pass_sgd(), space, *data, cv=cv), 2)
        values.append([t.value for t in study.trials])
        assert study.user_attrs["treecv_data"].startswith("1200x64, hash ")
    assert values[0] == values[1]


def _sent_to_client(dask_worker):
    """What the worker sent to a requester that is not a worker (the client)."""
    return [e for e in dask_worker.transfer_outgoing_log if e["who"] is None]


def test_nothing_is_pulled_to_the_client(client, dd, frame):
    dX, dy = on_cluster(dd, frame, 6)
    distributed.wait([dX, dy])
    data_keys = {f.key for f in distributed.futures_of(dX) + distributed.futures_of(dy)}
    client.run(lambda dask_worker: dask_worker.transfer_outgoing_log.clear())
    tree_cross_validate(PegasosClassifier(random_state=0), dX, dy, cv=4)
    TreeCVSearchCV(one_pass_sgd(), {"alpha": [1e-4, 1e-3]}, cv=4).fit(dX, dy)
    optuna = pytest.importorskip("optuna")
    from optuna_treecv import TreeCVObjective

    # The study records a hash of the data: each block hashed on its worker.
    study = optuna.create_study(direction="maximize")
    study.optimize(TreeCVObjective(one_pass_sgd(), {}, dX, dy, cv=4), 1)
    sent = [e for log in client.run(_sent_to_client).values() for e in log]
    keys = {key for entry in sent for key in entry["keys"]}
    assert sent, "the scores come back from the workers"
    assert not keys & data_keys
    # Scores, labels, lengths, hashes and two refitted models: 28 kB when
    # written, under a tenth of X (614 kB).
    X_bytes = frame[COLUMNS].to_numpy().nbytes
    assert sum(entry["total"] for entry in sent) < X_bytes / 10


def test_clear_errors_for_frames(client, dd, frame):
    dX, dy = on_cluster(dd, frame, 6)
    other = dd.from_pandas(frame["target"], npartitions=3, sort=False).persist()
    with pytest.raises(ValueError, match="partitions of y do not match"):
        tree_cross_validate(one_pass_sgd(), dX, other, cv=4)
    unknown = dy.to_dask_array()  # partition lengths not computed
    with pytest.raises(ValueError, match="y have unknown sizes"):
        tree_cross_validate(one_pass_sgd(), dX, unknown, cv=4)
    with pytest.raises(TypeError, match="pass y as a dask Series"):
        tree_cross_validate(one_pass_sgd(), dX, frame["target"].to_numpy(), cv=4)
    with pytest.raises(ValueError, match="got a dask Series"):
        tree_cross_validate(one_pass_sgd(), dX["pixel5"], dy, cv=4)
    # The same y as a dask array of known blocks is aligned to the partitions.
    known = dy.to_dask_array(lengths=True)
    result = tree_cross_validate(one_pass_sgd(), dX, known, cv=4)
    assert_array_equal(
        result["test_score"],
        tree_cross_validate(one_pass_sgd(), dX, dy, cv=4)["test_score"],
    )


# -- per-worker loaders -------------------------------------------------------------
LOADS: list[str] = []
_LOCK = threading.Lock()


def load_pair(path):
    """A block read where it runs: the pair (X_block, y_block)."""
    with _LOCK:
        LOADS.append(path)
    with np.load(path) as data:
        return data["X"], data["y"]


def load_X(path):
    with _LOCK:
        LOADS.append(path)
    return pd.read_pickle(path)


@pytest.fixture(scope="module")
def files(tmp_path_factory, frame):
    """Digits in 5 files of 240 rows, as arrays and as pickled frames."""
    folder = tmp_path_factory.mktemp("blocks")
    paths = []
    for i in range(5):
        part = frame.iloc[240 * i : 240 * (i + 1)]
        path = folder / f"block{i}"
        np.savez(f"{path}.npz", X=part[COLUMNS].to_numpy(), y=part["target"].to_numpy())
        part[COLUMNS].to_pickle(f"{path}.pkl")
        paths.append(str(path))
    return paths


@pytest.mark.parametrize("k", [4, 10])
def test_loaders_of_pairs_run_once(client, frame, files, k):
    loaders = [dask.delayed(load_pair)(f"{p}.npz") for p in files]
    LOADS.clear()
    result = tree_cross_validate(
        PegasosClassifier(random_state=0), loaders, cv=k, return_run_info=True
    )
    assert sorted(LOADS) == sorted(f"{p}.npz" for p in files)
    memory = tree_cross_validate(
        PegasosClassifier(random_state=0),
        frame[COLUMNS].to_numpy(),
        frame["target"].to_numpy(),
        cv=block_fold_plan([240] * 5, k),
    )
    assert result["backend"] == "dask_tree"
    assert_array_equal(result["test_score"], memory["test_score"])


def test_loaders_of_frames_with_loaders_of_y(client, frame, files):
    # Callables reading pickled frames (names kept), y from loaders of its own;
    # a search loads each block once for all its candidates and its refit.
    X_loaders = [functools.partial(load_X, f"{p}.pkl") for p in files]
    y_loaders = [dask.delayed(lambda p: np.load(p)["y"])(f"{p}.npz") for p in files]
    LOADS.clear()
    search = TreeCVSearchCV(one_pass_sgd(), {"alpha": [1e-4, 1e-2]}, cv=4)
    search.fit(X_loaders, y_loaders)
    assert len(LOADS) == len(files)
    memory = TreeCVSearchCV(
        one_pass_sgd(), {"alpha": [1e-4, 1e-2]}, cv=block_fold_plan([240] * 5, 4)
    ).fit(frame[COLUMNS], frame["target"])
    assert_array_equal(
        search.cv_results_["mean_test_score"], memory.cv_results_["mean_test_score"]
    )
    assert_array_equal(search.best_estimator_.feature_names_in_, COLUMNS)


def test_sparse_blocks(client):
    sp = pytest.importorskip("scipy.sparse")
    X = sp.random(400, 20, density=0.2, format="csr", random_state=0)
    y = (X.sum(axis=1).A1 > 2).astype(int)
    blocks = [(X[i : i + 100], y[i : i + 100]) for i in range(0, 400, 100)]
    loaders = [functools.partial(lambda block: block, b) for b in blocks]
    result = tree_cross_validate(PegasosClassifier(random_state=0), loaders, cv=6)
    memory = tree_cross_validate(
        PegasosClassifier(random_state=0), X, y, cv=block_fold_plan([100] * 4, 6)
    )
    assert_array_equal(result["test_score"], memory["test_score"])


def test_blocks_stay_where_they_are_loaded(client, files):
    # Futures pinned by the user: every update runs on its block's worker and
    # no block moves; only models travel.
    workers = sorted(client.scheduler_info()["workers"])
    blocks = [
        client.submit(load_pair, f"{p}.npz", workers=[workers[i % 2]], pure=False)
        for i, p in enumerate(files)
    ]
    distributed.wait(blocks)
    client.run(lambda dask_worker: dask_worker.transfer_incoming_log.clear())
    tree_cross_validate(PegasosClassifier(random_state=0), blocks, cv=5)
    logs = client.run(lambda dask_worker: list(dask_worker.transfer_incoming_log))
    moved = {key for log in logs.values() for entry in log for key in entry["keys"]}
    assert moved and not moved & {b.key for b in blocks}
    assert [client.who_has([b])[b.key] for b in blocks] == [
        [workers[i % 2]] for i in range(len(files))
    ]


def test_clear_errors_for_loaders(client, files):
    pairs = [dask.delayed(load_pair)(f"{p}.npz") for p in files]
    with pytest.raises(ValueError, match="pass y=None"):
        tree_cross_validate(one_pass_sgd(), pairs, pairs, cv=4)
    short = [dask.delayed(lambda p: np.load(p)["y"][:-1])(f"{p}.npz") for p in files]
    X_only = [dask.delayed(lambda p: np.load(p)["X"])(f"{p}.npz") for p in files]
    with pytest.raises(ValueError, match="blocks of y do not match"):
        tree_cross_validate(one_pass_sgd(), X_only, short, cv=4)
    with pytest.raises(ValueError, match="others X_block alone"):
        tree_cross_validate(one_pass_sgd(), X_only[:2] + pairs[2:], cv=4)
    with pytest.raises(TypeError, match="rows of each block"):
        block_fold_plan(pairs, 4)


@pytest.mark.slow
def test_a_lost_worker_loads_its_blocks_again(frame, files, tmp_path):
    # Worker processes: one is killed when the first leaf comes back; its
    # blocks are loaded again from their loaders (lineage), the scores are the
    # same. Each load leaves a line in a file (the workers are other processes).
    log = tmp_path / "loads.txt"

    def load(path):  # a local function: sent by value to the worker processes
        with open(log, "a") as out:
            out.write(path + "\n")
        with np.load(path) as data:
            return data["X"], data["y"]

    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
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

        loaders = [dask.delayed(load)(f"{p}.npz") for p in files]
        result = tree_cross_validate(
            PegasosClassifier(random_state=0), loaders, cv=10, leaf_callback=kill_one
        )
    memory = tree_cross_validate(
        PegasosClassifier(random_state=0),
        frame[COLUMNS].to_numpy(),
        frame["target"].to_numpy(),
        cv=block_fold_plan([240] * 5, 10),
    )
    assert killed
    assert_array_equal(result["test_score"], memory["test_score"])
    loads = log.read_text().split()
    assert sorted(set(loads)) == sorted(f"{p}.npz" for p in files)
    assert len(loads) > len(files)  # the lost worker's blocks were loaded again
