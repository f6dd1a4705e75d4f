"""TreeCV against scikit-learn's own cross_validate, on large and small data.

The fair peer of the Python tree is scikit-learn's ``cross_validate`` with the
same one-epoch learner, ``SGDClassifier(max_iter=1, tol=None, shuffle=False)``,
on the same folds (the splitter's ``(train, test)`` pairs, training rows in the
tree's feeding order): both train each fold model on one pass over its
training rows; the tree feeds about ``n log2(2k)`` rows where ``cross_validate``
feeds ``n (k - 1)``.

Part 1, per data set (covtype class 1 vs rest, 581,012 rows; digits; breast
cancer; columns standardised) and per ``k``: the medians of ``--repeats``
interleaved runs of ``tree_cross_validate(method="treecv")`` and
``cross_validate``, their ratio, the rows fed per sample by each, and the mean
fold score of each. ``--engine-standard`` adds ``method="standard"`` through the
same engine (the old comparison, which shares the engine's overheads).

Part 2: an in-memory Optuna study of ``--n-trials`` TPE trials of that learner
(``alpha`` log-uniform, ``loss`` in hinge/log_loss/modified_huber) on digits,
10-fold, end to end, three ways: scoring each trial with
``tree_cross_validate``, with :class:`optuna_treecv.TreeCVObjective`, and with
``cross_val_score`` on the same folds. Studies are interleaved, ``--repeats``
of each; the medians and ratios are printed.

Everything runs on one thread (``threadpool_limits(1)``, ``n_jobs=None``); the
load average is printed before and after, since the machine may be shared.

Usage::

    python benchmarks/bench_treecv_scaling.py [--repeats 5] [--ks 10,100]
        [--datasets covtype,digits,breast_cancer] [--n-samples N]
        [--n-trials 200] [--no-study] [--engine-standard]
"""

from __future__ import annotations

import argparse
import math
import os
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import cross_val_score, cross_validate
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from sklearn_ext import StratifiedTreeCVSplitter, TreeCVSplitter, tree_cross_validate


def one_epoch(**params) -> SGDClassifier:
    """The learner both sides train: one pass, no shuffling, no stopping rule."""
    return SGDClassifier(max_iter=1, tol=None, shuffle=False, random_state=0, **params)


