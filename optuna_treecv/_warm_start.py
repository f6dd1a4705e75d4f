"""Warm-start solutions shared by the worker processes of one Optuna study."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import threading
import warnings
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import optuna
from optuna.artifacts import FileSystemArtifactStore, upload_artifact
from optuna.artifacts.exceptions import ArtifactNotFound
from optuna.trial import TrialState

from sklearn_ext.svm._warm_start import (
    DEFAULT_MAX_BYTES,
    StoredSolution,
    WarmStartStore,
)

if TYPE_CHECKING:
    from typing import BinaryIO

    from optuna.trial import BaseTrial

    from sklearn_ext.svm import WarmStartSession

__all__ = ["ArtifactWarmStartStore", "ARTIFACT_ATTR"]

#: Trial user attribute naming the artifact that holds the trial's solutions.
ARTIFACT_ATTR = "warm_start_artifact"
_FORMAT = "optuna-treecv-warm-start-v1"


class ArtifactWarmStartStore(WarmStartStore):
    """A :class:`~sklearn_ext.svm.WarmStartStore` shared through Optuna artifacts.

    Worker processes (or machines) running one study on a shared storage (RDB,
    Journal) each hold one of these on the same artifact store. When a trial of
    :class:`~optuna_treecv.TreeCVObjective` finishes, the solutions it found
    are written to a ``.npz`` file, uploaded with
    :func:`optuna.artifacts.upload_artifact`, and only then is the artifact id
    published in the trial's ``warm_start_artifact`` user attribute. Each new
    trial first loads the solutions of the study's COMPLETE trials it has not
    seen yet; files are read with ``allow_pickle=False``, and a file that is
    partial, corrupt or not one of ours is ignored with a warning. Solutions
    computed on other data never seed (the store keys them by a hash of the
    data), so a changed data set means cold starts, never a wrong answer.

    Reading a shared file is bounded: in a folder store an artifact is opened
    without following a symbolic link and without blocking (a FIFO or device
    is refused, not read), no artifact is copied past ``max_bytes``, and the
    sizes its archive declares (compressed, decompressed, and each array's
    shape) are checked against ``max_bytes`` before anything is decompressed
    or allocated.

    Parameters
    ----------
    artifact_store : str, path or optuna artifact store
        A folder for a :class:`~optuna.artifacts.FileSystemArtifactStore`
        (created if missing; a folder that cannot be created or written raises
        at once), or any artifact store object, such as
        :class:`~optuna.artifacts.Boto3ArtifactStore` (not tested here: it
        needs boto3 and an S3 bucket).
    study : optuna.Study
        The study whose trials publish and read the solutions.
    scale, max_solutions, max_bytes, keep_kernel
        As in :class:`~sklearn_ext.svm.WarmStartStore`. ``max_bytes`` also
        bounds the size of one artifact, on disk and decompressed: a larger
        one is ignored with a warning.

    Attributes
    ----------
    n_loaded : int
        Artifacts of other trials loaded so far.
    n_rejected : int
        Artifacts ignored as unreadable or foreign.

    Examples
    --------
    >>> import tempfile
    >>> import optuna
    >>> from optuna.distributions import FloatDistribution
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import scale
    >>> from sklearn_ext.svm import AlphaSeededSVC
    >>> from optuna_treecv import ArtifactWarmStartStore, TreeCVObjective
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> optuna.logging.set_verbosity(optuna.logging.WARNING)
    >>> study = optuna.create_study(direction="maximize")
    >>> store = ArtifactWarmStartStore(tempfile.mkdtemp(), study)
    >>> objective = TreeCVObjective(
    ...     AlphaSeededSVC(), {"C": FloatDistribution(0.1, 100, log=True)},
    ...     scale(X), y, cv=5, warm_start_store=store,
    ... )
    >>> study.optimize(objective, n_trials=3)
    >>> "warm_start_artifact" in study.trials[0].user_attrs
    True
    """

    def __init__(
        self,
        artifact_store,
        study: optuna.Study,
        *,
        scale: bool = False,
        max_solutions: int = 100_000,
        max_bytes: int = DEFAULT_MAX_BYTES,
        keep_kernel: bool = True,
    ) -> None:
        super().__init__(
            scale=scale,
            max_solutions=max_solutions,
            max_bytes=max_bytes,
            keep_kernel=keep_kernel,
        )
        if isinstance(artifact_store, str | os.PathLike):
            artifact_store = _FolderArtifactStore(_writable_folder(artifact_store))
        self.artifact_store = artifact_store
        self._reader = artifact_store
        # optuna's FileSystemArtifactStore.open_reader follows links and blocks on
        # a FIFO; its folder is read through the guarded reader instead.
        folder = getattr(artifact_store, "_base_path", None)
        if type(artifact_store) is FileSystemArtifactStore and folder is not None:
            self._reader = _FolderArtifactStore(folder)
        self.study = study
        self.n_loaded = 0
        self.n_rejected = 0
        self._seen: set[str] = set()
        self._sync_lock = threading.Lock()

    def __getstate__(self):
        state = super().__getstate__()
        del state["_sync_lock"]
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self._sync_lock = threading.Lock()

    def session(self) -> WarmStartSession:
        """Load the solutions of newly finished trials, then open a session."""
        self.sync()
        return super().session()

    def sync(self) -> int:
        """Load the artifacts of COMPLETE trials not loaded yet; how many."""
        with self._sync_lock:
            trials = self.study.get_trials(
                deepcopy=False, states=(TrialState.COMPLETE,)
            )
            loaded = 0
            for trial in trials:
                artifact_id = trial.user_attrs.get(ARTIFACT_ATTR)
                if not isinstance(artifact_id, str) or artifact_id in self._seen:
                    continue
                self._seen.add(artifact_id)
                if self._load(artifact_id, trial.number):
                    loaded += 1
            self.n_loaded += loaded
            return loaded

    def _load(self, artifact_id: str, number: int) -> bool:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "solutions.npz")
            try:
                _download(self._reader, artifact_id, path, self.max_bytes)
                solutions = read_solutions(path, max_bytes=self.max_bytes)
            except Exception as exc:  # noqa: BLE001 - never trust a shared file
                self.n_rejected += 1
                warnings.warn(
                    f"Ignoring the warm-start artifact {artifact_id!r} of trial "
                    f"{number}: {type(exc).__name__}: {exc}",
                    UserWarning,
                    stacklevel=4,
                )
                return False
        for slot, data, solution in solutions:
            self.put(slot, data, solution)
        return True

    def publish(self, trial: BaseTrial, session: WarmStartSession | None) -> None:
        """Upload the session's new solutions, then name the artifact on ``trial``."""
        if session is None or not session.new_solutions:
            return
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, f"warm_start_trial_{trial.number}.npz")
            write_solutions(path, session.new_solutions)
            try:
                artifact_id = upload_artifact(
                    artifact_store=self.artifact_store,
                    file_path=path,
                    study_or_trial=trial,
                    mimetype="application/octet-stream",
                )
            except OSError as exc:
                raise OSError(
                    "Cannot write the warm-start solutions of trial "
                    f"{trial.number} to the artifact store "
                    f"{self.artifact_store!r}: {exc}"
                ) from exc
        # Published only now that the upload has finished.
        trial.set_user_attr(ARTIFACT_ATTR, artifact_id)
        self._seen.add(artifact_id)


