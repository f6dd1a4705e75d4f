"""
A CV curve with one-standard-error bars, and the one-SE choice
==============================================================

The candidate with the best mean CV score is the maximum of many noisy
estimates. The one-standard-error rule (Breiman et al., 1984; Hastie,
Tibshirani and Friedman, *The Elements of Statistical Learning*, 7.10) picks
instead the simplest candidate whose mean score is within one standard error of
the best: as good a bet, and usually more robust.

Here :class:`~sklearn_ext.TreeCVSearchCV` scores a grid of regularisation
strengths ``alpha`` of :class:`~sklearn_ext.LogisticSGDClassifier` on the digits
data by 10-fold TreeCV, and refits with
:func:`~sklearn_ext.one_standard_error_rule` (a larger ``alpha`` is simpler).
The plot shows each candidate's mean score with its standard error, the band
within one standard error of the best, and the two choices.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.preprocessing import StandardScaler

from sklearn_ext import LogisticSGDClassifier, TreeCVSearchCV, one_standard_error_rule

X, y = load_digits(return_X_y=True)
X = StandardScaler().fit_transform(X)
alphas = np.logspace(-5, -1, 17).tolist()
search = TreeCVSearchCV(
    LogisticSGDClassifier(random_state=0),
    {"alpha": alphas},
    cv=10,
    refit=one_standard_error_rule("alpha", greater_is_simpler=True),
).fit(X, y)

# %%
# The standard error of a candidate's mean is ``std(fold scores) / sqrt(k)``.
results = search.cv_results_
folds = np.array([results[f"split{i}_test_score"] for i in range(10)])
mean = results["mean_test_score"]
stderr = folds.std(axis=0, ddof=1) / np.sqrt(folds.shape[0])
best = int(np.argmax(mean))
chosen = search.best_index_
print(f"best mean:  alpha={alphas[best]:.1e}, {mean[best]:.4f} ± {stderr[best]:.4f}")
print(f"one-SE rule: alpha={alphas[chosen]:.1e}, {mean[chosen]:.4f}")
print("refit model:", search.best_estimator_)

# %%
fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
ax.errorbar(alphas, mean, yerr=stderr, fmt="o-", capsize=3, label="mean ± 1 SE")
ax.axhspan(
    mean[best] - stderr[best],
    mean[best],
    color="C0",
    alpha=0.15,
    label="within one SE of the best",
)
ax.plot(
    alphas[best],
    mean[best],
    "s",
    color="C3",
    ms=11,
    mfc="none",
    mew=2,
    label=f"best mean (alpha={alphas[best]:.0e})",
)
ax.plot(
    alphas[chosen],
    mean[chosen],
    "D",
    color="C2",
    ms=11,
    mfc="none",
    mew=2,
    label=f"one-SE choice (alpha={alphas[chosen]:.0e})",
)
ax.set(
    xscale="log",
    xlabel="alpha (larger is simpler)",
    ylabel="10-fold CV accuracy",
    title="LogisticSGDClassifier on digits",
)
ax.legend(loc="lower left")
plt.show()
