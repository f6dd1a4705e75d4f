"""Alpha-seeded k-fold CV of kernel SVMs against scikit-learn's SVC.

For each data set and k, times the whole k-fold CV and counts SMO iterations:

(a) a StratifiedKFold loop over ``SVC(cache_size=2000)``;
(b) the same loop on one precomputed kernel matrix (its computation included);
(c) ``alpha_seeded_cv`` with ``seeding="none"`` (shared kernel store only);
(d) ``alpha_seeded_cv`` with each seeding mode (sir, mir, ato, keep).

``--k-slope`` times instead the whole CV against k = 5, 10, 20, 50, 100 on
madelon for each seeding mode (one thread, and SIR on two), with the slope of
time against k, the peak memory of each run and an ``SVC`` loop at k = 100.

All runs use the same StratifiedKFold folds. Data: ``../shared/data/*.npz``
(or ``$OPTUNA_TREECV_DATA``); the script says so and exits 0 when absent.
Run ``python benchmarks/bench_svm_cv.py --quick`` for a short run.

``--part defaults`` (issue 20): a9a and w8a at 8,000 rows, 10-fold, every
method at its default settings but the peers' cache (``cache_size=2000``, as
the issue's table): an ``SVC`` loop, ``SVC`` on a kernel computed once, and
``tree_cross_validate(AlphaSeededSVC(C, gamma))`` with one thread
(``n_jobs=1``) and with the default (``n_jobs=None``: every core). Each
measurement runs in a fresh process (its peak RSS is the method's), rounds
interleaved, medians printed, with each method's per-fold prediction agreement
with the ``SVC`` loop (the worst fold). ``--part bounded``: the same with the
kernel forced into bounded columns (``cache_size`` a tenth of the float64
kernel, for the peer as well; the peer's loop is timed on ``--peer-folds``
folds and scaled to 10). ``--part full``: all of a9a (ours, and the ``SVC``
loop timed on ``--peer-folds`` folds, scaled) or all of w8a (ours: time and
peak memory), one round each. ``--part memory``: madelon at k = 5, 10, 20, 50,
100 (the k-slope's folds and settings, defaults otherwise), ``alpha_seeded_cv``
with one chain (``n_jobs=1``) and the default (``n_jobs=None``: every core), each
run in a fresh process: its time, its peak RSS (``ru_maxrss``) and, in a second
run in the same process, the peak of traced allocations (``tracemalloc``);
rounds interleaved, medians printed, with the ratio of k = 100 to k = 5.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _data import data_dir, svm_dataset  # noqa: E402

from sklearn_ext.model_selection import FoldPlan  # noqa: E402
from sklearn_ext.svm import AlphaSeededSVC, alpha_seeded_cv  # noqa: E402
from sklearn_ext.svm._kernel_store import kernel_matrix  # noqa: E402

SEEDINGS = ("sir", "mir", "ato", "keep")


SETS = {
    # name: (rows or None, C, gamma, ks)
    "heart": (None, 2182.0, 0.2, (10, 100)),
    "madelon": (None, 1.0, 1.0 / 500, (10, 100)),
    "a9a": (8000, 100.0, 0.5, (10,)),
    "w8a": (8000, 64.0, 7.8125, (10,)),
}
QUICK = {
    "heart": (None, 2182.0, 0.2, (10, 100)),
    "madelon": (None, 1.0, 1.0 / 500, (10,)),
    "a9a": (2000, 100.0, 0.5, (10,)),
    "w8a": (2000, 64.0, 7.8125, (10,)),
}


def run_svc(X, y, folds, C, gamma):
    tic = time.perf_counter()
    n_iter, acc = 0, []
    for train, test in folds:
        model = SVC(C=C, gamma=gamma, cache_size=2000).fit(X[train], y[train])
        n_iter += int(model.n_iter_.sum())
        acc.append(model.score(X[test], y[test]))
    return time.perf_counter() - tic, n_iter, float(np.mean(acc))


def run_precomputed(X, y, folds, C, gamma):
    tic = time.perf_counter()
    K = kernel_matrix(X, X, "rbf", gamma, 3, 0.0)
    n_iter, acc = 0, []
    for train, test in folds:
        model = SVC(C=C, kernel="precomputed", cache_size=2000)
        model.fit(K[np.ix_(train, train)], y[train])
        n_iter += int(model.n_iter_.sum())
        acc.append(model.score(K[np.ix_(test, train)], y[test]))
    return time.perf_counter() - tic, n_iter, float(np.mean(acc))


def run_ours(X, y, plan, C, gamma, seeding):
    model = AlphaSeededSVC(C=C, gamma=gamma, cache_size=2000)
    tic = time.perf_counter()
    result = alpha_seeded_cv(model, X, y, cv=plan, seeding=seeding)
    elapsed = time.perf_counter() - tic
    return elapsed, int(result["n_iter"].sum()), float(result["test_score"].mean())


def bench(name, X, y, C, gamma, k, repeats, ato_max_rows):
    cv = StratifiedKFold(k, shuffle=True, random_state=0)
    folds = list(cv.split(X, y))
    plan = FoldPlan([test for _, test in folds], n_samples=X.shape[0])
    runs = {
        "(a) SVC": lambda: run_svc(X, y, folds, C, gamma),
        "(b) SVC precomputed": lambda: run_precomputed(X, y, folds, C, gamma),
        "(c) ours none": lambda: run_ours(X, y, plan, C, gamma, "none"),
    }
    for seeding in SEEDINGS:
        if seeding == "ato" and X.shape[0] > ato_max_rows:
            continue  # ATO's dense path solves grow as n^3; see --ato-max-rows
        runs[f"(d) ours {seeding}"] = lambda seeding=seeding: run_ours(
            X, y, plan, C, gamma, seeding
        )
    rows = {}
    for label, run in runs.items():
        measured = [run() for _ in range(repeats)]
        rows[label] = (
            statistics.median(m[0] for m in measured),
            measured[0][1],
            measured[0][2],
        )
    t_a, t_b, it_c = rows["(a) SVC"][0], rows["(b) SVC precomputed"][0], None
    it_c = rows["(c) ours none"][1]
    print(
        f"\n{name}: n={X.shape[0]}, d={X.shape[1]}, C={C:g}, gamma={gamma:g}, "
        f"k={k}, median of {repeats}"
    )
    print(
        f"  {'run':<22}{'time s':>9}{'vs (a)':>8}{'vs (b)':>8}"
        f"{'SMO iter':>10}{'vs (c)':>8}{'CV acc':>8}"
    )
    for label, (t, it, acc) in rows.items():
        vs_c = f"{it / it_c:8.2f}" if label.startswith(("(c)", "(d)")) else " " * 8
        print(
            f"  {label:<22}{t:9.3f}{t_a / t:7.1f}x{t_b / t:7.1f}x"
            f"{it:10d}{vs_c}{acc:8.4f}"
        )
    sys.stdout.flush()
    return rows


#: k-slope part: the data set and settings of the paper's "effect of k" study
#: (madelon), and the paper's own madelon settings (gamma=0.7071, Table 2).
K_SLOPE = {
    "madelon": (None, 1.0, 1.0 / 500),
    "madelon-paper": (None, 1.0, 0.7071),
    "heart": (None, 2182.0, 0.2),
    "a9a": (8000, 100.0, 0.5),
}
K_SLOPE_KS = (5, 10, 20, 50, 100)
K_SLOPE_MODES = ("none", "keep", "sir", "mir")
#: The SVC loop at the largest k is timed on this many of its folds and scaled
#: to all of them (every fold has the same size to one row).
SVC_FOLDS_TIMED = 20


def _peak_mb(run) -> float:
    """Peak of traced (Python and numpy) allocations of ``run()``, in MB."""
    import tracemalloc

    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def _slope(ks, values) -> float:
    """Least-squares slope of log(values) against log(k)."""
    return float(np.polyfit(np.log(ks), np.log(values), 1)[0])


def k_slope(name, X, y, C, gamma, ks, repeats, modes=K_SLOPE_MODES) -> dict:
    """Time of the whole k-fold CV against k, each seeding mode, one thread.

    For every k of ``ks``: ``alpha_seeded_cv`` with each mode of ``modes`` on
    one thread (``n_jobs=1``) and ``seeding="sir"`` on two threads; at the
    largest k, an ``SVC(cache_size=2000)`` loop timed on
    :data:`SVC_FOLDS_TIMED` of its folds and scaled to all of them. Rounds go
    over every (k, run) pair in turn, ``repeats`` times, and the table gives
    medians; the slope is that of log(median time) against log(k), over the
    whole CV (kernel included), over the seeding plus SMO time (``fit``) and
    over the SMO iterations. Peak memory: traced allocations (tracemalloc) of
    one more, untimed run per (k, run).
    """
    plans, folds_of = {}, {}
    for k in ks:
        folds = list(StratifiedKFold(k, shuffle=True, random_state=0).split(X, y))
        folds_of[k] = folds
        plans[k] = FoldPlan([test for _, test in folds], n_samples=X.shape[0])
    k_max = max(ks)
    svc_folds = folds_of[k_max][:SVC_FOLDS_TIMED]
    svc_scale = len(folds_of[k_max]) / len(svc_folds)

    def ours(k, mode, n_jobs):
        def run():
            tic = time.perf_counter()
            res = alpha_seeded_cv(
                AlphaSeededSVC(C=C, gamma=gamma),
                X,
                y,
                cv=plans[k],
                seeding=mode,
                n_jobs=n_jobs,
            )
            elapsed = time.perf_counter() - tic
            return (
                elapsed,
                float(res["fit_time"].sum()),
                int(res["n_iter"].sum()),
                float(res["test_score"].mean()),
            )

        return run

    def svc():
        t, n_iter, acc = run_svc(X, y, svc_folds, C, gamma)
        return t * svc_scale, t * svc_scale, int(n_iter * svc_scale), acc

    runs = {}
    for k in ks:
        for mode in modes:
            runs[(k, f"{mode} 1 thread")] = ours(k, mode, 1)
        runs[(k, "sir 2 threads")] = ours(k, "sir", 2)
    runs[(k_max, "SVC loop")] = svc
    measured = {key: [] for key in runs}
    for _ in range(repeats):
        for key, run in runs.items():
            measured[key].append(run())
    peaks = {key: _peak_mb(run) for key, run in runs.items() if key[1] != "SVC loop"}
    load = os.getloadavg()[0]
    print(
        f"\n{name} k-slope: n={X.shape[0]}, d={X.shape[1]}, C={C:g}, "
        f"gamma={gamma:g}, median of {repeats} interleaved rounds, load {load:.2f}"
    )
    print(
        f"  {'k':>4} {'run':<16}{'time s':>9}{'fit s':>8}{'SMO iter':>10}"
        f"{'peak MB':>9}{'CV acc':>8}"
    )
    table = {}
    for (k, label), ms in measured.items():
        t = statistics.median(m[0] for m in ms)
        fit = statistics.median(m[1] for m in ms)
        table[(k, label)] = (t, fit, ms[0][2], ms[0][3])
        peak = peaks.get((k, label))
        peak = f"{peak:9.1f}" if peak is not None else f"{'-':>9}"
        print(
            f"  {k:4d} {label:<16}{t:9.3f}{fit:8.3f}{ms[0][2]:10d}{peak}{ms[0][3]:8.4f}"
        )
    labels = [f"{mode} 1 thread" for mode in modes] + ["sir 2 threads"]
    if len(ks) > 1:
        print(f"  slopes against k = {', '.join(map(str, ks))} (log-log):")
    for label in labels if len(ks) > 1 else ():
        rows = [table[(k, label)] for k in ks]
        print(
            f"    {label:<16} time {_slope(ks, [r[0] for r in rows]):5.2f}"
            f"  fit {_slope(ks, [r[1] for r in rows]):5.2f}"
            f"  SMO iter {_slope(ks, [r[2] for r in rows]):5.2f}"
        )
    t_svc = table[(k_max, "SVC loop")][0]
    print(
        f"  k={k_max}: SVC loop {t_svc:.1f} s (timed on {len(svc_folds)} of "
        f"{k_max} folds, scaled)"
    )
    for label in labels:
        t = table[(k_max, label)][0]
        print(f"    {label:<16} {t:7.3f} s  {t_svc / t:6.1f}x faster")
    if "sir" not in modes or len(ks) < 2:
        return table
    low, high = peaks[(min(ks), "sir 1 thread")], peaks[(k_max, "sir 1 thread")]
    print(
        f"  peak memory, sir 1 thread: k={k_max} {high:.1f} MB vs "
        f"k={min(ks)} {low:.1f} MB ({high / low:.2f}x)"
    )
    sys.stdout.flush()
    return table


def _rss_mb() -> float:
    """Peak resident memory of this process so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def child(args) -> int:
    """One timed measurement in this fresh process; prints a JSON line."""
    from sklearn_ext import tree_cross_validate

    rows = None if args.rows == 0 else args.rows
    X, y = svm_dataset(args.child_set, rows)
    C, gamma = PARAMS[args.child_set]
    folds = list(StratifiedKFold(10, shuffle=True, random_state=0).split(X, y))
    plan = FoldPlan([test for _, test in folds], n_samples=X.shape[0])
    n = X.shape[0]
    cache = 2000 if args.cache == "peer" else args.cache
    if args.cache == "tenth":
        cache = n * n * 8 / 10 / 2**20
    base = _rss_mb()
    method = args.child
    preds = {}
    tic = time.perf_counter()
    if method in ("svc", "precomputed"):
        use = folds[: args.peer_folds] if args.peer_folds else folds
        if method == "precomputed":
            K = kernel_matrix(X, X, "rbf", gamma, 3, 0.0)
        for fold, (train, test) in enumerate(use):
            if method == "svc":
                model = SVC(C=C, gamma=gamma, cache_size=cache).fit(X[train], y[train])
                preds[fold] = model.predict(X[test])
            else:
                model = SVC(C=C, kernel="precomputed", cache_size=cache)
                model.fit(K[np.ix_(train, train)], y[train])
                preds[fold] = model.predict(K[np.ix_(test, train)])
        elapsed = time.perf_counter() - tic
        scale = len(folds) / len(use)
    else:
        n_jobs = 1 if method == "ours-1" else None
        model = AlphaSeededSVC(C=C, gamma=gamma)
        if args.cache != "peer":
            model.set_params(cache_size=cache)
        tree_cross_validate(model, X, y, cv=plan, n_jobs=n_jobs, return_run_info=True)
        elapsed = time.perf_counter() - tic
        scale = 1.0
        peak = _rss_mb()
        if args.predictions:
            # Untimed: the fold models, for the agreement with SVC's.
            again = tree_cross_validate(
                model,
                X,
                y,
                cv=plan,
                n_jobs=n_jobs,
                return_estimator=True,
                return_run_info=True,
            )
            for fold, estimator in enumerate(again["estimator"]):
                preds[fold] = estimator.predict(X[plan.test_indices(fold)])
    if method in ("svc", "precomputed"):
        peak = _rss_mb()
    if args.predictions and preds:
        np.savez(args.predictions, **{str(k): v for k, v in preds.items()})
    print(
        "RESULT "
        + json.dumps(
            {"time": elapsed * scale, "peak_mb": peak, "base_mb": base, "n": n}
        ),
        flush=True,
    )
    return 0


