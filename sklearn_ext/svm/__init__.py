"""Kernel SVMs solved by SMO on a shared kernel store, with alpha-seeded CV."""

from sklearn_ext.svm._backend import AlphaSeedingBackend
from sklearn_ext.svm._classes import AlphaSeededSVC
from sklearn_ext.svm._cv import alpha_seeded_cv
from sklearn_ext.svm._kernel_store import KernelStore
from sklearn_ext.svm._path import svm_c_path_cv
from sklearn_ext.svm._seeding import SEEDINGS
from sklearn_ext.svm._warm_start import KeyedKernel, WarmStartSession, WarmStartStore

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
