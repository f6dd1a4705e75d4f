"""The tree and the searches distribute through joblib's Dask backend."""

import numpy as np
import pytest
from joblib import parallel_config
from numpy.testing import assert_array_equal
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier

from sklearn_ext import TreeCVSearchCV, tree_cross_validate

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def dask_client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


# SGDClassifier through the tree on purpose: the regime note is expected.
@pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")
def test_tree_and_search_under_dask(dask_client):
    X, y = load_digits(return_X_y=True)
    est = SGDClassifier(random_state=0)
    reference = tree_cross_validate(est, X, y, cv=8, return_run_info=True)
    grid = {"alpha": [1e-4, 1e-2]}
    sequential = TreeCVSearchCV(est, grid, cv=4).fit(X, y)
    with parallel_config(backend="dask"):
        distributed_run = tree_cross_validate(
            est, X, y, cv=8, n_jobs=2, return_run_info=True
        )
        search = TreeCVSearchCV(est, grid, cv=4, n_jobs=2).fit(X, y)
    assert_array_equal(distributed_run["test_score"], reference["test_score"])
    assert distributed_run["n_samples_fed"] == reference["n_samples_fed"]
    assert np.array_equal(
        search.cv_results_["mean_test_score"],
        sequential.cv_results_["mean_test_score"],
    )
