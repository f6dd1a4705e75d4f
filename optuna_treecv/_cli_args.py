"""The ``optuna-treecv`` command line's arguments: the parser, the constants it
names, and the parsing of ``--set`` and ``--space``."""

from __future__ import annotations

import argparse
import ast
import math
import sys
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from optuna_treecv._data import BUNDLED
from optuna_treecv._learners import LEARNERS
from optuna_treecv._preprocess import PREPROCESS_MODES
from sklearn_ext.model_selection._choice import METHODS

if TYPE_CHECKING:
    from optuna.pruners import BasePruner

__all__ = ["CLIError"]

DEFAULT_STORAGE = "sqlite:///optuna-treecv.db"
#: Heartbeat interval (seconds) of a database storage unless --heartbeat says.
DEFAULT_HEARTBEAT = 60
#: Exit status after Ctrl-C (128 + SIGINT), as shells report it.
EXIT_INTERRUPTED = 130
#: Exit status after SIGTERM (128 + SIGTERM).
EXIT_TERMINATED = 143
#: Seconds of standard CV that ``cv`` runs without --force-standard.
STANDARD_LIMIT = 3600
#: Seconds of standard CV, estimated from TreeCV's rows, above which ``cv``
#: times its first folds before running it.
PROBE_ABOVE = 60.0
#: Folds (at most) and seconds (about) that time standard CV's first folds.
PROBE_FOLDS, PROBE_SECONDS = 3, 5.0
#: Seconds between two progress lines within a trial.
PROGRESS_EVERY = 5.0
#: Reported folds before the Wilcoxon pruner decides, when a trial reports
#: at least twice as many.
WILCOXON_STARTUP = 14
#: What a trial reports to the pruner (``--report``): "auto" is per-fold for
#: the Wilcoxon pruner and the running mean otherwise.
REPORT_CHOICES = ("auto", "running-mean", "per-fold", "levels")
PRUNERS = (
    "none",
    "median",
    "percentile",
    "hyperband",
    "successive-halving",
    "wilcoxon",
)


class CLIError(Exception):
    """A user error: printed on one line, exit code 2."""


def _version() -> str:
    import optuna
    import sklearn

    from optuna_treecv import __version__

    return (
        f"optuna-treecv {__version__} (Optuna {optuna.__version__}, "
        f"scikit-learn {sklearn.__version__}, Python {sys.version.split()[0]})"
    )


# -- argument parsing ---------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="optuna-treecv",
        description="Hyperparameter search with cheap k-fold CV (TreeCV) in Optuna.",
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", required=True)
    tune = sub.add_parser("tune", help="run an Optuna study (TreeCV in every trial)")
    _add_common_arguments(tune)
    _add_tune_arguments(tune)
    cv = sub.add_parser("cv", help="one CV score: TreeCV next to standard CV")
    _add_common_arguments(cv)
    _add_cv_arguments(cv)
    return parser


def _add_common_arguments(p: argparse.ArgumentParser) -> None:
    """The learner, the data and the folds: the arguments of both commands."""
    learners = "; ".join(f"{k}: {v.summary}" for k, v in LEARNERS.items())
    p.add_argument(
        "learner",
        help=f"a learner name ({learners}) or an import path 'module:Class'",
    )
    p.add_argument(
        "dataset",
        help=".npz (X, y), .csv (last column is the target), svmlight file, "
        f"or a bundled scikit-learn data set ({', '.join(BUNDLED)})",
    )
    p.add_argument("--target", help="target column of a CSV file (name or index)")
    p.add_argument("--cv", type=int, default=5, help="number of folds (default 5)")
    p.add_argument("--scoring", help="scikit-learn metric (default: score)")
    p.add_argument(
        "--set",
        dest="fixed",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="fix an estimator parameter (repeatable), e.g. --set max_iter=5",
    )
    p.add_argument(
        "--preprocess",
        choices=PREPROCESS_MODES,
        default="auto",
        help="auto (default): a StandardScaler before the built-in learners "
        "that want scaled features (not naive Bayes, not a module:Class "
        "learner), and one-hot encoding of a CSV's text columns; scale: "
        "always scale; none: the features as given. Each fold's scaler and "
        "encoder learn from its training rows only. --set and --space take "
        "the learner's own parameter names",
    )
    p.add_argument(
        "--no-shuffle",
        dest="shuffle",
        action="store_false",
        help="cut the folds in the file's row order (default: rows shuffled "
        "with --seed; stratified for classifiers)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="random seed of the learner, the folds and the sampler (default 0)",
    )
    p.add_argument(
        "--n-jobs", type=int, default=None, help="workers inside each CV run"
    )


