"""The floor's one content hash and one bounded LRU store."""

import copy
import pickle
import threading

import numpy as np
import pytest
from scipy import sparse

from sklearn_ext.utils._data_scope import data_scope
from sklearn_ext.utils._hashing import UnhashableContent, content_digest
from sklearn_ext.utils._lru import LRUStore


# -- content_digest -------------------------------------------------------------------
def test_arrays_are_hashed_by_all_their_values():
    # repr() elides the middle of arrays over 1,000 values: keys built from it
    # collided (issue 35); the digest reads every byte.
    a = np.arange(2000.0)
    b = a.copy()
    b[1000] = -1.0
    assert repr(a) == repr(b)
    assert content_digest(a) != content_digest(b)
    assert content_digest({"w": a}) != content_digest({"w": b})
    assert content_digest(a) == content_digest(a.copy())


@pytest.mark.parametrize(
    "first, second",
    [
        (1, 1.0),
        (1, True),
        ("1", 1),
        ((1, 2), ((1,), 2)),
        ((1, 2), [1, 2]),
        (None, "None"),
        (b"ab", "ab"),
        (np.zeros(3), np.zeros(3, dtype=np.float32)),
        (np.zeros((2, 3)), np.zeros((3, 2))),
        (np.zeros((2, 3)), sparse.csr_matrix(np.zeros((2, 3)))),
        (np.array([1, "a"], dtype=object), np.array(["1", "a"], dtype=object)),
        (("a", "bc"), ("ab", "c")),
        ({"a": 1}, {"a": 2}),
        (float("nan"), 0.0),
    ],
)
def test_different_content_different_digest(first, second):
    assert content_digest(first) != content_digest(second)


def test_equal_content_equal_digest():
    a = np.arange(12.0).reshape(3, 4)
    assert content_digest({"p": 2, "w": a}) == content_digest({"w": a.copy(), "p": 2})
    assert content_digest(np.float64(0.5)) == content_digest(0.5)
    assert content_digest({3, "a", 1.5}) == content_digest({1.5, "a", 3})
    assert content_digest({1, 2}) != content_digest([1, 2])
    assert content_digest(np.asfortranarray(a)) == content_digest(a)
    assert content_digest(sparse.csr_matrix(a)) == content_digest(sparse.csc_matrix(a))
    objects = np.array([None, "x", (1, 2)], dtype=object)
    assert content_digest(objects) == content_digest(objects.copy())


def test_unhashable_content_is_refused():
    with pytest.raises(UnhashableContent, match="'function'"):
        content_digest({"metric": lambda a, b: 0.0})
    assert issubclass(UnhashableContent, TypeError)


def test_an_array_is_read_once_per_scope(monkeypatch):
    from sklearn_ext.utils import _hashing

    reads = []
    digest = _hashing._array_digest
    monkeypatch.setattr(
        _hashing, "_array_digest", lambda a, memo: reads.append(1) or digest(a, memo)
    )
    X = np.arange(50.0)
    with data_scope():
        first = content_digest(X)
        X[0] = 7.0  # taken not to change within the scope
        assert content_digest(X) == first
        assert content_digest("other", X) != first
    assert len(reads) == 1
    # Outside it every call reads the array: the change is seen.
    assert content_digest(X) != first
    assert len(reads) == 2


def test_a_write_through_an_earlier_view_is_seen():
    # Issue 35: a read-only X changed through a writable view taken before kept
    # its remembered digest.
    X = np.arange(20.0)
    view = X[:]
    X.setflags(write=False)
    before = content_digest(X)
    view[3] = -1.0
    assert content_digest(X) != before


# -- LRUStore -------------------------------------------------------------------------
def test_lru_store_is_bounded_and_least_recently_used_goes_first():
    store = LRUStore(max_bytes=240)
    for key in "abc":
        assert store.put(key, np.zeros(10))
    assert store.get("a") is not None  # "b" is now the least recently used
    store.put("d", np.zeros(10))
    assert "b" not in store and {"a", "c", "d"} <= {k for k, _ in store.items()}
    assert store.nbytes == 240 and len(store) == 3
    assert not store.put("huge", np.zeros(31))  # larger than the bound
    assert "huge" not in store and store.nbytes == 240
    assert store.put("a", np.zeros(1)) and store.nbytes == 168  # replaced
    assert store.pop("a").shape == (1,) and "a" not in store


def test_lru_store_counts_and_computes_once():
    store = LRUStore(max_bytes=1000)
    calls = []
    value, hit = store.get_or_compute("k", lambda: calls.append(1) or np.ones(3))
    assert not hit
    again, hit = store.get_or_compute("k", lambda: calls.append(1) or np.ones(3))
    assert hit and again is value and len(calls) == 1
    assert store.get("missing") is None
    assert (store.hits, store.misses) == (1, 2)
    store.clear()
    assert len(store) == 0 and store.nbytes == 0


def test_lru_store_evictions_are_reported():
    dropped = []
    store = LRUStore(max_bytes=16, on_evict=lambda k, v: dropped.append(k))
    store.put("a", np.zeros(1))
    store.put("b", np.zeros(1))
    store.put("c", np.zeros(1))
    assert dropped == ["a"]
    assert store.popitem()[0] == "b" and dropped == ["a", "b"]
    with pytest.raises(KeyError):
        LRUStore(8).popitem()


def test_lru_store_sharing_semantics():
    store = LRUStore(max_bytes=100)
    store.put("a", np.zeros(2))
    assert copy.copy(store) is store and copy.deepcopy(store) is store
    fresh = pickle.loads(pickle.dumps(store))
    assert fresh.max_bytes == 100 and len(fresh) == 0 and fresh.nbytes == 0
    assert fresh.put("b", np.zeros(2))


def test_lru_store_bound_holds_under_threads():
    store = LRUStore(max_bytes=800)

    def work(offset):
        for i in range(300):
            store.put((offset, i % 37), np.zeros(1 + i % 13))
            store.get((offset, (i * 7) % 37))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.nbytes <= 800
    assert store.nbytes == sum(value.nbytes for _, value in store.items())


@pytest.mark.parametrize("bad", [-1, 1.5, True, "1"])
def test_lru_store_validates_its_bound(bad):
    with pytest.raises(ValueError, match="'max_bytes' parameter of LRUStore"):
        LRUStore(bad)