def load(name: str, n_samples: int | None):
    if name == "covtype":
        from _data import covtype_binary

        return covtype_binary(seed=0, n_samples=n_samples)
    loader = {"digits": load_digits, "breast_cancer": load_breast_cancer}[name]
    X, y = loader(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def load_average() -> str:
    return "load average " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def interleaved(functions: dict, repeats: int) -> tuple[dict, dict]:
    """Median seconds of each function over ``repeats`` interleaved rounds.

    The order of the functions alternates from round to round, so that both
    sides see the same load.
    """
    times: dict[str, list[float]] = {name: [] for name in functions}
    outputs: dict = {}
    names = list(functions)
    for round_ in range(repeats):
        for name in names if round_ % 2 == 0 else names[::-1]:
            tic = time.perf_counter()
            outputs[name] = functions[name]()
            times[name].append(time.perf_counter() - tic)
    return {name: float(np.median(t)) for name, t in times.items()}, outputs


def part_cv(args) -> None:
    print(
        "Part 1: tree_cross_validate(method='treecv') vs sklearn cross_validate, "
        "SGDClassifier(max_iter=1, tol=None, shuffle=False), same folds"
    )
    header = (
        f"{'data':>14} {'n':>7} {'k':>4} {'fed/n tree':>10} {'fed/n cv':>8} "
        f"{'tree ms':>9} {'cross_validate ms':>17} {'speed-up':>8} "
        f"{'mean score tree/cv':>19}"
    )
    if args.engine_standard:
        header += f" {'engine standard ms':>18}"
    print(header)
    for name in args.datasets.split(","):
        X, y = load(name, args.n_samples if name == "covtype" else None)
        n = len(y)
        for k in (int(v) for v in args.ks.split(",")):
            # covtype is class 1 vs rest, as in the paper; small sets stratify.
            splitter = (
                TreeCVSplitter if name == "covtype" else StratifiedTreeCVSplitter
            )(k)
            folds = list(splitter.split(X, y))

            functions = {
                "tree": lambda cv=splitter, X=X, y=y: tree_cross_validate(
                    one_epoch(), X, y, cv=cv, method="treecv", return_run_info=True
                ),
                "cv": lambda cv=folds, X=X, y=y: cross_validate(
                    one_epoch(), X, y, cv=cv
                ),
            }
            if args.engine_standard:
                functions["standard"] = lambda cv=splitter, X=X, y=y: (
                    tree_cross_validate(
                        one_epoch(),
                        X,
                        y,
                        cv=cv,
                        method="standard",
                        return_run_info=True,
                    )
                )
            repeats = args.repeats
            medians, out = interleaved(functions, repeats)
            fed_cv = sum(len(train) for train, _ in folds) / n
            line = (
                f"{name:>14} {n:>7} {k:>4} {out['tree']['n_samples_fed'] / n:>10.2f} "
                f"{fed_cv:>8.2f} {medians['tree'] * 1e3:>9.1f} "
                f"{medians['cv'] * 1e3:>17.1f} "
                f"{medians['cv'] / medians['tree']:>7.2f}x "
                f"{out['tree']['test_score'].mean():>9.4f}/"
                f"{out['cv']['test_score'].mean():.4f}"
            )
            if args.engine_standard:
                line += f" {medians['standard'] * 1e3:>18.1f}"
            print(line, flush=True)


SPACE_LOSSES = ["hinge", "log_loss", "modified_huber"]


def part_study(args) -> None:
    import optuna
    from optuna.distributions import CategoricalDistribution, FloatDistribution

    from optuna_treecv import TreeCVObjective

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    X, y = load("digits", None)
    splitter = StratifiedTreeCVSplitter(10)
    folds = list(splitter.split(X, y))

    def params(trial):
        return {
            "alpha": trial.suggest_float("alpha", 1e-7, 1e-1, log=True),
            "loss": trial.suggest_categorical("loss", SPACE_LOSSES),
        }

    def tree_objective(trial):
        est = one_epoch(**params(trial))
        return tree_cross_validate(
            est, X, y, cv=splitter, method="treecv", return_run_info=True
        )["test_score"].mean()

    def sklearn_objective(trial):
        est = one_epoch(**params(trial))
        return cross_val_score(est, X, y, cv=folds).mean()

    door = TreeCVObjective(
        one_epoch(),
        {
            "alpha": FloatDistribution(1e-7, 1e-1, log=True),
            "loss": CategoricalDistribution(SPACE_LOSSES),
        },
        X,
        y,
        cv=splitter,
        backend="treecv",
        report=None,
    )

    def study(objective):
        def run():
            s = optuna.create_study(
                direction="maximize", sampler=optuna.samplers.TPESampler(seed=0)
            )
            s.optimize(objective, n_trials=args.n_trials)
            return s.best_value

        return run

    print(
        f"\nPart 2: in-memory Optuna study, {args.n_trials} TPE trials (seed 0) of "
        "the one-epoch SGDClassifier (alpha, loss) on digits, 10 folds, end to end"
    )
    medians, best = interleaved(
        {
            "tree_cross_validate": study(tree_objective),
            "TreeCVObjective": study(door),
            "cross_val_score": study(sklearn_objective),
        },
        args.repeats,
    )
    ref = medians["cross_val_score"]
    for name, seconds in medians.items():
        print(
            f"{name:>20}: {seconds:7.2f} s  {seconds / args.n_trials * 1e3:6.1f} "
            f"ms/trial  speed-up {ref / seconds:5.2f}x  best {best[name]:.4f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ks", default="10,100")
    parser.add_argument("--datasets", default="covtype,digits,breast_cancer")
    parser.add_argument("--n-trials", type=int, default=200)
    parser.add_argument("--no-study", action="store_true")
    parser.add_argument("--no-cv", action="store_true")
    parser.add_argument("--engine-standard", action="store_true")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=FutureWarning)
    print(f"{load_average()}; one thread; medians of {args.repeats} interleaved runs")
    print(f"log2(2k) for k = 10, 100: {math.log2(20):.2f}, {math.log2(200):.2f}")
    with threadpool_limits(limits=1):
        if not args.no_cv:
            part_cv(args)
        if not args.no_study:
            part_study(args)
    print(load_average())


if __name__ == "__main__":
    main()
