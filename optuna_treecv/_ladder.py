"""``report="levels"``: the tree's rungs as a trial's intermediate values.

Walked level by level (:meth:`RunCore.run_levels`), the tree gives after its
``l``-th level a complete ``2**l``-fold CV estimate over all rows: every row
scored by a model that never saw it, trained on a fraction ``1 - 2**-l`` of
the data, after ``l`` passes. Before rung 1 come :data:`EARLY_RUNGS` *early
rungs*: the root's left child, scored on the left half while it is fed the
right half, after a quarter (about ``n / 4`` rows: the quarter rung) and all of
that feed (``n / 2``: the half rung), honest hold-out estimates over half the
rows. A trial reports the early rungs at steps 1 and 2 and rung ``l`` at step
``l + 2``, so a pruner decides after a quarter of a pass on ``n / 2`` held-out
rows, not after about one pass on one fold's ``n / k``.
"""

from __future__ import annotations

import copy
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import optuna

from optuna_treecv._fold_scores import scores_layout
from sklearn_ext.model_selection._levels import EARLY_RUNGS, n_levels

if TYPE_CHECKING:
    from optuna.study import Study
    from optuna.trial import BaseTrial, FrozenTrial

    from sklearn_ext.model_selection import FoldPlan
    from sklearn_ext.model_selection._backends import LeafTable
    from sklearn_ext.model_selection._core import Resolved, RunCore
    from sklearn_ext.model_selection._levels import LevelEstimate

__all__ = [
    "LevelReports",
    "RungPruner",
    "n_steps",
    "pruner_mismatch",
    "reported_levels",
    "step_of",
]


def n_steps(n_splits: int) -> int:
    """The steps ``report="levels"`` may report at: the early rungs and each rung.

    Examples
    --------
    >>> from optuna_treecv._ladder import n_steps
    >>> n_steps(16), n_steps(2)
    (6, 3)
    """
    return n_levels(n_splits) + EARLY_RUNGS


def step_of(estimate: LevelEstimate) -> int:
    """The step of a rung: 1 for the quarter rung, 2 for the half rung,
    ``level + 2`` for level ``level``. An engine that cannot pause a feed (the
    Python tree) has the half rung only, reported at its own step (2), so a
    step means the same rows fed in every trial.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from optuna_treecv._ladder import step_of
    >>> step_of(SimpleNamespace(level=1, partial=True, feed_share=0.5))
    1
    >>> step_of(SimpleNamespace(level=1, partial=True, feed_share=1.0))
    2
    >>> step_of(SimpleNamespace(level=3, partial=False))
    5
    """
    if estimate.partial:  # share 1 / 2**j: j steps before the half rung's
        return EARLY_RUNGS - round(-math.log2(estimate.feed_share))
    return int(estimate.level) + EARLY_RUNGS


