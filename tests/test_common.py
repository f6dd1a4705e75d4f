"""scikit-learn's estimator checks for the native learners and the SSAD detector."""

import numpy as np
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_ext.anomaly import SemiSupervisedAnomalyDetector
from sklearn_ext.linear_model import (
    LeastSquaresSGDRegressor,
    LogisticSGDClassifier,
    PegasosClassifier,
)

# Online learners with shuffling are not invariant to repeating a row instead of
# weighting it (scikit-learn's SGD estimators expect the same failure).
_WEIGHT_EQUIVALENCE = {
    "check_sample_weight_equivalence_on_dense_data": (
        "a weighted SGD step is not the same as repeated steps"
    ),
    "check_sample_weight_equivalence_on_sparse_data": (
        "a weighted SGD step is not the same as repeated steps"
    ),
}


@parametrize_with_checks(
    [
        PegasosClassifier(alpha=1e-2),
        LogisticSGDClassifier(alpha=1e-2),
        LeastSquaresSGDRegressor(),
    ],
    expected_failed_checks=lambda estimator: _WEIGHT_EQUIVALENCE,
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


# The checks fit with class labels such as {0, 1, 2} (and score with one class),
# which the detector rejects: its labels are +1, -1 and 0 (unlabelled).
_SSAD_LABEL_CHECKS = {
    name: "the check fits with labels outside {-1, 0, +1}, which SSAD rejects"
    for name in (
        "check_classifier_data_not_an_array",
        "check_dict_unchanged",
        "check_dont_overwrite_parameters",
        "check_dtype_object",
        "check_estimators_dtypes",
        "check_estimators_fit_returns_self",
        "check_estimators_overwrite_params",
        "check_f_contiguous_array_estimator",
        "check_fit2d_1feature",
        "check_fit2d_predict1d",
        "check_fit_score_takes_y",
        "check_methods_sample_order_invariance",
        "check_methods_subset_invariance",
        "check_n_features_in_after_fitting",
        "check_non_transformer_estimators_n_iter",
        "check_positive_only_tag_during_fit",
        "check_readonly_memmap_input",
    )
}
_SSAD_LABEL_CHECKS["check_pipeline_consistency"] = (
    "the check scores with y of one class, where the AUROC is undefined"
)


class _UnsupervisedSSAD(SemiSupervisedAnomalyDetector):
    """The detector with ``y`` ignored (all rows unlabelled) and the mean decision
    as score, so that the label-conflicting checks run on its code paths."""

    def fit(self, X, y=None, labeled=None):
        return super().fit(X)

    def partial_fit(self, X, y=None, labeled=None):
        return super().partial_fit(X)

    def score(self, X, y=None):
        return float(np.mean(self.decision_function(X)))


def _ssad_expected_failures(estimator):
    if type(estimator) is SemiSupervisedAnomalyDetector:
        return _SSAD_LABEL_CHECKS
    return {}


@parametrize_with_checks(
    [SemiSupervisedAnomalyDetector(random_state=0), _UnsupervisedSSAD(random_state=0)],
    expected_failed_checks=_ssad_expected_failures,
)
def test_sklearn_compatible_anomaly_detector(estimator, check):
    check(estimator)
