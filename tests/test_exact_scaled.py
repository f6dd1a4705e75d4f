"""Exact statistics after a per-fold scaler: the fold pipelines of cross_validate.

``Pipeline([scaler, learner])`` with ``StandardScaler``, ``MinMaxScaler`` or
``MaxAbsScaler`` before ``Ridge``, ``RidgeClassifier``, ``LinearRegression``,
``LinearDiscriminantAnalysis`` or ``GaussianNB`` runs on the exact backend:
each fold's scaler and learner equal (to rounding) those ``cross_validate``
fits on the fold's training rows, and are returned as fitted pipelines.
"""

from __future__ import annotations

import warnings

import numpy as np
import optuna
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import sparse
from sklearn.datasets import make_classification, make_regression
from sklearn.decomposition import PCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.linear_model import LinearRegression, Ridge, RidgeClassifier
from sklearn.model_selection import (
    GridSearchCV,
    GroupKFold,
    KFold,
    StratifiedKFold,
    cross_validate,
)
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, StandardScaler

from optuna_treecv import TreeCVObjective
from sklearn_ext import TreeCVSearchCV, tree_cross_validate
from sklearn_ext.model_selection import (
    ExactStatisticsBackend,
    StatisticsCache,
    TreeCVFallbackWarning,
    choose_backend,
)
from sklearn_ext.model_selection._exact._cache import default_cache

SCALERS = {
    "standard": StandardScaler,
    "standard-no-mean": lambda: StandardScaler(with_mean=False),
    "standard-no-std": lambda: StandardScaler(with_std=False),
    "minmax": lambda: MinMaxScaler(feature_range=(-1, 2)),
    "maxabs": MaxAbsScaler,
}
#: A shuffled k-fold, uneven folds (61 rows in 4), and groups of unequal size.
SPLITTERS = {
    "kfold-shuffle": lambda: KFold(5, shuffle=True, random_state=0),
    "uneven": lambda: KFold(4),
    "groups": lambda: GroupKFold(3),
}
SCALER_ATTRIBUTES = (
    "mean_",
    "var_",
    "scale_",
    "n_samples_seen_",
    "data_min_",
    "data_max_",
    "data_range_",
    "min_",
    "max_abs_",
    "n_features_in_",
)
LEARNER_ATTRIBUTES = (
    "coef_",
    "intercept_",
    "classes_",
    "theta_",
    "var_",
    "epsilon_",
    "class_count_",
    "class_prior_",
    "means_",
    "priors_",
    "covariance_",
    "explained_variance_ratio_",
    "xbar_",
    "rank_",
    "singular_",
)


def _columns_of_every_kind(X, rng):
    """Offsets and scales far apart, and a column constant on some folds."""
    X = X * rng.uniform(0.01, 100.0, X.shape[1]) + rng.uniform(-50, 500, X.shape[1])
    rare = np.zeros(X.shape[0])
    rare[:7] = 1.0  # one-hot of a rare category: all zero once its rows are held out
    return np.column_stack([X, rare])


@pytest.fixture(scope="module")
def regression():
    rng = np.random.default_rng(0)
    X, y = make_regression(n_samples=61, n_features=5, noise=4.0, random_state=0)
    return _columns_of_every_kind(X, rng), y + 30.0


@pytest.fixture(scope="module")
def classification():
    rng = np.random.default_rng(1)
    X, y = make_classification(
        n_samples=61,
        n_features=5,
        n_informative=4,
        n_redundant=0,
        n_classes=3,
        random_state=1,
    )
    return _columns_of_every_kind(X, rng), y


def _groups(n_samples):
    return np.arange(n_samples) % 7


