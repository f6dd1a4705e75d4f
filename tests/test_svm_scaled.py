"""Alpha seeding under per-fold scaling: ``Pipeline([scaler, SVC])``.

Every fold's model must be LIBSVM's on that fold's own scaled rows: the same
fold models (to the solver's tolerance) and scores as scikit-learn's
``cross_validate`` / ``GridSearchCV`` of the same pipeline.
"""

import re
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_wine
from sklearn.decomposition import PCA
from sklearn.model_selection import (
    GridSearchCV,
    KFold,
    ShuffleSplit,
    StratifiedKFold,
    cross_validate,
)
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import (
    MaxAbsScaler,
    MinMaxScaler,
    PolynomialFeatures,
    RobustScaler,
    StandardScaler,
)
from sklearn.svm import SVC

from sklearn_ext import TreeCVSearchCV, tree_cross_validate
from sklearn_ext.model_selection import TreeCVFallbackWarning
from sklearn_ext.svm import AlphaSeededSVC, AlphaSeedingBackend, WarmStartStore

SCALERS = [StandardScaler, MinMaxScaler, MaxAbsScaler]


@pytest.fixture(scope="module")
def cancer():
    return load_breast_cancer(return_X_y=True)


def _alphas(svc, n_train):
    """Each row's signed dual coefficient (0 off the support) of a binary SVC."""
    dense = np.zeros(n_train)
    dense[svc.support_] = svc.dual_coef_[0]
    return dense


def _run_both(pipe, X, y, cv, **kwargs):
    ours = tree_cross_validate(
        pipe, X, y, cv=cv, return_estimator=True, return_run_info=True, **kwargs
    )
    ref = cross_validate(pipe, X, y, cv=cv, return_estimator=True)
    return ours, ref


@pytest.mark.parametrize("scaler", SCALERS)
@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly"])
@pytest.mark.parametrize(
    "cv",
    [
        StratifiedKFold(5, shuffle=True, random_state=0),
        KFold(4),
        KFold(6, shuffle=True, random_state=3),
    ],
    ids=["stratified-shuffled", "kfold", "kfold-shuffled"],
)
def test_each_fold_is_libsvm_on_its_own_scaled_rows(cancer, scaler, kernel, cv):
    X, y = cancer
    pipe = make_pipeline(scaler(), SVC(kernel=kernel, C=1.0, tol=1e-7))
    ours, ref = _run_both(pipe, X, y, cv)
    assert ours["backend"] == "alpha_seeding"
    assert_allclose(ours["test_score"], ref["test_score"], rtol=0, atol=0)
    for split, (train, test) in enumerate(cv.split(X, y)):
        mine, theirs = ours["estimator"][split], ref["estimator"][split]
        # The fold's scaler is the one its pipeline fitted on its rows.
        for name in ("mean_", "scale_", "min_", "max_abs_"):
            if hasattr(theirs[0], name):
                assert_allclose(getattr(mine[0], name), getattr(theirs[0], name))
        assert mine[-1]._gamma == theirs[-1]._gamma
        # Dual coefficients by training row agree to the solver's tolerance.
        assert_allclose(
            _alphas(mine[-1], train.shape[0]),
            _alphas(theirs[-1], train.shape[0]),
            atol=2e-4,
        )
        assert_allclose(
            mine.decision_function(X[test]),
            theirs.decision_function(X[test]),
            atol=5e-4,
        )
        assert np.array_equal(mine.predict(X[test]), theirs.predict(X[test]))


def test_fold_models_are_ordinary_fitted_pipelines(cancer):
    X, y = cancer
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    pipe = Pipeline([("scale", StandardScaler()), ("svm", SVC(C=2.0))])
    ours, ref = _run_both(pipe, X, y, cv)
    for split, (train, test) in enumerate(cv.split(X, y)):
        mine, theirs = ours["estimator"][split], ref["estimator"][split]
        assert isinstance(mine, Pipeline) and [n for n, _ in mine.steps] == [
            "scale",
            "svm",
        ]
        svm, svc = mine[-1], theirs[-1]
        # support_ indexes the fold's training rows, as SVC's does.
        assert np.array_equal(svm.support_, svc.support_)
        assert np.array_equal(svm.n_support_, svc.n_support_)
        assert_allclose(svm.support_vectors_, mine[0].transform(X[train][svm.support_]))
        assert_allclose(svm.dual_coef_, svc.dual_coef_, atol=2e-2)
        assert_allclose(svm.intercept_, svc.intercept_, atol=2e-2)
        assert mine.score(X[test], y[test]) == theirs.score(X[test], y[test])


