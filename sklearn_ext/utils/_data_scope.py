"""A scope in which the data of one call is taken not to change."""

from __future__ import annotations

import contextlib
import contextvars

__all__ = ["data_scope", "scoped_memo"]

_DATA_SCOPE: contextvars.ContextVar[dict | None] = contextvars.ContextVar(
    "sklearn_ext_data_scope", default=None
)


@contextlib.contextmanager
def data_scope(memo: dict | None = None):
    """Within it, hashes of the same arrays may be taken once and reused.

    One call that runs many candidates on the same data (a search's ``fit``)
    runs them in one scope: the data does not change during the call, so a
    store key built from a hash of ``X`` reads ``X`` once per call rather than
    once per candidate. The scope is the calling thread's (other threads see
    none and hash again, to the same value); a new call opens a new scope, so
    data changed between calls is still seen. Nested scopes share the outer
    one.

    ``memo`` continues a scope across calls: a study's trials, all run on the
    data its objective holds, pass the objective's memo so that ``X`` is
    hashed once per study.
    """
    if _DATA_SCOPE.get() is not None:
        yield
        return
    token = _DATA_SCOPE.set({} if memo is None else memo)
    try:
        yield
    finally:
        _DATA_SCOPE.reset(token)


def scoped_memo() -> dict | None:
    """The memo of the scope in force in this thread, or ``None``."""
    return _DATA_SCOPE.get()
