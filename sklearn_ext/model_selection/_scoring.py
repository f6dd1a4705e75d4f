"""Scoring, decided once per run: the scorer, its errors and the native metric.

``scoring`` means what it means in :func:`sklearn.model_selection.cross_validate`
in every door: ``None`` is the estimator's own ``score`` (an estimator without
one is refused, as there), a string or callable one scorer, a list, tuple, set
or dict several. Fold scores are computed with scikit-learn's own ``_score``,
so ``error_score`` and score parameters behave as there too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.metrics import check_scoring
from sklearn.metrics._scorer import _check_multimetric_scoring, _MultimetricScorer
from sklearn.model_selection._validation import _score

__all__ = [
    "check_response_methods",
    "make_scorer_dict",
    "metric_names",
    "native_metric",
    "sklearn_scorer",
]

Scorer = Callable[..., dict[str, float]]


def sklearn_scorer(estimator, scoring, error_score="raise"):
    """The scorer ``cross_validate`` would build for ``scoring``.

    A ``ValueError`` naming the estimator replaces scikit-learn's when
    ``scoring`` is unknown; ``scoring=None`` for an estimator without
    ``score`` raises scikit-learn's own ``TypeError``.
    """
    if callable(scoring):
        return scoring
    try:
        if scoring is None or isinstance(scoring, str):
            return check_scoring(estimator, scoring)
        scorers = _check_multimetric_scoring(estimator, scoring)
    except ValueError as exc:
        raise ValueError(
            f"Invalid scoring={scoring!r} for {type(estimator).__name__}: {exc}"
        ) from None
    return _MultimetricScorer(scorers=scorers, raise_exc=(error_score == "raise"))


def make_scorer_dict(estimator, scoring, error_score="raise") -> Scorer:
    """A scorer ``(model, X, y, **score_params) -> {name: value}`` for ``scoring``.

    One metric is named ``"score"``; several keep their names. A fold whose
    scoring raises gets ``error_score`` with scikit-learn's warning, unless
    ``error_score="raise"``.
    """
    scorer = sklearn_scorer(estimator, scoring, error_score)

    def score(model, X, y, **score_params) -> dict[str, float]:
        value = _score(model, X, y, scorer, score_params, error_score)
        if isinstance(value, dict):
            return {name: float(v) for name, v in value.items()}
        return {"score": float(value)}

    return score


def metric_names(scoring) -> list[str]:
    """Names of the scores a run reports (``["score"]`` for one metric)."""
    if isinstance(scoring, dict):
        return list(scoring)
    if isinstance(scoring, list | tuple | set):
        return list(scoring)
    return ["score"]


def native_metric(estimator, scoring) -> str | None:
    """The metric a backend may compute itself for ``scoring`` (``CVTask.metric``).

    The ``scoring`` string as given; for ``scoring=None``, ``"accuracy"`` or
    ``"r2"`` when the estimator's ``score`` is scikit-learn's classifier or
    regressor mixin's, else ``"score"`` (its own); ``None`` for a callable or
    several metrics, which only the scorer computes.
    """
    if isinstance(scoring, str):
        return scoring
    if scoring is not None:
        return None
    own = getattr(type(estimator), "score", None)
    if own is ClassifierMixin.score:
        return "accuracy"
    if own is RegressorMixin.score:
        return "r2"
    return "score"


def check_response_methods(estimator, scoring) -> None:
    """Raise before any fit if ``scoring`` calls a method ``estimator`` lacks.

    Every fold would fail the same way; the ``AttributeError`` (what
    scikit-learn raises for a missing method) says which scorer and method.
    """
    if scoring is None or callable(scoring):
        return
    try:
        scorer = sklearn_scorer(estimator, scoring)
    except (ValueError, TypeError):
        return  # make_scorer_dict says what is wrong with it
    scorers: dict[str, Any] = getattr(scorer, "_scorers", {"score": scorer})
    for name, one in scorers.items():
        methods = getattr(one, "_response_method", None)
        if methods is None:
            continue
        methods = (methods,) if isinstance(methods, str) else tuple(methods)
        if not any(hasattr(estimator, method) for method in methods):
            which = f"scoring={scoring!r}" if len(scorers) == 1 else f"{name!r}"
            raise AttributeError(
                f"The scorer {which} calls {' or '.join(methods)}, which "
                f"{type(estimator).__name__} does not have with these parameters; "
                "choose a scoring it supports."
            )
