"""The fold plan: chunks, the TreeCV recursion tree and the order rows are fed."""

from __future__ import annotations

import numbers
from collections.abc import Iterator, Sequence

import numpy as np
from sklearn.model_selection import LeaveOneOut
from sklearn.utils import check_random_state
from sklearn.utils.validation import _num_samples as _sklearn_num_samples

from sklearn_ext._fast._random import shuffle_node_feed

__all__ = ["FoldPlan", "SplitsPlan", "check_training_rows", "describe_splitter"]

ORDERS = ("fixed", "randomized")


class FoldPlan:
    """Which chunk each leaf holds out and the order chunks are fed along the tree.

    TreeCV (Joulani, György and Szepesvári, 2015, Algorithm 1) trains the ``k``
    fold models along a balanced binary tree over the chunks ``0 .. k-1``. A node
    ``(start, end)`` holds the model trained on every chunk except
    ``start .. end``; its children split that range at ``mid = (start + end) // 2``.
    The left child ``(start, mid)`` is obtained by feeding the chunks
    ``mid+1 .. end`` to a copy of the parent, the right child by feeding
    ``start .. mid``. Leaf ``i`` is the model for fold ``i``.

    A plan is the single source of truth for folds and feeding order: the
    splitters, the Python and native engines and the Optuna objective all read
    it, none recomputes folds its own way.

    Parameters
    ----------
    test_folds : sequence of array-like of int
        The rows of each chunk, in the order rows are fed. Chunks must be
        non-empty and together hold every row of ``range(n_samples)`` once.
    n_samples : int
        Number of rows of the data set.
    order : {"fixed", "randomized"}, default="fixed"
        ``"fixed"`` feeds the rows of each update chunk by chunk, in ascending
        chunk order. ``"randomized"`` feeds each update's rows in a random order
        (section 5 of the paper), drawn from a stream keyed by ``seed`` and the
        node, so every engine reproduces it.
    seed : int, default=None
        64-bit seed of the randomized order. Required when
        ``order="randomized"``, ignored otherwise.
    leaf_order : "tree", "interleaved" or sequence of int, default="tree"
        The order in which :meth:`split` yields the folds: split ``j`` is leaf
        (chunk) ``leaf_order[j]``. ``"tree"`` is ``0 .. k-1``; ``"interleaved"``
        is the bit-reversed order ``0, k/2, k/4, 3k/4, ...`` in which consecutive
        splits share as little training as possible, so that folds evaluated
        at the same time by parallel workers do not wait for each other's
        prefixes and later folds find them done.
    train_folds : sequence of (array-like of int or None), default=None
        The training rows of each chunk, for a splitter whose training rows are
        not the complement of its test fold (a purged or embargoed K-fold that
        leaves out rows near each test fold): chunk ``i`` trains on
        ``train_folds[i]`` (``None``: on the complement). Only a backend that
        trains each fold on its own rows (``method="standard"``) can run such
        a plan; see :func:`check_training_rows`.
    splitter : str, default=None
        What the plan was built from, for error messages.
    fit_order : sequence of ("sorted", array-like of int or None), default=None
        The order in which the splitter itself lists each chunk's training
        rows, for :meth:`fit_indices` (what ``method="standard"`` trains on,
        as ``cross_validate`` would): ``"sorted"`` for the complement in
        ascending row order (``KFold``, ``GroupKFold``...), an array for the
        complement in another order, ``None`` for the tree's feeding order
        (a ``TreeCVSplitter``'s own order). Chunks with ``train_folds`` use
        those rows as given.

    Attributes
    ----------
    n_splits : int
        Number of chunks (folds, leaves).
    n_samples : int
        Number of rows.
    sample_order : ndarray of shape (n_samples,)
        The rows grouped by chunk: chunk ``i`` is
        ``sample_order[bounds[i]:bounds[i + 1]]``.
    bounds : ndarray of shape (n_splits + 1,)
        Chunk boundaries in ``sample_order``.
    leaf_order : ndarray of shape (n_splits,)
        Leaf of each split index.
    split_index : ndarray of shape (n_splits,)
        Split index of each leaf (the inverse of ``leaf_order``).
    complement : bool
        Whether every chunk trains on the complement of its test rows (the
        TreeCV tree's assumption).

    Examples
    --------
    >>> from sklearn_ext import FoldPlan
    >>> plan = FoldPlan([[0, 1], [2, 3], [4, 5], [6, 7]], n_samples=8)
    >>> plan.train_segments(0)
    [array([4, 5, 6, 7]), array([2, 3])]
    >>> plan.n_samples_fed()
    16
    """

    def __init__(
        self,
        test_folds: Sequence[np.ndarray],
        n_samples: int,
        *,
        order: str = "fixed",
        seed: int | None = None,
        leaf_order="tree",
        train_folds=None,
        splitter: str | None = None,
        fit_order=None,
    ) -> None:
        check_order(order, "FoldPlan")
        if order == "randomized":
            if not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**64:
                raise ValueError(
                    "The 'seed' parameter of FoldPlan must be an int in [0, 2**64) "
                    f"when order='randomized'. Got {seed!r} instead."
                )
            seed = int(seed)
        else:
            seed = None
        folds = [np.asarray(fold, dtype=np.intp).ravel() for fold in test_folds]
        if len(folds) < 2:
            raise ValueError(
                f"A fold plan needs at least 2 chunks, got {len(folds)} chunk(s)."
            )
        sizes = np.array([fold.shape[0] for fold in folds], dtype=np.intp)
        if np.any(sizes == 0):
            raise ValueError(
                "Every test fold must hold at least one sample; fold(s) "
                f"{np.flatnonzero(sizes == 0).tolist()} are empty."
            )
        sample_order = np.concatenate(folds)
        counts = np.bincount(
            sample_order[(sample_order >= 0) & (sample_order < n_samples)],
            minlength=n_samples,
        )
        if sample_order.shape[0] != n_samples or np.any(counts != 1):
            missing = int(np.sum(counts == 0))
            repeated = int(np.sum(counts > 1))
            raise ValueError(
                "The test folds do not partition the samples: each of the "
                f"{n_samples} samples must be in exactly one test fold, but "
                f"{missing} are in none and {repeated} in more than one."
            )
        self.n_samples = int(n_samples)
        self.n_splits = len(folds)
        self.order = order
        self.seed = seed
        self.sample_order = sample_order
        self.sample_order.flags.writeable = False
        self.bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)
        self.bounds.flags.writeable = False
        self.leaf_order = _leaf_order(leaf_order, self.n_splits)
        self.split_index = np.empty_like(self.leaf_order)
        self.split_index[self.leaf_order] = np.arange(self.n_splits)
        for array in (self.leaf_order, self.split_index):
            array.flags.writeable = False
        self.splitter = splitter
        self._train_folds = _check_train_folds(train_folds, folds, self.n_samples)
        self.complement = all(rows is None for rows in self._train_folds)
        self._fit_order = _check_fit_order(fit_order, folds, self._train_folds)

    # -- construction ---------------------------------------------------------
    @classmethod
    def from_cv(
        cls,
        cv,
        X,
        y=None,
        groups=None,
        *,
        order: str = "fixed",
        random_state=None,
        leaf_order="tree",
    ) -> FoldPlan:
        """Build a plan from any splitter whose test folds partition the samples.

        Fold ``i`` of the plan is the splitter's fold ``i``: chunk ``i`` is its
        ``i``-th test set, in the order the splitter yields it. Where the
        splitter's training rows are not the complement of its test set, the
        plan keeps them (see ``train_folds``).

        Parameters
        ----------
        cv : cross-validation generator
            An object with a ``split(X, y, groups)`` method, e.g. ``KFold``,
            ``StratifiedKFold``, ``GroupKFold`` or a ``TreeCVSplitter``.
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,), default=None
            Targets, passed to ``cv.split``.
        groups : array-like of shape (n_samples,), default=None
            Group labels, passed to ``cv.split``.
        order : {"fixed", "randomized"}, default="fixed"
            Feeding order, see the class docstring.
        random_state : int, RandomState instance or None, default=None
            Source of the randomized order's seed.
        leaf_order : "tree", "interleaved" or sequence of int, default="tree"
            Order of the splits, see the class docstring.

        Returns
        -------
        plan : FoldPlan
        """
        check_order(order, "FoldPlan")
        seed = _draw_seed(random_state) if order == "randomized" else None
        n_samples = _num_samples(X)
        if type(cv) is LeaveOneOut and n_samples >= 2:
            # Its splits are known without asking for n complements: row i
            # alone, in order, trained on the rest.
            pairs = [(None, test) for test in np.arange(n_samples)[:, None]]
        else:
            pairs = [
                (_indices(train), _indices(test))
                for train, test in cv.split(X, y, groups)
            ]
        _check_n_splits(cv, X, y, groups, len(pairs))
        train_folds = [
            None if train is None or _is_complement(train, test, n_samples) else train
            for train, test in pairs
        ]
        fit_order = [
            _fit_order_of(train) if own is None else None
            for (train, _), own in zip(pairs, train_folds, strict=True)
        ]
        if not _partitions([test for _, test in pairs], n_samples):
            # ShuffleSplit, LeavePGroupsOut, TimeSeriesSplit: no tree over
            # chunks exists, but the standard backend runs the splits as given.
            return SplitsPlan(
                [
                    (
                        np.setdiff1d(np.arange(n_samples), test)
                        if train is None
                        else train
                    )
                    for train, test in pairs
                ],
                [test for _, test in pairs],
                n_samples,
                splitter=describe_splitter(cv),
            )
        try:
            return cls(
                [test for _, test in pairs],
                n_samples,
                order=order,
                seed=seed,
                leaf_order=leaf_order,
                train_folds=train_folds,
                splitter=describe_splitter(cv),
                fit_order=fit_order,
            )
        except ValueError as exc:
            raise ValueError(f"Invalid cv={describe_splitter(cv)}: {exc}") from None

    # -- the tree ---------------------------------------------------------------
    @property
    def root(self) -> tuple[int, int]:
        """The root node ``(0, n_splits - 1)``."""
        return (0, self.n_splits - 1)

    @staticmethod
    def children(start: int, end: int) -> tuple[tuple[int, int], tuple[int, int]]:
        """The left and right child of the internal node ``(start, end)``."""
        mid = (start + end) // 2
        return (start, mid), (mid + 1, end)

    def path(self, fold: int) -> list[tuple[int, int]]:
        """Nodes from the root to the leaf of ``fold``, both included."""
        fold = self._check_fold(fold)
        start, end = self.root
        nodes = [(start, end)]
        while start != end:
            left, right = self.children(start, end)
            start, end = left if fold <= left[1] else right
            nodes.append((start, end))
        return nodes

    def chunk_rows(self, start: int, end: int) -> np.ndarray:
        """Rows of chunks ``start .. end`` in fixed order (a read-only view)."""
        return self.sample_order[self.bounds[start] : self.bounds[end + 1]]

    def feed(self, start: int, end: int) -> np.ndarray:
        """Rows fed to the parent's model to obtain node ``(start, end)``.

        These are the rows of the node's sibling: the chunks its parent still
        holds out but the node does not. Randomized plans permute them with the
        node's own stream.
        """
        parent = self._parent(start, end)
        if parent is None:
            raise ValueError(f"The root node ({start}, {end}) is not fed.")
        p_start, p_end = parent
        mid = (p_start + p_end) // 2
        sibling = (mid + 1, p_end) if end == mid else (p_start, mid)
        rows = np.array(self.chunk_rows(*sibling), dtype=np.intp, order="C")
        if self.order == "randomized":
            shuffle_node_feed(rows, self.seed, start, end)
        return rows

    def train_segments(self, fold: int) -> list[np.ndarray]:
        """The updates on the path to ``fold``'s leaf, sibling half first.

        A chunk with its own training rows (``train_folds``) has one update:
        those rows, in the splitter's order.
        """
        own = self._train_folds[self._check_fold(fold)]
        if own is not None:
            return [np.array(own)]
        return [self.feed(*node) for node in self.path(fold)[1:]]

    def train_indices(self, fold: int) -> np.ndarray:
        """Training rows of ``fold``: in TreeCV feeding order, or the splitter's."""
        return np.concatenate(self.train_segments(fold))

    def fit_indices(self, fold: int) -> np.ndarray:
        """Training rows of ``fold`` in the splitter's own order.

        What scikit-learn's ``cross_validate`` fits on for the splitter the
        plan was built from: its own training rows, or the complement in the
        order the splitter lists it (ascending for ``KFold`` and its kin), or
        the tree's feeding order for a ``TreeCVSplitter`` or a plan built
        from test folds alone.
        """
        fold = self._check_fold(fold)
        own = self._train_folds[fold]
        if own is not None:
            return np.array(own)
        order = self._fit_order[fold]
        if order is None:
            return self.train_indices(fold)
        if isinstance(order, str):  # "sorted": the complement, ascending
            keep = np.ones(self.n_samples, dtype=bool)
            keep[self.chunk_rows(fold, fold)] = False
            return np.flatnonzero(keep)
        return np.array(order)

    def test_indices(self, fold: int) -> np.ndarray:
        """Rows of chunk ``fold`` (held out at its leaf)."""
        fold = self._check_fold(fold)
        return np.array(self.chunk_rows(fold, fold))

    def split(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(train, test)`` per split in ``leaf_order`` (train in feed order)."""
        for leaf in self.leaf_order:
            yield self.train_indices(leaf), self.test_indices(leaf)

    def reordered(self, splits) -> FoldPlan:
        """The same splits placed at other leaves of the tree.

        Leaf ``j`` of the returned plan holds the chunk of this plan's split
        ``splits[j]``, and keeps that split's number: results and callbacks
        number the folds as this plan does. The feeding order and seed are
        kept. The tree then evaluates the folds in the order ``splits`` (useful to
        shuffle the order in which an Optuna pruner sees them) and feeds other
        chunks together, so order-dependent learners get slightly different fold
        models while every fold keeps its test rows.

        Parameters
        ----------
        splits : sequence of int
            A permutation of ``range(n_splits)``.

        Returns
        -------
        plan : FoldPlan
        """
        splits = _leaf_order(splits, self.n_splits)
        return FoldPlan(
            [self.test_indices(int(chunk)) for chunk in self.leaf_order[splits]],
            self.n_samples,
            order=self.order,
            seed=self.seed,
            leaf_order=np.argsort(splits),
            train_folds=[self._train_folds[int(c)] for c in self.leaf_order[splits]],
            splitter=self.splitter,
            fit_order=[self._fit_order[int(c)] for c in self.leaf_order[splits]],
        )

    def n_samples_fed(self) -> int:
        """Total rows the tree feeds to the learner: about ``n * log2(2k)``."""
        total = 0
        stack = [self.root]
        while stack:
            start, end = stack.pop()
            if start == end:
                continue
            for child in self.children(start, end):
                # A child is fed its sibling, i.e. the parent's range minus its own.
                total += int(
                    self.bounds[end + 1]
                    - self.bounds[start]
                    - (self.bounds[child[1] + 1] - self.bounds[child[0]])
                )
                stack.append(child)
        return total

    # -- helpers ----------------------------------------------------------------
    def _check_fold(self, fold) -> int:
        if not isinstance(fold, numbers.Integral) or not 0 <= fold < self.n_splits:
            raise ValueError(
                f"fold must be an int in [0, {self.n_splits - 1}]. Got {fold!r}."
            )
        return int(fold)

    def _parent(self, start: int, end: int) -> tuple[int, int] | None:
        node = self.root
        if (start, end) == node:
            return None
        while node[0] != node[1]:
            left, right = self.children(*node)
            if (start, end) in (left, right):
                return node
            node = left if end <= left[1] else right
        raise ValueError(f"({start}, {end}) is not a node of this plan's tree.")

    def __repr__(self) -> str:
        return (
            f"FoldPlan(n_splits={self.n_splits}, n_samples={self.n_samples}, "
            f"order={self.order!r})"
        )


class SplitsPlan(FoldPlan):
    """The splits of a splitter whose test folds do not partition the samples.

    ``ShuffleSplit``, ``LeavePGroupsOut`` or ``TimeSeriesSplit`` hold some rows
    out in several splits, or in none, so no tree over chunks exists: such a
    plan carries the ``(train, test)`` pairs as given, for the standard
    backend only (:func:`check_training_rows` refuses every other; the run
    core falls back to the standard backend for ``method="auto"``, with a
    note). Split ``i`` is the splitter's ``i``-th pair, trained on its own
    training rows in the splitter's order, as in ``cross_validate``.

    Parameters
    ----------
    train_folds, test_folds : sequence of array-like of int
        The training and test rows of each split.
    n_samples : int
        Number of rows of the data set.
    splitter : str, default=None
        What the plan was built from, for messages.
    """

    def __init__(self, train_folds, test_folds, n_samples: int, *, splitter=None):
        tests = [np.asarray(t, dtype=np.intp).ravel() for t in test_folds]
        if len(tests) < 1:
            raise ValueError("A plan needs at least one split; the splitter gave none.")
        self.n_samples = int(n_samples)
        self.n_splits = len(tests)
        self.order, self.seed = "fixed", None
        self.leaf_order = np.arange(self.n_splits, dtype=np.intp)
        self.split_index = self.leaf_order.copy()
        for array in (self.leaf_order, self.split_index):
            array.flags.writeable = False
        self.splitter = splitter
        self._tests = tests
        self._train_folds = _check_train_folds(train_folds, tests, self.n_samples)
        self.complement = False

    def describe_cover(self) -> str:
        """How many samples are in no test fold and how many in several."""
        counts = np.bincount(np.concatenate(self._tests), minlength=self.n_samples)
        return (
            f"{int(np.sum(counts == 0))} of {self.n_samples} samples are in no "
            f"test fold and {int(np.sum(counts > 1))} in several"
        )

    def test_indices(self, fold: int) -> np.ndarray:
        """Test rows of split ``fold``."""
        return np.array(self._tests[self._check_fold(fold)])

    def train_indices(self, fold: int) -> np.ndarray:
        """Training rows of split ``fold``, in the splitter's order."""
        return np.array(self._train_folds[self._check_fold(fold)])

    fit_indices = train_indices

    def train_segments(self, fold: int) -> list[np.ndarray]:
        """One update: the split's training rows."""
        return [self.train_indices(fold)]

    def n_samples_fed(self) -> int:
        """Rows the standard backend fits on, over all splits."""
        return int(sum(rows.shape[0] for rows in self._train_folds))

    def feed(self, start: int, end: int) -> np.ndarray:
        """No tree: raises, as every tree-only method does."""
        raise ValueError(
            f"The splits of cv={self.splitter} have no TreeCV tree: their test "
            f"folds do not partition the samples ({self.describe_cover()})."
        )

    def chunk_rows(self, start: int, end: int) -> np.ndarray:
        """No chunks: raises (see :meth:`feed`)."""
        return self.feed(start, end)

    def reordered(self, splits) -> SplitsPlan:
        """The same splits, run in the order ``splits``, keeping their numbers."""
        splits = _leaf_order(splits, self.n_splits)
        plan = SplitsPlan(
            [self._train_folds[int(i)] for i in splits],
            [self._tests[int(i)] for i in splits],
            self.n_samples,
            splitter=self.splitter,
        )
        plan.split_index = np.array(splits, dtype=np.intp)
        plan.leaf_order = np.argsort(splits).astype(np.intp)
        return plan

    def __repr__(self) -> str:
        return f"SplitsPlan(n_splits={self.n_splits}, n_samples={self.n_samples})"


def _indices(rows) -> np.ndarray:
    """Row positions of a split: integer indices, or a boolean mask's positions."""
    rows = np.asarray(rows)
    if rows.dtype == bool:
        return np.flatnonzero(rows)
    return rows.astype(np.intp, copy=False).ravel()


def _check_n_splits(cv, X, y, groups, n_pairs: int) -> None:
    """Raise, as ``GridSearchCV`` does, for no splits or a wrong ``get_n_splits``."""
    if n_pairs == 0:
        raise ValueError(
            "No fits were performed. Was the CV iterator empty? Were there no "
            "candidates?"
        )
    try:
        expected = cv.get_n_splits(X, y, groups)
    except Exception:  # a splitter that cannot say without other arguments
        return
    if isinstance(expected, numbers.Integral) and expected != n_pairs:
        raise ValueError(
            "cv.split and cv.get_n_splits return inconsistent results. Expected "
            f"{expected} splits, got {n_pairs}"
        )


def _partitions(test_folds, n_samples: int) -> bool:
    """Whether the non-empty ``test_folds`` hold every sample exactly once."""
    folds = [np.asarray(fold, dtype=np.intp).ravel() for fold in test_folds]
    if any(fold.shape[0] == 0 for fold in folds):
        return True  # FoldPlan's own error says what is wrong
    if len(folds) < 2:
        return False
    rows = np.concatenate(folds)
    if rows.shape[0] != n_samples or np.any((rows < 0) | (rows >= n_samples)):
        return False
    return bool(np.all(np.bincount(rows, minlength=n_samples) == 1))


def _is_complement(train: np.ndarray, test, n_samples: int) -> bool:
    """Whether ``train`` holds every row outside ``test`` once (in any order)."""
    test = np.asarray(test, dtype=np.intp).ravel()
    if train.shape[0] + test.shape[0] != n_samples:
        return False
    seen = np.zeros(n_samples, dtype=bool)
    inside = train[(train >= 0) & (train < n_samples)]
    seen[inside] = True
    seen[test[(test >= 0) & (test < n_samples)]] = True
    return inside.shape[0] == train.shape[0] and bool(np.all(seen))


def _check_train_folds(train_folds, test_folds, n_samples: int) -> list:
    if train_folds is None:
        return [None] * len(test_folds)
    if len(train_folds) != len(test_folds):
        raise ValueError(
            "The 'train_folds' parameter of FoldPlan must have one entry per test "
            f"fold ({len(test_folds)}). Got {len(train_folds)} instead."
        )
    out = []
    for i, rows in enumerate(train_folds):
        if rows is None:
            out.append(None)
            continue
        rows = np.array(rows, dtype=np.intp).ravel()
        if rows.shape[0] == 0 or np.any((rows < 0) | (rows >= n_samples)):
            raise ValueError(
                f"The training rows of fold {i} must be a non-empty array of "
                f"indices in [0, {n_samples})."
            )
        rows.flags.writeable = False
        out.append(rows)
    return out


def _fit_order_of(train: np.ndarray | None):
    """``"sorted"`` for a complement listed in ascending order, else the rows."""
    if train is None or train.shape[0] < 2 or bool(np.all(np.diff(train) > 0)):
        return "sorted"
    return train


def _check_fit_order(fit_order, test_folds, train_folds) -> list:
    if fit_order is None:
        return [None] * len(test_folds)
    if len(fit_order) != len(test_folds):
        raise ValueError(
            "The 'fit_order' parameter of FoldPlan must have one entry per test "
            f"fold ({len(test_folds)}). Got {len(fit_order)} instead."
        )
    out = []
    for i, order in enumerate(fit_order):
        if order is None or train_folds[i] is not None:
            out.append(None)
        elif isinstance(order, str):
            if order != "sorted":
                raise ValueError(
                    "The entries of 'fit_order' must be 'sorted', an array of "
                    f"rows or None. Got {order!r} for fold {i}."
                )
            out.append(order)
        else:
            rows = np.array(order, dtype=np.intp).ravel()
            rows.flags.writeable = False
            out.append(rows)
    return out


def describe_splitter(cv) -> str:
    """A short name of ``cv`` for messages (pairs given as cv are not listed)."""
    if type(cv).__name__ == "_CVIterableWrapper":
        return f"<{len(cv.cv)} (train, test) pairs>"
    text = repr(cv)
    return text if len(text) <= 120 else text[:117] + "..."


def check_training_rows(plan: FoldPlan, backend) -> None:
    """Raise if ``backend`` cannot train ``plan``'s folds on their own rows.

    The tree and alpha-seeding engines train each fold on the complement of its
    test rows; a plan whose splitter left rows out of training, or whose test
    folds do not partition the samples (a :class:`SplitsPlan`), runs only on a
    backend that declares ``own_training_rows`` (the standard backend).
    """
    if plan.complement or getattr(backend, "own_training_rows", False):
        return
    if isinstance(plan, SplitsPlan):
        raise ValueError(
            f"The test folds of cv={plan.splitter or 'the splits'} do not partition "
            f"the samples ({plan.describe_cover()}); the {backend.name!r} backend "
            "trains a tree over chunks that hold every sample once. Use "
            "method='standard' (or 'auto', which falls back to it), which fits "
            "each split as given."
        )
    leaf = next(i for i, rows in enumerate(plan._train_folds) if rows is not None)
    n_train = plan._train_folds[leaf].shape[0]
    n_complement = plan.n_samples - plan.test_indices(leaf).shape[0]
    raise ValueError(
        f"The training rows of cv={plan.splitter or 'the fold plan'} are not the "
        f"complement of its test folds (split {int(plan.split_index[leaf])} trains "
        f"on {n_train} rows, the complement has {n_complement}); the "
        f"{backend.name!r} backend trains every fold on the complement of its "
        "test fold and cannot honour them. Use method='standard', which trains "
        "each fold on the splitter's own training rows."
    )


def _interleaved(start: int, end: int) -> list[int]:
    """Leaves of ``(start, end)`` alternating between the two subtrees."""
    if start == end:
        return [start]
    left, right = FoldPlan.children(start, end)
    a, b = _interleaved(*left), _interleaved(*right)
    merged = [leaf for pair in zip(a, b, strict=False) for leaf in pair]
    return merged + a[len(b) :] + b[len(a) :]


def _leaf_order(leaf_order, n_splits: int) -> np.ndarray:
    if isinstance(leaf_order, str):
        if leaf_order == "tree":
            return np.arange(n_splits, dtype=np.intp)
        if leaf_order == "interleaved":
            return np.array(_interleaved(0, n_splits - 1), dtype=np.intp)
    else:
        order = np.asarray(leaf_order)
        if (
            order.ndim == 1
            and np.issubdtype(order.dtype, np.integer)
            and np.array_equal(np.sort(order), np.arange(n_splits))
        ):
            return order.astype(np.intp)
    raise ValueError(
        "The 'leaf_order' parameter must be 'tree', 'interleaved' or a "
        f"permutation of range({n_splits}). Got {leaf_order!r} instead."
    )


def check_order(order, owner: str) -> None:
    """Raise the scikit-learn style error for an unknown feeding order."""
    if not isinstance(order, str) or order not in ORDERS:
        raise ValueError(
            f"The 'order' parameter of {owner} must be a str among "
            f"{{'fixed', 'randomized'}}. Got {order!r} instead."
        )


def _draw_seed(random_state) -> int:
    """A 63-bit seed for the randomized order from a ``random_state``."""
    return int(check_random_state(random_state).randint(0, 2**63 - 1, dtype=np.int64))


def _num_samples(X) -> int:
    if hasattr(X, "shape") and len(X.shape) > 0:
        return int(X.shape[0])
    if hasattr(X, "__len__"):
        return len(X)
    return _sklearn_num_samples(X)  # an object with only __array__