def _assert_same_pipeline(mine, theirs, rtol=1e-9, atol=1e-9):
    assert isinstance(mine, Pipeline)
    assert [name for name, _ in mine.steps] == [name for name, _ in theirs.steps]
    for (_, ours), (_, ref) in zip(mine.steps, theirs.steps, strict=True):
        assert type(ours) is type(ref)
        for name in SCALER_ATTRIBUTES + LEARNER_ATTRIBUTES:
            if not hasattr(ref, name) or name == "var_" and isinstance(ref, GaussianNB):
                continue
            value, expected = getattr(ours, name), getattr(ref, name)
            if expected is None or isinstance(expected, int | np.integer):
                assert value == expected, name
                assert type(value) is type(expected), name
                continue
            assert np.shape(value) == np.shape(expected), name
            assert_allclose(value, expected, rtol=rtol, atol=atol, err_msg=name)
        if isinstance(ref, GaussianNB):
            assert_allclose(ours.var_, ref.var_, rtol=1e-9, atol=1e-12)


def _compare(estimator, X, y, cv, scoring=None, params=None, rtol=1e-9, atol=1e-9):
    groups = _groups(len(y)) if isinstance(cv(), GroupKFold) else None
    ours = tree_cross_validate(
        estimator,
        X,
        y,
        cv=cv(),
        groups=groups,
        scoring=scoring,
        params=params,
        return_estimator=True,
        return_run_info=True,
    )
    ref = cross_validate(
        estimator,
        X,
        y,
        cv=cv(),
        groups=groups,
        scoring=scoring,
        params=params,
        return_estimator=True,
    )
    assert ours["backend"] == "exact"
    assert_allclose(ours["test_score"], ref["test_score"], rtol=0, atol=1e-10)
    for mine, theirs in zip(ours["estimator"], ref["estimator"], strict=True):
        _assert_same_pipeline(mine, theirs, rtol=rtol, atol=atol)
    return ours, ref


# -- every fold's pipeline is cross_validate's --------------------------------------
@pytest.mark.parametrize("cv", list(SPLITTERS))
@pytest.mark.parametrize("scaler", list(SCALERS))
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_scaled_ridge_equals_cross_validate(regression, cv, scaler, fit_intercept):
    X, y = regression
    pipeline = make_pipeline(
        SCALERS[scaler](), Ridge(alpha=0.5, fit_intercept=fit_intercept)
    )
    _compare(pipeline, X, y, SPLITTERS[cv])


@pytest.mark.parametrize("scaler", list(SCALERS))
@pytest.mark.parametrize(
    "learner",
    [
        lambda: RidgeClassifier(alpha=2.0),
        GaussianNB,
        lambda: LinearDiscriminantAnalysis(solver="lsqr"),
        lambda: LinearDiscriminantAnalysis(solver="eigen", shrinkage=0.2),
        lambda: LinearDiscriminantAnalysis(store_covariance=True),  # svd
    ],
    ids=["ridge-classifier", "gaussian-nb", "lda-lsqr", "lda-eigen", "lda-svd"],
)
def test_scaled_classifiers_equal_cross_validate(classification, scaler, learner):
    X, y = classification
    X = X[:, :-1]  # lda-svd fits a fold whose column is constant (tested below)
    cv = lambda: StratifiedKFold(5, shuffle=True, random_state=0)  # noqa: E731
    pipeline = make_pipeline(SCALERS[scaler](), learner())
    scoring = (
        "accuracy" if isinstance(pipeline[-1], RidgeClassifier) else "neg_log_loss"
    )
    ours, ref = _compare(pipeline, X, y, cv, scoring=scoring)
    if isinstance(pipeline[-1], LinearDiscriminantAnalysis):
        for mine, theirs in zip(ours["estimator"], ref["estimator"], strict=True):
            assert_allclose(
                mine.predict_proba(X), theirs.predict_proba(X), rtol=0, atol=1e-10
            )


@pytest.mark.parametrize("scaler", ["standard", "minmax"])
def test_linear_regression_after_a_scaler(regression, scaler):
    X, y = regression
    _compare(
        make_pipeline(SCALERS[scaler](), LinearRegression()), X, y, SPLITTERS["uneven"]
    )


def test_multi_output_ridge(regression):
    X, y = regression
    Y = np.column_stack([y, -2.0 * y + X[:, 0]])
    for cv in SPLITTERS.values():
        ours, _ = _compare(
            make_pipeline(StandardScaler(), Ridge(alpha=[1.0, 3.0])), X, Y, cv
        )
        assert ours["estimator"][0][-1].coef_.shape == (2, X.shape[1])


