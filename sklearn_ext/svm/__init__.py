"""Kernel SVMs solved by SMO on a shared kernel store, with alpha-seeded CV."""

from sklearn_ext.svm._classes import AlphaSeededSVC
from sklearn_ext.svm._cv import alpha_seeded_cv
from sklearn_ext.svm._kernel_store import KernelStore
from sklearn_ext.svm._seeding import SEEDINGS

__all__ = ["SEEDINGS", "AlphaSeededSVC", "KernelStore", "alpha_seeded_cv"]
