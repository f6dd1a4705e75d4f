"""The tree as a fidelity ladder: pruned Optuna studies and a racing search (issue 37).

Walked level by level, the TreeCV tree gives after level ``l`` (``l`` passes
over the data) a complete ``2**l``-fold CV over all rows, its *rung*. Three
parts, on three data sets of the shared data (``covtype`` 200,000 rows, class 1
vs rest, with ``PegasosClassifier``; ``a9a`` with ``LogisticSGDClassifier``;
``flights``, nycflights13 arrival delay, with ``LeastSquaresSGDRegressor``),
k = 16 folds (a 4-rung ladder):

``optuna``: per data set and seed, three 100-trial TPE studies (sampler and
folds seeded by the seed): the unpruned tree (``NopPruner``, nothing
reported), today's per-fold reporting (``report="running_mean"``: the mean of
the folds done, after each fold) with ``--pruner``, and the ladder
(``report="levels"``) with the same pruner (``--pruner rung-percentile10``:
``RungPruner(PercentilePruner(10.0))`` for both). Printed per run: each study's best
trial's full k-fold score (every best trial is complete) against the unpruned
study's best and its standard error (``std(ddof=1) / sqrt(k)`` of its fold
scores), whether it is within one SE, the rows fed to the learner over the
study (pruned trials counted up to where they stopped) and the ratios
unpruned / ladder and per-fold / ladder. Rows are counted, not timed, so the
figures do not depend on the machine's load.

``racing``: a 50-candidate grid, one ``TreeCVSearchCV`` with and one without
``racing=True`` per seed (the folds' shuffle), ``--race-seeds`` seeds: the
best candidate of both, whether they agree, the rows fed and their ratio.

``bias``: per data set, ``--n-configs`` parameter points drawn from the
study's space: every rung's estimate against the full k-fold score (mean and
standard deviation of the difference, Spearman correlation across the points),
next to what per-fold reporting knows after about the same rows (the first
fold's score after ~15n/16 rows, the mean of the first two after ~n), and the
half rung's (after ~n/2 rows).

Needs the shared data (``covtype.npz``, ``a9a.npz``,
``nycflights13_flights.npz``) from ``$OPTUNA_TREECV_DATA`` or ``shared/data``
beside the checkout; without it the script says so and exits 0. Run it under
``flock /work/coord/bench.lock`` on a shared machine; the load average is
printed before and after.

Usage: ``python benchmarks/bench_ladder.py [--parts optuna racing bias]
[--datasets covtype a9a flights] [--seeds 5] [--n-trials 100] [--pruner
median] [--race-seeds 10]``; ``--quick`` runs a small version (20 trials, 2
seeds, a 20-candidate grid) to check that the script works.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import optuna  # noqa: E402
from _data import covtype_binary, require, svm_dataset  # noqa: E402
from _native_common import flights  # noqa: E402
from optuna.distributions import FloatDistribution  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402

from optuna_treecv import RungPruner, TreeCVObjective  # noqa: E402
from optuna_treecv._ladder import n_steps  # noqa: E402
from sklearn_ext import (  # noqa: E402
    LeastSquaresSGDRegressor,
    LogisticSGDClassifier,
    PegasosClassifier,
    TreeCVSearchCV,
    TreeCVSplitter,
)
from sklearn_ext.model_selection._backends import PythonTreeBackend  # noqa: E402
from sklearn_ext.model_selection._core import RunCore  # noqa: E402
from sklearn_ext.model_selection._levels import EARLY_RUNGS  # noqa: E402

K = 16


# -- data sets -------------------------------------------------------------------------
def _covtype():
    return covtype_binary(seed=0, n_samples=200_000)


def _a9a():
    require("a9a.npz")
    return svm_dataset("a9a")


def _flights():
    return flights(seed=0)


#: name -> (loader, learner, search space, racing grid of 50 candidates)
DATASETS = {
    "covtype": (
        _covtype,
        lambda: PegasosClassifier(),
        {
            "alpha": FloatDistribution(1e-8, 1e-1, log=True),
        },
        {"alpha": np.logspace(-8, -1, 25).tolist(), "fit_intercept": [True, False]},
    ),
    "a9a": (
        _a9a,
        lambda: LogisticSGDClassifier(),
        {"alpha": FloatDistribution(1e-8, 1e-1, log=True)},
        {"alpha": np.logspace(-8, -1, 25).tolist(), "fit_intercept": [True, False]},
    ),
    "flights": (
        _flights,
        lambda: LeastSquaresSGDRegressor(),
        {
            "eta0": FloatDistribution(1e-3, 1e2, log=True),
            "radius": FloatDistribution(1e-2, 1e2, log=True),
        },
        {
            "eta0": np.logspace(-3, 2, 10).tolist(),
            "radius": np.logspace(-2, 2, 5).tolist(),
        },
    ),
}


#: The pruners of ``--pruner``; ``rung-NAME`` wraps NAME in ``RungPruner``.
PRUNERS = ("median", "percentile", "percentile10", "percentile15", "sha", "hyperband")


def make_pruner(name: str, report: str) -> optuna.pruners.BasePruner:
    """The same pruner for both reports; ``report`` gives its last step."""
    if name.startswith("rung-"):  # each step judged on its own value
        return RungPruner(make_pruner(name[len("rung-") :], report))
    # The ladder reports its early rungs at steps 1 and 2, rung l at l + 2.
    last = n_steps(K) if report == "levels" else K - 1
    if name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=0)
    if name.startswith("percentile"):  # "percentile10": keep the top 10 %
        return optuna.pruners.PercentilePruner(
            float(name[len("percentile") :] or 25), n_startup_trials=5, n_warmup_steps=0
        )
    if name == "sha":
        return optuna.pruners.SuccessiveHalvingPruner(
            min_resource=1, reduction_factor=4
        )
    if name == "hyperband":
        return optuna.pruners.HyperbandPruner(
            min_resource=1, max_resource=last, reduction_factor=3
        )
    raise ValueError(f"Unknown pruner {name!r}.")


def _backend(estimator, X, y):
    """ "auto" if its backend walks levels, else the Python tree (same rows)."""
    core = RunCore(estimator, X, y, cv=TreeCVSplitter(K))
    backend = core.resolve(estimator).backend
    return "auto" if getattr(backend, "supports_levels", False) else PythonTreeBackend()


# -- optuna ----------------------------------------------------------------------------
def run_study(data, name, seed, report, pruner_name, n_trials, backend) -> dict:
    """One TPE study; its best trial's score and SE, and the rows fed."""
    X, y = data
    _, learner, space, _ = DATASETS[name]
    objective = TreeCVObjective(
        learner(),
        space,
        X,
        y,
        cv=TreeCVSplitter(K, shuffle=True, random_state=seed),
        backend=backend,
        report=report,
        random_state=seed,
    )
    pruner = (
        optuna.pruners.NopPruner()
        if pruner_name is None
        else make_pruner(pruner_name, report)
    )
    study = optuna.create_study(
        direction="maximize",
        sampler=optuna.samplers.TPESampler(seed=seed),
        pruner=pruner,
    )
    tic = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study.optimize(objective, n_trials=n_trials)
    trials = study.trials
    best = study.best_trial
    return {
        "best": float(best.value),
        "se": float(best.user_attrs["stderr_test_score"]),
        "rows": sum(int(t.user_attrs["cv"]["n_samples_fed"]) for t in trials),
        "pruned": sum(t.state == optuna.trial.TrialState.PRUNED for t in trials),
        "wall": time.perf_counter() - tic,
    }


