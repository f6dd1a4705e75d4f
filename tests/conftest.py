"""Shared pytest fixtures."""

import os

import pytest
from sklearn.datasets import make_classification
from sklearn.preprocessing import scale


@pytest.fixture
def global_random_seed():
    """A seed for tests that must pass for any seed (scikit-learn's convention).

    Set ``OPTUNA_TREECV_TESTS_GLOBAL_RANDOM_SEED`` to run the suite with another seed.
    """
    return int(os.environ.get("OPTUNA_TREECV_TESTS_GLOBAL_RANDOM_SEED", "42"))


@pytest.fixture
def svm_binary():
    """A small, noisy two-class problem, standardised: the SVM tests' default data."""
    X, y = make_classification(
        n_samples=300, n_features=8, n_informative=5, flip_y=0.05, random_state=0
    )
    return scale(X), y


@pytest.fixture
def chains_on_small_data(monkeypatch):
    """Seeding chains on any data size (tests keep their data small)."""
    from sklearn_ext.svm import _cv

    monkeypatch.setattr(_cv, "MIN_ROWS_FOR_CHAINS", 0)


@pytest.fixture(scope="module")
def client():
    """A Dask client of an in-process LocalCluster (two one-thread workers),
    one per test module that asks for it."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()
