"""Fast by default: the kernel store's memory budget needs no tuning."""

import os
import subprocess
import sys

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.datasets import make_classification
from sklearn.svm import SVC

from sklearn_ext import AlphaSeededSVC
from sklearn_ext.svm import _kernel_store
from sklearn_ext.svm._classes import as_alpha_seeded
from sklearn_ext.svm._kernel_store import kernel_budget, resolve_kernel_dtype
from sklearn_ext.svm._solver import SVMParams
from sklearn_ext.utils import _memory

N = 400


@pytest.fixture
def data():
    return make_classification(n_samples=N, n_features=6, random_state=0)


def test_auto_budget_is_half_the_memory(monkeypatch):
    monkeypatch.setattr(_kernel_store, "_memory_bytes", lambda: 8.0 * 2**30)
    assert kernel_budget("auto") == 4.0 * 2**30
    assert kernel_budget(200) == 200 * 2**20


@pytest.mark.parametrize(
    "memory, dtype, dense",
    [
        (2 * 8.2 * N * N, np.float64, True),  # float64 fits half the memory
        (2 * 4.2 * N * N, np.float32, True),  # only float32 fits
        (2 * 2.0 * N * N, np.float64, False),  # neither: bounded columns
    ],
)
def test_auto_picks_the_fastest_store_that_fits(
    monkeypatch, data, memory, dtype, dense
):
    X, y = data
    monkeypatch.setattr(_kernel_store, "_memory_bytes", lambda: memory)
    assert resolve_kernel_dtype("auto", "auto", N) == np.dtype(dtype)
    model = AlphaSeededSVC(gamma=0.1)
    store = SVMParams.of(model).kernel_store(X, 0.1)
    assert store.is_dense is dense
    assert store.nbytes <= kernel_budget("auto") + 8 * 64 * N  # + float64 slots
    fitted = model.fit(X, y)
    reference = AlphaSeededSVC(gamma=0.1, cache_size=100, kernel_dtype="float64")
    assert_allclose(
        fitted.decision_function(X), reference.fit(X, y).decision_function(X), atol=1e-2
    )


def test_the_defaults_are_auto_and_svc_default_cache_becomes_auto():
    assert AlphaSeededSVC().cache_size == "auto"
    assert AlphaSeededSVC().kernel_dtype == "auto"
    assert as_alpha_seeded(SVC()).cache_size == "auto"
    assert as_alpha_seeded(SVC(cache_size=500)).cache_size == 500


def test_bad_budget_settings_are_refused(data):
    X, y = data
    with pytest.raises(
        ValueError, match="The 'cache_size' parameter of AlphaSeededSVC"
    ):
        AlphaSeededSVC(cache_size="big").fit(X, y)
    with pytest.raises(ValueError, match="The 'kernel_dtype' parameter"):
        AlphaSeededSVC(kernel_dtype="float16").fit(X, y)


# -- the process's real limits (issue 35: memory that is not bounded) ------------
_UNDER_A_LIMIT = """
import resource
import numpy as np
from sklearn_ext.svm import AlphaSeededSVC
from sklearn_ext.svm._kernel_store import kernel_budget
from sklearn_ext.utils._memory import memory_headroom

rng = np.random.RandomState(0)
n = 6000  # a 275 MiB float64 kernel, 137 MiB in float32
X = np.r_[rng.normal(size=(n // 2, 2)) - 4, rng.normal(size=(n // 2, 2)) + 4]
y = np.r_[np.zeros(n // 2), np.ones(n // 2)]
AlphaSeededSVC(C=1.0, gamma=0.5).fit(X[::20], y[::20])  # libraries loaded
field = {limit!r}.replace("RLIMIT_AS", "VmSize").replace("RLIMIT_DATA", "VmData")
status = open("/proc/self/status").read().splitlines()
in_use = int(next(s for s in status if s.startswith(field)).split()[1]) * 1024
limit = getattr(resource, {limit!r})
resource.setrlimit(limit, (in_use + 120 * 2**20, resource.getrlimit(limit)[1]))
left, name = memory_headroom()
print("headroom", left, name, kernel_budget("auto"))
model = AlphaSeededSVC(C=1.0, gamma=0.5).fit(X, y)
print("auto", model.score(X, y))
try:
    AlphaSeededSVC(C=1.0, gamma=0.5, cache_size=1000).fit(X, y)
except MemoryError as exc:
    print("refused", exc)
"""


