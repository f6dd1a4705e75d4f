"""Optuna studies at any k: the command line at k = n and k = 10,000 (issue 38).

Two cases, each run as a user would, through ``optuna-treecv tune`` in a
fresh process on a fresh SQLite file (WAL, heartbeats on, as the command
opens it), next to five bare ``tree_cross_validate`` calls of the same learner
(``PegasosClassifier`` with the five trials' ``alpha``, the native tree) on
the same data and ``k``:

``loo``: leave-one-out, ``--cv n`` (581,012 folds on all of Covertype), the
median pruner (``report="running_mean"``), 5 trials.

``wilcoxon``: ``--cv 10000`` with ``--pruner wilcoxon`` (``report="per_fold"``),
5 trials.

Printed per case, medians of ``--rounds`` interleaved rounds (the command and
the bare calls one after the other, which goes first alternating): the
command's wall time, its study time ("N trials in X s"), the bare calls' wall
time and the ratio command / bare (the goal: at most 3; the command includes
starting Python, loading the data and fitting the final model, so the ratio
study / bare is printed too), the SQLite file's
size (at most 5 MB), the saved model's size (at most 100 KB), and the trials'
states (every trial complete or pruned). The command runs with
``--no-baseline`` (the baseline times standard CV, which is not the study) and
``--no-progress-bar``.

The third measurement of the issue, the objective's cost per trial over a
plain objective on SQLite (WAL) at k = 10, is ``bench_optuna.py``'s storage
mode: ``python benchmarks/bench_optuna.py --storages sqlite``.

Needs ``covtype.npz`` from ``$OPTUNA_TREECV_DATA`` or the shared data folder
next to the checkout; without it the script says so and exits 0.

Usage: ``python benchmarks/bench_optuna_any_k.py [--rounds 3] [--cases loo
wilcoxon]``; ``--quick`` runs both cases on the first 20,000 rows (k = 20,000
and 1,000, 3 trials, one round) to check that the script works.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import optuna  # noqa: E402
from _data import require  # noqa: E402

from optuna_treecv._data import load_dataset  # noqa: E402
from optuna_treecv._learners import make_learner  # noqa: E402
from sklearn_ext import tree_cross_validate  # noqa: E402

#: case -> (pruner, k or None for leave-one-out, default trials)
CASES = {"loo": ("median", None, 5), "wilcoxon": ("wilcoxon", 10_000, 5)}
GOALS = {"ratio": 3.0, "db_mb": 5.0, "model_kb": 100.0}


def run_command(data: Path, folder: Path, k: int, pruner: str, n_trials: int) -> dict:
    """One ``optuna-treecv tune`` in a fresh process on a fresh SQLite file."""
    db, model = folder / "study.db", folder / "model.joblib"
    for path in (db, model):
        path.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "optuna_treecv", "tune", "pegasos", str(data),
            "--cv", str(k), "--n-trials", str(n_trials), "--pruner", pruner,
            "--storage", f"sqlite:///{db}", "--study-name", "bench",
            "--save-model", str(model), "--no-baseline",
            "--no-progress-bar",
            # The bare learner on the file's folds, as the bare calls below.
            "--preprocess", "none", "--no-shuffle"]  # fmt: skip
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    tic = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - tic
    if done.returncode != 0:
        sys.exit(f"optuna-treecv tune failed ({done.returncode}):\n{done.stderr}")
    study_time = float(re.search(r"trials in ([\d.]+) s", done.stdout).group(1))
    study = optuna.load_study(study_name="bench", storage=f"sqlite:///{db}")
    states = [t.state.name for t in study.trials]
    return {
        "wall_s": wall,
        "study_s": study_time,
        "db_mb": db.stat().st_size / 1e6,
        "model_kb": model.stat().st_size / 1e3,
        "states": {s: states.count(s) for s in sorted(set(states))},
        "alphas": [t.params["alpha"] for t in study.trials],
    }


def run_bare(X, y, k: int, alphas: list[float]) -> float:
    """Wall seconds of one bare ``tree_cross_validate`` per alpha."""
    tic = time.perf_counter()
    for alpha in alphas:
        estimator, _ = make_learner("pegasos", random_state=0)
        tree_cross_validate(estimator.set_params(alpha=alpha), X, y, cv=k)
    return time.perf_counter() - tic


def measure(case: str, data: Path, X, y, args, folder: Path) -> dict:
    pruner, k, n_trials = CASES[case]
    k = len(y) if k is None else k
    if args.quick:
        k, n_trials = (len(y), 3) if case == "loo" else (1_000, 3)
    rounds = []
    for r in range(args.rounds):
        if r % 2 == 0:
            command = run_command(data, folder, k, pruner, n_trials)
            bare = run_bare(X, y, k, command["alphas"])
        else:
            # The bare calls first: the alphas of this round's command are
            # not known yet, so those of the previous round stand for them.
            bare = run_bare(X, y, k, rounds[-1]["command"]["alphas"])
            command = run_command(data, folder, k, pruner, n_trials)
        rounds.append({"command": command, "bare_s": bare})
        print(
            f"  {case} round {r + 1}: command {command['wall_s']:.1f} s (study "
            f"{command['study_s']:.1f} s), bare {bare:.1f} s, {command['states']}",
            flush=True,
        )

    def median(key):
        return statistics.median(r["command"][key] for r in rounds)

    bare = statistics.median(r["bare_s"] for r in rounds)
    states: dict[str, int] = {}
    for r in rounds:
        for state, count in r["command"]["states"].items():
            states[state] = states.get(state, 0) + count
    return {
        "case": case,
        "k": k,
        "n_trials": n_trials,
        "pruner": pruner,
        "command_s": median("wall_s"),
        "study_s": median("study_s"),
        "bare_s": bare,
        "ratio": median("wall_s") / bare,
        "db_mb": max(r["command"]["db_mb"] for r in rounds),
        "model_kb": max(r["command"]["model_kb"] for r in rounds),
        "states": states,
        "rounds": rounds,
    }


def report(results: list[dict]) -> None:
    header = (
        f"{'case':<9}{'k':>9}{'trials':>7}{'command s':>11}{'study s':>9}"
        f"{'bare s':>10}{'ratio':>7}{'study ratio':>12}{'SQLite MB':>11}"
        f"{'model KB':>10}  states"
    )
    print("\n" + header + "\n" + "-" * len(header))
    for r in results:
        print(
            f"{r['case']:<9}{r['k']:>9,}{r['n_trials']:>7}{r['command_s']:>11.1f}"
            f"{r['study_s']:>9.1f}{r['bare_s']:>10.1f}{r['ratio']:>7.2f}"
            f"{r['study_s'] / r['bare_s']:>12.2f}"
            f"{r['db_mb']:>11.3f}{r['model_kb']:>10.1f}  {r['states']}"
        )
    print("\nGoals (issue 38):")
    for r in results:
        finished = set(r["states"]) <= {"COMPLETE", "PRUNED"}
        checks = [
            (f"command / bare calls <= {GOALS['ratio']}", r["ratio"] <= 3.0),
            (f"SQLite file < {GOALS['db_mb']} MB", r["db_mb"] < GOALS["db_mb"]),
            (f"model < {GOALS['model_kb']} KB", r["model_kb"] < GOALS["model_kb"]),
            ("every trial complete or pruned", finished),
        ]
        for what, ok in checks:
            print(f"  {r['case']}: {what}: {'met' if ok else 'NOT MET'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=tuple(CASES), default=list(CASES))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--quick", action="store_true", help="the first 20,000 rows, one round"
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    path = require("covtype.npz")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="bench_any_k_") as tmp:
        folder = Path(tmp)
        data = path
        X, y = load_dataset(str(path))
        if args.quick:
            args.rounds = 1
            X, y = X[:20_000], y[:20_000]
            data = folder / "covtype_20000.npz"
            np.savez(data, X=X, y=y)
        print(
            f"bench_optuna_any_k: PegasosClassifier on {path.name} "
            f"({X.shape[0]:,} x {X.shape[1]}), {args.rounds} round(s)",
            flush=True,
        )
        results = [measure(c, data, X, y, args, folder) for c in args.cases]
    report(results)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
