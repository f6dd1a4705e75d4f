"""Rows in file order: what the tree reports by default, against shuffled rows.

``PegasosClassifier(alpha=1e-6, fit_intercept=False)`` on Covertype (class 1 vs rest,
columns standardised) with ``tree_cross_validate`` at its defaults, leave-one-out and
1,000-fold, on the first 5,000, the first 50,000 and all 581,012 rows:

- ``file order``: the rows as stored in ``covtype.npz`` (sorted in long runs of the
  same cover type), folds ``TreeCVSplitter(k)``: the error reported, and whether the
  run said a ``TreeCVOrderWarning`` (the estimate then depends on the row order);
- ``shuffled``: the same rows permuted once (seed 0): the error and twice its standard
  error (over the held-out rows, a binomial proportion);
- ``CLI``: ``optuna-treecv cv pegasos`` on the same rows saved in file order, at its
  defaults (folds of rows shuffled with ``--seed 0``; ``--preprocess none`` since the
  columns are standardised here, so the native engine runs), its reported error.

The goal (issue 34): the default's error within two standard errors of the shuffled
one, or the warning. Scores, not times: the machine's load does not change them.

Run: ``python benchmarks/bench_file_order.py`` (``--max-rows 50000`` skips all rows).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import require  # noqa: E402

from sklearn_ext import PegasosClassifier, TreeCVSplitter, tree_cross_validate  # noqa: E402
from sklearn_ext.model_selection import TreeCVOrderWarning  # noqa: E402


def covtype_file_order():
    with np.load(require("covtype.npz")) as data:
        X, y = data["X"].astype(np.float64), data["y"]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return np.ascontiguousarray(X), np.where(y == 1, 1, -1)


def tree_error(X, y, k):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = tree_cross_validate(
            PegasosClassifier(alpha=1e-6, fit_intercept=False),
            X,
            y,
            cv=TreeCVSplitter(k),
        )
    # Each fold's accuracy weighted by its size: the error over all held-out rows.
    sizes = np.diff(np.linspace(0, len(y), k + 1).astype(int))
    error = 1.0 - float(np.average(result["test_score"], weights=sizes))
    warned = any(issubclass(w.category, TreeCVOrderWarning) for w in caught)
    return error, warned


def cli_error(X, y, k):
    from optuna_treecv._cli import main as cli

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.npz"
        np.savez(path, X=X, y=y)
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            argv = ["cv", "pegasos", str(path), "--cv", str(k), "--preprocess",
                    "none", "--set", "alpha=1e-6", "--set", "fit_intercept=False",
                    "--no-standard"]  # fmt: skip
            code = cli(argv)
    if code != 0:
        return float("nan")
    for line in out.getvalue().splitlines():
        parts = line.split()
        if parts and parts[0] != "standard" and len(parts) >= 3:
            try:
                return 1.0 - float(parts[1])
            except ValueError:
                continue
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-rows", type=int, default=None)
    args = parser.parse_args()
    X_all, y_all = covtype_file_order()
    print(f"load {os.getloadavg()}")
    print(
        "| rows | k | file order (default) | order warning | shuffled ± 2 SE | "
        "within 2 SE | CLI default |"
    )
    print("|---|---|---|---|---|---|---|")
    for n in (5_000, 50_000, len(y_all)):
        if args.max_rows is not None and n > args.max_rows:
            continue
        X, y = X_all[:n], y_all[:n]
        rows = np.random.RandomState(0).permutation(n)
        for k in (n, 1000):
            ordered, warned = tree_error(X, y, k)
            shuffled, _ = tree_error(X[rows], y[rows], k)
            bound = 2 * np.sqrt(shuffled * (1 - shuffled) / n)
            cli = cli_error(X, y, k) if n <= 50_000 else float("nan")
            print(
                f"| {n:,} | {'n (LOO)' if k == n else k} | {ordered:.2%} | "
                f"{'yes' if warned else 'no'} | {shuffled:.2%} ± {bound:.2%} | "
                f"{'yes' if abs(ordered - shuffled) <= bound else 'no'} | "
                f"{cli:.2%} |",
                flush=True,
            )
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
