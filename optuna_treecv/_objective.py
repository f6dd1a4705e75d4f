"""``TreeCVObjective``: k-fold CV of a scikit-learn estimator as an Optuna objective."""

from __future__ import annotations

import math
import numbers
import time
import warnings
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.pruners import NopPruner
from sklearn.base import clone
from sklearn.utils import check_random_state

from optuna_treecv._fold_scores import fold_scores, scores_layout
from optuna_treecv._identity import (
    CV_ATTR,
    StudyIdentityError,
    _canonical,
    _describe_change,
    _refuse_foreign_trials,
    study_identity,
)
from optuna_treecv._ladder import LevelReports, pruner_mismatch
from sklearn_ext.model_selection import Backend, FoldPlan
from sklearn_ext.model_selection._backends import LeafTable
from sklearn_ext.model_selection._choice import METHODS
from sklearn_ext.model_selection._core import Resolved, RunCore
from sklearn_ext.model_selection._regime import FIT_ONLY_PARAMS
from sklearn_ext.model_selection._report import summarize_extras

if TYPE_CHECKING:
    from optuna.trial import BaseTrial

    from sklearn_ext.model_selection import LeafResult

__all__ = ["TreeCVObjective", "REPORTS", "StudyIdentityError", "suggest_params"]

#: What ``TreeCVObjective`` reports after each leaf.
REPORTS = ("running_mean", "per_fold", "levels", None)
#: The default bound on a trial's reports to the pruner, whatever ``k``.
MAX_REPORTS = 32
#: The first of the spaced reports comes after ``k // FIRST_REPORT`` folds.
FIRST_REPORT = 1024
#: Seconds between two calls of a ``progress`` callback within a trial.
PROGRESS_INTERVAL = 1.0
#: The summary attributes kept as attributes of their own (dashboard columns,
#: read by :func:`optuna_treecv.select_trial`).
SUMMARY_ATTRS = ("mean_test_score", "stderr_test_score")
#: Study user attributes recording what defines a study, and their meaning.

ParamsSpec = Mapping[str, BaseDistribution] | Callable[["BaseTrial"], dict[str, Any]]