def _add_tune_arguments(tune: argparse.ArgumentParser) -> None:
    """The study's arguments: trials, pruner, storage, space, final model."""
    tune.add_argument(
        "--n-trials", type=int, default=None, help="default 30, or none with --timeout"
    )
    tune.add_argument("--timeout", type=float, default=None, help="seconds")
    tune.add_argument("--pruner", choices=PRUNERS, default="median")
    tune.add_argument(
        "--report",
        choices=REPORT_CHOICES,
        default="auto",
        help="what a trial reports to the pruner: 'levels' hold-out estimates "
        "on half the rows after a quarter and half a pass, a 2-fold CV over all "
        "rows after one, "
        "4-fold after two, ... (the tree walked level by level); 'running-mean' "
        "the mean of the folds done; 'per-fold' each fold's score (default "
        "auto: per-fold for wilcoxon, else running-mean)",
    )
    tune.add_argument(
        "--storage",
        default=DEFAULT_STORAGE,
        help=f"Optuna storage URL, or journal:PATH (default {DEFAULT_STORAGE})",
    )
    tune.add_argument("--study-name", help="default: <learner>-<dataset>")
    tune.add_argument(
        "--heartbeat",
        type=int,
        default=None,
        metavar="SECONDS",
        help="heartbeat of running trials in a database storage, so that the "
        "trial of a killed worker is failed and its point retried when the "
        f"study resumes (default {DEFAULT_HEARTBEAT}; 0 turns it off)",
    )
    tune.add_argument(
        "--retry-running",
        action="store_true",
        help="first fail the study's RUNNING trials and queue their points again "
        "(for storages without heartbeats, e.g. journal:PATH; only when no other "
        "worker is running)",
    )
    tune.add_argument(
        "--space",
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="search a parameter: float:LOW:HIGH[:log], int:LOW:HIGH[:log] or "
        "cat:A,B,C (repeatable; replaces the learner's default space)",
    )
    tune.add_argument(
        "--backend",
        default="auto",
        choices=METHODS,
        help="CV backend of every trial (standard scores the learner's own fit "
        "on every fold)",
    )
    tune.add_argument(
        "--no-progress-bar",
        dest="progress_bar",
        action="store_false",
        help="no progress bar over the trials, and no progress lines within a "
        "trial (shown on stderr every few seconds while a long trial runs: "
        "folds scored, rows fed)",
    )
    tune.add_argument(
        "--save-model",
        metavar="PATH",
        help="save the final model (the best trial's parameters fitted on all "
        "rows, trained as the trials scored them) to PATH with joblib; load it "
        "with joblib.load(PATH)",
    )
    tune.add_argument(
        "--no-baseline",
        dest="baseline",
        action="store_false",
        help="skip timing standard CV of the best parameters",
    )


def _add_cv_arguments(cv: argparse.ArgumentParser) -> None:
    """The backend of ``cv``'s first run, and whether standard CV runs too."""
    cv.add_argument(
        "--backend",
        default="auto",
        choices=METHODS,
        help="CV backend of the first run (standard scores the learner's own fit "
        "on every fold)",
    )
    standard = cv.add_mutually_exclusive_group()
    standard.add_argument(
        "--no-standard",
        dest="standard",
        action="store_false",
        help="skip the standard CV run (TreeCV only)",
    )
    standard.add_argument(
        "--force-standard",
        action="store_true",
        help="run standard CV even when it is estimated to take more than "
        f"{STANDARD_LIMIT // 3600} hour (by default it is then skipped, with "
        "the estimate: the time of its first folds, extrapolated)",
    )


