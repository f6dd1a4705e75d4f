"""Fit time of ``AlphaSeededSVC(probability=True)`` against ``SVC(probability=True)``.

Both at their defaults (``SVC``: ``cache_size=200``; ``AlphaSeededSVC``:
``cache_size="auto"``), single-threaded, interleaved rounds; prints the median
fit times, their ratio, and the largest difference of ``predict_proba`` on the
training rows. Usage: ``python benchmarks/bench_svm_proba.py [rounds] [sets...]``
(sets: madelon, a9a-8k, w8a-8k).
"""

from __future__ import annotations

import os
import sys
import time
import warnings

import numpy as np
from sklearn.svm import SVC

sys.path.insert(0, os.path.dirname(__file__))
from _data import svm_dataset  # noqa: E402

from sklearn_ext.svm import AlphaSeededSVC  # noqa: E402


def _load(name: str):
    if name.endswith("-8k"):
        return svm_dataset(name[:-3], n_rows=8000)
    return svm_dataset(name)


def _timed(model, X, y):
    tic = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # SVC's probability
        model.fit(X, y)
    return time.perf_counter() - tic, model


def main(rounds: int, names: list[str]) -> None:
    print("load average:", os.getloadavg())
    for name in names:
        data = _load(name)
        if data is None:
            print(f"{name}: data set absent")
            continue
        X, y = data
        ours_t, svc_t = [], []
        for r in range(rounds):
            # Interleaved, the order alternating from round to round.
            makers = [
                ("ours", lambda: AlphaSeededSVC(probability=True, random_state=0)),
                ("svc", lambda: SVC(probability=True, random_state=0)),
            ]
            if r % 2:
                makers.reverse()
            for which, make in makers:
                seconds, model = _timed(make(), X, y)
                (ours_t if which == "ours" else svc_t).append(seconds)
                if which == "ours":
                    ours = model
                else:
                    svc = model
        diff = np.abs(ours.predict_proba(X) - svc.predict_proba(X)).max()
        agree = np.mean(ours.predict(X) == svc.predict(X))
        print(
            f"{name} {X.shape}: AlphaSeededSVC {np.median(ours_t):.2f} s, "
            f"SVC {np.median(svc_t):.2f} s, ratio "
            f"{np.median(svc_t) / np.median(ours_t):.1f}x; max |proba diff| "
            f"{diff:.4f}; predict agreement {agree:.4f}; rounds {rounds} "
            f"(ours {np.round(ours_t, 2).tolist()}, svc {np.round(svc_t, 2).tolist()})"
        )
    print("load average:", os.getloadavg())


if __name__ == "__main__":
    args = sys.argv[1:]
    n_rounds = int(args[0]) if args else 3
    main(n_rounds, args[1:] or ["madelon", "a9a-8k"])
