"""A trial's per-fold scores: today's ``split{i}_test_score`` keys, or one array.

Up to :data:`COMPACT_FOLDS` folds, the ``cv`` user attribute of a
:class:`~optuna_treecv.TreeCVObjective` trial holds one key per fold, which
the dashboard shows as it is. Beyond that, one key per fold would make a
leave-one-out trial on half a million rows a 50 MB attribute: the scores go
into one compressed array, ``cv["test_scores"]``, that :func:`fold_scores`
reads back.
"""

from __future__ import annotations

import base64
import math
import re
import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial

__all__ = ["COMPACT_FOLDS", "fold_scores", "encode_scores", "decode_scores"]

#: Above this many folds the ``cv`` attribute holds one compressed array of
#: scores (``test_scores``) instead of a ``split{i}_test_score`` key per fold.
COMPACT_FOLDS = 100
#: The format tag of a compressed score array.
FORMAT = "treecv-fold-scores-1"
_SPLIT_KEY = re.compile(r"split(\d+)_test_score\Z")


def encode_scores(scores: np.ndarray) -> dict[str, Any]:
    """One JSON-safe dict holding ``scores`` (float64, NaN kept) exactly.

    Scores that take few distinct values (accuracy on small folds, 0 or 1 for
    leave-one-out) are stored as the distinct values and one small code per
    fold (one byte up to 256 values, two when a third of the folds or fewer
    are distinct); others as the float64 array. Either way compressed with zlib and
    written as base64 text, so any Optuna storage takes it.
    """
    scores = np.ascontiguousarray(scores, dtype="<f8")
    values, codes = np.unique(scores, return_inverse=True)
    encoded: dict[str, Any] = {"format": FORMAT, "n_splits": int(scores.size)}
    # Each distinct value costs about 24 characters of text: codes pay off
    # when values repeat (a third of the folds or fewer are distinct).
    if values.size <= 2**8 or (values.size <= 2**16 and 3 * values.size <= scores.size):
        dtype = "<u1" if values.size <= 2**8 else "<u2"
        # The distinct values as text: JSON has no NaN, Python's json does.
        encoded["values"] = [repr(float(v)) for v in values]
        raw = codes.astype(dtype).tobytes()
    else:
        dtype = "<f8"
        raw = scores.tobytes()
    encoded["dtype"] = dtype
    encoded["data"] = base64.b64encode(zlib.compress(raw, 6)).decode("ascii")
    return encoded


def decode_scores(encoded: Mapping[str, Any]) -> np.ndarray:
    """The float64 array that :func:`encode_scores` stored."""
    if encoded.get("format") != FORMAT:
        raise ValueError(
            f"Not a fold-score array of optuna-treecv (format "
            f"{encoded.get('format')!r}, expected {FORMAT!r})."
        )
    raw = zlib.decompress(base64.b64decode(encoded["data"]))
    data = np.frombuffer(raw, dtype=np.dtype(encoded["dtype"]))
    if "values" in encoded:
        values = np.array([float(v) for v in encoded["values"]], dtype=np.float64)
        data = values[data]
    scores = np.array(data, dtype=np.float64)
    if scores.size != int(encoded["n_splits"]):
        raise ValueError(
            f"The fold-score array holds {scores.size} scores, its record says "
            f"{encoded['n_splits']}."
        )
    return scores


def scores_layout(scores: np.ndarray, *, finished_only: bool = True) -> dict[str, Any]:
    """The ``cv`` keys holding ``scores`` (one per split).

    Up to :data:`COMPACT_FOLDS` folds, ``split{i}_test_score`` for each fold
    (only those scored, not NaN, with ``finished_only``: a pruned trial's), as
    scikit-learn's ``cv_results_`` names them; beyond, ``test_scores``.
    """
    if scores.size <= COMPACT_FOLDS:
        return {
            f"split{i}_test_score": float(score)
            for i, score in enumerate(scores)
            if not (finished_only and math.isnan(score))
        }
    return {"test_scores": encode_scores(scores)}


def fold_scores(trial: FrozenTrial | Mapping[str, Any]) -> np.ndarray:
    """The test score of every fold of a :class:`~optuna_treecv.TreeCVObjective` trial.

    Reads the trial's ``cv`` user attribute in either layout: one
    ``split{i}_test_score`` key per fold (up to :data:`COMPACT_FOLDS` folds,
    what the dashboard shows), or one compressed array (``test_scores``,
    beyond). Fold ``i`` is the splitter's ``i``-th split whatever order the
    folds ran in.

    Parameters
    ----------
    trial : optuna.trial.FrozenTrial or dict
        A trial (``study.trials[i]``, ``study.best_trial``), or its ``cv``
        attribute.

    Returns
    -------
    scores : ndarray of shape (n_splits,)
        One score per fold; ``nan`` for the folds a pruned trial did not
        reach.

    Raises
    ------
    ValueError
        If the trial holds no fold scores of a ``TreeCVObjective``.

    Examples
    --------
    >>> import optuna
    >>> from optuna.distributions import FloatDistribution
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import SGDClassifier
    >>> from optuna_treecv import TreeCVObjective, fold_scores
    >>> X, y = load_iris(return_X_y=True)
    >>> objective = TreeCVObjective(
    ...     SGDClassifier(random_state=0),
    ...     {"alpha": FloatDistribution(1e-5, 1e-1, log=True)},
    ...     X, y, cv=150,
    ... )
    >>> optuna.logging.set_verbosity(optuna.logging.WARNING)
    >>> study = optuna.create_study(direction="maximize")
    >>> study.optimize(objective, n_trials=1)
    >>> scores = fold_scores(study.best_trial)  # leave-one-out: 150 folds
    >>> scores.shape, bool(scores.mean() == study.best_value)
    ((150,), True)
    >>> sorted(study.best_trial.user_attrs["cv"]["test_scores"])
    ['data', 'dtype', 'format', 'n_splits', 'values']
    """
    cv = getattr(trial, "user_attrs", trial)
    cv = cv.get("cv", cv) if isinstance(cv, Mapping) else None
    if not isinstance(cv, Mapping):
        raise ValueError("The trial has no 'cv' attribute of a TreeCVObjective.")
    if isinstance(cv.get("test_scores"), Mapping):
        return decode_scores(cv["test_scores"])
    found = {
        int(match.group(1)): float(value)
        for key, value in cv.items()
        if (match := _SPLIT_KEY.match(key))
    }
    n_splits = cv.get("n_splits", max(found, default=-1) + 1)
    if not found and not n_splits:
        raise ValueError("The trial's 'cv' attribute holds no fold scores.")
    scores = np.full(int(n_splits), np.nan)
    for split, value in found.items():
        scores[split] = value
    return scores
