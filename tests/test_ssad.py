"""Tests of the semi-supervised anomaly detector (SSAD) and its native tree."""

import re

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold, cross_validate
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_ext import (
    FoldPlan,
    SemiSupervisedAnomalyDetector,
    StratifiedTreeCVSplitter,
    TreeCVSearchCV,
    TreeCVSplitter,
    tree_cross_validate,
)
from sklearn_ext._fast import _ssad
from sklearn_ext.anomaly._features import FEATURE_CACHE
from sklearn_ext.anomaly._labels import auroc
from sklearn_ext.model_selection._backends import PythonTreeBackend
from sklearn_ext.model_selection._split import make_fold_plan

SSAD = SemiSupervisedAnomalyDetector


def _data(seed=0, n_normal=300, n_anomalies=30, n_features=3):
    """Gaussian normals and uniformly scattered anomalies, shuffled."""
    rng = np.random.RandomState(seed)
    X = np.r_[
        rng.normal(size=(n_normal, n_features)),
        rng.uniform(-6, 6, size=(n_anomalies, n_features)),
    ]
    y = np.r_[np.ones(n_normal, dtype=int), -np.ones(n_anomalies, dtype=int)]
    order = rng.permutation(len(y))
    labeled = rng.rand(len(y)) < 0.2
    return X[order], y[order], labeled[order]


def _detector(**params):
    defaults = dict(
        eta_u=10.0, eta_l=10.0, kappa=1.0, gamma=0.3, n_components=100, random_state=0
    )
    return SSAD(**{**defaults, **params})


# -- the learner ------------------------------------------------------------------
def test_objective_decreases_with_training():
    X, y, labeled = _data(n_normal=100, n_anomalies=10)
    values = [
        _detector(eta_u=30, eta_l=30, max_iter=n, shuffle=False)
        .fit(X, y, labeled=labeled)
        .objective(X, y, labeled=labeled)
        for n in (1, 5, 50)
    ]
    # More passes, lower objective, below J = 0 of the untrained model (w = 0,
    # rho = 0, margin = 0).
    assert values[2] < values[1] < values[0]
    assert values[2] < 0.0


def test_objective_matches_its_formula():
    X, y, labeled = _data(n_normal=40, n_anomalies=5)
    model = _detector(max_iter=2).fit(X, y, labeled=labeled)
    f = model.score_samples(X)
    rho, margin, w = model.offset_, model.margin_, model.coef_
    y_train = np.where(labeled, y, 0)
    loss = np.where(
        y_train == 0,
        10.0 * np.maximum(0, rho - f),
        10.0 * np.maximum(0, margin - y_train * (f - rho)),
    )
    expected = 0.5 * (w @ w + rho**2 + margin**2) - rho - margin + loss.mean()
    assert_allclose(model.objective(X, y, labeled=labeled), expected, rtol=1e-12)


def test_ranks_planted_anomalies_above_normals():
    X, y, labeled = _data()
    # Several shuffled passes: this tests what the model learns, not one pass.
    model = _detector(max_iter=5, shuffle=True).fit(X, y, labeled=labeled)
    decision = model.decision_function(X)
    assert roc_auc_score(y > 0, decision) > 0.9
    assert model.score(X, y) == pytest.approx(roc_auc_score(y > 0, decision))
    # Anomalies fall on the negative side far more often than normal rows.
    flagged = model.predict(X) == -1
    assert flagged[y < 0].mean() > 0.5
    assert flagged[y > 0].mean() < 0.1


@pytest.mark.parametrize("y_kind", ["none", "zeros", "normals_only"])
def test_without_labelled_anomalies_is_a_one_class_method(y_kind):
    X, y, labeled = _data()
    if y_kind == "none":
        model = _detector().fit(X)
    elif y_kind == "zeros":
        model = _detector().fit(X, np.zeros_like(y))
    else:
        model = _detector().fit(X, y, labeled=labeled & (y > 0))
    assert model.score(X, y) > 0.9
    if y_kind == "zeros":
        assert_array_equal(model.coef_, _detector().fit(X).coef_)


