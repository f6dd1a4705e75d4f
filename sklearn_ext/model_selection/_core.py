"""The run core: the one path from every door to the backends.

:func:`~sklearn_ext.tree_cross_validate`, each candidate and the refit of
:class:`~sklearn_ext.TreeCVSearchCV`, each ``TreeCVObjective`` trial and the
command line all go through a :class:`RunCore`, the way scikit-learn's searches
and ``cross_validate`` all reduce to ``_fit_and_score``. A core is built once
per call, per search ``fit`` or per study, and decides once what the runs
share: the data (as given, and checked once for the engines that need an
array), the fold plan, the scorer and the metric a backend may compute itself,
the classes, the stores and the warnings. :meth:`RunCore.resolve` picks one
candidate's backend (once), :meth:`RunCore.run` runs it and
:meth:`RunCore.refit` trains the model the scores describe.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from traceback import format_exc
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import UnsetMetadataPassedError
from sklearn.utils import check_array, get_tags, indexable
from sklearn.utils._metadata_requests import _routing_enabled, get_routing_for_object
from sklearn.utils.validation import _num_samples, check_consistent_length

from sklearn_ext.model_selection._backends import (
    Backend,
    CVTask,
    LeafResult,
    LeafTable,
    StandardBackend,
)
from sklearn_ext.model_selection._choice import (
    TreeCVFallbackWarning,
    find_placement,
    learner_without_partial_fit,
    resolve_backend,
)
from sklearn_ext.model_selection._gap import RegimeGap, measure_gap
from sklearn_ext.model_selection._levels import LevelEstimate
from sklearn_ext.model_selection._order import order_relation, warn_about_order
from sklearn_ext.model_selection._placement import PlacementError
from sklearn_ext.model_selection._plan import (
    FoldPlan,
    SplitsPlan,
    check_training_rows,
)
from sklearn_ext.model_selection._regime import (
    fit_is_one_pass,
    regime_estimator,
    scored_estimator,
    warn_about_regime,
)
from sklearn_ext.model_selection._scoring import (
    check_response_methods,
    make_scorer_dict,
    metric_names,
    native_metric,
)
from sklearn_ext.model_selection._split import make_fold_plan
from sklearn_ext.utils._data_scope import data_scope

__all__ = ["Resolved", "RunCore", "stratifies", "takes_store"]

#: The regime gap's time budget beyond its first ``GAP_SPLITS`` splits: this
#: share of the time the door's runs took, and at least ``GAP_MIN_SECONDS``.
GAP_BUDGET = 0.3
GAP_MIN_SECONDS = 2.0


def stratifies(estimator) -> bool:
    """Whether an int ``cv`` stratifies on ``y`` for ``estimator``.

    True for classifiers and for outlier detectors (whose ``y`` holds the
    normal/anomaly labels, so that every fold gets its share of anomalies).
    """
    from sklearn.base import is_classifier, is_outlier_detector

    return is_classifier(estimator) or is_outlier_detector(estimator)


@dataclass(frozen=True)
class Resolved:
    """One candidate's run, decided: what runs it and what it scores.

    Attributes
    ----------
    estimator : estimator object
        The candidate as the user gave it.
    backend : Backend
        The backend that runs it (with the run's store, if any).
    scored : estimator object
        What the backend trains: ``estimator``, or a ``TreeCVEstimator``
        around it that keeps its batches fixed.
    regime : {"fit", "one_pass"}
        What each fold's model is (``backend.scores``).
    store : object or None
        The store the runs share.
    session : object or None
        What ``backend`` holds for this run: ``store.session()`` when the
        store opens sessions (an Optuna artifact store), else ``store``.
    """

    estimator: Any
    backend: Backend
    scored: Any
    regime: str
    store: Any = None
    session: Any = None

    @property
    def scores_own_fit(self) -> bool:
        """Whether the folds are the learner's own ``fit``."""
        return self.regime == "fit" or fit_is_one_pass(self.estimator)


class RunCore:
    """What every run of one call, one search ``fit`` or one study shares.

    Parameters
    ----------
    estimator : estimator object
        The learner (a search's base estimator); its class decides the
        stratification of an int ``cv``, the scorer and the classes.
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        The data as given: DataFrames, lists and NaN reach the estimator when
        the backend that runs takes data as given (``Backend.data_as_given``),
        exactly as in ``cross_validate``; the native engines get a checked
        array, made once.
    y : array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
        Targets.
    groups : array-like of shape (n_samples,), default=None
        Group labels for the splitter.
    cv : int, FoldPlan or cross-validation generator, default=5
        See :func:`~sklearn_ext.tree_cross_validate`.
    scoring : str, callable, list, tuple, set, dict or None, default=None
        As in ``cross_validate``: ``None`` is the estimator's ``score``.
    method : str or Backend, default="auto"
        See :func:`~sklearn_ext.model_selection.choose_backend`.
    order, random_state :
        The feeding order of the plan and its seed.
    classes : array-like, default=None
        All class labels (default: those of ``y`` for a classifier).
    fit_params : dict, default=None
        Passed to ``fit`` (per-sample arrays restricted), and to
        ``partial_fit`` unless ``stream_params`` is given.
    stream_params : dict, default=None
        Passed to ``partial_fit`` when they differ from ``fit``'s (metadata
        routing); default: ``fit_params``.
    score_params : dict, default=None
        Passed to the scorers (per-sample arrays restricted).
    n_jobs : int, default=None
        Workers of each run.
    return_train_score : bool, default=False
        Also score each fold's model on its training rows.
    error_score : "raise" or float, default=np.nan
        The score of a fold whose fit or scoring fails, as in
        ``cross_validate``; ``"raise"`` raises.
    store : object, False or None, default=None
        A store shared by the runs (``warm_start_store``), ``False`` for
        none, ``None`` for the backend's own (one per backend class).
    refit : bool, default=False
        Whether the door returns a model (said in the regime note).
    pre_dispatch : int or str, default="2*n_jobs"
        joblib's ``pre_dispatch`` for the folds the standard backend
        dispatches as jobs.
    check_base : bool, default=True
        Whether ``scoring`` is checked against ``estimator`` before any run
        (each candidate is checked by :meth:`resolve`); a search's base
        estimator may lack a step its grid sets.
    """

    def __init__(
        self,
        estimator,
        X,
        y=None,
        *,
        groups=None,
        cv=5,
        scoring=None,
        method="auto",
        order=None,
        random_state=None,
        classes=None,
        fit_params=None,
        stream_params=None,
        score_params=None,
        n_jobs=None,
        return_train_score: bool = False,
        error_score=np.nan,
        store=None,
        refit: bool = False,
        pre_dispatch="2*n_jobs",
        check_base: bool = True,
    ) -> None:
        self.method = method
        #: Where the data lives when not in memory (a Dask collection's
        #: blocks): it makes the plan and the classes and names the backend.
        self.placement = find_placement(X, y)
        self._checked_X = None
        if self.placement is not None:
            self.X, self.y = self.placement.X, self.placement.y
            self.y_given = self.y
            self.plan: FoldPlan = self.placement.plan(
                cv, order=order, random_state=random_state
            )
        else:
            self.X, self.y = _indexable_data(X, y)
            # The standard backend hands y to fit and the scorers as given (a
            # list, a Series), as cross_validate does; the engines get an array.
            self.y_given = None if y is None else indexable(y)[0]
            self.plan = make_fold_plan(
                cv,
                self.X,
                self.y,
                groups,
                classifier=stratifies(estimator),
                order=order,
                random_state=random_state,
            )
        _check_pairwise_data(estimator, self.X)
        if check_base:
            check_response_methods(estimator, scoring)
        self.scoring = scoring
        self.scorer = make_scorer_dict(estimator, scoring, error_score)
        self.metric = (
            None
            if score_params or return_train_score
            else native_metric(estimator, scoring)
        )
        self.classes = (
            _all_classes(estimator, self.y, classes)
            if self.placement is None
            else self.placement.classes(estimator, classes)
        )
        self.fit_params = dict(fit_params or {})
        self.stream_params = (
            self.fit_params if stream_params is None else dict(stream_params)
        )
        self.score_params = dict(score_params or {})
        if self.placement is not None:
            self.placement.check_params(
                self.stream_params, self.score_params, return_train_score
            )
        self.n_jobs = n_jobs
        self.return_train_score = return_train_score
        self.error_score = error_score
        self.store = store
        self.refit_ = refit
        self.pre_dispatch = pre_dispatch
        self._stores: dict[type, Any] = {}
        self._gap_tried = False
        self._order_checked = False
        #: The regime gap measured by :meth:`note_regime`, or None.
        self.gap_: RegimeGap | None = None
        #: Whether ``method="auto"`` turned to the learner's own ``fit`` after a
        #: large gap (:attr:`RegimeGap.is_large`): later runs score ``fit``.
        self.fit_instead_ = False
        self._said: set = set()
        #: What was decided without a warning, said once each: the fallback of
        #: a learner without ``partial_fit`` (printed by the doors at
        #: ``verbose > 0``).
        self.notes: list[str] = []
        self.memo: dict = {}
        if store is not None and store is not False:
            # A store the backend cannot keep is refused before any run.
            self._backend(estimator).with_store(store, estimator)

    # -- what one candidate runs ----------------------------------------------------
    def resolve(self, estimator) -> Resolved:
        """Pick the backend of ``estimator`` and decide what it scores, once."""
        # Per candidate: a search's base estimator may lack a step its grid sets.
        check_response_methods(estimator, self.scoring)
        backend = self._backend(estimator)
        store = self._store_for(backend, estimator)
        session = None
        if store is not None:
            opens = getattr(store, "session", None)
            session = opens() if callable(opens) else store
            backend = backend.with_store(session, estimator)
        backend = self._own_rows_fallback(backend, estimator)
        backend = self._fit_only_fallback(backend, estimator)
        backend = self._params_fallback(backend, estimator)
        backend = self._plan_fallback(backend, estimator)
        check_training_rows(self.plan, backend)
        scored, regime = scored_estimator(
            estimator,
            backend,
            classes=self.classes,
            # A placement's pipelines fix no categories from all rows.
            X=self.X if self.placement is None else None,
        )
        if regime == "one_pass":
            if self.fit_instead_ and not fit_is_one_pass(estimator):
                return Resolved(estimator, StandardBackend(), estimator, "fit")
            self._check_order()
        return Resolved(estimator, backend, scored, regime, store, session)

    def _backend(self, estimator) -> Backend:
        """The backend of ``estimator``: the placement's, or the resolver's."""
        if self.placement is not None:
            return self.placement.backend(estimator, self.method)
        return resolve_backend(
            estimator, self.method, self.X, self.y, say=self.say, note=self.note
        )

    def _check_order(self) -> None:
        """Say once if the rows are fed in an order related to ``y``."""
        if (
            self._order_checked
            or self.y is None
            or self.placement is not None  # y stays where it lives
            or self.plan.order != "fixed"
        ):
            return
        self._order_checked = True
        words = order_relation(self.y[self.plan.sample_order])
        if words is not None:
            self.say(lambda: warn_about_order(words))

    def note_regime(
        self,
        resolved: Resolved,
        tree_scores,
        spent: float = 0.0,
        min_seconds: float = GAP_MIN_SECONDS,
        act: bool = False,
    ) -> RegimeGap | None:
        """Say the regime note once, with the gap measured once.

        When ``resolved`` scores one pass of a learner whose own ``fit``
        trains differently, the first call measures that ``fit`` on the first
        splits against ``tree_scores`` (split index -> the tree's score of the
        first metric) and says the :class:`TreeCVRegimeWarning` with the
        numbers; later calls say nothing. Returns the gap when this call
        measured it. Beyond the first ``GAP_SPLITS`` splits, the measurement may take
        ``GAP_BUDGET`` times ``spent`` (the seconds the door's runs took), and
        at least ``min_seconds`` (a study, whose trials share the cost, passes
        0: two splits, then what a third of its first trial's time allows).

        With ``act=True`` (a search, measuring on its best candidate, or a
        study, on its first complete trial) and ``method="auto"``, a large gap
        (:attr:`RegimeGap.is_large`) turns the core to the learner's own
        ``fit``: :meth:`resolve` then returns the standard backend for every
        learner whose ``fit`` is not one pass (:attr:`fit_instead_`), and the
        note says so.
        """
        if resolved.scores_own_fit or self._gap_tried:
            return None
        self._gap_tried = True
        estimator = resolved.estimator
        if self.placement is not None:  # k fits would gather the data: no number
            self.say(lambda: warn_about_regime(estimator, refit=self.refit_))
            return None
        resolved_fit = Resolved(estimator, StandardBackend(), estimator, "fit")
        task = self.task(resolved_fit, self.plan)
        task.error_score = np.nan
        try:
            # The learner's own fits are ours, not the user's: their warnings
            # (a ConvergenceWarning of SGD's epochs) would only be noise.
            with data_scope(self.memo), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                budget = max(min_seconds, GAP_BUDGET * spent)
                gap = measure_gap(task, estimator, tree_scores, task.names[0], budget)
        except Exception:  # noqa: BLE001 - the note goes out without a number
            gap = None
        self.gap_ = gap
        self.fit_instead_ = bool(
            act and self.method == "auto" and gap is not None and gap.is_large
        )
        turned = self.fit_instead_
        self.say(
            lambda: warn_about_regime(
                estimator, refit=self.refit_, gap=gap, turned_to_fit=turned
            )
        )
        return gap

    def _own_rows_fallback(self, backend: Backend, estimator) -> Backend:
        """The standard backend, with a note, where ``"auto"`` picked an engine
        for splits whose test folds do not partition the samples (a
        :class:`SplitsPlan`: ``ShuffleSplit``, ``LeavePGroupsOut``)."""
        if (
            not isinstance(self.plan, SplitsPlan)
            or backend.own_training_rows
            or self.method != "auto"
        ):
            return backend
        splits = self.plan.splitter or "the given splits"
        what = "test folds that do not partition the samples"
        return self._fall_back(estimator, f"cv={splits} has {what}")

    def _fit_only_fallback(self, backend: Backend, estimator) -> Backend:
        """The standard backend where a parameter meant for ``fit`` is not one
        of ``partial_fit`` (which the one-pass backends would be given it)."""
        if backend.scores != "one_pass":
            return backend
        unknown = _not_partial_fit_params(estimator, self.stream_params)
        if not unknown:
            return backend
        owner = type(estimator).__name__
        reason = f"{owner}.partial_fit takes no parameter {', '.join(unknown)}"
        if self.method != "auto":
            raise TypeError(
                f"method={self.method!r} cannot run {owner} with these fit "
                f"parameters: {reason}. Use method='standard', which passes them "
                "to fit."
            )
        return self._fall_back(estimator, reason)

    def _params_fallback(self, backend: Backend, estimator) -> Backend:
        """The standard backend where ``"auto"`` picked a backend that refuses
        the fit parameters (a method named explicitly raises the engine's own
        error when it meets them)."""
        if self.method != "auto" or not self.fit_params:
            return backend
        # An optional declaration (Backend.params_refusal): why the backend
        # cannot take these fit parameters (the exact backend takes only the
        # learner's sample_weight).
        refuses = getattr(backend, "params_refusal", None)
        reason = None if refuses is None else refuses(estimator, self.fit_params)
        if reason is None:
            return backend
        return self._fall_back(estimator, reason)

    def _plan_fallback(self, backend: Backend, estimator) -> Backend:
        """The standard backend where ``"auto"`` picked a backend that refuses
        the plan's folds (a method named explicitly raises the engine's own
        error when it meets them)."""
        if backend.own_training_rows or self.method != "auto":
            return backend
        # An optional declaration (Backend.plan_refusal): why the backend
        # cannot run these folds (an SVM training part without some class).
        refuses = getattr(backend, "plan_refusal", None)
        reason = None if refuses is None else refuses(estimator, self.plan, self.y)
        if reason is None:
            return backend
        return self._fall_back(estimator, reason)

    def _fall_back(self, estimator, reason: str) -> Backend:
        if self.placement is not None:  # standard CV would gather the data
            raise TypeError(
                f"The Dask tree cannot run {type(estimator).__name__} here "
                f"({reason}), and standard CV would gather X: pass X.compute() "
                "to run it in memory."
            )
        message = (
            f"TreeCV cannot run {type(estimator).__name__} here ({reason}); "
            "method='auto' falls back to standard CV, fitting each split with fit "
            "(recorded as backend='standard'). Pass method='standard' to choose "
            "it explicitly."
        )
        if learner_without_partial_fit(estimator) is not None:
            # Every backend scores such a learner's own fit: only speed changed.
            self.note(message)
        else:
            self.say(
                lambda: warnings.warn(message, TreeCVFallbackWarning, stacklevel=2)
            )
        return StandardBackend()

    def store_of(self, estimator):
        """The store the runs of ``estimator`` share, or ``None``."""
        return self._store_for(self._backend(estimator), estimator)

    def _store_for(self, backend: Backend, estimator):
        if self.store is False:
            return None
        if self.store is not None:
            return self.store
        kind = type(backend)
        if kind not in self._stores:
            # setdefault: threads racing on the first trial keep one store.
            self._stores.setdefault(kind, backend.default_store(estimator))
        return self._stores[kind]

    def run(
        self,
        resolved: Resolved,
        *,
        plan: FoldPlan | None = None,
        leaf_callback=None,
        return_estimator: bool = False,
        around_fit=None,
    ) -> LeafTable:
        """Score every fold of ``plan`` (the core's by default) with ``resolved``.

        A fit that fails fails every fold the backend trains with it: unless
        ``error_score="raise"``, those folds get ``error_score`` and their
        ``fit_error``, as ``cross_validate`` records failed fits. An exception
        raised by ``leaf_callback`` (a pruned trial) always propagates.
        ``around_fit((split, model, X, y, params))`` is the context each
        independent ``fit`` of a fold runs in (``CVTask.around_fit``).
        """
        plan = self.plan if plan is None else plan
        stop = _Stop(leaf_callback)
        task = self.task(resolved, plan, stop if leaf_callback else None)
        task.return_estimator = return_estimator
        if around_fit is not None:
            task.around_fit = around_fit
        with data_scope(self.memo):
            try:
                return resolved.backend.run(task)
            except (UnsetMetadataPassedError, PlacementError):
                raise  # a routing error or a lost cluster, not a failed fit
            except Exception as exc:
                if stop.raised is exc or self.error_score == "raise":
                    raise
                return _failed_table(task, format_exc())

    def run_levels(
        self,
        resolved: Resolved,
        *,
        plan: FoldPlan | None = None,
        leaf_callback=None,
        return_estimator: bool = False,
        early_rungs: int = 0,
        early_chunks: bool = False,
    ) -> Iterator[LevelEstimate]:
        """The tree of ``plan`` level by level: a :class:`LevelEstimate` per level.

        A generator: each level is computed when the consumer asks for it, and
        closing it (or an exception thrown into it) stops the run, nothing
        more is fed. The last estimate is final and holds what :meth:`run`
        returns (``leaves``), failed fits included: a fit that fails ends the
        walk with a final estimate whose folds all score ``error_score``
        (unless that is ``"raise"``). A backend without levels
        (``Backend.supports_levels``) yields one final estimate from
        :meth:`run`, and a note says so once. ``early_rungs=e`` asks a walk
        for ``e`` early rungs first (``LevelEstimate.partial``: level 1's
        first part, scored after a half, a quarter, ... of its feed, before
        its sibling is fed; the last is the half rung); an engine that cannot
        pause a feed gives the half rung only, a backend without levels none.
        ``early_chunks=True`` scores each early rung chunk by chunk too
        (``LevelEstimate.chunk_scores``), for a test over chunks on any metric.
        """
        plan = self.plan if plan is None else plan
        backend = resolved.backend
        if not backend.supports_levels:
            self.note(
                f"The {backend.name!r} backend has no levels: the fold scores come "
                "as one final estimate, the leaves' level."
            )
            table = self.run(
                resolved,
                plan=plan,
                leaf_callback=leaf_callback,
                return_estimator=return_estimator,
            )
            names = metric_names(self.scoring)
            yield LevelEstimate.of_leaves(plan, table, names)
            return
        stop = _Stop(leaf_callback)
        task = self.task(resolved, plan, stop if leaf_callback else None)
        task.return_estimator = return_estimator
        task.early_rungs = early_rungs
        task.early_chunks = early_chunks
        # The walk starts inside _levels_of: a fit that fails as it starts (a
        # native learner validating its parameters) fails like any other fit.
        yield from _levels_of(self, lambda: backend.run_levels(task), task, stop)

    def task(self, resolved: Resolved, plan: FoldPlan, on_leaf=None) -> CVTask:
        """The :class:`CVTask` of one run of ``resolved`` on ``plan``."""
        backend = resolved.backend
        return CVTask(
            estimator=resolved.scored,
            X=self.X if backend.data_as_given else self.checked_X,
            y=self.y_given if getattr(backend, "y_as_given", False) else self.y,
            plan=plan,
            scorer=self.scorer,
            metric=self.metric,
            fit_params=self._params_for(resolved.estimator, resolved.scored)
            if resolved.regime == "one_pass"
            else dict(self.fit_params),
            score_params=self.score_params,
            classes=self.classes if _takes_classes(resolved.scored) else None,
            n_jobs=self.n_jobs,
            on_leaf=on_leaf,
            return_train_score=self.return_train_score,
            error_score=self.error_score,
            names=tuple(metric_names(self.scoring)),
            pre_dispatch=self.pre_dispatch,
        )

    def _params_for(self, estimator, scored) -> dict:
        """The ``partial_fit`` parameters as ``scored`` takes them.

        Routed parameters carry the learner's own names; a wrapper around the
        learner (a ``TreeCVEstimator``) routes them again, by the names the
        learner requests them under (its aliases), so it gets those.
        """
        params = dict(self.stream_params)
        if scored is estimator or not _routing_enabled():
            return params
        requests = get_routing_for_object(estimator)
        method = getattr(requests, "partial_fit", None)
        if method is None:
            return params
        names = {
            name: alias if isinstance(alias, str) else name
            for name, alias in method.requests.items()
        }
        return {names.get(name, name): value for name, value in params.items()}

    @property
    def prefer(self) -> str | None:
        """joblib's ``prefer`` for jobs that each run a candidate: ``"threads"``
        where the data's placement runs the work itself (a Dask cluster, whose
        client stays in this process), else joblib's default."""
        return None if self.placement is None else self.placement.prefer

    @property
    def checked_X(self):
        """``X`` as the native engines need it: a finite ndarray or CSR matrix."""
        if self._checked_X is None:
            self._checked_X = check_array(
                self.X,
                accept_sparse="csr",
                dtype=None,
                ensure_all_finite=True,
                ensure_min_samples=2,
                input_name="X",
            )
        return self._checked_X

    def refit(self, resolved: Resolved, X, y=None, *, around_fit=None):
        """The model the scores describe, trained on ``X``, ``y``.

        The learner's own ``fit`` when the folds were its ``fit``; otherwise
        the estimator whose ``fit`` is the scored pass (see
        :func:`~sklearn_ext.model_selection.one_pass_estimator`), given the
        ``partial_fit`` parameters. The run's store is lent to it (a kernel
        SVM reuses the kernel). ``around_fit(model)``, if given, is the
        context the model is fitted in (a search's callback hooks).
        """
        if self.placement is not None:
            X = None  # the model is trained where the blocks are
        model = regime_estimator(resolved.estimator, resolved.regime, self.classes, X=X)
        wrapped = type(model) is not type(resolved.estimator)
        fit_params = (
            self._params_for(resolved.estimator, model) if wrapped else self.fit_params
        )
        store = None
        if resolved.store is not None and takes_store(model):
            store = resolved.store
            model.set_params(warm_start_store=store)
        around = contextlib.nullcontext() if around_fit is None else around_fit(model)
        try:
            with around:
                if self.placement is not None:
                    classes = self.classes if _takes_classes(model) else None
                    model = self.placement.fit(
                        model, classes=classes, fit_params=fit_params
                    )
                elif y is None:
                    model.fit(X, **fit_params)
                else:
                    model.fit(X, y, **fit_params)
        finally:
            if store is not None:
                model.set_params(warm_start_store=None)
        return model

    # -- notes ------------------------------------------------------------------------
    def say(self, warn) -> None:
        """Emit the warnings of ``warn()`` once for the core's whole life.

        A search's candidates and a study's trials share one core, so a note
        about the learner (the regime, a fallback) is said once per ``fit`` or
        study, not once per candidate or trial. The warnings point at the
        user's code.
        """
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warn()
        for w in caught:
            key = (w.category, str(w.message))
            if key in self._said:
                continue
            self._said.add(key)
            _warn_at_caller(w.message, w.category)

    def note(self, message: str) -> None:
        """Keep ``message`` in :attr:`notes`, once, for the doors to show."""
        if message not in self.notes:
            self.notes.append(message)

    def __getstate__(self) -> dict:
        # A worker process gets the data and decisions, not the notes and memo.
        state = dict(self.__dict__)
        state["_said"], state["memo"] = set(), {}
        return state


class _Stop:
    """The leaf callback, remembering an exception it raised (a pruned trial)."""

    def __init__(self, callback) -> None:
        self.callback = callback
        self.raised: BaseException | None = None

    def __call__(self, leaf: LeafResult) -> None:
        try:
            self.callback(leaf)
        except BaseException as exc:
            self.raised = exc
            raise


def _levels_of(core: RunCore, start, task: CVTask, stop: _Stop):
    """A backend's levels (``start()`` begins its walk), each computed in the
    core's data scope.

    A failed fit ends them with one final estimate of failed folds, as
    :meth:`RunCore.run` returns them; what the consumer throws in (a pruned
    trial) or closing the generator stops the backend's walk.
    """
    n_fed = 0
    levels = None
    while True:
        try:
            with data_scope(core.memo):
                if levels is None:
                    levels = iter(start())
                level = next(levels)
        except StopIteration:
            return
        except (UnsetMetadataPassedError, PlacementError):
            raise
        except Exception as exc:
            if stop.raised is exc or core.error_score == "raise":
                raise
            table = _failed_table(task, format_exc())
            names = metric_names(core.scoring)
            failed = LevelEstimate.of_leaves(task.plan, table, names)
            yield dataclasses.replace(failed, n_samples_fed=n_fed)
            return
        n_fed = level.n_samples_fed
        try:
            yield level
        except BaseException:
            levels.close()
            raise


def _failed_table(task: CVTask, error: str) -> LeafTable:
    """Every fold failed with ``error``: scored ``error_score``."""
    plan = task.plan
    names = task.score_names()
    leaves = [
        task.leaf_result(
            leaf,
            {name: float(task.error_score) for name in names},
            0,
            0.0,
            0.0,
            fit_error=error,
        )
        for leaf in range(plan.n_splits)
    ]
    return LeafTable.from_leaves(leaves)


def _indexable_data(X, y):
    """``X`` made indexable as ``cross_validate`` does, ``y`` checked."""
    if sp.issparse(X):
        X = X.tocsr()
    elif not (hasattr(X, "iloc") or hasattr(X, "shape") or isinstance(X, list)):
        # An object with only __array__ becomes an array, as in indexable().
        X = np.asarray(X) if hasattr(X, "__array__") else list(X)
    n_samples = _num_samples(X)
    if n_samples < 2:
        raise ValueError(
            f"Found array with {n_samples} sample(s) while a minimum of 2 is required."
        )
    if y is not None:
        y = check_array(
            y,
            ensure_2d=False,
            allow_nd=True,
            dtype=None,
            ensure_all_finite=True,
            ensure_min_samples=2,
            input_name="y",
        )
        check_consistent_length(X, y)
        if y.dtype == object:
            n_none = sum(value is None for value in y.ravel())
            if n_none:
                raise ValueError(
                    f"The 'y' parameter must not contain None; got None in "
                    f"{n_none} of {y.shape[0]} samples."
                )
    return X, y


def _check_pairwise_data(estimator, X) -> None:
    """A precomputed kernel or distance matrix must be an array, as in scikit-learn."""
    if not get_tags(estimator).input_tags.pairwise:
        return
    if not (hasattr(X, "shape") or sp.issparse(X)):
        raise ValueError(
            "Precomputed kernels or affinity matrices have to be passed as arrays "
            "or sparse matrices."
        )


def _all_classes(estimator, y, classes):
    """All class labels of a classifier's ``y`` (checked against ``classes``)."""
    from sklearn.base import is_classifier

    if classes is not None:
        classes = np.asarray(classes)
        if y is not None:
            unknown = np.setdiff1d(np.unique(y), classes)
            if unknown.size:
                raise ValueError(
                    f"The 'classes' parameter must contain every label of y; "
                    f"{unknown.tolist()} are missing from {classes.tolist()}."
                )
        return classes
    if y is None or not is_classifier(estimator) or y.ndim != 1:
        return None
    return np.unique(y)


def _not_partial_fit_params(estimator, params: dict) -> list[str]:
    """The names in ``params`` that ``fit`` takes but ``partial_fit`` does not."""
    if not params:
        return []
    partial_fit = _takes(getattr(estimator, "partial_fit", None))
    fit = _takes(getattr(estimator, "fit", None))
    return sorted(
        name for name in params if not partial_fit(name) and fit(name) is not False
    )


def _takes(method):
    """``name -> bool``: whether ``method`` takes a keyword (``None``: unknown)."""
    try:
        parameters = inspect.signature(method).parameters
    except (TypeError, ValueError):
        return lambda name: None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return lambda name: True
    return lambda name: name in parameters


def _takes_classes(estimator) -> bool:
    from sklearn_ext.model_selection._backends import accepts_classes

    return accepts_classes(estimator)


def takes_store(model) -> bool:
    """Whether ``model`` has a ``warm_start_store`` parameter left at ``None``."""
    params = model.get_params(deep=False) if hasattr(model, "get_params") else {}
    return "warm_start_store" in params and params["warm_start_store"] is None


def _warn_at_caller(message, category) -> None:
    """Warn at the first frame outside this project, scikit-learn and joblib."""
    import sys

    frame = sys._getframe(1)
    root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
    ours = tuple(
        os.path.join(root, name) + os.sep for name in ("sklearn_ext", "optuna_treecv")
    )
    while frame is not None:
        filename = frame.f_code.co_filename
        inside = filename.startswith(ours)
        library = any(
            f"{os.sep}{name}{os.sep}" in filename
            for name in ("sklearn", "joblib", "optuna", "contextlib.py")
        )
        if not (inside or library or filename.startswith("<frozen")):
            break
        frame = frame.f_back
    if frame is None:
        warnings.warn(message, category, stacklevel=2)
        return
    registry = frame.f_globals.setdefault("__warningregistry__", {})
    warnings.warn_explicit(
        message,
        category,
        frame.f_code.co_filename,
        frame.f_lineno,
        module=frame.f_globals.get("__name__"),
        registry=registry,
    )
