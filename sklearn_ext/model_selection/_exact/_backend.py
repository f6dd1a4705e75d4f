"""The exact backend: statistics once per chunk, each fold the total minus one."""

from __future__ import annotations

import copy
import functools
import time
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import _check_sample_weight

from sklearn_ext.model_selection._backends import Backend, CVTask, LeafTable
from sklearn_ext.model_selection._exact._base import _Family, _Run
from sklearn_ext.model_selection._exact._cache import (
    StatisticsCache,
    default_cache,
    plan_digest,
)
from sklearn_ext.model_selection._exact._discriminant import _LinearDiscriminant
from sklearn_ext.model_selection._exact._layout import _Chunks
from sklearn_ext.model_selection._exact._least_squares import _LeastSquares
from sklearn_ext.model_selection._exact._naive_bayes import (
    _CategoricalNB,
    _DiscreteNB,
    _GaussianNB,
)
from sklearn_ext.model_selection._exact._neighbors import _Neighbors
from sklearn_ext.model_selection._exact._scaling import (
    _Scaled,
    _ScalerStats,
    pipeline_refusal,
    scaler_key,
)
from sklearn_ext.model_selection._scoring import native_metric
from sklearn_ext.utils._hashing import UnhashableContent, content_digest
from sklearn_ext.utils._memory import check_allocation

__all__ = ["ExactStatisticsBackend", "exact_learners"]

_FAMILIES = (
    _DiscreteNB(),
    _GaussianNB(),
    _CategoricalNB(),
    _LeastSquares(),
    _LinearDiscriminant(),
    _Neighbors(),
)


def _learner(estimator):
    """The learner of a pipeline (its final step), or the estimator itself."""
    if isinstance(estimator, Pipeline) and estimator.steps:
        return estimator.steps[-1][1]
    return estimator


def _family(estimator) -> _Family | None:
    """The family that runs ``estimator`` (a pipeline: that of its final step)."""
    learner = _learner(estimator)
    if learner is not estimator and isinstance(learner, Pipeline):
        return None
    kind = type(learner)
    name = f"{kind.__module__.split('._')[0]}.{kind.__qualname__}"
    for family in _FAMILIES:
        if name in family.names:
            if learner is not estimator and not family.scalable:
                return None
            return family if family.supports(learner) else None
    return None


def exact_learners() -> list[str]:
    """The scikit-learn estimators the exact backend runs, by dotted name.

    Examples
    --------
    >>> from sklearn_ext.model_selection import exact_learners
    >>> "sklearn.naive_bayes.MultinomialNB" in exact_learners()
    True
    """
    return [name for family in _FAMILIES for name in family.names]


