"""One content hash for every store key: arrays by their bytes, never by ``repr``.

:func:`content_digest` hashes a canonical encoding of its parts: each value
carries a type tag and a length, so two different inputs never encode to the
same bytes (``(1, 2)`` and ``((1,), 2)``, ``"1"`` and ``1``, ``1`` and ``1.0``
and ``True`` all differ). NumPy arrays are hashed by dtype, shape and bytes
(whatever their size: ``repr`` of an array truncates it beyond 1,000 values),
CSR matrices by their parts, object arrays element by element.

An array's digest is taken again on every call, except inside
:func:`~sklearn_ext.utils._data_scope.data_scope`, where the data of one call
(a search's ``fit``, an Optuna study) is taken not to change: there each array
is read once and its digest reused while the scope lasts.
"""

from __future__ import annotations

import hashlib
import math
import weakref
from collections.abc import Mapping
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp

from sklearn_ext.utils._data_scope import scoped_memo

__all__ = ["UnhashableContent", "content_digest"]

_MEMO_KEY = "content_digest"


class UnhashableContent(TypeError):
    """A part whose content cannot be hashed (a function, an arbitrary object).

    Its ``repr`` or identity says nothing reliable about what it computes, so a
    store must not key anything by it: callers compute without a store.
    """


def content_digest(*parts) -> bytes:
    """A sha256 of the content of ``parts``, canonically encoded.

    Parameters
    ----------
    *parts : object
        ``None``, bools, integers, floats, complex numbers, strings, bytes,
        NumPy scalars and arrays (object arrays element by element), SciPy
        sparse matrices (by their CSR parts), pandas objects (their values,
        index and column names), and tuples, lists, sets and dicts of these, nested
        to any depth (dict items and set elements in a canonical order).

    Returns
    -------
    digest : bytes
        32 bytes.

    Raises
    ------
    UnhashableContent
        If a part is of another type (a callable, an arbitrary object), whose
        content cannot be read.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.utils._hashing import content_digest
    >>> a = np.arange(2000.0)
    >>> b = a.copy()
    >>> b[1000] = -1.0  # repr(a) == repr(b): NumPy elides the middle
    >>> content_digest(a) == content_digest(b)
    False
    >>> content_digest({"p": 2, "w": a}) == content_digest({"w": a, "p": 2})
    True
    """
    h = hashlib.sha256(b"content-digest-v1")
    _encode(h, parts, scoped_memo())
    return h.digest()


def _encode(h, value, memo) -> None:
    if value is None:
        h.update(b"N")
    elif isinstance(value, bool | np.bool_):
        h.update(b"B1" if value else b"B0")
    elif isinstance(value, Integral):
        _tagged(h, b"i", str(int(value)).encode())
    elif isinstance(value, np.longdouble | np.clongdouble):
        _array(h, np.asarray(value), memo)  # more bits than a float holds
    elif isinstance(value, Real):
        _float(h, value)  # float, np.float64, np.float32 (exactly widened)
    elif isinstance(value, complex | np.complexfloating):
        h.update(b"c")
        _float(h, value.real)
        _float(h, value.imag)
    elif isinstance(value, str):
        _tagged(h, b"s", value.encode("utf-8", "surrogatepass"))
    elif isinstance(value, bytes | bytearray | memoryview):
        _tagged(h, b"b", bytes(value))
    elif isinstance(value, tuple | list):
        _tagged(h, b"t" if isinstance(value, tuple) else b"l", b"")
        h.update(len(value).to_bytes(8, "little"))
        for item in value:
            _encode(h, item, memo)
    elif isinstance(value, Mapping):
        _mapping(h, value, memo)
    elif isinstance(value, set | frozenset):
        _unordered(h, value, memo)
    elif isinstance(value, np.ndarray | np.generic) or sp.issparse(value):
        _array(h, np.asarray(value) if isinstance(value, np.generic) else value, memo)
    elif hasattr(value, "iloc") and hasattr(value, "to_numpy"):
        _pandas(h, value, memo)
    else:
        raise UnhashableContent(
            f"Cannot hash the content of {type(value).__name__!r} objects; a "
            "store key needs arrays, numbers, strings and containers of them."
        )


def _tagged(h, tag: bytes, payload: bytes) -> None:
    h.update(tag + len(payload).to_bytes(8, "little"))
    h.update(payload)


def _float(h, value) -> None:
    value = float(value)
    # float.hex is exact; NaN has one spelling.
    _tagged(h, b"f", b"nan" if math.isnan(value) else value.hex().encode())


def _mapping(h, value: Mapping, memo) -> None:
    items = []
    for key, item in value.items():
        key_hash = hashlib.sha256()
        _encode(key_hash, key, memo)
        items.append((key_hash.digest(), item))
    items.sort(key=lambda pair: pair[0])
    _tagged(h, b"d", len(items).to_bytes(8, "little"))
    for key_digest, item in items:
        h.update(key_digest)
        _encode(h, item, memo)


def _unordered(h, value, memo) -> None:
    """A set: its elements' digests in sorted order."""
    digests = []
    for item in value:
        item_hash = hashlib.sha256()
        _encode(item_hash, item, memo)
        digests.append(item_hash.digest())
    _tagged(h, b"S", len(digests).to_bytes(8, "little"))
    for digest in sorted(digests):
        h.update(digest)


def _pandas(h, value, memo) -> None:
    _tagged(h, b"p", type(value).__name__.encode())
    if hasattr(value, "columns"):
        _encode(h, list(value.columns), memo)
        _encode(h, [str(dtype) for dtype in value.dtypes], memo)
    _encode(h, np.asarray(value.index), memo)
    _encode(h, value.to_numpy(), memo)


def _array(h, array, memo) -> None:
    """An array's digest into ``h``: from the scope's memo, or read now."""
    if memo is None or (not sp.issparse(array) and array.ndim == 0):
        h.update(_array_digest(array, memo))
        return
    known = memo.setdefault(_MEMO_KEY, {})
    entry = known.get(id(array))
    layout = _layout(array)
    if entry is not None and entry[0]() is array and entry[1] == layout:
        h.update(entry[2])
        return
    digest = _array_digest(array, memo)
    key = id(array)
    try:
        ref = weakref.ref(array, lambda _: known.pop(key, None))
    except TypeError:  # not weakly referenceable: not remembered
        pass
    else:
        known[key] = (ref, layout, digest)
    h.update(digest)


def _layout(array) -> tuple:
    if sp.issparse(array):
        parts = [getattr(array, name, None) for name in ("data", "indices", "indptr")]
        return (
            array.format,
            array.shape,
            tuple(None if p is None else p.__array_interface__["data"] for p in parts),
        )
    return (array.__array_interface__["data"], array.shape, array.strides, array.dtype)


def _array_digest(array, memo) -> bytes:
    h = hashlib.sha256()
    if sp.issparse(array):
        csr = array.tocsr()
        h.update(f"csr{csr.shape}".encode())
        for part in (csr.data, csr.indices, csr.indptr):
            h.update(_array_digest(part, memo))
        return h.digest()
    h.update(f"{array.dtype.str}{array.shape}|".encode())
    if array.dtype.hasobject:
        for item in array.ravel(order="C").tolist():
            _encode(h, item, memo)
    elif array.dtype.fields is not None or array.dtype.kind == "V":
        h.update(str(array.dtype.descr).encode())
        h.update(np.ascontiguousarray(array).tobytes())
    else:
        h.update(np.ascontiguousarray(array).reshape(-1).view(np.uint8))
    return h.digest()
