"""Fold plans, TreeCV splitters, tree cross-validation and searches.

The engines of the learner packages (``NativeTreeBackend``,
``NativeSSADTreeBackend``) are loaded on first access, so importing this
package imports none of the learner packages.
"""

import importlib

from sklearn_ext.model_selection._backends import (
    Backend,
    CVTask,
    LeafResult,
    LeafTable,
    PythonTreeBackend,
    StandardBackend,
)
from sklearn_ext.model_selection._choice import TreeCVFallbackWarning, choose_backend
from sklearn_ext.model_selection._estimator import TreeCVEstimator
from sklearn_ext.model_selection._plan import FoldPlan
from sklearn_ext.model_selection._prefix_cache import PrefixCache
from sklearn_ext.model_selection._refit import one_standard_error_rule
from sklearn_ext.model_selection._search import TreeCVSearchCV
from sklearn_ext.model_selection._split import StratifiedTreeCVSplitter, TreeCVSplitter
from sklearn_ext.model_selection._validation import tree_cross_validate

_ENGINES = {
    "NativeSSADTreeBackend": "sklearn_ext.anomaly._backend",
    "NativeTreeBackend": "sklearn_ext.model_selection._native",
}

__all__ = [
    "Backend",
    "CVTask",
    "FoldPlan",
    "LeafResult",
    "LeafTable",
    "NativeSSADTreeBackend",
    "NativeTreeBackend",
    "PrefixCache",
    "PythonTreeBackend",
    "StandardBackend",
    "StratifiedTreeCVSplitter",
    "TreeCVEstimator",
    "TreeCVFallbackWarning",
    "TreeCVSearchCV",
    "TreeCVSplitter",
    "choose_backend",
    "one_standard_error_rule",
    "tree_cross_validate",
]


def __getattr__(name):
    if name in _ENGINES:
        return getattr(importlib.import_module(_ENGINES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return __all__
