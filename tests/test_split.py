"""Tests for TreeCVSplitter and StratifiedTreeCVSplitter."""

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.datasets import load_iris
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import (
    GridSearchCV,
    HalvingGridSearchCV,
    KFold,
    StratifiedKFold,
    cross_validate,
)
from sklearn.naive_bayes import MultinomialNB

from sklearn_ext import StratifiedTreeCVSplitter, TreeCVSplitter, tree_cross_validate


@pytest.mark.parametrize("n_splits", [2, 3, 7, 23])
@pytest.mark.parametrize("shuffle", [False, True])
def test_chunks_are_kfold_test_folds(n_splits, shuffle, global_random_seed):
    X = np.zeros((23, 2))
    random_state = global_random_seed if shuffle else None
    ours = TreeCVSplitter(n_splits, shuffle=shuffle, random_state=random_state)
    ref = KFold(n_splits, shuffle=shuffle, random_state=random_state)
    sizes = []
    for (train, test), (ref_train, ref_test) in zip(
        ours.split(X), ref.split(X), strict=True
    ):
        assert_array_equal(test, ref_test)
        assert_array_equal(np.sort(train), ref_train)
        sizes.append(len(test))
    assert max(sizes) - min(sizes) <= 1
    assert ours.get_n_splits() == n_splits


def test_train_indices_follow_the_plan():
    X = np.zeros((10, 1))
    cv = TreeCVSplitter(5)
    plan = cv.plan(X)
    for fold, (train, _) in enumerate(cv.split(X)):
        assert_array_equal(train, plan.train_indices(fold))


def test_stratified_chunks_are_stratified_kfold_test_folds(global_random_seed):
    X, y = load_iris(return_X_y=True)
    ours = StratifiedTreeCVSplitter(5, shuffle=True, random_state=global_random_seed)
    ref = StratifiedKFold(5, shuffle=True, random_state=global_random_seed)
    for (_, test), (_, ref_test) in zip(ours.split(X, y), ref.split(X, y), strict=True):
        assert_array_equal(test, ref_test)
        assert_array_equal(np.bincount(y[test]), [10, 10, 10])


def test_leave_one_out():
    X = np.zeros((6, 1))
    tests = [test.tolist() for _, test in TreeCVSplitter(6).split(X)]
    assert tests == [[0], [1], [2], [3], [4], [5]]


def test_drop_in_for_cross_validate_and_searches():
    X, y = load_iris(return_X_y=True)
    # Order-independent learner: the drop-in gives KFold's scores exactly.
    ours = cross_validate(MultinomialNB(), X, y, cv=TreeCVSplitter(5))
    ref = cross_validate(MultinomialNB(), X, y, cv=KFold(5))
    assert_array_equal(ours["test_score"], ref["test_score"])
    grid = {"alpha": [0.1, 1.0]}
    search = GridSearchCV(MultinomialNB(), grid, cv=TreeCVSplitter(4)).fit(X, y)
    assert search.cv_results_["split3_test_score"].shape == (2,)
    halving = HalvingGridSearchCV(
        SGDClassifier(tol=None, random_state=0),
        {"alpha": [1e-4, 1e-3, 1e-2, 1e-1]},
        resource="max_iter",
        max_resources=20,
        min_resources=5,
        cv=TreeCVSplitter(3, shuffle=True, random_state=0),
        random_state=0,
    ).fit(X, y)
    assert "mean_test_score" in halving.cv_results_


def test_cross_validate_with_splitter_matches_tree_cross_validate():
    # The splitter's yielded order is the tree's order, so a deterministic
    # online learner gets the same fold models either way.
    X, y = load_iris(return_X_y=True)
    cv = TreeCVSplitter(5, shuffle=True, random_state=1, order="randomized")
    # One epoch without shuffling: fit streams X[train] in the yielded order.
    est = SGDClassifier(max_iter=1, tol=None, shuffle=False, random_state=0)
    ref = cross_validate(est, X, y, cv=cv, return_estimator=True)
    ours = tree_cross_validate(est, X, y, cv=cv, return_estimator=True)
    for ref_est, our_est in zip(ref["estimator"], ours["estimator"], strict=True):
        np.testing.assert_allclose(our_est.coef_, ref_est.coef_, rtol=1e-12)
    assert_array_equal(ours["test_score"], ref["test_score"])


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"n_splits": 1}, ValueError, "n_splits=2 or more, got n_splits=1"),
        ({"n_splits": 2.5}, ValueError, "The 'n_splits' parameter of TreeCVSplitter"),
        ({"shuffle": "yes"}, TypeError, "shuffle must be True or False"),
        ({"order": "sorted"}, ValueError, "The 'order' parameter of TreeCVSplitter"),
        ({"random_state": 0}, ValueError, "Setting a random_state has no effect"),
    ],
)
def test_invalid_parameters(kwargs, error, message):
    with pytest.raises(error, match=message):
        TreeCVSplitter(**kwargs)


def test_more_splits_than_samples():
    with pytest.raises(ValueError, match="n_splits=5 greater than the number of"):
        list(TreeCVSplitter(5).split(np.zeros((4, 1))))


def test_interleaved_splitter_numbers_results_by_split():
    X, y = load_iris(return_X_y=True)
    cv = TreeCVSplitter(8, shuffle=True, random_state=0, leaf_order="interleaved")
    seen = []
    ours = tree_cross_validate(MultinomialNB(), X, y, cv=cv, leaf_callback=seen.append)
    ref = cross_validate(MultinomialNB(), X, y, cv=cv)
    assert_array_equal(ours["test_score"], ref["test_score"])
    assert [leaf.fold for leaf in seen] == [0, 4, 2, 6, 1, 5, 3, 7]
    # Same chunks as the tree order, yielded bit-reversed.
    tree = list(TreeCVSplitter(8, shuffle=True, random_state=0).split(X))
    for (_, test), leaf in zip(cv.split(X), [0, 4, 2, 6, 1, 5, 3, 7], strict=True):
        assert_array_equal(test, tree[leaf][1])


def test_fold_plan_as_cv():
    X, y = load_iris(return_X_y=True)
    plan = TreeCVSplitter(5, order="randomized", random_state=0).plan(X)
    ours = tree_cross_validate(MultinomialNB(), X, y, cv=plan)
    ref = cross_validate(MultinomialNB(), X, y, cv=list(plan.split()))
    assert_array_equal(ours["test_score"], ref["test_score"])
    with pytest.raises(ValueError, match="covers 150 samples but X has 149"):
        tree_cross_validate(MultinomialNB(), X[:-1], y[:-1], cv=plan)
    with pytest.raises(ValueError, match="order='fixed' differs"):
        tree_cross_validate(MultinomialNB(), X, y, cv=plan, order="fixed")


def test_invalid_leaf_order_of_splitter():
    with pytest.raises(ValueError, match="The 'leaf_order' parameter of TreeCV"):
        TreeCVSplitter(3, leaf_order="bitrev")
