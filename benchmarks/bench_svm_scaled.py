"""A scaled kernel SVM's grid search: alpha seeding under per-fold scaling (issue 32).

``make_pipeline(StandardScaler(), SVC())`` over ``svc__C`` (5 values) and
``svc__gamma`` (2 values: ``"scale"`` and one other), the same 10 stratified
shuffled folds, no refit, on madelon (2,000 x 500, raw features) and a
stratified 8,000-row sample of a9a (dense float64):

(a) ``GridSearchCV`` of the pipeline, one thread (the fair peer: each fold's
    scaler fitted on its training rows, LIBSVM on the rows so scaled);
(b) the peer with each fold's kernel computed once per ``gamma``: the fold's
    scaler, scikit-learn's ``rbf_kernel`` of the scaled rows (the fold's own
    ``gamma="scale"``), then ``SVC(kernel="precomputed")`` at every ``C``
    (one thread; the kernels' time included);
(c) ``TreeCVSearchCV`` of the same pipeline at its defaults (alpha seeding,
    both cores, cross-C warm starts on the folds' kept kernels);
(d) the same on one thread (``n_jobs=1`` and a one-thread BLAS).

Each measurement runs in a fresh process (its peak RSS, ``ru_maxrss``, is the
method's), rounds interleaved, medians printed with the ratios to (a). The
agreement: every candidate's fold predictions of (c)'s fold pipelines
(``tree_cross_validate(..., return_estimator=True)``, untimed) against those
of (a)'s fitted fold pipelines (recorded by a scorer that predicts once, as
accuracy would), the worst candidate's share of equal test rows; and the best
parameters of each. (c) also reports the share of its fold time spent on the
kernel work the scaling forces (``kernel_time``: fitting each fold's scaler,
scaling the rows and building the fold's kernel; zero when kept).

Data: ``../shared/data`` (or ``$OPTUNA_TREECV_DATA``); exits 0 with a message
when absent. ``--quick``: 600 rows of each set, one round.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _data import require, svm_dataset  # noqa: E402

METHODS = ("grid", "precomputed", "ours", "ours_1thread")
LABELS = {
    "grid": "(a) GridSearchCV(pipeline), 1 thread",
    "precomputed": "(b) per-fold kernel once + SVC(precomputed), 1 thread",
    "ours": "(c) TreeCVSearchCV(pipeline), defaults",
    "ours_1thread": "(d) TreeCVSearchCV(pipeline), 1 thread",
}
CS = [0.25, 1.0, 4.0, 16.0, 64.0]
OTHER_GAMMA = {"madelon": 0.001, "a9a-8k": 0.002}


def load(name: str, n_rows: int | None):
    """Raw features (the pipeline scales them), float64, and labels."""
    if name == "madelon":
        with np.load(require("madelon.npz")) as data:
            X, y = np.asarray(data["X"], dtype=np.float64), np.asarray(data["y"])
        if n_rows is not None:
            from sklearn.model_selection import train_test_split

            X, _, y, _ = train_test_split(
                X, y, train_size=n_rows, stratify=y, random_state=0
            )
        return np.ascontiguousarray(X), y
    require("a9a.npz")
    X, y = svm_dataset("a9a", 8000 if n_rows is None else n_rows)
    return np.ascontiguousarray(X.toarray()), np.asarray(y)


def grid_of(name: str) -> dict:
    return {"svc__C": CS, "svc__gamma": ["scale", OTHER_GAMMA[name]]}


def _key(params: dict, X_test) -> str:
    digest = hashlib.sha1(np.ascontiguousarray(X_test).tobytes()).hexdigest()
    return f"{params['svc__C']}|{params['svc__gamma']}|{digest}"


def child(name: str, method: str, n_rows, out: str) -> None:
    """One measurement, in this fresh process; writes a JSON result to ``out``."""
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC
    from threadpoolctl import threadpool_limits

    from sklearn_ext import TreeCVSearchCV

    X, y = load(name, n_rows)
    cv = StratifiedKFold(10, shuffle=True, random_state=0)
    grid = grid_of(name)
    pipe = make_pipeline(StandardScaler(), SVC())
    result: dict = {}
    predictions: dict = {}
    tic = time.perf_counter()
    if method == "grid":

        def recorder(estimator, X_test, y_test):
            predicted = estimator.predict(X_test)
            params = {k: estimator.get_params()[k] for k in grid}
            predictions[_key(params, X_test)] = predicted.tolist()
            return float(np.mean(predicted == y_test))

        with threadpool_limits(1):
            search = GridSearchCV(
                pipe, grid, cv=cv, scoring=recorder, refit=False, n_jobs=1
            ).fit(X, y)
        result["best"] = search.best_params_
    elif method == "precomputed":
        with threadpool_limits(1):
            result["best"] = _precomputed(X, y, cv, grid)
    else:
        n_jobs = 1 if method == "ours_1thread" else None
        limit = 1 if method == "ours_1thread" else None
        with threadpool_limits(limit):
            search = TreeCVSearchCV(
                pipe, grid, cv=cv, refit=False, n_jobs=n_jobs, return_run_info=True
            ).fit(X, y)
        results = search.cv_results_
        fold_seconds = float(np.sum(results["mean_fit_time"]) * 10)
        result["kernel_share"] = float(np.sum(results["kernel_time"])) / fold_seconds
        result["kernel_seconds"] = float(np.sum(results["kernel_time"]))
        result["best"] = search.best_params_
    result["seconds"] = time.perf_counter() - tic
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if method == "ours":
        predictions = _our_fold_predictions(pipe, X, y, cv, grid)
    result["predictions"] = predictions
    with open(out, "w") as f:
        json.dump(result, f)


def _precomputed(X, y, cv, grid) -> dict:
    """Each fold's scaler and kernel once per gamma, SVC(precomputed) per C."""
    from sklearn.metrics.pairwise import rbf_kernel
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    scores: dict = {}
    for train, test in cv.split(X, y):
        scaler = StandardScaler().fit(X[train])
        A, B = scaler.transform(X[train]), scaler.transform(X[test])
        for gamma in grid["svc__gamma"]:
            g = 1.0 / (A.shape[1] * A.var()) if gamma == "scale" else gamma
            K, K_test = rbf_kernel(A, A, gamma=g), rbf_kernel(B, A, gamma=g)
            for C in grid["svc__C"]:
                svc = SVC(kernel="precomputed", C=C).fit(K, y[train])
                accuracy = float(np.mean(svc.predict(K_test) == y[test]))
                scores.setdefault((C, gamma), []).append(accuracy)
    (C, gamma), _ = max(scores.items(), key=lambda item: np.mean(item[1]))
    return {"svc__C": C, "svc__gamma": gamma}


