"""The one-pass gap across learners and data sizes, and what ``method="auto"`` does.

For each learner x data set below, on the same 10 folds (``TreeCVSplitter(10)``,
rows shuffled once):

- ``tree``: the mean score of the tree's one-pass models (``tree_cross_validate``);
- ``fit``: ``cross_validate`` of the learner's own ``fit`` on the same folds;
- ``true``: ``fit - tree``, with the standard error of the paired differences;
- ``reported``: the gap the run core measures (``regime_gap``: the learner's ``fit``
  on the first splits only, against the tree's models there) and its verdict under
  the rule of ``RegimeGap.is_large`` (``GAP_TOLERANCE``: ``fit`` better by more than
  10 % of its score and beyond the 95 % t-interval of the mean paired difference),
  which is what
  ``method="auto"`` acts on in a search or a study: ``keep`` one pass, or ``fit``
  (score the learner's own ``fit`` for the whole search or study).

Scores, not times: the load of the machine does not change them. Covertype and a9a
rows need ``covtype.npz`` / ``a9a.npz`` from ``$OPTUNA_TREECV_DATA`` or the shared data
folder; without them those rows are skipped with a note.

Run: ``python benchmarks/bench_gap_table.py`` (``--quick``: digits, diabetes and
breast_cancer only).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import data_dir  # noqa: E402
from sklearn.datasets import (  # noqa: E402
    load_breast_cancer,
    load_diabetes,
    load_digits,
)
from sklearn.linear_model import (  # noqa: E402
    PassiveAggressiveClassifier,
    Perceptron,
    SGDClassifier,
    SGDRegressor,
)
from sklearn.model_selection import cross_validate  # noqa: E402
from sklearn.neural_network import MLPClassifier, MLPRegressor  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from sklearn_ext import TreeCVSplitter, tree_cross_validate  # noqa: E402


def _shuffled(X, y, seed=0):
    rows = np.random.RandomState(seed).permutation(len(y))
    return X[rows], y[rows]


def _npz(name, n_rows, binary_of=None):
    path = data_dir() / name
    if not path.is_file():
        return None
    with np.load(path, allow_pickle=False) as data:
        if "X" in data:
            X, y = data["X"], data["y"]
        else:  # a sparse matrix stored by its parts
            import scipy.sparse as sp

            values = (
                data["data"] if "data" in data else np.ones(len(data["indices"]))
            )  # a9a and w8a store binary features by their positions only
            X = sp.csr_matrix(
                (values, data["indices"], data["indptr"]), shape=tuple(data["shape"])
            ).toarray()
            y = data["y"]
    X = np.asarray(X, dtype=np.float64)
    if binary_of is not None:
        y = np.where(y == binary_of, 1, 0)
    X, y = _shuffled(X, y)
    return X[:n_rows], y[:n_rows]


def _scaled(data):
    if data is None:
        return None
    X, y = data
    return (X - X.mean(axis=0)) / (X.std(axis=0) + 1e-12), y


def panel(quick: bool):
    digits = _shuffled(*load_digits(return_X_y=True))
    cancer = _shuffled(*load_breast_cancer(return_X_y=True))
    diabetes = _scaled(_shuffled(*load_diabetes(return_X_y=True)))
    datasets = {"digits": digits}
    if not quick:
        for n in (5_000, 50_000):
            datasets[f"covtype {n // 1000}k"] = _scaled(
                _npz("covtype.npz", n, binary_of=1)
            )
        datasets["a9a 32k"] = _npz("a9a.npz", None)
    rows = []
    for data, Xy in datasets.items():
        if Xy is None:
            print(f"{data}: data file not found, row skipped")
            continue
        rows += [
            ("SGDClassifier()", SGDClassifier(random_state=0), data, Xy),
            ("Perceptron()", Perceptron(random_state=0), data, Xy),
            (
                "PassiveAggressiveClassifier()",
                PassiveAggressiveClassifier(random_state=0),
                data,
                Xy,
            ),
        ]
        if data in ("digits", "covtype 5k"):
            rows.append(("MLPClassifier()", MLPClassifier(random_state=0), data, Xy))
    rows += [
        (
            "scaler + SGDClassifier()",
            make_pipeline(StandardScaler(), SGDClassifier(random_state=0)),
            "breast_cancer",
            cancer,
        ),
        (
            "scaler + MLPClassifier()",
            make_pipeline(StandardScaler(), MLPClassifier(random_state=0)),
            "breast_cancer",
            cancer,
        ),
        ("SGDRegressor()", SGDRegressor(random_state=0), "diabetes", diabetes),
        ("MLPRegressor()", MLPRegressor(random_state=0), "diabetes", diabetes),
    ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    cv = TreeCVSplitter(10)
    print(f"load {os.getloadavg()}")
    print(
        f"| {'learner':<30} | {'data':<13} | {'tree':>7} | {'fit':>7} | "
        f"{'true gap':>17} | {'reported':>17} | auto |"
    )
    print(f"|{'-' * 32}|{'-' * 15}|{'-' * 9}|{'-' * 9}|{'-' * 19}|{'-' * 19}|------|")
    for name, learner, data, (X, y) in panel(args.quick):
        tree = tree_cross_validate(learner, X, y, cv=cv, return_run_info=True)
        own = cross_validate(learner, X, y, cv=cv)["test_score"]
        diffs = own - tree["test_score"]
        stderr = diffs.std(ddof=1) / np.sqrt(len(diffs))
        gap = tree["regime_gap"]
        reported = f"{gap['gap']:+.4f} ± {gap['stderr'] or float('nan'):.4f}"
        print(
            f"| {name:<30} | {data:<13} | {tree['test_score'].mean():>7.4f} | "
            f"{own.mean():>7.4f} | {diffs.mean():>+8.4f} ± {stderr:.4f} | "
            f"{reported:>17} | {'fit' if gap['large'] else 'keep':<4} |",
            flush=True,
        )
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
