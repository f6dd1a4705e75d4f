"""A bounded, content-keyed store of model states after a prefix of training rows."""

from __future__ import annotations

import hashlib
import hmac
import os
import pickle
import secrets
import stat
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import joblib
import numpy as np

from sklearn_ext.utils._lru import LRUStore

__all__ = [
    "PrefixCache",
    "PrefixEpochMixin",
    "batches",
    "prefix_keys",
    "resolve_cache",
    "resume_from_prefix",
]

_MAGIC = b"TREECV02"
_KEY_FILE = ".treecv-key"
_KEY_BYTES = 32
_TAG_BYTES = 32
_HEADER = len(_MAGIC) + 2 * _TAG_BYTES
_SUFFIX = ".state"


def _current_uid() -> int | None:
    """The effective user id, or ``None`` where the OS has none (Windows)."""
    return os.geteuid() if hasattr(os, "geteuid") else None


def _make_private_folder(directory: Path) -> None:
    """Create ``directory`` and its missing parents, each with mode 0o700.

    ``Path.mkdir(parents=True)`` gives the parents the umask's mode (0o777
    under ``umask 000``) and follows any symbolic link on the way. Here each
    missing folder is made 0o700 whatever the umask, and a link on the path is
    followed only if it belongs to the current user or to root: a link planted
    by another user in a shared folder such as ``/tmp`` raises a ``ValueError``.
    """
    uid = _current_uid()
    path = Path(os.path.abspath(directory))
    for current in (*reversed(path.parents), path):
        try:
            try:
                info = os.lstat(current)
            except FileNotFoundError:
                try:
                    os.mkdir(current, 0o700)  # The umask can only take bits away.
                except FileExistsError:  # Made by a concurrent process meanwhile.
                    pass
                info = os.lstat(current)
        except OSError as exc:
            raise ValueError(
                "The 'directory' parameter of PrefixCache must be a writable "
                f"directory. Got {str(directory)!r} instead ({exc.strerror}: "
                f"{str(current)!r})."
            ) from None
        if (
            stat.S_ISLNK(info.st_mode)
            and uid is not None
            and info.st_uid not in (uid, 0)
        ):
            raise ValueError(
                "The 'directory' parameter of PrefixCache must not lead through a "
                f"symbolic link of another user. Got {str(directory)!r}, where "
                f"{str(current)!r} is a link owned by uid {info.st_uid} (the "
                f"current uid is {uid}); it is not followed."
            )


