"""Exact statistics after a per-fold scaler, side by side with GridSearchCV.

Three parts, each timed in one process with interleaved repeats (medians),
every method's peak memory measured in a fresh subprocess:

* ``flights``: ``make_pipeline(StandardScaler(), Ridge())``, 30 alphas,
  10-fold, all 327,346 flights rows with a known arrival delay (the numeric
  columns as recorded, unscaled, and one-hot carrier and origin):
  ``TreeCVSearchCV`` (exact backend, cold statistics every repeat) against
  ``GridSearchCV`` of the same pipeline. Goal: >= 30x, mean scores within 1e-10.
* ``lda``: ``make_pipeline(StandardScaler(), LinearDiscriminantAnalysis())``
  (the svd solver) 10-fold on covtype (all 581,012 rows, 7 classes):
  ``tree_cross_validate`` against ``cross_validate``.
* ``gnb``: ``make_pipeline(MinMaxScaler(), GaussianNB())`` over 10
  ``var_smoothing`` values, 10-fold on covtype: ``TreeCVSearchCV`` against
  ``GridSearchCV``.

The peers run single-threaded (``threadpool_limits(1)``; scikit-learn's
searches run with ``n_jobs=None``), ours at its defaults and with one thread.
Memory: in a subprocess per method, with the data loaded, the peak of
``tracemalloc`` (NumPy's allocations included) and the peak resident size
(``VmHWM``, reset once the data is loaded) above the resident size then.

Usage::

    python benchmarks/bench_exact_scaled.py [--parts flights lda gnb]
        [--repeats 3] [--rows N] [--no-memory]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import tracemalloc
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _data import require  # noqa: E402
from bench_exact_stats import interleaved  # noqa: E402

from sklearn_ext import TreeCVSearchCV, tree_cross_validate  # noqa: E402
from sklearn_ext.model_selection import (  # noqa: E402
    ExactStatisticsBackend,
    StatisticsCache,
)

ALPHAS = np.logspace(-3, 4, 30)
SMOOTHING = np.logspace(-9, 0, 10)


def flights_raw(n_rows: int | None = None):
    """Arrival delay from the numeric columns (as recorded) and one-hot
    carrier and origin: the features a user would hand a scaled pipeline."""
    with np.load(require("nycflights13_flights.npz")) as data:
        num = data["num"].astype(np.float64)
        names = [str(n) for n in data["num_cols"]]
        carrier, origin = data["carrier_codes"], data["origin_codes"]
    target = names.index("arr_delay")
    keep = ~np.isnan(num).any(axis=1)
    features = np.delete(num[keep], target, axis=1)
    onehot = [
        np.eye(int(codes.max()) + 1)[codes[keep].astype(int)]
        for codes in (carrier, origin)
    ]
    X, y = np.hstack([features, *onehot]), num[keep, target]
    if n_rows is not None:
        X, y = X[:n_rows], y[:n_rows]
    return np.ascontiguousarray(X), y


def covtype(n_rows: int | None = None):
    """Covertype, all seven classes, raw features, rows permuted once."""
    with np.load(require("covtype.npz")) as data:
        X, y = data["X"].astype(np.float64), data["y"].astype(np.int64)
    order = np.random.RandomState(0).permutation(len(y))[:n_rows]
    return np.ascontiguousarray(X[order]), y[order]


# -- the methods of each part: name -> (data, callable) ----------------------------
def _flights_methods(rows):
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import GridSearchCV, KFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    pipe = make_pipeline(StandardScaler(), Ridge())
    grid = {"ridge__alpha": ALPHAS}
    cv = KFold(10)

    def exact():
        backend = ExactStatisticsBackend(cache=StatisticsCache())  # cold
        return TreeCVSearchCV(pipe, grid, cv=cv, method=backend, refit=False)

    def grid_search():
        return GridSearchCV(pipe, grid, cv=cv, refit=False)

    return (
        lambda: flights_raw(rows),
        {"exact": exact, "GridSearchCV": grid_search},
        "mean_test_score",
    )


def _lda_methods(rows):
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.model_selection import KFold, cross_validate
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    pipe = make_pipeline(StandardScaler(), LinearDiscriminantAnalysis())
    cv = KFold(10, shuffle=True, random_state=0)

    class Exact:
        def fit(self, X, y):
            backend = ExactStatisticsBackend(cache=StatisticsCache())  # cold
            self.result = tree_cross_validate(
                pipe, X, y, cv=cv, method=backend, return_run_info=True
            )
            return self

    class Reference:
        def fit(self, X, y):
            self.result = cross_validate(pipe, X, y, cv=cv)
            return self

    return (lambda: covtype(rows), {"exact": Exact, "cross_validate": Reference}, None)


def _gnb_methods(rows):
    from sklearn.model_selection import GridSearchCV, KFold
    from sklearn.naive_bayes import GaussianNB
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler

    pipe = make_pipeline(MinMaxScaler(), GaussianNB())
    grid = {"gaussiannb__var_smoothing": SMOOTHING}
    cv = KFold(10, shuffle=True, random_state=0)

    def exact():
        backend = ExactStatisticsBackend(cache=StatisticsCache())  # cold
        return TreeCVSearchCV(pipe, grid, cv=cv, method=backend, refit=False)

    def grid_search():
        return GridSearchCV(pipe, grid, cv=cv, refit=False)

    return (
        lambda: covtype(rows),
        {"exact": exact, "GridSearchCV": grid_search},
        "mean_test_score",
    )


PARTS = {"flights": _flights_methods, "lda": _lda_methods, "gnb": _gnb_methods}


def _scores(fitted, column):
    if column is not None:
        return fitted.cv_results_[column]
    return np.asarray(fitted.result["test_score"])


def run_part(part: str, repeats: int, rows: int | None, memory: bool) -> None:
    load, methods, column = PARTS[part](rows)
    X, y = load()
    peer = [name for name in methods if name != "exact"][0]

    def timed(name, threads):
        def run():
            with threadpool_limits(threads):
                return methods[name]().fit(X, y)

        return run

    print(f"\n[{part}] {X.shape[0]:,} x {X.shape[1]}, load {os.getloadavg()}")
    medians, first = interleaved(
        {
            "exact (default threads)": timed("exact", None),
            "exact (1 thread)": timed("exact", 1),
            f"{peer} (1 thread)": timed(peer, 1),
        },
        repeats,
    )
    ours = _scores(first["exact (default threads)"], column)
    ref = _scores(first[f"{peer} (1 thread)"], column)
    gap = float(np.max(np.abs(ours - ref)))
    backend = getattr(first["exact (1 thread)"], "result", {}).get("backend")
    base = medians[f"{peer} (1 thread)"]
    for name, seconds in medians.items():
        print(f"  {name:<28s} {seconds:9.3f} s  ({base / seconds:7.1f}x faster)")
    print(
        f"  max |score - {peer}'s| = {gap:.1e} over {ours.shape[0]} scores"
        + (f"; backend {backend}" if backend else "")
    )
    if memory:
        for name in methods:
            peak = _memory_in_subprocess(part, name, rows)
            traced, above = peak["traced"] / 2**20, peak["peak"] - peak["before"]
            print(
                f"  memory of {name:<16s} tracemalloc peak {traced:8.1f} MiB; "
                f"resident peak {above / 2**10:8.1f} MiB above the "
                f"{peak['before'] / 2**10:.0f} MiB of the loaded data"
            )
    print(f"  load after {os.getloadavg()}")


def _memory_in_subprocess(part: str, name: str, rows: int | None) -> dict:
    argv = [sys.executable, __file__, "--memory-of", part, name]
    if rows is not None:
        argv += ["--rows", str(rows)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def measure_memory(part: str, name: str, rows: int | None) -> None:
    """Run one method once, print its peak memory as JSON (child process)."""
    warnings.simplefilter("ignore")
    load, methods, _ = PARTS[part](rows)
    X, y = load()
    method = methods[name]()
    # The peak resident size from here on: Linux resets VmHWM to the
    # current size on "5" (imports and the loading do not count).
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
    before = _status_kib("VmRSS")
    tracemalloc.start()
    method.fit(X, y)
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    peak = _status_kib("VmHWM")
    print(json.dumps({"traced": traced, "peak": peak, "before": before}))


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", default=list(PARTS), choices=PARTS)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rows", type=int, default=None, help="first rows only")
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--memory-of", nargs=2, metavar=("PART", "METHOD"))
    args = parser.parse_args()
    if args.memory_of:
        measure_memory(*args.memory_of, args.rows)
        return
    print(f"load average {os.getloadavg()}, {os.cpu_count()} CPUs")
    warnings.simplefilter("ignore")
    tic = time.perf_counter()
    for part in args.parts:
        run_part(part, args.repeats, args.rows, not args.no_memory)
    print(f"\ntotal {time.perf_counter() - tic:.0f} s, load {os.getloadavg()}")


if __name__ == "__main__":
    main()
