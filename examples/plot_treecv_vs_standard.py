"""
TreeCV against standard k-fold cross-validation as k grows
===========================================================

Standard k-fold CV trains ``k`` models, each on ``k - 1`` chunks: it feeds
``n (k - 1)`` rows in all, so its cost grows linearly with ``k``. TreeCV trains
the same ``k`` fold models of an incremental learner along a binary tree over
the chunks, feeding every row once per tree level: about ``n log2(2k)`` rows.
For a learner whose model does not depend on the order of its updates the two
give the same scores; for the one-pass SGD learners used here, whose feeding
order is the same in both, they agree too.

This example cross-validates :class:`~sklearn_ext.LogisticSGDClassifier` (a
native learner: its tree runs in C) on the digits data for ``k`` from 2 to 64,
with ``method="treecv"`` and with ``method="standard"`` (medians of three
interleaved runs), and plots the time and the rows fed.
"""

# %%
# Cross-validate at every k, both ways
# ------------------------------------
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.preprocessing import StandardScaler

from sklearn_ext import LogisticSGDClassifier, tree_cross_validate

X, y = load_digits(return_X_y=True)
X = StandardScaler().fit_transform(X)
learner = LogisticSGDClassifier(alpha=1e-4, random_state=0)
ks = [2, 4, 8, 16, 32, 64]

tree_cross_validate(
    learner, X, y, cv=5, return_run_info=True
)  # Warm-up: imports, first allocations.
results = {"treecv": [], "standard": []}
for k in ks:
    seconds, last = {method: [] for method in results}, {}
    for _ in range(3):  # Interleaved repeats, side by side; the median is kept.
        for method in results:
            tic = time.perf_counter()
            cv = tree_cross_validate(
                learner, X, y, cv=k, method=method, return_run_info=True
            )
            seconds[method].append(time.perf_counter() - tic)
            last[method] = cv
    for method in results:
        median = float(np.median(seconds[method]))
        cv = last[method]
        results[method].append((median, cv["n_samples_fed"], cv["test_score"]))

for k, tree, standard in zip(ks, results["treecv"], results["standard"], strict=True):
    same = np.allclose(tree[2], standard[2])
    print(
        f"k={k:>3}: TreeCV {1e3 * tree[0]:6.1f} ms, "
        f"standard {1e3 * standard[0]:7.1f} ms"
        f" ({standard[0] / tree[0]:5.1f}x); mean accuracy {tree[2].mean():.3f}"
        f"{' (same fold scores)' if same else ''}"
    )

# %%
# Time and rows fed against k
# ---------------------------
# The rows fed follow ``n log2(2k)`` and ``n (k - 1)``; the time follows the
# rows, plus a per-fold cost that standard CV pays ``k`` times.
n = len(y)
fig, (ax_time, ax_rows) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
for method, label in [("treecv", "TreeCV"), ("standard", "standard CV")]:
    seconds = [r[0] for r in results[method]]
    rows = [r[1] for r in results[method]]
    ax_time.plot(ks, np.multiply(seconds, 1e3), "o-", label=label)
    ax_rows.plot(ks, rows, "o-", label=label)
grid = np.linspace(2, 64, 200)
ax_rows.plot(grid, n * np.log2(2 * grid), "k:", label="n log2(2k)")
ax_rows.plot(grid, n * (grid - 1), "k--", label="n (k - 1)")
for ax, what in [(ax_time, "time (ms)"), (ax_rows, "rows fed")]:
    ax.set(xscale="log", yscale="log", xlabel="k (folds)", ylabel=what)
    # One label per k measured, none in between (log minor labels overlap).
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax.legend()
ax_time.set_title("Time of one k-fold CV, digits")
ax_rows.set_title("Training rows fed to the learner")
plt.show()
