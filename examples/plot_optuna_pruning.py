"""
Pruning an Optuna study inside the folds of its cross-validation
================================================================

:class:`~optuna_treecv.TreeCVObjective` reports the running mean of the fold
scores after every fold, so a pruner can stop a poor trial after a few folds
instead of ten. With TreeCV the folds finish one by one along the tree, so a
pruned trial has also fed fewer rows.

This example tunes ``alpha`` and ``eta0`` of scikit-learn's ``SGDClassifier``
on the breast cancer data with ``MedianPruner`` and plots every trial's running
mean against the number of finished folds: the pruned trials stop early.
"""

# %%
import matplotlib.pyplot as plt
import optuna
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import SGDClassifier
from sklearn.preprocessing import StandardScaler
from sklearn.utils import shuffle

from optuna_treecv import TreeCVObjective

X, y = load_breast_cancer(return_X_y=True)
# The file lists most malignant cases first: shuffled once, so that no fold's
# one-pass model is fed its held-out rows' neighbours last.
X, y = shuffle(StandardScaler().fit_transform(X), y, random_state=0)
space = {
    "alpha": FloatDistribution(1e-6, 1.0, log=True),
    "eta0": FloatDistribution(1e-4, 1.0, log=True),
}
learner = SGDClassifier(learning_rate="constant", random_state=0)

optuna.logging.set_verbosity(optuna.logging.WARNING)
study = optuna.create_study(
    direction="maximize",
    sampler=optuna.samplers.TPESampler(seed=0),
    pruner=optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=2),
)
study.optimize(TreeCVObjective(learner, space, X, y, cv=10), n_trials=40)

# %%
pruned = study.get_trials(states=(TrialState.PRUNED,))
complete = study.get_trials(states=(TrialState.COMPLETE,))
folds = sum(len(t.intermediate_values) for t in study.trials)
print(f"{len(complete)} complete, {len(pruned)} pruned trials")
print(f"{folds} folds scored, instead of {10 * len(study.trials)} without pruning")
print(f"best: {study.best_value:.4f} at {study.best_params}")

# %%
fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
for trial in study.trials:
    steps = sorted(trial.intermediate_values)
    values = [trial.intermediate_values[s] for s in steps]
    is_pruned = trial.state == TrialState.PRUNED
    ax.plot(
        [s + 1 for s in steps],
        values,
        "-",
        color="C3" if is_pruned else "C0",
        alpha=0.8 if is_pruned else 0.5,
        marker="x" if is_pruned else None,
        markevery=[-1],
    )
ax.plot([], [], "C0-", label="complete")
ax.plot([], [], "C3-x", label="pruned (x: where it stopped)")
ax.set(
    xlabel="folds finished",
    ylabel="running mean accuracy",
    title="TreeCVObjective with MedianPruner, breast cancer",
    ylim=(0.8, 1.0),
)
ax.legend(loc="lower right")
plt.show()
