"""What every learner family of the exact backend provides, and one run's state."""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from sklearn.base import clone
from sklearn.utils.multiclass import type_of_target

from sklearn_ext.model_selection._backends import CVTask, LeafTable, _as_slice
from sklearn_ext.model_selection._exact._layout import _Chunks

__all__ = ["_Family", "_Run"]


@dataclass
class _Run:
    """One run of the exact backend: the task, the checked data, the statistics.

    ``native`` says whether the task's metric is one the family computes
    itself (accuracy from the joint log-likelihood, R^2 from moments, votes
    of the shared neighbour lists) rather than through ``task.scorer``.
    """

    task: CVTask
    family: _Family
    prototype: Any
    X: Any
    y: Any
    weights: np.ndarray | None
    chunks: _Chunks
    stats: Any = None
    hit: bool = False
    native: bool = False
    #: Seconds spent before the first leaf (the statistics), charged to it.
    pending_time: float = 0.0
    #: Rows read for the statistics, charged to the first leaf.
    fed: int = 0
    #: What a family prepares once per run for its folds (see ``_Family.begin``).
    state: dict[str, Any] = field(default_factory=dict)
    #: For a pipeline, its scaler and learner (a ``_scaling._Scaled``): the
    #: ``prototype`` is then its learner, the statistics those of the scaled
    #: rows, and fold models are fitted pipelines.
    scaled: Any = None

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def whole(self):
        """What the user's ``fit`` fits: the pipeline, or the learner alone."""
        return self.prototype if self.scaled is None else self.scaled.pipeline

    def fold_scaler(self, leaf: int):
        """Fold ``leaf``'s fitted scaler (a ``_scaling._FoldScaler``), or None."""
        scaler = getattr(self.stats, "scaler", None)
        return None if scaler is None else scaler.fold(leaf)

    def fitted(self, leaf: int, model):
        """Fold ``leaf``'s model as the user's ``fit`` returns it.

        A pipeline's learner, made from the statistics, is put in a fitted
        copy of the pipeline beside the fold's scaler; a model fit with
        ``fit`` (a pipeline already) and ``None`` pass through.
        """
        if self.scaled is None or model is None or hasattr(model, "steps"):
            return model
        return self.scaled.assemble(self.fold_scaler(leaf), model)


class _Family:
    """How one kind of learner is made from statistics, fold by fold.

    A family names the scikit-learn classes it runs, checks and prepares the
    data as their ``fit`` would, computes the statistics of the chunks, and
    makes and scores each fold's model (:meth:`make_fold`,
    :meth:`score_fold`); it may score every fold at once instead
    (:meth:`run_folds`).
    """

    #: The scikit-learn classes (exact types) of the family, by dotted name.
    names: ClassVar[tuple[str, ...]]
    #: The estimator's ``fit`` takes sparse ``X`` (else the backend refuses it
    #: as that ``fit`` would, before any statistics are computed).
    accepts_sparse: ClassVar[bool] = True
    #: ``fit`` takes ``sample_weight``.
    takes_weights: ClassVar[bool] = True
    #: The exact path takes only a one-dimensional ``y``.
    one_dimensional_y: ClassVar[bool] = True
    #: The family runs after a per-fold scaler (``Pipeline([scaler, learner])``):
    #: its :meth:`statistics` take ``scaler=`` (a ``_scaling._ScalerStats``)
    #: and each fold's statistics are those of the fold's scaled rows.
    scalable: ClassVar[bool] = False

    def supports(self, estimator) -> bool:
        """Whether the family runs ``estimator``'s parameters."""
        return True

    def refusal(self, estimator, X, y) -> str | None:
        """Why the family cannot run ``estimator`` on this data, or ``None``."""
        if y is None:
            return f"{type(estimator).__name__} needs y"
        ndim = np.ndim(y)
        if self.one_dimensional_y and ndim != 1:
            return (
                f"the exact backend runs {type(estimator).__name__} on a "
                f"one-dimensional y; got y of shape {np.shape(y)}"
            )
        return None

    def native_metrics(self, estimator) -> tuple[str, ...]:
        """The metrics (``CVTask.metric``) the family computes without a scorer."""
        return ()

    def prepare(self, estimator, X, y):
        """Checked ``X``, ``y`` as the estimator's ``fit`` sees them."""
        return X, y

    def weights(self, estimator, y, weights):
        """The row weights the statistics use (class weights folded in)."""
        return weights

    def statistics_key(self, estimator) -> tuple:
        """The parameters that change the statistics (not only the solve)."""
        return ()

    def statistics(
        self, estimator, X, y, weights, chunks: _Chunks, gram_budget: int = 2**28
    ):
        raise NotImplementedError

    def statistics_nbytes(self, estimator, X, y, chunks: _Chunks, gram_budget) -> float:
        """About the peak memory :meth:`statistics` takes, to check it first.

        By default a few copies of ``X`` and per-(chunk, class) sums of its
        columns.
        """
        n_samples, n_features = X.shape
        n_groups = min(n_samples, chunks.n_chunks * max(1, len(np.unique(y))))
        return 8.0 * n_features * (3 * n_samples + 3 * n_groups)

    def fold_model(self, model, stats, leaf: int, n_features: int):
        """Set on ``model`` the attributes ``fit`` on the fold's rows sets."""
        raise NotImplementedError

    def begin(self, run: _Run) -> None:
        """Prepare, once per run, what every fold needs (in ``run.state``)."""

    def run_folds(self, run: _Run) -> LeafTable | None:
        """Every fold at once, when the family can (else ``None``)."""
        return None

    def make_fold(self, run: _Run, leaf: int):
        """The fitted model of fold ``leaf`` (``None`` if scoring needs none)."""
        return self.fold_model(
            copy.copy(run.prototype), run.stats, leaf, run.n_features
        )

    def score_fold(self, run: _Run, leaf: int, model) -> tuple[dict[str, float], float]:
        """The scores of fold ``leaf``'s model on its held-out rows, and the time."""
        return run.task.score(model, leaf)


