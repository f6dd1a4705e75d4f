"""Tests for the fold plan: chunks, tree shape and feeding order."""

import math

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from sklearn_ext import FoldPlan
from sklearn_ext._fast._random import splitmix64


def _contiguous(n_samples, n_splits):
    return np.array_split(np.arange(n_samples), n_splits)


def test_paper_figure_1_order():
    # Figure 1 of the paper: LOOCV on four points; z3 and z4 come before z2.
    plan = FoldPlan(_contiguous(4, 4), 4)
    assert_array_equal(plan.train_indices(0), [2, 3, 1])
    assert_array_equal(plan.train_indices(1), [2, 3, 0])
    assert_array_equal(plan.train_indices(2), [0, 1, 3])
    assert_array_equal(plan.train_indices(3), [0, 1, 2])


@pytest.mark.parametrize("n_samples", [2, 3, 7, 16, 33])
def test_every_fold_partitions_the_samples(n_samples):
    for n_splits in range(2, n_samples + 1):
        plan = FoldPlan(_contiguous(n_samples, n_splits), n_samples)
        for fold in range(n_splits):
            train, test = plan.train_indices(fold), plan.test_indices(fold)
            both = np.concatenate([train, test])
            assert_array_equal(np.sort(both), np.arange(n_samples))


@pytest.mark.parametrize("n_splits", [2, 3, 5, 10, 100, 257])
def test_n_samples_fed_is_logarithmic(n_splits):
    n_samples = 1000
    plan = FoldPlan(_contiguous(n_samples, n_splits), n_samples)
    fed = plan.n_samples_fed()
    # Each row is fed once per level of its leaf's depth.
    assert fed <= (math.log2(n_splits) + 1) * n_samples
    assert fed >= math.floor(math.log2(n_splits)) * n_samples
    # Every non-root node is fed exactly once: the sum over the tree's feeds.
    nodes, stack = [], [plan.root]
    while stack:
        start, end = stack.pop()
        if start != end:
            children = plan.children(start, end)
            nodes.extend(children)
            stack.extend(children)
    assert fed == sum(len(plan.feed(*node)) for node in nodes)


def test_segments_are_sibling_half_first():
    plan = FoldPlan(_contiguous(16, 8), 16)
    segments = plan.train_segments(5)
    assert [len(s) for s in segments] == [8, 4, 2]
    assert_array_equal(segments[0], np.arange(8))  # sibling half: chunks 0-3
    assert_array_equal(segments[1], np.arange(12, 16))  # sibling quarter: 6-7
    assert_array_equal(segments[2], [8, 9])  # sibling chunk: 4


def test_randomized_order_is_a_seeded_permutation_per_node(global_random_seed):
    chunks = _contiguous(40, 5)
    fixed = FoldPlan(chunks, 40)
    plan = FoldPlan(chunks, 40, order="randomized", seed=global_random_seed)
    again = FoldPlan(chunks, 40, order="randomized", seed=global_random_seed)
    other = FoldPlan(chunks, 40, order="randomized", seed=global_random_seed + 1)
    differs = False
    for fold in range(5):
        for a, b, c, f in zip(
            plan.train_segments(fold),
            again.train_segments(fold),
            other.train_segments(fold),
            fixed.train_segments(fold),
            strict=True,
        ):
            assert_array_equal(a, b)
            assert_array_equal(np.sort(a), np.sort(f))
            differs |= not np.array_equal(a, c)
    assert differs
    # The test chunks themselves do not move.
    assert_array_equal(plan.test_indices(3), fixed.test_indices(3))


def test_splitmix64_reference_values():
    # Published first outputs of splitmix64 seeded with 0: the stream is portable.
    assert splitmix64(0, 2).tolist() == [
        0xE220A8397B1DCDAF,
        0x6E789E6AA1B965F4,
    ]


def test_sample_order_is_read_only():
    plan = FoldPlan(_contiguous(6, 3), 6)
    with pytest.raises(ValueError, match="read-only"):
        plan.sample_order[0] = 5


@pytest.mark.parametrize(
    "folds, message",
    [
        ([[0, 1], [1, 2]], "0 are in none and 1 in more than one"),
        ([[0], [2]], "1 are in none and 0 in more than one"),
        ([[0, 1, 2], []], r"fold\(s\) \[1\] are empty"),
        ([[0, 1, 2]], "at least 2 chunks"),
        ([[0, 1], [2, 7]], "do not partition"),
    ],
)
def test_invalid_partitions(folds, message):
    with pytest.raises(ValueError, match=message):
        FoldPlan(folds, 3)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"order": "sorted"}, "The 'order' parameter of FoldPlan must be a str"),
        ({"order": "randomized"}, "The 'seed' parameter of FoldPlan must be an int"),
        ({"order": "randomized", "seed": -1}, "Got -1 instead"),
    ],
)
def test_invalid_order_and_seed(kwargs, message):
    with pytest.raises(ValueError, match=message):
        FoldPlan(_contiguous(4, 2), 4, **kwargs)


def test_invalid_fold_and_node():
    plan = FoldPlan(_contiguous(8, 4), 8)
    with pytest.raises(ValueError, match=r"fold must be an int in \[0, 3\]"):
        plan.test_indices(4)
    with pytest.raises(ValueError, match="is not a node"):
        plan.feed(1, 2)
    with pytest.raises(ValueError, match="root node"):
        plan.feed(0, 3)


@pytest.mark.parametrize(
    "n_splits, expected",
    [
        (8, [0, 4, 2, 6, 1, 5, 3, 7]),
        (4, [0, 2, 1, 3]),
        (5, [0, 3, 2, 4, 1]),
    ],
)
def test_interleaved_leaf_order(n_splits, expected):
    plan = FoldPlan(
        _contiguous(2 * n_splits, n_splits), 2 * n_splits, leaf_order="interleaved"
    )
    assert plan.leaf_order.tolist() == expected
    assert_array_equal(plan.leaf_order[plan.split_index], np.arange(n_splits))
    tests = [test for _, test in plan.split()]
    assert_array_equal(tests[1], plan.test_indices(expected[1]))


@pytest.mark.parametrize("leaf_order", ["random", [0, 0, 1], [0, 1], [0.0, 1, 2]])
def test_invalid_leaf_order(leaf_order):
    with pytest.raises(ValueError, match="The 'leaf_order' parameter must be"):
        FoldPlan(_contiguous(6, 3), 6, leaf_order=leaf_order)


def test_reordered_plan_keeps_chunks_and_evaluates_in_the_given_order():
    plan = FoldPlan(_contiguous(12, 4), 12, leaf_order="interleaved")
    moved = plan.reordered([3, 0, 2, 1])  # base splits 3, 0, 2, 1 -> leaves 0..3
    for leaf, split in enumerate([3, 0, 2, 1]):
        base_chunk = plan.leaf_order[split]
        assert_array_equal(moved.test_indices(leaf), plan.test_indices(base_chunk))
    assert moved.order == plan.order
    # Split numbers stay the base plan's: split 3 sits at leaf 0, and so on.
    assert moved.leaf_order.tolist() == [1, 3, 2, 0]
    assert moved.split_index.tolist() == [3, 0, 2, 1]
    with pytest.raises(ValueError, match="permutation of range"):
        plan.reordered([0, 0, 1, 2])
