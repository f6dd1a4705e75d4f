"""Racing a search's candidates up the tree's ladder of CV estimates.

Walked level by level (:meth:`RunCore.run_levels`), a candidate's tree gives
after level ``l`` a complete ``2**l``-fold CV over all rows. A racing
:class:`~sklearn_ext.TreeCVSearchCV` advances every candidate one rung at a
time and, after each rung but the last, drops the candidates whose rung
estimate is clearly worse than the leader's: a one-sided paired t-test over
the rung's parts (the same held-out rows for every candidate), its variance
moderated across the candidates, in the spirit of CVST (Krueger, Panknin and
Braun, JMLR 16, 2015), which drops configurations by sequential tests on
growing subsets. Only the survivors run to the leaves and get fold scores.

The race also decides at the *early rungs*, before rung 1
(:data:`~._levels.EARLY_RUNGS`): every candidate's model trained on the first
half of the right half of the rows (the quarter rung, about ``n / 4`` rows fed)
and on all of it (the half rung, ``n / 2``), scored on the left half. An early
rung has one part, so the paired test over parts cannot run. On accuracy,
:func:`half_rung_test` bounds the variance of the per-row differences by the
two error rates (no per-row data needed); on any other metric the early rungs
are scored chunk by chunk and :func:`early_rung_test` compares them, unpaired.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from scipy import stats

from sklearn_ext.model_selection._backends import LeafTable
from sklearn_ext.model_selection._core import Resolved, RunCore
from sklearn_ext.model_selection._levels import EARLY_RUNGS, LevelEstimate, n_levels

__all__ = [
    "PRIOR_DF",
    "Racer",
    "race",
    "drop_test",
    "early_rung_test",
    "half_rung_test",
]

#: The weight, in parts, of the spread shared by the candidates of a rung in
#: each candidate's variance (the prior degrees of freedom of the moderated
#: t-test): rung 1 has two parts, one degree of freedom of its own.
PRIOR_DF = 4


@dataclass
class Racer:
    """One candidate in the race: its level generator and how far it got."""

    index: int
    resolved: Resolved
    levels: Any = None
    last: LevelEstimate | None = None
    #: The rung at which the race dropped it (``None``: it ran to the leaves;
    #: 0.25 and 0.5: the early rungs).
    dropped_at: float | None = None
    #: The leaves of a candidate that ran to them (failed fits: ``error_score``).
    leaves: LeafTable | None = None
    #: The raced metric's estimate at each rung reached.
    rungs: list[float] = field(default_factory=list)
    #: The name of the raced metric in the rungs' ``scores``.
    key: str = "score"

    @property
    def running(self) -> bool:
        return self.dropped_at is None and self.leaves is None


def race(
    core: RunCore,
    resolved: list[Resolved],
    *,
    metric: str | None,
    alpha: float,
    n_jobs=None,
    say=None,
) -> list[Racer]:
    """Run ``resolved`` rung by rung, dropping the clearly worse after each.

    ``metric`` names the score raced on (``None``: the one metric). Each rung
    of the running candidates is computed in parallel threads (``n_jobs``).
    ``say(message)`` hears what each rung dropped. Returns one :class:`Racer`
    per candidate, in order: survivors hold their ``leaves``, dropped ones
    their last rung.
    """
    # Accuracy is tested on its own bound; any other metric chunk by chunk.
    chunked = core.metric != "accuracy"
    racers = [
        Racer(i, r, core.run_levels(r, early_rungs=EARLY_RUNGS, early_chunks=chunked))
        for i, r in enumerate(resolved)
    ]
    parallel = Parallel(n_jobs=n_jobs, require="sharedmem")
    try:
        while any(r.running for r in racers):
            running = [r for r in racers if r.running]
            parallel(delayed(_advance)(r, metric) for r in running)
            rung = [r for r in running if r.running and r.last is not None]
            dropped = _drop(rung, alpha / _n_tests(core))
            if say is not None and rung:
                say(
                    f"[race] rung {rung[0].last.rung}: dropped {len(dropped)} of "
                    f"{len(rung)} candidates"
                )
    finally:
        for racer in racers:
            racer.levels.close()
    return racers


def _n_tests(core: RunCore) -> int:
    """The rungs that test (all but the leaves', and the early rungs): the
    Bonferroni divisor. An engine that cannot pause a feed has fewer early
    rungs than asked for: counting them all is conservative."""
    return max(1, n_levels(core.plan) - 1 + EARLY_RUNGS)


def _advance(racer: Racer, metric: str | None) -> None:
    """One more rung of ``racer`` (a failed fit comes as a final rung whose
    leaves score ``error_score``, made by the run core)."""
    try:
        estimate = next(racer.levels)
    except StopIteration:
        raise RuntimeError("The tree's levels ended before the leaves.") from None
    racer.last = estimate
    racer.key = _metric_key(estimate, metric)
    racer.rungs.append(float(estimate.scores[racer.key]))
    if estimate.final:
        racer.leaves = estimate.leaves


def _metric_key(estimate: LevelEstimate, metric: str | None) -> str:
    names = [name for name in estimate.scores if not name.startswith("train:")]
    if metric is not None and metric in names:
        return metric
    if metric is None and len(names) == 1:
        return names[0]
    raise ValueError(
        "Racing needs the one metric to race on: with several metrics, 'refit' "
        f"must name one of {names}. Got refit={metric!r}."
    )


def _drop(rung: list[Racer], alpha: float) -> list[Racer]:
    """Drop (mark) the racers of one rung clearly worse than its leader."""
    comparable = [r for r in rung if r.last is not None and not r.last.final]
    by_rung: dict[float, list[Racer]] = {}
    for racer in comparable:
        by_rung.setdefault(racer.last.rung, []).append(racer)
    dropped = []
    for level, racers in by_rung.items():
        scores = np.array([r.rungs[-1] for r in racers])
        if len(racers) < 2 or not np.isfinite(scores).any():
            continue
        leader = racers[int(np.nanargmax(scores))]
        others = [r for r in racers if r is not leader]
        parts = [_parts(leader)] + [_parts(r) for r in others]
        if leader.last.partial:
            worse = _early_test([leader, *others], parts, alpha)[1:]
        else:
            worse = drop_test(parts, leader.last.part_sizes, alpha)[1:]
        for racer, drop in zip(others, worse, strict=True):
            if drop:
                racer.dropped_at = level
                dropped.append(racer)
    return dropped


def _early_test(racers: list[Racer], parts: list[np.ndarray], alpha: float):
    """Which racers are clearly worse than the first at an early rung (one
    part): accuracy by :func:`half_rung_test`, another metric by
    :func:`early_rung_test` over the held-out half's chunks (the same rows for
    every racer); no evidence, no drop, where there are fewer than two chunks."""
    leader = racers[0].last
    if leader.chunk_scores is None:  # accuracy: the walk was not chunked
        return half_rung_test(
            np.concatenate(parts), int(leader.part_sizes.sum()), alpha
        )
    chunks = [np.asarray(r.last.chunk_scores[r.key], dtype=float) for r in racers]
    return early_rung_test(chunks, leader.chunk_sizes, alpha)


def _parts(racer: Racer) -> np.ndarray:
    """The part scores of the racer's last rung, of the raced metric."""
    return np.asarray(racer.last.part_scores[racer.key], dtype=float)


