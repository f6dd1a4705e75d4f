"""How much more memory this process may take, read from its real limits.

One reader for every budget and every large allocation: the kernel store's
``cache_size="auto"``, the exact backend's statistics. A large allocation is
checked against :func:`memory_headroom` before it is made, so that a run
beyond the process's limit (``ulimit -v`` / ``-d``, a container's cgroup,
other workers on the machine or in the cgroup) stops with a clear
``MemoryError`` naming what needed the memory, instead of being killed or
crashing inside a library.
"""

from __future__ import annotations

import functools
import os

__all__ = ["cgroup_headroom", "check_allocation", "memory_headroom"]

#: A cgroup "limit" at least this large means none (v1 writes 2**63 rounded down).
_NO_LIMIT = 2.0**60


def _read(path: str) -> str | None:
    try:
        with open(path) as file:
            return file.read()
    except OSError:
        return None


def _fields(text: str | None, sep: str = " ") -> dict[str, str]:
    """``name value`` (or ``name: value``) lines as a dict."""
    out = {}
    for line in (text or "").splitlines():
        name, _, value = line.partition(sep)
        out[name.strip()] = value.strip()
    return out


@functools.cache
def _machine_total() -> float:
    """The machine's memory in bytes."""
    try:
        return float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 8.0 * 2**30


def _machine_available() -> float:
    """What the machine has available (``MemAvailable``), in bytes."""
    total = _machine_total()
    info = _fields(_read("/proc/meminfo"), ":")
    available = info.get("MemAvailable", "").split()
    if available and available[0].isdigit():
        return min(total, 1024.0 * float(available[0]))
    return total


def _rlimit_headroom() -> list[tuple[float, str]]:
    """What the soft ``RLIMIT_AS`` / ``RLIMIT_DATA`` leave, and their names."""
    try:
        import resource
    except ImportError:  # not on this platform
        return []
    status = None
    out = []
    for name, field in (("RLIMIT_AS", "VmSize"), ("RLIMIT_DATA", "VmData")):
        soft, _ = resource.getrlimit(getattr(resource, name))
        if soft == resource.RLIM_INFINITY or soft < 0:
            continue
        if status is None:
            status = _fields(_read("/proc/self/status"), ":")
        used = status.get(field, "").split()
        in_use = 1024.0 * float(used[0]) if used and used[0].isdigit() else 0.0
        out.append((float(soft) - in_use, f"{name}={soft} bytes (ulimit)"))
    return out


@functools.cache
def _limited_cgroups(proc_cgroup: str, root: str) -> tuple[tuple[str, ...], ...]:
    """The memory cgroups of this process and their ancestors that set a limit.

    Each as ``(folder, limit file, usage file, inactive-cache field)``: cgroup
    v2 (``memory.max``, ``memory.current``) and v1 (``memory.limit_in_bytes``,
    ``memory.usage_in_bytes``); the process's own cgroup, then each ancestor
    up to the mount's root (in a cgroup namespace, the container's). Found
    once per process; the limits and usages are read on every call.
    """
    levels = []
    for line in (_read(proc_cgroup) or "").splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            levels.append((root, path, "memory.max", "memory.current", "inactive_file"))
        elif "memory" in controllers.split(","):
            levels.append(
                (
                    os.path.join(root, "memory"),
                    path,
                    "memory.limit_in_bytes",
                    "memory.usage_in_bytes",
                    "total_inactive_file",
                )
            )
    found = []
    for base, path, limit_file, usage_file, inactive in levels:
        parts = [p for p in path.split("/") if p]
        for depth in range(len(parts), -1, -1):
            where = os.path.join(base, *parts[:depth])
            limit = (_read(os.path.join(where, limit_file)) or "").strip()
            if limit.isdigit() and float(limit) < _NO_LIMIT:
                found.append((where, limit_file, usage_file, inactive))
    return tuple(found)


def cgroup_headroom(
    proc_cgroup: str = "/proc/self/cgroup", root: str = "/sys/fs/cgroup"
) -> tuple[float, str] | None:
    """What this process's cgroups leave below their memory limits.

    The limit less the usage of each limited level (:func:`_limited_cgroups`),
    less its inactive file cache, which the kernel reclaims before it kills;
    the tightest level binds. ``None`` without a memory limit. The usage
    counts every process of the cgroup: other workers' memory is taken off.
    """
    best = None
    for where, limit_file, usage_file, inactive in _limited_cgroups(proc_cgroup, root):
        limit = (_read(os.path.join(where, limit_file)) or "").strip()
        if not limit.isdigit():
            continue
        usage = (_read(os.path.join(where, usage_file)) or "0").strip()
        used = float(usage) if usage.isdigit() else 0.0
        cache = _fields(_read(os.path.join(where, "memory.stat"))).get(inactive, "0")
        used -= float(cache) if cache.isdigit() else 0.0
        left = float(limit) - max(used, 0.0)
        if best is None or left < best[0]:
            best = (left, f"the cgroup limit {limit} bytes of {where}")
    return best


def memory_headroom() -> tuple[float, str]:
    """Bytes this process may still allocate, and the limit that binds.

    The least of the machine's available memory (``MemAvailable``: what other
    processes use is taken off), what the soft ``RLIMIT_AS`` and
    ``RLIMIT_DATA`` leave (``ulimit -v`` / ``-d``, less this process's
    virtual / data size) and what its cgroup leaves (:func:`cgroup_headroom`).
    """
    candidates = [(_machine_available(), "the machine's available memory")]
    candidates += _rlimit_headroom()
    in_cgroup = cgroup_headroom()
    if in_cgroup is not None:
        candidates.append(in_cgroup)
    left, name = min(candidates, key=lambda item: item[0])
    return max(left, 0.0), name


def check_allocation(nbytes: float, what: str, advice: str = "") -> None:
    """Raise ``MemoryError`` before allocating ``nbytes`` that cannot fit.

    Parameters
    ----------
    nbytes : float
        The bytes about to be allocated.
    what : str
        What needs them, for the message ("The exact backend's statistics of
        Ridge ...").
    advice : str, default=""
        What the user may do instead, appended to the message.

    Examples
    --------
    >>> from sklearn_ext.utils._memory import check_allocation
    >>> check_allocation(2**20, "A small buffer")
    """
    left, limit = memory_headroom()
    if nbytes > left:
        raise MemoryError(
            f"{what} needs about {nbytes / 2**30:.2f} GiB, but this process may "
            f"allocate only {left / 2**30:.2f} GiB more ({limit})."
            + (f" {advice}" if advice else "")
        )
