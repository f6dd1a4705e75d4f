"""Optuna side of optuna-treecv.

:class:`TreeCVObjective` scores a scikit-learn estimator by k-fold
cross-validation in each trial (TreeCV for ``partial_fit`` learners), reporting
as folds finish (a bounded number of times at any k) so that pruners stop bad
trials early; :func:`fold_scores` reads a trial's per-fold scores back;
:func:`select_trial` and :func:`refit_estimator` turn the study into a
deployable model (with a :class:`TrialRecord` of its trial);
:class:`ArtifactWarmStartStore` shares kernel SVM warm starts between workers;
:class:`ResumableGridSampler` runs long grids that resume after an interruption,
and :func:`optimize_until_interrupted` lets Ctrl-C stop a study between trials.
"""

from optuna_treecv._fold_scores import fold_scores
from optuna_treecv._interrupt import optimize_until_interrupted
from optuna_treecv._ladder import RungPruner
from optuna_treecv._objective import (
    StudyIdentityError,
    TreeCVObjective,
    suggest_params,
)
from optuna_treecv._refit import TrialRecord, refit_estimator, select_trial
from optuna_treecv._samplers import ResumableGridSampler
from optuna_treecv._storage import open_storage, retry_running_trials
from optuna_treecv._warm_start import ArtifactWarmStartStore

__version__ = "0.1.0.dev0"

__all__ = [
    "ArtifactWarmStartStore",
    "ResumableGridSampler",
    "RungPruner",
    "StudyIdentityError",
    "TreeCVObjective",
    "TrialRecord",
    "fold_scores",
    "open_storage",
    "optimize_until_interrupted",
    "refit_estimator",
    "retry_running_trials",
    "select_trial",
    "suggest_params",
]