def test_labels_help():
    X, y, labeled = _data(seed=1)
    unsupervised = _detector(eta_l=0.0).fit(X, y, labeled=labeled)
    supervised = _detector(eta_l=30.0).fit(X, y, labeled=labeled)
    assert supervised.score(X, y) > unsupervised.score(X, y)


def test_decision_score_samples_predict_agree():
    X, y, labeled = _data()
    model = _detector().fit(X, y, labeled=labeled)
    decision = model.decision_function(X)
    assert_allclose(model.score_samples(X), decision + model.offset_)
    assert_array_equal(model.predict(X), np.where(decision >= 0, 1, -1))
    assert model.predict(X).dtype.kind == "i"
    assert_array_equal(
        _detector().fit_predict(X, y, labeled=labeled),
        _detector().fit(X, y, labeled=labeled).predict(X),
    )


def test_random_features_match_rbf_sampler():
    from sklearn.kernel_approximation import RBFSampler

    X, _, _ = _data()
    model = _detector(gamma=0.7, n_components=50).fit(X)
    sampler = RBFSampler(gamma=0.7, n_components=50, random_state=0).fit(X)
    assert_allclose(model.random_weights_, sampler.random_weights_)
    assert_allclose(model.random_offset_, sampler.random_offset_)
    phi = model._features(X)
    assert_allclose(phi, sampler.transform(X), rtol=1e-10, atol=1e-12)
    # Row by row: a row's features do not depend on the block it is computed in.
    assert_array_equal(model._features(X[7:9]), phi[7:9])
    # The kernel is approximated.
    K = np.exp(-0.7 * ((X[:20, None] - X[None, :20]) ** 2).sum(-1))
    big = _detector(gamma=0.7, n_components=4000).fit(X[:20])
    phi = big._features(X[:20])
    assert np.abs(phi @ phi.T - K).max() < 0.1


def _planted(seed, n_normal=3000, n_anomalies=60, n_features=5, label_fraction=0.1):
    """The example of issue 23: N(0, I) rows and anomalies around 4 * ones."""
    rng = np.random.RandomState(seed)
    X = np.r_[
        rng.normal(size=(n_normal, n_features)),
        4.0 + rng.normal(size=(n_anomalies, n_features)),
    ]
    y = np.r_[np.ones(n_normal, dtype=int), -np.ones(n_anomalies, dtype=int)]
    return X, y, rng.rand(len(y)) < label_fraction


@pytest.mark.parametrize("seed", range(8))
def test_defaults_detect_planted_anomalies(seed):
    # With gamma=1.0, n_components=100 (the former defaults) the AUROC ranged
    # over 0.67-0.96 on these data sets.
    X, y, labeled = _planted(seed)
    model = SSAD(random_state=seed).fit(X, y, labeled=labeled)
    assert model.gamma_ == pytest.approx(1.0 / (5 * X.var()))
    assert roc_auc_score(y > 0, model.decision_function(X)) >= 0.97


def test_gamma_scale_and_auto_as_in_sklearn():
    from sklearn.kernel_approximation import RBFSampler

    X, y, labeled = _data(n_features=4)
    X = 3.0 * X + 1.0
    assert SSAD().gamma == "scale"
    scale = SSAD(n_components=30, random_state=0).fit(X)
    assert scale.gamma_ == 1.0 / (4 * X.var())
    sampler = RBFSampler(gamma="scale", n_components=30, random_state=0).fit(X)
    assert_array_equal(scale.random_weights_, sampler.random_weights_)
    assert_allclose(scale._features(X), sampler.transform(X), rtol=1e-10, atol=1e-12)
    auto = SSAD(gamma="auto", n_components=30, random_state=0).fit(X)
    assert auto.gamma_ == 0.25
    numeric = SSAD(gamma=0.25, n_components=30, random_state=0).fit(X, y, labeled)
    assert_array_equal(
        auto.fit(X, y, labeled).decision_function(X), numeric.decision_function(X)
    )
    # Constant rows: X.var() == 0 gives 1.0, as in SVC.
    assert SSAD(n_components=5).fit(np.ones((4, 3))).gamma_ == 1.0