def test_scaled_scalers_attributes_are_fits_on_the_training_rows(regression):
    """Each scaler is ``fit`` on the split's training rows (not all rows)."""
    X, y = regression
    for scaler in SCALERS.values():
        ours = tree_cross_validate(
            make_pipeline(scaler(), Ridge()), X, y, cv=KFold(3), return_estimator=True
        )
        for split, (train, _) in enumerate(KFold(3).split(X)):
            mine, theirs = ours["estimator"][split][0], scaler().fit(X[train])
            for name in SCALER_ATTRIBUTES:
                if hasattr(theirs, name) and getattr(theirs, name) is not None:
                    assert_allclose(
                        getattr(mine, name), getattr(theirs, name), rtol=1e-12
                    )


def test_clipping_min_max_scaler_scores_the_clipped_rows(regression):
    """``clip=True`` changes the held-out rows only: R^2 comes from predict."""
    X, y = regression
    pipeline = make_pipeline(MinMaxScaler(clip=True), Ridge(alpha=0.1))
    _compare(pipeline, X, y, SPLITTERS["kfold-shuffle"])


def test_passthrough_steps_and_a_pipeline_of_the_learner_alone(regression):
    X, y = regression
    with_passthrough = Pipeline(
        [("scale", StandardScaler()), ("nothing", "passthrough"), ("ridge", Ridge())]
    )
    _compare(with_passthrough, X, y, SPLITTERS["uneven"])
    _compare(Pipeline([("ridge", Ridge())]), X, y, SPLITTERS["uneven"])


def test_dataframe_input_keeps_the_feature_names(regression):
    X, y = regression
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    ours, _ = _compare(
        make_pipeline(StandardScaler(), Ridge()),
        frame,
        pd.Series(y),
        SPLITTERS["uneven"],
    )
    for model in ours["estimator"]:
        assert list(model.feature_names_in_) == list(frame.columns)
        assert list(model[0].feature_names_in_) == list(frame.columns)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "X has feature names" warning
            model.predict(frame)


def test_folds_the_statistics_cannot_bound_are_fit():
    """Nearly collinear columns at a tiny alpha: the fold is fit with ``fit``
    (a fitted pipeline too), and equals cross_validate's."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 3))
    X = np.column_stack([X, X[:, 0] + 1e-9 * rng.normal(size=40)])
    y = X @ [1.0, 2.0, 3.0, 4.0] + rng.normal(size=40)
    _compare(
        make_pipeline(StandardScaler(), Ridge(alpha=1e-12)), X, y, SPLITTERS["uneven"]
    )


def test_lda_svd_with_a_column_constant_on_a_fold(classification):
    """The rare one-hot column is all zeros on the first fold's rows: ``fit``
    centres it to exact zeros (its deviation 0, replaced by 1), and so do the
    statistics; the fold is made, not fit, and equals cross_validate's."""
    X, y = classification
    for scaler in SCALERS.values():
        pipeline = make_pipeline(scaler(), LinearDiscriminantAnalysis())
        ours, ref = _compare(pipeline, X, y, lambda: KFold(5), scoring="neg_log_loss")
        mine, theirs = ours["estimator"][0][-1], ref["estimator"][0][-1]
        assert not np.array_equal(mine.coef_, theirs.coef_)  # made, not fit
        assert_array_equal(mine.means_[:, -1], theirs.means_[:, -1])