class _FolderArtifactStore(FileSystemArtifactStore):
    """A folder artifact store whose reads never follow a link nor block.

    An artifact id names one regular file directly in the folder: a path, a
    symbolic link (e.g. to ``/dev/zero``), a FIFO (which would block every
    worker) or a device is refused with a ``ValueError`` before a byte is read.
    """

    def __init__(self, base_path: str | os.PathLike) -> None:
        super().__init__(Path(base_path))
        self.folder = Path(base_path)

    def open_reader(self, artifact_id: str) -> BinaryIO:
        if (
            not isinstance(artifact_id, str)
            or artifact_id in ("", ".", "..")
            or "\0" in artifact_id
            or os.sep in artifact_id
            or (os.altsep is not None and os.altsep in artifact_id)
        ):
            raise ValueError(f"invalid artifact id {artifact_id!r}: not a file name")
        flags = (
            os.O_RDONLY
            | getattr(os, "O_NOFOLLOW", 0)
            | getattr(os, "O_NONBLOCK", 0)
            | getattr(os, "O_NOCTTY", 0)
            | getattr(os, "O_BINARY", 0)
        )
        path = self.folder / artifact_id
        try:
            fd = os.open(path, flags)
        except FileNotFoundError as exc:
            raise ArtifactNotFound("not found") from exc
        except OSError:
            if os.path.islink(path):
                raise ValueError(
                    "the artifact is a symbolic link, which is never followed"
                ) from None
            raise
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise ValueError(
                    "the artifact is not a regular file (it is a "
                    f"{_file_kind(mode)}), which is never read"
                )
            if hasattr(os, "set_blocking"):
                os.set_blocking(fd, True)
            return os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise


