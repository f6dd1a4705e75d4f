"""sklearn_ext.datasets: the ForestCover anomaly benchmark and the synthetic set."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from sklearn_ext.datasets import (
    AnomalyData,
    load_forestcover_anomaly,
    make_anomaly_data,
)

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "covtype.npz"
COVTYPE = Path(os.environ.get("OPTUNA_TREECV_DATA", SHARED))
if COVTYPE.is_dir():
    COVTYPE = COVTYPE / "covtype.npz"


@pytest.fixture
def tiny_covtype(tmp_path):
    """A covtype.npz of 2,000 rows: 1,900 of class 2, 50 of class 4, 50 others."""
    rng = np.random.RandomState(0)
    y = np.r_[np.full(1_900, 2), np.full(50, 4), np.full(50, 1)].astype(np.int8)
    X = rng.randint(0, 3000, size=(len(y), 54)).astype(np.int16)
    X[y == 4, :10] += 2000  # Anomalies far from the normal rows.
    path = tmp_path / "covtype.npz"
    np.savez_compressed(path, X=X, y=y)
    return path


def test_make_anomaly_data():
    data = make_anomaly_data(500, random_state=1)
    assert isinstance(data, AnomalyData)
    assert data.X.shape == (500, 10) and data.X.flags.c_contiguous
    assert set(np.unique(data.y)) == {-1, 1}
    assert int(np.sum(data.y < 0)) == 10  # At least one per fold of 10.
    np.testing.assert_allclose(data.X.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(data.X.std(axis=0), 1)
    assert data.labeled.dtype == bool and 0 < data.labeled.sum() < 100
    again = make_anomaly_data(500, random_state=1)
    assert np.array_equal(data.X, again.X)
    assert np.array_equal(data.labeled, again.labeled)
    assert not np.array_equal(data.X, make_anomaly_data(500, random_state=2).X)
    wide = make_anomaly_data(1_000, anomaly_rate=0.1, n_features=3)
    assert wide.X.shape == (1_000, 3) and int(np.sum(wide.y < 0)) == 100
    assert "500 rows, 10 features, 10 anomalies (2.00 %)" in data.describe()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"n_samples": 5}, "The 'n_samples' parameter of make_anomaly_data must be"),
        ({"label_fraction": 1.5}, "The 'label_fraction' parameter"),
        ({"anomaly_rate": 0.9}, "The 'anomaly_rate' parameter"),
        ({"n_features": 0}, "The 'n_features' parameter"),
    ],
)
def test_make_anomaly_data_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_anomaly_data(**kwargs)


def test_load_forestcover_anomaly_from_a_file(tiny_covtype):
    data = load_forestcover_anomaly(tiny_covtype, 1_000, random_state=0)
    assert data.X.shape == (1_000, 10)
    assert int(np.sum(data.y < 0)) == round(1_000 * 50 / 1_950)  # Stratified.
    assert data.source == "ForestCover anomaly sample (covtype.npz)"
    everything = load_forestcover_anomaly(tiny_covtype, None, label_fraction=0.5)
    assert everything.X.shape == (1_950, 10)  # Classes 2 and 4 only.
    np.testing.assert_allclose(everything.X.mean(axis=0), 0, atol=1e-10)
    np.testing.assert_allclose(everything.X.std(axis=0), 1)
    assert 0.4 < everything.labeled.mean() < 0.6
    # A folder holding covtype.npz, and the environment variable, name the same.
    folder = load_forestcover_anomaly(tiny_covtype.parent, 1_000, random_state=0)
    assert np.array_equal(folder.X, data.X)


def test_load_forestcover_anomaly_reads_the_environment(tiny_covtype, monkeypatch):
    monkeypatch.setenv("OPTUNA_TREECV_DATA", str(tiny_covtype.parent))
    assert load_forestcover_anomaly(n_samples=300).X.shape == (300, 10)
    monkeypatch.delenv("OPTUNA_TREECV_DATA")
    with pytest.raises(FileNotFoundError, match="OPTUNA_TREECV_DATA is not set"):
        load_forestcover_anomaly()


def test_load_forestcover_anomaly_errors(tiny_covtype, tmp_path):
    with pytest.raises(
        FileNotFoundError, match="(?s)nope.npz not found.*fetch_covtype"
    ):
        load_forestcover_anomaly(tmp_path / "nope.npz")
    with pytest.raises(ValueError, match="'n_samples' parameter .* at most 1950"):
        load_forestcover_anomaly(tiny_covtype, 5_000)
    with pytest.raises(ValueError, match="The 'n_samples' parameter"):
        load_forestcover_anomaly(tiny_covtype, 1)


@pytest.mark.skipif(not COVTYPE.is_file(), reason="needs the shared covtype.npz")
def test_forestcover_benchmark_counts():
    data = load_forestcover_anomaly(COVTYPE, 2_000, random_state=0)
    assert data.X.shape == (2_000, 10)
    assert int(np.sum(data.y < 0)) == 19  # 0.96 % of 2,000, rounded.
    assert 60 < data.labeled.sum() < 140  # About 5 %.