def test_partial_fit_resolves_gamma_from_its_first_call():
    X, y, labeled = _data()
    model = SSAD(n_components=20, random_state=0)
    model.partial_fit(X[:100], y[:100])
    assert model.gamma_ == 1.0 / (X.shape[1] * X[:100].var())
    weights = model.random_weights_
    model.partial_fit(10.0 * X[100:], y[100:])
    assert model.gamma_ == 1.0 / (X.shape[1] * X[:100].var())
    assert model.random_weights_ is weights


def test_partial_fit_equals_fit_in_the_same_order():
    X, y, labeled = _data()
    fitted = _detector(max_iter=1, shuffle=False).fit(X, y, labeled=labeled)
    streamed = _detector()
    for rows in np.array_split(np.arange(len(y)), 4):
        streamed.partial_fit(X[rows], y[rows], labeled=labeled[rows])
    assert_array_equal(streamed.coef_, fitted.coef_)
    assert streamed.offset_ == fitted.offset_
    assert streamed.margin_ == fitted.margin_
    assert streamed.t_ == len(y)
    assert streamed.n_iter_ == 1 and fitted.n_iter_ == 1


def test_labeled_mask_hides_labels():
    X, y, labeled = _data()
    masked = _detector().fit(X, y, labeled=labeled)
    zeroed = _detector().fit(X, np.where(labeled, y, 0))
    assert_array_equal(masked.coef_, zeroed.coef_)
    everything = _detector().fit(X, y, labeled=np.ones_like(labeled))
    assert_array_equal(everything.coef_, _detector().fit(X, y).coef_)
    # 0/1 integers are accepted as a mask.
    as_int = _detector().fit(X, y, labeled=labeled.astype(int))
    assert_array_equal(as_int.coef_, masked.coef_)


def test_fit_reuses_cached_features():
    X, y, labeled = _data(seed=3)
    FEATURE_CACHE.clear()
    _detector(eta_u=1.0).fit(X, y, labeled=labeled)
    hits = FEATURE_CACHE.hits
    _detector(eta_u=2.0, eta_l=5.0, kappa=0.5).fit(X, y, labeled=labeled)
    assert FEATURE_CACHE.hits == hits + 1
    _detector(gamma=0.9).fit(X, y, labeled=labeled)  # Other features: a miss.
    assert FEATURE_CACHE.hits == hits + 1
    # Unseeded detectors draw new features every time: nothing cached.
    n = len(FEATURE_CACHE)
    SSAD(random_state=None).fit(X)
    assert len(FEATURE_CACHE) == n


def test_prefix_cache_gives_the_same_model():
    from sklearn_ext import PrefixCache

    X, y, labeled = _data(n_normal=1500, n_anomalies=100)
    cache = PrefixCache()
    plain = _detector(shuffle=False, max_iter=2).fit(X, y, labeled=labeled)
    first = _detector(shuffle=False, max_iter=2, cache=cache).fit(X, y, labeled=labeled)
    again = _detector(shuffle=False, max_iter=2, cache=cache).fit(
        X[:1200], y[:1200], labeled=labeled[:1200]
    )
    assert cache.hits >= 1
    assert_array_equal(first.coef_, plain.coef_)
    reference = _detector(shuffle=False, max_iter=2).fit(
        X[:1200], y[:1200], labeled=labeled[:1200]
    )
    assert_array_equal(again.coef_, reference.coef_)


def test_prefix_cache_never_mixes_kernel_widths_of_gamma_scale():
    from sklearn_ext import PrefixCache

    # Each fit resolves "scale" from its own rows: a fit on a prefix of the rows
    # has another kernel, so it must start cold (and give the uncached model).
    X, y, labeled = _data(n_normal=1500, n_anomalies=100)
    cache = PrefixCache()
    first = _detector(gamma="scale", cache=cache).fit(X, y, labeled=labeled)
    again = _detector(gamma="scale", cache=cache).fit(
        X[:1200], y[:1200], labeled=labeled[:1200]
    )
    reference = _detector(gamma="scale").fit(X[:1200], y[:1200], labeled=labeled[:1200])
    assert again.gamma_ != first.gamma_
    assert cache.hits == 0
    assert_array_equal(again.coef_, reference.coef_)


