"""Data sets for anomaly detection: the ForestCover benchmark and a synthetic one.

:func:`load_forestcover_anomaly` derives the semi-supervised anomaly detection
benchmark of Görnitz et al. (JAIR 2013) from a copy of UCI Covertype that you
provide; :func:`make_anomaly_data` draws a small synthetic stand-in. Both return
an :class:`AnomalyData` with the rows, the true labels and the mask of labels
training may see.
"""

from sklearn_ext.datasets._anomaly import (
    AnomalyData,
    load_forestcover_anomaly,
    make_anomaly_data,
)

__all__ = ["AnomalyData", "load_forestcover_anomaly", "make_anomaly_data"]
