"""The native tree for :class:`SemiSupervisedAnomalyDetector`."""

from __future__ import annotations

import threading
import time

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import clone
from sklearn.utils import check_array, check_random_state

from sklearn_ext._fast import _ssad
from sklearn_ext.anomaly._features import cached_features, draw_weights, resolve_gamma
from sklearn_ext.anomaly._ssad import (
    SemiSupervisedAnomalyDetector,
    auroc,
    training_labels,
)
from sklearn_ext.model_selection._backends import Backend, CVTask, LeafTable

__all__ = ["NativeSSADTreeBackend"]


class NativeSSADTreeBackend(Backend):
    """TreeCV for :class:`~sklearn_ext.anomaly.SemiSupervisedAnomalyDetector` in C.

    The random Fourier features of all rows are computed once per run (and
    kept in the bounded feature cache when ``random_state`` is an int, so runs
    that differ only in ``eta_u``, ``eta_l`` or ``kappa`` share them). The
    recursion then runs in Cython with one model state of ``n_components + 4``
    doubles per tree level, feeding rows in the plan's order (``"fixed"`` or
    ``"randomized"``, the same streams as :meth:`FoldPlan.feed`) through the
    learner's own row kernel, so fold scores equal those of
    :class:`PythonTreeBackend` on the same plan. Every fold model uses the
    same random features, drawn from ``random_state``.

    ``gamma="scale"`` is resolved once, from all rows of the run (``auto`` and
    a number do not depend on the rows): fold ``i``'s model is exactly the
    model :meth:`~SemiSupervisedAnomalyDetector.fit` makes with one ordered
    pass (``max_iter=1, shuffle=False``) over that fold's training rows with
    ``gamma`` set to this value, the value a final ``fit`` on all the rows
    resolves (the refit of a search), so every fold model and the final model
    share one kernel. Resolving it from each fold's own training rows would
    give each fold its own features, so no training could be shared along the
    tree: measured on 20,000 ForestCover rows, 10 folds, that costs 4-50 times
    as much per grid point and changed the mean AUROC by 0.0002 (see
    ``docs/anomaly.md``). The Python tree and standard backends drive
    ``partial_fit``, which resolves ``"scale"`` from the rows of its first
    call; they equal this tree for ``gamma="auto"`` or a number.

    ``scoring=None`` (the detector's ``score``) is the AUROC of the held-out
    fold against the true labels ``y`` (rows labelled 0 left out), computed
    from the precomputed features; any other ``scoring`` is computed by the
    task's scikit-learn scorer on a detector rebuilt from the leaf's state.
    ``fit_params`` may hold ``labeled`` (the mask of labels training sees).
    With ``n_jobs > 1`` the top of the tree is split into one subtree per
    thread; the threads run without the GIL.
    """

    name = "native_tree"

    @classmethod
    def accepts(cls, estimator) -> bool:
        return isinstance(estimator, SemiSupervisedAnomalyDetector)

    def run(self, task: CVTask) -> LeafTable:
        from sklearn_ext.model_selection._native import _run_threaded

        template = clone(task.estimator)
        template._validate_params()
        owner = type(template).__name__
        plan = task.plan
        k = plan.n_splits
        X = check_array(task.X, dtype=np.float64, order="C", input_name="X")
        n_features = X.shape[1]
        unknown = sorted(set(task.fit_params) - {"labeled"})
        if unknown:
            raise ValueError(
                f"The native tree of {owner} supports only 'labeled' in "
                f"fit_params; got {unknown}."
            )
        y_train = training_labels(
            task.y, task.fit_params.get("labeled"), X.shape[0], owner
        )
        y_true = (
            None if task.y is None else training_labels(task.y, None, len(X), owner)
        )
        rng = check_random_state(template.random_state)
        # Once from all rows, not per fold: see the class docstring.
        gamma = resolve_gamma(template.gamma, X)
        weights, offset = draw_weights(
            rng, n_features, int(template.n_components), gamma
        )
        phi = cached_features(
            X,
            weights,
            offset,
            gamma,
            template.n_components,
            template.random_state,
        )
        eta_u, eta_l, kappa = template._kernel_args()
        native_score = task.scoring is None and y_true is not None
        if task.scoring is None and y_true is None:
            raise ValueError(
                f"Scoring {owner} with scoring=None (the AUROC) needs the true "
                "labels y."
            )
        n_fed = np.zeros(k, dtype=np.int64)
        fit_time = np.zeros(k)
        scores = np.full(k, np.nan)
        score_time = np.zeros(k)
        stop = np.zeros(1, dtype=np.intc)
        results = []
        pending: dict[int, tuple[int, float]] = {}
        lock = threading.Lock()
        streaming = task.on_leaf is not None or task.return_estimator

        def rebuild(state) -> SemiSupervisedAnomalyDetector:
            model = clone(template)
            model.n_features_in_ = n_features
            model.random_weights_ = weights
            model.random_offset_ = offset
            model.gamma_ = gamma
            model._state = np.array(state, dtype=np.float64)
            model.n_iter_ = 1
            model._sync_attributes()
            return model

        if native_score:
            # Each fold's labelled test rows and which of them are normal.
            test_rows = []
            for fold in range(k):
                rows = plan.sample_order[plan.bounds[fold] : plan.bounds[fold + 1]]
                rows = np.ascontiguousarray(rows[y_true[rows] != 0], dtype=np.intp)
                test_rows.append((rows, y_true[rows] > 0, np.empty(rows.shape[0])))

        def on_leaf(fold, state):
            fold = int(fold)
            tic = time.perf_counter()
            if native_score:
                rows, positive, decision = test_rows[fold]
                _ssad.decision_subset(state, phi, rows, decision)
                value = auroc(positive, decision)
                if np.isnan(value):
                    # As the detector's own score does.
                    raise ValueError(
                        "The AUROC needs rows of both classes (+1 and -1) in y; "
                        f"got only {np.unique(y_true[rows]).tolist()} in the "
                        f"held-out rows of fold {fold}. Use fewer folds or a "
                        "stratified splitter."
                    )
                leaf_scores = {"score": value}
                leaf_score_time = time.perf_counter() - tic
            model = None
            if not native_score or task.return_estimator:
                model = rebuild(state)
            if not native_score:
                leaf_scores, leaf_score_time = task.score(model, fold)
            with lock:
                if stop[0]:
                    return  # Another worker's leaf stopped the run meanwhile.
                extra_fed, extra_time = pending.pop(fold, (0, 0.0))
                scores[fold] = leaf_scores.get("score", np.nan)
                score_time[fold] = leaf_score_time
                n_fed[fold] += extra_fed
                fit_time[fold] += extra_time
                if not streaming and len(leaf_scores) == 1:
                    return
                leaf = task.leaf_result(
                    fold,
                    leaf_scores,
                    int(n_fed[fold]),
                    float(fit_time[fold]),
                    leaf_score_time,
                    model,
                )
                results.append(leaf)
                if task.on_leaf is not None:
                    try:
                        task.emit(leaf)
                    except BaseException:
                        stop[0] = 1  # Before the lock is released.
                        raise

        def subtree(node, state):
            return _ssad.run_subtree(
                state,
                eta_u,
                eta_l,
                kappa,
                phi,
                y_train,
                plan.sample_order,
                plan.bounds,
                node[0],
                node[1],
                plan.order == "randomized",
                plan.seed or 0,
                n_fed,
                fit_time,
                stop,
                on_leaf,
            )

        def feed(node, state):
            tic = time.perf_counter()
            rows = plan.feed(*node)
            _ssad.feed(state, eta_u, eta_l, kappa, phi, y_train, rows)
            return node, state, len(rows), time.perf_counter() - tic

        root_state = _ssad.new_state(int(template.n_components))
        n_jobs = min(effective_n_jobs(task.n_jobs), k)
        if n_jobs <= 1 or k < 4:
            errors = [subtree(plan.root, root_state)]
        else:
            errors = _run_threaded(plan, root_state, n_jobs, feed, subtree, pending)
        for error in errors:
            if error is not None:
                raise error
        if results:
            return LeafTable.from_leaves(results)
        return LeafTable.from_leaf_columns(plan, scores, n_fed, fit_time, score_time)
