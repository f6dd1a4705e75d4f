"""The ``optuna-treecv`` command line: ``tune`` a learner, or ``cv`` it once."""

from __future__ import annotations

import argparse
import ast
import sys
import time
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from optuna_treecv._data import BUNDLED, load_dataset
from optuna_treecv._learners import LEARNERS, make_learner
from optuna_treecv._storage import open_storage

if TYPE_CHECKING:
    import optuna

__all__ = ["main"]

DEFAULT_STORAGE = "sqlite:///optuna-treecv.db"
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


# -- argument parsing -----------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="optuna-treecv",
        description="Hyperparameter search with cheap k-fold CV (TreeCV) in Optuna.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    learners = "; ".join(f"{k}: {v.summary}" for k, v in LEARNERS.items())

    def common(p: argparse.ArgumentParser) -> None:
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
        p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
        p.add_argument(
            "--n-jobs", type=int, default=None, help="workers inside each CV run"
        )

    tune = sub.add_parser("tune", help="run an Optuna study (TreeCV in every trial)")
    common(tune)
    tune.add_argument(
        "--n-trials", type=int, default=None, help="default 30, or none with --timeout"
    )
    tune.add_argument("--timeout", type=float, default=None, help="seconds")
    tune.add_argument("--pruner", choices=PRUNERS, default="median")
    tune.add_argument(
        "--storage",
        default=DEFAULT_STORAGE,
        help=f"Optuna storage URL, or journal:PATH (default {DEFAULT_STORAGE})",
    )
    tune.add_argument("--study-name", help="default: <learner>-<dataset>")
    tune.add_argument(
        "--space",
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="search a parameter: float:LOW:HIGH[:log], int:LOW:HIGH[:log] or "
        "cat:A,B,C (repeatable; replaces the learner's default space)",
    )
    tune.add_argument(
        "--backend", default="auto", help="CV backend: auto, treecv, standard"
    )
    tune.add_argument("--no-progress-bar", dest="progress_bar", action="store_false")
    tune.add_argument(
        "--no-baseline",
        dest="baseline",
        action="store_false",
        help="skip timing standard CV of the best parameters",
    )

    cv = sub.add_parser("cv", help="one CV score: TreeCV next to standard CV")
    common(cv)
    return parser


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
                space[name] = dist(cast(parts[0]), cast(parts[1]), log=log)
            else:
                raise ValueError("the kind must be float, int or cat")
        except ValueError as exc:
            raise CLIError(f"bad --space {item!r}: {exc}.") from None
    return space


# -- shared set-up --------------------------------------------------------------------
def _setup(args):
    if args.cv < 2:
        raise CLIError(f"--cv must be at least 2, got {args.cv}.")
    try:
        estimator, space = make_learner(args.learner, random_state=args.seed)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    fixed = _parse_fixed(args.fixed)
    try:
        estimator.set_params(**fixed)
    except ValueError:
        valid = sorted(estimator.get_params())
        bad = [k for k in fixed if k not in valid]
        raise CLIError(
            f"bad --set {bad}: not parameters of {type(estimator).__name__} "
            f"(valid: {', '.join(valid)})."
        ) from None
    try:
        X, y = load_dataset(args.dataset, args.target)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    if args.cv > X.shape[0]:
        raise CLIError(f"--cv {args.cv} exceeds the {X.shape[0]} samples.")
    if isinstance(space, dict):
        space = {k: v for k, v in space.items() if k not in fixed}
    return estimator, space, X, y


def _open_storage(url: str):
    try:
        return open_storage(url)
    except ValueError as exc:
        raise CLIError(str(exc)) from None


def _make_pruner(name: str, n_splits: int) -> optuna.pruners.BasePruner:
    import optuna

    if name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=1)
    if name == "percentile":
        return optuna.pruners.PercentilePruner(
            25.0, n_startup_trials=5, n_warmup_steps=1
        )
    if name == "hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=1, max_resource=n_splits)
    if name == "successive-halving":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=1)
    if name == "wilcoxon":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.pruners.WilcoxonPruner(p_threshold=0.1)
    return optuna.pruners.NopPruner()


