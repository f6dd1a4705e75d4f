"""How far one ordered pass is from the learner's own ``fit``, measured.

When a tree scores a learner whose ``fit`` trains differently (several shuffled
epochs, early stopping, a pipeline fitting each step on all rows), the run core
measures the difference once per call, search or study: the learner's own
``fit`` on the training rows of the first splits (the splitter's own rows, as
``cross_validate`` fits them), scored on the same held-out rows as the tree's
models of those splits. The paired difference is what ``method="standard"``
would change on those folds; it is told in the regime note and recorded with
the results.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

__all__ = ["GAP_SPLITS", "RegimeGap", "measure_gap"]

#: How many splits the gap is measured on: the first ones, paired with the
#: tree's models of the same splits.
GAP_SPLITS = 2


@dataclass(frozen=True)
class RegimeGap:
    """The learner's own ``fit`` against the tree's one pass, on the same folds.

    Attributes
    ----------
    metric : str
        The score compared (``"score"`` for one metric).
    splits : tuple of int
        The splits measured.
    fit_score : float
        Mean score of the learner's own ``fit`` on those splits.
    tree_score : float
        Mean score of the tree's models on the same splits.
    fit_time : float
        Seconds the learner's own fits took.
    """

    metric: str
    splits: tuple[int, ...]
    fit_score: float
    tree_score: float
    fit_time: float

    @property
    def gap(self) -> float:
        """``fit_score - tree_score``: positive when ``fit`` scores better."""
        return self.fit_score - self.tree_score

    def as_dict(self) -> dict:
        """JSON-safe fields, for a result, a trial attribute or a summary."""
        return {
            "gap": self.gap,
            "fit_score": self.fit_score,
            "tree_score": self.tree_score,
            "splits": list(self.splits),
            "metric": self.metric,
        }

    def words(self, name: str) -> str:
        """One sentence with the numbers, for the regime note."""
        where = " and ".join(str(s) for s in self.splits)
        better = "better" if self.gap >= 0 else "worse"
        return (
            f"Measured on split{'s' if len(self.splits) > 1 else ''} {where}: "
            f"{name}.fit scores {self.fit_score:.4g}, the tree's models "
            f"{self.tree_score:.4g} ({name}.fit {abs(self.gap):.3g} {better})."
        )


def measure_gap(task, estimator, tree_scores: Mapping[int, float], metric: str):
    """The gap of ``estimator`` on the first splits ``tree_scores`` holds.

    Parameters
    ----------
    task : CVTask
        A task of the standard backend on the run's plan (rows as given).
    estimator : estimator object
        The learner, whose own ``fit`` is measured.
    tree_scores : mapping of int to float
        The tree's score of each split that finished.
    metric : str
        The score compared.

    Returns
    -------
    gap : RegimeGap or None
        ``None`` when no split has a finite tree score, or a fit fails.
    """
    from sklearn_ext.model_selection._backends import _standard_fold

    plan = task.plan
    splits = [
        s
        for s in range(plan.n_splits)
        if s in tree_scores and math.isfinite(tree_scores[s])
    ][:GAP_SPLITS]
    if not splits:
        return None
    own, fit_time = [], 0.0
    for split in splits:
        leaf = int(plan.leaf_order[split])
        result = _standard_fold(task, estimator, leaf)
        if result.fit_error is not None or not math.isfinite(result.scores[metric]):
            return None
        own.append(result.scores[metric])
        fit_time += result.fit_time
    return RegimeGap(
        metric,
        tuple(splits),
        float(np.mean(own)),
        float(np.mean([tree_scores[s] for s in splits])),
        fit_time,
    )
