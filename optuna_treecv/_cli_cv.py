"""``optuna-treecv cv``: cross-validate a learner once with TreeCV, and with
standard CV of the same models unless that would take too long."""

from __future__ import annotations

import time
import warnings

import numpy as np

from optuna_treecv._cli_args import STANDARD_LIMIT, CLIError
from optuna_treecv._cli_setup import _FALLBACK_REASON, _setup
from optuna_treecv._cli_timing import (
    _duration,
    _first_folds,
    _rough_standard,
    _times_words,
)
from optuna_treecv._preprocess import final_step, preprocessing_line


def _cv(args) -> int:
    estimator, _, X, y, splitter, notes = _setup(args)
    name = type(final_step(estimator)).__name__
    rows = [_cv_row(args, estimator, X, y, args.backend, splitter)]
    note = None
    if rows[0][0] == "standard":
        if rows[0][4]:
            print(rows[0][4])
    elif not args.standard:
        note = "Standard CV not run (--no-standard)."
    else:
        if not args.force_standard:
            note = _standard_too_long(args, estimator, X, y, rows[0], splitter)
        if note is None:
            # Like with like: standard CV of the regime the tree scored.
            reference = _same_regime(rows[0][0], estimator, X, y)
            rows.append(_cv_row(args, reference, X, y, "standard", splitter))
    print(
        f"{name} on {args.dataset} ({X.shape[0]} x "
        f"{X.shape[1]}), {args.cv}-fold CV, scoring={args.scoring or 'score'}"
    )
    print(preprocessing_line(*notes, rows[0][0]))
    print(f"{'backend':<12} {'mean':>8} {'std':>8} {'rows fed':>12} {'time (s)':>9}")
    for backend, scores, fed, wall, _, _ in rows:
        print(
            f"{backend:<12} {np.mean(scores):>8.4f} {np.std(scores):>8.4f} "
            f"{fed:>12,} {wall:>9.3f}"
        )
    if len(rows) == 2:
        print(
            f"{rows[0][0]} takes {_ratio_words(rows[1][3], rows[0][3])} standard CV "
            "of the same models"
            + (" (one ordered pass each)." if _one_pass(rows[0][0]) else ".")
        )
    gap = rows[0][5]
    if gap is not None:
        print(
            f"{name}.fit, a different training regime, scores {gap['fit_score']:.4f} "
            f"on {len(gap['splits'])} of the folds where the tree's models score "
            f"{gap['tree_score']:.4f} (gap {gap['gap']:+.4f}); --backend standard "
            f"scores {name}.fit on every fold."
        )
    if note:
        print(note)
    return 0


def _one_pass(backend: str) -> bool:
    """Whether ``backend``'s folds are one ordered pass (its declaration)."""
    from sklearn_ext.model_selection._choice import backend_class

    return backend_class(backend).scores == "one_pass"


def _same_regime(backend: str, estimator, X, y):
    """The estimator whose ``fit`` is the regime ``backend`` scored."""
    from sklearn.base import is_classifier

    from sklearn_ext.model_selection._choice import backend_class
    from sklearn_ext.model_selection._regime import regime_estimator

    classes = np.unique(y) if is_classifier(estimator) and y is not None else None
    return regime_estimator(estimator, backend_class(backend).scores, classes, X=X)


def _ratio_words(standard: float, tree: float) -> str:
    return _times_words(
        standard,
        tree,
        less="less time than",
        more="more time than",
        none="too little time to compare with",
    )


def _cv_row(args, estimator, X, y, method, cv) -> tuple:
    """One CV run of ``cv``: backend, fold scores, rows fed, wall time, what
    was said when no fast backend runs the learner, and the regime gap."""
    from sklearn_ext.model_selection import TreeCVFallbackWarning
    from sklearn_ext.model_selection._choice import learner_without_partial_fit

    tic = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", TreeCVFallbackWarning)  # said below
            result = _tree_cv(args, estimator, X, y, method, cv)
    except (TypeError, ValueError, AttributeError) as exc:
        # AttributeError: e.g. a scoring that needs predict_proba.
        raise CLIError(" ".join(str(exc).split())) from None
    wall = time.perf_counter() - tic
    scores = next(v for k, v in result.items() if k.startswith("test_"))
    said = ""
    if method != "standard" and result["backend"] == "standard":
        reasons = [
            match.group(1)
            for w in caught
            if w.category is TreeCVFallbackWarning
            and (match := _FALLBACK_REASON.search(str(w.message)))
        ]
        # A learner without partial_fit falls back without a warning.
        quiet = learner_without_partial_fit(estimator)
        reasons += [] if quiet is None else [quiet]
        why = f" ({reasons[0]})" if reasons else ""
        name = type(final_step(estimator)).__name__
        said = f"No fast backend runs {name}{why}: standard CV only."
    gap = result.get("regime_gap")
    return result["backend"], scores, result["n_samples_fed"], wall, said, gap


def _standard_too_long(args, estimator, X, y, tree_row, cv) -> str | None:
    """Why standard CV is not run, or ``None`` when it takes at most an hour.

    When the rough estimate (:func:`_rough_standard`) exceeds
    :data:`PROBE_ABOVE`, standard CV's first folds are timed (fitting and
    scoring) and extrapolated to the ``k`` folds.
    """
    _, _, fed, wall, _, _ = tree_row
    if not _rough_standard(wall, fed, X.shape[0], args.cv):
        return None
    spent = _first_folds(
        lambda stop: _tree_cv(args, estimator, X, y, "standard", cv, stop)
    )
    if not spent:
        return None
    estimate = sum(spent) / len(spent) * args.cv
    if estimate <= STANDARD_LIMIT:
        return None
    return (
        f"Standard CV not run: it would take about {_duration(estimate)} (its "
        f"first {len(spent)} folds took {sum(spent):.2f} s fitting and scoring, "
        f"x {args.cv:,} folds). --force-standard runs it anyway; --no-standard "
        "skips it without timing."
    )


def _tree_cv(args, estimator, X, y, method, cv, leaf_callback=None):
    from sklearn_ext import tree_cross_validate

    return tree_cross_validate(
        estimator,
        X,
        y,
        cv=cv,
        scoring=args.scoring,
        method=method,
        n_jobs=args.n_jobs,
        error_score="raise",
        leaf_callback=leaf_callback,
        return_run_info=True,
    )
