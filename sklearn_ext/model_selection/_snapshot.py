"""Cheap model copies for the Python tree: snapshot and restore of learner state.

The Python tree needs, at every internal node, the parent's model twice: once
updated with the left child's rows and once with the right child's. Instead of
copying the whole estimator (``copy.deepcopy``), it can take a *snapshot* of
exactly the state ``partial_fit`` changes, train the left subtree in place and
*restore* the snapshot before the right child's update (section 4.1 of the
TreeCV paper).

The registry below lists, for scikit-learn's incremental learners, the
attributes their ``partial_fit`` creates or changes. A learner of our own
declares its state with ``_treecv_snapshot()`` / ``_treecv_restore(state)``.
Anything else is deep-copied, as before.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

__all__ = ["snapshot_attributes", "take_snapshot", "restore_snapshot", "snapshots"]

_ALWAYS = ("n_features_in_", "feature_names_in_")
_SGD = (
    "coef_",
    "intercept_",
    "_standard_coef",
    "_standard_intercept",
    "_average_coef",
    "_average_intercept",
    "t_",
    "n_iter_",
)
_SGD_CLASSIFIER = (*_SGD, "classes_", "_expanded_class_weight", "_loss_function_")
_NB_DISCRETE = (
    "classes_",
    "class_count_",
    "class_log_prior_",
    "feature_count_",
    "feature_log_prob_",
)
_MLP = (
    "coefs_",
    "intercepts_",
    "_optimizer",
    "_random_state",
    "_best_coefs",
    "_best_intercepts",
    "_no_improvement_count",
    "best_loss_",
    "best_validation_score_",
    "validation_scores_",
    "loss_",
    "loss_curve_",
    "t_",
    "n_iter_",
    "n_layers_",
    "n_outputs_",
    "out_activation_",
)

#: What ``partial_fit`` creates or changes, by class name and module: the
#: state a snapshot saves. Exact classes only: a subclass may change more.
_REGISTRY: dict[tuple[str, str], tuple[str, ...]] = {
    ("sklearn.linear_model._stochastic_gradient", "SGDClassifier"): _SGD_CLASSIFIER,
    ("sklearn.linear_model._stochastic_gradient", "SGDRegressor"): _SGD,
    ("sklearn.linear_model._perceptron", "Perceptron"): _SGD_CLASSIFIER,
    (
        "sklearn.linear_model._passive_aggressive",
        "PassiveAggressiveClassifier",
    ): _SGD_CLASSIFIER,
    ("sklearn.linear_model._passive_aggressive", "PassiveAggressiveRegressor"): _SGD,
    ("sklearn.naive_bayes", "GaussianNB"): (
        "classes_",
        "class_count_",
        "class_prior_",
        "epsilon_",
        "theta_",
        "var_",
    ),
    ("sklearn.naive_bayes", "MultinomialNB"): _NB_DISCRETE,
    ("sklearn.naive_bayes", "BernoulliNB"): _NB_DISCRETE,
    ("sklearn.naive_bayes", "ComplementNB"): (*_NB_DISCRETE, "feature_all_"),
    ("sklearn.naive_bayes", "CategoricalNB"): (
        "classes_",
        "class_count_",
        "class_log_prior_",
        "category_count_",
        "feature_log_prob_",
        "n_categories_",
    ),
    ("sklearn.cluster._kmeans", "MiniBatchKMeans"): (
        "cluster_centers_",
        "_counts",
        "_random_state",
        "_n_since_last_reassign",
        "n_steps_",
        "labels_",
        "inertia_",
        "_batch_size",
        "_init_size",
        "_n_init",
        "_n_threads",
        "_tol",
        "_n_features_out",
    ),
    ("sklearn.neural_network._multilayer_perceptron", "MLPClassifier"): (
        *_MLP,
        "classes_",
        "_label_binarizer",
    ),
    ("sklearn.neural_network._multilayer_perceptron", "MLPRegressor"): _MLP,
}


def snapshot_attributes(model) -> tuple[str, ...] | None:
    """The attributes ``partial_fit`` changes on ``model``, or None if unknown.

    Known for scikit-learn's ``SGDClassifier``, ``SGDRegressor``,
    ``Perceptron``, ``PassiveAggressiveClassifier``/``Regressor``, the naive
    Bayes family, ``MiniBatchKMeans`` and ``MLPClassifier``/``Regressor``
    (their exact classes; a subclass is deep-copied).
    """
    cls = type(model)
    names = _REGISTRY.get((cls.__module__, cls.__name__))
    return None if names is None else names + _ALWAYS


def snapshots(model) -> bool:
    """Whether :func:`take_snapshot` avoids a deep copy of ``model``."""
    return _own_snapshot(model) or snapshot_attributes(model) is not None


def _own_snapshot(model) -> bool:
    return callable(getattr(model, "_treecv_snapshot", None)) and callable(
        getattr(model, "_treecv_restore", None)
    )


def take_snapshot(model) -> Any:
    """The state of ``model`` that its next ``partial_fit`` calls may change.

    A learner's own ``_treecv_snapshot()`` when it has one, else the
    registered attributes, copied (arrays shared between attributes stay
    shared, e.g. ``coef_`` and ``_standard_coef`` of an SGD model or the
    parameters an MLP's optimizer updates in place). A ``random_state``
    parameter holding a ``RandomState`` is saved by its state, so that it
    stays the object the user passed. Returns None for an unregistered model.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.naive_bayes import GaussianNB
    >>> from sklearn_ext.model_selection._snapshot import (
    ...     restore_snapshot, take_snapshot)
    >>> X, y = np.array([[0.0], [1.0], [2.0], [3.0]]), np.array([0, 0, 1, 1])
    >>> model = GaussianNB().partial_fit(X[:2], y[:2], classes=[0, 1])
    >>> state = take_snapshot(model)
    >>> model = model.partial_fit(X[2:], y[2:])
    >>> restore_snapshot(model, state)
    >>> model.class_count_
    array([2., 0.])
    """
    if _own_snapshot(model):
        return ("own", model._treecv_snapshot())
    names = snapshot_attributes(model)
    if names is None:
        return None
    state = vars(model)
    rng = getattr(model, "random_state", None)
    memo: dict[int, Any] = {}
    rng_state = None
    if isinstance(rng, np.random.RandomState):
        # Attributes aliasing the user's generator keep aliasing it.
        memo[id(rng)] = rng
        rng_state = rng.get_state()
    values = copy.deepcopy({n: state[n] for n in names if n in state}, memo)
    return ("attributes", names, values, rng_state)


def restore_snapshot(model, snapshot) -> None:
    """Put ``model`` back in the state of ``snapshot`` (used once: no copy).

    Attributes that did not exist when the snapshot was taken are removed, so
    the snapshot of an unfitted model restores an unfitted model.
    """
    if snapshot[0] == "own":
        model._treecv_restore(snapshot[1])
        return
    _, names, values, rng_state = snapshot
    state = vars(model)
    for name in names:
        if name in values:
            state[name] = values[name]
        else:
            state.pop(name, None)
    if rng_state is not None:
        model.random_state.set_state(rng_state)
