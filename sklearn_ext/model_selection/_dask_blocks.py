"""The row blocks of data on a Dask cluster, found without gathering them.

Three shapes of data give the Dask tree the same thing: one future per row
block, each held in a worker's memory, and the rows of each block.

- A ``dask.array``: the blocks are its row chunks (their sizes must be known).
- A ``dask.dataframe``: the blocks are its partitions, whose lengths are
  counted on the workers (only the counts come back). The column names stay
  with every block, so the models fitted on them get ``feature_names_in_``
  and a ``ColumnTransformer`` selects columns by name, as in memory.
- A list of per-worker loaders: ``dask.delayed`` objects, futures or
  callables taking no argument, each making one block on a worker, either a
  pair ``(X_block, y_block)`` or ``X_block`` alone with ``y`` given by a
  matching list of loaders. Each runs once; a block is made where it is
  loaded and stays there.

A loader's pair is kept as one block: :func:`x_part` and :func:`y_part` take
its halves where the block is read, so nothing is split or copied. Blocks of
no rows are left out. This module is imported only with Dask installed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from dask.array import Array
from distributed import futures_of, wait

from sklearn_ext.utils._hashing import content_digest

__all__ = ["Blocks", "blocks_of", "is_frame", "x_part", "y_part"]


@dataclass
class Blocks:
    """The data of a run on a cluster, as futures of its row blocks.

    Attributes
    ----------
    X, y : object
        The data as the run keeps it alive: the persisted collections, or the
        loaders' futures (``y`` is the pairs' futures when each loader gives
        ``(X, y)``).
    X_blocks : list of Future
        One per row block, in row order.
    y_blocks : list of Future or None
        The block of ``y`` of each block of ``X`` (a pair's own future).
    rows : tuple of int
        Rows of each block.
    n_features : int
        Columns of ``X``.
    y_ndim : int or None
        Dimensions of ``y``.
    """

    X: Any
    y: Any
    X_blocks: list
    y_blocks: list | None
    rows: tuple[int, ...]
    n_features: int
    y_ndim: int | None


# -- what runs on the workers -------------------------------------------------------
def x_part(block):
    """The ``X`` of a block (the first half of a loader's pair)."""
    return block[0] if isinstance(block, tuple) else block


def y_part(block):
    """The ``y`` of a block (the second half of a loader's pair)."""
    return block[1] if isinstance(block, tuple) else block


def _describe(block) -> tuple:
    """Rows, columns and column names of a block of ``X``, and its pair's
    ``y`` rows and dimensions: what the client needs to know of a block."""
    pair = isinstance(block, tuple)
    if pair and len(block) != 2:
        raise ValueError(
            f"A loader gave a tuple of {len(block)} items; a block is X_block or "
            "the pair (X_block, y_block)."
        )
    X = x_part(block)
    if np.ndim(X) != 2:
        raise ValueError(
            f"A block of X must be 2-dimensional; a loader gave {type(X).__name__} "
            f"of {np.ndim(X)} dimension(s)."
        )
    columns = list(X.columns) if hasattr(X, "columns") else None
    target = _describe_target(block[1]) if pair else None
    return X.shape[0], X.shape[1], columns, target


def _describe_target(block) -> tuple[int, int]:
    """Rows and dimensions of a block."""
    return int(np.shape(block)[0]), int(np.ndim(block))


def _labels(block) -> np.ndarray:
    """The distinct labels of a block of ``y``."""
    return np.unique(np.asarray(y_part(block)))


def _digest(block, part) -> bytes:
    return content_digest(part(block))


# -- on the client --------------------------------------------------------------------
def is_frame(data) -> bool:
    """A ``dask.dataframe`` collection, told by its type (pandas is not imported)."""
    return type(data).__module__.startswith("dask.dataframe")


def blocks_of(client, X, y=None) -> Blocks:
    """The row blocks of ``X`` and ``y`` on ``client``'s cluster, in memory there."""
    if isinstance(X, (list, tuple)):
        blocks = _loader_blocks(client, X, y)
    elif is_frame(X):
        blocks = _frame_blocks(client, X, y)
    elif isinstance(X, Array):
        blocks = _array_blocks(client, X, y)
    else:
        raise TypeError(
            "The Dask tree runs on a dask.array or dask.dataframe X, or on a list "
            f"of per-worker loaders; got {type(X).__name__}."
        )
    kept = [i for i, rows in enumerate(blocks.rows) if rows > 0]
    if len(kept) < len(blocks.rows):  # e.g. partitions emptied by a filter
        blocks.X_blocks = [blocks.X_blocks[i] for i in kept]
        if blocks.y_blocks is not None:
            blocks.y_blocks = [blocks.y_blocks[i] for i in kept]
        blocks.rows = tuple(blocks.rows[i] for i in kept)
    return blocks


def fingerprint(client, blocks: Blocks) -> str:
    """A hash of the blocks' content, each block hashed on its worker."""
    parts = [client.map(_digest, blocks.X_blocks, part=x_part, pure=False)]
    if blocks.y_blocks is not None:
        parts.append(client.map(_digest, blocks.y_blocks, part=y_part, pure=False))
    digests = client.gather(parts)
    return content_digest(blocks.rows, *digests).hex()[:16]


def labels(client, blocks: Blocks) -> np.ndarray:
    """All labels of ``y``: each block's found on its worker, joined here."""
    found = client.gather(client.map(_labels, blocks.y_blocks, pure=False))
    return np.unique(np.concatenate(found))


def _on_owners(client, function, futures: list) -> list:
    """``function`` of each future's block, run where the block is (only the
    results come back). The restriction is loose: a lost worker's block is
    made again elsewhere from its lineage."""
    wait(futures)
    who = client.who_has(futures)
    calls = [
        client.submit(
            function,
            future,
            workers=list(who[future.key])[:1] or None,
            allow_other_workers=True,
            pure=False,
        )
        for future in futures
    ]
    return client.gather(calls)


def _block_futures(collection) -> list:
    """One future per row block of a persisted collection, in row order."""
    by_key = {f.key: f for f in futures_of(collection)}
    keys = [k[0] if isinstance(k, list) else k for k in collection.__dask_keys__()]
    if all(k in by_key for k in keys):
        return [by_key[k] for k in keys]
    # A persisted dask-expr frame holds its futures under another name than
    # its keys: one name, indexed by partition.
    names = {k[0] for k in by_key if isinstance(k, tuple)}
    if len(names) == 1 and sorted(k[1] for k in by_key) == list(range(len(keys))):
        name = names.pop()
        return [by_key[(name, i)] for i in range(len(keys))]
    raise ValueError(
        f"Cannot find the blocks of the persisted {type(collection).__name__} "
        "among its futures."
    )


# -- the three shapes of data ------------------------------------------------------
def _array_blocks(client, X: Array, y) -> Blocks:
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional; got {X.ndim} dimension(s).")
    if any(np.isnan(r) for r in X.chunks[0]):
        raise ValueError(
            "The blocks of X have unknown sizes; call X.compute_chunk_sizes() first."
        )
    if X.numblocks[1] > 1:  # one block per row range (its columns on one worker)
        X = X.rechunk({1: -1})
    X = client.persist(X)
    rows = tuple(int(r) for r in X.chunks[0])
    y, y_blocks, y_ndim = _target_blocks(client, y, rows, "dask array")
    return Blocks(X, y, _block_futures(X), y_blocks, rows, int(X.shape[1]), y_ndim)


def _frame_blocks(client, X, y) -> Blocks:
    if X.ndim != 2:
        raise ValueError(
            "X must be a dask DataFrame; got a dask Series (select columns with "
            "df[['a', 'b']] to keep a frame)."
        )
    X = client.persist(X)
    X_blocks = _block_futures(X)
    # Only the lengths come back (the column names are the frame's own).
    rows = tuple(d[0] for d in _on_owners(client, _describe_target, X_blocks))
    y, y_blocks, y_ndim = _target_blocks(client, y, rows, "dask DataFrame")
    return Blocks(X, y, X_blocks, y_blocks, rows, len(X.columns), y_ndim)


def _target_blocks(client, y, rows: tuple[int, ...], x_kind: str):
    """``y`` persisted, its blocks aligned to ``rows``, and its dimensions."""
    if y is None:
        return None, None, None
    if isinstance(y, Array):
        if any(np.isnan(r) for r in y.chunks[0]):
            raise ValueError(
                "The blocks of y have unknown sizes; call y.compute_chunk_sizes() "
                "first."
            )
        if y.shape[0] != sum(rows):
            raise ValueError(
                "Found input variables with inconsistent numbers of samples: "
                f"[{sum(rows)}, {y.shape[0]}]"
            )
        if y.chunks[0] != rows or (y.ndim == 2 and y.numblocks[1] > 1):
            y = y.rechunk((rows,) + (-1,) * (y.ndim - 1))
        y = client.persist(y)
        return y, _block_futures(y), y.ndim
    if is_frame(y):
        y = client.persist(y)
        y_blocks = _block_futures(y)
        y_rows = tuple(d[0] for d in _on_owners(client, _describe_target, y_blocks))
        if y_rows != rows:
            raise ValueError(
                "The partitions of y do not match the blocks of X: X has "
                f"{len(rows)} of {_listed(rows)} rows, y {len(y_rows)} of "
                f"{_listed(y_rows)}. Take X and y from one frame (X = "
                "df.drop(columns='target'), y = df['target']) so that their "
                "partitions match."
            )
        return y, y_blocks, y.ndim
    advice = (
        "dask array too (da.from_array(y, chunks=X.chunks[0]) keeps its blocks "
        "with X's)"
        if x_kind == "dask array"
        else "dask Series too (y = df['target'] keeps its partitions with X's)"
    )
    raise TypeError(
        f"X is a {x_kind} but y is a {type(y).__name__}: pass y as a {advice}."
    )


def _listed(rows) -> str:
    shown = ", ".join(str(r) for r in rows[:6])
    return f"[{shown}{', ...' if len(rows) > 6 else ''}]"


def _loaded(client, loaders, name: str) -> list:
    """One future per loader: each submitted once, to run on a worker."""
    from dask.delayed import Delayed
    from distributed import Future

    for item in loaders:
        if not (isinstance(item, (Delayed, Future)) or callable(item)):
            raise TypeError(
                f"Each loader of {name} must be a dask.delayed object, a "
                "distributed Future or a callable taking no argument; got "
                f"{type(item).__name__}."
            )
    delayed = [i for i, item in enumerate(loaders) if isinstance(item, Delayed)]
    computed = dict(
        zip(delayed, client.compute([loaders[i] for i in delayed]), strict=True)
    )
    return [
        computed[i]
        if i in computed
        else item
        if isinstance(item, Future)
        else client.submit(item, pure=False)
        for i, item in enumerate(loaders)
    ]


def _loader_blocks(client, X, y) -> Blocks:
    if len(X) == 0:
        raise ValueError("X is an empty list of loaders.")
    X_blocks = _loaded(client, X, "X")
    described = _on_owners(client, _describe, X_blocks)
    rows = tuple(int(d[0]) for d in described)
    widths = {d[1] for d in described}
    columns = {tuple(d[2]) if d[2] is not None else None for d in described}
    if len(widths) > 1 or len(columns) > 1:
        raise ValueError(
            "The loaders' blocks of X differ in their columns: "
            f"{sorted(widths)} columns, names {sorted(map(str, columns))}."
        )
    pairs = [d[3] is not None for d in described]
    if any(pairs):
        if not all(pairs):
            raise ValueError(
                "Some loaders give (X_block, y_block) pairs and others X_block "
                "alone: give every block the same way."
            )
        if y is not None:
            raise ValueError(
                "The loaders give (X_block, y_block) pairs: y comes with them; "
                "pass y=None."
            )
        y_blocks, targets = X_blocks, [d[3] for d in described]
    elif y is None:
        return Blocks(X_blocks, None, X_blocks, None, rows, widths.pop(), None)
    else:
        if not isinstance(y, (list, tuple)) or len(y) != len(X):
            raise ValueError(
                f"X is a list of {len(X)} loaders: y must be None (with loaders "
                f"giving (X_block, y_block) pairs) or a list of {len(X)} loaders "
                f"of the matching blocks of y; got {type(y).__name__}."
            )
        y_blocks = _loaded(client, y, "y")
        targets = _on_owners(client, _describe_target, y_blocks)
    _check_loaded_targets(rows, targets)
    return Blocks(
        X_blocks, y_blocks, X_blocks, y_blocks, rows, widths.pop(), targets[0][1]
    )


def _check_loaded_targets(rows, targets) -> None:
    y_rows = tuple(t[0] for t in targets)
    if y_rows != rows:
        raise ValueError(
            f"The loaders' blocks of y do not match those of X: X has blocks of "
            f"{_listed(rows)} rows, y of {_listed(y_rows)}."
        )
    if len({t[1] for t in targets}) > 1:
        raise ValueError("The loaders' blocks of y differ in their dimensions.")