def _our_fold_predictions(pipe, X, y, cv, grid) -> dict:
    """Every candidate's fold predictions of our fold pipelines (untimed)."""
    from sklearn.base import clone
    from sklearn.model_selection import ParameterGrid

    from sklearn_ext import tree_cross_validate

    predictions = {}
    splits = list(cv.split(X, y))
    for params in ParameterGrid(grid):
        run = tree_cross_validate(
            clone(pipe).set_params(**params), X, y, cv=cv, return_estimator=True
        )
        for model, (_, test) in zip(run["estimator"], splits, strict=True):
            predictions[_key(params, X[test])] = model.predict(X[test]).tolist()
    return predictions


def measure(name: str, method: str, n_rows) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        argv = [sys.executable, __file__, "--child", name, method, "--out", out]
        if n_rows is not None:
            argv += ["--rows", str(n_rows)]
        subprocess.run(argv, check=True)
        with open(out) as f:
            return json.load(f)


def agreement(ours: dict, peer: dict) -> float:
    """The worst candidate's share of test rows predicted alike."""
    by_candidate: dict = {}
    for key, predicted in peer.items():
        candidate = key.rsplit("|", 1)[0]
        same = np.asarray(ours[key]) == np.asarray(predicted)
        total = by_candidate.setdefault(candidate, [0, 0])
        total[0] += int(same.sum())
        total[1] += same.size
    return min(equal / size for equal, size in by_candidate.values())


def report(name: str, runs: dict) -> None:
    print(f"\n{name}: medians of {len(runs['grid'])} interleaved round(s)")
    base = statistics.median(r["seconds"] for r in runs["grid"])
    for method in METHODS:
        seconds = statistics.median(r["seconds"] for r in runs[method])
        peak = statistics.median(r["peak_rss_mb"] for r in runs[method])
        line = (
            f"  {LABELS[method]:<56} {seconds:8.2f} s  {base / seconds:6.2f}x  "
            f"peak RSS {peak:7.0f} MB  best {runs[method][0]['best']}"
        )
        if "kernel_share" in runs[method][0]:
            share = statistics.median(r["kernel_share"] for r in runs[method])
            line += f"  kernel work {100 * share:.0f}% of fold time"
        print(line)
    worst = agreement(runs["ours"][0]["predictions"], runs["grid"][0]["predictions"])
    print(f"  fold predictions of (c) vs (a): worst candidate {worst:.4f} of rows")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=2, metavar=("SET", "METHOD"))
    parser.add_argument("--out")
    parser.add_argument("--rows", type=int)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sets", default="madelon,a9a-8k")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.child:
        child(*args.child, args.rows, args.out)
        return
    n_rows = 600 if args.quick else args.rows
    rounds = 1 if args.quick else args.rounds
    methods = args.methods.split(",")
    for name in args.sets.split(","):
        load(name, 10)  # exits with a message when the data is absent
        with open("/proc/loadavg") as f:
            print(f"{name}: load average before: {f.read().strip()}")
        runs: dict = {m: [] for m in methods}
        for _ in range(rounds):
            for method in methods:
                runs[method].append(measure(name, method, n_rows))
        with open("/proc/loadavg") as f:
            print(f"{name}: load average after: {f.read().strip()}")
        if set(METHODS) <= set(methods):
            report(name, runs)
        else:
            for method in methods:
                seconds = statistics.median(r["seconds"] for r in runs[method])
                print(f"  {LABELS[method]:<56} {seconds:8.2f} s")


if __name__ == "__main__":
    main()