def part_optuna(args, data_sets) -> dict:
    summary = {}
    for name in args.datasets:
        data = data_sets[name]
        backend = _backend(DATASETS[name][1](), *data)
        print(
            f"\n== {name}: {data[0].shape[0]} rows, k={K}, {args.n_trials} TPE "
            f"trials, pruner={args.pruner}, backend="
            f"{backend if isinstance(backend, str) else backend.name}"
        )
        print(
            "seed | unpruned best (SE)  | per-fold best  in | ladder best   in | "
            "rows unpruned  per-fold    ladder | unpr/lad  pf/lad | pruned pf/lad"
        )
        rows = []
        for seed in range(args.seeds):
            full = run_study(data, name, seed, None, None, args.n_trials, backend)
            fold = run_study(
                data, name, seed, "running_mean", args.pruner, args.n_trials, backend
            )
            ladder = run_study(
                data, name, seed, "levels", args.pruner, args.n_trials, backend
            )
            floor = full["best"] - full["se"]
            row = (
                seed,
                fold["best"] >= floor,
                ladder["best"] >= floor,
                full["rows"] / ladder["rows"],
                fold["rows"] / ladder["rows"],
                full["rows"] / fold["rows"],
            )
            rows.append(row)
            print(
                f"{seed:4d} | {full['best']:.5f} ({full['se']:.5f}) | "
                f"{fold['best']:.5f} {'yes' if row[1] else 'NO ':>3} | "
                f"{ladder['best']:.5f} {'yes' if row[2] else 'NO ':>3} | "
                f"{full['rows']:>13,} {fold['rows']:>11,} {ladder['rows']:>11,} | "
                f"{row[3]:7.2f}x {row[4]:6.2f}x | "
                f"{fold['pruned']:3d}/{ladder['pruned']:3d}"
                f"   ({full['wall']:.0f}/{fold['wall']:.0f}/{ladder['wall']:.0f} s)",
                flush=True,
            )
        within = sum(r[2] for r in rows)
        ratio_full = float(np.median([r[3] for r in rows]))
        ratio_fold = float(np.median([r[4] for r in rows]))
        print(
            f"ladder within one SE in {within}/{len(rows)} runs "
            f"(per-fold: {sum(r[1] for r in rows)}/{len(rows)}); rows, median over "
            f"seeds: unpruned/ladder {ratio_full:.2f}x (min "
            f"{min(r[3] for r in rows):.2f}x), per-fold/ladder {ratio_fold:.2f}x "
            f"(min {min(r[4] for r in rows):.2f}x), unpruned/per-fold "
            f"{float(np.median([r[5] for r in rows])):.2f}x"
        )
        summary[name] = (within, len(rows), ratio_full, ratio_fold)
    return summary


