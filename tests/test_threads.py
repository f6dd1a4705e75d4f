"""The cached thread-pool controller (sklearn_ext.utils._threads)."""

import numpy as np  # noqa: F401  (loads the BLAS pool)
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from sklearn_ext.svm._kernel_store import available_threads
from sklearn_ext.utils._threads import blas_limits, pool_limits, threadpool_controller

pytestmark = pytest.mark.skipif(
    not any(info["user_api"] == "blas" for info in threadpool_info()),
    reason="no BLAS pool found by threadpoolctl",
)


def _blas_threads():
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def test_one_controller_per_process():
    assert threadpool_controller() is threadpool_controller()


def test_blas_limits_sets_and_restores_the_pool():
    before = _blas_threads()
    with blas_limits(1):
        assert _blas_threads() == [1] * len(before)
    assert _blas_threads() == before


def test_pool_limits_sees_limits_set_elsewhere():
    # A limit set by threadpoolctl itself (as a user or a joblib worker would)
    # is read by the cached controller: the counts are the libraries' own.
    with threadpool_limits(limits=1):
        assert max(pool_limits()) == 1
        assert available_threads() == 1