def test_multiclass_and_a_scorer_other_than_accuracy():
    X, y = load_wine(return_X_y=True)
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    pipe = make_pipeline(MinMaxScaler(), SVC(C=3.0, tol=1e-6))
    ours, ref = _run_both(pipe, X, y, cv, scoring="balanced_accuracy")
    ref = cross_validate(pipe, X, y, cv=cv, scoring="balanced_accuracy")
    assert ours["backend"] == "alpha_seeding"
    assert_allclose(ours["test_score"], ref["test_score"], atol=1e-12)


def test_alpha_seeded_svc_step_and_probability(cancer):
    X, y = cancer
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    svm = AlphaSeededSVC(probability=True, random_state=0, tol=1e-6)
    pipe = make_pipeline(StandardScaler(), svm)
    ours = tree_cross_validate(
        pipe,
        X,
        y,
        cv=cv,
        scoring="neg_log_loss",
        return_estimator=True,
        return_run_info=True,
    )
    assert ours["backend"] == "alpha_seeding"
    for split, (train, test) in enumerate(cv.split(X, y)):
        # Each fold's sigmoids are those of a fit on the fold's scaled rows.
        fold = make_pipeline(StandardScaler(), clone(svm)).fit(X[train], y[train])
        mine = ours["estimator"][split]
        assert_allclose(mine[-1].probA_, fold[-1].probA_, rtol=1e-3)
        assert_allclose(
            mine.predict_proba(X[test]), fold.predict_proba(X[test]), atol=1e-3
        )


def test_one_chain_and_two_chains_agree(cancer, chains_on_small_data):
    X, y = cancer
    pipe = make_pipeline(StandardScaler(), SVC(C=4.0, tol=1e-6))
    cv = StratifiedKFold(8, shuffle=True, random_state=0)
    one = tree_cross_validate(pipe, X, y, cv=cv, n_jobs=1, return_run_info=True)
    two = tree_cross_validate(pipe, X, y, cv=cv, n_jobs=2, return_run_info=True)
    assert_allclose(one["test_score"], two["test_score"])
    # Both chains' first folds start cold, later folds from their predecessor.
    assert one["n_iter"].sum() != two["n_iter"].sum()


def test_seeding_saves_iterations_and_kernel_time_is_reported(cancer):
    X, y = cancer
    pipe = make_pipeline(StandardScaler(), SVC(C=10.0))
    cv = StratifiedKFold(10, shuffle=True, random_state=0)
    runs = {
        seeding: tree_cross_validate(
            pipe,
            X,
            y,
            cv=cv,
            method=AlphaSeedingBackend(seeding=seeding, warm_start_store=False),
            return_run_info=True,
        )
        for seeding in ("none", "sir", "mir")
    }
    assert_allclose(runs["sir"]["test_score"], runs["none"]["test_score"])
    assert_allclose(runs["mir"]["test_score"], runs["none"]["test_score"])
    assert runs["sir"]["n_iter"].sum() < runs["none"]["n_iter"].sum()
    kernel = runs["sir"]["kernel_time"]
    assert kernel.shape == (10,) and np.all(kernel > 0)
    assert np.all(runs["sir"]["fit_time"] >= kernel)


def test_search_with_C_grid_equals_grid_search(cancer):
    X, y = cancer
    pipe = make_pipeline(StandardScaler(), SVC())
    grid = {"svc__C": [0.1, 1.0, 10.0, 100.0], "svc__gamma": ["scale", 0.01]}
    cv = StratifiedKFold(5, shuffle=True, random_state=1)
    ours = TreeCVSearchCV(pipe, grid, cv=cv, return_run_info=True).fit(X, y)
    ref = GridSearchCV(pipe, grid, cv=cv).fit(X, y)
    # The alpha-seeding backend's extras: every candidate ran on it.
    assert np.all(ours.cv_results_["kernel_time"] > 0)
    assert_allclose(
        ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"]
    )
    assert ours.best_params_ == ref.best_params_
    # Cross-C warm starts: later C values of each gamma start from the store,
    # on the folds' kept kernels.
    assert ours.cv_results_["warm_start_hits"].sum() > 0
    first = ours.cv_results_["kernel_time"][:2].sum()
    assert ours.cv_results_["kernel_time"][2:].max() < first / 4
    # The refit is an ordinary fitted pipeline, the same model as GridSearchCV's.
    best, theirs = ours.best_estimator_, ref.best_estimator_
    assert isinstance(best, Pipeline) and type(best[-1]) is SVC
    assert np.array_equal(best.predict(X), theirs.predict(X))


