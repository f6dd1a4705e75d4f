"""Cross-validation splitters that yield training rows in TreeCV feeding order."""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Iterator

import numpy as np
from sklearn.model_selection import StratifiedKFold, check_cv
from sklearn.model_selection._split import BaseCrossValidator
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import type_of_target

from sklearn_ext.model_selection._plan import (
    FoldPlan,
    _draw_seed,
    _num_samples,
    check_order,
)

__all__ = ["TreeCVSplitter", "StratifiedTreeCVSplitter", "make_fold_plan"]


class TreeCVSplitter(BaseCrossValidator):
    """K-fold splitter whose training indices follow the TreeCV feeding order.

    The chunks are exactly the test folds of :class:`~sklearn.model_selection.KFold`
    with the same ``n_splits``, ``shuffle`` and ``random_state``: ``k`` chunks of
    sizes differing by at most one, ``k`` from 2 to ``n_samples`` (leave-one-out).
    For fold ``i``, :meth:`split` yields the test rows of chunk ``i`` and the
    training rows in the order the TreeCV recursion feeds them on the path to
    leaf ``i``: the sibling half first, then the sibling quarter, and so on.
    A learner that streams ``X[train]`` in the yielded order therefore sees
    exactly the tree's order, and :func:`tree_cross_validate` given this
    splitter trains the same models with about ``log2(2k)`` data passes.

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds. Must be at least 2.
    shuffle : bool, default=False
        Whether to shuffle the rows before cutting them into chunks.
    random_state : int, RandomState instance or None, default=None
        Controls the shuffling of rows (when ``shuffle=True``) and the
        randomized feeding order (when ``order="randomized"``). Pass an int for
        reproducible output across calls.
    order : {"fixed", "randomized"}, default="fixed"
        ``"fixed"`` feeds each update's chunks in ascending chunk order;
        ``"randomized"`` feeds each update's rows in a random order.
    leaf_order : {"tree", "interleaved"}, default="tree"
        Order in which the folds are yielded. ``"tree"`` yields chunk ``i`` as
        fold ``i`` (the same test folds, in the same order, as ``KFold``).
        ``"interleaved"`` yields the leaves bit-reversed (``0, 4, 2, 6, 1, 5, 3,
        7`` for ``k = 8``): consecutive folds share little training, so when a
        search runs several folds of a candidate at once on parallel workers,
        each later fold finds the longest possible prefix already trained.

    See Also
    --------
    StratifiedTreeCVSplitter : The same with class proportions kept per chunk.
    tree_cross_validate : Runs the TreeCV recursion on such a plan.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext import TreeCVSplitter
    >>> X = np.zeros((8, 1))
    >>> cv = TreeCVSplitter(n_splits=4)
    >>> for train, test in cv.split(X):
    ...     print(test, train)
    [0 1] [4 5 6 7 2 3]
    [2 3] [4 5 6 7 0 1]
    [4 5] [0 1 2 3 6 7]
    [6 7] [0 1 2 3 4 5]
    """

    def __init__(
        self,
        n_splits: int = 5,
        *,
        shuffle: bool = False,
        random_state=None,
        order: str = "fixed",
        leaf_order: str = "tree",
    ) -> None:
        name = type(self).__name__
        if not isinstance(n_splits, numbers.Integral) or isinstance(n_splits, bool):
            raise ValueError(
                f"The 'n_splits' parameter of {name} must be an int in the range "
                f"[2, inf). Got {n_splits!r} instead."
            )
        if n_splits < 2:
            raise ValueError(
                "k-fold cross-validation requires at least one train/test split "
                f"by setting n_splits=2 or more, got n_splits={n_splits}."
            )
        if not isinstance(shuffle, bool):
            raise TypeError(f"shuffle must be True or False; got {shuffle!r}")
        check_order(order, name)
        if leaf_order not in ("tree", "interleaved"):
            raise ValueError(
                f"The 'leaf_order' parameter of {name} must be a str among "
                f"{{'tree', 'interleaved'}}. Got {leaf_order!r} instead."
            )
        if not shuffle and order == "fixed" and random_state is not None:
            raise ValueError(
                "Setting a random_state has no effect since shuffle is False and "
                "order is 'fixed'. You should leave random_state to its default "
                "(None), or set shuffle=True or order='randomized'."
            )
        self.n_splits = int(n_splits)
        self.shuffle = shuffle
        self.random_state = random_state
        self.order = order
        self.leaf_order = leaf_order

    def _test_folds(self, X, y=None, groups=None) -> list[np.ndarray]:
        """KFold's test folds, computed in O(n) (KFold.split is O(n k))."""
        n_samples = _num_samples(X)
        if self.n_splits > n_samples:
            raise ValueError(
                f"Cannot have number of splits n_splits={self.n_splits} greater "
                f"than the number of samples: n_samples={n_samples}."
            )
        indices = np.arange(n_samples)
        if self.shuffle:
            check_random_state(self.random_state).shuffle(indices)
        sizes = np.full(self.n_splits, n_samples // self.n_splits)
        sizes[: n_samples % self.n_splits] += 1
        # KFold.split yields each test fold sorted (it goes through a mask).
        return [np.sort(fold) for fold in np.split(indices, np.cumsum(sizes)[:-1])]

    def plan(self, X, y=None, groups=None) -> FoldPlan:
        """Return the :class:`FoldPlan` this splitter yields folds from.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,), default=None
            Targets (needed by the stratified variant).
        groups : object
            Always ignored, exists for compatibility.

        Returns
        -------
        plan : FoldPlan
        """
        seed = _draw_seed(self.random_state) if self.order == "randomized" else None
        return FoldPlan(
            self._test_folds(X, y, groups),
            _num_samples(X),
            order=self.order,
            seed=seed,
            leaf_order=self.leaf_order,
        )

    def split(self, X, y=None, groups=None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Generate training rows in TreeCV feeding order and test rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,), default=None
            Targets.
        groups : object
            Always ignored, exists for compatibility.

        Yields
        ------
        train : ndarray
            Training rows of the fold, in feeding order (not sorted).
        test : ndarray
            Test rows of the fold.
        """
        yield from self.plan(X, y, groups).split()

    def _iter_test_indices(self, X=None, y=None, groups=None):
        plan = self.plan(X, y, groups)
        for leaf in plan.leaf_order:
            yield plan.test_indices(leaf)

    def get_n_splits(self, X=None, y=None, groups=None) -> int:
        """Return the number of splitting iterations, ``n_splits``."""
        return self.n_splits


class StratifiedTreeCVSplitter(TreeCVSplitter):
    """Stratified variant of :class:`TreeCVSplitter` for classification.

    The chunks are the test folds of
    :class:`~sklearn.model_selection.StratifiedKFold` with the same parameters,
    so each chunk keeps the class proportions of ``y``; training rows follow the
    TreeCV feeding order as in :class:`TreeCVSplitter`.

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds. Must be at least 2.
    shuffle : bool, default=False
        Whether to shuffle each class's rows before cutting them into chunks.
    random_state : int, RandomState instance or None, default=None
        Controls the shuffling and the randomized feeding order.
    order : {"fixed", "randomized"}, default="fixed"
        Feeding order, see :class:`TreeCVSplitter`.
    leaf_order : {"tree", "interleaved"}, default="tree"
        Order of the folds, see :class:`TreeCVSplitter`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext import StratifiedTreeCVSplitter
    >>> X, y = np.zeros((6, 1)), np.array([0, 0, 0, 1, 1, 1])
    >>> cv = StratifiedTreeCVSplitter(n_splits=3)
    >>> [test.tolist() for _, test in cv.split(X, y)]
    [[0, 3], [1, 4], [2, 5]]
    """

    def _test_folds(self, X, y=None, groups=None) -> list[np.ndarray]:
        chunker = StratifiedKFold(
            self.n_splits,
            shuffle=self.shuffle,
            random_state=self.random_state if self.shuffle else None,
        )
        return [test for _, test in chunker.split(X, y, groups)]


class RoutedSplitter:
    """A splitter called with the metadata routed to its ``split``.

    Metadata routing may send ``split`` more than ``groups`` (any metadata the
    splitter requests); the plan asks this wrapper for the splits with
    ``(X, y, groups)`` and it passes the routed parameters instead.

    Parameters
    ----------
    splitter : cross-validation generator
        The user's splitter.
    params : dict
        The parameters routed to its ``split`` (``groups`` included).
    """

    def __init__(self, splitter, params: dict) -> None:
        self.splitter = splitter
        self.params = params

    def split(self, X, y=None, groups=None):
        """The splitter's splits, given the routed parameters."""
        return self.splitter.split(X, y, **self.params)

    def get_n_splits(self, X=None, y=None, groups=None) -> int:
        """The splitter's number of splits, given the routed parameters."""
        return self.splitter.get_n_splits(X, y, **self.params)

    def __repr__(self) -> str:
        return repr(self.splitter)


def routed_cv(cv, split_params: dict):
    """``cv`` as the plan should call it: wrapped when ``split`` takes more
    routed metadata than ``groups``."""
    if hasattr(cv, "split") and set(split_params) - {"groups"}:
        return RoutedSplitter(cv, dict(split_params))
    return cv


def make_fold_plan(
    cv, X, y=None, groups=None, *, classifier=False, order=None, random_state=None
) -> FoldPlan:
    """Turn a ``cv`` argument into the run's :class:`FoldPlan`.

    Parameters
    ----------
    cv : int, FoldPlan, TreeCVSplitter or cross-validation generator
        See :func:`tree_cross_validate`. A plan is returned as it is.
    X, y, groups : array-like
        The data, targets and groups handed to the splitter.
    classifier : bool, default=False
        Whether an int ``cv`` should stratify on a binary or multiclass ``y``
        (see :func:`stratifies`).
    order : {"fixed", "randomized"} or None, default=None
        Feeding order; ``None`` takes a ``TreeCVSplitter``'s own order.
    random_state : int, RandomState instance or None, default=None
        Seed of the randomized order when ``order`` is given.

    Returns
    -------
    plan : FoldPlan
    """
    n_samples = _num_samples(X)
    if cv is None:
        cv = 5  # as in scikit-learn's check_cv
    if isinstance(cv, FoldPlan):
        if cv.n_samples != n_samples:
            raise ValueError(
                f"The fold plan given as cv covers {cv.n_samples} samples but X "
                f"has {n_samples}."
            )
        if order is not None and order != cv.order:
            raise ValueError(
                f"order={order!r} differs from the order of the fold plan given "
                f"as cv ({cv.order!r}); leave order=None to use the plan's."
            )
        return cv
    if isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
        if not 2 <= cv <= n_samples:
            raise ValueError(
                f"The 'cv' parameter must be an int in the range [2, n_samples="
                f"{n_samples}] or a cross-validation generator. Got {cv!r} instead."
            )
        stratify = (
            classifier
            and y is not None
            and (type_of_target(y) in ("binary", "multiclass"))
        )
        if stratify and np.min(np.unique(y, return_counts=True)[1]) < cv:
            stratify = False  # StratifiedKFold cannot fill every chunk with a class.
        splitter = (StratifiedTreeCVSplitter if stratify else TreeCVSplitter)(cv)
        # The tree feeds its own order; an independent fit (method="standard")
        # gets the complement in ascending order, as KFold (StratifiedKFold)
        # lists it: exactly cross_validate's folds for the same int.
        return FoldPlan(
            splitter._test_folds(X, y, groups),
            n_samples,
            order=order or "fixed",
            seed=_draw_seed(random_state) if order == "randomized" else None,
            fit_order=["sorted"] * cv,
        )
    elif (
        isinstance(cv, Iterable)
        and not isinstance(cv, str)
        and not hasattr(cv, "split")
    ):
        cv = check_cv(cv)  # (train, test) pairs, as scikit-learn takes them
    elif not hasattr(cv, "split") or isinstance(cv, str):
        raise ValueError(
            "The 'cv' parameter must be an int in the range [2, n_samples], a "
            "FoldPlan or a cross-validation generator with a split method. Got "
            f"{cv!r} instead."
        )
    if isinstance(cv, TreeCVSplitter):
        if order is None or order == cv.order:
            return cv.plan(X, y, groups)
        # Same chunks and leaf order, the feeding order asked for here.
        return FoldPlan(
            cv._test_folds(X, y, groups),
            n_samples,
            order=order,
            seed=_draw_seed(random_state) if order == "randomized" else None,
            leaf_order=cv.leaf_order,
        )
    return FoldPlan.from_cv(
        cv, X, y, groups, order=order or "fixed", random_state=random_state
    )