@pytest.mark.parametrize("limit", ["RLIMIT_AS", "RLIMIT_DATA"])
def test_auto_stays_under_the_process_limit(limit):
    # A real process under a ulimit 120 MiB above what it uses: "auto" used
    # to size the store by the machine (half its RAM: the whole 275 MiB
    # matrix) and fail in np.empty; now it keeps columns within the limit,
    # and an explicit budget the process cannot hold is refused up front.
    resource = pytest.importorskip("resource")
    if not hasattr(resource, limit) or not os.path.exists("/proc/self/status"):
        pytest.skip("needs Linux resource limits")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", _UNDER_A_LIMIT.format(limit=limit)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines())
    words = lines["headroom"].split()
    left, budget = float(words[0]), float(words[-1])
    assert limit in lines["headroom"]
    assert left <= 120 * 2**20
    assert budget == pytest.approx(0.5 * left, rel=0.05)
    assert float(lines["auto"]) == 1.0
    assert "cache_size=1000" in lines["refused"]
    assert limit in lines["refused"]


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_cgroup_headroom_reads_the_tightest_level(tmp_path, version):
    # The process's own cgroup sets no limit, its parent does, and other
    # processes of the parent use memory (less their reclaimable cache).
    root = tmp_path / "sys"
    if version == "v2":
        proc, base = "0::/jobs/worker\n", root
        limit, usage, inactive = "memory.max", "memory.current", "inactive_file"
        _write(base / "jobs" / "worker" / limit, "max\n")
    else:
        proc = "5:devices:/\n4:memory:/jobs/worker\n"
        base = root / "memory"
        limit, usage = "memory.limit_in_bytes", "memory.usage_in_bytes"
        inactive = "total_inactive_file"
        _write(base / "jobs" / "worker" / limit, "9223372036854771712\n")
        _write(base / limit, "9223372036854771712\n")
    _write(base / "jobs" / limit, "1000000\n")
    _write(base / "jobs" / usage, "400000\n")
    _write(base / "jobs" / "memory.stat", f"anon 300000\n{inactive} 100000\n")
    _write(tmp_path / "cgroup", proc)
    left, name = _memory.cgroup_headroom(str(tmp_path / "cgroup"), str(root))
    assert left == 1000000 - (400000 - 100000)
    assert str(base / "jobs") in name
    _write(tmp_path / "none", "0::/\n")
    assert _memory.cgroup_headroom(str(tmp_path / "none"), str(root)) is None


def test_auto_budget_follows_the_headroom(monkeypatch):
    monkeypatch.setattr(
        _memory, "memory_headroom", lambda: (3.0 * 2**30, "RLIMIT_AS=...")
    )
    assert kernel_budget("auto") == 1.5 * 2**30
    with pytest.raises(MemoryError, match=r"cache_size=8000.*RLIMIT_AS"):
        _kernel_store.check_store_allocation(4.0 * 2**30, 8000, "the matrix")
    _kernel_store.check_store_allocation(2.0 * 2**30, 8000, "the matrix")


@pytest.mark.parametrize("seeding", ["mir", "ato"])
def test_dense_seeding_blocks_are_checked_before_they_are_built(
    monkeypatch, data, seeding
):
    # MIR and ATO build dense blocks of the shared rows with the added and
    # removed ones; under a tight limit the run stops with a clear error.
    from sklearn_ext import tree_cross_validate
    from sklearn_ext.svm import AlphaSeedingBackend, _seeding

    X, y = data
    monkeypatch.setattr(_seeding, "CHECKED_BLOCK_BYTES", 0)
    # Room for the store's 32 columns (100 kB), not for a block of the 360
    # shared rows with 40 added and 40 removed ones (350 kB).
    monkeypatch.setattr(
        _memory, "memory_headroom", lambda: (200_000.0, "RLIMIT_AS=...")
    )
    model = AlphaSeededSVC(gamma=0.1, cache_size=0.1)
    kwargs = dict(cv=10, n_jobs=1, error_score="raise")
    with pytest.raises(
        MemoryError, match=rf"{seeding.upper()} seeding.*seeding='sir'.*{seeding!r}"
    ):
        tree_cross_validate(
            model, X, y, method=AlphaSeedingBackend(seeding=seeding), **kwargs
        )
    # SIR needs no block: the same run goes through.
    result = tree_cross_validate(model, X, y, method=AlphaSeedingBackend(), **kwargs)
    assert result["test_score"].shape == (10,)
