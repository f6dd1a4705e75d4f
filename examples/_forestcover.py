"""The ForestCover anomaly benchmark for the Görnitz-style examples, and a stand-in.

The semi-supervised anomaly detection benchmark of Görnitz et al. (JAIR 2013)
derived from UCI Covertype: class 2 (spruce/fir, 283,301 rows) is normal (+1),
class 4 (cottonwood/willow, 2,747 rows) is anomalous (-1), and only the 10
quantitative features (the first 10 columns) are used, standardised over these
286,048 rows. A stratified sample of ``n`` rows keeps the anomaly rate (0.96 %),
and a random ``label_fraction`` of the rows have their label revealed to
training (the ``labeled`` mask of ``SemiSupervisedAnomalyDetector.fit``); the
true labels of all rows are kept for scoring held-out folds.

The file read is ``covtype.npz`` (arrays ``X`` int16 of shape (581012, 54) and
``y`` in 1..7), the project's shared copy of the UCI data. The benchmarks
(``benchmarks/_data.py``) load it through this module too.

When the file is missing, :func:`synthetic_anomaly` draws a small stand-in
(Gaussian clusters with scattered anomalies) so the examples run anywhere.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "DATA_ENV",
    "AnomalyData",
    "default_data_path",
    "forestcover_anomaly",
    "load_anomaly_data",
    "missing_data_message",
    "synthetic_anomaly",
]

#: Environment variable naming ``covtype.npz`` (or the folder holding it).
DATA_ENV = "OPTUNA_TREECV_DATA"

#: Anomaly rate of the ForestCover benchmark (2,747 of 286,048 rows).
FORESTCOVER_ANOMALY_RATE = 2_747 / 286_048


@dataclass
class AnomalyData:
    """Rows, true labels (+1 normal, -1 anomaly), revealed-label mask, provenance."""

    X: np.ndarray
    y: np.ndarray
    labeled: np.ndarray
    source: str

    def describe(self) -> str:
        n_anomalies = int(np.sum(self.y < 0))
        return (
            f"{self.source}: {len(self.y):,} rows, {self.X.shape[1]} features, "
            f"{n_anomalies:,} anomalies ({100 * n_anomalies / len(self.y):.2f} %), "
            f"{int(self.labeled.sum()):,} labels revealed"
        )


def default_data_path() -> Path:
    """``$OPTUNA_TREECV_DATA`` (a file or a folder holding ``covtype.npz``), else
    ``../shared/data/covtype.npz`` relative to the repository."""
    env = os.environ.get(DATA_ENV)
    if env:
        path = Path(env)
        return path / "covtype.npz" if path.is_dir() else path
    return Path(__file__).resolve().parents[2] / "shared" / "data" / "covtype.npz"


def missing_data_message(path: Path) -> str:
    """How to get ``covtype.npz`` when it is not at ``path``."""
    return (
        f"{path} not found. The ForestCover anomaly benchmark is derived from UCI "
        "Covertype, saved as covtype.npz with arrays X (the 54 raw feature "
        "columns) and y (Cover_Type 1..7). To make it:\n"
        '    python -c "import numpy as np; from sklearn.datasets import '
        "fetch_covtype; d = fetch_covtype(); np.savez_compressed('covtype.npz', "
        'X=d.data.astype(np.int16), y=d.target.astype(np.int8))"\n'
        "(or see ../shared/data/SOURCES.md), then pass --data PATH or set "
        f"{DATA_ENV}. Use --synthetic for a small synthetic stand-in."
    )


@functools.lru_cache(maxsize=1)
def _forestcover_rows(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Classes 2 and 4, 10 features standardised (read-only, cached per path)."""
    with np.load(path) as data:
        keep = np.isin(data["y"], (2, 4))
        X = data["X"][keep, :10].astype(np.float64)
        y = np.where(data["y"][keep] == 2, 1, -1)
    X -= X.mean(axis=0)
    X /= X.std(axis=0)
    X.setflags(write=False)
    y.setflags(write=False)
    return X, y


def _stratified_sample(y, n, rng) -> np.ndarray:
    """Row indices: a permutation, cut to a stratified sample of ``n`` rows."""
    order = rng.permutation(len(y))
    if n is None:
        return order
    anomalies = order[y[order] < 0]
    normals = order[y[order] > 0]
    n_anomalies = max(1, round(n * len(anomalies) / len(y)))
    return rng.permutation(np.r_[anomalies[:n_anomalies], normals[: n - n_anomalies]])


