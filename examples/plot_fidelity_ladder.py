"""
The fidelity ladder: pruning on the tree's rungs
================================================

Walked level by level, the TreeCV tree gives a hold-out estimate over half the
rows after a quarter of a pass (the *quarter rung*) and after half a pass (the
*half rung*), then a 2-fold CV over all rows after one pass, a 4-fold CV after
two, and so on up to the k-fold CV itself. With ``report="levels"``,
:class:`~optuna_treecv.TreeCVObjective` reports these rungs, so a pruner can
stop a poor trial after a quarter of a pass instead of after the first fold
(about one pass). :class:`~optuna_treecv.RungPruner` lets a percentile pruner
judge each rung on its own value: the rungs are different estimates, not one
learning curve.

This example runs the same 40-trial TPE study twice on 20,000 synthetic rows
with the native ``PegasosClassifier`` and 16 folds: once with per-fold reports
(the default) and once with the ladder, both with
``RungPruner(PercentilePruner(15.0))``, and compares the rows each fed.
"""

# %%
import matplotlib.pyplot as plt
import optuna
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler

from optuna_treecv import RungPruner, TreeCVObjective
from sklearn_ext import PegasosClassifier, TreeCVSplitter

X, y = make_classification(
    n_samples=20_000, n_features=20, n_informative=8, flip_y=0.05, random_state=0
)
X = StandardScaler().fit_transform(X)
space = {"alpha": FloatDistribution(1e-7, 1.0, log=True)}
optuna.logging.set_verbosity(optuna.logging.WARNING)


def run(report):
    objective = TreeCVObjective(
        PegasosClassifier(),
        space,
        X,
        y,
        cv=TreeCVSplitter(16, shuffle=True, random_state=0),
        report=report,
    )
    study = optuna.create_study(
        direction="maximize",
        sampler=optuna.samplers.TPESampler(seed=0),
        pruner=RungPruner(optuna.pruners.PercentilePruner(15.0, n_startup_trials=5)),
    )
    study.optimize(objective, n_trials=40)
    return study


studies = {report: run(report) for report in ("running_mean", "levels")}

# %%
# Rows fed per study (a pruned trial counts the rows up to where it stopped),
# and the best trial's 16-fold score.
for report, study in studies.items():
    fed = sum(t.user_attrs["cv"]["n_samples_fed"] for t in study.trials)
    pruned = len(study.get_trials(states=(TrialState.PRUNED,)))
    print(
        f"{report:>12}: {fed:>10,} rows fed, {pruned} of 40 trials pruned, "
        f"best {study.best_value:.4f}"
    )

# %%
# Each trial of the ladder study: its rungs against the rows fed when each was
# known. A pruned trial (red) stops at its last rung; most stop at the quarter
# rung, after 5,000 rows.
fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
for trial in studies["levels"].trials:
    cv = trial.user_attrs["cv"]
    is_pruned = trial.state == TrialState.PRUNED
    ax.plot(
        cv["level_n_samples_fed"],
        cv["level_scores"],
        "-",
        color="C3" if is_pruned else "C0",
        alpha=0.8 if is_pruned else 0.5,
        marker="x" if is_pruned else ".",
    )
ax.plot([], [], "C0.-", label="complete")
ax.plot([], [], "C3x-", label="pruned (x: its last rung)")
ax.set(
    xscale="log",
    xlabel="rows fed",
    ylabel="rung estimate (accuracy)",
    title="report='levels' with RungPruner(PercentilePruner(15))",
)
ax.legend(loc="lower right")
plt.show()
