"""The labels of semi-supervised anomaly detection, and the AUROC they score."""

from __future__ import annotations

from numbers import Real

import numpy as np

__all__ = ["auroc", "training_labels"]


def auroc(positive: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve, by counting ordered (positive, negative) pairs.

    The AUROC is the fraction of (positive, negative) pairs that ``scores``
    orders correctly, ties counting one half. The counts are exact integers
    (from a sort of the negatives' scores), so the value equals
    :func:`sklearn.metrics.roc_auc_score` up to rounding. Returns NaN when
    ``positive`` holds a single class.
    """
    positive = np.asarray(positive, dtype=bool)
    scores = np.asarray(scores, dtype=np.float64)
    pos, neg = scores[positive], np.sort(scores[~positive])
    if pos.shape[0] == 0 or neg.shape[0] == 0:
        return float("nan")
    below = np.searchsorted(neg, pos, side="left").sum()
    below_or_tied = np.searchsorted(neg, pos, side="right").sum()
    return float((int(below) + int(below_or_tied)) / (2 * pos.shape[0] * neg.shape[0]))


def training_labels(y, labeled, n_samples: int, owner: str) -> np.ndarray:
    """The labels training sees: ``y`` where ``labeled``, 0 (unlabelled) elsewhere.

    Parameters
    ----------
    y : array-like of shape (n_samples,) or None
        Labels in {-1, 0, +1}; ``None`` means all rows are unlabelled.
    labeled : array-like of bool of shape (n_samples,) or None
        Which labels of ``y`` are revealed; ``None`` reveals all of them.
    n_samples : int
        Number of rows of ``X``.
    owner : str
        Name used in error messages.

    Returns
    -------
    y_train : ndarray of float64 of shape (n_samples,)
    """
    if y is None:
        if labeled is not None:
            raise ValueError(
                f"{owner} got a 'labeled' mask but no y; pass the labels as y."
            )
        return np.zeros(n_samples, dtype=np.float64)
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"y must be a 1d array of labels; got shape {y.shape}.")
    if y.shape[0] != n_samples:
        raise ValueError(f"y has {y.shape[0]} labels but X has {n_samples} samples.")
    if y.dtype.kind in "biuf":
        bad = [v for v in np.unique(y).tolist() if v not in (-1, 0, 1)]
    else:
        bad = sorted(
            {v for v in y.tolist() if not (isinstance(v, Real) and v in (-1, 0, 1))},
            key=repr,
        )
    if bad:
        raise ValueError(
            f"y of {owner} must contain only the labels +1 (normal), -1 (anomaly) "
            f"and 0 (unlabelled). Got the values {bad!r} in y."
        )
    y_train = y.astype(np.float64)
    if labeled is not None:
        mask = np.asarray(labeled)
        if mask.ndim != 1 or mask.shape[0] != n_samples:
            raise ValueError(
                f"The 'labeled' mask of {owner} must have shape ({n_samples},). "
                f"Got shape {mask.shape} instead."
            )
        if mask.dtype != bool:
            if mask.dtype.kind not in "iu" or not np.isin(mask, (0, 1)).all():
                raise ValueError(
                    f"The 'labeled' mask of {owner} must be an array of bool. Got "
                    f"dtype {mask.dtype} instead."
                )
            mask = mask.astype(bool)
        y_train = np.where(mask, y_train, 0.0)
    return np.ascontiguousarray(y_train)
