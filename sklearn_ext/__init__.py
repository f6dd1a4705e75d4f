"""scikit-learn side of optuna-treecv: cheap k-fold cross-validation.

``sklearn_ext`` imports without Optuna. It holds the fold plan, the TreeCV
splitters, :func:`tree_cross_validate`, the search tools and the alpha-seeded
kernel SVM.
"""

from sklearn_ext.anomaly import SemiSupervisedAnomalyDetector
from sklearn_ext.linear_model import (
    LeastSquaresSGDRegressor,
    LogisticSGDClassifier,
    PegasosClassifier,
)
from sklearn_ext.model_selection import (
    FoldPlan,
    LeafResult,
    PrefixCache,
    StratifiedTreeCVSplitter,
    TreeCVEstimator,
    TreeCVRegimeWarning,
    TreeCVSearchCV,
    TreeCVSplitter,
    one_pass_estimator,
    one_standard_error_rule,
    tree_cross_validate,
)
from sklearn_ext.svm import (
    AlphaSeededSVC,
    WarmStartStore,
    alpha_seeded_cv,
    svm_c_path_cv,
)

__version__ = "0.1.0.dev0"

__all__ = [
    "AlphaSeededSVC",
    "FoldPlan",
    "LeastSquaresSGDRegressor",
    "LogisticSGDClassifier",
    "PegasosClassifier",
    "LeafResult",
    "PrefixCache",
    "SemiSupervisedAnomalyDetector",
    "StratifiedTreeCVSplitter",
    "TreeCVEstimator",
    "TreeCVRegimeWarning",
    "TreeCVSearchCV",
    "TreeCVSplitter",
    "WarmStartStore",
    "alpha_seeded_cv",
    "one_pass_estimator",
    "one_standard_error_rule",
    "svm_c_path_cv",
    "tree_cross_validate",
]