PARAMS = {"a9a": (100.0, 0.5), "w8a": (64.0, 7.8125)}


def memory_child(args) -> int:
    """One k of ``--part memory`` in this fresh process; prints a JSON line.

    Time and peak RSS of the run, then the peak of traced allocations
    (tracemalloc) of the same run repeated: the data set, loaded before, counts
    in neither's growth above ``base_mb``.
    """
    import tracemalloc

    from sklearn_ext.svm._cv import chain_count

    rows, C, gamma = K_SLOPE[args.child_set]
    X, y = svm_dataset(args.child_set.split("-")[0], rows)
    folds = StratifiedKFold(args.child_k, shuffle=True, random_state=0).split(X, y)
    plan = FoldPlan([test for _, test in folds], n_samples=X.shape[0])
    n_jobs = None if args.child_jobs == 0 else args.child_jobs

    def run():
        return alpha_seeded_cv(
            AlphaSeededSVC(C=C, gamma=gamma), X, y, cv=plan, n_jobs=n_jobs
        )

    base = _rss_mb()
    tic = time.perf_counter()
    result = run()
    elapsed = time.perf_counter() - tic
    peak = _rss_mb()
    del result
    tracemalloc.start()
    try:
        run()
        traced = tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()
    chains = chain_count(n_jobs, plan.n_splits, plan.n_samples)
    record = {
        "time": elapsed,
        "peak_mb": peak,
        "base_mb": base,
        "traced_mb": traced,
        "chains": chains,
    }
    print("RESULT " + json.dumps(record), flush=True)
    return 0