# -- bad input ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "bad_y, shown",
    [
        (2, "[2.0]"),
        (0.5, "[0.5]"),
        ("a", "['a']"),
    ],
)
def test_labels_outside_minus_one_zero_one(bad_y, shown):
    X, y, _ = _data()
    y = y.astype(object if isinstance(bad_y, str) else float)
    y[3] = bad_y
    message = re.escape(f"Got the values {shown} in y")
    with pytest.raises(ValueError, match=r"must contain only the labels \+1"):
        _detector().fit(X, y)
    with pytest.raises(ValueError, match=message):
        _detector().partial_fit(X, y)
    model = _detector().fit(X)
    with pytest.raises(ValueError, match=message):
        model.score(X, y)
    with pytest.raises(ValueError, match=message):
        tree_cross_validate(_detector(), X, y, cv=3, return_run_info=True)


def test_nan_label():
    X, y, _ = _data()
    y = y.astype(float)
    y[0] = np.nan
    with pytest.raises(ValueError, match="nan"):
        _detector().fit(X, y)


@pytest.mark.parametrize(
    "params, name, shown",
    [
        ({"eta_u": 0.0}, "eta_u", "0.0"),
        ({"eta_u": -1}, "eta_u", "-1"),
        ({"eta_l": -0.5}, "eta_l", "-0.5"),
        ({"kappa": -1.0}, "kappa", "-1.0"),
        ({"gamma": 0}, "gamma", "0"),
        ({"gamma": "median"}, "gamma", "'median'"),
        ({"n_components": 0}, "n_components", "0"),
        ({"max_iter": 0}, "max_iter", "0"),
        ({"eta_u": "big"}, "eta_u", "'big'"),
    ],
)
def test_hyperparameters_out_of_range(params, name, shown):
    X, y, _ = _data()
    pattern = rf"The '{name}' parameter of SemiSupervisedAnomalyDetector must be .*"
    pattern += re.escape(f"Got {shown} instead.")
    for call in (
        lambda: SSAD(**params).fit(X, y),
        lambda: SSAD(**params).partial_fit(X, y),
        lambda: tree_cross_validate(SSAD(**params), X, y, cv=3, return_run_info=True),
    ):
        with pytest.raises(InvalidParameterError, match=pattern):
            call()


def test_bad_cache():
    X, _, _ = _data()
    with pytest.raises(ValueError, match="The 'cache' parameter of Semi"):
        SSAD(cache="disk").fit(X)


def test_bad_labeled_mask():
    X, y, labeled = _data()
    with pytest.raises(ValueError, match=r"must have shape \(330,\). Got shape"):
        _detector().fit(X, y, labeled=labeled[:-1])
    with pytest.raises(ValueError, match="must be an array of bool. Got dtype"):
        _detector().fit(X, y, labeled=labeled * 0.5)
    with pytest.raises(ValueError, match="'labeled' mask but no y"):
        _detector().fit(X, labeled=labeled)


def test_bad_y_shape_and_length():
    X, y, _ = _data()
    with pytest.raises(ValueError, match="y has 329 labels but X has 330"):
        _detector().fit(X, y[:-1])
    with pytest.raises(ValueError, match="1d array of labels"):
        _detector().fit(X, np.c_[y, y])


def test_score_needs_both_classes():
    X, y, _ = _data()
    model = _detector().fit(X)
    with pytest.raises(ValueError, match=r"both classes .* got only \[1.0\]"):
        model.score(X[y > 0], y[y > 0])
    with pytest.raises(ValueError, match="needs the true labels y"):
        model.score(X, None)
    # Unlabelled rows are left out of the AUROC.
    y_with_zeros = y.copy()
    y_with_zeros[:50] = 0
    keep = y_with_zeros != 0
    assert model.score(X, y_with_zeros) == pytest.approx(model.score(X[keep], y[keep]))


