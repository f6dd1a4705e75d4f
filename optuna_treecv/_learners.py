"""Learners the command line knows by name, with default search spaces."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
)

if TYPE_CHECKING:
    from optuna.trial import BaseTrial

__all__ = ["LEARNERS", "Learner", "make_learner", "scales_by_default"]


@dataclass(frozen=True)
class Learner:
    """A learner of the registry.

    Attributes
    ----------
    estimator : str
        Import path ``"module:Class"`` of the estimator (imported lazily).
    defaults : dict
        Constructor parameters set before the search.
    space : dict or callable
        The default search space: a dict from parameter name to an
        :mod:`optuna.distributions` object, or a callable ``trial -> dict``.
    seeded : bool
        Whether the estimator takes ``random_state`` (set from ``--seed``).
    scales : bool
        Whether ``--preprocess auto`` puts a ``StandardScaler`` before it (naive
        Bayes takes its features as given: counts, binary or any scale).
    summary : str
        One line shown by ``optuna-treecv tune --help``.
    """

    estimator: str
    defaults: Mapping[str, Any] = field(default_factory=dict)
    space: Mapping[str, BaseDistribution] | Callable[[BaseTrial], dict] = field(
        default_factory=dict
    )
    seeded: bool = True
    scales: bool = True
    summary: str = ""


def _mlp_space(trial: BaseTrial) -> dict[str, Any]:
    units = trial.suggest_int("n_units", 16, 256, log=True)
    return {
        "hidden_layer_sizes": (units,),
        "alpha": trial.suggest_float("alpha", 1e-6, 1e-1, log=True),
        "learning_rate_init": trial.suggest_float(
            "learning_rate_init", 1e-4, 1e-1, log=True
        ),
    }


_LOG_ALPHA = FloatDistribution(1e-7, 1e-1, log=True)

#: Name -> learner: ``partial_fit`` learners (TreeCV), learners made from
#: sufficient statistics (exact, also after ``--preprocess``'s scaler) and the
#: kernel SVM (alpha seeding). Native learners add their own entries here.
LEARNERS: dict[str, Learner] = {
    "sgd": Learner(
        "sklearn.linear_model:SGDClassifier",
        space={
            "alpha": _LOG_ALPHA,
            "loss": CategoricalDistribution(["hinge", "log_loss", "modified_huber"]),
            "penalty": CategoricalDistribution(["l2", "l1", "elasticnet"]),
        },
        summary="linear classifier trained by SGD (one epoch per update)",
    ),
    "sgd-regressor": Learner(
        "sklearn.linear_model:SGDRegressor",
        space={
            "alpha": _LOG_ALPHA,
            "eta0": FloatDistribution(1e-4, 1.0, log=True),
            "penalty": CategoricalDistribution(["l2", "l1", "elasticnet"]),
            # Averaged SGD: one pass gets much closer to the least-squares fit.
            "average": CategoricalDistribution([False, True]),
        },
        summary="linear regression trained by SGD (averaged or not)",
    ),
    "perceptron": Learner(
        "sklearn.linear_model:Perceptron",
        space={
            "alpha": _LOG_ALPHA,
            "penalty": CategoricalDistribution([None, "l2", "l1"]),
            "eta0": FloatDistribution(1e-3, 1.0, log=True),
        },
        summary="the perceptron",
    ),
    "passive-aggressive": Learner(
        "sklearn.linear_model:SGDClassifier",
        defaults={"loss": "hinge", "penalty": None, "learning_rate": "pa1"},
        space={
            "eta0": FloatDistribution(1e-3, 10.0, log=True),
            "learning_rate": CategoricalDistribution(["pa1", "pa2"]),
        },
        summary="passive-aggressive classifier (SGDClassifier, learning_rate=pa*)",
    ),
    "multinomial-nb": Learner(
        "sklearn.naive_bayes:MultinomialNB",
        space={"alpha": FloatDistribution(1e-3, 10.0, log=True)},
        seeded=False,
        scales=False,
        summary="multinomial naive Bayes (non-negative features)",
    ),
    "bernoulli-nb": Learner(
        "sklearn.naive_bayes:BernoulliNB",
        space={"alpha": FloatDistribution(1e-3, 10.0, log=True)},
        seeded=False,
        scales=False,
        summary="Bernoulli naive Bayes",
    ),
    "gaussian-nb": Learner(
        "sklearn.naive_bayes:GaussianNB",
        space={"var_smoothing": FloatDistribution(1e-12, 1e-1, log=True)},
        seeded=False,
        scales=False,
        summary="Gaussian naive Bayes",
    ),
    "ridge": Learner(
        "sklearn.linear_model:Ridge",
        space={"alpha": FloatDistribution(1e-3, 1e4, log=True)},
        seeded=False,
        summary="ridge regression, exact k-fold CV from statistics (scaled too)",
    ),
    "ridge-classifier": Learner(
        "sklearn.linear_model:RidgeClassifier",
        space={"alpha": FloatDistribution(1e-3, 1e4, log=True)},
        seeded=False,
        summary="ridge classifier, exact k-fold CV from statistics (scaled too)",
    ),
    "lda": Learner(
        "sklearn.discriminant_analysis:LinearDiscriminantAnalysis",
        defaults={"solver": "lsqr"},
        space={"shrinkage": FloatDistribution(0.0, 1.0)},
        seeded=False,
        summary="linear discriminant analysis (shrunk), exact k-fold CV",
    ),
    "mlp": Learner(
        "sklearn.neural_network:MLPClassifier",
        space=_mlp_space,
        summary="one-hidden-layer perceptron (adam)",
    ),
    "pegasos": Learner(
        "sklearn_ext.linear_model:PegasosClassifier",
        space={"alpha": FloatDistribution(1e-7, 1e-1, log=True)},
        summary="PEGASOS linear SVM, native learner (TreeCV in C)",
    ),
    "logistic-sgd": Learner(
        "sklearn_ext.linear_model:LogisticSGDClassifier",
        space={"alpha": FloatDistribution(1e-7, 1e-1, log=True)},
        summary="logistic regression by SGD, native learner (TreeCV in C)",
    ),
    "lsq-sgd": Learner(
        "sklearn_ext.linear_model:LeastSquaresSGDRegressor",
        space={
            "radius": FloatDistribution(1e-1, 1e3, log=True),
            "eta0": FloatDistribution(1e-3, 10.0, log=True),
        },
        summary="least-squares robust SGD (Nemirovski et al.), native learner",
    ),
    "svc": Learner(
        "sklearn_ext.svm:AlphaSeededSVC",
        space={
            "C": FloatDistribution(1e-2, 1e3, log=True),
            "gamma": FloatDistribution(1e-4, 1e1, log=True),
        },
        seeded=False,
        summary="RBF kernel SVM, alpha-seeded k-fold CV (each fold scaled on its own)",
    ),
}


def import_estimator_class(path: str) -> type:
    """Import ``"module:Class"`` (or ``"module.Class"``)."""
    module_name, sep, name = path.partition(":")
    if not sep:
        module_name, _, name = path.rpartition(".")
    if not module_name or not name:
        raise ValueError(f"{path!r} is not an import path 'module:Class'.")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name!r}: {exc}") from None
    try:
        cls = getattr(module, name)
    except AttributeError:
        raise ValueError(f"module {module_name!r} has no {name!r}.") from None
    if not isinstance(cls, type) or not hasattr(cls, "fit"):
        raise ValueError(f"{path!r} is not an estimator class (it has no fit).")
    return cls


def make_learner(name: str, random_state: int | None = None) -> tuple[Any, Any]:
    """An estimator and its default search space, from a name or import path.

    Parameters
    ----------
    name : str
        A key of :data:`LEARNERS` or an import path ``"module:Class"`` (whose
        search space is then empty).
    random_state : int, default=None
        Set as ``random_state`` when the estimator takes one.

    Returns
    -------
    estimator, space
    """
    learner = LEARNERS.get(name)
    if learner is None:
        if ":" not in name and "." not in name:
            raise ValueError(
                f"unknown learner {name!r}; choose one of {sorted(LEARNERS)} or "
                "give an import path 'module:Class'."
            )
        learner = Learner(name, space={})
    estimator = import_estimator_class(learner.estimator)(**learner.defaults)
    if random_state is not None and "random_state" in estimator.get_params():
        estimator.set_params(random_state=random_state)
    return estimator, learner.space


def scales_by_default(name: str) -> bool:
    """Whether ``--preprocess auto`` scales the features of learner ``name``.

    True for the registry's learners that want scaled features; false for naive
    Bayes and for an import path ``"module:Class"`` (its features are used as
    given unless ``--preprocess scale`` asks).
    """
    learner = LEARNERS.get(name)
    return learner is not None and learner.scales
