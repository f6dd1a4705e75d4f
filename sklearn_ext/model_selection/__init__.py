"""Fold plans, TreeCV splitters, tree cross-validation and searches.

Importing this package imports none of the learner packages and no kernel:
the native tree (``NativeTreeBackend``, loaded on first use) asks each estimator
for its kernel, the SVM's alpha-seeding backend is found by name on first use,
and the exact statistics backend (``ExactStatisticsBackend``) names the
scikit-learn learners it runs without importing them.
"""

import importlib

from sklearn_ext.model_selection._backends import (
    Backend,
    CVTask,
    PythonTreeBackend,
    StandardBackend,
)
from sklearn_ext.model_selection._choice import TreeCVFallbackWarning, choose_backend
from sklearn_ext.model_selection._estimator import TreeCVEstimator
from sklearn_ext.model_selection._exact import (
    ExactStatisticsBackend,
    StatisticsCache,
    exact_learners,
)
from sklearn_ext.model_selection._leaves import LeafResult, LeafTable
from sklearn_ext.model_selection._levels import LevelEstimate
from sklearn_ext.model_selection._order import TreeCVOrderWarning
from sklearn_ext.model_selection._placement import PlacementError, block_fold_plan
from sklearn_ext.model_selection._plan import FoldPlan
from sklearn_ext.model_selection._refit import one_standard_error_rule
from sklearn_ext.model_selection._regime import (
    TreeCVRegimeWarning,
    fit_is_one_pass,
    one_pass_estimator,
)
from sklearn_ext.model_selection._search import TreeCVSearchCV
from sklearn_ext.model_selection._split import StratifiedTreeCVSplitter, TreeCVSplitter
from sklearn_ext.model_selection._streaming import StreamingPipeline
from sklearn_ext.model_selection._validation import tree_cross_validate
from sklearn_ext.utils._prefix_cache import PrefixCache

__all__ = [
    "Backend",
    "CVTask",
    "DaskTreeBackend",
    "ExactStatisticsBackend",
    "FoldPlan",
    "LeafResult",
    "LeafTable",
    "LevelEstimate",
    "NativeTreeBackend",
    "PlacementError",
    "PrefixCache",
    "PythonTreeBackend",
    "StandardBackend",
    "StatisticsCache",
    "StratifiedTreeCVSplitter",
    "StreamingPipeline",
    "TreeCVEstimator",
    "TreeCVFallbackWarning",
    "TreeCVOrderWarning",
    "TreeCVRegimeWarning",
    "TreeCVSearchCV",
    "TreeCVSplitter",
    "block_fold_plan",
    "choose_backend",
    "exact_learners",
    "fit_is_one_pass",
    "one_pass_estimator",
    "one_standard_error_rule",
    "tree_cross_validate",
]

#: Public names loaded on first use (their modules load native kernels or dask).
_LAZY = {
    "NativeTreeBackend": "sklearn_ext.model_selection._native",
    "DaskTreeBackend": "sklearn_ext.model_selection._dask",  # imports dask
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
