"""Warm-start solutions shared by the worker processes of one Optuna study."""

from __future__ import annotations

import os
import tempfile
import threading
import warnings
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import optuna
from optuna.artifacts import (
    FileSystemArtifactStore,
    download_artifact,
    upload_artifact,
)
from optuna.trial import TrialState

from sklearn_ext.svm._warm_start import StoredSolution, WarmStartStore

if TYPE_CHECKING:
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
    scale, max_solutions, keep_kernel
        As in :class:`~sklearn_ext.svm.WarmStartStore`.

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
        keep_kernel: bool = True,
    ) -> None:
        super().__init__(
            scale=scale, max_solutions=max_solutions, keep_kernel=keep_kernel
        )
        if isinstance(artifact_store, str | os.PathLike):
            artifact_store = FileSystemArtifactStore(_writable_folder(artifact_store))
        self.artifact_store = artifact_store
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
                download_artifact(
                    artifact_store=self.artifact_store,
                    file_path=path,
                    artifact_id=artifact_id,
                )
                solutions = read_solutions(path)
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


def read_solutions(path: str) -> list[tuple[tuple, str, StoredSolution]]:
    """Read and check what :func:`write_solutions` wrote; raise if anything is off."""
    # Opened here, not by np.load: it leaves a file it opened open when the zip is bad.
    with open(path, "rb") as handle:
        try:
            npz = np.load(handle, allow_pickle=False)
        except (zipfile.BadZipFile, EOFError) as exc:
            raise ValueError(f"not a complete .npz file ({exc})") from None
        with npz:
            return _read_npz(npz)


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