def test_feature_count_must_match():
    X, y, _ = _data()
    model = _detector().fit(X)
    with pytest.raises(ValueError, match="features"):
        model.decision_function(X[:, :2])
    with pytest.raises(ValueError, match="features"):
        model.partial_fit(X[:, :2])


# -- cross-validation ---------------------------------------------------------------
def test_auroc_matches_sklearn_with_ties():
    rng = np.random.RandomState(0)
    positive = rng.rand(200) < 0.3
    scores = np.round(rng.normal(size=200), 1)  # Many ties.
    assert auroc(positive, scores) == pytest.approx(roc_auc_score(positive, scores))
    assert np.isnan(auroc(np.ones(3, dtype=bool), np.arange(3.0)))


@pytest.mark.parametrize("order", ["fixed", "randomized"])
@pytest.mark.parametrize("cv", [5, 8])
def test_native_tree_equals_python_tree(order, cv):
    X, y, labeled = _data()
    kwargs = dict(cv=cv, order=order, random_state=0, fit_params={"labeled": labeled})
    native = tree_cross_validate(_detector(), X, y, **kwargs, return_run_info=True)
    python = tree_cross_validate(
        _detector(), X, y, method=PythonTreeBackend(), **kwargs, return_run_info=True
    )
    assert native["backend"] == "native_tree"
    assert python["backend"] == "python_tree"
    assert_array_equal(native["test_score"], python["test_score"])
    assert native["n_samples_fed"] == python["n_samples_fed"]
    if order == "fixed":
        # On the tree's own plan, the standard backend fits in the tree's order
        # (an int cv would list each fold's rows as StratifiedKFold does).
        chunks = make_fold_plan(cv, X, y, classifier=True, order=order)
        kwargs["cv"] = FoldPlan(
            [chunks.test_indices(i) for i in range(cv)], chunks.n_samples
        )
        standard = tree_cross_validate(
            _detector(), X, y, method="standard", **kwargs, return_run_info=True
        )
        assert_array_equal(native["test_score"], standard["test_score"])


@pytest.mark.parametrize("order", ["fixed", "randomized"])
def test_native_tree_resolves_gamma_scale_once_from_all_rows(order):
    from sklearn_ext.anomaly._features import resolve_gamma

    X, y, labeled = _data(n_features=4)
    X = 2.0 * X
    plan = StratifiedTreeCVSplitter(
        5, order=order, random_state=0 if order == "randomized" else None
    ).plan(X, y)
    params = dict(eta_u=10.0, eta_l=10.0, n_components=50, random_state=0)
    kwargs = dict(cv=plan, fit_params={"labeled": labeled})
    tree = tree_cross_validate(
        SSAD(**params), X, y, return_estimator=True, **kwargs, return_run_info=True
    )
    gamma = resolve_gamma("scale", X)
    assert tree["backend"] == "native_tree"
    assert all(model.gamma_ == gamma for model in tree["estimator"])
    # Each fold's model is exactly fit's single ordered pass with that gamma.
    one_pass = SSAD(gamma=gamma, max_iter=1, shuffle=False, **params)
    reference = cross_validate(
        one_pass, X, y, cv=list(plan.split()), params={"labeled": labeled}
    )
    assert_array_equal(tree["test_score"], reference["test_score"])
    numeric = tree_cross_validate(
        SSAD(gamma=gamma, **params), X, y, **kwargs, return_run_info=True
    )
    assert_array_equal(tree["test_score"], numeric["test_score"])
    # The final fit on all rows resolves the same kernel.
    assert SSAD(**params).fit(X, y, labeled=labeled).gamma_ == gamma


def test_native_tree_is_close_to_standard_cv():
    X, y, labeled = _data(n_normal=600, n_anomalies=60)
    tree = tree_cross_validate(
        _detector(), X, y, cv=5, fit_params={"labeled": labeled}, return_run_info=True
    )
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    standard = cross_validate(_detector(), X, y, cv=cv, params={"labeled": labeled})
    assert tree["test_score"].mean() > 0.9
    assert abs(tree["test_score"].mean() - standard["test_score"].mean()) < 0.03


