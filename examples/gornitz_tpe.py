"""
TPE with pruning: close to the grid's best AUROC with a fraction of the evaluations
===================================================================================

The 10^4-point grid of ``gornitz_optuna_grid.py`` finds the best of a fixed set of
settings. A model-based search needs far fewer cross-validations: here Optuna's
``TPESampler`` proposes ``eta_u``, ``eta_l``, ``kappa`` and ``gamma`` from
log-uniform ranges spanning the grid, ``TreeCVObjective`` cross-validates each
10-fold with TreeCV and reports the running mean AUROC after every finished fold,
and ``MedianPruner`` stops trials whose running mean falls below the median of
earlier trials at the same fold, so a poor setting costs a few folds, not ten.

The search stops once its best mean AUROC reaches the target, by default the
best of the grid study in the same storage (``--grid-study``; or give
``--target``) less one standard error of that best over its folds
(``--tolerance``), or after ``--n-trials`` trials. It prints how many evaluations
(trials and folds) it needed, the best settings, the final model (fitted on all
rows by ``optuna_treecv.refit_estimator``, trained as the trials were scored), the
time, and the time
standard 10-fold CV would take for the same trials without pruning (measured on
random grid points and extrapolated).

Usage::

    python examples/gornitz_optuna_grid.py            # first: the grid (the target)
    python examples/gornitz_tpe.py                    # then: TPE, same storage
    python examples/gornitz_tpe.py --quick --synthetic --target 0.9
"""

# The script is not run by the docs build (it takes minutes on the real data); its
# thumbnail is the figure of plot_gornitz_heatmaps.py, which draws this grid's results.
# sphinx_gallery_thumbnail_path = "gornitz_heatmaps.png"

from __future__ import annotations

import sys
import time

import _gornitz as g  # The sibling module examples/_gornitz.py.
import optuna
from optuna.trial import TrialState

from optuna_treecv import TreeCVObjective, open_storage, refit_estimator


def grid_best(storage, study_name: str) -> tuple[float, float] | None:
    """Best value of the grid study and its standard error over the folds, or
    None when there is no such study or no complete trial."""
    try:
        study = optuna.load_study(study_name=study_name, storage=storage)
    except KeyError:
        return None
    try:
        trial = study.best_trial
    except ValueError:  # No complete trial.
        return None
    return trial.value, float(trial.user_attrs.get("stderr_test_score", 0.0))


def main(argv: list[str] | None = None) -> int:
    parser = g.make_parser(__doc__.strip().splitlines()[0])
    parser.add_argument(
        "--target",
        type=float,
        default=None,
        help="stop when the best mean AUROC reaches this (default: the grid's best)",
    )
    parser.add_argument(
        "--grid-study",
        default=None,
        help="grid study to read the target from (default: the name "
        "gornitz_optuna_grid.py uses for the same --n/--grid-size)",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        default=None,
        help="count the target reached at best >= target - tolerance (default: "
        "the standard error of the grid's best over its folds, or 0 with --target)",
    )
    parser.add_argument("--n-trials", type=int, default=1_000, help="most trials")
    parser.add_argument(
        "--independent",
        action="store_true",
        help="TPE modelling each hyperparameter on its own (default: multivariate)",
    )
    args = parser.parse_args(argv)
    given_name, args.study_name = args.study_name, None
    g.check_args(parser, args)  # Sets study_name to the grid script's default.
    if args.n_trials < 1:
        parser.error(f"--n-trials must be >= 1; got {args.n_trials}")
    if args.tolerance is not None and args.tolerance < 0:
        parser.error(f"--tolerance must be >= 0; got {args.tolerance}")
    data = g.load_data(args)  # Adds "-synthetic" to study_name on the fallback.
    grid_study = args.grid_study or args.study_name
    args.study_name = given_name or args.study_name + "-tpe"
    storage = open_storage(args.storage)
    target, tolerance = args.target, args.tolerance
    if target is None:
        found = grid_best(storage, grid_study)
        if found is None:
            parser.error(
                f"no --target given and no grid study {grid_study!r} with complete "
                f"trials in {args.storage}; run gornitz_optuna_grid.py with the "
                "same options first"
            )
        target, stderr = found
        tolerance = stderr if tolerance is None else tolerance
        print(
            f"target: the grid's best mean AUROC, {target:.4f} ({grid_study!r}), "
            f"reached at >= {target - tolerance:.4f} (tolerance {tolerance:.4f}, "
            f"{'its standard error' if args.tolerance is None else 'given'})"
        )
    tolerance = tolerance or 0.0
    space = g.grid(args.grid_size)
    print(data.describe())
    print(f"study {args.study_name!r} in {args.storage}; {g.load_average()}")

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        study_name=args.study_name,
        storage=storage,
        sampler=optuna.samplers.TPESampler(
            seed=args.seed, multivariate=not args.independent
        ),  # Multivariate is Optuna 5's default for one objective.
        pruner=optuna.pruners.MedianPruner(n_startup_trials=10, n_warmup_steps=2),
        direction="maximize",
        load_if_exists=True,
    )
    objective = TreeCVObjective(
        g.make_estimator(args.seed),
        g.search_space(space),
        data.X,
        data.y,
        cv=g.N_FOLDS,
        report="running_mean",
        random_state=args.seed,
        fit_params={"labeled": data.labeled},
    )
    n_before = len(study.trials)
    reached: list[int] = []

    def stop_at_target(study: optuna.Study, trial) -> None:
        if trial.state == TrialState.COMPLETE and trial.value >= target - tolerance:
            reached.append(trial.number)
            study.stop()

    tic = time.perf_counter()
    study.optimize(objective, n_trials=args.n_trials, callbacks=[stop_at_target])
    seconds = time.perf_counter() - tic
    trials = study.trials[n_before:]
    states = [t.state for t in trials]
    folds = sum(
        sum(key.startswith("split") for key in t.user_attrs.get("cv", {}))
        for t in trials
    )
    n_grid = len(g.grid_points(space))
    print(g.load_average())
    print(
        f"{'reached' if reached else 'did NOT reach'} the target {target:.4f} "
        f"(less the tolerance {tolerance:.4f}) after {len(trials)} trials "
        f"({states.count(TrialState.COMPLETE)} complete, "
        f"{states.count(TrialState.PRUNED)} pruned): {folds} fold evaluations, "
        f"vs {n_grid:,} trials and {g.N_FOLDS * n_grid:,} folds for the grid"
    )
    g.print_best(study.best_params, study.best_value)
    # The model to deploy, trained as the best trial was scored.
    model = refit_estimator(
        study, objective.estimator, data.X, data.y, labeled=data.labeled
    )
    g.print_final_model(model, len(data.y))
    standard = g.time_standard_cv(
        data,
        g.grid_points(space),
        objective.fold_plan_,
        args.sample_standard,
        args.seed,
    )
    g.print_times(
        seconds, len(trials), standard, what="TPE with pruning", unit="trials"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
