"""Locate and load the real data sets of ``../shared/data`` for benchmarks."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from sklearn_ext.datasets import load_forestcover_anomaly

DATA_ENV = "OPTUNA_TREECV_DATA"


def data_dir() -> Path:
    """``$OPTUNA_TREECV_DATA`` or ``shared/data`` beside the repository."""
    if DATA_ENV in os.environ:
        return Path(os.environ[DATA_ENV])
    return Path(__file__).resolve().parents[2] / "shared" / "data"


def require(name: str) -> Path:
    """Path of a data file, or exit with a clear message when it is absent."""
    path = data_dir() / name
    if not path.is_file():
        print(
            f"{path} not found: this benchmark needs the project's shared data "
            f"({name}). Set {DATA_ENV} to the folder that holds it.",
            file=sys.stderr,
        )
        sys.exit(0)
    return path


def covtype_binary(seed: int = 0, n_samples: int | None = None):
    """Covertype, class 1 vs rest in {-1, +1}, standardised, rows permuted once."""
    with np.load(require("covtype.npz")) as data:
        X, y = data["X"].astype(np.float64), data["y"]
    X -= X.mean(axis=0)
    X /= X.std(axis=0)
    t = np.where(y == 1, 1, -1)
    order = np.random.RandomState(seed).permutation(len(t))
    if n_samples is not None:
        order = order[:n_samples]
    return np.ascontiguousarray(X[order]), t[order]


def forestcover_anomaly(
    n: int | None = None, label_fraction: float = 0.05, random_state: int = 0
):
    """The ForestCover anomaly benchmark: class 2 normal, class 4 anomalous.

    :func:`sklearn_ext.datasets.load_forestcover_anomaly` on the shared
    ``covtype.npz``: the rows of Covertype classes 2 (283,301, label +1) and 4
    (2,747, label -1), the 10 quantitative features standardised, rows permuted
    once. ``n`` draws a stratified sample of ``n`` rows (all rows when None);
    ``label_fraction`` of the rows, drawn at random, have their label revealed
    to training.

    Returns
    -------
    X : ndarray of shape (n, 10)
    y : ndarray of int of shape (n,)
        True labels, +1 normal and -1 anomaly (for scoring).
    labeled : ndarray of bool of shape (n,)
        Which labels training may see.
    """
    data = load_forestcover_anomaly(
        require("covtype.npz"),
        n,
        label_fraction=label_fraction,
        random_state=random_state,
    )
    return data.X, data.y, data.labeled


def svm_dataset(name: str, n_rows: int | None = None):
    """An SVM set of the shared data (heart, madelon, a9a, w8a), or None if absent.

    Dense sets come as float64 arrays, the binary sparse ones (a9a, w8a) as CSR;
    madelon is standardised. ``n_rows`` draws a stratified sample (seed 0).
    """
    path = data_dir() / f"{name}.npz"
    if not path.is_file():
        return None
    with np.load(path, allow_pickle=False) as npz:
        if "X" in npz:
            X = np.asarray(npz["X"], dtype=np.float64)
        else:
            indices = npz["indices"]
            X = sp.csr_matrix(
                (np.ones(len(indices)), indices, npz["indptr"]),
                shape=tuple(npz["shape"]),
            )
        y = np.asarray(npz["y"])
    if name == "madelon":
        X = StandardScaler().fit_transform(X)
    if n_rows is not None and n_rows < X.shape[0]:
        X, _, y, _ = train_test_split(
            X, y, train_size=n_rows, stratify=y, random_state=0
        )
    return X, y