@pytest.mark.parametrize(
    "values, scaled, made",
    [
        ((0.0, 3.0, -2.0), False, True),  # integers: class means are exact
        ((0.1, 0.2, 0.3), False, False),  # not exact: fit divides rounding errors
        ((0.0, 3.0, -2.0), True, False),  # scaled: fit's mean_ is not known exactly
    ],
    ids=["integers", "decimals", "scaled"],
)
def test_lda_svd_with_a_column_constant_within_each_class(
    classification, values, scaled, made
):
    """A column that takes one value per class: made where ``fit`` centres it
    to exact zeros, fit with ``fit`` where ``fit`` centres it to rounding
    errors (which it then divides by their own size)."""
    X, y = classification
    X = np.column_stack([X[:, :-1], np.asarray(values)[y]])
    estimator = LinearDiscriminantAnalysis()
    if scaled:
        estimator = make_pipeline(StandardScaler(), estimator)
    cv = lambda: StratifiedKFold(3)  # noqa: E731
    ours = tree_cross_validate(
        estimator, X, y, cv=cv(), return_estimator=True, return_run_info=True
    )
    ref = cross_validate(estimator, X, y, cv=cv(), return_estimator=True)
    assert ours["backend"] == "exact"
    for mine, theirs in zip(ours["estimator"], ref["estimator"], strict=True):
        mine, theirs = (m[-1] if scaled else m for m in (mine, theirs))
        if made:
            assert not np.array_equal(mine.coef_, theirs.coef_)
            assert_allclose(mine.coef_, theirs.coef_, rtol=1e-9, atol=1e-9)
        else:
            assert_array_equal(mine.scalings_, theirs.scalings_)
    assert_allclose(ours["test_score"], ref["test_score"], rtol=0, atol=1e-10)


def test_lda_svd_alone_runs_exact(classification):
    X, y = classification
    X = X[:, :-1]
    cv = lambda: StratifiedKFold(4, shuffle=True, random_state=2)  # noqa: E731
    ours = tree_cross_validate(
        LinearDiscriminantAnalysis(),
        X,
        y,
        cv=cv(),
        return_estimator=True,
        return_run_info=True,
        scoring="neg_log_loss",
    )
    ref = cross_validate(
        LinearDiscriminantAnalysis(),
        X,
        y,
        cv=cv(),
        return_estimator=True,
        scoring="neg_log_loss",
    )
    assert ours["backend"] == "exact"
    assert_allclose(ours["test_score"], ref["test_score"], rtol=0, atol=1e-10)
    for mine, theirs in zip(ours["estimator"], ref["estimator"], strict=True):
        assert_allclose(mine.coef_, theirs.coef_, rtol=1e-9, atol=1e-9)
        # Singular vectors' signs are LAPACK's choice: equal up to a column sign.
        signs = np.sign(np.sum(mine.scalings_ * theirs.scalings_, axis=0))
        assert_allclose(mine.scalings_ * signs, theirs.scalings_, rtol=1e-8, atol=1e-10)
        assert_allclose(
            np.abs(mine.transform(X)), np.abs(theirs.transform(X)), rtol=1e-8, atol=1e-9
        )


# -- sample_weight --------------------------------------------------------------------
@pytest.mark.parametrize("learner", ["ridge", "gaussiannb"])
def test_the_learners_sample_weight(regression, classification, learner):
    X, y = regression if learner == "ridge" else classification
    weights = np.random.default_rng(4).uniform(0.1, 3.0, len(y))
    estimator = Ridge(alpha=0.3) if learner == "ridge" else GaussianNB()
    pipeline = make_pipeline(StandardScaler(), estimator)
    _compare(
        pipeline,
        X,
        y,
        SPLITTERS["kfold-shuffle"],
        params={f"{learner}__sample_weight": weights},
    )


def _fallback_note(capsys, *args, **kwargs):
    """``tree_cross_validate`` of a pipeline ending in a learner without
    partial_fit that the statistics cannot run: no warning (every backend
    scores its fit); the note printed at ``verbose=1``, and the result."""
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error", TreeCVFallbackWarning)
        result = tree_cross_validate(*args, verbose=1, return_run_info=True, **kwargs)
    note = capsys.readouterr().out
    assert note.startswith("TreeCV cannot run Pipeline")
    assert result["backend"] == "standard"
    return note, result


def test_a_weighted_scaler_falls_back(regression, capsys):
    """The scaler's own sample_weight is not taken: a named fallback (auto), an
    error naming the parameter the backend takes (method='exact')."""
    X, y = regression
    params = {"standardscaler__sample_weight": np.ones(len(y))}
    pipeline = make_pipeline(StandardScaler(), Ridge())
    note, result = _fallback_note(capsys, pipeline, X, y, cv=3, params=params)
    assert "'ridge__sample_weight'" in note
    ref = cross_validate(pipeline, X, y, cv=3, params=params)
    assert_allclose(result["test_score"], ref["test_score"], rtol=0, atol=1e-12)
    with pytest.raises(
        ValueError, match="only the fit parameter 'ridge__sample_weight'"
    ):
        tree_cross_validate(
            pipeline, X, y, cv=3, params=params, method="exact", error_score="raise"
        )