def _classes_target(estimator, y):
    kind = type_of_target(y)
    if kind not in ("binary", "multiclass"):
        raise ValueError(
            f"{type(estimator).__name__} needs a binary or multiclass y for the "
            f"exact backend; got a {kind!r} target."
        )
    return y


def _classes_refusal(estimator, y) -> str | None:
    """Why ``y`` is not a classifier's binary or multiclass target, or ``None``."""
    try:
        kind = type_of_target(y)
    except ValueError as exc:
        return f"{type(estimator).__name__} cannot take this y ({exc})"
    if kind not in ("binary", "multiclass"):
        return (
            f"the exact backend runs {type(estimator).__name__} on a binary or "
            f"multiclass y; got a {kind!r} target"
        )
    return None


def _fit_fold(task: CVTask, prototype, leaf: int):
    """A fold the statistics cannot make: ``fit`` it on its training rows.

    In the splitter's own order (:meth:`FoldPlan.fit_indices`), as
    ``cross_validate`` fits them: ``fit``'s rounding then is the same as there.
    """
    X, y, params = task.rows(task.plan.fit_indices(leaf))
    return clone(prototype).fit(X, y, **params)


def _score_native(task: CVTask, model, X, leaf: int):
    """Accuracy from the model's joint log-likelihood on the leaf's rows.

    ``X`` is already in the form ``predict`` hands to ``_joint_log_likelihood``
    (binarized for BernoulliNB, integer for CategoricalNB), so this is
    ``accuracy_score(y, model.predict(X))`` without re-validating each fold.
    """
    tic = time.perf_counter()
    rows = _as_slice(task.plan.test_indices(leaf))
    X = X[rows]
    if hasattr(model, "steps"):  # a fitted pipeline: its scaler's transform first
        if len(model.steps) > 1:
            X = model[:-1].transform(X)
        model = model[-1]
    jll = model._joint_log_likelihood(X)
    predicted = model.classes_[np.argmax(jll, axis=1)]
    score = float(np.mean(predicted == task.y[rows]))
    return {"score": score}, time.perf_counter() - tic


def _leaf_columns(task, scores, fed, fit_time, score_time, hit) -> LeafTable:
    """The table of leaves ``0 .. k-1`` from columns, each leaf emitted in turn.

    A :class:`LeafResult` is made only for a listener (``task.on_leaf``).
    """
    plan = task.plan
    k = plan.n_splits
    if task.on_leaf is not None:
        for leaf in range(k):
            task.emit(
                task.leaf_result(
                    leaf,
                    {name: float(values[leaf]) for name, values in scores.items()},
                    fed[leaf],
                    fit_time[leaf],
                    score_time[leaf],
                    None,
                    {"statistics_hit": hit},
                )
            )
    leaves = np.arange(k, dtype=np.intp)
    return LeafTable(
        split=plan.split_index[leaves].astype(np.intp),
        leaf=leaves,
        scores={
            name: np.asarray(values, dtype=float) for name, values in scores.items()
        },
        n_samples_fed=np.asarray(fed, dtype=np.int64),
        fit_time=np.asarray(fit_time, dtype=float),
        score_time=np.asarray(score_time, dtype=float),
        extras={"statistics_hit": [hit] * k},
    )
