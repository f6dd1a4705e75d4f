"""
Tune an SGD classifier with TreeCV inside Optuna, then refit by the one-SE rule
================================================================================

Each trial scores its parameters by 10-fold cross-validation through
:class:`optuna_treecv.TreeCVObjective`: the ten fold models are trained along
the TreeCV tree (about ``log2(20)`` passes over the data instead of nine), and
after every fold the running mean is reported so that ``MedianPruner`` stops
poor trials early. The study is then turned into a model twice: with the best
trial's parameters, and with the simplest trial (largest ``alpha``) whose mean
score is within one standard error of the best.
"""

# %%
import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier

from optuna_treecv import TreeCVObjective, refit_estimator, select_trial

X, y = load_digits(return_X_y=True)
sgd = SGDClassifier(random_state=0)
space = {
    "alpha": FloatDistribution(1e-7, 1e-1, log=True),
    "loss": CategoricalDistribution(["hinge", "log_loss", "modified_huber"]),
}

# %%
optuna.logging.set_verbosity(optuna.logging.WARNING)
study = optuna.create_study(
    direction="maximize",
    sampler=optuna.samplers.TPESampler(seed=0),
    pruner=optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=1),
)
study.optimize(TreeCVObjective(sgd, space, X, y, cv=10), n_trials=30)

states = [t.state.name for t in study.trials]
print(f"{states.count('COMPLETE')} complete, {states.count('PRUNED')} pruned")
fed = sum(t.user_attrs["cv"]["n_samples_fed"] for t in study.trials)
print(f"rows fed: {fed:,} (standard CV, no pruning: {30 * 9 * len(X):,})")

# %%
best = select_trial(study)
simple = select_trial(study, simplest="alpha", greater_is_simpler=True)
for name, trial in [("best", best), ("one-SE", simple)]:
    attrs = trial.user_attrs
    print(
        f"{name:>6}: #{trial.number} alpha={trial.params['alpha']:.2e} "
        f"score={attrs['mean_test_score']:.4f} ± {attrs['stderr_test_score']:.4f}"
    )

model = refit_estimator(study, sgd, X, y, simplest="alpha", greater_is_simpler=True)
print("refit on all data:", model)

# %%
# Each trial's mean score against its ``alpha``: complete trials as dots, pruned
# ones (stopped after a few folds by the median pruner) as crosses at their last
# reported running mean.
import matplotlib.pyplot as plt  # noqa: E402

fig, ax = plt.subplots(figsize=(6, 3.5))
for state, marker in [("COMPLETE", "o"), ("PRUNED", "x")]:
    chosen = [t for t in study.trials if t.state.name == state]
    values = [
        t.value if t.value is not None else t.intermediate_values[t.last_step]
        for t in chosen
    ]
    ax.scatter(
        [t.params["alpha"] for t in chosen], values, marker=marker, label=state.lower()
    )
ax.axvline(simple.params["alpha"], color="grey", linestyle="--", label="one-SE pick")
ax.set_xscale("log")
ax.set_xlabel("alpha")
ax.set_ylabel("10-fold CV accuracy (running mean)")
ax.legend(loc="lower left")
fig.tight_layout()
plt.show()
