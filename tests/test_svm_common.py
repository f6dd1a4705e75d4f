"""scikit-learn's estimator checks for the SVM estimators."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_ext.svm import AlphaSeededSVC


@parametrize_with_checks([AlphaSeededSVC(), AlphaSeededSVC(kernel="precomputed")])
def test_sklearn_compatible(estimator, check):
    check(estimator)
