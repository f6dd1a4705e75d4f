"""scikit-learn side of optuna-treecv: cheap k-fold cross-validation.

``sklearn_ext`` imports without Optuna. It holds the fold plan, the TreeCV
splitters, :func:`tree_cross_validate`, the search tools and the alpha-seeded
kernel SVM. Its public names are loaded on first access (as scikit-learn
loads its submodules), so ``import sklearn_ext.model_selection`` imports none
of the learner packages.
"""

import importlib

__version__ = "0.1.0.dev0"

#: Public name -> the subpackage that defines it.
_PUBLIC = {
    "AlphaSeededSVC": "sklearn_ext.svm",
    "FoldPlan": "sklearn_ext.model_selection",
    "LeafResult": "sklearn_ext.model_selection",
    "LevelEstimate": "sklearn_ext.model_selection",
    "LeastSquaresSGDRegressor": "sklearn_ext.linear_model",
    "LogisticSGDClassifier": "sklearn_ext.linear_model",
    "PegasosClassifier": "sklearn_ext.linear_model",
    "PrefixCache": "sklearn_ext.model_selection",
    "SemiSupervisedAnomalyDetector": "sklearn_ext.anomaly",
    "StratifiedTreeCVSplitter": "sklearn_ext.model_selection",
    "StreamingPipeline": "sklearn_ext.model_selection",
    "TreeCVEstimator": "sklearn_ext.model_selection",
    "TreeCVOrderWarning": "sklearn_ext.model_selection",
    "TreeCVRegimeWarning": "sklearn_ext.model_selection",
    "TreeCVSearchCV": "sklearn_ext.model_selection",
    "TreeCVSplitter": "sklearn_ext.model_selection",
    "WarmStartStore": "sklearn_ext.svm",
    "alpha_seeded_cv": "sklearn_ext.model_selection._svm_cv",
    "one_pass_estimator": "sklearn_ext.model_selection",
    "one_standard_error_rule": "sklearn_ext.model_selection",
    "svm_c_path_cv": "sklearn_ext.model_selection._svm_cv",
    "tree_cross_validate": "sklearn_ext.model_selection",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name):
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return __all__ + ["__version__"]