class ExactStatisticsBackend(Backend):
    """Exact k-fold CV from per-chunk sufficient statistics (``method="exact"``).

    For naive Bayes (``MultinomialNB``, ``ComplementNB``, ``BernoulliNB``,
    ``CategoricalNB``, ``GaussianNB``), least squares (``Ridge``,
    ``RidgeClassifier``, ``LinearRegression``) and linear discriminant analysis
    (``LinearDiscriminantAnalysis``, any solver but ``shrinkage="auto"``),
    each fold's model is a function of statistics that add up over rows, also
    after a per-fold scaler: ``Pipeline([scaler, learner])`` with
    ``StandardScaler``, ``MinMaxScaler`` or ``MaxAbsScaler`` before least
    squares, LDA or ``GaussianNB`` (each fold's scaler is a function of
    per-chunk sums and extremes, its transform an affine map of the columns;
    fold models are fitted pipelines). For
    nearest neighbours (``KNeighborsClassifier``, ``KNeighborsRegressor``), one
    neighbour search over all rows serves every fold, each row's neighbours
    taken outside its own chunk.
    They are computed once per chunk; each fold's are the total minus its
    held-out chunk, and each fold model is a
    real fitted scikit-learn estimator with the attributes its own ``fit`` on
    the fold's training rows sets (to rounding: see ``docs/exact.md`` for what
    is bit-equal and what agrees to 1e-10). ``method="auto"`` picks this
    backend first for the learners it runs.

    Statistics are kept in a :class:`StatisticsCache` (by default one shared
    by the process), keyed by the data, the fold plan and the parameters that
    change them, so further candidates of a grid over ``alpha`` or
    ``var_smoothing`` cost only their solves and scoring. Each fold's
    eigendecomposition (least squares) is kept with them, within
    ``gram_budget``, so a further ``alpha`` costs a matrix product per fold.
    Keys hash the content of every array (never its ``repr``); a parameter
    whose content cannot be hashed (a callable ``metric``) is not cached.

    What the learner's ``fit`` refuses is refused (``sample_weight`` with NaN,
    infinity or only zeros, ``GaussianNB`` priors that do not sum to 1...);
    :meth:`refusal` names data the backend cannot take (a 2-D ``y`` for a
    classifier or ``KNeighborsRegressor``) so that ``method="auto"`` falls
    back. Folds whose least-squares solve is too ill-conditioned for 1e-10
    are fit with ``fit``, and rows whose neighbours tie at the ``k``-th
    distance are asked of the fold's own model: see ``docs/exact.md``.

    Parameters
    ----------
    cache : StatisticsCache, default=None
        Where statistics are kept between runs; ``None`` uses the process's
        shared cache (512 MiB). ``StatisticsCache(max_bytes=0)`` keeps nothing.
    gram_budget : int, default=256 MiB
        Bound on the per-chunk Gram matrices kept (``k * n_features**2``
        floats; beyond it a fold's chunk Gram is recomputed from its rows),
        and on the folds' eigendecompositions kept for further ``alpha``.

    Notes
    -----
    The only fit parameter taken is ``sample_weight`` (a pipeline's:
    ``<final step>__sample_weight``). Leaves are emitted in
    the plan's leaf order; the first carries the time and the rows of the
    statistics pass (``n_samples_fed`` is ``n_samples`` on a cache miss and
    0 on a hit). The extra ``statistics_hit`` says whether the statistics
    came from the cache (a result column of ``tree_cross_validate``).

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.model_selection import KFold, cross_validate
    >>> from sklearn.naive_bayes import MultinomialNB
    >>> from sklearn_ext import tree_cross_validate
    >>> X, y = load_digits(return_X_y=True)
    >>> ours = tree_cross_validate(
    ...     MultinomialNB(), X, y, cv=KFold(10), return_run_info=True
    ... )
    >>> ref = cross_validate(MultinomialNB(), X, y, cv=KFold(10))
    >>> ours["backend"], bool((ours["test_score"] == ref["test_score"]).all())
    ('exact', True)

    After a scaler, each fold's scaler is fit on the fold's rows, as in
    ``cross_validate``:

    >>> import numpy as np
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.linear_model import Ridge
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> X, y = load_diabetes(return_X_y=True)
    >>> pipe = make_pipeline(StandardScaler(), Ridge(alpha=10.0))
    >>> ours = tree_cross_validate(pipe, X, y, cv=KFold(5), return_run_info=True)
    >>> ref = cross_validate(pipe, X, y, cv=KFold(5))
    >>> ours["backend"], bool(np.allclose(ours["test_score"], ref["test_score"]))
    ('exact', True)
    """

    name = "exact"
    #: Per fold only: a search's ``cv_results_`` keeps GridSearchCV's keys.
    extras: ClassVar[dict[str, str | None]] = {"statistics_hit": None}

    def __init__(self, cache: StatisticsCache | None = None, gram_budget: int = 2**28):
        if cache is not None and not isinstance(cache, StatisticsCache):
            raise TypeError(
                "The 'cache' parameter of ExactStatisticsBackend must be a "
                f"StatisticsCache or None. Got {cache!r} instead."
            )
        self.cache = cache
        self.gram_budget = gram_budget

    @classmethod
    def accepts(cls, estimator) -> bool:
        return _family(estimator) is not None

    def with_store(self, store, estimator) -> Backend:
        """A copy of this backend keeping its statistics in ``store``.

        ``store`` must be a :class:`StatisticsCache`.
        """
        if not isinstance(store, StatisticsCache):
            raise TypeError(
                "The 'exact' backend keeps a StatisticsCache between runs; got "
                f"store={store!r}."
            )
        backend = copy.copy(self)
        backend.cache = store
        return backend

    def __repr__(self) -> str:
        return (
            "ExactStatisticsBackend()"
            if self.cache is None
            else f"ExactStatisticsBackend(cache={self.cache!r})"
        )

    def refusal(self, estimator, X, y) -> str | None:
        """Why the exact backend cannot run ``estimator`` on this data, or ``None``.

        A multilabel or multi-output (2-D) ``y`` for a learner whose exact
        path takes a 1-D one (the classifiers, ``KNeighborsRegressor``), or a
        target that is not a classifier's binary or multiclass labels;
        ``GaussianNB`` priors that its ``fit`` refuses. ``method="auto"`` then
        takes the next backend.
        """
        family = _family(estimator)
        if family is None:
            return f"the exact backend does not run {type(estimator).__name__}"
        if isinstance(estimator, Pipeline):
            reason = pipeline_refusal(estimator, X)
            if reason is not None:
                return reason
        return family.refusal(_learner(estimator), X, y)

    def params_refusal(self, estimator, fit_params: dict) -> str | None:
        """Why the exact backend cannot take these fit parameters, or ``None``.

        It takes the learner's ``sample_weight`` only: ``sample_weight`` for
        a learner, ``<final step>__sample_weight`` for a pipeline (whose
        scaler is then fit without weights, as the pipeline's ``fit`` does).
        """
        unknown = sorted(set(fit_params) - {_weight_key(estimator)})
        if not unknown:
            return None
        return (
            f"the exact backend takes only the fit parameter "
            f"{_weight_key(estimator)!r}; got {unknown}"
        )

    def run(self, task: CVTask) -> LeafTable:
        tic = time.perf_counter()
        run = self._start(task)
        run.stats, run.hit = self._statistics(run)
        run.fed = 0 if run.hit else task.plan.n_samples
        run.native = _metric(run) in run.family.native_metrics(run.prototype)
        run.family.begin(run)
        run.pending_time = time.perf_counter() - tic
        table = run.family.run_folds(run)
        return _fold_by_fold(run) if table is None else table

    def _start(self, task: CVTask) -> _Run:
        """The run's family, checked estimator, data and weights."""
        family = _family(task.estimator)
        if family is None:
            raise TypeError(
                "The exact backend does not run "
                f"{type(task.estimator).__name__}; see exact_learners()."
            )
        scaled = None
        if isinstance(task.estimator, Pipeline):
            reason = pipeline_refusal(task.estimator, task.X)
            if reason is not None:
                raise TypeError(
                    f"The exact backend cannot run this pipeline: {reason}."
                )
            scaled = _Scaled.of(clone(task.estimator))
        prototype = clone(_learner(task.estimator))
        prototype._validate_params()
        weights = _checked_weights(task, family, prototype, _weight_key(task.estimator))
        if not family.accepts_sparse and sp.issparse(task.X):
            # scikit-learn's check_array words, naming the learner.
            raise TypeError(
                "Sparse data was passed for X, but dense data is required by "
                f"{type(prototype).__name__}. Use '.toarray()' to convert to a "
                "dense numpy array."
            )
        X, y = family.prepare(prototype, task.X, task.y)
        weights = family.weights(prototype, y, weights)
        run = _Run(task, family, prototype, X, y, weights, _Chunks(task.plan))
        run.scaled = scaled
        return run

    def _statistics(self, run: _Run):
        """The run's statistics, from the cache or computed now (and kept)."""
        compute = functools.partial(_compute_statistics, run, self.gram_budget)
        try:
            key = self._key(run)
        except UnhashableContent:
            # A parameter (a callable metric) whose content cannot be keyed.
            return compute(), False
        cache = default_cache() if self.cache is None else self.cache
        return cache.get_or_compute(key, compute)

    def _key(self, run: _Run) -> bytes:
        task, weights = run.task, run.weights
        return content_digest(
            "exact-statistics-v2",
            type(run.family).__name__,
            type(run.prototype).__qualname__,
            run.family.statistics_key(run.prototype),
            None if run.scaled is None else scaler_key(run.scaled.scaler),
            self.gram_budget,
            task.X,
            task.y,
            weights,
            plan_digest(task.plan),
        )