def memory_against_k(name, ks, repeats) -> None:
    """``--part memory``: time, peak RSS and traced peak against k, fresh processes."""
    jobs = (1, 0)  # 0: n_jobs=None, the default
    runs = {(k, j): [] for k in ks for j in jobs}
    for _ in range(repeats):
        for k in ks:
            for j in jobs:
                command = [
                    sys.executable,
                    os.path.abspath(__file__),
                    "--child",
                    "memory",
                    "--child-set",
                    name,
                    "--child-k",
                    str(k),
                    "--child-jobs",
                    str(j),
                ]
                out = subprocess.run(
                    command, capture_output=True, text=True, check=True
                ).stdout
                line = [x for x in out.splitlines() if x.startswith("RESULT ")][-1]
                runs[(k, j)].append(json.loads(line[len("RESULT ") :]))
    load = os.getloadavg()
    rows, C, gamma = K_SLOPE[name]
    print(
        f"\n{name} memory against k: C={C:g}, gamma={gamma:g}, defaults, median of "
        f"{repeats} interleaved rounds (fresh process each), load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the end"
    )
    print(
        f"  {'k':>4} {'n_jobs':<8}{'chains':>7}{'time s':>9}{'peak RSS MB':>13}"
        f"{'(base)':>8}{'above base':>12}{'traced MB':>11}"
    )
    med = {}
    for (k, j), rs in runs.items():
        m = {
            key: statistics.median(r[key] for r in rs)
            for key in ("time", "peak_mb", "base_mb", "traced_mb")
        }
        m["above"] = statistics.median(r["peak_mb"] - r["base_mb"] for r in rs)
        med[(k, j)] = m
        label = "1" if j == 1 else "None"
        print(
            f"  {k:4d} {label:<8}{rs[0]['chains']:7d}{m['time']:9.3f}"
            f"{m['peak_mb']:13.1f}{m['base_mb']:8.1f}{m['above']:12.1f}"
            f"{m['traced_mb']:11.1f}"
        )
    lo, hi = min(ks), max(ks)
    for j in jobs:
        label = "n_jobs=1" if j == 1 else "n_jobs=None"
        a, b = med[(lo, j)], med[(hi, j)]
        slope = _slope(ks, [med[(k, j)]["time"] for k in ks]) if len(ks) > 1 else 0.0
        print(
            f"  {label}: k={hi} vs k={lo}: peak RSS {b['peak_mb'] / a['peak_mb']:.3f}x"
            f" ({b['peak_mb'] - a['peak_mb']:+.1f} MB), traced "
            f"{b['traced_mb'] / a['traced_mb']:.3f}x; slope of time {slope:.2f}"
        )
    sys.stdout.flush()


