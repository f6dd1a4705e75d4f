"""Shared pytest fixtures."""

import os

import pytest


@pytest.fixture
def global_random_seed():
    """A seed for tests that must pass for any seed (scikit-learn's convention).

    Set ``OPTUNA_TREECV_TESTS_GLOBAL_RANDOM_SEED`` to run the suite with another seed.
    """
    return int(os.environ.get("OPTUNA_TREECV_TESTS_GLOBAL_RANDOM_SEED", "42"))
