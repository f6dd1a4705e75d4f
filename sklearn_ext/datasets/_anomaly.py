"""The ForestCover anomaly benchmark (Görnitz et al., 2013) and a synthetic stand-in."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from numbers import Integral, Real
from pathlib import Path

import numpy as np
from sklearn.utils._param_validation import Interval

from sklearn_ext.utils._param_validation import validate_params

#: Environment variable naming ``covtype.npz`` or the folder that holds it.
DATA_ENV = "OPTUNA_TREECV_DATA"

#: Anomaly rate of the ForestCover benchmark (2,747 of 286,048 rows).
FORESTCOVER_ANOMALY_RATE = 2_747 / 286_048


@dataclass
class AnomalyData:
    """Rows, true labels and revealed-label mask of an anomaly detection data set.

    Attributes
    ----------
    X : ndarray of shape (n_samples, n_features)
        The rows, standardised.
    y : ndarray of int of shape (n_samples,)
        True labels, +1 normal and -1 anomaly: what held-out folds are scored on.
    labeled : ndarray of bool of shape (n_samples,)
        Which labels training may see (the ``labeled`` mask of
        :meth:`SemiSupervisedAnomalyDetector.fit
        <sklearn_ext.SemiSupervisedAnomalyDetector.fit>`).
    source : str
        Where the rows come from.

    Examples
    --------
    >>> from sklearn_ext.datasets import make_anomaly_data
    >>> print(make_anomaly_data(500).describe())
    synthetic stand-in: 500 rows, 10 features, 10 anomalies (2.00 %), 19 labels revealed
    """

    X: np.ndarray
    y: np.ndarray
    labeled: np.ndarray
    source: str

    def describe(self) -> str:
        """One line: rows, features, anomalies and revealed labels."""
        n_anomalies = int(np.sum(self.y < 0))
        return (
            f"{self.source}: {len(self.y):,} rows, {self.X.shape[1]} features, "
            f"{n_anomalies:,} anomalies ({100 * n_anomalies / len(self.y):.2f} %), "
            f"{int(self.labeled.sum()):,} labels revealed"
        )


def _covtype_path(path: str | os.PathLike | None) -> Path:
    """``path``, else ``$OPTUNA_TREECV_DATA``; a folder means its ``covtype.npz``."""
    if path is None:
        env = os.environ.get(DATA_ENV)
        if not env:
            raise FileNotFoundError(missing_data_message(None))
        path = env
    path = Path(path)
    return path / "covtype.npz" if path.is_dir() else path


def missing_data_message(path: Path | None) -> str:
    """How to get ``covtype.npz`` when it is not at ``path`` (None: not given)."""
    where = (
        f"{path} not found."
        if path is not None
        else f"No path given and {DATA_ENV} is not set."
    )
    return (
        f"{where} The ForestCover anomaly benchmark is derived from UCI "
        "Covertype, saved as covtype.npz with arrays X (the 54 raw feature "
        "columns) and y (Cover_Type 1..7). To make it:\n"
        '    python -c "import numpy as np; from sklearn.datasets import '
        "fetch_covtype; d = fetch_covtype(); np.savez_compressed('covtype.npz', "
        'X=d.data.astype(np.int16), y=d.target.astype(np.int8))"\n'
        f"then pass its path or set {DATA_ENV} to it (or to its folder)."
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


@validate_params(
    {
        "path": [str, os.PathLike, None],
        "n_samples": [Interval(Integral, 2, None, closed="left"), None],
        "label_fraction": [Interval(Real, 0, 1, closed="both")],
        "random_state": [Interval(Integral, 0, None, closed="left")],
    }
)
def load_forestcover_anomaly(
    path: str | os.PathLike | None = None,
    n_samples: int | None = 20_000,
    *,
    label_fraction: float = 0.05,
    random_state: int = 0,
) -> AnomalyData:
    """Load a stratified sample of the ForestCover anomaly benchmark.

    The semi-supervised anomaly detection benchmark of Görnitz, Kloft, Rieck and
    Brefeld (JAIR 2013), derived from UCI Covertype: class 2 (spruce/fir,
    283,301 rows) is normal (+1), class 4 (cottonwood/willow, 2,747 rows) is
    anomalous (-1), and only the 10 quantitative features (the first 10
    columns) are kept, standardised over these 286,048 rows. A stratified
    sample keeps the anomaly rate (0.96 %); a random ``label_fraction`` of the
    rows have their label revealed to training, the true labels of all rows are
    kept for scoring. The rows are read once per file and cached.

    Parameters
    ----------
    path : str, path-like or None, default=None
        ``covtype.npz`` (arrays ``X`` of shape (581012, 54) and ``y`` in 1..7),
        or a folder holding it. None reads the environment variable
        ``OPTUNA_TREECV_DATA`` (a file or a folder). Nothing is downloaded.
    n_samples : int or None, default=20000
        Rows to draw (stratified); None takes all 286,048.
    label_fraction : float, default=0.05
        Fraction of rows, drawn at random, whose label training may see.
    random_state : int, default=0
        Seeds the sample and the revealed labels.

    Returns
    -------
    data : AnomalyData
        ``X`` of shape (n_samples, 10), ``y`` in {+1, -1}, boolean ``labeled``.

    Raises
    ------
    FileNotFoundError
        When the file is missing; the message says how to make it from
        :func:`sklearn.datasets.fetch_covtype`.

    See Also
    --------
    make_anomaly_data : A small synthetic stand-in, no file needed.

    Examples
    --------
    >>> from sklearn_ext.datasets import load_forestcover_anomaly
    >>> data = load_forestcover_anomaly("covtype.npz", 2_000)  # doctest: +SKIP
    >>> data.X.shape, int((data.y < 0).sum())  # doctest: +SKIP
    ((2000, 10), 19)
    """
    file = _covtype_path(path)
    if not file.is_file():
        raise FileNotFoundError(missing_data_message(file))
    X, y = _forestcover_rows(file.resolve())
    if n_samples is not None and n_samples > len(y):
        raise ValueError(
            f"The 'n_samples' parameter of load_forestcover_anomaly must be at "
            f"most {len(y)} (the rows of the benchmark) or None. "
            f"Got {n_samples!r} instead."
        )
    rng = np.random.RandomState(random_state)
    order = _stratified_sample(y, n_samples, rng)
    labeled = rng.rand(len(order)) < label_fraction
    return AnomalyData(
        np.ascontiguousarray(X[order]),
        y[order],
        labeled,
        f"ForestCover anomaly sample ({file.name})",
    )


@validate_params(
    {
        "n_samples": [Interval(Integral, 20, None, closed="left")],
        "anomaly_rate": [Interval(Real, 0, 0.5, closed="both")],
        "label_fraction": [Interval(Real, 0, 1, closed="both")],
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "random_state": [Interval(Integral, 0, None, closed="left")],
    }
)
def make_anomaly_data(
    n_samples: int = 2_000,
    *,
    anomaly_rate: float = 0.02,
    label_fraction: float = 0.05,
    n_features: int = 10,
    random_state: int = 0,
) -> AnomalyData:
    """Draw a small synthetic anomaly detection data set.

    Normal rows come from three Gaussian clusters, anomalies are scattered
    uniformly around them; there are at least 10 anomalies, so every fold of a
    stratified 10-fold CV holds one. Features are standardised.

    Parameters
    ----------
    n_samples : int, default=2000
        Rows, at least 20.
    anomaly_rate : float, default=0.02
        Fraction of anomalies (at least 10 rows, at most half).
    label_fraction : float, default=0.05
        Fraction of rows, drawn at random, whose label training may see.
    n_features : int, default=10
        Columns.
    random_state : int, default=0
        Seeds the clusters, the rows and the revealed labels.

    Returns
    -------
    data : AnomalyData
        ``X`` of shape (n_samples, n_features), ``y`` in {+1, -1}, boolean
        ``labeled``.

    See Also
    --------
    load_forestcover_anomaly : The real benchmark this stands in for.

    Examples
    --------
    >>> from sklearn_ext.datasets import make_anomaly_data
    >>> data = make_anomaly_data(500)
    >>> data.X.shape, int((data.y < 0).sum())
    ((500, 10), 10)
    """
    rng = np.random.RandomState(random_state)
    n_anomalies = min(n_samples // 2, max(10, round(anomaly_rate * n_samples)))
    n_normal = n_samples - n_anomalies
    centers = rng.normal(scale=2.0, size=(3, n_features))
    normal = centers[rng.randint(3, size=n_normal)] + rng.normal(
        scale=0.6, size=(n_normal, n_features)
    )
    anomalies = rng.uniform(-5.0, 5.0, size=(n_anomalies, n_features))
    X = np.r_[normal, anomalies]
    y = np.r_[np.ones(n_normal, dtype=int), -np.ones(n_anomalies, dtype=int)]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    order = rng.permutation(n_samples)
    labeled = rng.rand(n_samples) < label_fraction
    return AnomalyData(
        np.ascontiguousarray(X[order]), y[order], labeled, "synthetic stand-in"
    )
