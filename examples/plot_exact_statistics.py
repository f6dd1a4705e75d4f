"""
Exact k-fold CV from sufficient statistics: leave-one-out at the cost of one fit
================================================================================

The model of a naive Bayes classifier is a function of class counts and feature
sums, which add up over rows. The exact backend of
:func:`~sklearn_ext.tree_cross_validate` (``method="auto"`` picks it for
``MultinomialNB``, ridge, LDA, nearest neighbours...) computes these statistics
once per chunk and forms each fold's model as *the total minus its held-out
chunk*: the estimator its own ``fit`` would give, so the fold scores equal those
of scikit-learn's :func:`~sklearn.model_selection.cross_validate`, while the
cost hardly grows with ``k``.

This example times both on the digits data for a few ``k`` (medians of three
interleaved runs, BLAS on one thread for both so that a busy machine does not
distort the comparison), checks that the fold scores agree, and then runs
leave-one-out (``k = 1797``) with the exact backend alone.
"""

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import KFold, cross_validate
from sklearn.naive_bayes import MultinomialNB
from threadpoolctl import threadpool_limits

from sklearn_ext import tree_cross_validate

X, y = load_digits(return_X_y=True)
nb = MultinomialNB()
ks = [5, 10, 20, 50, 100]
times = {"exact": [], "cross_validate": []}
blas_limit = threadpool_limits(limits=1, user_api="blas")
for k in ks:
    cv = KFold(k, shuffle=True, random_state=0)
    seconds = {name: [] for name in times}
    for _ in range(3):  # Interleaved repeats, side by side; the median is kept.
        tic = time.perf_counter()
        exact = tree_cross_validate(nb, X, y, cv=cv, return_run_info=True)
        seconds["exact"].append(time.perf_counter() - tic)
        tic = time.perf_counter()
        reference = cross_validate(nb, X, y, cv=cv)
        seconds["cross_validate"].append(time.perf_counter() - tic)
    for name in times:
        times[name].append(float(np.median(seconds[name])))
    assert exact["backend"] == "exact"
    same = np.array_equal(exact["test_score"], reference["test_score"])
    print(
        f"k={k:>3}: exact {1e3 * times['exact'][-1]:6.1f} ms, cross_validate "
        f"{1e3 * times['cross_validate'][-1]:7.1f} ms; fold scores "
        f"{'equal' if same else 'DIFFER'}"
    )

# %%
# Leave-one-out: one fold per row.
tic = time.perf_counter()
loo = tree_cross_validate(nb, X, y, cv=len(y), return_run_info=True)
loo_seconds = time.perf_counter() - tic
blas_limit.restore_original_limits()
print(
    f"leave-one-out ({len(y)} folds) with the exact backend: {loo_seconds:.2f} s, "
    f"accuracy {loo['test_score'].mean():.4f}"
)

# %%
fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
ax.plot(ks, np.multiply(times["cross_validate"], 1e3), "s--", label="cross_validate")
ax.plot(ks, np.multiply(times["exact"], 1e3), "o-", label="exact backend")
ax.plot(
    [len(y)],
    [1e3 * loo_seconds],
    "*",
    color="C1",
    ms=14,
    label=f"exact, leave-one-out (k={len(y)})",
)
ax.set(
    xscale="log",
    yscale="log",
    xlabel="k (folds)",
    ylabel="time of one k-fold CV (ms)",
    title="MultinomialNB on digits: same fold scores",
)
ax.legend()
plt.show()