class TreeCVObjective:
    """An Optuna objective scoring a scikit-learn estimator by k-fold CV.

    Each call clones ``estimator``, sets the parameters sampled from ``params``
    and cross-validates it with :func:`sklearn_ext.tree_cross_validate`: with
    TreeCV, the ``k`` fold models of a ``partial_fit`` learner are trained along
    a binary tree for about ``log2(2k)`` passes over the data instead of
    ``k - 1``. After each finished fold (leaf) it reports to the trial and
    raises :class:`optuna.TrialPruned` when ``trial.should_prune()`` says so,
    so a pruned trial stops training at once.

    The folds are computed once, when the objective is built; every trial is
    scored on the same folds, as a fair comparison of trials requires.

    Parameters
    ----------
    estimator : estimator object
        The learner; cloned for every trial.
    params : dict or callable
        Either a dict from parameter name (``set_params`` syntax, nested names
        such as ``"clf__alpha"`` included) to an :mod:`optuna.distributions`
        object, sampled with ``trial.suggest_*``; or a callable
        ``params(trial) -> dict`` returning the parameters to set, for
        conditional search spaces.
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Training data.
    y : array-like of shape (n_samples,), default=None
        Targets.
    cv : int or cross-validation generator, default=5
        As in :func:`sklearn_ext.tree_cross_validate`: an int ``k`` gives a
        (stratified, for classifiers) :class:`~sklearn_ext.TreeCVSplitter`.
    scoring : str or callable, default=None
        One scikit-learn metric (greater is better); ``None`` uses the
        estimator's ``score``.
    backend : {"auto", "treecv", "standard", "alpha_seeding"} or Backend, \
            default="auto"
        A method of :func:`~sklearn_ext.tree_cross_validate`, chosen per trial
        by :func:`~sklearn_ext.model_selection.choose_backend` as in every
        other door: ``"auto"`` takes the fastest backend that applies to the
        trial's estimator and falls back to ``"standard"`` (with a
        :class:`~sklearn_ext.model_selection.TreeCVFallbackWarning`) for an
        estimator no faster backend can run. The backend that ran is recorded
        in the ``backend`` attribute.
    report : {"running_mean", "per_fold", "levels"} or None, \
            default="running_mean"
        ``"running_mean"`` reports the mean score of the folds done so far at
        ``step = leaves done - 1``, for pruners comparing learning curves
        (:class:`~optuna.pruners.MedianPruner`, ``PercentilePruner``,
        ``SuccessiveHalvingPruner``...): after every fold up to
        ``max_reports`` folds; beyond, at ``max_reports`` fold counts spaced
        geometrically from ``k // 1024`` (at least 1) to ``k``, the same
        counts in every trial. ``"per_fold"`` reports each fold's own score
        with ``step`` = the fold index and visits the leaves in a shuffled
        order drawn per trial, as :class:`~optuna.pruners.WilcoxonPruner`
        expects: every fold up to ``max_reports`` folds; beyond, a fixed
        sample of ``max_reports`` evenly spaced folds (splits
        ``round(j (k - 1) / (max_reports - 1))``), the same in every trial,
        visited first in a shuffled order, the other folds after them.
        ``"levels"`` walks the tree level by level
        (:meth:`~sklearn_ext.model_selection._core.RunCore.run_levels`) and
        reports its early rungs at ``step = 1`` and ``2`` and each rung at
        ``step = level + 2`` (3, ..., ``ceil(log2(k)) + 2``): the early rungs
        score the root's left child on the left half, a hold-out estimate over
        half the rows, after a quarter (the quarter rung: the native tree,
        which pauses a feed; the Python tree has no step 1) and a half (the
        half rung) of the rows are fed; rung ``l`` is a complete
        ``2**l``-fold CV over all rows (every row scored by a model trained on
        ``1 - 2**-l`` of the data), known after ``l`` passes. So a pruner
        decides after a quarter of a pass on ``n / 2`` held-out rows instead
        of one fold's score on ``n / k`` rows after about one pass; a pruned
        trial stops feeding rows at once. Wrap ``MedianPruner`` and
        ``PercentilePruner`` in :class:`~optuna_treecv.RungPruner`, which
        judges each rung on its own value. The last rung is the leaves' (the
        size-weighted mean of the fold scores) and is reported but never
        pruned on; the trial's value is the k-fold mean as with every
        ``report``. It keeps ``O(k)`` models in memory where the depth-first
        walk keeps ``O(log k)``; a backend without levels (standard CV, the
        SVM and exact engines) reports its one final rung. Every rung up to
        ``max_reports``; beyond, the first ``max_reports - 1`` and the last.
        See "The fidelity ladder" in the user guide for the rungs' bias.
        ``None`` reports nothing. Multi-objective studies never report.
    max_reports : int, default=32
        The most reports a trial makes (each is a storage write and a pruning
        decision), whatever the number of folds ``k``; see ``report``.
    progress : callable, default=None
        Called as ``progress(trial, n_folds_done, n_splits, n_samples_fed)``
        about once a second while a trial's CV runs (the command line shows
        it for long trials); never when a trial takes less than a second.
    n_jobs : int, default=None
        Workers of each CV run (subtrees or folds), see
        :func:`~sklearn_ext.tree_cross_validate`. Use ``optimize(n_jobs=...)``
        to run trials in parallel instead.
    random_state : int, RandomState instance or None, default=None
        Seeds the shuffled leaf order of ``report="per_fold"``, drawn per trial
        from it and the trial number. Pass an int for reproducible studies.
        (A randomized feeding order is a property of ``cv``, e.g.
        ``TreeCVSplitter(10, order="randomized", random_state=0)``.)
    fit_params : dict, default=None
        Parameters passed to every ``partial_fit`` (or ``fit``) call, as in
        :func:`~sklearn_ext.tree_cross_validate`: arrays of length
        ``n_samples`` (``sample_weight``, the ``labeled`` mask of
        :class:`~sklearn_ext.SemiSupervisedAnomalyDetector`) are restricted to
        the rows fed.
    warm_start_store : object, None or False, default=None
        A store shared by all trials (threads of ``study.optimize(n_jobs=...)``
        included), handed to the backend with
        ``choose_backend(..., store=...)``; a backend that keeps no store
        refuses it when the objective is built. ``None`` takes the store of
        its own that the trials' backend offers
        (:meth:`~sklearn_ext.model_selection.Backend.default_store`: for a
        kernel SVM a :class:`~sklearn_ext.svm.WarmStartStore`, so cross-C warm
        starts are on by default), made at the first trial and kept by this
        objective; ``False`` runs every trial without a store. Each trial gets its own
        ``warm_start_store.session()`` when the store has one, and a store
        with a ``publish(trial, session)`` method is asked to publish the
        trial's additions once the trial is complete. Today that is the
        ``alpha_seeding`` backend's :class:`~sklearn_ext.svm.WarmStartStore`
        (kernel SVMs): each fold starts from its solution at the nearest ``C``
        an earlier trial finished, or is skipped exactly; an
        :class:`~optuna_treecv.ArtifactWarmStartStore` also shares them
        between worker processes through an artifact store.

    Attributes
    ----------
    fold_plan_ : FoldPlan
        The folds every trial is scored on.
    warm_start_store_ : object or None
        The store the trials run with: ``warm_start_store`` as given, or the
        one of the objective's own (made at the first trial, or when this is
        first read); ``None`` with ``warm_start_store=False`` or a learner
        whose backend keeps none. Hand it to
        :func:`~optuna_treecv.refit_estimator` so that a kernel SVM's final
        fit starts from the trials' fold solutions.

    Notes
    -----
    Every trial stores its details in one JSON-safe user attribute, ``cv``
    (a dict; one storage write instead of one per value): ``split{i}_test_score``
    for each fold ``i`` (of the base plan, whatever order the leaves ran in),
    ``mean_test_score``, ``std_test_score`` (population standard deviation, as
    in scikit-learn's ``cv_results_``), ``stderr_test_score`` (the standard
    error of the mean, ``std(ddof=1) / sqrt(k)``), ``n_samples_fed`` (rows
    passed to the learner), ``fit_time`` (seconds spent in ``partial_fit`` or
    ``fit``), ``score_time``, ``cv_time`` (wall seconds of the whole CV run,
    reports included) and ``backend``; ``fold_order`` with
    ``report="per_fold"``; ``level_rungs`` (0.25 and 0.5 for the early
    rungs, then 1, 2, ...), ``level_scores`` and ``level_n_samples_fed`` (each rung's
    estimate and the rows fed when it was known) with ``report="levels"``, and
    in a trial pruned on a rung ``pruned_at_level`` (0.25 or 0.5: an early
    rung)
    (its fold scores, fit and score times are then absent: no fold finished);
    and the backend's engine extras summed over the
    folds (:attr:`Backend.extras`): for the ``alpha_seeding`` backend
    ``n_iter`` and ``seed_time``, and with a warm-start store
    ``warm_start_seed`` (the stored ``C`` most folds started from, or
    ``None``), ``warm_start_hits`` (problems seeded from a stored solution)
    and ``warm_start_skips`` (problems solved by the exact skip). A complete trial
    also gets ``mean_test_score`` and ``stderr_test_score`` as attributes of
    their own (columns of the dashboard's trial table). A pruned trial records
    in ``cv`` every fold it finished, with ``n_samples_fed`` and the times so
    far. Under a :class:`~optuna.pruners.NopPruner` (a grid, a study without
    pruning) nothing is reported: no pruner would read the values, and each
    report is a storage write (give every worker of a study the same pruner).

    The first trial on a study records what defines it (learner and fixed
    parameters, a hash of the data, the fold plan, scoring, search space) as
    study attributes, and refuses a study recorded with other ones: see
    :meth:`check_study`.

    The objective returns the mean test score, or ``(mean, std)`` when the
    study has two directions (e.g. ``directions=["maximize", "minimize"]``).

    Examples
    --------
    >>> import optuna
    >>> from optuna.distributions import FloatDistribution
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.linear_model import SGDClassifier
    >>> from optuna_treecv import TreeCVObjective
    >>> X, y = load_digits(return_X_y=True)
    >>> objective = TreeCVObjective(
    ...     SGDClassifier(random_state=0),
    ...     {"alpha": FloatDistribution(1e-5, 1e-1, log=True)},
    ...     X, y, cv=4,
    ... )
    >>> optuna.logging.set_verbosity(optuna.logging.WARNING)
    >>> sampler = optuna.samplers.TPESampler(seed=0)
    >>> study = optuna.create_study(direction="maximize", sampler=sampler)
    >>> study.optimize(objective, n_trials=3)
    >>> trial = study.best_trial
    >>> trial.value == trial.user_attrs["mean_test_score"]
    True
    >>> trial.user_attrs["cv"]["backend"]  # one pass is close to SGD's fit here
    'python_tree'
    """

    def __init__(
        self,
        estimator,
        params: ParamsSpec,
        X,
        y=None,
        *,
        cv=5,
        scoring=None,
        backend: str | Backend = "auto",
        report: str | None = "running_mean",
        n_jobs: int | None = None,
        random_state=None,
        fit_params: Mapping[str, Any] | None = None,
        warm_start_store=None,
        max_reports: int = MAX_REPORTS,
        progress: Callable[..., None] | None = None,
    ) -> None:
        _check_params_spec(params, estimator)
        _check_arguments(backend, report, scoring, fit_params)
        if not isinstance(max_reports, numbers.Integral) or max_reports < 2:
            raise ValueError(
                "The 'max_reports' parameter of TreeCVObjective must be an int "
                f"in the range [2, inf). Got {max_reports!r} instead."
            )
        if progress is not None and not callable(progress):
            raise TypeError(
                "The 'progress' parameter of TreeCVObjective must be a callable "
                f"or None. Got {progress!r} instead."
            )
        self.max_reports = int(max_reports)
        self.progress = progress
        self.estimator = estimator
        self.params = params
        self.cv = cv
        self.scoring = scoring
        self.backend = backend
        self.report = report
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.fit_params = dict(fit_params or {})
        rng = check_random_state(random_state)
        self._seed = int(rng.randint(0, 2**31 - 1))
        try:
            # One core for the whole study: the data, folds, scorer, classes,
            # stores and notes are decided once, not per trial.
            self.core_ = RunCore(
                estimator,
                X,
                y,
                cv=cv,
                scoring=scoring,
                method=backend,
                random_state=rng,
                fit_params=self.fit_params,
                n_jobs=n_jobs,
                # A fold that cannot be scored fails the trial with its reason
                # (Optuna records it; `catch=` decides), not a silent nan.
                error_score="raise",
                store=warm_start_store,
                refit=True,
            )
        except TypeError as exc:
            if warm_start_store is None or warm_start_store is False:
                raise
            raise ValueError(
                "The 'warm_start_store' parameter of TreeCVObjective cannot be "
                f"used with {type(estimator).__name__}: {exc}"
            ) from None
        self.X, self.y = self.core_.X, self.core_.y
        self.fold_plan_: FoldPlan = self.core_.plan
        k = self.fold_plan_.n_splits
        self.report_counts_ = report_counts(k, self.max_reports)
        self.reported_folds_ = reported_folds(k, self.max_reports)
        self._warned_pruner = False
        self._identity: dict[str, Any] | None = None
        self._checked_studies: weakref.WeakSet = weakref.WeakSet()

    # -- the objective ------------------------------------------------------------
    def __call__(self, trial: BaseTrial) -> float | tuple[float, float]:
        study = getattr(trial, "study", None)
        if study is not None:
            self._check_study_once(study)
        n_objectives = len(study.directions) if study is not None else 1
        if n_objectives > 2:
            raise ValueError(
                "TreeCVObjective returns the mean test score, or (mean, std) for a "
                f"study with two directions; this study has {n_objectives}."
            )
        multi = n_objectives == 2
        if not multi:  # a multi-objective study is not reported to
            self._warn_about_pruner(study)
        params = suggest_params(trial, self.params)
        estimator = clone(self.estimator)
        try:
            estimator.set_params(**params)
        except ValueError as exc:
            raise ValueError(f"Cannot set params {params!r}: {exc}") from None
        resolved = self.core_.resolve(estimator)
        plan = self.fold_plan_
        report = None if multi else self.report
        extra: dict[str, Any] = {}
        if report == "per_fold":
            rng = np.random.default_rng([self._seed, int(trial.number)])
            # The reported folds first, in an order of this trial's own.
            first = rng.permutation(self.reported_folds_)
            rest = np.setdiff1d(np.arange(plan.n_splits), first)
            extra["fold_order"] = [int(f) for f in first]
            plan = plan.reordered(np.concatenate([first, rest]))
        if isinstance(getattr(study, "pruner", None), NopPruner):
            # Nothing would read the reports (the fold scores go into the "cv"
            # attribute): no storage writes for them, the same decisions.
            report = None
        tic = time.perf_counter()
        table = self._run_reporting(trial, resolved, plan, report, extra)
        details = _details(table, resolved, time.perf_counter() - tic)
        gap = self.core_.note_regime(
            resolved,
            _split_scores(details),
            details["cv_time"],
            min_seconds=0.0,
            act=True,
        )
        if self.core_.fit_instead_ and resolved.regime == "one_pass":
            # A large gap turned "auto" to the learner's fit: this trial too is
            # scored by it (its reports stay those of the pass already made).
            resolved = self.core_.resolve(resolved.estimator)
            tic = time.perf_counter()
            table = self.core_.run(resolved, plan=plan)
            details = _details(table, resolved, time.perf_counter() - tic)
        if gap is not None:
            details["regime_gap"] = gap.as_dict()
            if study is not None:  # once per study: what the trials' scores mean
                study.set_user_attr(
                    "treecv_regime", _regime_record(estimator, self.core_.fit_instead_)
                )
        _write_attrs(trial, {**details, **extra})
        publish = getattr(resolved.store, "publish", None)
        if publish is not None:
            publish(trial, resolved.session)
        mean, std = details["mean_test_score"], details["std_test_score"]
        return (mean, std) if multi else mean

    def _run_reporting(self, trial, resolved, plan, report, extra) -> LeafTable:
        """The trial's leaves, reported as ``report`` says on the way.

        A pruned trial writes what it did (``extra`` included) and raises.
        """
        tic = time.perf_counter()
        if report == "levels":
            ladder = LevelReports(trial, self)
            try:
                table = ladder.run(self.core_, resolved, plan)
            except optuna.TrialPruned:
                details = ladder.record(
                    resolved, plan.n_splits, time.perf_counter() - tic
                )
                _write_attrs(trial, {**details, **extra})
                raise
            extra.update(ladder.summary())
            return table
        progress = _Progress(trial, plan.n_splits, report, self)
        # Without reports or progress nothing needs the leaves one by one: the
        # native engines then keep them in C (leave-one-out on 581,012 rows).
        listens = report is not None or self.progress is not None
        try:
            return self.core_.run(
                resolved, plan=plan, leaf_callback=progress if listens else None
            )
        except optuna.TrialPruned:
            details = progress.record(resolved, time.perf_counter() - tic)
            _write_attrs(trial, {**details, **extra})
            raise

    def _warn_about_pruner(self, study) -> None:
        """Say once when the study's pruner does not read this report as meant."""
        message = pruner_mismatch(self.report, getattr(study, "pruner", None))
        if message is not None and not self._warned_pruner:
            self._warned_pruner = True
            warnings.warn(message, UserWarning, stacklevel=3)

    @property
    def warm_start_store(self):
        """The ``warm_start_store`` the trials share (``None``: the backend's own).

        Setting it between trials changes the store later trials read and
        fill (a worker that opens its own artifact store, for instance).
        """
        return self.core_.store

    @warm_start_store.setter
    def warm_start_store(self, store) -> None:
        self.core_.store = store

    @property
    def warm_start_store_(self):
        """The store the trials share (the backend's own by default), or None."""
        return self.core_.store_of(clone(self.estimator))

    # -- study identity -------------------------------------------------------------
    def check_study(self, study: optuna.Study) -> dict[str, Any]:
        """Record what defines this study in it, or check it against the record.

        A study's trials are comparable only when they score the same learner
        on the same data, folds and metric, over one search space. The first
        time an objective meets a study, it stores these as study user
        attributes (shown in the dashboard's study panel): ``treecv_learner``
        (the class), ``treecv_learner_params`` (its parameters, the searched
        ones left out), ``treecv_data`` (shape and a hash of ``X`` and ``y``),
        ``treecv_folds`` (number of folds, feeding order and a hash of the
        plan), ``treecv_scoring``, ``treecv_search_space`` and
        ``treecv_report``. A study that already holds them must match:
        resuming it with other data, folds or space would silently mix trials
        that cannot be compared. A study that holds none of them but has
        finished trials made by other code (trials without the ``cv``
        attribute) is refused too: they would compete for ``best_trial`` with
        parameters the learner may not even have.

        Called by the objective before the first trial on each study; call it
        yourself to check before ``study.optimize``.

        Parameters
        ----------
        study : optuna.Study
            The study to record in or check.

        Returns
        -------
        identity : dict
            The study attributes recorded for this objective.

        Raises
        ------
        StudyIdentityError
            If the study was recorded with other settings, or holds trials of
            other code; the message names each difference. Start a new study
            instead (another ``study_name``), or delete this one with
            ``optuna.delete_study``.

        Examples
        --------
        >>> import optuna
        >>> from optuna.distributions import FloatDistribution
        >>> from sklearn.datasets import load_iris
        >>> from sklearn.linear_model import SGDClassifier
        >>> from optuna_treecv import TreeCVObjective
        >>> X, y = load_iris(return_X_y=True)
        >>> space = {"alpha": FloatDistribution(1e-5, 1e-1, log=True)}
        >>> study = optuna.create_study(study_name="iris", direction="maximize")
        >>> identity = TreeCVObjective(SGDClassifier(), space, X, y).check_study(study)
        >>> study.user_attrs["treecv_learner"]
        'sklearn.linear_model.SGDClassifier'
        >>> other = TreeCVObjective(SGDClassifier(), space, X[:100], y[:100])
        >>> other.check_study(study)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        optuna_treecv._identity.StudyIdentityError: The study 'iris' was recorded ...
        """
        identity = self._study_identity()
        recorded = study.user_attrs
        if not any(key in recorded for key in identity):
            _refuse_foreign_trials(study)
        changed = [
            key
            for key, value in identity.items()
            if key in recorded and _canonical(recorded[key]) != _canonical(value)
        ]
        if "treecv_learner" in changed and "treecv_learner_params" in changed:
            changed.remove("treecv_learner_params")  # Another class: noise.
        old, new = dict(recorded), dict(identity)
        if "treecv_search_space" in changed and "treecv_learner_params" in changed:
            # A name moved into or out of the space is said there, once.
            moved = set()
            for space in (old["treecv_search_space"], new["treecv_search_space"]):
                moved |= set(space) if isinstance(space, dict) else set()
            for attrs in (old, new):
                attrs["treecv_learner_params"] = {
                    k: v
                    for k, v in attrs["treecv_learner_params"].items()
                    if k not in moved
                }
            if _canonical(old["treecv_learner_params"]) == _canonical(
                new["treecv_learner_params"]
            ):
                changed.remove("treecv_learner_params")
        changes = [_describe_change(k, old[k], new[k]) for k in changed]
        if changes:
            raise StudyIdentityError(study.study_name, changes)
        for key, value in identity.items():
            if key not in recorded:
                study.set_user_attr(key, value)
        return identity

    def _check_study_once(self, study: optuna.Study) -> None:
        if study in self._checked_studies:
            return
        self.check_study(study)
        self._checked_studies.add(study)

    def _study_identity(self) -> dict[str, Any]:
        if self._identity is None:
            placement = self.core_.placement
            self._identity = study_identity(
                self.estimator,
                self.params,
                self.X,
                self.y,
                self.fold_plan_,
                self.scoring,
                self.report,
                data=None if placement is None else placement.fingerprint(),
            )
        return self._identity

    def __repr__(self) -> str:
        return (
            f"TreeCVObjective({type(self.estimator).__name__}, "
            f"n_splits={self.fold_plan_.n_splits}, backend={self.backend!r}, "
            f"report={self.report!r})"
        )


