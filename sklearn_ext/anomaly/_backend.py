"""The SSAD kernel on a CV run, for the native tree."""

from __future__ import annotations

import numpy as np
from sklearn.base import clone
from sklearn.utils import check_array, check_random_state

from sklearn_ext._fast import _ssad
from sklearn_ext.anomaly._features import cached_features, draw_weights, resolve_gamma
from sklearn_ext.anomaly._labels import training_labels

__all__ = ["native_model"]


def native_model(detector, task):
    """The SSAD kernel on ``task``'s data and a rebuild function.

    The random Fourier features of all rows are computed once per run (and
    kept in the bounded feature cache when ``random_state`` is an int, so runs
    that differ only in ``eta_u``, ``eta_l`` or ``kappa`` share them); every
    fold model uses the same features, drawn from ``random_state``.
    ``scoring=None`` (the detector's ``score``) is the AUROC of the held-out
    fold against the true labels ``y`` (rows labelled 0 left out), computed
    in C by the kernel; any other ``scoring`` is left to the task's scorer.
    ``fit_params`` may hold ``labeled`` (the mask of labels training sees).

    ``gamma="scale"`` is resolved once, from all rows of the run (``auto`` and
    a number do not depend on the rows): fold ``i``'s model is exactly the
    model :meth:`~SemiSupervisedAnomalyDetector.fit` makes with one ordered
    pass (``max_iter=1, shuffle=False``) over that fold's training rows with
    ``gamma`` set to this value, the value a final ``fit`` on all the rows
    resolves (the refit of a search), so every fold model and the final model
    share one kernel. Resolving it from each fold's own training rows would
    give each fold its own features, so no training could be shared along the
    tree: measured on 20,000 ForestCover rows, 10 folds, that costs 4 to 58
    times as much per grid point and changed the mean AUROC by at most 0.0002
    (``docs/anomaly.md``). The Python tree and standard backends train
    through the detector itself: ``partial_fit`` resolves ``"scale"`` from
    the rows of its first call, ``fit`` (standard backend, several passes)
    from each fold's training rows; they equal this tree for
    ``gamma="auto"`` or a number.

    Parameters
    ----------
    detector : SemiSupervisedAnomalyDetector
        The (unfitted) detector; its parameters are validated here.
    task : CVTask
        The run.

    Returns
    -------
    model : sklearn_ext._fast._ssad.SSADModel
        The kernel.
    rebuild : callable
        ``rebuild(state)`` is a copy of ``detector`` fitted to ``state``.
    """
    detector._validate_params()
    owner = type(detector).__name__
    X = check_array(task.X, dtype=np.float64, order="C", input_name="X")
    n_features = X.shape[1]
    unknown = sorted(set(task.fit_params) - {"labeled"})
    if unknown:
        raise ValueError(
            f"The native tree of {owner} supports only 'labeled' in fit_params; "
            f"got {unknown}."
        )
    y_train = training_labels(task.y, task.fit_params.get("labeled"), len(X), owner)
    y_true = None if task.y is None else training_labels(task.y, None, len(X), owner)
    if task.metric == "score":
        if y_true is None:
            raise ValueError(
                f"Scoring {owner} with scoring=None (the AUROC) needs the true "
                "labels y."
            )
        _check_folds_have_both_classes(task.plan, y_true)
    rng = check_random_state(detector.random_state)
    # Once from all rows, not per fold: see the docstring.
    gamma = resolve_gamma(detector.gamma, X)
    weights, offset = draw_weights(rng, n_features, int(detector.n_components), gamma)
    phi = cached_features(
        X, weights, offset, gamma, detector.n_components, detector.random_state
    )
    model = _ssad.SSADModel(
        *detector._kernel_args(),
        phi,
        y_train,
        y_true if task.metric == "score" else None,
    )

    def rebuild(state: np.ndarray):
        fitted = clone(detector)
        fitted.n_features_in_ = n_features
        fitted.random_weights_ = weights
        fitted.random_offset_ = offset
        fitted.gamma_ = gamma
        fitted._state = state
        fitted.n_iter_ = 1
        fitted._sync_attributes()
        return fitted

    return model, rebuild


def _check_folds_have_both_classes(plan, y_true: np.ndarray) -> None:
    """Raise before training if a held-out fold's AUROC would be undefined."""
    for leaf in range(plan.n_splits):
        labels = y_true[plan.test_indices(leaf)]
        present = np.unique(labels[labels != 0])
        if present.shape[0] < 2:
            # As the detector's own score says.
            raise ValueError(
                "The AUROC needs rows of both classes (+1 and -1) in y; got only "
                f"{present.tolist()} in the held-out rows of fold "
                f"{int(plan.split_index[leaf])}. Use fewer folds or a stratified "
                "splitter."
            )
