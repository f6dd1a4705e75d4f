"""When do two seeding chains pay, and what does a thread-pool limit cost?

Part 1: ``alpha_seeded_cv`` with one seeding chain (``n_jobs=1``) against two
(``n_jobs=2``, with the row threshold of ``MIN_ROWS_FOR_CHAINS`` lifted so two
chains run on any size) on madelon, a9a and w8a samples of 500 to
2,000 rows, 10-fold; the ratio is the two-chain speed-up. It is what
``MIN_ROWS_FOR_CHAINS`` is set from.

Part 2: the cost of one BLAS thread limit, ``threadpoolctl.threadpool_limits``
(which looks for the loaded libraries on every call) against the cached
controller of ``sklearn_ext.utils._threads.blas_limits``, side by side.

Medians of interleaved repeats; the load average is printed. Data:
``../shared/data`` or ``$OPTUNA_TREECV_DATA``; the script says so and exits 0
when it is absent. ``python benchmarks/bench_svm_chains.py --repeats 5``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from sklearn.model_selection import StratifiedKFold
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _data import require, svm_dataset  # noqa: E402

from sklearn_ext.model_selection import FoldPlan  # noqa: E402
from sklearn_ext.svm import AlphaSeededSVC, _cv, alpha_seeded_cv  # noqa: E402
from sklearn_ext.utils._threads import blas_limits  # noqa: E402

#: name: (C, gamma), the settings of bench_svm_cv.py
SETS = {"madelon": (1.0, 1.0 / 500), "a9a": (100.0, 0.5), "w8a": (64.0, 7.8125)}
ROWS = (500, 750, 1000, 1500, 2000)


def chains(repeats: int) -> None:
    _cv.MIN_ROWS_FOR_CHAINS = 0  # two chains whatever the size
    print(f"one vs two seeding chains, 10-fold, medians of {repeats} interleaved")
    print(f"  {'set':<8}{'rows':>6}{'1 chain s':>11}{'2 chains s':>12}{'speed-up':>10}")
    for name, (C, gamma) in SETS.items():
        require(f"{name}.npz")
        for rows in ROWS:
            X, y = svm_dataset(name, rows)
            folds = StratifiedKFold(10, shuffle=True, random_state=0).split(X, y)
            plan = FoldPlan([test for _, test in folds], n_samples=X.shape[0])
            times = {1: [], 2: []}
            for _ in range(repeats):
                for n_jobs in (1, 2):
                    tic = time.perf_counter()
                    alpha_seeded_cv(
                        AlphaSeededSVC(C=C, gamma=gamma), X, y, cv=plan, n_jobs=n_jobs
                    )
                    times[n_jobs].append(time.perf_counter() - tic)
            one, two = (statistics.median(times[j]) for j in (1, 2))
            print(f"  {name:<8}{rows:>6}{one:>11.4f}{two:>12.4f}{one / two:>9.2f}x")


def limits(repeats: int, calls: int = 200) -> None:
    def per_call(make) -> float:
        tic = time.perf_counter()
        for _ in range(calls):
            with make():
                pass
        return (time.perf_counter() - tic) / calls * 1e3

    runs = {
        "threadpool_limits": lambda: threadpool_limits(limits=1, user_api="blas"),
        "blas_limits (cached)": lambda: blas_limits(1),
    }
    measured = {name: [] for name in runs}
    for _ in range(repeats):
        for name, make in runs.items():
            measured[name].append(per_call(make))
    old, new = (statistics.median(measured[name]) for name in runs)
    print(f"one BLAS thread limit, medians of {repeats} interleaved rounds:")
    print(
        f"  threadpool_limits {old:.3f} ms, blas_limits {new:.4f} ms ({old / new:.0f}x)"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"load average at the start: {os.getloadavg()}")
    limits(args.repeats)
    chains(args.repeats)
    print(f"load average at the end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