def test_warm_start_store_is_not_stale_across_scalers(cancer):
    X, y = cancer
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    store = WarmStartStore()

    def run(estimator):
        return tree_cross_validate(
            estimator,
            X,
            y,
            cv=cv,
            method=AlphaSeedingBackend(warm_start_store=store),
            return_run_info=True,
        )

    # A bare run first: same data, rows, kernel and C as the scaled runs.
    assert run(SVC(C=1.0))["warm_start_hits"].sum() == 0
    for scaler in SCALERS:
        pipe = make_pipeline(scaler(), SVC(C=1.0))
        ref = cross_validate(pipe, X, y, cv=cv)
        first, again = run(pipe), run(pipe)
        # Nothing of the bare run's nor of another scaler's is reused...
        assert first["warm_start_hits"].sum() == 0
        assert_allclose(first["test_score"], ref["test_score"])
        # ...while the same scaler's own solutions are skipped to exactly.
        assert again["warm_start_skips"].sum() == 5
        assert_allclose(again["test_score"], ref["test_score"])
    # Another scaler parameter is another scaling.
    other = run(make_pipeline(MinMaxScaler(feature_range=(-1, 1)), SVC(C=1.0)))
    assert other["warm_start_hits"].sum() == 0


def test_other_steps_fall_back_naming_the_step(cancer, capsys):
    # An SVC has no partial_fit: every backend scores its fit, so the fallback
    # is the note printed at verbose > 0 (and the recorded backend), no warning.
    X, y = cancer
    cases = [
        (make_pipeline(PCA(5), SVC()), "step 'pca' \\(PCA\\) is not a scaler"),
        (
            make_pipeline(StandardScaler(), PolynomialFeatures(), SVC()),
            "step 'polynomialfeatures'",
        ),
        (make_pipeline(RobustScaler(), SVC()), "step 'robustscaler'"),
        (make_pipeline(StandardScaler(), SVC(kernel="sigmoid")), "sigmoid kernel"),
    ]
    for pipe, reason in cases:
        capsys.readouterr()
        with warnings.catch_warnings():
            warnings.simplefilter("error", TreeCVFallbackWarning)
            result = tree_cross_validate(
                pipe, X, y, cv=3, return_run_info=True, verbose=1
            )
        assert re.search(reason, capsys.readouterr().out)
        assert result["backend"] == "standard"
        with pytest.raises(TypeError, match=reason):
            tree_cross_validate(pipe, X, y, cv=3, method="alpha_seeding")


def test_passthrough_and_chained_scalers(cancer):
    X, y = cancer
    cv = KFold(5, shuffle=True, random_state=0)
    pipe = Pipeline(
        [
            ("first", MinMaxScaler()),
            ("skip", "passthrough"),
            ("second", StandardScaler()),
            ("svc", SVC(tol=1e-6)),
        ]
    )
    ours, ref = _run_both(pipe, X, y, cv)
    assert ours["backend"] == "alpha_seeding"
    assert_allclose(ours["test_score"], ref["test_score"])
    for mine, theirs in zip(ours["estimator"], ref["estimator"], strict=True):
        assert_allclose(mine[2].mean_, theirs[2].mean_)


def test_shuffle_split_still_falls_back(cancer):
    X, y = cancer
    pipe = make_pipeline(StandardScaler(), SVC())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TreeCVFallbackWarning)
        result = tree_cross_validate(
            pipe, X, y, cv=ShuffleSplit(3, random_state=0), return_run_info=True
        )
    assert result["backend"] == "standard"


def test_optuna_objective_runs_the_scaled_pipeline(cancer):
    optuna = pytest.importorskip("optuna")
    from optuna_treecv import TreeCVObjective

    X, y = cancer
    pipe = make_pipeline(StandardScaler(), SVC())
    space = {"svc__C": optuna.distributions.FloatDistribution(0.1, 100, log=True)}
    objective = TreeCVObjective(pipe, space, X, y, cv=5, random_state=0)
    study = optuna.create_study(direction="maximize")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study.optimize(objective, n_trials=3)
    trial = study.best_trial
    assert trial.user_attrs["cv"]["backend"] == "alpha_seeding"
    C = trial.params["svc__C"]
    folds = objective.fold_plan_
    reference = cross_validate(
        make_pipeline(StandardScaler(), SVC(C=C)),
        X,
        y,
        cv=[(folds.fit_indices(s), folds.test_indices(s)) for s in range(5)],
    )
    assert trial.value == pytest.approx(reference["test_score"].mean(), abs=1e-12)


@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly", "sigmoid"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_kernel_built_from_its_upper_half_is_exact_and_symmetric(kernel, dtype):
    # Each fold builds its own kernel: half the GEMM, the rest mirrored.
    from sklearn_ext.svm import KernelStore
    from sklearn_ext.svm._kernel_store import kernel_matrix

    X = np.random.RandomState(0).normal(size=(2500, 6))  # three row blocks
    store = KernelStore(X, kernel, 0.1, 3, 0.5, 1000, dtype=dtype)
    K = store.columns.dense_matrix
    K = store.columns.dense32_matrix if K is None else K
    assert np.array_equal(K, K.T)
    reference = kernel_matrix(X, X, kernel, 0.1, 3, 0.5)
    tolerance = 1e-12 if dtype == np.float64 else 1e-6
    assert_allclose(K, reference, rtol=tolerance, atol=tolerance)