def _measure(name, rows, method, cache, peer_folds=0, predictions=None):
    command = [
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        method,
        "--child-set",
        name,
        "--rows",
        str(rows),
        "--cache",
        str(cache),
        "--peer-folds",
        str(peer_folds),
    ]
    if predictions:
        command += ["--predictions", predictions]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    line = [x for x in out.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT ") :])


def _agreement(tmp, method, n_folds=10):
    """Worst per-fold share of test predictions equal to the SVC loop's."""
    ref = np.load(os.path.join(tmp, "svc.npz"))
    got = np.load(os.path.join(tmp, f"{method}.npz"))
    keys = sorted(set(ref.files) & set(got.files), key=int)
    return min(float(np.mean(ref[k] == got[k])) for k in keys)


def side_by_side(name, rows, repeats, cache, peer_folds, methods) -> None:
    """Interleaved rounds of every method in fresh processes; a table of medians."""
    runs = {method: [] for method in methods}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(repeats):
            for method in methods:
                predictions = None
                if round_ == 0 and method != "precomputed" and "svc" in methods:
                    predictions = os.path.join(tmp, f"{method}.npz")
                folds = peer_folds if method in ("svc", "precomputed") else 0
                runs[method].append(
                    _measure(name, rows, method, cache, folds, predictions)
                )
        agree = {}
        if "svc" in methods:
            agree = {m: _agreement(tmp, m) for m in methods if m.startswith("ours")}
    med = {m: statistics.median(r["time"] for r in runs[m]) for m in methods}
    n = runs[methods[0]][0]["n"]
    load = os.getloadavg()
    print(
        f"\n{name}: n={n}, 10-fold, cache={cache}, median of {repeats} interleaved "
        f"rounds (fresh process each), load average {load[0]:.2f} {load[1]:.2f} "
        f"{load[2]:.2f} at the end"
    )
    peers = [m for m in ("svc", "precomputed") if m in med]
    header = f"  {'method':<14}{'time s':>9}"
    header += "".join(f"{'vs ' + p:>16}" for p in peers)
    header += f"{'peak MB':>9}{'(base)':>8}{'agree':>8}"
    print(header)
    for m in methods:
        peak = statistics.median(r["peak_mb"] for r in runs[m])
        base = statistics.median(r["base_mb"] for r in runs[m])
        line = f"  {m:<14}{med[m]:9.2f}"
        line += "".join(f"{med[p] / med[m]:15.1f}x" for p in peers)
        extra = f"{agree[m]:8.4f}" if m in agree else " " * 8
        line += f"{peak:9.0f}{base:8.0f}{extra}"
        print(line)
    if peer_folds:
        print(f"  (peers timed on {peer_folds} of 10 folds, scaled to 10)")
    sys.stdout.flush()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small, fast run")
    parser.add_argument("--sets", default=None, help="comma-separated data sets")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument(
        "--ato-max-rows",
        type=int,
        default=4000,
        help="skip seeding='ato' (slow) on larger data sets",
    )
    parser.add_argument(
        "--k-slope",
        action="store_true",
        help="time against k (5..100) of every seeding mode on madelon; "
        "--sets picks among " + ", ".join(K_SLOPE),
    )
    parser.add_argument("--ks", default=None, help="with --k-slope: e.g. '10,100'")
    parser.add_argument(
        "--modes",
        default=",".join(K_SLOPE_MODES),
        help="with --k-slope: seeding modes run on one thread",
    )
    parser.add_argument(
        "--part",
        choices=["seeding", "defaults", "bounded", "full", "memory"],
        default="seeding",
        help="seeding: the seeding modes; defaults, bounded, full, memory: issue "
        "20's tables",
    )
    parser.add_argument("--rows", type=int, default=8000, help="0: all rows")
    parser.add_argument("--peer-folds", type=int, default=0)
    # Internal: one measurement in a fresh process.
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child-set", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--cache", default="peer", help=argparse.SUPPRESS)
    parser.add_argument("--predictions", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child-k", type=int, default=10, help=argparse.SUPPRESS)
    parser.add_argument("--child-jobs", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child == "memory":
        return memory_child(args)
    if args.child:
        if args.cache not in ("peer", "tenth"):
            args.cache = float(args.cache)
        return child(args)
    if not data_dir().exists():
        print(
            f"Data folder {data_dir()} not found: set OPTUNA_TREECV_DATA to the "
            "folder holding heart.npz, madelon.npz, a9a.npz and w8a.npz."
        )
        return 0
    if args.k_slope:
        names = args.sets.split(",") if args.sets else ["madelon"]
        for name in names:
            rows, C, gamma = K_SLOPE[name]
            data = svm_dataset(name.split("-")[0], rows)
            if data is None:
                print(f"{name}.npz not found in {data_dir()}; skipped.")
                continue
            ks = (5, 10) if args.quick else K_SLOPE_KS
            if args.ks:
                ks = tuple(int(k) for k in args.ks.split(","))
            modes = tuple(args.modes.split(","))
            k_slope(name, *data, C, gamma, ks, args.repeats or 3, modes)
        return 0
    if args.part == "memory":
        names = args.sets.split(",") if args.sets else ["madelon"]
        ks = (5, 10) if args.quick else K_SLOPE_KS
        if args.ks:
            ks = tuple(int(k) for k in args.ks.split(","))
        for name in names:
            if svm_dataset(name.split("-")[0], 10) is None:
                print(f"{name}.npz not found in {data_dir()}; skipped.")
                continue
            memory_against_k(name, ks, args.repeats or 3)
        return 0
    if args.part != "seeding":
        names = args.sets.split(",") if args.sets else ["a9a", "w8a"]
        for name in names:
            if svm_dataset(name, 10) is None:
                print(f"{name}.npz not found in {data_dir()}; skipped.")
                continue
            if args.part == "defaults":
                methods = ["svc", "precomputed", "ours-1", "ours-2"]
                side_by_side(name, args.rows, args.repeats or 3, "peer", 0, methods)
            elif args.part == "bounded":
                methods = ["svc", "ours-1", "ours-2"]
                side_by_side(
                    name,
                    args.rows,
                    args.repeats or 3,
                    "tenth",
                    args.peer_folds,
                    methods,
                )
            else:
                methods = ["svc", "ours-2"] if args.peer_folds else ["ours-2"]
                side_by_side(
                    name, 0, args.repeats or 1, "peer", args.peer_folds, methods
                )
        return 0
    sets = QUICK if args.quick else SETS
    names = args.sets.split(",") if args.sets else list(sets)
    for name in names:
        rows, C, gamma, ks = sets[name]
        data = svm_dataset(name, rows)
        if data is None:
            print(f"{name}.npz not found in {data_dir()}; skipped.")
            continue
        X, y = data
        for k in ks:
            repeats = args.repeats or (3 if X.shape[0] <= 2000 and k <= 10 else 1)
            bench(name, X, y, C, gamma, k, repeats, args.ato_max_rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
