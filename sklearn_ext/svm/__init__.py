"""Kernel SVMs solved by SMO on a shared kernel store, with alpha-seeded CV.

The estimator, the solver and the CV engine import nothing of the run core
(``tree_cross_validate`` and the searches): fitting an ``AlphaSeededSVC``,
``probability=True`` included, loads no CV machinery. The names that need it
are loaded on first access: the ``alpha_seeding`` backend (it implements the
backend contract of :mod:`sklearn_ext.model_selection`) and the two doors
:func:`alpha_seeded_cv` and :func:`svm_c_path_cv` (defined above the run
core, in :mod:`sklearn_ext.model_selection._svm_cv`).
"""

import importlib

from sklearn_ext.svm._classes import AlphaSeededSVC
from sklearn_ext.svm._kernel_store import KernelStore
from sklearn_ext.svm._seeding import SEEDINGS
from sklearn_ext.svm._warm_start import KeyedKernel, WarmStartSession, WarmStartStore

#: Public names loaded on first access -> the module that defines them.
_LAZY = {
    "AlphaSeedingBackend": "sklearn_ext.svm._backend",
    "alpha_seeded_cv": "sklearn_ext.model_selection._svm_cv",
    "svm_c_path_cv": "sklearn_ext.model_selection._svm_cv",
}

__all__ = [
    "SEEDINGS",
    "AlphaSeededSVC",
    "AlphaSeedingBackend",
    "KeyedKernel",
    "KernelStore",
    "WarmStartSession",
    "WarmStartStore",
    "alpha_seeded_cv",
    "svm_c_path_cv",
]


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return list(__all__)