def drop_test(
    part_scores: list[np.ndarray], part_sizes: np.ndarray, alpha: float
) -> np.ndarray:
    """Which candidates are clearly worse than the first one (the leader).

    A one-sided paired t-test per candidate over the parts of one rung:
    ``d_j`` is the leader's score minus the candidate's on part ``j`` (the
    same held-out rows), ``D = sum_j w_j d_j`` with ``w_j`` the part's share
    of the rows (exactly the difference of the two rung estimates). The
    variance of ``d_j`` is the candidate's own sample variance over the parts,
    moderated toward the candidates' common spread (the median of their
    variances, divided by the median of a chi-square over its degrees of
    freedom) with :data:`PRIOR_DF` prior degrees of freedom, as in Smyth's
    moderated t-test (2004); a candidate is dropped when
    ``D > t(1 - alpha, PRIOR_DF + parts - 1) * sqrt(sum_j w_j**2) * s``.
    A candidate as good as the leader in expectation is dropped with
    probability at most ``alpha`` when part differences are independent and
    normal.

    Parameters
    ----------
    part_scores : list of ndarray of shape (n_parts,)
        The leader's part scores first, then each candidate's.
    part_sizes : ndarray of shape (n_parts,)
        Held-out rows per part.
    alpha : float
        The error rate of one test.

    Returns
    -------
    drop : ndarray of bool of shape (len(part_scores),)
        Whether each is clearly worse than the leader (never the leader).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.model_selection._racing import drop_test
    >>> leader = np.array([0.90, 0.91])
    >>> close, bad = np.array([0.905, 0.90]), np.array([0.70, 0.72])
    >>> drop_test([leader, close, bad], np.array([500, 500]), 0.05).tolist()
    [False, False, True]
    """
    scores = np.asarray(part_scores, dtype=float)
    sizes = np.asarray(part_sizes, dtype=float)
    weights = sizes / sizes.sum()
    n_parts = scores.shape[1]
    diffs = scores[0] - scores  # leader minus candidate, per part
    D = diffs @ weights
    drop = np.zeros(len(scores), dtype=bool)
    if n_parts < 2:
        return drop
    own = np.var(diffs, axis=1, ddof=1)
    finite = np.isfinite(own)
    finite[0] = False  # the leader against itself has no spread
    if not finite.any():
        return drop
    df = n_parts - 1
    common = float(np.median(own[finite])) / (stats.chi2.median(df) / df)
    moderated = (PRIOR_DF * common + df * own) / (PRIOR_DF + df)
    se = np.sqrt(moderated * np.sum(weights**2))
    threshold = stats.t.ppf(1 - alpha, PRIOR_DF + df) * se
    # No spread at all (identical part differences everywhere): no evidence.
    drop = finite & (se > 0) & (D > threshold)
    drop[0] = False
    return drop


