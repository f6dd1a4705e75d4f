"""Thread-pool limits read and set through one cached controller.

:func:`threadpoolctl.threadpool_info` and :func:`threadpoolctl.threadpool_limits`
look for the loaded BLAS and OpenMP libraries on every call (about 1.5 ms each
here), which a run that limits its pools per fold or per candidate pays again
and again. A :class:`threadpoolctl.ThreadpoolController` finds them once and
then reads and sets their thread counts directly (about 0.02 ms), as
scikit-learn caches its own. The counts it reads are the libraries' current
ones, so limits set elsewhere (a joblib worker's, a ``threadpool_limits``
block of the user's) are seen. A library loaded after the first call is not
limited by it, which only gives that library its own threads back.
"""

from __future__ import annotations

import threading

from threadpoolctl import ThreadpoolController

__all__ = ["blas_limits", "pool_limits", "threadpool_controller"]

_CONTROLLER: ThreadpoolController | None = None
_LOCK = threading.Lock()


def threadpool_controller() -> ThreadpoolController:
    """The process's controller of the loaded thread pools, made on first use."""
    global _CONTROLLER
    if _CONTROLLER is None:
        with _LOCK:
            if _CONTROLLER is None:
                _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


def blas_limits(limits: int):
    """Context manager: at most ``limits`` threads in the BLAS pools.

    Examples
    --------
    >>> from sklearn_ext.utils._threads import blas_limits
    >>> with blas_limits(1):
    ...     pass
    """
    return threadpool_controller().limit(limits=limits, user_api="blas")


def pool_limits() -> list[int]:
    """The thread count in force in each loaded BLAS and OpenMP pool."""
    return [int(info["num_threads"]) for info in threadpool_controller().info()]
