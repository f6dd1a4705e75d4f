"""TreeCVObjective in a TPE study: TreeCV vs standard CV, with and without pruning.

Runs 50 TPE trials of ``SGDClassifier`` (alpha, loss) on a 100,000-row sample of
covtype (class 1 vs rest, the TreeCV paper's task; columns standardized on the
sample) with 10-fold CV, four ways: backend ``treecv`` or ``standard``, and
``MedianPruner`` or none. The TPE seed is fixed and both backends feed each
fold model the same rows in the same order, so both backends see the same
scores, sample the same trials and prune the same ones: only the cost differs.

Printed per configuration: wall and CPU time of the study (on a shared machine
CPU time is the steadier measure), median trial time, rows fed
to the learner per trial, complete/pruned trials, best score, and the
objective's overhead per trial beyond the CV run (the objective's wall time
minus ``tree_cross_validate``'s), plus ratios standard / TreeCV.

Data: ``covtype.npz`` (arrays ``X``, ``y``) from ``$OPTUNA_TREECV_DATA`` or the
shared data folder next to the checkout; without it the script says so and
exits 0.

Usage: ``python benchmarks/bench_optuna.py [--n-trials 50] [--n-rows 100000]``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution
from optuna.trial import TrialState
from sklearn.linear_model import SGDClassifier
from sklearn.preprocessing import StandardScaler

from optuna_treecv import TreeCVObjective

SPACE = {
    "alpha": FloatDistribution(1e-7, 1e-1, log=True),
    "loss": CategoricalDistribution(["hinge", "log_loss", "modified_huber"]),
}


def data_dir() -> Path:
    env = os.environ.get("OPTUNA_TREECV_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "shared" / "data"


def load_covtype(n_rows: int, seed: int):
    path = data_dir() / "covtype.npz"
    if not path.exists():
        return None
    with np.load(path) as data:
        X, y = data["X"], data["y"]
    rows = np.random.default_rng(seed).choice(X.shape[0], n_rows, replace=False)
    X = StandardScaler().fit_transform(X[rows].astype(np.float64))
    return X, np.where(y[rows] == 1, 1, -1)


class Timed:
    """Wraps the objective to measure its wall time per trial."""

    def __init__(self, objective: TreeCVObjective) -> None:
        self.objective = objective
        self.wall: dict[int, float] = {}
        self.cpu: dict[int, float] = {}

    def __call__(self, trial: optuna.Trial) -> float:
        tic, cpu = time.perf_counter(), time.process_time()
        try:
            return self.objective(trial)
        finally:
            self.wall[trial.number] = time.perf_counter() - tic
            self.cpu[trial.number] = time.process_time() - cpu


def run(X, y, backend: str, pruner: str, n_trials: int, cv: int, seed: int) -> dict:
    objective = Timed(
        TreeCVObjective(
            SGDClassifier(random_state=seed),
            SPACE,
            X,
            y,
            cv=cv,
            backend=backend,
            random_state=seed,
        )
    )
    study = optuna.create_study(
        direction="maximize",
        sampler=optuna.samplers.TPESampler(seed=seed),
        pruner=(
            optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=1)
            if pruner == "median"
            else optuna.pruners.NopPruner()
        ),
    )
    tic = time.perf_counter()
    study.optimize(objective, n_trials=n_trials)
    wall = time.perf_counter() - tic
    trials = study.trials
    fed = np.array([t.user_attrs["n_samples_fed"] for t in trials])
    cv_time = np.array([t.user_attrs["cv_time"] for t in trials])
    learn = np.array(
        [t.user_attrs["fit_time"] + t.user_attrs["score_time"] for t in trials]
    )
    obj_wall = np.array([objective.wall[t.number] for t in trials])
    return {
        "backend": backend,
        "pruner": pruner,
        "wall_s": wall,
        "cpu_s": float(sum(objective.cpu.values())),
        "median_trial_s": float(np.median(obj_wall)),
        "rows_fed_median": int(np.median(fed)),
        "rows_fed_mean": float(np.mean(fed)),
        "rows_fed_total": int(fed.sum()),
        "complete": sum(t.state == TrialState.COMPLETE for t in trials),
        "pruned": sum(t.state == TrialState.PRUNED for t in trials),
        "best": study.best_value,
        "best_params": study.best_params,
        "overhead_ms_median": float(np.median(obj_wall - cv_time) * 1e3),
        "overhead_ms_max": float(np.max(obj_wall - cv_time) * 1e3),
        "non_learning_ms_median": float(np.median(obj_wall - learn) * 1e3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-trials", type=int, default=50)
    parser.add_argument("--n-rows", type=int, default=100_000)
    parser.add_argument("--cv", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    data = load_covtype(args.n_rows, args.seed)
    if data is None:
        print(
            f"covtype.npz not found in {data_dir()}; set OPTUNA_TREECV_DATA to a "
            "folder holding it (arrays X, y). Skipping bench_optuna."
        )
        return 0
    X, y = data
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    print(
        f"bench_optuna: {args.n_trials} TPE trials, SGDClassifier on covtype "
        f"({X.shape[0]:,} x {X.shape[1]}, class 1 vs rest), {args.cv}-fold CV"
    )
    results = []
    for pruner in ("none", "median"):
        for backend in ("treecv", "standard"):
            result = run(X, y, backend, pruner, args.n_trials, args.cv, args.seed)
            results.append(result)
            print(
                f"  done {backend:<8} pruner={pruner:<6} {result['wall_s']:7.1f} s",
                flush=True,
            )

    header = (
        f"{'backend':<9}{'pruner':<8}{'wall s':>8}{'CPU s':>8}{'med trial s':>12}"
        f"{'rows fed/trial med/mean':>26}{'complete':>9}{'pruned':>7}{'best':>8}"
        f"{'overhead ms (med/max)':>23}"
    )
    print("\n" + header + "\n" + "-" * len(header))
    for r in results:
        print(
            f"{r['backend']:<9}{r['pruner']:<8}{r['wall_s']:>8.1f}{r['cpu_s']:>8.1f}"
            f"{r['median_trial_s']:>12.3f}{r['rows_fed_median']:>15,} / "
            f"{r['rows_fed_mean']:<8,.0f}"
            f"{r['complete']:>9}{r['pruned']:>7}{r['best']:>8.4f}"
            f"{r['overhead_ms_median']:>13.2f} / {r['overhead_ms_max']:.2f}"
        )
    print("\nRatios standard / TreeCV (same trials, same pruning decisions):")
    by = {(r["backend"], r["pruner"]): r for r in results}
    for pruner in ("none", "median"):
        tree, std = by["treecv", pruner], by["standard", pruner]
        print(
            f"  pruner={pruner:<6} wall {std['wall_s'] / tree['wall_s']:.2f}x, "
            f"CPU {std['cpu_s'] / tree['cpu_s']:.2f}x, "
            f"median trial {std['median_trial_s'] / tree['median_trial_s']:.2f}x, "
            f"rows fed {std['rows_fed_total'] / tree['rows_fed_total']:.2f}x"
        )
    base = by["standard", "none"]
    best = by["treecv", "median"]
    print(
        f"  TreeCV + MedianPruner vs standard, no pruning: wall "
        f"{base['wall_s'] / best['wall_s']:.2f}x, CPU "
        f"{base['cpu_s'] / best['cpu_s']:.2f}x, rows fed "
        f"{base['rows_fed_total'] / best['rows_fed_total']:.2f}x"
    )
    worst = max(r["overhead_ms_median"] for r in results)
    print(
        f"Objective overhead per trial beyond the CV run (parameter sampling, "
        f"clone, attributes): median <= {worst:.2f} ms (target: at most 5 ms)."
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
