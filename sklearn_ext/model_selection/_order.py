"""Whether the rows are fed in an order related to ``y``.

The tree feeds each fold's nearest chunks last: when rows stored next to each
other share their labels (a file sorted by class, a time series), a one-pass
model has just seen the held-out rows' neighbours, and its score is optimistic
next to the same learner on shuffled rows. The run core checks the order the
rows are fed in (``plan.sample_order``) once per call, search or study, and says
so when the order is plainly related to ``y``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.utils.multiclass import type_of_target

__all__ = ["TreeCVOrderWarning", "order_relation", "warn_about_order"]

#: How far from a random order the feeding order must be to be told: at least
#: this many standard errors, and (for labels) this share of the room above
#: chance taken by neighbours sharing their label (Cohen's kappa of each row's
#: label against its neighbour's: 0 in a random order, 1 when sorted), or (for
#: a continuous target) this correlation of neighbours.
MIN_Z = 8.0
MIN_KAPPA = 0.15
MIN_CORRELATION = 0.3
#: Targets with more distinct values than this are read as continuous.
MAX_LABELS = 50


class TreeCVOrderWarning(UserWarning):
    """The rows are fed in an order related to ``y``: scores may be optimistic.

    Said once per call, search or study when a tree backend feeds the rows in
    their stored order (a fold plan with ``order="fixed"``) and neighbouring
    rows share their labels far more often than in a random order (or, for a
    continuous target, are correlated). Shuffle the rows first: a shuffled
    splitter keeps each chunk's rows in their stored order, and
    ``order="randomized"`` still feeds each fold's neighbouring chunks last
    (``benchmarks/bench_file_order.py`` measures both).

    Examples
    --------
    Rows stored by class are fed so:

    >>> import warnings
    >>> import numpy as np
    >>> from sklearn.datasets import load_digits
    >>> from sklearn_ext.linear_model import PegasosClassifier
    >>> from sklearn_ext.model_selection import TreeCVOrderWarning, tree_cross_validate
    >>> X, y = load_digits(return_X_y=True)
    >>> by_class = np.argsort(y, kind="stable")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always", TreeCVOrderWarning)
    ...     _ = tree_cross_validate(PegasosClassifier(), X[by_class], y[by_class])
    >>> [w.category.__name__ for w in caught if w.category is TreeCVOrderWarning]
    ['TreeCVOrderWarning']
    """


def order_relation(y_fed) -> str | None:
    """How the feeding order relates to ``y``, in words, or ``None``.

    Parameters
    ----------
    y_fed : array-like of shape (n_samples,)
        The targets in the order the rows are fed.

    Returns
    -------
    words : str or None
        ``None`` when the order looks random with respect to ``y``.
    """
    y = np.asarray(y_fed)
    n = y.shape[0]
    if y.ndim != 1 or n < 20:
        return None
    kind = type_of_target(y)
    labels = kind in ("binary", "multiclass") and np.unique(y).shape[0] <= MAX_LABELS
    if labels:
        same = float(np.mean(y[1:] == y[:-1]))
        _, counts = np.unique(y, return_counts=True)
        random = float(np.sum((counts / n) ** 2))
        error = math.sqrt(max(random * (1 - random), 1e-12) / (n - 1))
        kappa = (same - random) / max(1.0 - random, 1e-12)
        if kappa >= MIN_KAPPA and (same - random) / error >= MIN_Z:
            return (
                f"neighbouring rows share their label {same:.1%} of the time, "
                f"against {random:.1%} in a random order"
            )
        return None
    if y.dtype.kind in "biuf" and np.std(y) > 0:
        r = float(np.corrcoef(y[1:], y[:-1])[0, 1])
        if r >= MIN_CORRELATION and r * math.sqrt(n) >= MIN_Z:
            return f"neighbouring rows' targets correlate ({r:.2f})"
    return None


def warn_about_order(words: str, stacklevel: int = 2) -> None:
    """Say that the rows are fed in an order related to ``y``, and what to do."""
    warnings.warn(
        f"The rows are fed in an order related to y: {words}. The tree feeds "
        "each fold's neighbouring rows last, so one-pass scores may be "
        "optimistic next to the same learner on shuffled rows. Shuffle the "
        "rows first (sklearn.utils.shuffle). A shuffled splitter helps only "
        "partly (it keeps each chunk's rows in their stored order) and "
        "order='randomized' does not (it shuffles each update's rows, but each "
        "fold's neighbouring chunks are still fed last).",
        TreeCVOrderWarning,
        stacklevel=stacklevel,
    )
