"""Where each row sits: the chunks of a fold plan, and (chunk, class) groups."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["_Chunks", "_Groups", "_by_class", "_dense", "_dense_rows"]


class _Chunks:
    """Which chunk each row belongs to, and the rows of each chunk."""

    def __init__(self, plan) -> None:
        self.n_chunks = plan.n_splits
        self.n_samples = plan.n_samples
        sizes = np.diff(plan.bounds)
        self.of_row = np.empty(plan.n_samples, dtype=np.intp)
        self.of_row[plan.sample_order] = np.repeat(
            np.arange(self.n_chunks, dtype=np.intp), sizes
        )
        self.sizes = sizes
        self.plan = plan

    def rows(self, chunk: int) -> np.ndarray:
        plan = self.plan
        return np.sort(plan.sample_order[plan.bounds[chunk] : plan.bounds[chunk + 1]])


class _Groups:
    """Rows grouped by (chunk, class) pairs that occur, sorted by chunk."""

    def __init__(self, chunks: _Chunks, class_index: np.ndarray, n_classes: int):
        codes = chunks.of_row * n_classes + class_index
        unique, self.of_row = np.unique(codes, return_inverse=True)
        self.n_groups = unique.shape[0]
        self.chunk = unique // n_classes
        self.klass = unique % n_classes
        self.ptr = np.searchsorted(self.chunk, np.arange(chunks.n_chunks + 1))
        self.n_rows = np.bincount(self.of_row, minlength=self.n_groups)
        self.class_rows = np.bincount(
            self.klass, weights=self.n_rows, minlength=n_classes
        )

    @classmethod
    def by_class(cls, chunks: _Chunks, y) -> tuple[np.ndarray, np.ndarray, _Groups]:
        """The sorted classes of ``y``, each row's class index, and the groups."""
        classes, class_index = np.unique(y, return_inverse=True)
        return classes, class_index, cls(chunks, class_index, classes.shape[0])

    def present_without(self, chunk: int) -> np.ndarray:
        """Which classes have rows outside ``chunk`` (the fold's training rows)."""
        part = self.of_chunk(chunk)
        rows = self.class_rows.copy()
        rows[self.klass[part]] -= self.n_rows[part]
        return rows > 0

    def sums(self, values, weights=None):
        """Per-group sums of the rows of ``values`` (dense, or CSR for CSR input)."""
        n = self.of_row.shape[0]
        data = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
        indicator = sp.csr_matrix(
            (data, (self.of_row, np.arange(n))), shape=(self.n_groups, n)
        )
        out = indicator @ values
        return out.tocsr() if sp.issparse(out) else np.asarray(out)

    def of_chunk(self, chunk: int) -> slice:
        return slice(int(self.ptr[chunk]), int(self.ptr[chunk + 1]))


def _dense_rows(values, index) -> np.ndarray:
    rows = values[index]
    return rows.toarray() if sp.issparse(rows) else rows


def _by_class(groups: _Groups, values, n_classes: int) -> np.ndarray:
    """Totals per class of per-group rows."""
    total = np.zeros((n_classes,) + np.shape(values)[1:])
    if sp.issparse(values):
        indicator = sp.csr_matrix(
            (np.ones(groups.n_groups), (groups.klass, np.arange(groups.n_groups))),
            shape=(n_classes, groups.n_groups),
        )
        return np.asarray((indicator @ values).toarray())
    np.add.at(total, groups.klass, values)
    return total


def _dense(value) -> np.ndarray:
    return np.asarray(value.toarray() if sp.issparse(value) else value)
