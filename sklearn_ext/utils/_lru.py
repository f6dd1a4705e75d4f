"""One byte-bounded, thread-safe least-recently-used store for every cache."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["LRUStore", "nbytes_of"]


def nbytes_of(value) -> int:
    """Memory held by ``value``: an array's, a CSR matrix's parts, ``bytes``."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if sp.issparse(value):
        return int(
            sum(
                getattr(value, name).nbytes
                for name in ("data", "indices", "indptr", "row", "col", "offsets")
                if isinstance(getattr(value, name, None), np.ndarray)
            )
        )
    if isinstance(value, bytes | bytearray):
        return len(value)
    size = getattr(value, "nbytes", None)
    if isinstance(size, int | np.integer):
        return int(size)
    raise TypeError(
        f"Cannot size a {type(value).__name__!r}: give nbytes to put(), or a "
        "sizeof to LRUStore."
    )


class LRUStore:
    """Values by key, least recently used first out, their total size bounded.

    The sizes of the kept values add up to at most ``max_bytes``; a value
    larger than the bound is not kept at all. Every operation holds one lock,
    so a store may be shared by threads. Copying or deep-copying a store
    returns the same store (estimators and backends holding it keep sharing
    it through :func:`~sklearn.base.clone`); pickling it (to send it to a
    worker process) gives an empty store with the same bound.

    Parameters
    ----------
    max_bytes : int
        Bound on the total size of the kept values, in bytes; ``0`` keeps
        nothing.
    sizeof : callable, default=None
        ``sizeof(value)`` gives a value's size when :meth:`put` is not told
        it; ``None`` uses :func:`nbytes_of`.
    on_evict : callable, default=None
        ``on_evict(key, value)`` is called (under the lock) for each value
        dropped to make room or replaced, so that an owner may keep counts.

    Attributes
    ----------
    hits, misses : int
        Lookups (:meth:`get`, :meth:`get_or_compute`) that found, and did not
        find, their key.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.utils._lru import LRUStore
    >>> store = LRUStore(max_bytes=100)
    >>> store.put("a", np.zeros(10)), store.put("b", np.zeros(10))
    (True, True)
    >>> "a" in store, store.nbytes  # "a" made room for "b"
    (False, 80)
    >>> store.put("huge", np.zeros(20))  # larger than the bound: not kept
    False
    """

    def __init__(
        self,
        max_bytes: int,
        *,
        sizeof: Callable[[Any], int] | None = None,
        on_evict: Callable[[Hashable, Any], None] | None = None,
    ) -> None:
        if (
            not isinstance(max_bytes, int | np.integer)
            or isinstance(max_bytes, bool)
            or max_bytes < 0
        ):
            raise ValueError(
                "The 'max_bytes' parameter of LRUStore must be an int in the "
                f"range [0, inf). Got {max_bytes!r} instead."
            )
        self.max_bytes = int(max_bytes)
        self.sizeof = nbytes_of if sizeof is None else sizeof
        self.on_evict = on_evict
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._nbytes = 0
        self._lock = threading.RLock()
        self.hits = 0
        self.misses = 0

    # -- lookups ---------------------------------------------------------------
    def get(self, key: Hashable, default=None):
        """The value under ``key`` (now the most recently used), or ``default``."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
                return default
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[0]

    def put(self, key: Hashable, value, nbytes: int | None = None) -> bool:
        """Keep ``value`` under ``key``, dropping the least recently used to fit.

        Returns whether it is kept: a value larger than ``max_bytes`` is not
        (and an older value under ``key`` is dropped all the same).
        """
        size = int(self.sizeof(value) if nbytes is None else nbytes)
        with self._lock:
            self._drop(key)
            if size > self.max_bytes:
                return False
            self._entries[key] = (value, size)
            self._nbytes += size
            while self._nbytes > self.max_bytes:
                self._drop(next(iter(self._entries)))
            return True

    def get_or_compute(
        self, key: Hashable, compute: Callable[[], Any]
    ) -> tuple[Any, bool]:
        """The value under ``key``, computing and keeping it on a miss.

        ``compute`` runs outside the lock (threads may compute the same value
        at once; the first kept stays). Returns the value and whether it was
        found.
        """
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return entry[0], True
            self.misses += 1
        value = compute()
        with self._lock:
            if key not in self._entries:
                self.put(key, value)
        return value, False

    def pop(self, key: Hashable, default=None):
        """Remove and return the value under ``key`` (``default`` if none)."""
        with self._lock:
            entry = self._entries.pop(key, None)
            if entry is None:
                return default
            self._nbytes -= entry[1]
            return entry[0]

    def popitem(self) -> tuple[Hashable, Any]:
        """Drop the least recently used entry, as eviction does; return it.

        Raises ``KeyError`` when the store is empty.
        """
        with self._lock:
            if not self._entries:
                raise KeyError("popitem(): the store is empty")
            key = next(iter(self._entries))
            value = self._entries[key][0]
            self._drop(key)
            return key, value

    def _drop(self, key: Hashable) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._nbytes -= entry[1]
            if self.on_evict is not None:
                self.on_evict(key, entry[0])

    def clear(self) -> None:
        """Drop every entry (the counts of hits and misses stay)."""
        with self._lock:
            self._entries.clear()
            self._nbytes = 0

    def items(self) -> list[tuple[Hashable, Any]]:
        """``(key, value)`` pairs, least recently used first (a snapshot)."""
        with self._lock:
            return [(key, entry[0]) for key, entry in self._entries.items()]

    @property
    def nbytes(self) -> int:
        """Total size of the kept values, in bytes (at most ``max_bytes``)."""
        return self._nbytes

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._entries

    # -- sharing ---------------------------------------------------------------
    def __copy__(self) -> LRUStore:
        return self

    def __deepcopy__(self, memo) -> LRUStore:
        return self

    def __getstate__(self) -> dict:
        return {"max_bytes": self.max_bytes, "sizeof": self.sizeof}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["max_bytes"], sizeof=state["sizeof"])

    def __repr__(self) -> str:
        return f"LRUStore(max_bytes={self.max_bytes})"
