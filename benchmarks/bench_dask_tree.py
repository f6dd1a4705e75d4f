"""TreeCV on a Dask cluster where only models move, against the peers that move data.

A ``LocalCluster`` of worker processes with memory limits holds covtype (class 1 vs
rest, all 581,012 rows, float64, standardised, rows permuted once) as a
``dask.array`` of 4 blocks per worker. For each learner (deterministic one-pass
``SGDClassifier`` and ``PegasosClassifier``) and each ``k``, side by side in one run:

- ``dask tree``: ``tree_cross_validate`` on the dask arrays (``DaskTreeBackend``);
- ``in memory``: the in-memory tree on the same plan (``block_fold_plan``), in this
  process: its scores must equal the Dask tree's bit for bit;
- ``joblib-dask tree``: ``tree_cross_validate(n_jobs=4)`` of the NumPy arrays under
  ``parallel_config(backend="dask")`` (the Python tree, whose subtrees joblib sends to
  the workers with ``X``);
- ``joblib-dask GridSearchCV``: scikit-learn's ``GridSearchCV(cv=TreeCVSplitter(k),
  n_jobs=4)`` of the same learner under the same backend (``k`` fits of one pass).

Bytes received by the workers are counted two ways: the workers' transfer logs
(worker-to-worker fetches: Dask's own count of what moved between workers) and
every byte their TCP comms read (messages, task specifications and data scattered
by joblib included, which the transfer logs do not see). The Dask tree must move
at most ``2 k log2(k)`` model sizes plus 1 MB (transfer logs), and at least 100x
fewer bytes than either peer.

``--big`` instead generates covtype repeated to about 4 GB on the workers (4 workers
limited to 1.5 GB each; nothing goes through the client) and runs the Dask tree on
it: data larger than any one worker's memory limit.

``--frame`` runs the Dask tree on covtype as a ``dask.dataframe`` instead (16
partitions, 4 per worker, 54 named columns, ``y`` a Series partitioned with them),
against the in-memory tree on the same pandas frame and plan: equal scores, models
with ``feature_names_in_``, and the bytes the workers received against the same
bound (only models may move).

Run under the bench lock on the shared machine::

    flock /work/coord/bench.lock python benchmarks/bench_dask_tree.py
    flock /work/coord/bench.lock python benchmarks/bench_dask_tree.py --big
    flock /work/coord/bench.lock python benchmarks/bench_dask_tree.py --frame --ks 10
"""

from __future__ import annotations

import argparse
import math
import os
import pickle
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import dask
    import dask.array as da
    from distributed import Client, LocalCluster, wait
except ImportError:  # pragma: no cover - the message is the point
    sys.exit("This benchmark needs dask[distributed]: pip install 'dask[distributed]'")

from _data import covtype_binary, require
from joblib import parallel_config
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import GridSearchCV

from sklearn_ext import PegasosClassifier, TreeCVSplitter, tree_cross_validate
from sklearn_ext.model_selection import PythonTreeBackend, block_fold_plan

BLOCKS_PER_WORKER = 4


def learners() -> dict:
    return {
        "sgd": SGDClassifier(max_iter=1, tol=None, shuffle=False, random_state=0),
        "pegasos": PegasosClassifier(random_state=0),
    }


# -- counting what the workers received ------------------------------------------
def _clear(dask_worker) -> None:
    dask_worker.transfer_incoming_log.clear()


def _count_wire_bytes(dask_worker) -> None:
    """Count every byte the worker's TCP comms read (messages, tasks, scattered
    data, fetches): the transfer log counts only worker-to-worker fetches."""
    import distributed.comm.tcp as tcp

    if hasattr(tcp, "_bench_bytes"):
        return
    tcp._bench_bytes = [0]
    original = tcp.read_bytes_rw

    async def counted(stream, n):
        tcp._bench_bytes[0] += n
        return await original(stream, n)

    tcp.read_bytes_rw = counted


def _received(dask_worker) -> dict:
    import distributed.comm.tcp as tcp

    log = list(dask_worker.transfer_incoming_log)
    data = sum(
        nbytes
        for entry in log
        for key, nbytes in entry["keys"].items()
        if not (isinstance(key, str) and key.startswith("treecv-"))
    )
    return {
        "log": sum(entry["total"] for entry in log),
        "fetches": len(log),
        "data": data,
        "read": tcp._bench_bytes[0],
    }


def measured(client: Client, run) -> tuple[object, dict]:
    """``run()``'s result, its seconds and the bytes the workers received."""
    client.run(_clear)
    before = client.run(_received)
    tic = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - tic
    after = client.run(_received)
    total = {
        "seconds": seconds,
        "log": sum(a["log"] for a in after.values()),
        "fetches": sum(a["fetches"] for a in after.values()),
        "data": sum(a["data"] for a in after.values()),
        "read": sum(after[w]["read"] - before[w]["read"] for w in after),
    }
    return result, total


