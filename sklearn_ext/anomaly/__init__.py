"""Anomaly detection learners that TreeCV runs natively."""

from sklearn_ext.anomaly._ssad import SemiSupervisedAnomalyDetector

__all__ = ["SemiSupervisedAnomalyDetector"]
