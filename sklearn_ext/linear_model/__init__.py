"""Native incremental linear learners (Cython) that TreeCV runs in C."""

from sklearn_ext.linear_model._least_squares import LeastSquaresSGDRegressor
from sklearn_ext.linear_model._logistic import LogisticSGDClassifier
from sklearn_ext.linear_model._pegasos import PegasosClassifier

__all__ = [
    "LeastSquaresSGDRegressor",
    "LogisticSGDClassifier",
    "PegasosClassifier",
]