def _metric(run: _Run) -> str | None:
    """The run's metric; a pipeline's own ``score`` is its learner's."""
    metric = run.task.metric
    if run.scaled is not None and metric == "score":
        return native_metric(run.prototype, None)
    return metric


def _compute_statistics(run: _Run, gram_budget: int):
    """The statistics of ``run``, after checking that they fit in memory."""
    name = type(run.prototype).__name__
    check_allocation(
        run.family.statistics_nbytes(
            run.prototype, run.X, run.y, run.chunks, gram_budget
        ),
        f"The exact backend's statistics of {name} ({run.task.plan.n_splits} "
        f"folds, {run.X.shape[0]} x {run.X.shape[1]} X)",
        "Use fewer folds, a smaller gram_budget, or method='standard'.",
    )
    if run.scaled is None:
        return run.family.statistics(
            run.prototype, run.X, run.y, run.weights, run.chunks, gram_budget
        )
    scaler = run.scaled.scaler
    return run.family.statistics(
        run.prototype,
        run.X,
        run.y,
        run.weights,
        run.chunks,
        gram_budget,
        scaler=None if scaler is None else _ScalerStats(run.X, run.chunks, scaler),
    )


def _weight_key(estimator) -> str:
    """The fit parameter that carries the learner's ``sample_weight``."""
    if isinstance(estimator, Pipeline) and estimator.steps:
        return f"{estimator.steps[-1][0]}__sample_weight"
    return "sample_weight"


