"""The one-standard-error rule: the simplest candidate within noise of the best."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

__all__ = ["one_standard_error_rule"]


def one_standard_error_rule(
    param: str | Callable[[dict[str, Any]], Any],
    *,
    greater_is_simpler: bool = False,
    metric: str | None = None,
    n_std_errors: float = 1.0,
) -> Callable[[Mapping[str, Any]], int]:
    """Build a ``refit`` callable choosing by the one-standard-error rule.

    Among the candidates whose mean test score is at least the best mean minus
    ``n_std_errors`` standard errors of the best candidate, pick the simplest
    (Breiman et al., 1984, as used by CART; Hastie, Tibshirani and Friedman,
    *The Elements of Statistical Learning*, 7.10). Since the best mean is the
    maximum of many noisy estimates, a simpler model within its noise band is
    as good a bet and usually generalizes more robustly. The standard error is
    ``std(split scores, ddof=1) / sqrt(n_splits)``, or the
    ``stderr_test_<metric>`` column when the results carry one.

    Parameters
    ----------
    param : str or callable
        What "simplest" means: the name of a parameter (the candidate with the
        smallest value is the simplest, or the largest with
        ``greater_is_simpler=True``), or a callable taking a candidate's
        ``params`` dict and returning its complexity (smallest is simplest).
        Candidates without the parameter are not eligible.
    greater_is_simpler : bool, default=False
        Whether a larger ``param`` value means a simpler model (e.g. a
        regularization strength ``alpha``); ``False`` suits ``C``,
        ``max_depth``, ``n_estimators``. Ignored for a callable ``param``.
    metric : str, default=None
        The metric to rank by in multi-metric results (``mean_test_<metric>``).
        ``None`` takes ``mean_test_score``, or the only metric present.
    n_std_errors : float, default=1.0
        Width of the tolerance band, in standard errors of the best candidate.

    Returns
    -------
    refit : callable
        ``refit(cv_results) -> int``, the index of the chosen candidate, usable
        as ``GridSearchCV(refit=...)`` and ``RandomizedSearchCV(refit=...)``.
        Ties in complexity go to the higher mean score.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.linear_model import RidgeClassifier
    >>> from sklearn.model_selection import GridSearchCV
    >>> from sklearn_ext.model_selection import one_standard_error_rule
    >>> X, y = load_digits(return_X_y=True)
    >>> search = GridSearchCV(
    ...     RidgeClassifier(),
    ...     {"alpha": [1e-2, 1e0, 1e2, 1e4]},
    ...     refit=one_standard_error_rule("alpha", greater_is_simpler=True),
    ... ).fit(X, y)
    >>> best = search.cv_results_["mean_test_score"].argmax()
    >>> bool(search.best_index_ >= best)
    True
    """
    if not (isinstance(param, str) or callable(param)):
        raise TypeError(
            "The 'param' parameter of one_standard_error_rule must be a parameter "
            f"name or a callable params -> complexity. Got {param!r} instead."
        )
    if not isinstance(greater_is_simpler, bool | np.bool_):
        raise TypeError(
            "The 'greater_is_simpler' parameter of one_standard_error_rule must be "
            f"a bool. Got {greater_is_simpler!r} instead."
        )
    if (
        isinstance(n_std_errors, bool)
        or not isinstance(n_std_errors, int | float)
        or not (n_std_errors >= 0 and math.isfinite(n_std_errors))
    ):
        raise ValueError(
            "The 'n_std_errors' parameter of one_standard_error_rule must be a "
            f"float in the range [0, inf). Got {n_std_errors!r} instead."
        )
    return _OneStandardErrorRule(
        param, bool(greater_is_simpler), metric, float(n_std_errors)
    )


class _OneStandardErrorRule:
    """The picklable callable returned by :func:`one_standard_error_rule`."""

    def __init__(self, param, greater_is_simpler, metric, n_std_errors) -> None:
        self.param = param
        self.greater_is_simpler = greater_is_simpler
        self.metric = metric
        self.n_std_errors = n_std_errors

    def __call__(self, cv_results: Mapping[str, Any]) -> int:
        suffix = _metric_suffix(cv_results, self.metric)
        means = np.asarray(cv_results[f"mean_test_{suffix}"], dtype=float)
        if means.size == 0 or np.all(np.isnan(means)):
            raise ValueError("No candidate has a finite mean test score.")
        best = int(np.nanargmax(means))
        stderr = _stderr(cv_results, suffix, means.size)
        band = stderr[best] if np.isfinite(stderr[best]) else 0.0
        threshold = means[best] - self.n_std_errors * band
        candidates = [
            i for i in range(means.size) if means[i] >= threshold or i == best
        ]
        params = cv_results["params"]
        keyed = []
        for i in candidates:
            complexity = self._complexity(params[i])
            if complexity is _MISSING:
                continue
            keyed.append((complexity, -means[i], i))
        if not keyed:
            return best
        try:
            return int(min(keyed)[2])
        except TypeError:
            raise TypeError(
                f"Cannot order the values of {self.param!r} to find the simplest "
                f"candidate: {[k[0] for k in keyed]!r}."
            ) from None

    def _complexity(self, params: Mapping[str, Any]):
        if callable(self.param):
            return self.param(params)
        if self.param not in params:
            return _MISSING
        value = params[self.param]
        if self.greater_is_simpler:
            try:
                return -value
            except TypeError:
                raise TypeError(
                    f"greater_is_simpler=True needs numeric values of "
                    f"{self.param!r}; got {value!r}."
                ) from None
        return value

    def __repr__(self) -> str:
        return (
            f"one_standard_error_rule({self.param!r}, greater_is_simpler="
            f"{self.greater_is_simpler}, metric={self.metric!r}, n_std_errors="
            f"{self.n_std_errors})"
        )


_MISSING = object()


def _metric_suffix(cv_results: Mapping[str, Any], metric: str | None) -> str:
    if metric is not None:
        if f"mean_test_{metric}" not in cv_results:
            raise ValueError(
                f"The 'metric' {metric!r} is not in the results; they hold "
                f"{sorted(k[10:] for k in cv_results if k.startswith('mean_test_'))}."
            )
        return metric
    if "mean_test_score" in cv_results:
        return "score"
    names = [k[10:] for k in cv_results if k.startswith("mean_test_")]
    if len(names) != 1:
        raise ValueError(
            "The results hold several metrics "
            f"{sorted(names)}; pass metric=... to one_standard_error_rule."
        )
    return names[0]


def _stderr(cv_results: Mapping[str, Any], suffix: str, n: int) -> np.ndarray:
    if f"stderr_test_{suffix}" in cv_results:
        return np.asarray(cv_results[f"stderr_test_{suffix}"], dtype=float)
    splits = []
    i = 0
    while f"split{i}_test_{suffix}" in cv_results:
        splits.append(np.asarray(cv_results[f"split{i}_test_{suffix}"], dtype=float))
        i += 1
    if len(splits) < 2:
        raise ValueError(
            f"The results need split<i>_test_{suffix} columns for at least 2 folds "
            f"(or a stderr_test_{suffix} column) to compute standard errors."
        )
    scores = np.vstack(splits)  # (n_splits, n_candidates)
    counts = np.sum(~np.isnan(scores), axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        std = np.sqrt(
            np.nansum((scores - np.nanmean(scores, axis=0)) ** 2, axis=0) / (counts - 1)
        )
        return std / np.sqrt(counts)
