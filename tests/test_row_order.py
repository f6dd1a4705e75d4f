"""Rows stored in an order related to y are told, not silently trusted."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_diabetes, load_iris
from sklearn.linear_model import SGDClassifier, SGDRegressor
from sklearn.naive_bayes import GaussianNB

from sklearn_ext import TreeCVSearchCV, TreeCVSplitter, tree_cross_validate
from sklearn_ext.model_selection import TreeCVOrderWarning
from sklearn_ext.model_selection._order import order_relation


def _one_pass(cls=SGDClassifier):
    return cls(max_iter=1, tol=None, shuffle=False, random_state=0)


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)  # stored sorted by class


def test_rows_sorted_by_class_are_told_once(iris):
    X, y = iris
    with pytest.warns(TreeCVOrderWarning, match=r"share their label 9\d\.\d%"):
        tree_cross_validate(_one_pass(), X, y, cv=5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        TreeCVSearchCV(_one_pass(), {"alpha": [1e-4, 1e-3, 1e-2]}, cv=5).fit(X, y)
    assert sum(w.category is TreeCVOrderWarning for w in caught) == 1
    # A shuffled splitter keeps each chunk's rows in their stored order.
    with pytest.warns(TreeCVOrderWarning):
        tree_cross_validate(
            _one_pass(), X, y, cv=TreeCVSplitter(5, shuffle=True, random_state=0)
        )


def test_shuffled_rows_and_randomized_order_are_not_told(iris):
    X, y = iris
    rows = np.random.RandomState(0).permutation(len(y))
    with warnings.catch_warnings():
        warnings.simplefilter("error", TreeCVOrderWarning)
        tree_cross_validate(_one_pass(), X[rows], y[rows], cv=5)
        tree_cross_validate(_one_pass(), X, y, cv=5, order="randomized", random_state=0)
        # Order-independent models: nothing to say.
        tree_cross_validate(GaussianNB(), X, y, cv=5)


def test_a_continuous_target_in_order_is_told():
    X, y = load_diabetes(return_X_y=True)
    rows = np.argsort(y)
    with pytest.warns(TreeCVOrderWarning, match="targets correlate"):
        tree_cross_validate(_one_pass(SGDRegressor), X[rows], y[rows], cv=5)
    assert order_relation(y) is None  # the file's own order


def test_the_threshold_leaves_ordinary_files_alone():
    rng = np.random.default_rng(0)
    assert order_relation(rng.integers(0, 3, size=5000)) is None
    blocks = np.repeat(np.arange(50) % 2, 100)  # runs of 100 rows
    assert order_relation(blocks) is not None


def test_runs_of_a_rare_class_are_told():
    # 10 % positives in runs of five, as in Covertype's first rows: neighbours
    # agree 96 % of the time against 82 % by chance, an excess of 14 points
    # but 78 % of the room above chance (kappa).
    rng = np.random.RandomState(0)
    y = np.zeros(5000, dtype=int)
    for start in rng.choice(np.arange(0, 5000, 5), size=100, replace=False):
        y[start : start + 5] = 1
    words = order_relation(y)
    assert words is not None and "share their label 9" in words
    assert order_relation(rng.permutation(y)) is None