# -- racing ----------------------------------------------------------------------------
def part_racing(args, data_sets) -> None:
    for name in args.race_datasets:
        X, y = data_sets[name]
        _, learner, _, grid = DATASETS[name]
        backend = _backend(learner(), X, y)
        if args.quick:
            grid = {key: values[::3] for key, values in grid.items()}
        n_candidates = math.prod(len(v) for v in grid.values())
        print(
            f"\n== racing on {name}: {n_candidates} candidates, k={K}, "
            f"racing_alpha={args.racing_alpha}"
        )
        print("seed | best without racing           | with racing | same | rows ratio")
        same, ratios = 0, []
        for seed in range(args.race_seeds):
            cv = TreeCVSplitter(K, shuffle=True, random_state=seed)
            results = []
            for racing in (False, True):
                search = TreeCVSearchCV(
                    learner(),
                    grid,
                    cv=cv,
                    method=backend,
                    refit=False,
                    racing=racing,
                    racing_alpha=args.racing_alpha,
                    return_run_info=True,
                )
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    search.fit(X, y)
                results.append(search)
            plain, raced = results
            rows_plain = int(np.sum(plain.cv_results_["n_samples_fed"]))
            rows_raced = int(np.sum(raced.cv_results_["n_samples_fed"]))
            agree = plain.best_index_ == raced.best_index_
            same += agree
            ratios.append(rows_plain / rows_raced)
            survivors = int(
                np.sum(
                    raced.cv_results_["race_rung"]
                    == raced.cv_results_["race_rung"].max()
                )
            )
            print(
                f"{seed:4d} | {plain.best_index_:3d} {plain.best_score_:.5f} "
                f"{_short(plain.best_params_):14s} | {raced.best_index_:3d} "
                f"{raced.best_score_:.5f} | {'yes' if agree else 'NO ':>4} | "
                f"{ratios[-1]:.2f}x ({survivors} reached the leaves)",
                flush=True,
            )
        print(
            f"same best in {same}/{args.race_seeds} seeds; rows without / with "
            f"racing: median {float(np.median(ratios)):.2f}x, min {min(ratios):.2f}x"
        )


def _short(params: dict) -> str:
    return ",".join(
        f"{k[:3]}={v:.0e}" if isinstance(v, float) else f"{k[:3]}={v}"
        for k, v in params.items()
    )


