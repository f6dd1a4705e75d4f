"""Locate and load the real data sets of ``../shared/data`` for benchmarks."""

from __future__ import annotations

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


def forestcover_anomaly(
    n: int | None = None, label_fraction: float = 0.05, random_state: int = 0
):
    """The ForestCover anomaly benchmark: class 2 normal, class 4 anomalous.

    The derivation of the Görnitz examples (``examples/_forestcover.py``): the
    rows of Covertype classes 2 (283,301, label +1) and 4 (2,747, label -1),
    the 10 quantitative features standardised, rows permuted once. ``n`` draws
    a stratified sample of ``n`` rows (all rows when None); ``label_fraction``
    of the rows, drawn at random, have their label revealed to training.

    Returns
    -------
    X : ndarray of shape (n, 10)
    y : ndarray of int of shape (n,)
        True labels, +1 normal and -1 anomaly (for scoring).
    labeled : ndarray of bool of shape (n,)
        Which labels training may see.
    """
    data = _examples_forestcover().forestcover_anomaly(
        require("covtype.npz"),
        n,
        label_fraction=label_fraction,
        random_state=random_state,
    )
    return data.X, data.y, data.labeled


def _examples_forestcover():
    """``examples/_forestcover.py``, the one place the benchmark is derived."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    try:
        import _forestcover
    finally:
        sys.path.pop(0)
    return _forestcover
