"""How much more memory this process may take, read from its real limits.

A large allocation is checked against :func:`available_bytes` before it is
made, so that a run beyond the process's limit (``ulimit -v``, a container's
cgroup, other workers on the machine) stops with a clear ``MemoryError``
naming what needed the memory, instead of being killed or crashing inside a
library.
"""

from __future__ import annotations

import math

__all__ = ["available_bytes", "check_allocation"]


def _read(path: str) -> str | None:
    try:
        with open(path) as file:
            return file.read()
    except OSError:
        return None


def _status_kib(field: str) -> float | None:
    """A ``/proc/self/status`` field in KiB (``VmSize``), or ``None``."""
    text = _read("/proc/self/status")
    for line in (text or "").splitlines():
        if line.startswith(field + ":"):
            return float(line.split()[1])
    return None


def _address_space_left() -> tuple[float, str]:
    try:
        import resource
    except ImportError:  # Windows
        return math.inf, ""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    mapped = _status_kib("VmSize")
    if soft == resource.RLIM_INFINITY or mapped is None:
        return math.inf, ""
    return float(soft) - 1024.0 * mapped, "the address-space limit (ulimit -v)"


def _cgroup_left() -> tuple[float, str]:
    for limit_path, usage_path in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        (
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
            "/sys/fs/cgroup/memory/memory.usage_in_bytes",
        ),
    ):
        limit, usage = _read(limit_path), _read(usage_path)
        if limit is None or usage is None:
            continue
        limit, usage = limit.strip(), usage.strip()
        if limit.isdigit() and usage.isdigit() and int(limit) < 2**60:
            return float(limit) - float(usage), "the container's memory limit (cgroup)"
    return math.inf, ""


def _machine_left() -> tuple[float, str]:
    text = _read("/proc/meminfo")
    for line in (text or "").splitlines():
        if line.startswith("MemAvailable:"):
            return 1024.0 * float(line.split()[1]), "the machine's available memory"
    return math.inf, ""


def available_bytes() -> tuple[float, str]:
    """Bytes this process may still allocate, and which limit says so.

    The least of its address-space limit less what it has mapped
    (``resource.getrlimit``), its cgroup's limit less what the cgroup uses
    (all its processes: other workers included), and the machine's available
    memory. ``(inf, "")`` where none can be read.

    Examples
    --------
    >>> from sklearn_ext.utils._memory import available_bytes
    >>> left, source = available_bytes()
    >>> left > 0
    True
    """
    return min(
        (_address_space_left(), _cgroup_left(), _machine_left()),
        key=lambda pair: pair[0],
    )


def check_allocation(nbytes: float, what: str, advice: str = "") -> None:
    """Raise ``MemoryError`` before allocating ``nbytes`` that cannot fit.

    Parameters
    ----------
    nbytes : float
        The bytes about to be allocated.
    what : str
        What needs them, for the message ("the statistics of Ridge ...").
    advice : str, default=""
        What the user may do instead, appended to the message.
    """
    left, source = available_bytes()
    if nbytes > left:
        raise MemoryError(
            f"{what} needs about {nbytes / 2**30:.2f} GiB, but this process may "
            f"allocate only {max(left, 0.0) / 2**30:.2f} GiB more ({source})."
            + (f" {advice}" if advice else "")
        )
