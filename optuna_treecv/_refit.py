"""From a study to a model: pick a trial (best or one-standard-error), refit."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from optuna.trial import FixedTrial, TrialState
from sklearn.base import clone, is_classifier

from optuna_treecv._objective import suggest_params
from sklearn_ext.model_selection import one_standard_error_rule
from sklearn_ext.model_selection._choice import backend_class
from sklearn_ext.model_selection._core import takes_store
from sklearn_ext.model_selection._regime import regime_estimator

if TYPE_CHECKING:
    import optuna
    from optuna.distributions import BaseDistribution
    from optuna.trial import FrozenTrial

__all__ = ["TrialRecord", "select_trial", "refit_estimator"]


@dataclass(frozen=True)
class TrialRecord:
    """Where a refit model came from: a few fields of its trial, not the trial.

    :func:`refit_estimator` sets it as the model's ``optuna_trial_``
    attribute, so that a saved model (``joblib.dump``) holds the model and
    this record, not the trial with its per-fold scores (half a million of
    them for leave-one-out on half a million rows). Get the whole trial back
    from its study with :meth:`trial`.

    Attributes
    ----------
    number : int
        The trial's number in its study.
    params : dict
        Its sampled parameters (``trial.params``).
    value : float or None
        Its value, the mean test score (``None`` for a multi-objective
        trial: see ``values``).
    values : tuple of float or None
        All its values.
    regime : {"fit", "one_pass"}
        What its folds were, hence how the model was trained: the learner's
        own ``fit``, or one ordered pass of ``partial_fit``.
    backend : str or None
        The backend that scored it (``"native_tree"``, ``"python_tree"``,
        ``"standard"``...).
    study_name : str or None
        The name of its study.

    Examples
    --------
    >>> from optuna_treecv import TrialRecord
    >>> record = TrialRecord(3, {"alpha": 1e-4}, 0.91, (0.91,), "one_pass",
    ...                      "native_tree", "pegasos-covtype")
    >>> record.number, record.params["alpha"]
    (3, 0.0001)
    """

    number: int
    params: dict[str, Any] = field(default_factory=dict)
    value: float | None = None
    values: tuple[float, ...] | None = None
    regime: str = "fit"
    backend: str | None = None
    study_name: str | None = None

    @classmethod
    def of(cls, trial: FrozenTrial, study_name: str | None = None) -> TrialRecord:
        """The record of ``trial`` (a :class:`~optuna.trial.FrozenTrial`)."""
        cv = trial.user_attrs.get("cv")
        cv = cv if isinstance(cv, Mapping) else {}
        values = None if trial.values is None else tuple(map(float, trial.values))
        value = values[0] if values is not None and len(values) == 1 else None
        backend = cv.get("backend")
        return cls(
            number=int(trial.number),
            params=dict(trial.params),
            value=value,
            values=values,
            regime=_scored_regime(trial),
            backend=None if backend is None else str(backend),
            study_name=study_name,
        )

    def trial(self, study: optuna.Study) -> FrozenTrial:
        """The whole trial, read from ``study`` (the study it came from).

        Raises
        ------
        ValueError
            If ``study`` is another study, or holds no trial of this number.
        """
        if self.study_name is not None and study.study_name != self.study_name:
            raise ValueError(
                f"This model came from trial #{self.number} of study "
                f"{self.study_name!r}, not of study {study.study_name!r}."
            )
        trials = study.get_trials(deepcopy=False)
        if self.number < len(trials) and trials[self.number].number == self.number:
            return trials[self.number]
        for trial in trials:
            if trial.number == self.number:
                return trial
        raise ValueError(f"Study {study.study_name!r} holds no trial #{self.number}.")


def select_trial(
    study: optuna.Study,
    *,
    simplest: str | Callable[[dict[str, Any]], Any] | None = None,
    greater_is_simpler: bool = False,
    n_std_errors: float = 1.0,
) -> FrozenTrial:
    """The trial to deploy: the best one, or the one-standard-error choice.

    Parameters
    ----------
    study : optuna.Study
        A study optimized with :class:`~optuna_treecv.TreeCVObjective`.
    simplest : str or callable, default=None
        ``None`` returns the best trial (the highest ``mean_test_score`` in a
        multi-objective study). Otherwise a parameter name (or a callable
        ``trial.params -> complexity``) defining the simplest model, and the
        simplest complete trial whose mean test score is within
        ``n_std_errors`` standard errors of the best is returned (see
        :func:`sklearn_ext.model_selection.one_standard_error_rule`).
    greater_is_simpler : bool, default=False
        Whether a larger value of the ``simplest`` parameter is simpler.
    n_std_errors : float, default=1.0
        Width of the tolerance band in standard errors of the best trial.

    Returns
    -------
    trial : optuna.trial.FrozenTrial

    Examples
    --------
    >>> import optuna
    >>> from optuna.distributions import FloatDistribution
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import SGDClassifier
    >>> from optuna_treecv import TreeCVObjective, select_trial
    >>> X, y = load_iris(return_X_y=True)
    >>> space = {"alpha": FloatDistribution(1e-5, 1.0, log=True)}
    >>> objective = TreeCVObjective(SGDClassifier(random_state=0), space, X, y)
    >>> optuna.logging.set_verbosity(optuna.logging.WARNING)
    >>> study = optuna.create_study(direction="maximize")
    >>> study.optimize(objective, n_trials=5)
    >>> trial = select_trial(study, simplest="alpha", greater_is_simpler=True)
    >>> trial.params["alpha"] >= study.best_trial.params["alpha"]
    True
    """
    trials = [
        t
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if "mean_test_score" in t.user_attrs
    ]
    if simplest is None and len(study.directions) == 1:
        return study.best_trial
    if not trials:
        raise ValueError(
            f"Study {study.study_name!r} has no complete trial with a "
            "mean_test_score attribute (run TreeCVObjective first)."
        )
    cv_results = _cv_results(trials)
    if simplest is None:
        means = cv_results["mean_test_score"]
        index = means.index(max(means))
    else:
        rule = one_standard_error_rule(
            simplest, greater_is_simpler=greater_is_simpler, n_std_errors=n_std_errors
        )
        index = rule(cv_results)
    return trials[index]


def refit_estimator(
    study: optuna.Study,
    estimator,
    X,
    y=None,
    *,
    params: Mapping[str, BaseDistribution] | Callable[..., dict] | None = None,
    simplest: str | Callable[[dict[str, Any]], Any] | None = None,
    greater_is_simpler: bool = False,
    n_std_errors: float = 1.0,
    warm_start_store=None,
    **fit_params,
):
    """Fit the chosen trial's model on all the data, trained as it was scored.

    The final model of a study (the CLI's and the Görnitz scripts' too). When
    the trial was scored by a tree backend (the backend recorded in its
    ``cv`` attribute is ``python_tree``, ``native_tree``...), its folds were
    one ordered pass of ``partial_fit``; the model returned is then
    :func:`~sklearn_ext.model_selection.one_pass_estimator` of the learner
    (the learner itself when its ``fit`` is that pass, else a
    :class:`~sklearn_ext.TreeCVEstimator` around it) fitted on all rows, so
    that ``cross_val_score(clone(model), X, y, cv=<the objective's folds>)``
    gives the trial's value. Trials scored by ``standard``, ``alpha_seeding``
    or ``exact`` (each fold the learner's own ``fit``) are refit with the
    learner's own ``fit``.

    Parameters
    ----------
    study : optuna.Study
        A study optimized with :class:`~optuna_treecv.TreeCVObjective`.
    estimator : estimator object
        The learner the objective cross-validated.
    X, y : array-like
        All the training data.
    params : dict or callable, default=None
        The objective's ``params``. Needed when it is a callable (the trial's
        sampled values are replayed through it with
        :class:`optuna.trial.FixedTrial`); ``None`` sets ``trial.params``
        directly.
    simplest, greater_is_simpler, n_std_errors
        Which trial to take, see :func:`select_trial`.
    warm_start_store : object, default=None
        The store the trials ran with,
        :attr:`TreeCVObjective.warm_start_store_ <optuna_treecv.TreeCVObjective>`.
        A kernel SVM (:class:`~sklearn_ext.svm.AlphaSeededSVC`) is then fitted
        with it: it reuses the kept kernel matrix and starts from the trial's
        fold solutions at the chosen ``C`` (the fold with the lowest dual
        objective, its held-out rows at 0), then runs SMO to ``tol``: the
        model LIBSVM would find, in fewer iterations. The returned model does
        not keep the store. Ignored by a learner without a
        ``warm_start_store`` parameter, or one that holds a store already.
    **fit_params
        Passed to ``estimator.fit``.

    Returns
    -------
    estimator : estimator object
        The fitted model (see above). Its ``optuna_trial_`` attribute is a
        :class:`TrialRecord` of the chosen trial (number, parameters, value,
        regime, backend, study name): a saved model holds that, not the
        trial's fold scores. ``model.optuna_trial_.trial(study)`` reads the
        whole trial back from the study.

    Examples
    --------
    >>> import optuna
    >>> from optuna.distributions import FloatDistribution
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import SGDClassifier
    >>> from optuna_treecv import TreeCVObjective, refit_estimator
    >>> X, y = load_iris(return_X_y=True)
    >>> space = {"alpha": FloatDistribution(1e-5, 1.0, log=True)}
    >>> sgd = SGDClassifier(random_state=0)
    >>> optuna.logging.set_verbosity(optuna.logging.WARNING)
    >>> # Seeded: the first trial's alpha decides the measured regime gap (a
    >>> # large one would score and refit the learner's own fit instead).
    >>> study = optuna.create_study(
    ...     direction="maximize", sampler=optuna.samplers.TPESampler(seed=0)
    ... )
    >>> study.optimize(TreeCVObjective(sgd, space, X, y), n_trials=3)
    >>> model = refit_estimator(study, sgd, X, y)
    >>> model.estimator_.alpha == study.best_params["alpha"]
    True
    >>> record = model.optuna_trial_
    >>> record.number == study.best_trial.number, record.regime
    (True, 'one_pass')
    >>> record.trial(study) == study.best_trial
    True

    A kernel SVM's final fit starts from the trials' fold solutions:

    >>> from sklearn_ext.svm import AlphaSeededSVC
    >>> svm = AlphaSeededSVC(gamma=0.5)
    >>> space = {"C": FloatDistribution(0.1, 10.0, log=True)}
    >>> objective = TreeCVObjective(svm, space, X, y, cv=5)
    >>> study = optuna.create_study(direction="maximize")
    >>> study.optimize(objective, n_trials=3)
    >>> model = refit_estimator(
    ...     study, svm, X, y, warm_start_store=objective.warm_start_store_
    ... )
    >>> model.warm_start_from_fold_
    array([ True,  True,  True])
    """
    trial = select_trial(
        study,
        simplest=simplest,
        greater_is_simpler=greater_is_simpler,
        n_std_errors=n_std_errors,
    )
    if params is None or isinstance(params, Mapping):
        values = dict(trial.params)
    else:
        values = suggest_params(FixedTrial(trial.params, trial.number), params)
    model = clone(estimator).set_params(**values)
    classes = np.unique(y) if is_classifier(model) and y is not None else None
    model = regime_estimator(model, _scored_regime(trial), classes, X=X)
    lend = warm_start_store is not None and takes_store(model)
    if lend:
        model.set_params(warm_start_store=warm_start_store)
    model.fit(X, y, **fit_params)
    if lend:
        model.set_params(warm_start_store=None)
    model.optuna_trial_ = TrialRecord.of(trial, study.study_name)
    return model


def _scored_regime(trial: FrozenTrial) -> str:
    """What ``trial``'s folds were: ``"fit"`` or ``"one_pass"``.

    Recorded in its ``cv`` attribute; a trial recorded before the regime was
    (only its backend's name) is asked of that backend's declaration.
    """
    cv = trial.user_attrs.get("cv")
    cv = cv if isinstance(cv, Mapping) else trial.user_attrs
    if cv.get("regime") in ("fit", "one_pass"):
        return cv["regime"]
    try:
        return backend_class(str(cv.get("backend"))).scores
    except ValueError:
        return "fit"


def _cv_results(trials: list[FrozenTrial]) -> dict[str, list]:
    """A ``cv_results_``-like dict built from the trials' user attributes."""
    results: dict[str, list] = {
        "params": [t.params for t in trials],
        "mean_test_score": [t.user_attrs["mean_test_score"] for t in trials],
        "stderr_test_score": [
            t.user_attrs.get("stderr_test_score", float("nan")) for t in trials
        ],
    }
    return results