def early_rung_test(
    chunk_scores: list[np.ndarray], chunk_sizes: np.ndarray, alpha: float
) -> np.ndarray:
    """Which candidates are clearly worse than the first (the leader) at an
    early rung: one model per candidate, scored on the same chunks.

    ``D = sum_j w_j (s_0j - s_cj)`` (``w_j`` the chunk's share of the rows) is
    the difference of the two early-rung scores. Its variance is taken
    *unpaired*, from each one's own spread over the chunks: ``sum_j w_j**2
    (v_0 + v_c)``, with ``v`` the sample variance of a candidate's chunk
    scores, which holds how hard each chunk is. A candidate is dropped when
    ``D > t(1 - alpha, chunks - 1)`` times that standard error.

    The paired variance (of ``s_0j - s_cj``) would be far smaller, but an
    early rung's models are trained on a quarter or a half of the rows, and
    its ranking of close candidates moves with the training size: a paired
    test drops the true best as surely as it drops the clearly worse
    (measured in the user guide). The unpaired spread is of the size of
    those moves; only candidates worse by more are dropped.

    Parameters
    ----------
    chunk_scores : list of ndarray of shape (n_chunks,)
        The leader's chunk scores first, then each candidate's.
    chunk_sizes : ndarray of shape (n_chunks,)
        Held-out rows per chunk.
    alpha : float
        The error rate of one test.

    Returns
    -------
    drop : ndarray of bool of shape (len(chunk_scores),)
        Whether each is clearly worse than the leader (never the leader).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.model_selection._racing import early_rung_test
    >>> leader = np.array([0.90, 0.88, 0.91, 0.89])
    >>> close, bad = leader - 0.01, leader - 0.2
    >>> early_rung_test([leader, close, bad], np.full(4, 500), 0.05).tolist()
    [False, False, True]
    """
    scores = np.asarray(chunk_scores, dtype=float)
    weights = np.asarray(chunk_sizes, dtype=float)
    weights = weights / weights.sum()
    drop = np.zeros(len(scores), dtype=bool)
    n_chunks = scores.shape[1]
    if n_chunks < 2:
        return drop
    D = (scores[0] - scores) @ weights
    spread = np.var(scores, axis=1, ddof=1)
    se = np.sqrt((spread[0] + spread) * np.sum(weights**2))
    with np.errstate(invalid="ignore"):
        drop = (
            np.isfinite(D) & (se > 0) & (D > stats.t.ppf(1 - alpha, n_chunks - 1) * se)
        )
    drop[0] = False
    return drop


def half_rung_test(accuracies: np.ndarray, n_rows: int, alpha: float) -> np.ndarray:
    """Which candidates are clearly less accurate than the first (the leader)
    at an early rung: one part of ``n_rows`` held-out rows, the same rows for
    every candidate, every model trained on the same other rows.

    Per row ``i``, ``d_i`` is 1 where only the leader is right, -1 where only
    the candidate is, else 0: ``D = mean_i d_i`` is exactly the difference of
    the two accuracies. Its variance is at most ``E[d_i**2] / n_rows``, and
    ``d_i != 0`` only where one of the two is wrong, so ``E[d_i**2] <= e_0 +
    e_c``, the sum of their error rates. A candidate is dropped when ``D >
    z(1 - alpha) * sqrt((e_0 + e_c) / n_rows)``, the one-sided normal test
    with that upper bound on the variance: one whose expected accuracy equals
    the leader's is dropped with probability at most ``alpha`` (as the rows
    grow, the rows being exchangeable), less where the two disagree on fewer
    rows than they err on.

    Parameters
    ----------
    accuracies : ndarray of shape (n_candidates,)
        The leader's accuracy on the part first, then each candidate's.
    n_rows : int
        Held-out rows of the part.
    alpha : float
        The error rate of one test.

    Returns
    -------
    drop : ndarray of bool of shape (n_candidates,)
        Whether each is clearly worse than the leader (never the leader).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.model_selection._racing import half_rung_test
    >>> half_rung_test(np.array([0.85, 0.845, 0.80, 0.76]), 16000, 0.0125).tolist()
    [False, False, True, True]
    """
    scores = np.asarray(accuracies, dtype=float)
    errors = np.clip(1.0 - scores, 0.0, 1.0)
    D = scores[0] - scores
    se = np.sqrt((errors[0] + errors) / max(int(n_rows), 1))
    with np.errstate(invalid="ignore"):
        drop = np.isfinite(D) & (se > 0) & (D > stats.norm.ppf(1 - alpha) * se)
    drop[0] = False
    return drop