def _checked_weights(
    task: CVTask, family: _Family, prototype, key: str = "sample_weight"
) -> np.ndarray | None:
    """``sample_weight`` checked as the learner's ``fit`` checks it, or ``None``."""
    unknown = set(task.fit_params) - {key}
    if unknown:
        raise ValueError(
            f"The exact backend takes only the fit parameter {key!r}; "
            f"got {sorted(unknown)}. Use method='standard'."
        )
    weights = task.fit_params.get(key)
    if weights is None:
        return None
    name = type(prototype).__name__
    if not family.takes_weights:
        raise ValueError(f"{name}.fit takes no sample_weight; got one.")
    weights = np.asarray(weights)
    if weights.ndim > 1 or weights.shape[0:1] != (task.plan.n_samples,):
        raise ValueError(
            f"The 'sample_weight' parameter of {name} must have shape "
            f"({task.plan.n_samples},). Got shape {weights.shape} instead."
        )
    try:
        weights = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"The 'sample_weight' parameter of {name} must hold numbers: {exc}."
        ) from None
    # NaN, infinity, all zeros: refused in fit's own words.
    weights = _check_sample_weight(weights, np.empty((task.plan.n_samples, 0)))
    _check_fold_weights(task, weights)
    return weights


def _check_fold_weights(task: CVTask, weights: np.ndarray) -> None:
    """Refuse, as each fold's ``fit`` would, a fold whose weights are all zero."""
    plan = task.plan
    nonzero = np.add.reduceat(
        (weights[plan.sample_order] != 0).astype(np.int64), plan.bounds[:-1]
    )
    empty = np.flatnonzero(nonzero.sum() - nonzero == 0)
    if empty.shape[0]:
        split = int(plan.split_index[empty[0]])
        raise ValueError(
            "Sample weights must contain at least one non-zero number: the "
            f"training rows of split {split} have only zero 'sample_weight'."
        )


def _fold_by_fold(run: _Run) -> LeafTable:
    """Make and score each fold's model in turn, streaming each leaf."""
    task, family = run.task, run.family
    leaves = []
    for leaf in range(task.plan.n_splits):
        tic = time.perf_counter()
        model = run.fitted(leaf, family.make_fold(run, leaf))
        fit_time = run.pending_time + time.perf_counter() - tic
        run.pending_time = 0.0
        scores, score_time = family.score_fold(run, leaf, model)
        result = task.leaf_result(
            leaf,
            scores,
            run.fed,
            fit_time,
            score_time,
            model,
            {"statistics_hit": run.hit},
        )
        run.fed = 0
        leaves.append(result)
        task.emit(result)
    return LeafTable.from_leaves(leaves)
