"""Warm starts across Optuna trials: in one process and across worker processes."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import optuna
import pytest
from numpy.testing import assert_allclose
from optuna.artifacts import upload_artifact
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState
from sklearn.datasets import make_classification
from sklearn.linear_model import SGDClassifier
from sklearn.preprocessing import scale
from sklearn.svm import SVC

from optuna_treecv import ArtifactWarmStartStore, StudyIdentityError, TreeCVObjective
from optuna_treecv._warm_start import read_solutions, write_solutions
from sklearn_ext.model_selection import choose_backend
from sklearn_ext.svm import AlphaSeededSVC, WarmStartStore, alpha_seeded_cv

optuna.logging.set_verbosity(optuna.logging.WARNING)
SPACE = {"C": FloatDistribution(0.01, 1000.0, log=True)}


@pytest.fixture
def data():
    X, y = make_classification(
        n_samples=150, n_features=10, n_informative=8, class_sep=2.5, random_state=1
    )
    return scale(X), y


def _study_with(Cs, storage=None, name=None):
    study = optuna.create_study(
        direction="maximize",
        storage=storage,
        study_name=name,
        load_if_exists=True,
        pruner=optuna.pruners.NopPruner(),
    )
    for C in Cs:
        study.enqueue_trial({"C": C})
    return study


def _published(data, folder, Cs):
    """A study whose trials, one per C, published their solutions to an artifact
    store in ``folder``: the study, the store and the objective."""
    X, y = data
    study = _study_with(Cs)
    store = ArtifactWarmStartStore(folder, study)
    objective = TreeCVObjective(
        AlphaSeededSVC(gamma=0.05), SPACE, X, y, cv=3, warm_start_store=store
    )
    study.optimize(objective, n_trials=len(Cs))
    return study, store, objective


@pytest.mark.parametrize("estimator", [AlphaSeededSVC(gamma=0.05), SVC(gamma=0.05)])
def test_trials_share_one_store_with_threads(data, estimator):
    X, y = data
    store = WarmStartStore()
    objective = TreeCVObjective(estimator, SPACE, X, y, cv=4, warm_start_store=store)
    Cs = [0.5, 2.0, 8.0, 32.0, 128.0, 512.0]
    study = _study_with(Cs)
    study.optimize(objective, n_trials=len(Cs), n_jobs=2)
    trials = study.get_trials(states=(TrialState.COMPLETE,))
    assert len(trials) == len(Cs)
    for trial in trials:
        attrs = trial.user_attrs["cv"]
        assert {"warm_start_seed", "warm_start_hits", "warm_start_skips"} <= set(attrs)
        seed = attrs["warm_start_seed"]
        assert seed is None or isinstance(seed, float)
        cold = alpha_seeded_cv(
            AlphaSeededSVC(C=trial.params["C"], gamma=0.05),
            X,
            y,
            cv=objective.fold_plan_,
            seeding="none",
        )
        assert abs(trial.value - cold["test_score"].mean()) <= 0.02
    hits = [t.user_attrs["cv"]["warm_start_hits"] for t in trials]
    # Two trials start cold (two threads); a later trial's fold may still prefer
    # the previous fold's seed, so not every fold of the others counts a hit.
    assert sum(hits) >= 3 * (len(Cs) - 2)
    assert sum(t.user_attrs["cv"]["warm_start_skips"] for t in trials) > 0
    # A lookup may find a solution that loses to the previous fold's seed: the
    # trials count the seeds they used, the store every solution it served.
    assert store.n_hits >= sum(hits)


def test_objective_bad_warm_start_store(data):
    X, y = data
    with pytest.raises(ValueError, match="'warm_start_store' parameter.*'memory'"):
        TreeCVObjective(AlphaSeededSVC(), SPACE, X, y, warm_start_store="memory")
    with pytest.raises(ValueError, match="SGDClassifier has no 'warm_start_store'"):
        TreeCVObjective(
            SGDClassifier(),
            {"alpha": SPACE["C"]},
            X,
            y,
            warm_start_store=WarmStartStore(),
        )
    # SVC(probability=True) runs on the alpha-seeding backend since issue 20;
    # break_ties=True still does not.
    with pytest.raises(ValueError, match="SVC has no 'warm_start_store'"):
        TreeCVObjective(
            SVC(break_ties=True), SPACE, X, y, warm_start_store=WarmStartStore()
        )


def test_artifact_store_shares_solutions_between_stores(data, tmp_path):
    X, y = data
    study, _, objective = _published(data, tmp_path / "artifacts", [1.0, 4.0])
    ids = [t.user_attrs["warm_start_artifact"] for t in study.trials]
    assert len(set(ids)) == 2
    # A fresh worker starts from the published solutions.
    second = ArtifactWarmStartStore(tmp_path / "artifacts", study)
    objective.warm_start_store = second
    study.enqueue_trial({"C": 16.0})
    study.optimize(objective, n_trials=1)
    assert second.n_loaded == 2 and second.n_rejected == 0
    last = study.trials[-1].user_attrs["cv"]
    assert last["warm_start_hits"] > 0 and last["warm_start_seed"] == 4.0
    cold = alpha_seeded_cv(
        AlphaSeededSVC(C=16.0, gamma=0.05), X, y, cv=objective.fold_plan_
    )
    assert abs(study.trials[-1].value - cold["test_score"].mean()) <= 0.02


def test_npz_round_trip_is_untrusted(tmp_path):
    from sklearn_ext.svm._warm_start import StoredSolution

    solution = StoredSolution(
        C=2.0,
        alpha=np.array([0.0, 1.0, 2.0]),
        G=np.array([-1.0, 0.5, -0.5]),
        rho=0.25,
        objective=-1.5,
        at_bound=True,
    )
    path = str(tmp_path / "s.npz")
    write_solutions(path, [(("k", "r", 0, 1), "d", solution)])
    [(slot, data, back)] = read_solutions(path)
    assert slot == ("k", "r", 0, 1) and data == "d"
    assert_allclose(back.alpha, solution.alpha)
    assert back.C == 2.0 and back.at_bound and not back.trusted


def test_corrupt_partial_and_foreign_artifacts_are_ignored(data, tmp_path):
    study, store, _ = _published(data, tmp_path / "artifacts", [1.0])
    good = study.trials[0].user_attrs["warm_start_artifact"]
    # Build bad files next to a good one.
    good_path = tmp_path / "good.npz"
    from optuna.artifacts import download_artifact

    download_artifact(
        artifact_store=store.artifact_store, file_path=str(good_path), artifact_id=good
    )
    partial = tmp_path / "partial.npz"
    partial.write_bytes(good_path.read_bytes()[: good_path.stat().st_size // 2])
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, alpha=np.ones(3))
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not a zip file at all")
    pickled = tmp_path / "pickled.npz"
    np.savez(
        pickled,
        format=np.array("optuna-treecv-warm-start-v1"),
        count=1,
        slot_0=np.array([{"evil": 1}], dtype=object),
    )
    for bad in (partial, foreign, garbage, pickled):
        trial = study.ask()
        artifact_id = upload_artifact(
            artifact_store=store.artifact_store,
            file_path=str(bad),
            study_or_trial=trial,
        )
        trial.set_user_attr("warm_start_artifact", artifact_id)
        study.tell(trial, 0.5)
    # A failed trial's artifact is never read, even a good one.
    trial = study.ask()
    trial.set_user_attr("warm_start_artifact", good + "-failed")
    study.tell(trial, state=TrialState.FAIL)
    reader = ArtifactWarmStartStore(tmp_path / "artifacts", study)
    with pytest.warns(UserWarning, match="Ignoring the warm-start artifact") as record:
        reader.sync()
    assert sum("Ignoring the warm-start" in str(w.message) for w in record) == 4
    assert reader.n_rejected == 4 and reader.n_loaded == 1


def test_unwritable_artifact_folder(tmp_path):
    study = optuna.create_study()
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    with pytest.raises(ValueError, match="must be a writable folder"):
        ArtifactWarmStartStore(blocker / "artifacts", study)


def test_changed_data_starts_cold(data, tmp_path):
    X, y = data
    study, store, objective = _published(data, tmp_path / "artifacts", [1.0])
    changed = X.copy()
    changed[:, 0] *= 2.0
    other = TreeCVObjective(
        AlphaSeededSVC(gamma=0.05),
        SPACE,
        changed,
        y,
        cv=objective.fold_plan_,
        warm_start_store=store,
    )
    # The study itself refuses other data (its trials would not compare) ...
    with pytest.raises(StudyIdentityError, match="the data"):
        other.check_study(study)
    # ... and the store, shared with a new study, starts its folds cold.
    fresh = _study_with([2.0])
    with pytest.warns(UserWarning, match="fingerprint mismatch"):
        fresh.optimize(other, n_trials=1)
    attrs = fresh.trials[-1].user_attrs["cv"]
    assert attrs["warm_start_hits"] == 0 and attrs["warm_start_seed"] is None


WORKER = textwrap.dedent(
    """
    import sys
    import optuna
    from optuna.distributions import FloatDistribution
    from sklearn.datasets import make_classification
    from sklearn.preprocessing import scale
    from optuna_treecv import ArtifactWarmStartStore, TreeCVObjective
    from sklearn_ext.svm import AlphaSeededSVC

    storage, folder, n_trials = sys.argv[1], sys.argv[2], int(sys.argv[3])
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    X, y = make_classification(
        n_samples=150, n_features=8, n_informative=6, class_sep=2.0, random_state=0
    )
    study = optuna.load_study(study_name="svm", storage=storage)
    store = ArtifactWarmStartStore(folder, study)
    objective = TreeCVObjective(
        AlphaSeededSVC(gamma=0.05),
        {"C": FloatDistribution(0.1, 100.0, log=True)},
        scale(X), y, cv=3, random_state=0, warm_start_store=store,
    )
    study.optimize(objective, n_trials=n_trials)
    """
)


def test_two_worker_processes_share_warm_starts(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    folder = str(tmp_path / "artifacts")
    study = optuna.create_study(
        study_name="svm",
        storage=storage,
        direction="maximize",
        sampler=optuna.samplers.RandomSampler(seed=0),
        pruner=optuna.pruners.NopPruner(),
    )
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}

    def worker(n_trials):
        return subprocess.Popen(
            [sys.executable, str(script), storage, folder, str(n_trials)], env=env
        )

    assert worker(1).wait(timeout=120) == 0
    # Two workers at once, each starting with an empty in-memory store.
    pair = [worker(2), worker(2)]
    assert [p.wait(timeout=120) for p in pair] == [0, 0]
    trials = study.get_trials(states=(TrialState.COMPLETE,))
    assert len(trials) == 5
    assert all("warm_start_artifact" in t.user_attrs for t in trials)
    # Every trial after the first had a seed (at least from the first worker).
    later = sorted(trials, key=lambda t: t.number)[1:]
    assert all(t.user_attrs["cv"]["warm_start_hits"] > 0 for t in later)
    assert all(isinstance(t.user_attrs["cv"]["warm_start_seed"], float) for t in later)


def test_forged_solutions_only_seed(data, tmp_path):
    from optuna.artifacts import download_artifact

    from optuna_treecv._warm_start import ARTIFACT_ATTR
    from sklearn_ext.svm._warm_start import StoredSolution

    X, y = data
    study, store, objective = _published(data, tmp_path / "artifacts", [2.0])
    good = tmp_path / "good.npz"
    download_artifact(
        artifact_store=store.artifact_store,
        file_path=str(good),
        artifact_id=study.trials[0].user_attrs[ARTIFACT_ATTR],
    )
    forged = []
    for k, (slot, data_hash, solution) in enumerate(read_solutions(str(good))):
        # Wrong alphas and gradient claiming no bound (a skip), or a wrong length.
        alpha = solution.alpha * 5 + 0.3 if k % 2 == 0 else solution.alpha[:-1]
        lie = StoredSolution(
            C=solution.C,
            alpha=alpha,
            G=np.zeros_like(alpha),
            rho=0.0,
            objective=0.0,
            at_bound=False,
        )
        forged.append((slot, data_hash, lie))
    write_solutions(str(tmp_path / "forged.npz"), forged)
    other = _study_with([])
    trial = other.ask()
    artifact_id = upload_artifact(
        artifact_store=store.artifact_store,
        file_path=str(tmp_path / "forged.npz"),
        study_or_trial=trial,
    )
    trial.set_user_attr(ARTIFACT_ATTR, artifact_id)
    other.tell(trial, 0.5)
    reader = ArtifactWarmStartStore(tmp_path / "artifacts", other)
    assert reader.sync() == 1
    session = reader.session()
    model = AlphaSeededSVC(C=4.0, gamma=0.05, warm_start_store=session)
    warm = alpha_seeded_cv(model, X, y, cv=objective.fold_plan_)
    cold = alpha_seeded_cv(
        AlphaSeededSVC(C=4.0, gamma=0.05), X, y, cv=objective.fold_plan_
    )
    assert session.n_skips == 0 and session.n_hits > 0
    for a, b in zip(warm["objective"], cold["objective"], strict=True):
        assert_allclose(a, b, rtol=1e-3)


def test_standard_backend_fits_share_the_store(data):
    X, y = data
    store = WarmStartStore()
    objective = TreeCVObjective(
        AlphaSeededSVC(gamma=0.05),
        SPACE,
        X,
        y,
        cv=4,
        backend="standard",
        warm_start_store=store,
    )
    study = _study_with([1.0, 4.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # each fold is its own problem: no mismatch
        study.optimize(objective, n_trials=2)
    first, second = study.trials
    assert first.user_attrs["cv"]["backend"] == "standard"
    # The standard backend hands the store to each fold's fit; the second trial's
    # four folds start from the first trial's solutions.
    assert store.n_hits == 4


def test_trials_warm_start_by_default(data):
    X, y = data
    Cs = [0.5, 2.0, 8.0, 32.0]
    objective = TreeCVObjective(AlphaSeededSVC(gamma=0.05), SPACE, X, y, cv=4)
    study = _study_with(Cs)
    study.optimize(objective, n_trials=len(Cs))
    attrs = [t.user_attrs["cv"] for t in study.trials]
    # The objective's own store: every trial after the first starts from one.
    assert attrs[0]["warm_start_hits"] == 0
    assert all(a["warm_start_hits"] >= 1 for a in attrs[1:])
    assert sum(a["warm_start_skips"] for a in attrs) > 0
    off = TreeCVObjective(
        AlphaSeededSVC(gamma=0.05), SPACE, X, y, cv=4, warm_start_store=False
    )
    cold = _study_with(Cs)
    cold.optimize(off, n_trials=len(Cs))
    assert all("warm_start_hits" not in t.user_attrs["cv"] for t in cold.trials)
    assert_allclose(
        [t.value for t in study.trials], [t.value for t in cold.trials], atol=1e-12
    )
    # A learner whose backend keeps no store runs as before.
    sgd = SGDClassifier(random_state=0)
    plain = TreeCVObjective(sgd, {"alpha": SPACE["C"]}, X, y, backend="standard")
    optuna.create_study(direction="maximize").optimize(plain, n_trials=1)
    assert plain.core_._stores == {type(choose_backend(sgd, "standard")): None}


@pytest.mark.parametrize(
    "content",
    [b"not a zip file at all", b"PK\x03\x04 cut short"],
    ids=["garbage", "cut"],
)
def test_a_file_that_is_not_an_npz_is_closed(tmp_path, content):
    """np.load leaves a path it opened open when the zip is bad: the reader opens
    the file itself, so a rejected artifact leaves no file handle behind."""
    bad = tmp_path / "bad.npz"
    bad.write_bytes(content)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        with pytest.raises(ValueError):
            read_solutions(str(bad))
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


# -- reads that never block, follow a link or inflate past the bound ----------------
def _study_naming(artifact_ids):
    """A study whose COMPLETE trials name ``artifact_ids`` as their warm starts."""
    study = optuna.create_study(direction="maximize")
    for artifact_id in artifact_ids:
        trial = study.ask()
        trial.set_user_attr("warm_start_artifact", artifact_id)
        study.tell(trial, 0.5)
    return study


HAZARDS = textwrap.dedent(
    """
    import os, sys, warnings
    import optuna
    from optuna_treecv import ArtifactWarmStartStore

    folder = sys.argv[1]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    store = ArtifactWarmStartStore(folder, optuna.create_study())
    os.mkfifo(os.path.join(folder, "fifo"))
    os.symlink("/dev/zero", os.path.join(folder, "zero"))
    study = optuna.create_study()
    for artifact_id in ("fifo", "zero", "../outside", "/dev/zero"):
        trial = study.ask()
        trial.set_user_attr("warm_start_artifact", artifact_id)
        study.tell(trial, 0.5)
    store.study = study
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store.sync()
    for w in caught:
        print(w.message)
    print("rejected", store.n_rejected)
    """
)


def test_artifact_reads_never_block_nor_follow_links(tmp_path):
    """A FIFO would block every worker and a link to /dev/zero would copy until
    the disk is full: a child process runs the reads, with a cap on the size of
    the files it may write and a timeout, so that a regression fails here."""
    import resource

    folder = tmp_path / "artifacts"
    folder.mkdir()

    def cap_file_size():
        resource.setrlimit(resource.RLIMIT_FSIZE, (2**26, 2**26))

    try:
        proc = subprocess.run(
            [sys.executable, "-c", HAZARDS, str(folder)],
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=cap_file_size,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("reading a FIFO artifact blocked")
    finally:
        fifo = folder / "fifo"
        if fifo.exists():  # Unblock a reader stuck on it, if any.
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == "rejected 4"
    fifo_note = "'fifo' of trial 0: ValueError: the artifact is not a regular file"
    assert f"{fifo_note} (it is a FIFO)" in lines[0]
    assert "'zero' of trial 1: ValueError: the artifact is a symbolic link" in lines[1]
    assert "not a file name" in lines[2] and "not a file name" in lines[3]


def _zip_of_one_deflated_member(name: str, head: bytes, n_zeros: int) -> bytes:
    """A zip whose member is ``head`` then ``n_zeros`` zero bytes, deflated.

    Deflated zeros after a full flush repeat block for block, so a 2 GiB member
    takes a second to build: the archive is a real zip bomb, about 2 MB.
    """
    import struct
    import zlib

    chunk = bytes(2**24)
    assert n_zeros % len(chunk) == 0
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = compressor.compress(head) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(chunk) + compressor.flush(zlib.Z_FULL_FLUSH)
    body = first + block * (n_zeros // len(chunk)) + compressor.flush()
    crc = zlib.crc32(head)
    for _ in range(n_zeros // len(chunk)):
        crc = zlib.crc32(chunk, crc)
    size = len(head) + n_zeros
    encoded = name.encode()
    local = struct.pack(
        "<4sHHHHHLLLHH", b"PK\x03\x04", 20, 0, 8, 0, 0x21, crc, len(body), size,
        len(encoded), 0,
    ) + encoded  # fmt: skip
    central = struct.pack(
        "<4sHHHHHHLLLHHHHHLL", b"PK\x01\x02", 20, 20, 0, 8, 0, 0x21, crc,
        len(body), size, len(encoded), 0, 0, 0, 0, 0, 0,
    ) + encoded  # fmt: skip
    end = struct.pack(
        "<4sHHHHLLH", b"PK\x05\x06", 0, 0, 1, 1, len(central),
        len(local) + len(body), 0,
    )  # fmt: skip
    return local + body + central + end


def _npy_head(shape) -> bytes:
    import io

    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buffer, {"descr": "<f8", "fortran_order": False, "shape": shape}
    )
    return buffer.getvalue()


def test_zip_bomb_artifact_is_refused_before_decompression(tmp_path):
    import time
    import zipfile

    bomb = tmp_path / "bomb.npz"
    bomb.write_bytes(
        _zip_of_one_deflated_member("alpha_0.npy", _npy_head((2**28,)), 2**31)
    )
    assert bomb.stat().st_size < 3 * 2**20
    with zipfile.ZipFile(bomb) as archive:  # A well-formed 2 GiB member.
        assert archive.infolist()[0].file_size == 2**31 + len(_npy_head((2**28,)))
    tic = time.perf_counter()
    with pytest.raises(ValueError, match="declare 2147483.* bytes once decompressed"):
        read_solutions(str(bomb))
    assert time.perf_counter() - tic < 1.0  # Never inflated.
    # Through the store, with the default bound (512 MiB), as a shared artifact.
    study = _study_naming([])
    store = ArtifactWarmStartStore(tmp_path / "artifacts", study)
    trial = study.ask()
    artifact_id = upload_artifact(
        artifact_store=store.artifact_store, file_path=str(bomb), study_or_trial=trial
    )
    trial.set_user_attr("warm_start_artifact", artifact_id)
    study.tell(trial, 0.5)
    with pytest.warns(UserWarning, match="not decompressed"):
        assert store.sync() == 0
    assert store.n_rejected == 1


def test_array_header_larger_than_its_member_is_refused(tmp_path):
    import zipfile

    # An honest 1 kB member whose header asks NumPy to allocate 8 TiB.
    lying = tmp_path / "lying.npz"
    with zipfile.ZipFile(lying, "w") as archive:
        archive.writestr("alpha_0.npy", _npy_head((2**40,)) + bytes(1000))
    with pytest.raises(ValueError, match="declares an array of 8796093022208 bytes"):
        read_solutions(str(lying))


def test_artifact_over_max_bytes_is_not_copied(data, tmp_path):
    study, store, _ = _published(data, tmp_path / "artifacts", [1.0])
    [artifact_id] = [t.user_attrs["warm_start_artifact"] for t in study.trials]
    size = (tmp_path / "artifacts" / artifact_id).stat().st_size
    small = ArtifactWarmStartStore(tmp_path / "artifacts", study, max_bytes=size - 1)
    with pytest.warns(UserWarning, match=f"larger than max_bytes={size - 1} bytes"):
        assert small.sync() == 0
    big = ArtifactWarmStartStore(tmp_path / "artifacts", study, max_bytes=size)
    assert big.sync() == 1
    # A FileSystemArtifactStore given as an object is read through the same guard.
    os.symlink("/dev/null", tmp_path / "artifacts" / "link")
    given = ArtifactWarmStartStore(
        optuna.artifacts.FileSystemArtifactStore(str(tmp_path / "artifacts")),
        _study_naming(["link", artifact_id]),
    )
    with pytest.warns(UserWarning, match="symbolic link, which is never followed"):
        assert given.sync() == 1