def report_counts(n_splits: int, max_reports: int = MAX_REPORTS) -> np.ndarray:
    """The numbers of finished folds at which ``report="running_mean"`` reports.

    Every count up to ``max_reports`` folds. Beyond, at most ``max_reports``
    counts spaced geometrically from ``n_splits // 1024`` (at least 1) to
    ``n_splits``: the tree has fed about ``n`` rows before its first leaf
    whatever ``k`` is, so a first report after a thousandth of the folds costs
    little more than one after a single fold, and its mean is no longer the
    noise of one left-out row.

    Examples
    --------
    >>> from optuna_treecv._objective import report_counts
    >>> report_counts(5).tolist()
    [1, 2, 3, 4, 5]
    >>> counts = report_counts(581_012)
    >>> len(counts) <= 32, int(counts[0]), int(counts[-1])
    (True, 567, 581012)
    """
    if n_splits <= max_reports:
        return np.arange(1, n_splits + 1)
    first = max(1, n_splits // FIRST_REPORT)
    counts = np.geomspace(first, n_splits, max_reports).round().astype(np.int64)
    return np.unique(np.clip(counts, 1, n_splits))


def reported_folds(n_splits: int, max_reports: int = MAX_REPORTS) -> np.ndarray:
    """The folds whose own scores ``report="per_fold"`` reports (split indices).

    All of them up to ``max_reports`` folds; beyond, ``max_reports`` evenly
    spaced ones, the same in every trial and every worker.

    Examples
    --------
    >>> from optuna_treecv._objective import reported_folds
    >>> reported_folds(10_000, 5).tolist()
    [0, 2500, 5000, 7499, 9999]
    """
    if n_splits <= max_reports:
        return np.arange(n_splits)
    return np.unique(np.linspace(0, n_splits - 1, max_reports).round().astype(int))


class _Progress:
    """The leaf callback: report to the trial, prune, keep what was done.

    Called once per leaf (half a million times for leave-one-out on half a
    million rows), so it does little per leaf: the score goes into an array,
    and reports, pruning decisions and progress calls happen at their counts.
    """

    def __init__(
        self, trial: BaseTrial, n_splits: int, report: str | None, objective
    ) -> None:
        self.trial = trial
        self.n_splits = n_splits
        self.report = report
        self.scores = np.full(n_splits, np.nan)
        self.done = 0
        self.extras: dict[str, list] = {}
        self.n_samples_fed = 0
        self.fit_time = 0.0
        self.score_time = 0.0
        counts = objective.report_counts_ if report == "running_mean" else ()
        self.counts = iter([int(c) for c in counts] + [-1])
        self.next_count = next(self.counts)
        self.folds = frozenset(int(f) for f in objective.reported_folds_)
        self.progress = objective.progress
        self.next_progress = time.monotonic() + PROGRESS_INTERVAL

    def __call__(self, leaf: LeafResult) -> None:
        score = float(next(iter(leaf.scores.values())))
        self.scores[leaf.split] = score
        self.done += 1
        if leaf.extras:
            for name, value in leaf.extras.items():
                self.extras.setdefault(name, []).append(value)
        self.n_samples_fed += int(leaf.n_samples_fed)
        self.fit_time += float(leaf.fit_time)
        self.score_time += float(leaf.score_time)
        if self.progress is not None:
            self._show_progress()
        if self.report is None:
            return
        if self.report == "running_mean":
            if self.done != self.next_count:
                return
            self.next_count = next(self.counts)
            value = math.fsum(self.scores[~np.isnan(self.scores)]) / self.done
            self.trial.report(value, step=self.done - 1)
        elif leaf.split in self.folds:
            self.trial.report(score, step=leaf.split)
        else:
            return
        if self.trial.should_prune():
            raise optuna.TrialPruned(
                f"Pruned after {self.done} of {self.n_splits} folds."
            )

    def _show_progress(self) -> None:
        now = time.monotonic()
        if now >= self.next_progress:
            self.next_progress = now + PROGRESS_INTERVAL
            self.progress(self.trial, self.done, self.n_splits, self.n_samples_fed)

    def record(self, resolved: Resolved, wall_time: float) -> dict[str, Any]:
        """The details of a pruned trial: every finished fold, rows, times."""
        details: dict[str, Any] = scores_layout(self.scores)
        details.update(
            n_splits=self.n_splits,
            n_samples_fed=self.n_samples_fed,
            fit_time=self.fit_time,
            score_time=self.score_time,
            cv_time=wall_time,
            backend=resolved.backend.name,
            regime=resolved.regime,
        )
        details.update(summarize_extras(type(resolved.backend).extras, self.extras))
        return details


def _details(table: LeafTable, resolved: Resolved, wall_time: float) -> dict[str, Any]:
    """A finished trial's details: every fold's score, the summary, rows, times."""
    table = table.by_split()
    scores = np.asarray(table.scores["score"], dtype=float)
    details: dict[str, Any] = scores_layout(scores, finished_only=False)
    details.update(
        n_splits=int(scores.size),
        mean_test_score=float(np.mean(scores)),
        std_test_score=float(np.std(scores)),
        stderr_test_score=_stderr(scores),
        n_samples_fed=int(np.sum(table.n_samples_fed)),
        fit_time=float(np.sum(table.fit_time)),
        score_time=float(np.sum(table.score_time)),
        cv_time=wall_time,
        backend=resolved.backend.name,
        regime=resolved.regime,
    )
    details.update(summarize_extras(type(resolved.backend).extras, table.extras))
    return details


def _check_arguments(backend, report, scoring, fit_params) -> None:
    """Refuse ``TreeCVObjective``'s invalid arguments, naming each."""
    if not isinstance(backend, Backend) and (
        not isinstance(backend, str) or backend not in METHODS
    ):
        raise ValueError(
            "The 'backend' parameter of TreeCVObjective must be a str among "
            f"{set(METHODS)} or a Backend. Got {backend!r} instead."
        )
    if report not in REPORTS:
        raise ValueError(
            "The 'report' parameter of TreeCVObjective must be one of "
            f"{REPORTS}. Got {report!r} instead."
        )
    if scoring is not None and not (isinstance(scoring, str) or callable(scoring)):
        raise ValueError(
            "The 'scoring' parameter of TreeCVObjective must be a str, a "
            f"callable or None (one metric). Got {scoring!r} instead."
        )
    if fit_params is not None and not isinstance(fit_params, Mapping):
        raise TypeError(
            "The 'fit_params' parameter of TreeCVObjective must be a dict or "
            f"None. Got {fit_params!r} instead."
        )


def _regime_record(estimator, turned_to_fit: bool) -> dict:
    """The study attribute ``treecv_regime``: what the trials scored.

    ``treecv_learner_params`` lists the learner's parameters as given; where
    the trials scored one pass of ``partial_fit``, the ones that pass does not
    use are named here, so that ``max_iter=1000`` is not read as 1000 epochs.
    """
    if turned_to_fit:
        return {"scored": "fit", "why": "one pass was far from fit (regime_gap)"}
    params = estimator.get_params(deep=True)
    unused = sorted(
        name for name in params if name.rsplit("__", 1)[-1] in FIT_ONLY_PARAMS
    )
    return {"scored": "one_pass", "unused_by_one_pass": unused}


def _split_scores(details: dict[str, Any]) -> dict[int, float]:
    """Split index -> test score, from a trial's details (either layout)."""
    scores = fold_scores(details)
    return {i: s for i, s in enumerate(scores.tolist()) if not math.isnan(s)}


def _write_attrs(trial: BaseTrial, details: dict[str, Any]) -> None:
    """Store a trial's details in as few storage writes as the dashboard allows.

    Each ``set_user_attr`` is a transaction of its own in an RDB storage (about
    a millisecond in SQLite, more without WAL): the per-fold details go into
    one dict attribute, :data:`CV_ATTR`, and only :data:`SUMMARY_ATTRS` (table
    columns in the dashboard, read by ``select_trial``) get their own.
    """
    for key in SUMMARY_ATTRS:
        if key in details:
            trial.set_user_attr(key, details[key])
    trial.set_user_attr(CV_ATTR, details)


# -- study identity -----------------------------------------------------------------
def _stderr(scores: np.ndarray) -> float:
    """Standard error of the mean fold score, ``std(ddof=1) / sqrt(k)``."""
    if len(scores) < 2:
        return float("nan")
    return float(np.std(scores, ddof=1) / math.sqrt(len(scores)))


# -- search spaces ------------------------------------------------------------------
def suggest_params(trial: BaseTrial, params: ParamsSpec) -> dict[str, Any]:
    """Sample estimator parameters for ``trial`` with the public ``suggest_*`` API.

    Parameters
    ----------
    trial : optuna.trial.BaseTrial
        The trial (a ``FixedTrial`` replays given values).
    params : dict or callable
        A dict from name to :mod:`optuna.distributions` object, or a callable
        ``params(trial) -> dict``.

    Returns
    -------
    params : dict
        Parameter values to pass to ``set_params``.

    Examples
    --------
    >>> from optuna.distributions import CategoricalDistribution
    >>> from optuna.trial import FixedTrial
    >>> from optuna_treecv import suggest_params
    >>> space = {"loss": CategoricalDistribution(["hinge", "log_loss"])}
    >>> suggest_params(FixedTrial({"loss": "hinge"}), space)
    {'loss': 'hinge'}
    """
    if callable(params) and not isinstance(params, Mapping):
        values = params(trial)
        if not isinstance(values, Mapping):
            raise TypeError(
                "The 'params' callable of TreeCVObjective must return a dict of "
                f"estimator parameters. Got {values!r} instead."
            )
        return dict(values)
    return {name: _suggest(trial, name, dist) for name, dist in params.items()}


def _suggest(trial: BaseTrial, name: str, dist: BaseDistribution) -> Any:
    if isinstance(dist, FloatDistribution):
        return trial.suggest_float(
            name, dist.low, dist.high, step=dist.step, log=dist.log
        )
    if isinstance(dist, IntDistribution):
        return trial.suggest_int(
            name, dist.low, dist.high, step=dist.step, log=dist.log
        )
    if isinstance(dist, CategoricalDistribution):
        return trial.suggest_categorical(name, dist.choices)
    raise TypeError(f"Unsupported distribution {dist!r} for parameter {name!r}.")


def _check_params_spec(params, estimator) -> None:
    if callable(params) and not isinstance(params, Mapping):
        return
    if not isinstance(params, Mapping):
        raise TypeError(
            "The 'params' parameter of TreeCVObjective must be a dict from "
            "parameter name to an optuna.distributions object, or a callable "
            f"trial -> dict. Got {type(params).__name__} instead."
        )
    valid = estimator.get_params(deep=True)
    for name, dist in params.items():
        if not isinstance(dist, FloatDistribution | IntDistribution) and not (
            isinstance(dist, CategoricalDistribution)
        ):
            hint = ""
            if isinstance(dist, list | tuple):
                hint = f" (e.g. CategoricalDistribution({list(dist)!r}))"
            elif isinstance(dist, numbers.Number):
                hint = " (a fixed value belongs in the estimator itself)"
            raise TypeError(
                f"The value of params[{name!r}] must be an optuna.distributions "
                "object (FloatDistribution, IntDistribution or "
                f"CategoricalDistribution){hint}. Got {dist!r} instead."
            )
        if name not in valid:
            raise ValueError(
                f"Invalid parameter {name!r} for estimator "
                f"{type(estimator).__name__}. Valid parameters are: "
                f"{sorted(k for k in valid if '__' not in k)!r}."
            )
