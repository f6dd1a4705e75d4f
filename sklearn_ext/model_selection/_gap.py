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

__all__ = ["GAP_SPLITS", "GAP_TOLERANCE", "RegimeGap", "measure_gap"]

#: The fewest splits the gap is measured on: the first ones, paired with the
#: tree's models of the same splits.
GAP_SPLITS = 3
#: More splits are measured, in order, until the standard error of the mean
#: paired difference is at most this, the time budget is spent, or every split
#: is measured.
GAP_STDERR = 0.006
#: The fewest splits whose standard error may stop the measurement: from three
#: paired differences it is too noisy to trust (Covertype, 5,000 rows: 0.006
#: after three splits, 0.013 over ten).
GAP_STDERR_SPLITS = 5
#: ``method="auto"`` keeps one pass while the learner's own ``fit`` scores at
#: most this share of its score better (or within the 95 % t-interval of the
#: paired differences); beyond, a search or a study scores the learner's own
#: ``fit`` instead. ``benchmarks/bench_gap_table.py`` measures the panel the
#: rule was chosen from: linear learners lose 0-8 % of their score in one pass
#: (told, kept), networks and ``SGDRegressor`` 15-90 % (turned to ``fit``).
GAP_TOLERANCE = 0.1


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
    stderr : float
        Standard error of the mean paired difference (``nan`` for one split).
    """

    metric: str
    splits: tuple[int, ...]
    fit_score: float
    tree_score: float
    fit_time: float
    stderr: float = math.nan

    @property
    def gap(self) -> float:
        """``fit_score - tree_score``: positive when ``fit`` scores better."""
        return self.fit_score - self.tree_score

    @property
    def is_large(self) -> bool:
        """Whether ``fit`` is better beyond :data:`GAP_TOLERANCE` and noise.

        The gap counts as large when it exceeds both ``GAP_TOLERANCE`` times
        the magnitude of ``fit_score`` and the half-width of the two-sided 95 %
        Student-t interval of the mean paired difference (``stderr`` times the
        t quantile with one degree of freedom fewer than the splits measured:
        12.7 for two splits, 2.26 for ten): one pass is then materially and
        measurably worse than the learner's own ``fit`` on the same folds. One
        split measures no noise and is never large.
        """
        if len(self.splits) < 2 or math.isnan(self.stderr):
            return False
        from scipy.stats import t

        noise = float(t.ppf(0.975, len(self.splits) - 1)) * self.stderr
        return self.gap > max(GAP_TOLERANCE * abs(self.fit_score), noise)

    def as_dict(self) -> dict:
        """JSON-safe fields, for a result, a trial attribute or a summary."""
        return {
            "gap": self.gap,
            "fit_score": self.fit_score,
            "tree_score": self.tree_score,
            "splits": list(self.splits),
            "metric": self.metric,
            "stderr": None if math.isnan(self.stderr) else self.stderr,
            "large": self.is_large,
        }

    def words(self, name: str) -> str:
        """One sentence with the numbers, for the regime note."""
        n = len(self.splits)
        where = f"split {self.splits[0]}" if n == 1 else f"{n} splits"
        better = "better" if self.gap >= 0 else "worse"
        spread = "" if math.isnan(self.stderr) else f" ± {self.stderr:.2g}"
        return (
            f"Measured on {where}: {name}.fit scores {self.fit_score:.4g}, the "
            f"tree's models {self.tree_score:.4g} ({name}.fit {abs(self.gap):.3g}"
            f"{spread} {better})."
        )


def measure_gap(
    task,
    estimator,
    tree_scores: Mapping[int, float],
    metric: str,
    budget: float = math.inf,
):
    """The gap of ``estimator`` on the first splits ``tree_scores`` holds.

    At least :data:`GAP_SPLITS` splits, then more until the standard error of
    the mean paired difference is at most :data:`GAP_STDERR` (over at least
    :data:`GAP_STDERR_SPLITS` splits) or the own fits have taken ``budget``
    seconds.

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
    budget : float, default=inf
        Seconds of own fits after which no further split is measured.

    Returns
    -------
    gap : RegimeGap or None
        ``None`` when no split has a finite tree score, or a fit fails.
    """
    from sklearn_ext.model_selection._backends import _standard_fold

    plan = task.plan
    candidates = [
        s
        for s in range(plan.n_splits)
        if s in tree_scores and math.isfinite(tree_scores[s])
    ]
    splits: list[int] = []
    own: list[float] = []
    fit_time = 0.0
    for split in candidates:
        precise = (
            len(splits) >= GAP_STDERR_SPLITS
            and _stderr(own, splits, tree_scores) <= GAP_STDERR
        )
        if len(splits) >= GAP_SPLITS and (precise or fit_time >= budget):
            break
        leaf = int(plan.leaf_order[split])
        result = _standard_fold(task, estimator, leaf)
        if result.fit_error is not None or not math.isfinite(result.scores[metric]):
            return None
        splits.append(split)
        own.append(result.scores[metric])
        fit_time += result.fit_time + result.score_time
    if not splits:
        return None
    return RegimeGap(
        metric,
        tuple(splits),
        float(np.mean(own)),
        float(np.mean([tree_scores[s] for s in splits])),
        fit_time,
        _stderr(own, splits, tree_scores),
    )


def _stderr(own, splits, tree_scores) -> float:
    """Standard error of the mean paired difference own - tree."""
    if len(splits) < 2:
        return math.nan
    diffs = np.asarray(own) - np.asarray([tree_scores[s] for s in splits])
    return float(np.std(diffs, ddof=1) / math.sqrt(len(diffs)))
