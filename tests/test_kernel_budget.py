"""Fast by default: the kernel store's memory budget needs no tuning."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.datasets import make_classification
from sklearn.svm import SVC

from sklearn_ext import AlphaSeededSVC
from sklearn_ext.svm import _kernel_store
from sklearn_ext.svm._classes import as_alpha_seeded
from sklearn_ext.svm._kernel_store import kernel_budget, resolve_kernel_dtype
from sklearn_ext.svm._solver import SVMParams

N = 400


@pytest.fixture
def data():
    return make_classification(n_samples=N, n_features=6, random_state=0)


def test_auto_budget_is_half_the_memory(monkeypatch):
    monkeypatch.setattr(_kernel_store, "_memory_bytes", lambda: 8.0 * 2**30)
    assert kernel_budget("auto") == 4.0 * 2**30
    assert kernel_budget(200) == 200 * 2**20


@pytest.mark.parametrize(
    "memory, dtype, dense",
    [
        (2 * 8.2 * N * N, np.float64, True),  # float64 fits half the memory
        (2 * 4.2 * N * N, np.float32, True),  # only float32 fits
        (2 * 2.0 * N * N, np.float64, False),  # neither: bounded columns
    ],
)
def test_auto_picks_the_fastest_store_that_fits(
    monkeypatch, data, memory, dtype, dense
):
    X, y = data
    monkeypatch.setattr(_kernel_store, "_memory_bytes", lambda: memory)
    assert resolve_kernel_dtype("auto", "auto", N) == np.dtype(dtype)
    model = AlphaSeededSVC(gamma=0.1)
    store = SVMParams.of(model).kernel_store(X, 0.1)
    assert store.is_dense is dense
    assert store.nbytes <= kernel_budget("auto") + 8 * 64 * N  # + float64 slots
    fitted = model.fit(X, y)
    reference = AlphaSeededSVC(gamma=0.1, cache_size=100, kernel_dtype="float64")
    assert_allclose(
        fitted.decision_function(X), reference.fit(X, y).decision_function(X), atol=1e-2
    )


def test_the_defaults_are_auto_and_svc_default_cache_becomes_auto():
    assert AlphaSeededSVC().cache_size == "auto"
    assert AlphaSeededSVC().kernel_dtype == "auto"
    assert as_alpha_seeded(SVC()).cache_size == "auto"
    assert as_alpha_seeded(SVC(cache_size=500)).cache_size == 500


def test_bad_budget_settings_are_refused(data):
    X, y = data
    with pytest.raises(
        ValueError, match="The 'cache_size' parameter of AlphaSeededSVC"
    ):
        AlphaSeededSVC(cache_size="big").fit(X, y)
    with pytest.raises(ValueError, match="The 'kernel_dtype' parameter"):
        AlphaSeededSVC(kernel_dtype="float16").fit(X, y)