# -- what falls back, and why ----------------------------------------------------------
@pytest.mark.parametrize(
    "pipeline, words",
    [
        (make_pipeline(PCA(3), Ridge()), "its step 'pca' (PCA) is not a scaler"),
        (
            make_pipeline(StandardScaler(), MinMaxScaler(), Ridge()),
            "its step 'minmaxscaler' (MinMaxScaler) follows another scaler",
        ),
        (
            make_pipeline(StandardScaler().set_output(transform="pandas"), Ridge()),
            "outputs a DataFrame",
        ),
    ],
    ids=["pca", "two-scalers", "set-output"],
)
def test_a_step_the_statistics_cannot_fold_is_named(
    regression, pipeline, words, capsys
):
    X, y = regression
    note, _ = _fallback_note(capsys, pipeline, X, y, cv=3)
    assert words in note
    with pytest.raises(TypeError, match="method='exact' cannot run Pipeline"):
        tree_cross_validate(pipeline, X, y, cv=3, method="exact")


def test_sparse_input_falls_back(regression, capsys):
    X, y = regression
    pipeline = make_pipeline(MaxAbsScaler(), Ridge())
    note, _ = _fallback_note(capsys, pipeline, sparse.csr_matrix(X), y, cv=3)
    assert "scales dense X only" in note


@pytest.mark.parametrize(
    "pipeline",
    [
        make_pipeline(StandardScaler(), Ridge(solver="sag")),
        make_pipeline(
            StandardScaler(),
            LinearDiscriminantAnalysis(solver="lsqr", shrinkage="auto"),
        ),
        make_pipeline(StandardScaler(), make_pipeline(Ridge())),
    ],
    ids=["ridge-sag", "lda-auto-shrinkage", "nested"],
)
def test_learners_the_statistics_cannot_express_are_not_taken(
    regression, pipeline, capsys
):
    X, y = regression
    assert not ExactStatisticsBackend.accepts(pipeline)
    note, _ = _fallback_note(capsys, pipeline, X, y > np.median(y), cv=3)
    assert "has no partial_fit method" in note


def test_auto_picks_exact_for_the_scaled_learners():
    for scaler in SCALERS.values():
        for learner in (
            Ridge(),
            RidgeClassifier(),
            GaussianNB(),
            LinearDiscriminantAnalysis(),
        ):
            pipeline = make_pipeline(scaler(), learner)
            with warnings.catch_warnings():
                warnings.simplefilter("error", TreeCVFallbackWarning)
                assert choose_backend(pipeline).name == "exact"


# -- the doors -------------------------------------------------------------------------
def test_search_and_refit_equal_grid_search(regression):
    X, y = regression
    pipeline = make_pipeline(StandardScaler(), Ridge())
    grid = {"ridge__alpha": np.logspace(-3, 3, 7)}
    cache = StatisticsCache()
    with warnings.catch_warnings():
        warnings.simplefilter("error", TreeCVFallbackWarning)
        ours = TreeCVSearchCV(
            pipeline, grid, cv=KFold(5), method=ExactStatisticsBackend(cache=cache)
        ).fit(X, y)
    ref = GridSearchCV(pipeline, grid, cv=KFold(5)).fit(X, y)
    # The statistics once, every further alpha from the cache.
    assert (cache.misses, cache.hits) == (1, len(grid["ridge__alpha"]) - 1)
    assert_allclose(
        ours.cv_results_["mean_test_score"],
        ref.cv_results_["mean_test_score"],
        rtol=0,
        atol=1e-10,
    )
    assert ours.best_params_ == ref.best_params_
    assert type(ours.best_estimator_) is Pipeline
    _assert_same_pipeline(ours.best_estimator_, ref.best_estimator_, rtol=1e-12)
    assert_allclose(ours.predict(X), ref.predict(X), rtol=1e-12)