def model_size(model) -> int:
    """A fold model's bytes: pickled, or as Dask counts it, the larger."""
    from dask.sizeof import sizeof

    import sklearn_ext.model_selection._dask  # noqa: F401 (sizeof of estimators)

    return max(len(pickle.dumps(model)), sizeof(model))


# -- the cluster and the data -------------------------------------------------------
def cluster(n_workers: int, memory_limit: str) -> LocalCluster:
    # Room in the transfer logs for every fetch of a k = 100 run.
    dask.config.set({"distributed.admin.low-level-log-length": 1_000_000})
    return LocalCluster(
        n_workers=n_workers,
        threads_per_worker=1,
        processes=True,
        memory_limit=memory_limit,
        dashboard_address=None,
    )


def covtype_on_cluster(client: Client, X, y, layout: str):
    """X and y as dask arrays of 4 blocks per worker, each block of y with its X's.

    ``layout="contiguous"``: worker ``w`` holds blocks ``4w .. 4w+3``, as when each
    machine loads its own partition; ``"scheduler"``: where the scheduler puts them.
    """
    workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    n_blocks = BLOCKS_PER_WORKER * len(workers)
    rows = -(-len(X) // n_blocks)
    Xy = np.column_stack([X, y])
    if layout == "scheduler":
        groups = [(None, Xy)]
    else:
        per = BLOCKS_PER_WORKER * rows
        groups = [(w, Xy[i * per : (i + 1) * per]) for i, w in enumerate(workers)]
    parts = []
    for worker, part in groups:
        dXy = da.from_array(part, chunks=(rows, Xy.shape[1]))
        dX = dXy[:, :-1].map_blocks(np.ascontiguousarray)
        parts.append(
            client.persist(
                [dX, dXy[:, -1]], workers=None if worker is None else [worker]
            )
        )
    wait([a for pair in parts for a in pair])
    dX = da.concatenate([p[0] for p in parts])
    dy = da.concatenate([p[1] for p in parts])
    dX, dy = client.persist([dX, dy])
    wait([dX, dy])
    return dX, dy


def layout(client: Client, data) -> str:
    """The worker of each block (of an array) or partition (of a frame), in order."""
    from distributed import futures_of

    futures = futures_of(data)
    who = client.who_has(futures)
    names = {w: i for i, w in enumerate(sorted({w for ws in who.values() for w in ws}))}
    # A persisted frame's futures are named apart from its keys: by partition.
    keys = sorted((f.key for f in futures), key=lambda key: key[1:])
    return " ".join(str(names[who[k][0]]) for k in keys)


# -- the side-by-side rows -----------------------------------------------------------
def peers(client, estimator, X, y, plan, k):
    """The two peers that send X to the workers, under joblib's Dask backend."""
    # The Python tree for both learners: the native tree runs threads in this
    # process, which no joblib backend distributes.
    method = PythonTreeBackend()
    with parallel_config(backend="dask"):
        tree, tree_bytes = measured(
            client,
            lambda: tree_cross_validate(
                estimator, X, y, cv=plan, n_jobs=4, method=method
            ),
        )
        search = GridSearchCV(
            estimator, {"alpha": [estimator.alpha]}, cv=TreeCVSplitter(k), n_jobs=4
        )
        grid, grid_bytes = measured(
            client, lambda: search.set_params(refit=False).fit(X, y)
        )
    return tree_bytes, grid_bytes, tree["test_score"], grid


def row(client, name, estimator, dX, dy, X, y, k, with_peers):
    plan = block_fold_plan(dX, k)
    result, dask_bytes = measured(
        client,
        lambda: tree_cross_validate(estimator, dX, dy, cv=k, return_run_info=True),
    )
    tic = time.perf_counter()
    memory = tree_cross_validate(estimator, X, y, cv=plan, return_estimator=True)
    memory_seconds = time.perf_counter() - tic
    equal = bool(np.array_equal(result["test_score"], memory["test_score"]))
    size = model_size(memory["estimator"][0])
    bound = 2 * k * math.log2(k) * size + 1e6
    print(
        f"{name:8s} k={k:3d}  dask tree {dask_bytes['seconds']:7.2f} s  in memory "
        f"{memory_seconds:7.2f} s  scores bit-equal: {equal}  "
        f"mean {result['test_score'].mean():.6f}"
    )
    print(
        f"    dask tree: transfer logs {dask_bytes['log'] / 1e6:8.3f} MB in "
        f"{dask_bytes['fetches']} fetches (not models: {dask_bytes['data']} B), "
        f"bound 2k log2(k) models + 1 MB = {bound / 1e6:.3f} MB "
        f"(model {size} B): {'within' if dask_bytes['log'] <= bound else 'OVER'}; "
        f"received by workers {dask_bytes['read'] / 1e6:.3f} MB"
    )
    if not with_peers:
        return
    tree_bytes, grid_bytes, tree_scores, _ = peers(client, estimator, X, y, plan, k)
    for label, peer in (
        ("joblib-dask tree", tree_bytes),
        ("joblib-dask GridSearchCV", grid_bytes),
    ):
        ratio_log = peer["log"] / max(dask_bytes["log"], 1)
        ratio_read = peer["read"] / max(dask_bytes["read"], 1)
        # joblib scatters X from the client: no fetch between workers to log.
        logged = f"{ratio_log:,.0f}x the dask tree's" if peer["log"] else "scattered"
        print(
            f"    {label:24s} {peer['seconds']:7.2f} s  transfer logs "
            f"{peer['log'] / 1e6:9.1f} MB ({logged})  received by workers "
            f"{peer['read'] / 1e6:9.1f} MB ({ratio_read:,.0f}x the dask tree's)"
        )
    same = bool(np.array_equal(tree_scores, memory["test_score"]))
    print(f"    joblib-dask tree scores equal the in-memory tree's: {same}")


def main_covtype(args) -> None:
    X, y = covtype_binary()
    print(
        f"covtype {X.shape[0]} x {X.shape[1]} float64 ({X.nbytes / 1e6:.0f} MB), "
        f"{args.workers} worker processes x 1 thread, memory limit {args.memory_limit}"
    )
    with cluster(args.workers, args.memory_limit) as local, Client(local) as client:
        client.run(_count_wire_bytes)
        dX, dy = covtype_on_cluster(client, X, y, args.layout)
        print(f"worker of each block ({args.layout}): {layout(client, dX)}")
        for name in args.learners:
            estimator = learners()[name]
            # Warm up: the workers import the modules once, outside the counts.
            tree_cross_validate(estimator, dX, dy, cv=4)
            with parallel_config(backend="dask"):
                tree_cross_validate(
                    estimator, X[:2000], y[:2000], cv=4, n_jobs=4,
                    method=PythonTreeBackend(),
                )  # fmt: skip
            for k in args.ks:
                row(client, name, estimator, dX, dy, X, y, k, not args.no_peers)


# -- data larger than any worker's memory ------------------------------------------
def _covtype_raw(path: str):
    """Covtype's raw columns and their moments, read once per worker process."""
    from distributed import get_worker

    cache = get_worker().__dict__.setdefault("_bench_covtype", {})
    if path not in cache:
        with np.load(path) as data:
            X, y = data["X"], data["y"]
        cache[path] = X, np.where(y == 1, 1.0, -1.0), X.mean(axis=0), X.std(axis=0)
    return cache[path]


def _covtype_block(path: str, block: int, rows: int):
    """Block ``block`` of covtype repeated: made on the worker that runs it."""
    X, y, mean, std = _covtype_raw(path)
    rng = np.random.default_rng(block)
    index = rng.integers(0, len(y), rows)
    Xb = (X[index] - mean) / std
    return np.ascontiguousarray(Xb), y[index]


def main_big(args) -> None:
    path = str(require("covtype.npz"))
    n_blocks = BLOCKS_PER_WORKER * args.workers
    rows = int(args.big_gb * 1e9 / (55 * 8) / n_blocks)
    print(
        f"covtype repeated: {n_blocks} blocks of {rows} rows, "
        f"{n_blocks * rows * 55 * 8 / 1e9:.2f} GB (X and y) on {args.workers} "
        f"workers limited to {args.big_memory_limit} each"
    )
    with cluster(args.workers, args.big_memory_limit) as local, Client(local) as client:
        make = dask.delayed(_covtype_block, pure=True)
        parts = [make(path, b, rows) for b in range(n_blocks)]
        dX = da.concatenate(
            [da.from_delayed(p[0], shape=(rows, 54), dtype=np.float64) for p in parts]
        )
        dy = da.concatenate(
            [da.from_delayed(p[1], shape=(rows,), dtype=np.float64) for p in parts]
        )
        client.run(_count_wire_bytes)
        tic = time.perf_counter()
        dX, dy = client.persist([dX, dy])
        wait([dX, dy])
        print(f"generated on the workers in {time.perf_counter() - tic:.1f} s")
        print(f"worker of each block: {layout(client, dX)}")
        for name in args.learners:
            estimator = learners()[name]
            for k in args.ks:
                result, used = measured(
                    client,
                    lambda estimator=estimator, k=k: tree_cross_validate(
                        estimator, dX, dy, cv=k
                    ),
                )
                print(
                    f"{name:8s} k={k:3d}  dask tree {used['seconds']:7.1f} s  mean "
                    f"{result['test_score'].mean():.6f}  transfer logs "
                    f"{used['log'] / 1e6:.3f} MB in {used['fetches']} fetches (data "
                    f"{used['data']} B), received by workers "
                    f"{used['read'] / 1e6:.1f} MB"
                )


# -- a dask DataFrame ---------------------------------------------------------------
def covtype_frame_on_cluster(client: Client, dX, dy, columns):
    """The blocks of ``dX`` and ``dy`` as the partitions of a dask DataFrame and
    Series, converted where they are (each partition stays on its block's worker)."""
    import dask.dataframe as dd

    frame = dd.from_dask_array(dX, columns=columns)
    target = dd.from_dask_array(dy).rename("target")
    frame, target = client.persist([frame, target])
    wait([frame, target])
    return frame, target


def frame_row(client, name, estimator, fX, fy, pX, py, k) -> None:
    plan = block_fold_plan(fX, k)
    result, used = measured(
        client,
        lambda: tree_cross_validate(
            estimator, fX, fy, cv=k, return_run_info=True, return_estimator=True
        ),
    )
    tic = time.perf_counter()
    memory = tree_cross_validate(estimator, pX, py, cv=plan, return_estimator=True)
    memory_seconds = time.perf_counter() - tic
    equal = bool(np.array_equal(result["test_score"], memory["test_score"]))
    named = all(
        list(m.feature_names_in_) == list(pX.columns) for m in result["estimator"]
    )
    size = model_size(memory["estimator"][0])
    bound = 2 * k * math.log2(k) * size + 1e6
    print(
        f"{name:8s} k={k:3d}  dask tree (DataFrame) {used['seconds']:7.2f} s  in "
        f"memory (pandas) {memory_seconds:7.2f} s  scores bit-equal: {equal}  "
        f"mean {result['test_score'].mean():.6f}  feature_names_in_: {named}"
    )
    print(
        f"    transfer logs {used['log'] / 1e6:8.3f} MB in {used['fetches']} "
        f"fetches (not models: {used['data']} B), bound 2k log2(k) models + 1 MB = "
        f"{bound / 1e6:.3f} MB (model {size} B): "
        f"{'within' if used['log'] <= bound else 'OVER'}; received by workers "
        f"{used['read'] / 1e6:.3f} MB"
    )


def main_frame(args) -> None:
    try:
        import pandas as pd
        import pyarrow  # noqa: F401 (dask.dataframe needs it)
    except ImportError:
        sys.exit("--frame needs pandas and pyarrow: pip install pandas pyarrow")
    X, y = covtype_binary()
    columns = [f"f{j}" for j in range(X.shape[1])]
    pX, py = pd.DataFrame(X, columns=columns), pd.Series(y, name="target")
    print(
        f"covtype {X.shape[0]} x {X.shape[1]} float64 as a dask DataFrame, "
        f"{args.workers} worker processes x 1 thread, memory limit {args.memory_limit}"
    )
    with cluster(args.workers, args.memory_limit) as local, Client(local) as client:
        client.run(_count_wire_bytes)
        dX, dy = covtype_on_cluster(client, X, y, args.layout)
        fX, fy = covtype_frame_on_cluster(client, dX, dy, columns)
        del dX, dy
        print(f"{fX.npartitions} partitions; worker of each: {layout(client, fX)}")
        for name in args.learners:
            estimator = learners()[name]
            tree_cross_validate(estimator, fX, fy, cv=4)  # warm up the workers
            for k in args.ks:
                frame_row(client, name, estimator, fX, fy, pX, py, k)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ks", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--learners", nargs="+", default=["sgd", "pegasos"])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--memory-limit", default="2GB")
    parser.add_argument(
        "--layout", choices=["contiguous", "scheduler"], default="contiguous"
    )
    parser.add_argument("--no-peers", action="store_true", help="only the Dask tree")
    parser.add_argument("--big", action="store_true", help="~4 GB made on the workers")
    parser.add_argument("--big-gb", type=float, default=4.0)
    parser.add_argument("--big-memory-limit", default="1.5GB")
    parser.add_argument(
        "--frame", action="store_true", help="covtype as a dask DataFrame"
    )
    args = parser.parse_args()
    print(f"load average before: {open('/proc/loadavg').read().strip()}")
    warnings.simplefilter("ignore", UserWarning)
    if args.big:
        main_big(args)
    elif args.frame:
        main_frame(args)
    else:
        main_covtype(args)
    print(f"load average after: {open('/proc/loadavg').read().strip()}")


if __name__ == "__main__":
    main()
