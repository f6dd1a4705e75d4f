"""Where the data lives: the placement contract and the fold plan of blocked data.

In-memory data needs no placement: the run core holds it and every backend
reads it. Data spread over machines (the blocks of a persisted
``dask.array`` or ``dask.dataframe``, or blocks made by per-worker loaders)
is held by a :class:`Placement`, found by
:func:`~sklearn_ext.model_selection._choice.find_placement` from the type of
``X`` without importing anything for in-memory data. A placement builds the
run's fold plan from its blocks, finds the classes without gathering ``y``,
names the one backend that trains where the blocks are, and trains the model
a search or a study returns. This module imports no distributed library.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from sklearn_ext.model_selection._plan import FoldPlan

__all__ = ["Placement", "PlacementError", "block_fold_plan", "block_bounds"]


class PlacementError(RuntimeError):
    """The cluster lost what a run needed and could not recompute it.

    Not a failed fit: the run core never turns it into ``error_score``; it
    propagates with the cluster's own error as its cause.
    """


class Placement(ABC):
    """Data that lives elsewhere than in the caller's memory, and how to run on it.

    Attributes
    ----------
    name : str
        What the placement is (``"dask"``).
    X, y :
        The data as the placement keeps it (the persisted collections).
    n_samples : int
        Number of rows.
    prefer : str or None
        joblib's ``prefer`` for jobs that each run a candidate on this data.
    """

    name: str
    n_samples: int
    #: joblib's ``prefer`` for jobs that each run a candidate on this data:
    #: ``"threads"`` when the work runs elsewhere and the placement's handle
    #: (a client) stays in the caller's process.
    prefer: str | None = "threads"

    @abstractmethod
    def plan(self, cv, *, order=None, random_state=None) -> FoldPlan:
        """The run's fold plan: chunks aligned to the placement's blocks."""

    @abstractmethod
    def classes(self, estimator, classes=None) -> np.ndarray | None:
        """All class labels of a classifier's ``y``, found where ``y`` lives."""

    @abstractmethod
    def backend(self, estimator, method):
        """The backend that runs ``estimator`` on this data for ``method``."""

    @abstractmethod
    def fit(self, model, *, classes=None, fit_params=None):
        """``model`` after one ordered pass of ``partial_fit`` over every row."""

    @abstractmethod
    def fingerprint(self) -> tuple[int, int, str]:
        """Rows, columns and a hash of the content, taken where the data lives
        (what a study records of its data)."""


def block_bounds(block_rows: Sequence[int], n_splits: int) -> np.ndarray:
    """Row bounds of ``n_splits`` contiguous chunks aligned to blocks.

    With ``n_splits <= n_blocks`` every chunk is a run of whole consecutive
    blocks (``n_blocks // n_splits`` or one more, the longer runs first), so
    each chunk boundary is a block boundary. With more chunks than blocks,
    each block is split where it lies into ``n_splits // n_blocks`` chunks or
    one more (the first blocks take the extra ones), as even as its rows
    allow: no chunk spans two blocks.

    Parameters
    ----------
    block_rows : sequence of int
        Rows of each block, in row order.
    n_splits : int
        Number of chunks.

    Returns
    -------
    bounds : ndarray of shape (n_splits + 1,)
        Chunk ``i`` holds rows ``bounds[i]:bounds[i + 1]``.
    """
    sizes = np.asarray(block_rows, dtype=np.intp)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    n_blocks = len(sizes)
    if n_splits <= n_blocks:
        groups = np.array_split(np.arange(n_blocks), n_splits)
        return np.array([starts[g[0]] for g in groups] + [starts[-1]], dtype=np.intp)
    per_block = np.full(n_blocks, n_splits // n_blocks)
    per_block[: n_splits % n_blocks] += 1
    if np.any(per_block > sizes):
        small = int(np.flatnonzero(per_block > sizes)[0])
        raise ValueError(
            f"cv={n_splits} chunks need {per_block[small]} chunks from block "
            f"{small}, which holds only {sizes[small]} rows; use fewer splits or "
            "larger blocks."
        )
    bounds = [
        start + piece[0]
        for start, size, m in zip(starts, sizes, per_block, strict=False)
        for piece in np.array_split(np.arange(size), m)
    ]
    return np.array(bounds + [starts[-1]], dtype=np.intp)


def block_fold_plan(X, n_splits: int) -> FoldPlan:
    """The fold plan TreeCV runs on a blocked ``X``: contiguous chunks of blocks.

    What :func:`~sklearn_ext.tree_cross_validate` uses for ``cv=n_splits``
    when ``X`` is a Dask collection; pass it as ``cv`` with the same data in
    memory to run the in-memory tree on the very same folds.

    Parameters
    ----------
    X : dask array, dask DataFrame, or sequence of int
        A collection with row blocks (``X.chunks[0]``), a Dask DataFrame (its
        partitions, whose lengths are counted where they live), or the rows of
        each block. Blocks of no rows are left out, as the Dask tree does.
    n_splits : int
        Number of folds, at least 2. See :func:`block_bounds` for how chunks
        follow blocks, also when there are more folds than blocks.

    Returns
    -------
    plan : FoldPlan
        Chunk ``i`` is rows ``bounds[i]:bounds[i + 1]`` in row order; the
        feeding order is ``"fixed"``.

    Examples
    --------
    >>> from sklearn_ext.model_selection import block_fold_plan
    >>> plan = block_fold_plan([4, 4, 4], n_splits=2)
    >>> plan.test_indices(1)
    array([ 8,  9, 10, 11])
    >>> block_fold_plan([4, 4], n_splits=4).bounds
    array([0, 2, 4, 6, 8])
    """
    chunks = getattr(X, "chunks", None)
    if chunks is not None:
        block_rows = tuple(chunks[0])
    elif hasattr(X, "npartitions"):  # a Dask DataFrame: only the lengths come back
        block_rows = tuple(int(n) for n in X.map_partitions(len).compute())
    else:
        block_rows = tuple(X)
        if any(not isinstance(r, numbers.Integral) for r in block_rows):
            raise TypeError(
                "block_fold_plan takes a dask array, a dask DataFrame or the rows of "
                "each block (for per-worker loaders: the rows each block holds)."
            )
    if any(not isinstance(r, numbers.Integral) for r in block_rows):
        raise ValueError(
            "The blocks of X have unknown sizes; call X.compute_chunk_sizes() first."
        )
    if not isinstance(n_splits, numbers.Integral) or n_splits < 2:
        raise ValueError(
            f"The 'n_splits' parameter must be an int of at least 2. Got "
            f"{n_splits!r} instead."
        )
    bounds = block_bounds([r for r in block_rows if r > 0], int(n_splits))
    rows = np.arange(bounds[-1])
    return FoldPlan(
        [rows[bounds[i] : bounds[i + 1]] for i in range(n_splits)],
        int(bounds[-1]),
        splitter=f"block_fold_plan(n_splits={n_splits})",
    )