# -- commands -------------------------------------------------------------------------
def _tune(args) -> int:
    import optuna
    from optuna.trial import TrialState

    from optuna_treecv._objective import TreeCVObjective
    from sklearn_ext import tree_cross_validate

    if args.timeout is not None and not args.timeout > 0:
        raise CLIError(f"--timeout must be positive, got {args.timeout}.")
    if args.n_trials is None and args.timeout is None:
        args.n_trials = 30
    if args.n_trials is not None and args.n_trials < 1:
        raise CLIError(f"--n-trials must be at least 1, got {args.n_trials}.")
    estimator, space, X, y = _setup(args)
    if args.space:
        space = _parse_space(args.space)
    if not space:
        raise CLIError(
            f"{args.learner!r} has no default search space; give one with "
            "--space NAME=SPEC."
        )
    report = "per_fold" if args.pruner == "wilcoxon" else "running_mean"
    try:
        objective = TreeCVObjective(
            estimator,
            space,
            X,
            y,
            cv=args.cv,
            scoring=args.scoring,
            backend=args.backend,
            report=report,
            n_jobs=args.n_jobs,
            random_state=args.seed,
        )
    except (TypeError, ValueError) as exc:
        raise CLIError(" ".join(str(exc).split())) from None
    storage = _open_storage(args.storage)
    study_name = args.study_name or f"{args.learner}-{_stem(args.dataset)}"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = optuna.create_study(
            storage=storage,
            study_name=study_name,
            direction="maximize",
            sampler=optuna.samplers.TPESampler(seed=args.seed),
            pruner=_make_pruner(args.pruner, args.cv),
            load_if_exists=True,
        )
    except Exception as exc:
        raise CLIError(f"cannot create study {study_name!r}: {exc}") from None
    n_before = len(study.trials)
    print(
        f"Tuning {type(estimator).__name__} on {args.dataset} "
        f"({X.shape[0]} x {X.shape[1]}), {args.cv}-fold TreeCV, "
        f"pruner={args.pruner}, study {study_name!r} in {args.storage}"
    )
    errors: list[str] = []

    def run_trial(trial: optuna.Trial) -> float:
        try:
            return objective(trial)
        except (ValueError, TypeError) as exc:  # A parameter combination failed.
            errors.append(" ".join(str(exc).split()))
            raise

    tic = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        # Failed trials are recorded as FAIL and summarized below, not logged
        # with a traceback each.
        optuna.logging.set_verbosity(optuna.logging.ERROR)
        study.optimize(
            run_trial,
            n_trials=args.n_trials,
            timeout=args.timeout,
            catch=(ValueError, TypeError),
            show_progress_bar=args.progress_bar,
        )
        optuna.logging.set_verbosity(optuna.logging.WARNING)
    elapsed = time.perf_counter() - tic
    trials = study.trials[n_before:]
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    pruned = [t for t in trials if t.state == TrialState.PRUNED]
    failed = len(trials) - len(complete) - len(pruned)
    print(
        f"\n{len(trials)} trials in {elapsed:.1f} s: {len(complete)} complete, "
        f"{len(pruned)} pruned" + (f", {failed} failed" if failed else "")
    )
    if errors:
        print(f"Last error of a failed trial: {errors[-1][:300]}")
    if not any(t.state == TrialState.COMPLETE for t in study.trials):
        if errors and not complete and not pruned:
            raise CLIError(f"every trial failed: {errors[-1][:300]}")
        print("No trial completed; nothing to summarize.")
        return 1
    best = study.best_trial
    attrs = _details(best)
    print(
        f"Best trial #{best.number}: {attrs.get('mean_test_score', best.value):.4f} "
        f"± {attrs.get('stderr_test_score', float('nan')):.4f} (standard error, "
        f"{args.cv} folds, backend {attrs.get('backend')})"
    )
    for name, value in best.params.items():
        print(f"  {name} = {value!r}")
    n_samples = X.shape[0]
    fed = sum(int(_details(t).get("n_samples_fed", 0)) for t in trials)
    standard_fed = len(trials) * n_samples * (args.cv - 1)
    print(
        f"Rows fed to the learner: {fed:,} (standard CV, no pruning: "
        f"{standard_fed:,}, {standard_fed / max(fed, 1):.1f}x more)"
    )
    if args.baseline:
        _baseline(args, objective, best, study, trials, tree_cross_validate)
    if not args.storage.startswith("journal:"):
        print(
            f"Open the study: optuna-dashboard {args.storage}  "
            "(pip install optuna-dashboard)"
        )
    return 0


