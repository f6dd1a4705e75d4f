"""TreeCVObjective in Optuna studies: storage cost per trial; TreeCV vs standard CV.

Two measurements (``--mode``):

``storage`` (default): the per-trial cost over the CV work of
``TreeCVObjective`` next to a plain Optuna objective doing the same CV, for
each storage: in memory, SQLite in WAL mode (as ``open_storage`` opens it),
SQLite with its default rollback journal, a JournalStorage file, and
PostgreSQL when ``--postgres URL`` is given. The plain objective samples the
same parameters (``suggest_params``), runs the same ``tree_cross_validate``
on the same folds with a leaf callback that reports the running mean and asks
``should_prune`` after every fold (Optuna's recommended loop) and stores no
attribute; ``TreeCVObjective`` adds its attributes, its study identity check
and its bookkeeping. Both see the same scores, so the seeded TPE sampler
samples the same trials and the MedianPruner prunes the same ones. The cost
over the CV work is the study's wall time per trial minus the learner's time
per trial (``fit_time + score_time`` of the folds): sampling, ``ask``/``tell``,
reports, pruning reads, attributes, cloning and the engine's bookkeeping. Runs
are interleaved (repeat by repeat, storage by storage, the two objectives one
after the other, which goes first alternating), each on a fresh study; the
medians over ``--repeats`` are printed with the difference TreeCVObjective -
plain (the goal: at most 5 ms on SQLite). Wall times on a loaded machine are
noisy, so the writes are also counted, which no load changes: commits per
trial for a database, operations appended per trial for a journal. Data:
scikit-learn's digits (bundled), ``SGDClassifier``, 10 folds.

``backends``: 50 TPE trials of ``SGDClassifier`` (alpha, loss) on a
100,000-row sample of covtype (class 1 vs rest, the TreeCV paper's task;
columns standardized on the sample) with 10-fold CV, four ways: backend
``treecv`` or ``standard``, and ``MedianPruner`` or none, in memory. The TPE
seed is fixed and both backends feed each fold model the same rows in the
same order, so both backends see the same scores, sample the same trials and
prune the same ones: only the cost differs. Printed per configuration: wall
and CPU time of the study (on a shared machine CPU time is the steadier
measure), median trial time, rows fed to the learner per trial,
complete/pruned trials, best score, and the objective's overhead per trial
beyond the CV run, plus ratios standard / TreeCV. Needs ``covtype.npz``
(arrays ``X``, ``y``) from ``$OPTUNA_TREECV_DATA`` or the shared data folder
next to the checkout; without it the script says so and exits 0.

Usage: ``python benchmarks/bench_optuna.py [--mode storage] [--n-trials 60]
[--repeats 3] [--postgres URL]`` or ``python benchmarks/bench_optuna.py
--mode backends [--n-trials 50] [--n-rows 100000]``
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution
from optuna.trial import TrialState
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier
from sklearn.preprocessing import StandardScaler

from optuna_treecv import TreeCVObjective, open_storage, suggest_params
from sklearn_ext import tree_cross_validate

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
    details = [t.user_attrs["cv"] for t in trials]
    fed = np.array([d["n_samples_fed"] for d in details])
    cv_time = np.array([d["cv_time"] for d in details])
    learn = np.array([d["fit_time"] + d["score_time"] for d in details])
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


def backend_comparison(args) -> int:
    args.n_trials = args.n_trials or 50
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


# -- storage cost per trial ----------------------------------------------------------
SGD_SPACE = {
    "alpha": FloatDistribution(1e-6, 1e-1, log=True),
    "loss": CategoricalDistribution(["hinge", "log_loss", "modified_huber"]),
}


class PlainObjective:
    """What a user writes without TreeCVObjective: the same CV, report, prune."""

    def __init__(self, estimator, X, y, plan) -> None:
        self.estimator, self.X, self.y, self.plan = estimator, X, y, plan
        self.learn: list[float] = []

    def __call__(self, trial: optuna.Trial) -> float:
        estimator = clone(self.estimator).set_params(**suggest_params(trial, SGD_SPACE))
        scores: list[float] = []
        learn = [0.0]

        def leaf(result) -> None:
            scores.append(float(next(iter(result.scores.values()))))
            learn[0] += result.fit_time + result.score_time
            trial.report(math.fsum(scores) / len(scores), step=len(scores) - 1)
            if trial.should_prune():
                raise optuna.TrialPruned()

        try:
            tree_cross_validate(
                estimator,
                self.X,
                self.y,
                cv=self.plan,
                leaf_callback=leaf,
            )
        finally:
            self.learn.append(learn[0])
        return math.fsum(scores) / len(scores)


def _storages(root: Path, postgres: str | None, only: list[str] | None = None):
    """(name, factory) of every storage measured; a factory opens a fresh one."""
    counter = iter(range(10**6))

    def sqlite_wal():
        return open_storage(f"sqlite:///{root / f'wal{next(counter)}.db'}"), None

    def sqlite_rollback():
        url = f"sqlite:///{root / f'rollback{next(counter)}.db'}"
        return optuna.storages.RDBStorage(url), None

    def journal():
        path = root / f"journal{next(counter)}.log"
        return open_storage(f"journal:{path}"), path

    storages = [
        ("memory", lambda: (open_storage("memory"), None)),
        ("sqlite (WAL)", sqlite_wal),
        ("sqlite (rollback)", sqlite_rollback),
        ("journal", journal),
    ]
    if postgres:
        storages.append(("postgresql", lambda: (open_storage(postgres), None)))
    if only:
        storages = [(name, f) for name, f in storages if name.split()[0] in only]
    return storages


def _write_counter(storage, journal: Path | None = None):
    """A callable returning the writes made so far to ``storage``, or None."""
    if isinstance(storage, optuna.storages.RDBStorage):
        from sqlalchemy import event

        commits = [0]

        def on_commit(connection) -> None:
            commits[0] += 1

        event.listen(storage.engine, "commit", on_commit)
        return lambda: commits[0]
    if journal is not None:  # The log: one line per operation.

        def lines() -> int:
            with open(journal, "rb") as f:
                return sum(1 for _ in f)

        return lines
    return None


def _one_study(kind: str, opened, X, y, args) -> dict:
    storage, journal = opened
    estimator = SGDClassifier(random_state=args.seed)
    treecv = TreeCVObjective(estimator, SGD_SPACE, X, y, cv=args.cv)
    if kind == "plain":
        objective = PlainObjective(estimator, X, y, treecv.fold_plan_)
    else:
        objective = treecv
    study = optuna.create_study(
        storage=storage,
        direction="maximize",
        sampler=optuna.samplers.TPESampler(seed=args.seed),
        pruner=optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=1),
    )
    writes = _write_counter(storage, journal)
    before = writes() if writes else 0
    tic = time.perf_counter()
    study.optimize(objective, n_trials=args.n_trials)
    wall = time.perf_counter() - tic
    trials = study.get_trials(deepcopy=False)
    n_writes = (writes() - before) if writes else None
    if kind == "plain":
        learn = float(np.sum(objective.learn))
    else:
        learn = sum(
            t.user_attrs["cv"]["fit_time"] + t.user_attrs["cv"]["score_time"]
            for t in trials
        )
    n = len(trials)
    return {
        "per_trial_ms": 1e3 * wall / n,
        "learn_ms": 1e3 * learn / n,
        "cost_ms": 1e3 * (wall - learn) / n,
        "pruned": sum(t.state == TrialState.PRUNED for t in trials),
        "best": study.best_value,
        "writes": None if n_writes is None else n_writes / n,
    }


def storage_cost(args) -> int:
    args.n_trials = args.n_trials or 60
    X, y = load_digits(return_X_y=True)
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    root = Path(tempfile.mkdtemp(prefix="bench-optuna-"))
    load = os.getloadavg()
    print(
        f"bench_optuna --mode storage: {args.n_trials} TPE trials per study, "
        f"SGDClassifier on digits ({X.shape[0]} x {X.shape[1]}), {args.cv}-fold "
        f"CV, MedianPruner; {args.repeats} interleaved repeats; load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (a shared machine)"
    )
    results: dict[tuple[str, str], list[dict]] = {}
    storages = _storages(root, args.postgres, args.storages)
    try:
        for repeat in range(args.repeats):
            for name, factory in storages:
                # Alternate which objective goes first, against drift in load.
                kinds = ("plain", "treecv") if repeat % 2 == 0 else ("treecv", "plain")
                for kind in kinds:
                    result = _one_study(kind, factory(), X, y, args)
                    results.setdefault((name, kind), []).append(result)
                    print(
                        f"  repeat {repeat + 1} {name:<18} {kind:<7} "
                        f"{result['per_trial_ms']:7.1f} ms/trial, cost over CV "
                        f"{result['cost_ms']:6.1f} ms, {result['pruned']} pruned"
                        + (
                            ""
                            if result["writes"] is None
                            else f", {result['writes']:.1f} writes/trial"
                        ),
                        flush=True,
                    )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    load = os.getloadavg()
    print(
        f"\nMedians over {args.repeats} repeats (ms per trial; load average now "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}):"
    )
    header = (
        f"{'storage':<19}{'plain: trial':>13}{'CV work':>9}{'cost':>8}"
        f"{'TreeCVObjective: trial':>24}{'CV work':>9}{'cost':>8}"
        f"{'extra cost':>12}{'writes/trial plain, TreeCV':>28}"
    )
    print(header + "\n" + "-" * len(header))
    summary = []
    for name, _ in storages:
        plain = results[name, "plain"]
        tree = results[name, "treecv"]

        def med(rows, key):
            return float(np.median([r[key] for r in rows]))

        extra = float(
            np.median(
                [t["cost_ms"] - p["cost_ms"] for p, t in zip(plain, tree, strict=True)]
            )
        )
        row = {
            "storage": name,
            "plain_trial_ms": med(plain, "per_trial_ms"),
            "plain_learn_ms": med(plain, "learn_ms"),
            "plain_cost_ms": med(plain, "cost_ms"),
            "treecv_trial_ms": med(tree, "per_trial_ms"),
            "treecv_learn_ms": med(tree, "learn_ms"),
            "treecv_cost_ms": med(tree, "cost_ms"),
            "extra_cost_ms": extra,
            "pruned": [r["pruned"] for r in plain + tree],
            "plain_writes": plain[0]["writes"],
            "treecv_writes": tree[0]["writes"],
        }
        counted = (
            f"{row['plain_writes']:>19.1f}, {row['treecv_writes']:.1f}"
            if row["plain_writes"] is not None
            else f"{'-':>19}"
        )
        summary.append(row)
        print(
            f"{name:<19}{row['plain_trial_ms']:>13.1f}{row['plain_learn_ms']:>9.1f}"
            f"{row['plain_cost_ms']:>8.1f}{row['treecv_trial_ms']:>24.1f}"
            f"{row['treecv_learn_ms']:>9.1f}{row['treecv_cost_ms']:>8.1f}"
            f"{extra:>+12.1f}{counted}"
        )
    print(
        "extra cost: median over the repeats of (TreeCVObjective's cost - the "
        "plain objective's cost) in the same repeat; goal on SQLite: <= 5 ms."
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(summary, indent=2))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("storage", "backends"), default="storage")
    parser.add_argument(
        "--n-trials", type=int, default=None, help="60 (storage) or 50 (backends)"
    )
    parser.add_argument("--repeats", type=int, default=3, help="storage mode")
    parser.add_argument(
        "--postgres", help="a PostgreSQL URL to measure too (storage mode)"
    )
    parser.add_argument(
        "--storages",
        nargs="+",
        choices=("memory", "sqlite", "journal", "postgresql"),
        help="storage mode: measure only these (default: all)",
    )
    parser.add_argument("--n-rows", type=int, default=100_000, help="backends mode")
    parser.add_argument("--cv", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    if args.mode == "storage":
        return storage_cost(args)
    return backend_comparison(args)


if __name__ == "__main__":
    sys.exit(main())