def test_int_cv_stratifies_on_the_labels():
    X, y, labeled = _data()
    result = tree_cross_validate(
        _detector(), X, y, cv=10, fit_params={"labeled": labeled}, return_run_info=True
    )
    assert np.all(np.isfinite(result["test_score"]))
    plan = StratifiedTreeCVSplitter(10).plan(X, y)
    for fold in range(10):
        assert np.sum(y[plan.test_indices(fold)] < 0) == 3


def test_native_auroc_equals_the_roc_auc_scorer():
    X, y, labeled = _data()
    kwargs = dict(cv=5, fit_params={"labeled": labeled})
    native = tree_cross_validate(_detector(), X, y, **kwargs, return_run_info=True)
    rebuilt = tree_cross_validate(
        _detector(),
        X,
        y,
        scoring="roc_auc",
        return_estimator=True,
        **kwargs,
        return_run_info=True,
    )
    assert_allclose(native["test_score"], rebuilt["test_score"], rtol=1e-12)
    plan = StratifiedTreeCVSplitter(5).plan(X, y)
    for fold, model in enumerate(rebuilt["estimator"]):
        test = plan.test_indices(fold)
        assert model.score(X[test], y[test]) == pytest.approx(
            native["test_score"][fold]
        )


def test_native_tree_bad_fit_params_and_missing_labels():
    X, y, labeled = _data()
    with pytest.raises(ValueError, match=r"supports only 'labeled'.*sample_weight"):
        tree_cross_validate(
            _detector(),
            X,
            y,
            cv=3,
            fit_params={"sample_weight": np.ones(len(y))},
            return_run_info=True,
        )
    with pytest.raises(ValueError, match="needs the true labels y"):
        tree_cross_validate(_detector(), X, None, cv=3, return_run_info=True)
    # Without labels, another scoring works (one-class CV).
    result = tree_cross_validate(
        _detector(),
        X,
        None,
        cv=3,
        scoring=lambda m, X, y=None: m.decision_function(X).mean(),
        return_run_info=True,
    )
    assert np.all(np.isfinite(result["test_score"]))


@pytest.mark.parametrize("engine", ["native", "python"])
def test_fold_without_anomalies_raises(engine):
    from sklearn.model_selection import KFold

    X, y, _ = _data()
    order = np.argsort(y, kind="stable")  # Anomalies first: later folds lack them.
    method = PythonTreeBackend() if engine == "python" else "auto"
    with pytest.raises(ValueError, match=r"both classes \(\+1 and -1\) in y"):
        tree_cross_validate(
            _detector(),
            X[order],
            y[order],
            cv=KFold(5),
            method=method,
            error_score="raise",
            return_run_info=True,
        )
    if engine == "python":
        # As cross_validate: by default the fold is scored nan, with a warning.
        with pytest.warns(UserWarning, match="Scoring failed"):
            result = tree_cross_validate(
                _detector(),
                X[order],
                y[order],
                cv=KFold(5),
                method=method,
                return_run_info=True,
            )
        assert np.isnan(result["test_score"]).any()


def test_labeled_mask_routed_through_tree_cross_validate():
    X, y, labeled = _data()
    with_mask = tree_cross_validate(
        _detector(), X, y, cv=5, fit_params={"labeled": labeled}, return_run_info=True
    )
    all_revealed = tree_cross_validate(_detector(), X, y, cv=5, return_run_info=True)
    none_revealed = tree_cross_validate(
        _detector(),
        X,
        y,
        cv=5,
        fit_params={"labeled": np.zeros(len(y), bool)},
        return_run_info=True,
    )
    assert not np.array_equal(with_mask["test_score"], all_revealed["test_score"])
    assert not np.array_equal(with_mask["test_score"], none_revealed["test_score"])
    # The fold models are those trained on the fold's rows with hidden labels.
    plan = StratifiedTreeCVSplitter(5).plan(X, y)
    models = tree_cross_validate(
        _detector(),
        X,
        y,
        cv=StratifiedTreeCVSplitter(5),  # each fold's rows in the tree's order
        method="standard",
        fit_params={"labeled": labeled},
        return_estimator=True,
        return_run_info=True,
    )["estimator"]
    for fold, model in enumerate(models):
        reference = _detector()
        for rows in plan.train_segments(fold):
            reference.partial_fit(X[rows], np.where(labeled, y, 0)[rows])
        assert_array_equal(model.coef_, reference.coef_)


