"""``AlphaSeededSVC(probability=True)``: Platt scaling from an alpha-seeded CV."""

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.datasets import load_breast_cancer, load_iris, load_wine
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import StratifiedKFold, cross_validate
from sklearn.preprocessing import scale
from sklearn.svm import SVC

from sklearn_ext import tree_cross_validate
from sklearn_ext.svm import AlphaSeededSVC, AlphaSeedingBackend, alpha_seeded_cv
from sklearn_ext.svm._classes import as_alpha_seeded
from sklearn_ext.svm._platt import couple_pairwise, sigmoid_predict, sigmoid_train


def _svc_proba(**params):
    """``SVC(probability=True)``, whose parameter recent scikit-learn deprecates."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return SVC(probability=True, **params)


def _fit_quiet(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return model.fit(X, y)


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return scale(X), y


def test_binary_close_to_svc(cancer):
    X, y = cancer
    ours = AlphaSeededSVC(probability=True, random_state=0).fit(X, y)
    svc = _fit_quiet(_svc_proba(random_state=0), X, y)
    proba = ours.predict_proba(X)
    # The internal folds differ from LIBSVM's (its own shuffle), so the sigmoids
    # differ as two SVC fits with other random_state values do (up to 0.01 here).
    assert np.abs(proba - svc.predict_proba(X)).max() < 0.05
    assert np.allclose(proba.sum(axis=1), 1.0)
    assert np.allclose(ours.predict_log_proba(X), np.log(proba))
    assert ours.probA_.shape == ours.probB_.shape == (1,)
    # Positive decision values (LIBSVM's sign) favour classes_[0]: A < 0.
    assert ours.probA_[0] < 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert abs(ours.probA_[0] - svc.probA_[0]) < 0.5
    # Column 1 is classes_[1], which decision_function's positive side favours.
    dec = ours.decision_function(X)
    assert np.all(np.diff(proba[np.argsort(dec), 1]) >= -1e-12)


@pytest.mark.parametrize("loader", [load_iris, load_wine])
def test_multiclass_close_to_svc(loader):
    X, y = loader(return_X_y=True)
    X = scale(X)
    ours = AlphaSeededSVC(probability=True, random_state=0).fit(X, y)
    svc = _fit_quiet(_svc_proba(random_state=0), X, y)
    proba = ours.predict_proba(X)
    assert proba.shape == (X.shape[0], 3)
    assert np.allclose(proba.sum(axis=1), 1.0)
    # Two SVC fits with other random_state values differ by up to 0.05 here.
    assert np.abs(proba - svc.predict_proba(X)).max() < 0.06
    assert ours.probA_.shape == (3,)
    assert np.all(ours.probA_ < 0)


def test_final_model_is_the_plain_fit(cancer):
    X, y = cancer
    plain = AlphaSeededSVC().fit(X, y)
    proba = AlphaSeededSVC(probability=True, random_state=0).fit(X, y)
    # Seeded from the last internal fold, solved to the same tol.
    assert np.abs(proba.decision_function(X) - plain.decision_function(X)).max() < 0.01
    assert np.mean(proba.predict(X) == plain.predict(X)) > 0.99
    assert plain.probA_.shape == (0,)


def test_available_only_with_probability(cancer):
    X, y = cancer
    model = AlphaSeededSVC()
    assert not hasattr(model, "predict_proba")
    assert not hasattr(model, "predict_log_proba")
    assert hasattr(AlphaSeededSVC(probability=True), "predict_proba")
    fitted = model.fit(X[:100], y[:100])
    with pytest.raises(AttributeError, match="has no attribute 'predict_proba'"):
        fitted.predict_proba(X[:3])
    # Switched on after a plain fit: refused, not wrong.
    fitted.set_params(probability=True)
    with pytest.raises(AttributeError, match="fitted with probability=False"):
        fitted.predict_proba(X[:3])


def test_random_state(cancer):
    X, y = cancer
    first = AlphaSeededSVC(probability=True, random_state=3).fit(X, y)
    again = AlphaSeededSVC(probability=True, random_state=3).fit(X, y)
    other = AlphaSeededSVC(probability=True, random_state=4).fit(X, y)
    assert np.array_equal(first.probA_, again.probA_)
    assert np.array_equal(first.probB_, again.probB_)
    assert not np.array_equal(first.probA_, other.probA_)
    with pytest.raises(ValueError, match="The 'random_state' parameter"):
        AlphaSeededSVC(probability=True, random_state="x").fit(X, y)
    with pytest.raises(ValueError, match="The 'probability' parameter"):
        AlphaSeededSVC(probability="yes").fit(X, y)


def test_too_few_samples_of_a_class():
    X = np.arange(14, dtype=float).reshape(7, 2)
    y = np.array([0, 0, 0, 1, 1, 1, 2])
    with pytest.raises(ValueError, match="at least 2 samples of each class"):
        AlphaSeededSVC(probability=True).fit(X, y)
    # Fewer than 5 per class: as many folds as the smallest class allows.
    y = np.array([0, 0, 0, 1, 1, 1, 1])
    proba = AlphaSeededSVC(probability=True, random_state=0).fit(X, y)
    assert proba.predict_proba(X).shape == (7, 2)


def test_precomputed_matches_rbf(cancer):
    X, y = cancer
    X, y = X[:200], y[:200]
    gamma = 1.0 / X.shape[1]
    rbf = AlphaSeededSVC(gamma=gamma, probability=True, random_state=0).fit(X, y)
    K = rbf_kernel(X, X, gamma=gamma)
    pre = AlphaSeededSVC(kernel="precomputed", probability=True, random_state=0)
    pre.fit(K, y)
    assert np.allclose(pre.probA_, rbf.probA_, atol=1e-4)
    assert np.allclose(pre.predict_proba(K), rbf.predict_proba(X), atol=1e-4)


def test_sigmoid_train_minimises_platt_objective():
    rng = np.random.default_rng(0)
    dec = np.concatenate([rng.normal(1, 1, 60), rng.normal(-1, 1, 40)])
    positive = np.arange(100) < 60
    A, B = sigmoid_train(dec, positive)
    # Platt's regularised targets, minimised by a general-purpose method.
    target = np.where(positive, 61 / 62, 1 / 42)

    def loss(ab):
        p = sigmoid_predict(dec, ab[0], ab[1])
        return -np.sum(target * np.log(p) + (1 - target) * np.log(1 - p))

    best = minimize(loss, [0.0, 0.0], method="Nelder-Mead", options={"xatol": 1e-8})
    assert np.allclose([A, B], best.x, atol=1e-3)
    assert loss([A, B]) <= best.fun + 1e-8
    # Separable data: the targets keep the slope finite.
    A, B = sigmoid_train(np.array([-3.0, -2.0, 2.0, 3.0]), np.array([0, 0, 1, 1]))
    assert np.isfinite(A) and A < 0


def test_couple_pairwise_recovers_consistent_probabilities():
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(4), size=20)
    r = p[:, :, None] / (p[:, :, None] + p[:, None, :])
    coupled = couple_pairwise(r)
    assert np.allclose(coupled.sum(axis=1), 1.0)
    assert np.abs(coupled - p).max() < 0.01


def test_backend_takes_svc_probability_over():
    model = as_alpha_seeded(_svc_proba(random_state=7))
    assert model.probability is True and model.random_state == 7
    assert AlphaSeedingBackend.accepts(_svc_proba())
    assert not AlphaSeedingBackend.accepts(SVC(break_ties=True))


def test_neg_log_loss_through_tree_cross_validate(cancer):
    X, y = cancer
    X, y = X[::2], y[::2]
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    ours = tree_cross_validate(
        _svc_proba(random_state=0),
        X,
        y,
        cv=cv,
        scoring=["neg_log_loss", "roc_auc", "accuracy"],
        method=AlphaSeedingBackend(),
        return_estimator=True,
        return_run_info=True,
    )
    assert ours["backend"] == "alpha_seeding"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        theirs = cross_validate(
            _svc_proba(random_state=0),
            X,
            y,
            cv=cv,
            scoring=["neg_log_loss", "roc_auc", "accuracy"],
        )
    # Each fold model has its own sigmoids, fitted on its training rows only.
    assert all(m.probA_.shape == (1,) for m in ours["estimator"])
    assert np.abs(ours["test_neg_log_loss"] - theirs["test_neg_log_loss"]).max() < 0.02
    assert np.abs(ours["test_roc_auc"] - theirs["test_roc_auc"]).max() < 0.005
    assert np.abs(ours["test_accuracy"] - theirs["test_accuracy"]).max() < 0.02
    # alpha_seeded_cv goes the same way.
    again = alpha_seeded_cv(
        AlphaSeededSVC(probability=True, random_state=0),
        X,
        y,
        cv=cv,
        scoring="neg_log_loss",
    )
    assert np.all(again["test_score"] < 0)
    assert np.abs(again["test_score"] - theirs["test_neg_log_loss"]).max() < 0.02
