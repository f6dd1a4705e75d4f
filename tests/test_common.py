"""scikit-learn's estimator checks for every public estimator: the native learners,
the searches, StreamingPipeline and the SSAD detector (AlphaSeededSVC in
tests/test_svm_common.py, TreeCVEstimator in tests/test_search.py)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit
from sklearn.datasets import make_blobs
from sklearn.exceptions import DataConversionWarning
from sklearn.linear_model import SGDClassifier
from sklearn.preprocessing import StandardScaler
from sklearn.utils import shuffle
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_ext import StreamingPipeline, TreeCVSearchCV, tree_cross_validate
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
        PegasosClassifier(),
        LogisticSGDClassifier(),
        PegasosClassifier(alpha=1e-2),
        LogisticSGDClassifier(alpha=1e-2),
        LeastSquaresSGDRegressor(),
    ],
    expected_failed_checks=lambda estimator: _WEIGHT_EQUIVALENCE,
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


# scikit-learn expects the same of GridSearchCV (PER_ESTIMATOR_XFAIL_CHECKS in
# sklearn/utils/_test_common/instance_generator.py).
_SEARCH_EXPECTED = {
    "TreeCVSearchCV": {
        "check_requires_y_none": "Doesn't fail gracefully (as GridSearchCV)",
    },
}


# TreeCVEstimator is checked in tests/test_search.py. The searches are checked as
# scikit-learn checks GridSearchCV (its
# instance_generator): error_score="raise", so that a check expecting a fit's own
# error gets it rather than "All the fits failed".
@parametrize_with_checks(
    [
        TreeCVSearchCV(
            LogisticSGDClassifier(alpha=1e-2),
            {"alpha": [1e-3, 1e-2]},
            cv=2,
            error_score="raise",
        ),
        TreeCVSearchCV(
            LeastSquaresSGDRegressor(),
            {"radius": [1.0, 10.0]},
            cv=2,
            error_score="raise",
        ),
    ],
    expected_failed_checks=lambda estimator: _SEARCH_EXPECTED.get(
        type(estimator).__name__, {}
    ),
)
def test_sklearn_compatible_meta_estimator(estimator, check):
    check(estimator)


# scikit-learn expects the same two failures of its own Pipeline
# (PER_ESTIMATOR_XFAIL_CHECKS): fit fits the step objects in place.
_PIPELINE_EXPECTED = {
    "check_dont_overwrite_parameters": (
        "StreamingPipeline, as Pipeline, fits the estimators of its steps parameter"
    ),
    "check_estimators_overwrite_params": (
        "StreamingPipeline, as Pipeline, fits the estimators of its steps parameter"
    ),
}


@parametrize_with_checks(
    [
        StreamingPipeline(
            [("scale", StandardScaler()), ("sgd", SGDClassifier(random_state=0))]
        ),
        StreamingPipeline(
            [("scale", StandardScaler()), ("ls", LeastSquaresSGDRegressor())]
        ),
    ],
    expected_failed_checks=lambda estimator: _PIPELINE_EXPECTED,
)
def test_sklearn_compatible_streaming_pipeline(estimator, check):
    check(estimator)


def test_predict_proba_agrees_with_predict_on_saturated_rows():
    """Rows so confident that two one-vs-rest sigmoids round to 1.0 still get
    their highest probability on the predicted class."""
    X, y = make_blobs(n_samples=300, random_state=0)
    X = StandardScaler().fit_transform(X)
    X, y = shuffle(X, y, random_state=7)
    model = LogisticSGDClassifier().fit(X, y)
    decision = model.decision_function(X)
    assert np.sum(expit(np.sort(decision, axis=1)[:, -2]) == 1.0) > 0
    proba = model.predict_proba(X)
    assert_array_equal(model.classes_[proba.argmax(axis=1)], model.predict(X))
    assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    binary = LogisticSGDClassifier().fit(X, y == 1)
    assert_array_equal(
        binary.classes_[binary.predict_proba(X).argmax(axis=1)], binary.predict(X)
    )


@pytest.mark.parametrize(
    "estimator",
    [LogisticSGDClassifier(), PegasosClassifier(), LeastSquaresSGDRegressor()],
)
def test_native_tree_takes_a_column_vector_y(estimator):
    """A column vector y, which fit takes with a DataConversionWarning, runs the
    native tree with the same scores as the flat y."""
    X, y = make_blobs(n_samples=90, centers=2, random_state=0)
    y = y.astype(float)
    flat = tree_cross_validate(estimator, X, y, cv=3, return_run_info=True)
    with pytest.warns(DataConversionWarning):
        column = tree_cross_validate(
            estimator, X, y.reshape(-1, 1), cv=3, return_run_info=True
        )
    assert column["backend"] == flat["backend"] == "native_tree"
    assert_array_equal(column["test_score"], flat["test_score"])


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