def test_labeled_mask_routed_through_search():
    X, y, labeled = _data()
    grid = {"eta_u": [3.0, 10.0], "kappa": [0.5, 1.0]}
    search = TreeCVSearchCV(_detector(), grid, cv=4).fit(X, y, labeled=labeled)
    for i, params in enumerate(search.cv_results_["params"]):
        expected = tree_cross_validate(
            _detector(**params),
            X,
            y,
            cv=4,
            fit_params={"labeled": labeled},
            return_run_info=True,
        )
        assert search.cv_results_["mean_test_score"][i] == pytest.approx(
            expected["test_score"].mean()
        )
    refit = _detector(**search.best_params_).fit(X, y, labeled=labeled)
    assert_array_equal(search.best_estimator_.coef_, refit.coef_)


def test_labeled_mask_routed_through_optuna_objective():
    optuna = pytest.importorskip("optuna")
    from optuna.distributions import CategoricalDistribution

    from optuna_treecv import TreeCVObjective

    X, y, labeled = _data()
    objective = TreeCVObjective(
        _detector(),
        {"eta_u": CategoricalDistribution([3.0, 10.0])},
        X,
        y,
        cv=TreeCVSplitter(4),
        fit_params={"labeled": labeled},
    )
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize")
    study.optimize(objective, n_trials=2)
    for trial in study.trials:
        expected = tree_cross_validate(
            _detector(**trial.params),
            X,
            y,
            cv=TreeCVSplitter(4),
            fit_params={"labeled": labeled},
            return_run_info=True,
        )
        assert trial.value == pytest.approx(expected["test_score"].mean())
        assert trial.user_attrs["cv"]["backend"] == "native_tree"
    with pytest.raises(TypeError, match="'fit_params' parameter of TreeCVObjective"):
        TreeCVObjective(_detector(), {}, X, y, fit_params=[("labeled", labeled)])


def test_state_layout():
    state = _ssad.new_state(7)
    assert state.shape == (_ssad.OFFSET + 7,)
    assert state[1] == 1.0 and not state[[0, 2, 3]].any()


# -- the ForestCover loader of the benchmarks ----------------------------------------
def _benchmark_data():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    try:
        import _data
    finally:
        sys.path.pop(0)
    if not (_data.data_dir() / "covtype.npz").is_file():
        pytest.skip("covtype.npz (the project's shared data) is absent")
    return _data


def test_forestcover_anomaly_loader():
    data = _benchmark_data()
    X, y, labeled = data.forestcover_anomaly()
    assert X.shape == (286_048, 10)
    assert np.sum(y == -1) == 2_747 and np.sum(y == 1) == 283_301
    assert_allclose(X.mean(axis=0), 0.0, atol=1e-10)
    assert_allclose(X.std(axis=0), 1.0)
    assert abs(labeled.mean() - 0.05) < 0.005
    X2, y2, labeled2 = data.forestcover_anomaly(2_000, label_fraction=0.2)
    assert X2.shape == (2_000, 10) and np.sum(y2 == -1) == 19
    assert abs(labeled2.mean() - 0.2) < 0.05
    again = data.forestcover_anomaly(2_000, label_fraction=0.2)
    assert_array_equal(again[0], X2)
    assert_array_equal(again[2], labeled2)
    with pytest.raises(ValueError, match="'label_fraction' parameter"):
        data.forestcover_anomaly(label_fraction=1.5)
    with pytest.raises(ValueError, match="'n_samples' parameter"):
        data.forestcover_anomaly(1)