def test_search_over_the_default_door_reuses_the_statistics(classification):
    """The run core's own store for the exact backend: one per search fit."""
    X, y = classification
    pipeline = make_pipeline(MinMaxScaler(), GaussianNB())
    grid = {"gaussiannb__var_smoothing": [1e-9, 1e-6, 1e-3, 1e-1]}
    cache = default_cache()
    misses, hits = cache.misses, cache.hits
    ours = TreeCVSearchCV(pipeline, grid, cv=4).fit(X, y)
    assert (cache.misses - misses, cache.hits - hits) == (1, 3)
    ref = GridSearchCV(pipeline, grid, cv=4).fit(X, y)
    assert_allclose(
        ours.cv_results_["mean_test_score"],
        ref.cv_results_["mean_test_score"],
        atol=1e-12,
    )
    assert ours.best_params_ == ref.best_params_


def test_optuna_trials_share_the_scaled_statistics(regression):
    X, y = regression
    cache = StatisticsCache()
    objective = TreeCVObjective(
        make_pipeline(StandardScaler(), Ridge()),
        {"ridge__alpha": optuna.distributions.FloatDistribution(1e-3, 1e3, log=True)},
        X,
        y,
        cv=5,
        warm_start_store=cache,
    )
    study = optuna.create_study(
        direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", TreeCVFallbackWarning)
        study.optimize(objective, n_trials=4)
    assert (cache.misses, cache.hits) == (1, 3)
    trial = study.trials[2]
    assert trial.user_attrs["cv"]["backend"] == "exact"
    ref = cross_validate(
        make_pipeline(StandardScaler(), Ridge(alpha=trial.params["ridge__alpha"])),
        X,
        y,
        cv=KFold(5),
    )
    assert_allclose(trial.value, np.mean(ref["test_score"]), rtol=0, atol=1e-10)


def test_the_statistics_key_holds_the_scaler(regression):
    X, y = regression
    cache = StatisticsCache()
    backend = ExactStatisticsBackend(cache=cache)
    names = ("standard", "minmax", "maxabs", "standard-no-mean")
    for name in names:
        pipeline = make_pipeline(SCALERS[name](), Ridge(alpha=1e-3))
        ours = tree_cross_validate(pipeline, X, y, cv=3, method=backend)
        ref = cross_validate(pipeline, X, y, cv=3)
        assert_allclose(ours["test_score"], ref["test_score"], rtol=0, atol=1e-10)
    tree_cross_validate(Ridge(alpha=1e-3), X, y, cv=3, method=backend)
    assert (cache.misses, cache.hits) == (len(names) + 1, 0)
    # clip changes no statistic (a hit); the held-out rows are clipped.
    pipeline = make_pipeline(
        MinMaxScaler(feature_range=(-1, 2), clip=True), Ridge(alpha=1e-3)
    )
    clipped = tree_cross_validate(pipeline, X, y, cv=3, method=backend)
    assert cache.hits == 1
    ref = cross_validate(pipeline, X, y, cv=3)
    assert_allclose(clipped["test_score"], ref["test_score"], rtol=0, atol=1e-10)


def test_routed_sample_weight_falls_back(regression, capsys):
    """With metadata routing a pipeline's fit gets ``sample_weight`` by its
    plain name: the exact backend reads step-prefixed names only, and says so."""
    import sklearn

    X, y = regression
    weights = np.random.default_rng(5).uniform(0.5, 2.0, len(y))
    with sklearn.config_context(enable_metadata_routing=True):
        pipeline = make_pipeline(
            StandardScaler().set_fit_request(sample_weight=False),
            Ridge()
            .set_fit_request(sample_weight=True)
            .set_score_request(sample_weight=True),
        )
        params = {"sample_weight": weights}
        note, ours = _fallback_note(capsys, pipeline, X, y, cv=3, params=params)
        assert "'ridge__sample_weight'" in note
        ref = cross_validate(pipeline, X, y, cv=3, params=params)
    assert np.all(np.isfinite(ref["test_score"]))
    assert_allclose(ours["test_score"], ref["test_score"], rtol=0, atol=1e-12)
