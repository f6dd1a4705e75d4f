"""The prefix cache's disk tier trusts only itself (issue 17, item 2).

Planted, forged, swapped, truncated and empty-key files, folders and keys that
belong to another user or that others may write, files of the user's own that
the cache must never delete, and concurrent writers.
"""

import multiprocessing
import os
import pickle
import shutil
import stat
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier

from sklearn_ext import PrefixCache, TreeCVEstimator
from sklearn_ext.utils import _prefix_cache

OTHER_UID = 65534  # nobody


def _key_hex(key: bytes) -> str:
    return key.hex() + ".state"


def _as_other_user(path, monkeypatch):
    """Make ``path`` belong to another user (chown as root, else a fake uid)."""
    if os.geteuid() == 0:
        os.chown(path, OTHER_UID, -1)
    else:
        uid = os.geteuid()
        monkeypatch.setattr(_prefix_cache, "_current_uid", lambda: uid + 1)


class _Planted:
    """A pickle whose loading leaves a trace: it must never be unpickled."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


# -- the folder and the key ------------------------------------------------------
def test_new_folder_and_key_are_private(tmp_path):
    folder = tmp_path / "cache"
    PrefixCache(directory=folder)
    assert stat.S_IMODE(folder.stat().st_mode) & 0o077 == 0
    key = folder / ".treecv-key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert key.stat().st_size == 32


def test_planted_key_of_another_user_is_refused(tmp_path, monkeypatch):
    # Another user made the folder's key first, readable and writable by all,
    # and signed a pickle with it: the cache refuses the key, runs nothing.
    key = tmp_path / ".treecv-key"
    key.write_bytes(b"k" * 32)
    os.chmod(key, 0o666)
    marker = tmp_path / "pwned"
    forger = object.__new__(PrefixCache)
    forger._secret = b"k" * 32
    payload = pickle.dumps(_Planted(marker))
    name_tag, entry_tag = forger._tags(_key_hex(b"x"), payload)
    (tmp_path / _key_hex(b"x")).write_bytes(
        _prefix_cache._MAGIC + name_tag + entry_tag + payload
    )
    _as_other_user(key, monkeypatch)
    with pytest.raises(ValueError, match="key file .* cannot be trusted"):
        PrefixCache(directory=tmp_path).get(b"x")
    assert not marker.exists()


def test_key_owned_by_another_user_is_refused(tmp_path, monkeypatch):
    cache = PrefixCache(directory=tmp_path)
    assert cache._secret is not None
    # (Without root, the fake uid disowns the folder too, which is refused first.)
    _as_other_user(tmp_path / ".treecv-key", monkeypatch)
    with pytest.raises(ValueError, match="owned by uid"):
        PrefixCache(directory=tmp_path)


@pytest.mark.parametrize("mode", [0o644, 0o660, 0o604])
def test_key_readable_by_others_is_refused(tmp_path, mode):
    PrefixCache(directory=tmp_path)
    os.chmod(tmp_path / ".treecv-key", mode)
    with pytest.raises(ValueError, match="lets other users read or write it"):
        PrefixCache(directory=tmp_path)


@pytest.mark.parametrize("size", [0, 16, 33])
def test_key_of_the_wrong_length_is_refused(tmp_path, monkeypatch, size):
    # An empty key is what a reader used to see between a writer's create and
    # write; keys are now linked in whole, so a short one is never accepted.
    monkeypatch.setattr(_prefix_cache.time, "sleep", lambda s: None)
    key = tmp_path / ".treecv-key"
    key.write_bytes(b"k" * size)
    os.chmod(key, 0o600)
    with pytest.raises(ValueError, match=f"it holds {size} bytes, not 32"):
        PrefixCache(directory=tmp_path)


def test_key_that_is_a_link_is_refused(tmp_path):
    elsewhere = tmp_path / "secret"
    elsewhere.write_bytes(b"k" * 32)
    os.chmod(elsewhere, 0o600)
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    os.symlink(elsewhere, folder / ".treecv-key")
    with pytest.raises(ValueError, match="not a link"):
        PrefixCache(directory=folder)


def test_folder_of_another_user_is_refused(tmp_path, monkeypatch):
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o700)
    _as_other_user(folder, monkeypatch)
    if os.geteuid() == 0:
        os.chmod(folder, 0o777)  # let the check, not the permissions, refuse
    with pytest.raises(ValueError, match="must be a folder owned by the current"):
        PrefixCache(directory=folder)


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o1777])
def test_folder_writable_by_others_is_refused(tmp_path, mode):
    folder = tmp_path / "open"
    folder.mkdir()
    os.chmod(folder, mode)
    with pytest.raises(ValueError, match="writable by no one else"):
        PrefixCache(directory=folder)


# -- the state files ----------------------------------------------------------------
def test_forged_file_is_never_unpickled(tmp_path):
    cache = PrefixCache(directory=tmp_path)
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Planted(marker))
    (tmp_path / _key_hex(b"k")).write_bytes(_prefix_cache._MAGIC + b"\0" * 64 + payload)
    with pytest.warns(RuntimeWarning, match="bad signature"):
        assert cache.get(b"k") is None
    assert not marker.exists()


def test_file_signed_with_another_key_is_ignored(tmp_path):
    other = tmp_path / "other"
    PrefixCache(directory=other).put(b"k", np.arange(3))
    mine = tmp_path / "mine"
    cache = PrefixCache(directory=mine)
    shutil.copy(other / _key_hex(b"k"), mine / _key_hex(b"k"))
    with pytest.warns(RuntimeWarning, match="bad signature"):
        assert cache.get(b"k") is None


def test_swapped_files_are_ignored(tmp_path):
    cache = PrefixCache(directory=tmp_path)
    cache.put(b"a", np.zeros(3))
    cache.put(b"b", np.ones(3))
    a, b = tmp_path / _key_hex(b"a"), tmp_path / _key_hex(b"b")
    a_bytes, b_bytes = a.read_bytes(), b.read_bytes()
    a.write_bytes(b_bytes)
    b.write_bytes(a_bytes)
    reader = PrefixCache(directory=tmp_path)
    with pytest.warns(RuntimeWarning, match="bad signature"):
        assert reader.get(b"a") is None
    with pytest.warns(RuntimeWarning, match="bad signature"):
        assert reader.get(b"b") is None


@pytest.mark.parametrize("keep", [0, 8, 40, 72, -1])
def test_truncated_file_is_ignored(tmp_path, keep):
    cache = PrefixCache(directory=tmp_path)
    cache.put(b"k", np.arange(100))
    path = tmp_path / _key_hex(b"k")
    path.write_bytes(path.read_bytes()[:keep])
    reader = PrefixCache(directory=tmp_path)
    with pytest.warns(RuntimeWarning, match="bad signature"):
        assert reader.get(b"k") is None


def test_swapped_prefix_states_do_not_mislead_tree_cv_estimator(tmp_path):
    X, y = load_digits(return_X_y=True)
    X, y = X[:400], y[:400]
    classes = np.unique(y)

    def estimator(cache):
        sgd = SGDClassifier(shuffle=False, random_state=0)
        return TreeCVEstimator(sgd, batch_size=50, classes=classes, cache=cache)

    estimator(PrefixCache(directory=tmp_path)).fit(X[:200], y[:200])
    files = sorted(tmp_path.glob("*.state"), key=lambda p: p.stat().st_mtime_ns)
    assert len(files) == 4
    # The longest prefix now holds the state after the first batch only.
    first, last = files[0].read_bytes(), files[-1].read_bytes()
    files[0].write_bytes(last)
    files[-1].write_bytes(first)
    resumed = estimator(PrefixCache(directory=tmp_path))
    with pytest.warns(RuntimeWarning, match="bad signature"):
        resumed.fit(X, y)
    cold = estimator(None).fit(X, y)
    assert resumed.n_samples_reused_ == 150  # the third batch, still valid
    assert_array_equal(resumed.estimator_.coef_, cold.estimator_.coef_)


# -- what the cache deletes -----------------------------------------------------------
def test_clear_and_trim_touch_only_the_cache_files(tmp_path):
    mine = tmp_path / "notes.state"
    mine.write_bytes(b"the user's own file" * 100)
    other = tmp_path / "results.csv"
    other.write_text("a,b\n")
    planted = tmp_path / _key_hex(b"z")
    planted.write_bytes(_prefix_cache._MAGIC + b"\0" * 80)
    cache = PrefixCache(directory=tmp_path, max_disk_bytes=3_000)
    for i in range(20):
        cache.put(bytes([i]), np.zeros(50))
    own = [p for p in tmp_path.glob("*.state") if p not in (mine, planted)]
    assert 0 < len(own) < 20
    assert sum(p.stat().st_size for p in own) <= 3_000
    cache.clear()
    assert not [p for p in tmp_path.glob("*.state") if p not in (mine, planted)]
    assert mine.exists() and other.exists() and planted.exists()
    assert (tmp_path / ".treecv-key").exists()


# -- concurrent writers -------------------------------------------------------------
def test_concurrent_writers_in_threads(tmp_path):
    caches = [PrefixCache(directory=tmp_path, max_disk_bytes=20_000) for _ in range(2)]

    def work(i):
        cache = caches[i % 2]
        key = bytes([i % 7]) * 8
        cache.put(key, np.full(40, i % 7))
        reader = PrefixCache(max_bytes=0, directory=tmp_path)
        got = reader.get(key)
        assert got is None or np.all(got == i % 7)
        return got is not None

    with ThreadPoolExecutor(8) as pool:
        found = list(pool.map(work, range(64)))
    assert any(found)
    assert not list(tmp_path.glob("*.tmp"))


def _open_and_put(args):
    folder, i = args
    cache = PrefixCache(directory=folder)
    cache.put(bytes([i]), np.full(10, i))
    return cache._secret


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="needs fork"
)
def test_concurrent_processes_agree_on_one_key(tmp_path):
    folder = str(tmp_path / "fresh")
    with multiprocessing.get_context("fork").Pool(4) as pool:
        secrets = pool.map(_open_and_put, [(folder, i) for i in range(8)])
    assert len(set(secrets)) == 1
    reader = PrefixCache(directory=folder)
    for i in range(8):
        assert_array_equal(reader.get(bytes([i])), np.full(10, i))


# -- creating the folder -------------------------------------------------------------
def test_missing_parents_are_private_under_umask_000(tmp_path):
    old = os.umask(0)
    try:
        PrefixCache(directory=tmp_path / "a" / "b" / "cache")
    finally:
        os.umask(old)
    for folder in ("a", "a/b", "a/b/cache"):
        assert stat.S_IMODE((tmp_path / folder).stat().st_mode) == 0o700, folder


@pytest.mark.parametrize("below", ["", "sub"])
def test_link_planted_by_another_user_is_not_followed(tmp_path, monkeypatch, below):
    # Another user plants a link in a shared folder (as /tmp) where the cache
    # folder, or one of its parents, is to be: it points into the user's files.
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o700)
    planted = tmp_path / "planted"
    os.symlink(victim, planted)
    if os.geteuid() == 0:
        os.lchown(planted, OTHER_UID, -1)
    else:
        uid = os.geteuid()
        monkeypatch.setattr(_prefix_cache, "_current_uid", lambda: uid + 1)
    with pytest.raises(ValueError, match="is a link owned by uid .* not followed"):
        PrefixCache(directory=planted / below if below else planted)
    assert os.listdir(victim) == []


def test_own_link_to_a_private_folder_is_followed(tmp_path):
    target = tmp_path / "target"
    target.mkdir(mode=0o700)
    os.symlink(target, tmp_path / "link")
    cache = PrefixCache(directory=tmp_path / "link" / "cache")
    cache.put(b"k", SGDClassifier())
    assert (target / "cache" / ".treecv-key").exists()
    assert stat.S_IMODE((target / "cache").stat().st_mode) == 0o700


def test_folder_below_a_file_is_one_clear_error(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="must be a writable directory"):
        PrefixCache(directory=tmp_path / "file" / "cache")


def test_state_file_that_is_a_link_is_never_followed(tmp_path):
    # A link in the folder, named as an entry, to a valid entry kept elsewhere:
    # reading it is a miss, writing the entry replaces the link, not its target.
    folder = tmp_path / "cache"
    cache = PrefixCache(max_bytes=0, directory=folder)
    cache.put(b"k", np.arange(3))
    outside = tmp_path / "outside.state"
    os.replace(folder / _key_hex(b"k"), outside)
    os.symlink(outside, folder / _key_hex(b"k"))
    assert cache.get(b"k") is None
    before = outside.read_bytes()
    cache.put(b"k", np.arange(4))
    assert not (folder / _key_hex(b"k")).is_symlink()
    assert outside.read_bytes() == before
    assert_array_equal(cache.get(b"k"), np.arange(4))
