"""
All 10^4 grid points of a semi-supervised anomaly detector, each cross-validated 10-fold
========================================================================================

The SSAD method of Görnitz et al. (JAIR 2013) has four hyperparameters (``eta_u``,
``eta_l``, ``kappa`` and the kernel width ``gamma``); ten values each make 10,000
cross-validations. This script runs all of them on a 20,000-row sample of the
ForestCover anomaly benchmark (5 % of the labels revealed), each by 10-fold TreeCV
inside Optuna: a grid sampler (Optuna's ``GridSampler``, made resumable and linear
in cost, see ``optuna_treecv.ResumableGridSampler``) proposes the points and
``TreeCVObjective`` scores each by its mean held-out AUROC.

The study lives in SQLite (``--storage sqlite:///gornitz.db``): interrupt it at any
time (Ctrl-C lets the running trial finish: ``optimize_until_interrupted``)
and run the same command again, and it evaluates only the grid points that have no
complete trial yet. At the end it prints the best settings, the final model (the
best settings fitted on all rows by ``optuna_treecv.refit_estimator``, trained as
the trials were scored: one ordered pass of SSAD's ``fit``), the time
taken and the time standard 10-fold CV would take (measured on ``--sample-standard``
random grid points and extrapolated).

Usage::

    python examples/gornitz_optuna_grid.py                       # the full grid
    python examples/gornitz_optuna_grid.py --quick --synthetic   # 16 points, seconds
"""

# The script is not run by the docs build (it takes minutes on the real data); its
# thumbnail is the figure of plot_gornitz_heatmaps.py, which draws this grid's results.
# sphinx_gallery_thumbnail_path = "gornitz_heatmaps.png"

from __future__ import annotations

import sys
import time

import _gornitz as g  # The sibling module examples/_gornitz.py.
import optuna

from optuna_treecv import (
    ResumableGridSampler,
    TreeCVObjective,
    open_storage,
    optimize_until_interrupted,
    refit_estimator,
)
from sklearn_ext import StratifiedTreeCVSplitter


def main(argv: list[str] | None = None) -> int:
    parser = g.make_parser(__doc__.strip().splitlines()[0])
    parser.add_argument(
        "--max-trials",
        type=int,
        default=None,
        help="stop after this many trials (rerun to continue)",
    )
    parser.add_argument(
        "--method",
        choices=("treecv", "standard"),
        default="treecv",
        help="cross-validate each point with TreeCV, or with standard 10-fold CV "
        "(to time the standard grid through the same Optuna pipeline; its own "
        "study, named with a '-standard' suffix)",
    )
    args = parser.parse_args(argv)
    g.check_args(parser, args)
    if args.max_trials is not None and args.max_trials < 1:
        parser.error(f"--max-trials must be >= 1; got {args.max_trials}")
    data = g.load_data(args)
    if args.method == "standard":
        args.study_name += "-standard"
    space = g.grid(args.grid_size)
    n_points = len(g.grid_points(space))
    print(data.describe())
    print(g.describe_grid(space))
    print(f"study {args.study_name!r} in {args.storage}; {g.load_average()}")

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = ResumableGridSampler(space, seed=args.seed)
    study = optuna.create_study(
        study_name=args.study_name,
        storage=open_storage(args.storage),
        sampler=sampler,
        direction="maximize",
        load_if_exists=True,
    )
    # A process killed outright leaves its trial RUNNING; only one process works
    # on a study, so such a trial is stale: mark it failed, its point runs again.
    stale = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
    for trial in stale:
        study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
    remaining = sampler.n_remaining(study)
    done = n_points - remaining
    if done:
        print(
            f"resuming: {done:,} of {n_points:,} grid points already complete"
            + (f" ({len(stale)} stale running trial(s) marked failed)" if stale else "")
        )
    objective = TreeCVObjective(
        g.make_estimator(args.seed),
        g.search_space(space),
        data.X,
        data.y,
        # The tree's folds, each listing its rows in the tree's order: standard
        # CV then trains the same one-pass models the tree does.
        cv=StratifiedTreeCVSplitter(g.N_FOLDS),
        backend="auto" if args.method == "treecv" else "standard",
        report=None,  # A grid prunes nothing; no per-fold reports to store.
        random_state=args.seed,
        fit_params={"labeled": data.labeled},
    )
    n_trials = remaining if args.max_trials is None else min(remaining, args.max_trials)
    # Standard CV is timed on random grid points spread over the run, one every
    # `every` trials, so that it meets the same machine load as the grid.
    timer = g.StandardCVTimer(
        data, sampler.points, objective.fold_plan_, args.sample_standard, args.seed
    )
    every = max(1, n_trials // max(1, args.sample_standard))
    finished = [0]

    def time_standard(study: optuna.Study, trial) -> None:
        finished[0] += 1
        if finished[0] % every == 0:
            timer.measure_next()

    tic = time.perf_counter()
    interrupted = False
    if n_trials:
        # The first Ctrl-C stops after the running trial, whose result is kept.
        interrupted = optimize_until_interrupted(
            study,
            objective,
            n_trials=n_trials,
            callbacks=[g.ProgressPrinter(n_points, start=done), time_standard],
        )
    seconds = time.perf_counter() - tic - timer.seconds  # Without the timing.
    remaining = n_points - len(sampler.done(study))
    print(f"{g.load_average()}")
    if remaining:
        print(
            f"{'interrupted' if interrupted else 'stopped'}: {remaining:,} grid "
            "points left; run the same command again to continue"
        )
    else:
        complete = study.get_trials(
            deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)
        )
        on_grid = [sampler.point_index(t.params) for t in complete]
        print(
            f"grid complete: {n_points:,} points, {len(on_grid):,} complete trials "
            f"({len(on_grid) - len(set(on_grid))} repeated)"
        )
    if sampler.done(study):
        g.print_best(study.best_trial.params, study.best_value)
        # The model to deploy, trained as the best trial was scored.
        model = refit_estimator(
            study,
            objective.estimator,
            data.X,
            data.y,
            labeled=data.labeled,
        )
        g.print_final_model(model, len(data.y))
    evaluated = n_trials if not interrupted else len(sampler.done(study)) - done
    if evaluated:
        during, spent = len(timer.times["standard"]), timer.seconds
        standard = timer.finish()
        if standard is not None:
            print(
                f"standard CV timed on {standard['m']} random grid points, "
                f"{during} of them during the run (their {spent:.1f} s "
                "are not counted in the time below)"
            )
        g.print_times(
            seconds,
            evaluated,
            standard,
            what="Optuna + storage included",
            method="TreeCV" if args.method == "treecv" else "STANDARD CV",
        )
    return 130 if interrupted else 0  # 128 + SIGINT, as a shell reports Ctrl-C.


if __name__ == "__main__":
    sys.exit(main())