def reported_levels(n_splits: int, max_reports: int) -> frozenset[int]:
    """The steps ``report="levels"`` reports at: all, or the first and the last.

    A tree has ``ceil(log2(k)) + 2`` steps, the early rungs' and one per rung
    (22 for leave-one-out on a million rows), so all are reported unless
    ``max_reports`` is smaller: then the first ``max_reports - 1`` and the
    final one.

    Examples
    --------
    >>> from optuna_treecv._ladder import reported_levels
    >>> sorted(reported_levels(16, 32))
    [1, 2, 3, 4, 5, 6]
    >>> sorted(reported_levels(1_000_000, 4))
    [1, 2, 3, 22]
    """
    last = n_steps(n_splits)
    if last <= max_reports:
        return frozenset(range(1, last + 1))
    return frozenset([*range(1, max_reports), last])


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
        #: The rungs seen: ``(rung, n_parts, score, n_samples_fed)``, ``rung``
        #: 0.25 and 0.5 for the early rungs, else the level.
        self.rungs: list[tuple[float, int, float, int]] = []

    def run(self, core: RunCore, resolved: Resolved, plan: FoldPlan) -> LeafTable:
        """The leaves of ``resolved`` on ``plan``, reporting each rung on the way.

        Raises :class:`optuna.TrialPruned` when the pruner says so after a
        rung (the early rungs included); the level generator is closed then, so
        no further row is fed.
        The final rung is reported too (``HyperbandPruner``'s
        ``max_resource="auto"`` reads it) but never pruned on: its work is done.
        """
        k = plan.n_splits
        steps = reported_levels(k, self.max_reports)
        levels = core.run_levels(resolved, plan=plan, early_rungs=EARLY_RUNGS)
        try:
            for estimate in levels:
                score = _first_score(estimate)
                self.rungs.append(_rung_of(estimate, score))
                if self.progress is not None:
                    done = k if estimate.final else 0
                    self.progress(self.trial, done, k, int(estimate.n_samples_fed))
                asks = self.report and step_of(estimate) in steps
                if asks:
                    self.trial.report(score, step=step_of(estimate))
                if estimate.final:
                    return estimate.leaves
                if asks and self.trial.should_prune():
                    raise optuna.TrialPruned(_pruned_message(estimate, k))
        finally:
            levels.close()
        raise RuntimeError("The tree's levels ended before the leaves' level.")

    def summary(self) -> dict[str, Any]:
        """The ``cv`` keys of the rungs: ``level_rungs`` (0.25 and 0.5 for the
        early rungs, then the levels), ``level_scores``, ``level_n_samples_fed``."""
        return {
            "level_rungs": [rung[0] for rung in self.rungs],
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


def _rung_of(estimate: LevelEstimate, score: float) -> tuple[float, int, float, int]:
    # ``rung``: 0.25 or 0.5 for an early rung, else the (integer) level.
    return (estimate.rung, int(estimate.n_parts), score, int(estimate.n_samples_fed))


def _pruned_message(estimate: LevelEstimate, k: int) -> str:
    if estimate.partial:
        return (
            f"Pruned after early rung {estimate.rung:g}, before rung 1 of "
            f"{n_levels(k)} (a hold-out estimate over "
            f"{int(estimate.part_sizes.sum())} rows, {estimate.n_samples_fed} rows "
            "fed)."
        )
    return (
        f"Pruned after rung {estimate.level} of {n_levels(k)} "
        f"(a {estimate.n_parts}-part CV over all rows)."
    )


def _first_score(estimate: LevelEstimate) -> float:
    """The rung's score of the objective's one metric."""
    scores = estimate.scores
    return float(scores["score"] if "score" in scores else next(iter(scores.values())))


class RungPruner(optuna.pruners.BasePruner):
    """Let a pruner judge each rung of the ladder on its own value.

    :class:`~optuna.pruners.MedianPruner` and
    :class:`~optuna.pruners.PercentilePruner` compare a trial's *best*
    intermediate value so far with the other trials' values at the current
    step: right for one learning curve, wrong for ``report="levels"``, whose
    steps are different estimates (a hold-out on half the rows after a quarter
    of a pass, then 2-, 4-, ... fold CVs). Where an early rung reads higher
    than the later ones for every good trial, a trial past it carries that
    value into every later check and is never pruned again. This wrapper shows
    the wrapped pruner the trial with its earlier steps' values masked (NaN,
    which those pruners skip), so each check compares the trial's value at the
    step with the others' at the same step. The steps themselves are kept
    (``n_warmup_steps`` and ``interval_steps`` still count them); every other
    trial is shown as it is.

    Parameters
    ----------
    pruner : optuna.pruners.BasePruner
        The pruner deciding, e.g. ``PercentilePruner(10.0)``. One that reads
        only the value at its step (``SuccessiveHalvingPruner``,
        ``HyperbandPruner``) decides as it would unwrapped.

    See Also
    --------
    optuna_treecv.TreeCVObjective : ``report="levels"`` reports the rungs.

    Examples
    --------
    >>> import optuna
    >>> from optuna.distributions import FloatDistribution
    >>> from sklearn.datasets import make_classification
    >>> from optuna_treecv import RungPruner, TreeCVObjective
    >>> from sklearn_ext import PegasosClassifier
    >>> X, y = make_classification(n_samples=2000, random_state=0)
    >>> objective = TreeCVObjective(
    ...     PegasosClassifier(),
    ...     {"alpha": FloatDistribution(1e-6, 1e1, log=True)},
    ...     X, y, cv=16, report="levels",
    ... )
    >>> optuna.logging.set_verbosity(optuna.logging.WARNING)
    >>> study = optuna.create_study(
    ...     direction="maximize",
    ...     sampler=optuna.samplers.TPESampler(seed=0),
    ...     pruner=RungPruner(optuna.pruners.PercentilePruner(25.0)),
    ... )
    >>> study.optimize(objective, n_trials=20)
    >>> pruned = study.get_trials(states=[optuna.trial.TrialState.PRUNED])
    >>> len(pruned) > 0
    True
    """

    def __init__(self, pruner: optuna.pruners.BasePruner) -> None:
        if not isinstance(pruner, optuna.pruners.BasePruner):
            raise TypeError(
                "RungPruner's 'pruner' must be an optuna.pruners.BasePruner; got "
                f"{pruner!r}."
            )
        self.pruner = pruner

    def prune(self, study: Study, trial: FrozenTrial) -> bool:
        step = trial.last_step
        if step is None:
            return self.pruner.prune(study, trial)
        view = copy.copy(trial)
        view.intermediate_values = {
            s: (value if s == step else math.nan)
            for s, value in trial.intermediate_values.items()
        }
        return self.pruner.prune(study, view)

    def __repr__(self) -> str:
        return f"RungPruner({self.pruner!r})"


def pruner_mismatch(report: str | None, pruner) -> str | None:
    """What is wrong with ``pruner`` for ``report``, or ``None``.

    ``WilcoxonPruner`` compares per-instance values (``report="per_fold"``);
    a bare ``MedianPruner`` or ``PercentilePruner`` compares a trial's best
    value so far, which the rungs of ``report="levels"``, different
    estimates, mislead (:class:`RungPruner`).

    Examples
    --------
    >>> import optuna
    >>> from optuna_treecv._ladder import RungPruner, pruner_mismatch
    >>> print(pruner_mismatch("levels", optuna.pruners.MedianPruner()))
    ... # doctest: +ELLIPSIS
    MedianPruner compares a trial's best value so far...
    >>> pruner_mismatch("levels", RungPruner(optuna.pruners.MedianPruner())) is None
    True
    """
    if report in ("running_mean", "levels") and isinstance(
        pruner, optuna.pruners.WilcoxonPruner
    ):
        return (
            "WilcoxonPruner compares per-instance values; use "
            "TreeCVObjective(..., report='per_fold') with it."
        )
    if report == "levels" and isinstance(pruner, optuna.pruners.PercentilePruner):
        name = type(pruner).__name__
        return (
            f"{name} compares a trial's best value so far with the others' values "
            "at the step, and report='levels' reports a different estimate at each "
            "step: a trial whose early rung reads high is then never pruned at a "
            f"later one. Wrap it: optuna_treecv.RungPruner({name}(...)) judges "
            "each rung on its own value."
        )
    return None
