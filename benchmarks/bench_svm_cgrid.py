"""A 10-fold grid search over C for an RBF SVM: cross-C warm starts vs SVC.

For ``C`` in ``2^-2 .. 2^7`` (10 values) and one ``gamma`` per data set, the
same 10 stratified folds, no refit:

(a) ``GridSearchCV(SVC(cache_size=2000))``;
(b) ``GridSearchCV(SVC(kernel="precomputed"))`` on the kernel matrix, built
    once with scikit-learn's ``rbf_kernel`` (its time included);
(c) ``alpha_seeded_cv`` at each C separately (shared kernel store and SIR fold
    seeding, no cross-C warm start);
(d) ``svm_c_path_cv``: one kernel store, fold seeding, cross-C warm starts from
    the previous C and the exact skip;
(e) ``TreeCVSearchCV(AlphaSeededSVC(gamma=...), {"C": ...})`` with every other
    setting at its default: cross-C warm starts from the search's own store,
    and the refit of the best C on all rows included in its time;
(f) the same as (e) on one thread (``threadpool_limits(1)``: one seeding
    chain);
(g) the same as (e) with the refit as it was before it was seeded from the
    folds: the search without refit, then the best ``C`` fitted on all rows
    on the kept kernel, SMO from ``alpha = 0``.

``--part refit`` times the refit alone: the C path once per round, then the
best ``C`` on all rows seeded from the folds and from ``alpha = 0`` (both on
the kept kernel), SMO iterations and seconds. ``--part chains`` times the C
path on one seeding chain and on two, and profiles where the two-chain run
waits: per ``C`` value (one backend run), the serial set-up before the first
fold starts, the chains' busy time (seeding, solving and scoring their folds)
and the gap between the faster and the slower chain (the barrier at the end
of each ``C``). ``--part contention`` runs one-chain C paths in fresh
processes: one alone, two at once in two threads of one process (each on its
own copy of ``X``), and two at once in two processes.

Our runs (c) to (e) use their defaults (``cache_size="auto"``, both cores);
the SVC runs are single-threaded. Prints wall time, total SMO iterations
(LIBSVM's ``n_iter_`` for SVC; the refit's not counted), the best C and its CV
accuracy, with ratios side by side. Data: heart, madelon
(standardised) and stratified 4,000- and 8,000-row samples of a9a (``a9a``,
``a9a-8k``) from ``../shared/data`` (or ``$OPTUNA_TREECV_DATA``); the script
says so and exits 0 when they are absent. ``--quick`` runs heart and a
1,000-row a9a sample.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time

import numpy as np
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _data import data_dir, svm_dataset  # noqa: E402

from sklearn_ext import TreeCVSearchCV  # noqa: E402
from sklearn_ext.model_selection import FoldPlan  # noqa: E402
from sklearn_ext.svm import (  # noqa: E402
    AlphaSeededSVC,
    WarmStartStore,
    alpha_seeded_cv,
    svm_c_path_cv,
)

CS = [2.0**e for e in range(-2, 8)]
SETS = {
    # name: (rows or None, gamma)
    "heart": (None, 0.2),
    "madelon": (None, 1.0 / 500),
    "a9a": (4000, 0.5),
    "a9a-8k": (8000, 0.5),
}
QUICK = {"heart": (None, 0.2), "a9a": (1000, 0.5)}


def _n_iter(estimator, X, y) -> float:
    return float(np.sum(estimator.n_iter_))


SCORING = {"accuracy": "accuracy", "n_iter": _n_iter}


def _from_grid(search, tic):
    elapsed = time.perf_counter() - tic
    res = search.cv_results_
    n_iter = int(round(res["mean_test_n_iter"].sum() * search.n_splits_))
    best = int(np.argmax(res["mean_test_accuracy"]))
    return elapsed, n_iter, CS[best], float(res["mean_test_accuracy"][best])


def run_svc(X, y, folds, gamma):
    tic = time.perf_counter()
    search = GridSearchCV(
        SVC(gamma=gamma, cache_size=2000),
        {"C": CS},
        cv=folds,
        scoring=SCORING,
        refit=False,
    ).fit(X, y)
    return _from_grid(search, tic)


def run_precomputed(X, y, folds, gamma):
    tic = time.perf_counter()
    K = rbf_kernel(X, gamma=gamma)
    search = GridSearchCV(
        SVC(kernel="precomputed", cache_size=2000),
        {"C": CS},
        cv=folds,
        scoring=SCORING,
        refit=False,
    ).fit(K, y)
    return _from_grid(search, tic)


def run_per_C(X, y, plan, gamma):
    tic = time.perf_counter()
    n_iter, scores = 0, []
    for C in CS:
        res = alpha_seeded_cv(AlphaSeededSVC(C=C, gamma=gamma), X, y, cv=plan)
        n_iter += int(res["n_iter"].sum())
        scores.append(float(res["test_score"].mean()))
    best = int(np.argmax(scores))
    return time.perf_counter() - tic, n_iter, CS[best], scores[best]


def _summary(elapsed, res):
    """(time, SMO iterations, best C, its score, (warm-start skips, hits))."""
    best = int(np.argmax(res["mean_test_score"]))
    extra = (int(res["warm_start_skips"].sum()), int(res["warm_start_hits"].sum()))
    return (
        elapsed,
        int(res["n_iter"].sum()),
        CS[best],
        float(res["mean_test_score"][best]),
        extra,
    )


def run_path(X, y, plan, gamma):
    tic = time.perf_counter()
    res = svm_c_path_cv(AlphaSeededSVC(gamma=gamma), X, y, CS, cv=plan)
    return _summary(time.perf_counter() - tic, res)


def run_search(X, y, plan, gamma):
    tic = time.perf_counter()
    search = TreeCVSearchCV(AlphaSeededSVC(gamma=gamma), {"C": CS}, cv=plan).fit(X, y)
    return _summary(time.perf_counter() - tic, search.cv_results_)


def run_search_one_thread(X, y, plan, gamma):
    with threadpool_limits(limits=1):
        return run_search(X, y, plan, gamma)


def _zeros(model, y):
    n_classes = np.unique(y).shape[0]
    n_pairs = n_classes * (n_classes - 1) // 2
    return [np.zeros(y.shape[0]) for _ in range(n_pairs)]


def run_search_cold_refit(X, y, plan, gamma):
    """(e) with the refit of before: SMO from 0 on the kept kernel."""
    tic = time.perf_counter()
    store = WarmStartStore()
    model = AlphaSeededSVC(gamma=gamma, warm_start_store=store)
    search = TreeCVSearchCV(model, {"C": CS}, cv=plan, refit=False).fit(X, y)
    best = search.cv_results_["params"][
        int(np.argmax(search.cv_results_["mean_test_score"]))
    ]
    refit = AlphaSeededSVC(gamma=gamma, warm_start_store=store, **best)
    refit.fit(X, y, initial_alpha=_zeros(refit, y))
    return _summary(time.perf_counter() - tic, search.cv_results_)


def _ratio(reference: float, t: float) -> str:
    return f"{'-':>8}" if reference != reference else f"{reference / t:7.1f}x"


def bench(name, X, y, gamma, repeats, letters="abcdefg"):
    folds = list(StratifiedKFold(10, shuffle=True, random_state=0).split(X, y))
    plan = FoldPlan([test for _, test in folds], n_samples=X.shape[0])
    runs = {
        "(a) GridSearchCV SVC": lambda: run_svc(X, y, folds, gamma),
        "(b) GridSearchCV precomp": lambda: run_precomputed(X, y, folds, gamma),
        "(c) ours per C": lambda: run_per_C(X, y, plan, gamma),
        "(d) ours svm_c_path_cv": lambda: run_path(X, y, plan, gamma),
        "(e) TreeCVSearchCV+refit": lambda: run_search(X, y, plan, gamma),
        "(f) (e) on one thread": lambda: run_search_one_thread(X, y, plan, gamma),
        "(g) (e), refit from 0": lambda: run_search_cold_refit(X, y, plan, gamma),
    }
    runs = {label: run for label, run in runs.items() if label[1] in letters}
    # Repeats go round the runs, so that a change of machine load hits all alike.
    measured = {label: [] for label in runs}
    for _ in range(repeats):
        for label, run in runs.items():
            measured[label].append(run())
    rows = {
        label: (statistics.median(m[0] for m in ms), *ms[0][1:])
        for label, ms in measured.items()
    }
    nan = (float("nan"), -1)
    t_a = rows.get("(a) GridSearchCV SVC", nan)[0]
    t_b = rows.get("(b) GridSearchCV precomp", nan)[0]
    # Both GridSearchCV runs are LIBSVM from alpha = 0: the same iterations.
    it_a = max(
        rows.get(k, nan)[1]
        for k in ("(a) GridSearchCV SVC", "(b) GridSearchCV precomp")
    )
    print(
        f"\n{name}: n={X.shape[0]}, d={X.shape[1]}, gamma={gamma:g}, "
        f"C in 2^-2..2^7 ({len(CS)} values), k=10, median of {repeats}, "
        f"load {os.getloadavg()[0]:.2f}"
    )
    print(
        f"  {'run':<27}{'time s':>9}{'vs (a)':>8}{'vs (b)':>8}"
        f"{'SMO iter':>10}{'vs (a)':>8}{'best C':>8}{'CV acc':>8}"
    )
    for label, (t, it, best_C, acc, *extra) in rows.items():
        if it < 0:
            iters = f"{'-':>10}{'':8}"
        elif it_a > 0:
            iters = f"{it:10d}{it / it_a:8.2f}"
        else:
            iters = f"{it:10d}{'-':>8}"
        print(
            f"  {label:<27}{t:9.3f}{_ratio(t_a, t)}{_ratio(t_b, t)}"
            f"{iters}{best_C:8g}{acc:8.4f}"
        )
        if extra:
            skips, hits = extra[0]
            print(f"  {'':<27}warm-start seeds {hits} folds, exact skips {skips}")
    sys.stdout.flush()
    return rows


def bench_refit(name, X, y, gamma, repeats):
    """The refit alone: seeded from the folds vs from 0, both on the kept kernel."""
    folds = list(StratifiedKFold(10, shuffle=True, random_state=0).split(X, y))
    plan = FoldPlan([test for _, test in folds], n_samples=X.shape[0])
    measured = {"seeded": [], "cold": []}
    for _ in range(repeats):
        store = WarmStartStore()
        res = svm_c_path_cv(
            AlphaSeededSVC(gamma=gamma), X, y, CS, cv=plan, warm_start_store=store
        )
        best_C = CS[int(np.argmax(res["mean_test_score"]))]
        # Seeded first: the cold fit stores its own solution, an exact skip later.
        for label in ("seeded", "cold"):
            model = AlphaSeededSVC(C=best_C, gamma=gamma, warm_start_store=store)
            start = None if label == "seeded" else _zeros(model, y)
            tic = time.perf_counter()
            model.fit(X, y, initial_alpha=start)
            elapsed = time.perf_counter() - tic
            measured[label].append((elapsed, int(model.n_iter_.sum()), model))
    seeded, cold = measured["seeded"][0][2], measured["cold"][0][2]
    agree = float(np.mean(seeded.predict(X) == cold.predict(X)))
    gap = float(np.max(np.abs(seeded.objective_ - cold.objective_)))
    print(
        f"\n{name}: n={X.shape[0]}, refit at C={best_C:g} after the 10-fold C path, "
        f"median of {repeats}, load {os.getloadavg()[0]:.2f}"
    )
    t_cold = statistics.median(m[0] for m in measured["cold"])
    for label, ms in measured.items():
        t = statistics.median(m[0] for m in ms)
        print(
            f"  refit {label:<7}{t:8.3f} s {t_cold / t:6.1f}x  SMO iter {ms[0][1]:8d}"
            f"  from fold {bool(ms[0][2].warm_start_from_fold_.all())}"
        )
    print(
        f"  seeded vs cold: prediction agreement {agree:.4f}, largest dual "
        f"objective gap {gap:.2e}"
    )
    sys.stdout.flush()


class _ChainProfile:
    """Wall, set-up, busy and barrier time of each C of a C path (a profile:
    it wraps the private fold solver and backend run of sklearn_ext.svm)."""

    def __init__(self) -> None:
        import sklearn_ext.svm._backend as backend
        import sklearn_ext.svm._cv as cv

        self.events: list[tuple] = []
        self._patched = [
            (cv._Run, "solve", cv._Run.solve),
            (backend.AlphaSeedingBackend, "run", backend.AlphaSeedingBackend.run),
        ]
        events = self.events

        def solve(run, *args, _solve=cv._Run.solve):
            tic = time.perf_counter()
            out = _solve(run, *args)
            events.append(("fold", threading.get_ident(), tic, time.perf_counter()))
            return out

        def run(backend_, task, _run=backend.AlphaSeedingBackend.run):
            tic = time.perf_counter()
            out = _run(backend_, task)
            events.append(("C", None, tic, time.perf_counter()))
            return out

        cv._Run.solve = solve
        backend.AlphaSeedingBackend.run = run

    def close(self) -> None:
        for owner, attr, original in self._patched:
            setattr(owner, attr, original)

    def summary(self) -> dict[str, float]:
        out = dict(wall=0.0, setup=0.0, busy=0.0, barrier=0.0)
        for kind, _, c0, c1 in self.events:
            if kind != "C":
                continue
            folds = [e for e in self.events if e[0] == "fold" and c0 <= e[2] <= c1]
            busy: dict[int, float] = {}
            for _, thread, f0, f1 in folds:
                busy[thread] = busy.get(thread, 0.0) + (f1 - f0)
            out["wall"] += c1 - c0
            out["setup"] += min(f[2] for f in folds) - c0
            out["busy"] += sum(busy.values())
            out["barrier"] += max(busy.values()) - min(busy.values())
        return out


def bench_chains(name, X, y, gamma, repeats):
    """The C path on one seeding chain and on two, and where two chains wait."""
    folds = list(StratifiedKFold(10, shuffle=True, random_state=0).split(X, y))
    plan = FoldPlan([test for _, test in folds], n_samples=X.shape[0])
    measured = {"one chain": [], "two chains": []}
    results = {}
    for _ in range(repeats):
        for label in measured:
            profile = _ChainProfile()
            try:
                tic = time.perf_counter()
                if label == "one chain":
                    with threadpool_limits(limits=1):
                        res = svm_c_path_cv(
                            AlphaSeededSVC(gamma=gamma), X, y, CS, cv=plan
                        )
                else:
                    res = svm_c_path_cv(AlphaSeededSVC(gamma=gamma), X, y, CS, cv=plan)
                elapsed = time.perf_counter() - tic
            finally:
                profile.close()
            measured[label].append((elapsed, profile.summary()))
            results[label] = res
    one, two = results["one chain"], results["two chains"]
    gap = float(np.max(np.abs(one["mean_test_score"] - two["mean_test_score"])))
    print(
        f"\n{name}: n={X.shape[0]}, C path of {len(CS)} values, k=10, median of "
        f"{repeats}, load {os.getloadavg()[0]:.2f}"
    )
    print(
        f"  {'run':<12}{'time s':>8}{'in C runs':>10}{'set-up':>8}{'busy':>8}"
        f"{'barrier':>8}{'SMO iter':>10}"
    )
    for label, ms in measured.items():
        t = statistics.median(m[0] for m in ms)
        parts = {
            key: statistics.median(m[1][key] for m in ms)
            for key in ("wall", "setup", "busy", "barrier")
        }
        print(
            f"  {label:<12}{t:8.3f}{parts['wall']:10.3f}{parts['setup']:8.3f}"
            f"{parts['busy']:8.3f}{parts['barrier']:8.3f}"
            f"{int(results[label]['n_iter'].sum()):10d}"
        )
    t1 = statistics.median(m[0] for m in measured["one chain"])
    t2 = statistics.median(m[0] for m in measured["two chains"])
    print(
        f"  two chains {t1 / t2:.2f}x faster than one; largest difference of a "
        f"mean CV score {gap:.1e}"
    )
    sys.stdout.flush()


_ONE_PATH = """
import sys, time
sys.path.insert(0, {bench!r})
from bench_svm_cgrid import one_chain_paths
one_chain_paths({name!r}, {rows!r}, {gamma!r}, {n!r})
"""


def one_chain_paths(name, rows, gamma, n_paths):
    """Print the seconds of one-chain C paths, ``n_paths`` at once in threads."""
    import sklearn_ext.svm._cv as cv

    cv.available_threads = lambda: 1  # each path one chain, in its own thread
    X, y = svm_dataset(name, rows)
    folds = list(StratifiedKFold(10, shuffle=True, random_state=0).split(X, y))
    plan = FoldPlan([test for _, test in folds], n_samples=X.shape[0])
    times = []

    def path(X):
        tic = time.perf_counter()
        svm_c_path_cv(AlphaSeededSVC(gamma=gamma), X, y, CS, cv=plan)
        times.append(time.perf_counter() - tic)

    with threadpool_limits(limits=1):
        path(X)  # warm-up, not counted
        times.clear()
        # Each thread its own copy of X: nothing shared but the process.
        threads = [
            threading.Thread(target=path, args=(X.copy(),)) for _ in range(n_paths)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    print(" ".join(f"{t:.4f}" for t in times), flush=True)


def bench_contention(name, n_rows, gamma, repeats):
    """One-chain C paths: alone, two at once in threads, two in processes."""
    import subprocess

    here = os.path.dirname(os.path.abspath(__file__))
    base = name.split("-")[0]

    def launch(n_processes, n_threads):
        code = _ONE_PATH.format(
            bench=here, name=base, rows=n_rows, gamma=gamma, n=n_threads
        )
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True
            )
            for _ in range(n_processes)
        ]
        return [float(v) for p in procs for v in p.communicate()[0].split()]

    measured = {"alone": [], "two threads": [], "two processes": []}
    for _ in range(repeats):
        measured["alone"] += launch(1, 1)
        measured["two threads"] += launch(1, 2)
        measured["two processes"] += launch(2, 1)
    print(
        f"\n{name}: one-chain C paths ({len(CS)} values, k=10), seconds per path, "
        f"median of {repeats} rounds, load {os.getloadavg()[0]:.2f}"
    )
    alone = statistics.median(measured["alone"])
    for label, times in measured.items():
        t = statistics.median(times)
        print(f"  {label:<15}{t:8.3f} s  {t / alone:5.2f}x the time alone")
    sys.stdout.flush()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small, fast run")
    parser.add_argument("--sets", default=None, help="comma-separated data sets")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument(
        "--runs", default="abcdefg", help="which runs, e.g. 'bd' (default: all)"
    )
    parser.add_argument(
        "--part",
        choices=("grid", "refit", "chains", "contention"),
        default="grid",
        help="the C grid against GridSearchCV (default), the refit alone, "
        "the C path on one and two seeding chains, or one-chain paths run "
        "alone, two at once in threads and two in processes",
    )
    args = parser.parse_args(argv)
    if not data_dir().is_dir():
        print(
            f"Data folder {data_dir()} not found: set OPTUNA_TREECV_DATA to the "
            "folder holding heart.npz, madelon.npz and a9a.npz."
        )
        return 0
    sets = QUICK if args.quick else SETS
    default = ["heart", "madelon", "a9a"] if args.part == "grid" else ["madelon"]
    names = args.sets.split(",") if args.sets else [n for n in default if n in sets]
    for name in names:
        n_rows, gamma = sets[name]
        data = svm_dataset(name.split("-")[0], n_rows)
        if data is None:
            print(f"{name}.npz not found in {data_dir()}; skipped.")
            continue
        X, y = data
        repeats = args.repeats or (3 if X.shape[0] <= 1000 else 1)
        if args.part == "refit":
            bench_refit(name, X, y, gamma, repeats)
        elif args.part == "chains":
            bench_chains(name, X, y, gamma, repeats)
        elif args.part == "contention":
            bench_contention(name, n_rows, gamma, repeats)
        else:
            bench(name, X, y, gamma, repeats, args.runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
