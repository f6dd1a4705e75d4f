"""What the bad-input checks of issue 17 cost, side by side with them switched off.

Three parts, each timed in one process with interleaved repeats (medians):

* ``fit``: one ordered pass of ``PegasosClassifier.fit`` on 200,000 x 50 rows;
  the checks look at the state for non-finite weights (the data scale is read
  only once a model has overflowed).
* ``partial_fit``: 400 ``partial_fit`` calls of 500 rows each.
* ``kernel``: building the dense rbf ``KernelStore`` of 4,000 rows, whose
  blocks are checked for non-finite kernel values.

Usage::

    python benchmarks/bench_checks.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from sklearn_ext.linear_model import PegasosClassifier, _base
from sklearn_ext.svm import KernelStore, _kernel_store

_ON = (_base.BaseNativeSGD._check_finite_state, _kernel_store.check_finite_kernel)
_OFF = (lambda self, X=None: None, lambda values: None)


def _switch(on: bool) -> None:
    (
        _base.BaseNativeSGD._check_finite_state,
        _kernel_store.check_finite_kernel,
    ) = _ON if on else _OFF


def _partial_fits(X, y) -> None:
    model = PegasosClassifier().partial_fit(X[:500], y[:500], classes=[0, 1])
    for start in range(500, 200_000, 500):
        model.partial_fit(X[start : start + 500], y[start : start + 500])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    X = rng.normal(size=(200_000, 50))
    y = (X[:, 0] > 0).astype(int)
    X_kernel = rng.normal(size=(4000, 20))
    parts = {
        "fit": lambda: PegasosClassifier().fit(X, y),
        "partial_fit": lambda: _partial_fits(X, y),
        "kernel": lambda: KernelStore(X_kernel, "rbf", 0.05, 3, 0.0, 200),
    }
    print(f"load average before: {os.getloadavg()}")
    for name, run in parts.items():
        times = {False: [], True: []}
        for _ in range(args.repeats):
            for on in (False, True):
                _switch(on)
                tic = time.perf_counter()
                run()
                times[on].append(time.perf_counter() - tic)
        _switch(True)
        off, on = statistics.median(times[False]), statistics.median(times[True])
        print(
            f"{name:12s} without checks {off * 1e3:8.1f} ms   with {on * 1e3:8.1f} ms"
            f"   ratio {on / off:.3f}"
        )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
