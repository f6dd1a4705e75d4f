"""The native tree: the whole TreeCV recursion in C for the native learners."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import clone, is_classifier
from sklearn.utils import check_array
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight

from sklearn_ext._fast import _sgd
from sklearn_ext.linear_model._base import BaseNativeSGD, as_kernel_input
from sklearn_ext.model_selection._backends import Backend, CVTask, LeafTable

__all__ = ["NativeTreeBackend"]

_CLASSIFIER_METRICS = ("accuracy",)
_REGRESSOR_METRICS = (
    "neg_mean_squared_error",
    "neg_root_mean_squared_error",
    "neg_mean_absolute_error",
    "r2",
)


class NativeTreeBackend(Backend):
    """TreeCV for the learners of :mod:`sklearn_ext.linear_model`, entirely in C.

    The recursion runs in Cython with an explicit stack of model states (one
    flat array per tree level, copied with ``memcpy``), feeding rows in the
    plan's order: ``"fixed"``, or ``"randomized"`` with the same per-node
    splitmix64 streams as :meth:`FoldPlan.feed`. Every update goes through the
    learners' own row kernel, so fold scores equal those of
    :class:`PythonTreeBackend` on the same plan. Leaves are scored in C for
    accuracy (0-1 error), and for regressors for mean squared / absolute error
    and R^2 (``scoring=None`` is the estimator's ``score``: accuracy or R^2).
    Any other ``scoring`` is computed by the task's scikit-learn scorer on an
    estimator rebuilt from the leaf's state. With ``n_jobs > 1`` the top of the
    tree is split into one subtree per thread; the threads run without the GIL.

    Only ``sample_weight`` is supported in ``fit_params``.
    """

    name = "native_tree"

    @classmethod
    def accepts(cls, estimator) -> bool:
        return isinstance(estimator, BaseNativeSGD)

    def run(self, task: CVTask) -> LeafTable:
        template = clone(task.estimator)
        template._validate_params()
        plan = task.plan
        k = plan.n_splits
        X = check_array(
            task.X,
            accept_sparse="csr",
            dtype=[np.float64, np.float32],
            order="C",
            input_name="X",
        )
        n_features = X.shape[1]
        data, indices, indptr = as_kernel_input(X)
        classes, y = _encode_targets(template, task)
        n_models = 1 if classes is None or len(classes) == 2 else len(classes)
        sample_weight = _sample_weight(task, X)
        params = template._kernel_params()
        metric = _native_metric(template, task.scoring)
        scores = np.full(k, np.nan)
        n_fed = np.zeros(k, dtype=np.int64)
        fit_time = np.zeros(k)
        score_time = np.zeros(k)
        stop = np.zeros(1, dtype=np.intc)

        needs_python = metric == 0 or task.return_estimator or task.on_leaf is not None
        results = []
        pending: dict[int, tuple[int, float]] = {}
        lock = threading.Lock()

        def rebuild(state) -> BaseNativeSGD:
            model = clone(template)
            if classes is not None:
                model.classes_ = classes
            model.n_features_in_ = n_features
            model._state = np.array(state, dtype=np.float64)
            model.n_iter_ = 1
            model._sync_attributes()
            return model

        def on_leaf(fold, state, fed, train_time, c_score):
            fold = int(fold)
            with lock:
                extra_fed, extra_time = pending.pop(fold, (0, 0.0))
                model = None
                if metric == 0 or task.return_estimator:
                    model = rebuild(state)
                if metric == 0:
                    leaf_scores, leaf_score_time = task.score(model, fold)
                else:
                    leaf_scores = {"score": float(c_score)}
                    leaf_score_time = float(score_time[fold])
                leaf = task.leaf_result(
                    fold,
                    leaf_scores,
                    int(fed) + extra_fed,
                    float(train_time) + extra_time,
                    leaf_score_time,
                    model,
                )
                results.append(leaf)
                task.emit(leaf)

        def subtree(node, state):
            return _sgd.run_subtree(
                state,
                params,
                n_models,
                data,
                indices,
                indptr,
                n_features,
                y,
                sample_weight,
                plan.sample_order,
                plan.bounds,
                node[0],
                node[1],
                plan.order == "randomized",
                plan.seed or 0,
                metric,
                scores,
                n_fed,
                fit_time,
                score_time,
                stop,
                on_leaf if needs_python else None,
            )

        def feed(node, state):
            tic = time.perf_counter()
            rows = plan.feed(*node)
            _sgd.feed(
                state,
                params,
                n_models,
                data,
                indices,
                indptr,
                n_features,
                y,
                sample_weight,
                rows,
            )
            return node, state, len(rows), time.perf_counter() - tic

        root_state = _sgd.new_state(n_models, n_features, template._average)
        n_jobs = min(effective_n_jobs(task.n_jobs), k)
        if n_jobs <= 1 or k < 4:
            errors = [subtree(plan.root, root_state)]
        else:
            errors = _run_threaded(plan, root_state, n_jobs, feed, subtree, pending)
        if not needs_python:
            for fold, (extra_fed, extra_time) in pending.items():
                n_fed[fold] += extra_fed
                fit_time[fold] += extra_time
        for error in errors:
            if error is not None:
                raise error
        if needs_python:
            return LeafTable.from_leaves(results)
        return LeafTable.from_leaf_columns(plan, scores, n_fed, fit_time, score_time)


def _run_threaded(plan, root_state, n_jobs, feed, subtree, pending):
    """Grow the top of the tree level by level, then one subtree per thread."""
    # (node, state, rows fed and time spent on its way down, not yet reported)
    frontier = [(plan.root, root_state, 0, 0.0)]
    with ThreadPoolExecutor(max_workers=n_jobs) as pool:
        while len(frontier) < n_jobs and any(s != e for (s, e), *_ in frontier):
            jobs, carried = [], []
            for node, state, fed, spent in frontier:
                if node[0] == node[1]:
                    jobs.append(pool.submit(lambda *a: a, node, state, 0, 0.0))
                    carried.append((fed, spent))
                    continue
                left, right = plan.children(*node)
                # The parent's pending work is carried by its left child.
                jobs.append(pool.submit(feed, left, state.copy()))
                carried.append((fed, spent))
                jobs.append(pool.submit(feed, right, state))
                carried.append((0, 0.0))
            frontier = []
            for job, (fed, spent) in zip(jobs, carried, strict=True):
                node, state, n, dt = job.result()
                frontier.append((node, state, fed + n, spent + dt))
        for node, _, fed, spent in frontier:
            pending[node[0]] = (fed, spent)
        futures = [pool.submit(subtree, node, state) for node, state, *_ in frontier]
        return [future.result() for future in futures]


def _encode_targets(template, task: CVTask):
    if is_classifier(template):
        y = np.asarray(task.y)
        check_classification_targets(y)
        classes = np.unique(y if task.classes is None else np.asarray(task.classes))
        if classes.shape[0] < 2:
            raise ValueError(
                f"{type(template).__name__} needs samples of at least 2 classes in "
                f"the data, but the data contain only one class: {classes[0]!r}."
            )
        unknown = np.setdiff1d(np.unique(y), classes)
        if unknown.size:
            raise ValueError(
                f"y contains labels {unknown.tolist()} that are not in classes "
                f"{classes.tolist()}."
            )
        return classes, np.searchsorted(classes, y).astype(np.float64)
    y = check_array(task.y, ensure_2d=False, dtype=np.float64, input_name="y")
    if y.ndim != 1:
        raise ValueError(
            f"{type(template).__name__} needs a 1d target y, got shape {y.shape}."
        )
    return None, np.ascontiguousarray(y)


def _sample_weight(task: CVTask, X):
    unknown = sorted(set(task.fit_params) - {"sample_weight"})
    if unknown:
        raise ValueError(
            f"The native tree supports only sample_weight in fit_params; got "
            f"{unknown}. Use method='standard' or a Python learner for others."
        )
    sample_weight = task.fit_params.get("sample_weight")
    if sample_weight is None:
        return None
    return _check_sample_weight(sample_weight, X, dtype=np.float64)


def _native_metric(template, scoring) -> int:
    """The C metric code for ``scoring``, 0 when scored through scikit-learn."""
    classifier = is_classifier(template)
    if scoring is None:
        scoring = "accuracy" if classifier else "r2"
    if not isinstance(scoring, str):
        return 0
    allowed = _CLASSIFIER_METRICS if classifier else _REGRESSOR_METRICS
    return _sgd.METRICS[scoring] if scoring in allowed else 0
