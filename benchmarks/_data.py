"""Locate and load the real data sets of ``../shared/data`` for benchmarks."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import numpy as np

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


@functools.lru_cache(maxsize=1)
def _forestcover_rows():
    """Classes 2 and 4 of Covertype, 10 features standardised (read-only, cached)."""
    with np.load(require("covtype.npz")) as data:
        keep = np.isin(data["y"], (2, 4))
        X = data["X"][keep, :10].astype(np.float64)
        y = np.where(data["y"][keep] == 2, 1, -1)
    X -= X.mean(axis=0)
    X /= X.std(axis=0)
    X.setflags(write=False)
    y.setflags(write=False)
    return X, y


def forestcover_anomaly(
    n: int | None = None, label_fraction: float = 0.05, random_state: int = 0
):
    """The ForestCover anomaly benchmark: class 2 normal, class 4 anomalous.

    The rows of Covertype classes 2 (283,301, label +1) and 4 (2,747, label -1),
    the 10 quantitative features (the first 10 columns), standardised over these
    286,048 rows; rows permuted once. ``n`` draws a stratified sample of ``n``
    rows (the anomaly rate kept); ``label_fraction`` of the rows, drawn at
    random, have their label revealed to training.

    Returns
    -------
    X : ndarray of shape (n, 10)
    y : ndarray of int of shape (n,)
        True labels, +1 normal and -1 anomaly (for scoring).
    labeled : ndarray of bool of shape (n,)
        Which labels training may see.
    """
    if not 0.0 <= label_fraction <= 1.0:
        raise ValueError(
            f"label_fraction must be in [0, 1]; got {label_fraction!r} instead."
        )
    X, y = _forestcover_rows()
    rng = np.random.RandomState(random_state)
    order = rng.permutation(len(y))
    if n is not None:
        if not 2 <= n <= len(y):
            raise ValueError(f"n must be in [2, {len(y)}]; got {n!r} instead.")
        anomalies = order[y[order] < 0]
        normals = order[y[order] > 0]
        n_anomalies = max(1, round(n * len(anomalies) / len(y)))
        order = rng.permutation(
            np.r_[anomalies[:n_anomalies], normals[: n - n_anomalies]]
        )
    labeled = rng.rand(len(order)) < label_fraction
    return np.ascontiguousarray(X[order]), y[order], labeled