class PrefixCache:
    """Model states after a prefix of training rows, keyed by content.

    A key is an order-sensitive digest of the learner's parameters and of every
    row fed so far, so a state is found again only by a fit that feeds the same
    rows in the same order to the same learner; anything else is a miss, which
    costs an ordinary fit, never a wrong model.

    The memory tier is a least-recently-used store of pickled states bounded by
    ``max_bytes``; it belongs to the process. The optional disk tier in
    ``directory`` lets process-based workers (``n_jobs`` with loky, Dask) share
    prefixes. It trusts only itself:

    - the folder must belong to the current user and not be writable by anyone
      else, and its secret key file (``.treecv-key``, 32 random bytes created
      atomically) must belong to the user and be readable by no one else;
      otherwise a ``ValueError`` says what is wrong;
    - each state file carries an HMAC-SHA256, made with that key, over its
      name and its contents; a file whose signature does not match (foreign,
      forged, truncated, or renamed from another entry) is ignored with a
      ``RuntimeWarning`` and never unpickled;
    - files are written atomically (temporary file, then rename), so
      concurrent writers never expose a partial file;
    - the total size of the cache's own files is bounded by
      ``max_disk_bytes`` (oldest removed first); trimming and :meth:`clear`
      remove only files that carry this cache's signature, never the user's
      other files.

    See ``docs/stores.md`` for the threat model.

    Copying or cloning a cache returns the same cache: an estimator holding it
    keeps sharing it through ``sklearn.base.clone``. Pickling it (to send it to
    a worker process) keeps the directory and its key and starts an empty
    memory tier; the pickle therefore carries the secret key, so send it only
    to your own workers.

    Parameters
    ----------
    max_bytes : int, default=256 MiB
        Bound on the pickled size of the states held in memory.
    directory : str or path-like, default=None
        Folder of the shared disk tier; created (mode 0o700) if missing.
        ``None`` means no disk tier.
    max_disk_bytes : int, default=2 GiB
        Bound on the total size of the cache's state files in ``directory``.

    Examples
    --------
    >>> from sklearn.linear_model import SGDClassifier
    >>> from sklearn_ext.model_selection import PrefixCache
    >>> cache = PrefixCache(max_bytes=2**20)
    >>> cache.put(b"key", SGDClassifier(alpha=0.1))
    >>> cache.get(b"key").alpha, cache.get(b"other")
    (0.1, None)
    """

    def __init__(
        self,
        max_bytes: int = 256 * 2**20,
        *,
        directory: str | os.PathLike | None = None,
        max_disk_bytes: int = 2 * 2**30,
    ) -> None:
        for name, value in (
            ("max_bytes", max_bytes),
            ("max_disk_bytes", max_disk_bytes),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(
                    f"The '{name}' parameter of PrefixCache must be an int in the "
                    f"range [0, inf). Got {value!r} instead."
                )
        self.max_bytes = max_bytes
        self.max_disk_bytes = max_disk_bytes
        self.directory = None if directory is None else Path(directory)
        self._secret = None if self.directory is None else self._open_directory()
        self._reset_memory()

    def _reset_memory(self) -> None:
        self._memory = LRUStore(self.max_bytes)
        self._lock = threading.Lock()
        # name -> (inode, mtime_ns, size) of files whose signature was checked.
        self._own: dict[str, tuple[int, int, int]] = {}
        self.hits = 0
        self.misses = 0

    def _open_directory(self) -> bytes:
        _make_private_folder(self.directory)
        try:
            probe = tempfile.NamedTemporaryFile(dir=self.directory, delete=True)
            probe.close()
        except OSError as exc:
            raise ValueError(
                "The 'directory' parameter of PrefixCache must be a writable "
                f"directory. Got {str(self.directory)!r} instead ({exc.strerror})."
            ) from None
        info = os.stat(self.directory)
        uid = _current_uid()
        if uid is not None and (info.st_uid != uid or info.st_mode & 0o022):
            raise ValueError(
                "The 'directory' parameter of PrefixCache must be a folder owned "
                "by the current user and writable by no one else. Got "
                f"{str(self.directory)!r}, owned by uid {info.st_uid} with mode "
                f"{stat.S_IMODE(info.st_mode):#o} (the current uid is {uid})."
            )
        key_path = self.directory / _KEY_FILE
        if not os.path.lexists(key_path):
            self._create_key(key_path)
        return self._read_key(key_path)

    def _create_key(self, key_path: Path) -> None:
        """Write a new secret key, whole, or keep a concurrent writer's."""
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".treecv-key-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(secrets.token_bytes(_KEY_BYTES))
            try:
                # A hard link appears with its full contents, and fails if a
                # concurrent process made the key first.
                os.link(tmp, key_path)
            except FileExistsError:
                pass
            except OSError:
                # A file system without hard links: exclusive create instead
                # (a concurrent reader may see it short; _read_key waits).
                try:
                    key_fd = os.open(
                        key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600
                    )
                except FileExistsError:
                    return
                with os.fdopen(key_fd, "wb") as handle:
                    handle.write(Path(tmp).read_bytes())
        finally:
            Path(tmp).unlink(missing_ok=True)

    def _read_key(self, key_path: Path) -> bytes:
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
        for attempt in range(50):
            try:
                fd = os.open(key_path, flags)
            except OSError as exc:
                raise ValueError(
                    f"The key file {str(key_path)!r} of PrefixCache cannot be "
                    f"read ({exc.strerror}); it must be a regular file, not a "
                    "link."
                ) from None
            with os.fdopen(fd, "rb") as handle:
                info = os.fstat(handle.fileno())
                secret = handle.read(_KEY_BYTES + 1)
            uid = _current_uid()
            problem = None
            if not stat.S_ISREG(info.st_mode):
                problem = "it is not a regular file"
            elif uid is not None and info.st_uid != uid:
                problem = f"it is owned by uid {info.st_uid}, not {uid}"
            elif uid is not None and info.st_mode & 0o077:
                problem = (
                    f"its mode {stat.S_IMODE(info.st_mode):#o} lets other users "
                    "read or write it"
                )
            elif len(secret) > _KEY_BYTES or (
                len(secret) < _KEY_BYTES and attempt == 49
            ):
                problem = f"it holds {len(secret)} bytes, not {_KEY_BYTES}"
            if problem is not None:
                raise ValueError(
                    f"The key file {str(key_path)!r} of PrefixCache cannot be "
                    f"trusted: {problem}. A cache trusts only a {_KEY_BYTES}-byte "
                    "key that belongs to the current user and that no one else "
                    "can read; remove the file (its folder's state files will "
                    "then be ignored) or use another directory."
                )
            if len(secret) == _KEY_BYTES:
                return secret
            time.sleep(0.02)  # A writer without hard links is still writing.
        raise AssertionError("unreachable")

    # -- store and fetch ----------------------------------------------------------
    def get(self, key: bytes):
        """The state stored under ``key`` (a fresh copy), or ``None``."""
        payload = self._memory.get(key)
        if payload is None and self.directory is not None:
            payload = self._read(key)
        if payload is None:
            self.misses += 1
            return None
        self.hits += 1
        return pickle.loads(payload)

    def put(self, key: bytes, state) -> None:
        """Store a copy of ``state`` under ``key``."""
        payload = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
        self._memory.put(key, payload)
        if self.directory is not None:
            self._write(key, payload)

    def __contains__(self, key: bytes) -> bool:
        if key in self._memory:
            return True
        return self.directory is not None and self._path(key).is_file()

    def clear(self) -> None:
        """Drop the memory tier and this cache's own files in the disk tier.

        Files in the folder that this cache did not write are left alone.
        """
        self._memory.clear()
        if self.directory is not None:
            for _, _, path in self._own_files():
                path.unlink(missing_ok=True)

    # -- disk tier ------------------------------------------------------------------
    def _path(self, key: bytes) -> Path:
        return self.directory / (key.hex() + _SUFFIX)

    def _tags(self, name: str, payload: bytes | None) -> tuple[bytes, bytes | None]:
        """The name tag and the entry tag (name and contents) of a file."""
        encoded = name.encode()
        name_tag = hmac.new(self._secret, b"name\0" + encoded, hashlib.sha256)
        if payload is None:
            return name_tag.digest(), None
        entry = hmac.new(self._secret, b"entry\0", hashlib.sha256)
        entry.update(len(encoded).to_bytes(8, "little") + encoded)
        entry.update(payload)
        return name_tag.digest(), entry.digest()

    def _write(self, key: bytes, payload: bytes) -> None:
        if len(payload) > self.max_disk_bytes:
            return
        path = self._path(key)
        name_tag, entry_tag = self._tags(path.name, payload)
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".treecv-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(_MAGIC + name_tag + entry_tag + payload)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        try:
            self._remember(path, os.stat(path))
        except OSError:
            pass  # Trimmed by another worker meanwhile.
        self._trim_disk()

    def _read(self, key: bytes) -> bytes | None:
        path = self._path(key)
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as handle:
                data = handle.read()
        except OSError:
            return None
        name_tag, entry_tag = self._tags(path.name, data[_HEADER:])
        if (
            len(data) < _HEADER
            or data[: len(_MAGIC)] != _MAGIC
            or not hmac.compare_digest(
                data[len(_MAGIC) : len(_MAGIC) + _TAG_BYTES], name_tag
            )
            or not hmac.compare_digest(
                data[len(_MAGIC) + _TAG_BYTES : _HEADER], entry_tag
            )
        ):
            warnings.warn(
                f"Ignoring {path}: it was not written by this prefix cache under "
                "this name, or was cut short (bad signature); the prefix is "
                "trained again.",
                RuntimeWarning,
                stacklevel=3,
            )
            return None
        return data[_HEADER:]

    def _remember(self, path: Path, info: os.stat_result) -> None:
        with self._lock:
            self._own[path.name] = (info.st_ino, info.st_mtime_ns, info.st_size)

    def _is_own(self, path: Path, info: os.stat_result) -> bool:
        """Whether ``path`` carries this cache's signature for its name."""
        signature = (info.st_ino, info.st_mtime_ns, info.st_size)
        with self._lock:
            if self._own.get(path.name) == signature:
                return True
        if not stat.S_ISREG(info.st_mode) or info.st_size < _HEADER:
            return False
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as handle:
                head = handle.read(len(_MAGIC) + _TAG_BYTES)
        except OSError:
            return False
        name_tag, _ = self._tags(path.name, None)
        if head[: len(_MAGIC)] != _MAGIC or not hmac.compare_digest(
            head[len(_MAGIC) :], name_tag
        ):
            return False
        self._remember(path, info)
        return True

    def _own_files(self) -> list[tuple[int, int, Path]]:
        """``(mtime_ns, size, path)`` of the state files this cache wrote."""
        entries = []
        for path in self.directory.glob(f"*{_SUFFIX}"):
            try:
                info = os.lstat(path)
            except OSError:
                continue  # Removed by another worker meanwhile.
            if self._is_own(path, info):
                entries.append((info.st_mtime_ns, info.st_size, path))
        return entries

    def _trim_disk(self) -> None:
        entries = self._own_files()
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= self.max_disk_bytes:
                break
            path.unlink(missing_ok=True)
            total -= size

    # -- sharing semantics ------------------------------------------------------------
    def __copy__(self) -> PrefixCache:
        return self

    def __deepcopy__(self, memo) -> PrefixCache:
        return self

    def __getstate__(self) -> dict:
        return {
            "max_bytes": self.max_bytes,
            "max_disk_bytes": self.max_disk_bytes,
            "directory": self.directory,
            "_secret": self._secret,
        }

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._reset_memory()

    def __repr__(self) -> str:
        where = "" if self.directory is None else f", directory={str(self.directory)!r}"
        return f"PrefixCache(max_bytes={self.max_bytes}{where})"


#: The cache ``cache="memory"`` refers to: bounded, one per process.
PROCESS_CACHE = PrefixCache()


def resolve_cache(cache, owner: str) -> PrefixCache | None:
    """The :class:`PrefixCache` a ``cache`` parameter names, or ``None``."""
    if cache is None:
        return None
    if isinstance(cache, PrefixCache):
        return cache
    if isinstance(cache, str) and cache == "memory":
        return PROCESS_CACHE
    raise ValueError(
        f"The 'cache' parameter of {owner} must be 'memory', a PrefixCache or "
        f"None. Got {cache!r} instead."
    )


# -- training from the longest cached prefix ----------------------------------------
#: Rows per batch of a native learner's prefix-sharing first epoch (``cache``).
PREFIX_BATCH_SIZE = 1024


def batches(n_samples: int, batch_size: int) -> list[slice]:
    """Consecutive slices of ``batch_size`` rows covering ``range(n_samples)``."""
    return [
        slice(start, min(start + batch_size, n_samples))
        for start in range(0, n_samples, batch_size)
    ]


def _update(digest, value) -> None:
    if value is None:
        digest.update(b"\x00")
    elif hasattr(value, "indptr"):  # CSR rows
        for part in (value.data, value.indices, value.indptr - value.indptr[0]):
            _update(digest, part)
    elif isinstance(value, bytes):
        digest.update(value)
    else:
        array = np.asarray(value)
        if array.dtype.hasobject:
            digest.update(pickle.dumps(array, protocol=pickle.HIGHEST_PROTOCOL))
        else:
            digest.update(str((array.dtype.str, array.shape)).encode())
            digest.update(np.ascontiguousarray(array).view(np.uint8))


def prefix_keys(root: bytes, columns: Sequence[Any], row_batches) -> list[bytes]:
    """Order-sensitive digests of ``root`` and of all rows up to each batch.

    Key ``j`` is a sha256 chained over ``root`` and, batch by batch up to ``j``,
    the rows of every sample-aligned array of ``columns`` (``None`` entries are
    hashed as absent). sha256 is hardware-accelerated on current CPUs, about
    twice blake2b's speed here.
    """
    keys, previous = [], hashlib.sha256(root).digest()
    for rows in row_batches:
        digest = hashlib.sha256(previous)
        for column in columns:
            _update(digest, None if column is None else column[rows])
        previous = digest.digest()
        keys.append(previous)
    return keys


def resume_from_prefix(
    cache: PrefixCache,
    keys: Sequence[bytes],
    initial: Callable[[], Any],
    feed: Callable[[Any, int], Any],
) -> tuple[Any, int]:
    """Train through the batches of ``keys`` from the longest prefix in ``cache``.

    Parameters
    ----------
    cache : PrefixCache
        Where states are looked up and stored.
    keys : sequence of bytes
        :func:`prefix_keys` of the batches.
    initial : callable
        Returns the untrained state, used when no prefix is found.
    feed : callable
        ``feed(state, j)`` trains ``state`` on batch ``j`` and returns it.

    Returns
    -------
    state : object
        The state after the last batch.
    first : int
        Index of the first batch that was fed (``len(keys)`` when all were found).
    """
    state, first = None, 0
    for j in range(len(keys) - 1, -1, -1):
        if keys[j] in cache:
            state = cache.get(keys[j])
            if state is not None:
                first = j + 1
                break
    if state is None:
        state = initial()
    for j in range(first, len(keys)):
        state = feed(state, j)
        cache.put(keys[j], state)
    return state, first


class PrefixEpochMixin:
    """The prefix-sharing first epoch of a learner whose model is ``_state``.

    For the native learners of ``sklearn_ext`` (their ``cache`` parameter):
    ``_state`` is stored after every batch of :data:`PREFIX_BATCH_SIZE` rows,
    keyed by the learner's class, its parameters but ``cache``, what else the
    model depends on and the rows fed so far, so a fit whose rows start with
    rows already fed resumes from the longest such prefix.
    """

    def _resolve_cache(self) -> PrefixCache | None:
        """The :class:`PrefixCache` the ``cache`` parameter names, if any."""
        return resolve_cache(getattr(self, "cache", None), type(self).__name__)

    def _first_epoch_from_prefix(
        self,
        cache: PrefixCache,
        *,
        identity: tuple,
        columns: Sequence[Any],
        feed_rows: Callable[[np.ndarray], None],
    ) -> None:
        """One ordered pass over the rows, resumed from the longest cached prefix.

        ``identity`` holds what the model depends on besides the parameters
        (classes, random features, dtype); ``columns`` the sample-aligned arrays
        fed, ``X`` first; ``feed_rows(rows)`` feeds the rows of an index array
        into ``_state``.
        """
        row_batches = batches(columns[0].shape[0], PREFIX_BATCH_SIZE)
        params = {k: v for k, v in self.get_params().items() if k != "cache"}
        root = joblib.hash((type(self).__qualname__, params, *identity)).encode()
        keys = prefix_keys(root, columns, row_batches)

        def feed(state, j):
            self._state = state
            rows = np.arange(row_batches[j].start, row_batches[j].stop, dtype=np.intp)
            feed_rows(rows)
            return self._state

        self._state, _ = resume_from_prefix(cache, keys, lambda: self._state, feed)