def _baseline(args, objective, best, study, trials, tree_cross_validate) -> None:
    """Time standard CV of the best parameters once and extrapolate."""
    from optuna.trial import FixedTrial
    from sklearn.base import clone

    from optuna_treecv._objective import suggest_params
    from sklearn_ext.model_selection import TreeCVFallbackWarning, choose_backend

    params = suggest_params(FixedTrial(best.params, best.number), objective.params)
    estimator = clone(objective.estimator).set_params(**params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TreeCVFallbackWarning)
        backend = choose_backend(estimator, objective.backend)
    if backend.name == "standard":
        print("Time: every trial ran standard CV; there is no TreeCV to compare.")
        return
    runs, learn = {}, {}
    for method in (backend, "standard"):
        tic = time.perf_counter()
        result = tree_cross_validate(
            estimator,
            objective.X,
            objective.y,
            cv=args.cv,
            scoring=args.scoring,
            method=method,
            n_jobs=args.n_jobs,
        )
        key = "standard" if method == "standard" else "tree"
        runs[key] = time.perf_counter() - tic
        learn[key] = float(np.sum(result["fit_time"]) + np.sum(result["score_time"]))
    spent = sum(
        float(_details(t).get("fit_time", 0.0))
        + float(_details(t).get("score_time", 0.0))
        for t in trials
    )
    estimate = len(trials) * learn["standard"]
    print(
        f"Time: standard {args.cv}-fold CV of the best params, measured once: "
        f"{runs['standard']:.2f} s ({learn['standard']:.2f} s fitting and "
        f"scoring) vs {runs['tree']:.2f} s with TreeCV "
        f"({runs['standard'] / runs['tree']:.1f}x).\n"
        f"The {len(trials)} trials spent {spent:.1f} s fitting and scoring; "
        f"standard CV of every trial without pruning: about {estimate:.1f} s "
        f"({len(trials)} x the measured run), so TreeCV and pruning saved about "
        f"{estimate - spent:.1f} s ({estimate / max(spent, 1e-9):.1f}x). The rest "
        "of the study's time is Optuna's sampling and storage."
    )


def _cv(args) -> int:
    from sklearn_ext import tree_cross_validate
    from sklearn_ext.model_selection import TreeCVFallbackWarning, choose_backend

    estimator, _, X, y = _setup(args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TreeCVFallbackWarning)
        backend = choose_backend(estimator, "auto")
    methods = [backend, "standard"]
    if backend.name == "standard":
        print(f"No fast backend runs {type(estimator).__name__}: standard CV only.")
        methods = ["standard"]
    rows = []
    for method in methods:
        tic = time.perf_counter()
        try:
            result = tree_cross_validate(
                estimator,
                X,
                y,
                cv=args.cv,
                scoring=args.scoring,
                method=method,
                n_jobs=args.n_jobs,
            )
        except (TypeError, ValueError) as exc:
            raise CLIError(" ".join(str(exc).split())) from None
        wall = time.perf_counter() - tic
        scores = next(v for k, v in result.items() if k.startswith("test_"))
        rows.append((result["backend"], scores, result["n_samples_fed"], wall))
    print(
        f"{type(estimator).__name__} on {args.dataset} ({X.shape[0]} x "
        f"{X.shape[1]}), {args.cv}-fold CV, scoring={args.scoring or 'score'}"
    )
    print(f"{'backend':<12} {'mean':>8} {'std':>8} {'rows fed':>12} {'time (s)':>9}")
    for backend, scores, fed, wall in rows:
        print(
            f"{backend:<12} {np.mean(scores):>8.4f} {np.std(scores):>8.4f} "
            f"{fed:>12,} {wall:>9.3f}"
        )
    if len(rows) == 2:
        print(
            f"{rows[0][0]} is {rows[1][3] / rows[0][3]:.1f}x faster than standard CV."
        )
    return 0


def _details(trial) -> dict[str, Any]:
    """A trial's CV details (the "cv" attribute of TreeCVObjective)."""
    return trial.user_attrs.get("cv", {})


def _stem(dataset: str) -> str:
    from pathlib import Path

    return Path(dataset).stem or dataset


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (2 for a user error)."""
    args = _parser().parse_args(argv)
    try:
        return _tune(args) if args.command == "tune" else _cv(args)
    except CLIError as exc:
        print(f"optuna-treecv: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