def _file_kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISDIR, "directory"),
        (stat.S_ISLNK, "symbolic link"),
    ):
        if test(mode):
            return name
    return "special file"


def _download(artifact_store, artifact_id: str, path: str, max_bytes: int) -> None:
    """Copy an artifact to ``path``, refusing it past ``max_bytes``."""
    with artifact_store.open_reader(artifact_id) as reader, open(path, "xb") as out:
        # At most max_bytes + 1 bytes, however long the stream is.
        shutil.copyfileobj(_Bounded(reader, max_bytes + 1), out)
        if out.tell() > max_bytes:
            raise ValueError(
                f"the artifact is larger than max_bytes={max_bytes} bytes; not read"
            )


class _Bounded:
    """A reader that ends after ``limit`` bytes of the stream it wraps."""

    def __init__(self, stream, limit: int) -> None:
        self.stream = stream
        self.left = limit

    def read(self, size: int = -1) -> bytes:
        if self.left <= 0:
            return b""
        size = self.left if size is None or size < 0 else min(size, self.left)
        data = self.stream.read(size)
        self.left -= len(data)
        return data


def _writable_folder(path) -> str:
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=folder, prefix=".probe-", delete=True)
        probe.close()
    except OSError as exc:
        raise ValueError(
            "The 'artifact_store' parameter of ArtifactWarmStartStore must be a "
            f"writable folder. Got {str(path)!r}, which cannot be written: {exc}"
        ) from None
    return str(folder)


def write_solutions(path: str, solutions) -> None:
    """Write ``(slot, data, StoredSolution)`` triples to ``path`` as ``.npz``."""
    arrays: dict[str, Any] = {
        "format": np.array(_FORMAT),
        "count": np.array(len(solutions)),
    }
    for i, (slot, data, solution) in enumerate(solutions):
        arrays[f"slot_{i}"] = np.array([str(part) for part in slot])
        arrays[f"data_{i}"] = np.array(data)
        arrays[f"scalars_{i}"] = np.array(
            [solution.C, solution.rho, solution.objective, float(solution.at_bound)]
        )
        arrays[f"alpha_{i}"] = solution.alpha
        arrays[f"G_{i}"] = solution.G
        if solution.rows is not None:  # a CV fold's rows seed a later refit
            arrays[f"rows_{i}"] = np.asarray(solution.rows, dtype=np.int64)
    with open(path, "wb") as handle:
        np.savez(handle, **arrays)