# -- bias ------------------------------------------------------------------------------
def part_bias(args, data_sets) -> None:
    print(
        "\n== rung estimates against the full k-fold score, over "
        f"{args.n_configs} points of each space (k={K})"
    )
    print(
        "data     | report (rows fed)            | mean diff  sd diff | top-10 diff "
        "sd | Spearman | rank of the best"
    )
    for name in args.datasets:
        X, y = data_sets[name]
        _, learner, space, _ = DATASETS[name]
        backend = _backend(learner(), X, y)
        core = RunCore(
            learner(),
            X,
            y,
            cv=TreeCVSplitter(K, shuffle=True, random_state=0),
            method=backend,
        )
        rng = np.random.RandomState(0)
        rungs, first, first2, full = [], [], [], []
        for _ in range(args.n_configs):
            params = {
                key: float(np.exp(rng.uniform(np.log(d.low), np.log(d.high))))
                for key, d in space.items()
            }
            resolved = core.resolve(learner().set_params(**params))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                levels = list(core.run_levels(resolved, early_rungs=EARLY_RUNGS))
            labels = [level.rung for level in levels]
            rungs.append([level.scores["score"] for level in levels])
            table = levels[-1].leaves
            by_leaf = np.argsort(table.leaf)
            scores = table.scores["score"][by_leaf]
            first.append(scores[0])
            first2.append(scores[:2].mean())
            full.append(float(np.mean(table.scores["score"])))
        rungs, full = np.array(rungs), np.array(full)
        lines = [("first fold (~15n/16)", np.array(first))]
        lines.append(("mean of 2 folds (~n)", np.array(first2)))
        # Rung r after about r * n rows fed: the early rungs (the quarter rung
        # after ~n/4, the half rung after ~n/2), then the levels.
        lines += [
            (f"rung {rung:g} (~{rung:g}n)", rungs[:, i])
            for i, rung in enumerate(labels[:-1])
        ]
        best = int(np.nanargmax(full))
        # The ten best points by the k-fold score: where pruning decisions bite.
        top = np.argsort(-np.nan_to_num(full, nan=-np.inf))[:10]
        for label, values in lines:
            ok = np.isfinite(values) & np.isfinite(full)
            diff = values[ok] - full[ok]
            near = values[top] - full[top]
            rho = spearmanr(values[ok], full[ok]).statistic
            # Where the k-fold best stands by this report (1: first).
            rank = 1 + int(np.sum(values[ok] > values[best]))
            print(
                f"{name:8s} | {label:28s} | {diff.mean():+9.4f} {diff.std():8.4f} | "
                f"{near.mean():+9.4f} {near.std():7.4f} | {rho:8.3f} | "
                f"{rank:3d} of {int(ok.sum())}"
            )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--parts",
        nargs="+",
        default=["optuna", "racing", "bias"],
        choices=["optuna", "racing", "bias"],
    )
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--race-datasets", nargs="+", default=["covtype"])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--n-trials", type=int, default=100)
    parser.add_argument(
        "--pruner",
        default="median",
        choices=[*PRUNERS, *(f"rung-{name}" for name in PRUNERS)],
    )
    parser.add_argument("--race-seeds", type=int, default=10)
    parser.add_argument("--racing-alpha", type=float, default=0.05)
    parser.add_argument("--n-configs", type=int, default=30)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.n_trials, args.race_seeds, args.n_configs = 2, 20, 2, 8
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    loaders = {name: DATASETS[name][0] for name in DATASETS}
    needed = set(args.datasets) | (
        set(args.race_datasets) if "racing" in args.parts else set()
    )
    data_sets = {name: loaders[name]() for name in needed}
    print(f"load average before: {Path('/proc/loadavg').read_text().strip()}")
    tic = time.perf_counter()
    if "bias" in args.parts:
        part_bias(args, data_sets)
    if "optuna" in args.parts:
        part_optuna(args, data_sets)
    if "racing" in args.parts:
        part_racing(args, data_sets)
    print(
        f"\n{time.perf_counter() - tic:.0f} s; load average after: "
        f"{Path('/proc/loadavg').read_text().strip()}"
    )


if __name__ == "__main__":
    main()
