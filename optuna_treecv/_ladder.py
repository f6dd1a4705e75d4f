"""``report="levels"``: the tree's rungs as a trial's intermediate values.

Walked level by level (:meth:`RunCore.run_levels`), the tree gives after its
``l``-th level a complete ``2**l``-fold CV estimate over all rows: every row
scored by a model that never saw it, trained on a fraction ``1 - 2**-l`` of
the data, after ``l`` passes. A trial reports these rungs at steps
``1, 2, ...``, so a pruner decides on a CV over all rows after one pass, not on
one fold's score on ``n / k`` rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import optuna

from optuna_treecv._fold_scores import scores_layout

if TYPE_CHECKING:
    from optuna.trial import BaseTrial

    from sklearn_ext.model_selection import FoldPlan
    from sklearn_ext.model_selection._backends import LeafTable
    from sklearn_ext.model_selection._core import Resolved, RunCore
    from sklearn_ext.model_selection._levels import LevelEstimate

__all__ = ["LevelReports", "n_levels", "reported_levels"]


def n_levels(n_splits: int) -> int:
    """The rungs of a ``n_splits``-fold tree: its depth, ``ceil(log2(k))``.

    Examples
    --------
    >>> from optuna_treecv._ladder import n_levels
    >>> n_levels(16), n_levels(10), n_levels(2)
    (4, 4, 1)
    """
    return max(1, int(n_splits - 1).bit_length())


def reported_levels(n_splits: int, max_reports: int) -> frozenset[int]:
    """The rungs ``report="levels"`` reports: all, or the first and the last.

    A tree has ``ceil(log2(k))`` rungs (20 for leave-one-out on a million
    rows), so all are reported unless ``max_reports`` is smaller: then the
    first ``max_reports - 1`` and the final one.

    Examples
    --------
    >>> from optuna_treecv._ladder import reported_levels
    >>> sorted(reported_levels(16, 32))
    [1, 2, 3, 4]
    >>> sorted(reported_levels(1_000_000, 4))
    [1, 2, 3, 20]
    """
    depth = n_levels(n_splits)
    if depth <= max_reports:
        return frozenset(range(1, depth + 1))
    return frozenset([*range(1, max_reports), depth])


class LevelReports:
    """Run one trial's tree level by level: report each rung, prune, record.

    Parameters
    ----------
    trial : optuna.trial.BaseTrial
        The trial reported to.
    objective : TreeCVObjective
        Gives ``max_reports`` and the ``progress`` callback.
    report : bool
        Whether to report and ask ``should_prune`` (not under a
        ``NopPruner``); the rungs are recorded either way.
    """

    def __init__(self, trial: BaseTrial, objective, report: bool = True) -> None:
        self.trial = trial
        self.report = report
        self.max_reports = objective.max_reports
        self.progress = objective.progress
        #: The rungs seen: ``(level, n_parts, score, n_samples_fed)``.
        self.rungs: list[tuple[int, int, float, int]] = []

    def run(self, core: RunCore, resolved: Resolved, plan: FoldPlan) -> LeafTable:
        """The leaves of ``resolved`` on ``plan``, reporting each rung on the way.

        Raises :class:`optuna.TrialPruned` when the pruner says so after a
        rung; the level generator is closed then, so no further row is fed.
        The final rung is reported too (``HyperbandPruner``'s
        ``max_resource="auto"`` reads it) but never pruned on: its work is done.
        """
        k = plan.n_splits
        steps = reported_levels(k, self.max_reports)
        levels = core.run_levels(resolved, plan=plan)
        try:
            for estimate in levels:
                score = _first_score(estimate)
                self.rungs.append(
                    (
                        int(estimate.level),
                        int(estimate.n_parts),
                        score,
                        int(estimate.n_samples_fed),
                    )
                )
                if self.progress is not None:
                    done = k if estimate.final else 0
                    self.progress(self.trial, done, k, int(estimate.n_samples_fed))
                if self.report and estimate.level in steps:
                    self.trial.report(score, step=int(estimate.level))
                if estimate.final:
                    return estimate.leaves
                asks = self.report and estimate.level in steps
                if asks and self.trial.should_prune():
                    raise optuna.TrialPruned(
                        f"Pruned after rung {estimate.level} of {n_levels(k)} "
                        f"(a {estimate.n_parts}-part CV over all rows)."
                    )
        finally:
            levels.close()
        raise RuntimeError("The tree's levels ended before the leaves' level.")

    def summary(self) -> dict[str, Any]:
        """The ``cv`` keys of the rungs: ``level_scores``, ``level_n_samples_fed``."""
        return {
            "level_scores": [rung[2] for rung in self.rungs],
            "level_n_samples_fed": [rung[3] for rung in self.rungs],
        }

    def record(self, resolved: Resolved, n_splits: int, wall_time: float) -> dict:
        """The details of a trial pruned after a rung: no fold finished."""
        details: dict[str, Any] = scores_layout(np.full(n_splits, np.nan))
        details.update(
            n_splits=n_splits,
            n_samples_fed=self.rungs[-1][3] if self.rungs else 0,
            cv_time=wall_time,
            backend=resolved.backend.name,
            regime=resolved.regime,
            pruned_at_level=self.rungs[-1][0] if self.rungs else 0,
        )
        details.update(self.summary())
        return details


def _first_score(estimate: LevelEstimate) -> float:
    """The rung's score of the objective's one metric."""
    scores = estimate.scores
    return float(scores["score"] if "score" in scores else next(iter(scores.values())))