def _parse_value(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return {"none": None, "true": True, "false": False}.get(text.lower(), text)


def _parse_fixed(items: Sequence[str]) -> dict[str, Any]:
    fixed = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise CLIError(f"bad --set {item!r}: expected NAME=VALUE.")
        fixed[name.strip()] = _parse_value(value.strip())
    return fixed


def _parse_space(items: Sequence[str]) -> dict[str, Any]:
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    space = {}
    for item in items:
        name, sep, spec = item.partition("=")
        kind, _, rest = spec.partition(":")
        try:
            if not sep or not name:
                raise ValueError("expected NAME=SPEC")
            if kind == "cat":
                choices = [_parse_value(v) for v in rest.split(",") if v]
                if not choices:
                    raise ValueError("no choices")
                space[name] = CategoricalDistribution(choices)
            elif kind in ("float", "int"):
                parts = rest.split(":")
                log = parts[2:] == ["log"]
                if len(parts) not in (2, 3) or (len(parts) == 3 and not log):
                    raise ValueError(f"expected {kind}:LOW:HIGH[:log]")
                cast = float if kind == "float" else int
                dist = FloatDistribution if kind == "float" else IntDistribution
                low, high = cast(parts[0]), cast(parts[1])
                # A sampler draws in [LOW, HIGH]: nan, inf or a width beyond
                # the largest float would fail inside it, after the study began.
                if not all(map(math.isfinite, (low, high, float(high) - low))):
                    raise ValueError(
                        f"LOW and HIGH must be finite numbers less than "
                        f"{sys.float_info.max:.3g} apart, got {low!r} and {high!r}"
                    )
                space[name] = dist(low, high, log=log)
            else:
                raise ValueError("the kind must be float, int or cat")
        except (ValueError, OverflowError) as exc:
            reason = str(exc).rstrip(".")
            raise CLIError(f"bad --space {item!r}: {reason}.") from None
    return space


# -- shared set-up --------------------------------------------------------------------


def _make_pruner(name: str, n_splits: int, report: str = "running_mean") -> BasePruner:
    import optuna

    from optuna_treecv._ladder import RungPruner, n_steps
    from optuna_treecv._objective import MAX_REPORTS, report_counts

    # The first step a trial reports at (after k // 1024 folds for a large k;
    # the quarter rung with report="levels") and the last one.
    first_step = max(1, int(report_counts(n_splits)[0]) - 1)
    last_step = n_splits
    if report == "levels":
        first_step, last_step = 1, n_steps(n_splits)
    if name in ("median", "percentile"):
        pruner = (
            optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=1)
            if name == "median"
            else optuna.pruners.PercentilePruner(
                25.0, n_startup_trials=5, n_warmup_steps=1
            )
        )
        # The rungs are different estimates: each judged on its own value.
        return RungPruner(pruner) if report == "levels" else pruner
    if name == "hyperband":
        return optuna.pruners.HyperbandPruner(
            min_resource=first_step, max_resource=last_step
        )
    if name == "successive-halving":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=first_step)
    if name == "wilcoxon":
        # With ties (accuracy on small folds) scipy's test on up to 13 pairs
        # is a permutation test of about a second: a trial that reports enough
        # folds starts deciding at 14, a few leaves further along the tree.
        reports = min(n_splits, MAX_REPORTS)
        startup = WILCOXON_STARTUP if reports >= 2 * WILCOXON_STARTUP else 2
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.pruners.WilcoxonPruner(
                p_threshold=0.1, n_startup_steps=startup
            )
    return optuna.pruners.NopPruner()


def _report_of(args) -> str:
    """The objective's ``report`` for ``--report`` (and ``--pruner``)."""
    if args.report == "auto":
        return "per_fold" if args.pruner == "wilcoxon" else "running_mean"
    report = args.report.replace("-", "_")
    if args.pruner == "wilcoxon" and report != "per_fold":
        raise CLIError(
            f"--pruner wilcoxon compares per-fold scores; --report {args.report} "
            "reports other values. Use --report per-fold (or auto)."
        )
    return report
