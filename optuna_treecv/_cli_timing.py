"""How long standard CV takes, for ``cv`` and ``tune``'s baseline: a rough
estimate from TreeCV's rows, its first folds timed, and durations in words."""

from __future__ import annotations

import time

from optuna_treecv._cli_args import PROBE_ABOVE, PROBE_FOLDS, PROBE_SECONDS, CLIError


class _EnoughFolds(Exception):
    """Raised by the leaf callback that times standard CV's first folds."""


def _rough_standard(
    tree_wall: float, tree_fed: int, n_samples: int, n_splits: int
) -> bool:
    """Whether standard CV may take more than :data:`PROBE_ABOVE` seconds.

    A rough estimate from TreeCV's wall time per row fed and the ``n (k - 1)``
    rows standard CV feeds.
    """
    rows = n_samples * (n_splits - 1)
    return tree_wall * rows / max(int(tree_fed), 1) > PROBE_ABOVE


def _first_folds(run) -> list[float]:
    """Seconds of fitting and scoring of standard CV's first folds.

    ``run(leaf_callback)`` runs standard CV; it is stopped after
    :data:`PROBE_FOLDS` folds or about :data:`PROBE_SECONDS` seconds.
    """
    spent: list[float] = []
    start = time.perf_counter()

    def enough(leaf) -> None:
        spent.append(float(leaf.fit_time) + float(leaf.score_time))
        if len(spent) >= PROBE_FOLDS or time.perf_counter() - start > PROBE_SECONDS:
            raise _EnoughFolds

    try:
        run(enough)
    except _EnoughFolds:
        pass
    except (TypeError, ValueError, AttributeError) as exc:
        raise CLIError(" ".join(str(exc).split())) from None
    return spent


def _seconds(seconds: float) -> str:
    """``seconds`` to a tenth below two minutes, else as :func:`_duration`."""
    return f"{seconds:.1f} s" if seconds < 120 else _duration(seconds)


def _duration(seconds: float) -> str:
    """``seconds`` in the unit a reader compares: s, min, h or days."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _times_words(
    standard: float, tree: float, *, less: str, more: str, none: str
) -> str:
    """Standard CV's seconds against TreeCV's in words: ``"2.5x " + less`` when
    TreeCV took less, ``more`` when it took more, ``none`` without a time."""
    if tree <= 0 or standard <= 0:
        return none
    if standard >= tree:
        return f"{standard / tree:.1f}x {less}"
    return f"{tree / standard:.1f}x {more}"
