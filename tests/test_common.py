"""scikit-learn's estimator checks for the native learners."""

from sklearn.utils.estimator_checks import parametrize_with_checks

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
