"""Where the Python tree's time goes on small data: the cost of each per-node step.

On digits (1,797 x 64, 10 classes) with k = 100, the tree makes 198 updates of
about 61 rows each, scores 100 leaves of about 18 rows and saves 99 models. This
script times each step both ways, the public route (what the tree did before
issue 19, and still does with ``PythonTreeBackend(shortcuts=False)``) and the
run's shortcut, for the one-epoch ``SGDClassifier`` of the scaling benchmark:

- gathering an update's rows: fancy indexing ``X[rows]`` vs a slice of the
  run's chunk-ordered copy;
- one update: ``partial_fit`` vs the run's SGD update;
- saving a node's model: ``copy.deepcopy`` vs a snapshot of the state
  ``partial_fit`` changes (plus its restore);
- scoring a leaf: the scorer of ``scoring=None`` (``model.score``) vs the
  run's linear accuracy;

then the whole run both ways, and the per-node total. Medians of ``--repeats``
calls each, one thread, the load average printed.

Usage: ``python benchmarks/bench_python_tree_overheads.py [--repeats 200]``
"""

from __future__ import annotations

import argparse
import copy
import os
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier
from sklearn.metrics import check_scoring
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from sklearn_ext import StratifiedTreeCVSplitter, tree_cross_validate
from sklearn_ext.model_selection import PythonTreeBackend
from sklearn_ext.model_selection._shortcuts import (
    fast_accuracy,
    sgd_classifier_update,
)
from sklearn_ext.model_selection._snapshot import restore_snapshot, take_snapshot


def median_us(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        tic = time.perf_counter()
        fn()
        times.append(time.perf_counter() - tic)
    return float(np.median(times)) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    print("load average", ", ".join(f"{v:.2f}" for v in os.getloadavg()))
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    est = SGDClassifier(max_iter=1, tol=None, shuffle=False, random_state=0)
    plan = StratifiedTreeCVSplitter(100).plan(X, y)
    Xr, yr = X[plan.sample_order], y[plan.sample_order]
    rows = plan.chunk_rows(0, 2)  # a typical update: 3 chunks, about 54 rows
    block = slice(int(plan.bounds[0]), int(plan.bounds[3]))
    test = slice(int(plan.bounds[3]), int(plan.bounds[4]))
    model = copy.deepcopy(est).partial_fit(Xr[block], yr[block], classes=np.unique(y))
    update = sgd_classifier_update(est, Xr, {})
    scorer = check_scoring(est, None)
    accuracy = fast_accuracy(est, None)
    r = args.repeats

    def snapshot_and_restore():
        restore_snapshot(model, take_snapshot(model))

    steps = [
        ("gather rows", lambda: X[rows], lambda: Xr[block]),
        (
            "update",
            lambda: model.partial_fit(Xr[block], yr[block]),
            lambda: update(model, block, yr),
        ),
        ("save the model", lambda: copy.deepcopy(model), snapshot_and_restore),
        (
            "score a leaf",
            lambda: scorer(model, Xr[test], yr[test]),
            lambda: accuracy(model, Xr[test], yr[test]),
        ),
    ]
    print(
        "digits, k = 100, one-epoch SGDClassifier; "
        f"{block.stop - block.start} rows per update"
    )
    print(f"{'step':>16} {'public us':>10} {'shortcut us':>12} {'ratio':>7}")
    with threadpool_limits(limits=1):
        for name, public, shortcut in steps:
            a, b = median_us(public, r), median_us(shortcut, r)
            print(f"{name:>16} {a:>10.1f} {b:>12.1f} {a / b:>6.1f}x")
        runs = {
            "public": lambda: tree_cross_validate(
                est, X, y, cv=plan, method=PythonTreeBackend(shortcuts=False)
            ),
            "shortcuts": lambda: tree_cross_validate(
                est, X, y, cv=plan, method=PythonTreeBackend()
            ),
        }
        totals = {name: [] for name in runs}
        for i in range(9):
            for name in list(runs) if i % 2 == 0 else list(runs)[::-1]:
                tic = time.perf_counter()
                runs[name]()
                totals[name].append(time.perf_counter() - tic)
        for name, values in totals.items():
            ms = float(np.median(values)) * 1e3
            print(
                f"whole run, {name:>9}: {ms:7.1f} ms, {ms / 99 * 1e3:7.1f} us per "
                "internal node (2 updates, 1 save, 1 leaf score)"
            )
    print("load average", ", ".join(f"{v:.2f}" for v in os.getloadavg()))


if __name__ == "__main__":
    main()