def read_solutions(
    path: str, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> list[tuple[tuple, str, StoredSolution]]:
    """Read and check what :func:`write_solutions` wrote; raise if anything is off.

    The file, and every size its archive declares, must be at most
    ``max_bytes``; this is checked before anything is decompressed, so a zip
    bomb is refused at the cost of reading its directory.
    """
    # Opened here, not by np.load: it leaves a file it opened open when the zip is bad.
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > max_bytes:
            raise ValueError(f"the file holds {size} bytes, over max_bytes={max_bytes}")
        try:
            _check_archive(handle, max_bytes)
            handle.seek(0)
            npz = np.load(handle, allow_pickle=False)
        except (zipfile.BadZipFile, EOFError) as exc:
            raise ValueError(f"not a complete .npz file ({exc})") from None
        with npz:
            return _read_npz(npz)


#: The .npy header versions np.savez writes for our arrays.
_HEADER_READERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


def _check_archive(handle, max_bytes: int) -> None:
    """Refuse an archive whose declared sizes exceed ``max_bytes``, unread.

    A zip member is never decompressed past the size it declares, and NumPy
    allocates an array from its header's shape before reading it: both are
    checked here against the bound, from the archive's directory and the
    first bytes of each member.
    """
    with zipfile.ZipFile(handle) as archive:
        infos = archive.infolist()
        total = 0
        for info in infos:
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise ValueError(
                    f"member {info.filename!r} uses compression method "
                    f"{info.compress_type}, which is never read"
                )
            total += info.file_size
            if total > max_bytes:
                raise ValueError(
                    f"its members declare {total} or more bytes once decompressed, "
                    f"over max_bytes={max_bytes}; not decompressed"
                )
        for info in infos:
            if not info.filename.endswith(".npy"):
                continue
            with archive.open(info) as member:
                try:
                    version = np.lib.format.read_magic(member)
                    read_header = _HEADER_READERS.get(version)
                    if read_header is None:
                        raise ValueError(f"version {version} is not written here")
                    shape, _, dtype = read_header(member)
                except ValueError as exc:
                    raise ValueError(
                        f"member {info.filename!r} has a bad header ({exc})"
                    ) from None
            n_bytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
            if n_bytes > info.file_size:
                raise ValueError(
                    f"member {info.filename!r} declares an array of {n_bytes} "
                    f"bytes in {info.file_size} bytes; not allocated"
                )


def _read_npz(npz) -> list[tuple[tuple, str, StoredSolution]]:
    """The checked solutions of an open warm-start file."""
    if "format" not in npz.files or str(npz["format"]) != _FORMAT:
        raise ValueError("not an optuna-treecv warm-start file")
    count = int(npz["count"])
    out = []
    for i in range(count):
        slot_parts = npz[f"slot_{i}"]
        if slot_parts.shape != (4,) or slot_parts.dtype.kind != "U":
            raise ValueError(f"solution {i} has a malformed key")
        slot = (
            str(slot_parts[0]),
            str(slot_parts[1]),
            int(slot_parts[2]),
            int(slot_parts[3]),
        )
        scalars = np.asarray(npz[f"scalars_{i}"], dtype=np.float64)
        alpha = np.asarray(npz[f"alpha_{i}"], dtype=np.float64)
        G = np.asarray(npz[f"G_{i}"], dtype=np.float64)
        if (
            scalars.shape != (4,)
            or alpha.ndim != 1
            or G.shape != alpha.shape
            or not np.all(np.isfinite(scalars))
            or not np.all(np.isfinite(alpha))
            or not np.all(np.isfinite(G))
            or np.any(alpha < 0)
            or not scalars[0] > 0
            or np.any(alpha > scalars[0] * 1e6)
        ):
            raise ValueError(f"solution {i} is malformed")
        rows = None
        if f"rows_{i}" in npz.files:
            rows = np.asarray(npz[f"rows_{i}"])
            if (
                rows.shape != alpha.shape
                or rows.dtype.kind not in "iu"
                or np.any(rows < 0)
                or np.any(np.diff(rows) <= 0)
            ):
                raise ValueError(f"solution {i} has malformed rows")
            rows = rows.astype(np.intp)
        for array in (alpha, G) if rows is None else (alpha, G, rows):
            array.setflags(write=False)
        solution = StoredSolution(
            C=float(scalars[0]),
            alpha=alpha,
            G=G,
            rho=float(scalars[1]),
            objective=float(scalars[2]),
            at_bound=bool(scalars[3]),
            trusted=False,
            rows=rows,
        )
        out.append((slot, str(npz[f"data_{i}"]), solution))
    return out