def _check_fraction(label_fraction: float) -> None:
    if not 0.0 <= label_fraction <= 1.0:
        raise ValueError(
            f"label_fraction must be in [0, 1]. Got {label_fraction!r} instead."
        )


def forestcover_anomaly(
    path: str | os.PathLike,
    n: int | None = 20_000,
    *,
    label_fraction: float = 0.05,
    random_state: int = 0,
) -> AnomalyData:
    """Load a stratified ``n``-row sample of the ForestCover anomaly benchmark.

    Parameters
    ----------
    path : str or path-like
        ``covtype.npz``.
    n : int or None, default=20000
        Rows to draw (stratified, anomaly rate kept); ``None`` takes all 286,048.
    label_fraction : float, default=0.05
        Fraction of rows, drawn at random, whose label training may see.
    random_state : int, default=0
        Seeds the sample and the revealed labels.

    Returns
    -------
    data : AnomalyData
        ``X`` (n, 10) standardised, ``y`` in {+1, -1}, boolean ``labeled``.

    Examples
    --------
    >>> data = forestcover_anomaly(default_data_path(), 2_000)  # doctest: +SKIP
    >>> data.X.shape, int((data.y < 0).sum())  # doctest: +SKIP
    ((2000, 10), 19)
    """
    _check_fraction(label_fraction)
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(missing_data_message(path))
    X, y = _forestcover_rows(path.resolve())
    if n is not None and not 2 <= n <= len(y):
        raise ValueError(f"n must be in [2, {len(y)}]. Got {n!r} instead.")
    rng = np.random.RandomState(random_state)
    order = _stratified_sample(y, n, rng)
    labeled = rng.rand(len(order)) < label_fraction
    return AnomalyData(
        np.ascontiguousarray(X[order]),
        y[order],
        labeled,
        f"ForestCover anomaly sample ({path.name})",
    )


def synthetic_anomaly(
    n: int = 2_000,
    *,
    anomaly_rate: float = 0.02,
    label_fraction: float = 0.05,
    n_features: int = 10,
    random_state: int = 0,
) -> AnomalyData:
    """A small synthetic stand-in: normal rows in three Gaussian clusters, anomalies
    scattered uniformly around them (at least 10, so every one of 10 folds has one).

    Examples
    --------
    >>> data = synthetic_anomaly(500)
    >>> data.X.shape, int((data.y < 0).sum())
    ((500, 10), 10)
    """
    _check_fraction(label_fraction)
    if not isinstance(n, int) or n < 20:
        raise ValueError(f"n must be an int >= 20. Got {n!r} instead.")
    rng = np.random.RandomState(random_state)
    n_anomalies = min(n // 2, max(10, round(anomaly_rate * n)))
    n_normal = n - n_anomalies
    centers = rng.normal(scale=2.0, size=(3, n_features))
    normal = centers[rng.randint(3, size=n_normal)] + rng.normal(
        scale=0.6, size=(n_normal, n_features)
    )
    anomalies = rng.uniform(-5.0, 5.0, size=(n_anomalies, n_features))
    X = np.r_[normal, anomalies]
    y = np.r_[np.ones(n_normal, dtype=int), -np.ones(n_anomalies, dtype=int)]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    order = rng.permutation(n)
    labeled = rng.rand(n) < label_fraction
    return AnomalyData(
        np.ascontiguousarray(X[order]), y[order], labeled, "synthetic stand-in"
    )


def load_anomaly_data(
    path: str | os.PathLike | None = None,
    n: int | None = 20_000,
    *,
    synthetic: bool = False,
    label_fraction: float = 0.05,
    random_state: int = 0,
) -> AnomalyData:
    """ForestCover from ``path`` (default :func:`default_data_path`), or the
    synthetic stand-in when ``synthetic`` is set or the file is missing (with a
    notice on stderr saying how to get it)."""
    if not synthetic:
        file = Path(path) if path is not None else default_data_path()
        if file.is_file():
            return forestcover_anomaly(
                file, n, label_fraction=label_fraction, random_state=random_state
            )
        if path is not None:  # Asked for explicitly: no silent substitute.
            raise FileNotFoundError(missing_data_message(file))
        print(
            f"Notice: {missing_data_message(file)}\nUsing the synthetic stand-in.",
            file=sys.stderr,
        )
    return synthetic_anomaly(
        2_000 if n is None else n,
        label_fraction=label_fraction,
        random_state=random_state,
    )
