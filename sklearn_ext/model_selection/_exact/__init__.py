"""Exact k-fold CV from sufficient statistics: every fold is the total minus its chunk.

The model of naive Bayes, ridge regression, least squares and linear
discriminant analysis is a function of statistics that add up over rows: class
counts and feature sums, per-class means and variances, the Gram matrix
``X'WX`` and ``X'Wy``, class scatter matrices; nearest neighbours need one
neighbour search over all rows. The backend computes them once per chunk of
the fold plan, forms each fold's statistics as the total minus its held-out
chunk, and turns them into a real fitted scikit-learn estimator, with the
attributes that estimator's own ``fit`` on the fold's training rows would set.

One module per learner family (:mod:`._naive_bayes`, :mod:`._least_squares`,
:mod:`._discriminant`, :mod:`._neighbors`), each a :class:`._base._Family`;
a per-fold scaler in front of a family (``Pipeline([scaler, learner])``: the
fold's scaler from per-chunk sums and extremes, the family's statistics
mapped column by column) in :mod:`._scaling`; the chunks and groups of rows
in :mod:`._layout`; the statistics cache in :mod:`._cache`; the backend,
which runs any family, in :mod:`._backend`.
"""

from sklearn_ext.model_selection._exact._backend import (
    ExactStatisticsBackend,
    exact_learners,
)
from sklearn_ext.model_selection._exact._cache import StatisticsCache

__all__ = ["ExactStatisticsBackend", "StatisticsCache", "exact_learners"]
