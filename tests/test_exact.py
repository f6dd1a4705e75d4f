"""The exact statistics backend: equal to cross_validate, real fold models, cache."""

from __future__ import annotations

import copy
import subprocess
import sys
import warnings

import numpy as np
import optuna
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy import sparse
from sklearn.base import clone
from sklearn.datasets import load_digits, make_classification, make_regression
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.linear_model import LinearRegression, Ridge, RidgeClassifier
from sklearn.model_selection import (
    GridSearchCV,
    KFold,
    LeaveOneOut,
    StratifiedKFold,
    cross_validate,
)
from sklearn.naive_bayes import (
    BernoulliNB,
    CategoricalNB,
    ComplementNB,
    GaussianNB,
    MultinomialNB,
)
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor

from optuna_treecv import TreeCVObjective
from sklearn_ext import TreeCVSearchCV, tree_cross_validate
from sklearn_ext.model_selection import (
    ExactStatisticsBackend,
    FoldPlan,
    StatisticsCache,
    TreeCVFallbackWarning,
    choose_backend,
    exact_learners,
)

CVS = {
    "k2": lambda: KFold(2, shuffle=True, random_state=0),
    "k10": lambda: KFold(10, shuffle=True, random_state=0),
    "loo": LeaveOneOut,
}
# Leave-one-out holds out one row, whose R^2 is undefined (nan here and in
# cross_validate alike, with scikit-learn's warning for every fold).
ONE_ROW_R2 = pytest.mark.filterwarnings(
    "ignore:R\\^2 score is not well-defined:sklearn.exceptions.UndefinedMetricWarning"
)


@pytest.fixture(scope="module")
def counts():
    X, y = load_digits(n_class=4, return_X_y=True)
    return X[:60], y[:60]


@pytest.fixture(scope="module")
def gaussian():
    X, y = make_classification(
        n_samples=60, n_features=6, n_informative=4, n_classes=3, random_state=0
    )
    return X + 3.0, y


@pytest.fixture(scope="module")
def regression():
    X, y = make_regression(
        n_samples=60, n_features=5, n_targets=2, noise=5.0, random_state=0
    )
    return X + 2.0, y


def _weights(n):
    return np.random.default_rng(0).uniform(0.5, 2.0, n)


def _fitted_attributes(model) -> dict:
    return {
        name: value
        for name, value in vars(model).items()
        if name.endswith("_") and not name.startswith("_")
    }


def _assert_same_model(ours, ref, atol):
    """The fold model has the attributes, shapes and values of ``fit``'s."""
    assert type(ours) is type(ref)
    a, b = _fitted_attributes(ours), _fitted_attributes(ref)
    assert set(a) == set(b)
    for name, expected in b.items():
        value = a[name]
        if isinstance(expected, list):
            assert len(value) == len(expected)
            for p, q in zip(value, expected, strict=True):
                assert_allclose(p, q, rtol=0, atol=atol)
        elif expected is None or isinstance(expected, str):
            assert value == expected, name
        else:
            assert np.shape(value) == np.shape(expected), name
            assert_allclose(value, expected, rtol=0, atol=atol, err_msg=name)


def _compare(estimator, X, y, cv, *, weights=None, X_ref=None, exact=True, atol=1e-10):
    if cv is LeaveOneOut:  # Few rows: scikit-learn's reference fits one per row.
        X, y = X[:24], y[:24]
        X_ref = None if X_ref is None else X_ref[:24]
        weights = None if weights is None else weights[:24]
    params = None if weights is None else {"sample_weight": weights}
    ours = tree_cross_validate(
        estimator,
        X,
        y,
        cv=cv(),
        return_estimator=True,
        fit_params=params,
        return_run_info=True,
    )
    ref = cross_validate(
        estimator,
        X if X_ref is None else X_ref,
        y,
        cv=cv(),
        return_estimator=True,
        params=params,
    )
    assert ours["backend"] == "exact"
    if exact:
        assert_array_equal(ours["test_score"], ref["test_score"])
    else:
        assert_allclose(ours["test_score"], ref["test_score"], rtol=0, atol=atol)
    for mine, theirs in zip(ours["estimator"][:3], ref["estimator"][:3], strict=True):
        if sparse.issparse(X) and X_ref is not None:
            # Fit on sparse X sets no rank_ and singular_ (LinearRegression).
            for name in ("rank_", "singular_"):
                if hasattr(theirs, name):
                    delattr(theirs, name)
        _assert_same_model(mine, theirs, atol=1e-9)
    return ours


# -- equality with cross_validate ---------------------------------------------------
@pytest.mark.parametrize("cv", list(CVS))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize(
    "estimator",
    [MultinomialNB(alpha=0.5), ComplementNB(), BernoulliNB(binarize=6.0)],
    ids=["multinomial", "complement", "bernoulli"],
)
def test_discrete_naive_bayes_equals_cross_validate(
    counts, estimator, dense, weighted, cv
):
    """Integer counts add up exactly: the scores are bit-equal."""
    X, y = counts
    weights = _weights(len(y)) if weighted else None
    _compare(
        estimator, X if dense else sparse.csr_matrix(X), y, CVS[cv], weights=weights
    )


@pytest.mark.parametrize("cv", list(CVS))
@pytest.mark.parametrize("weighted", [False, True])
def test_gaussian_nb_equals_cross_validate(gaussian, weighted, cv):
    X, y = gaussian
    weights = _weights(len(y)) if weighted else None
    _compare(GaussianNB(var_smoothing=1e-3), X, y, CVS[cv], weights=weights)


@pytest.mark.parametrize("cv", list(CVS))
@pytest.mark.parametrize("weighted", [False, True])
def test_categorical_nb_equals_cross_validate(counts, weighted, cv):
    X, y = counts
    X = np.minimum(X, 7).astype(int) // 2
    weights = _weights(len(y)) if weighted else None
    _compare(CategoricalNB(min_categories=4), X, y, CVS[cv], weights=weights)


def test_categorical_nb_fold_categories_follow_the_training_rows():
    """``n_categories_`` is the largest category of the fold's own rows, plus one."""
    X = np.array([[0], [1], [2], [3], [1], [0], [2], [1]])
    y = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    # Unseen categories make predict fail (in scikit-learn too): no scoring here.
    ours = tree_cross_validate(
        CategoricalNB(),
        X,
        y,
        cv=KFold(4),
        scoring=lambda model, X, y: 0.0,
        return_estimator=True,
        return_run_info=True,
    )
    for model, (train, _) in zip(ours["estimator"], KFold(4).split(X), strict=True):
        _assert_same_model(model, CategoricalNB().fit(X[train], y[train]), atol=0)
    assert [m.n_categories_[0] for m in ours["estimator"]] == [4, 3, 4, 4]


@pytest.mark.parametrize("cv", list(CVS))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize(
    "estimator",
    [Ridge(alpha=3.0), LinearRegression(), Ridge(alpha=0.5, fit_intercept=False)],
    ids=["ridge", "linear", "ridge-no-intercept"],
)
@ONE_ROW_R2
def test_least_squares_equals_cross_validate(
    regression, estimator, dense, weighted, cv
):
    """Within 1e-10; on sparse X against fit on the dense X (the exact solution:
    scikit-learn's own sparse fit stops an iterative solver at ``tol``)."""
    X, Y = regression
    weights = _weights(len(Y)) if weighted else None
    for y in (Y[:, 0], Y):  # one target, two targets
        _compare(
            estimator,
            X if dense else sparse.csr_matrix(X),
            y,
            CVS[cv],
            weights=weights,
            X_ref=X,
            exact=False,
        )


def test_sparse_ridge_without_intercept_equals_its_sparse_fit(regression):
    X, Y = regression
    estimator = Ridge(alpha=2.0, fit_intercept=False, solver="cholesky")
    _compare(estimator, sparse.csr_matrix(X), Y[:, 0], CVS["k10"], exact=False)


@pytest.mark.parametrize("cv", list(CVS))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_ridge_classifier_equals_cross_validate(n_classes, dense, weighted, cv):
    X, y = make_classification(
        n_samples=60,
        n_features=6,
        n_informative=4,
        n_classes=n_classes,
        random_state=1,
    )
    weights = _weights(len(y)) if weighted else None
    estimator = RidgeClassifier(alpha=2.0, class_weight={0: 2.0})
    _compare(
        estimator,
        X if dense else sparse.csr_matrix(X),
        y,
        CVS[cv],
        weights=weights,
        X_ref=X,
        exact=False,
    )


def test_ridge_alpha_per_target(regression):
    X, Y = regression
    _compare(Ridge(alpha=[0.1, 10.0]), X, Y, CVS["k10"], exact=False)


def test_ridge_classifier_fold_missing_a_class_is_fit():
    """A fold whose training rows lose a class gets the model fit would give."""
    X = np.arange(24, dtype=float).reshape(12, 2) % 7
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2])
    cv = lambda: KFold(3)  # noqa: E731  Fold 2 holds out all of class 2.
    _compare(RidgeClassifier(), X, y, cv, exact=False)


@pytest.mark.parametrize("cv", list(CVS))
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize(
    "params",
    [
        dict(solver="lsqr"),
        dict(solver="lsqr", shrinkage=0.3),
        dict(solver="eigen"),
        dict(solver="eigen", shrinkage=0.2, priors=None),
    ],
    ids=["lsqr", "lsqr-shrunk", "eigen", "eigen-shrunk"],
)
def test_linear_discriminant_equals_cross_validate(params, n_classes, cv):
    """Scores within 1e-10. The eigen solver's ``scalings_`` beyond the first
    ``n_classes - 1`` columns span the null space of the between-class scatter,
    where any basis is a solution: only those columns may differ from fit's."""
    X, y = make_classification(
        n_samples=60,
        n_features=5,
        n_informative=4,
        n_redundant=0,
        n_classes=n_classes,
        random_state=2,
    )
    X = X + 4.0
    estimator = LinearDiscriminantAnalysis(**params)
    folds = CVS[cv]
    if folds is LeaveOneOut:
        X, y = X[:24], y[:24]
    ours = tree_cross_validate(
        estimator, X, y, cv=folds(), return_estimator=True, return_run_info=True
    )
    ref = cross_validate(estimator, X, y, cv=folds(), return_estimator=True)
    assert ours["backend"] == "exact"
    assert_allclose(ours["test_score"], ref["test_score"], rtol=0, atol=1e-10)
    for mine, theirs in zip(ours["estimator"][:3], ref["estimator"][:3], strict=True):
        if hasattr(theirs, "scalings_"):
            used = theirs._max_components
            assert_allclose(
                mine.scalings_[:, :used], theirs.scalings_[:, :used], atol=1e-9
            )
            assert_allclose(mine.transform(X), theirs.transform(X), atol=1e-9)
            mine, theirs = copy.copy(mine), copy.copy(theirs)
            del mine.scalings_, theirs.scalings_
        _assert_same_model(mine, theirs, atol=1e-9)


@pytest.mark.parametrize("cv", list(CVS))
@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize(
    "estimator",
    [
        KNeighborsClassifier(5),
        KNeighborsClassifier(4, weights="distance", p=1),
        KNeighborsRegressor(6),
        KNeighborsRegressor(3, weights="distance", algorithm="kd_tree"),
    ],
    ids=["classifier", "classifier-distance", "regressor", "regressor-distance"],
)
@ONE_ROW_R2
def test_nearest_neighbors_equal_cross_validate(estimator, dense, cv):
    """Continuous random data (no two distances equal): bit-equal scores."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 4))
    if isinstance(estimator, KNeighborsClassifier):
        y = (X[:, 0] + 0.5 * rng.normal(size=60) > 0).astype(int) + (X[:, 1] > 1)
    else:
        y = X @ [1.0, -2.0, 0.5, 0.0] + rng.normal(size=60)
    if not dense:
        if getattr(estimator, "algorithm", "auto") == "kd_tree":
            pytest.skip("KDTree takes no sparse input (in scikit-learn too)")
        X = sparse.csr_matrix(X)
    folds = CVS[cv]
    if folds is LeaveOneOut:
        X, y = X[:24], y[:24]
    ours = tree_cross_validate(
        estimator, X, y, cv=folds(), return_estimator=True, return_run_info=True
    )
    ref = cross_validate(estimator, X, y, cv=folds(), return_estimator=True)
    assert ours["backend"] == "exact"
    assert_array_equal(ours["test_score"], ref["test_score"])
    for mine, theirs in zip(ours["estimator"][:3], ref["estimator"][:3], strict=True):
        assert_array_equal(mine.predict(X[:7]), theirs.predict(X[:7]))
        assert mine.n_samples_fit_ == theirs.n_samples_fit_


def test_one_neighbour_search_serves_every_n_neighbors():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(80, 3))
    y = (X[:, 0] > 0).astype(int)
    cache = StatisticsCache()
    backend = ExactStatisticsBackend(cache=cache)
    for k in range(1, 40, 3):
        for weights in ("uniform", "distance"):
            est = KNeighborsClassifier(k, weights=weights)
            ours = tree_cross_validate(
                est, X, y, cv=KFold(5), method=backend, return_run_info=True
            )
            ref = cross_validate(est, X, y, cv=KFold(5))
            assert_array_equal(ours["test_score"], ref["test_score"])
    # Asking for more neighbours than were kept extends the same entry.
    assert (cache.misses, len(cache)) == (1, 1)
    with pytest.raises(ValueError, match="Expected n_neighbors <= n_samples_fit"):
        tree_cross_validate(
            KNeighborsClassifier(70),
            X,
            y,
            cv=KFold(5),
            method=backend,
            return_run_info=True,
        )
    with pytest.raises(ValueError, match="takes no sample_weight"):
        tree_cross_validate(
            KNeighborsClassifier(),
            X,
            y,
            cv=KFold(5),
            fit_params={"sample_weight": np.ones(80)},
            method=ExactStatisticsBackend(cache=StatisticsCache()),
            return_run_info=True,
        )


def test_clustered_chunks_ask_for_more_neighbours():
    """Unshuffled folds of sorted data: a row's nearest rows are mostly in its
    own chunk, so the search widens until each row has enough outside it."""
    X = np.sort(np.random.default_rng(5).normal(size=(50, 1)), axis=0)
    y = X[:, 0] + np.random.default_rng(6).normal(scale=0.1, size=50)
    est = KNeighborsRegressor(8)
    ours = tree_cross_validate(
        est, X, y, cv=KFold(3), scoring="r2", return_run_info=True
    )
    ref = cross_validate(est, X, y, cv=KFold(3), scoring="r2")
    assert_array_equal(ours["test_score"], ref["test_score"])


# -- the fold models ----------------------------------------------------------------
def test_fold_models_are_fits_on_the_training_rows(gaussian):
    X, y = gaussian
    result = tree_cross_validate(
        GaussianNB(),
        X,
        y,
        cv=StratifiedKFold(5),
        return_estimator=True,
        return_run_info=True,
    )
    for model, (train, _) in zip(
        result["estimator"], StratifiedKFold(5).split(X, y), strict=True
    ):
        _assert_same_model(model, GaussianNB().fit(X[train], y[train]), atol=1e-12)
        assert_array_equal(
            model.predict_proba(X[:5]).argmax(axis=1),
            GaussianNB().fit(X[train], y[train]).predict_proba(X[:5]).argmax(axis=1),
        )


def test_what_is_scored_is_what_is_returned(regression):
    """The refit of a search is ``fit`` on all rows: the same statistics model."""
    X, Y = regression
    y = Y[:, 0]
    grid = {"alpha": [0.01, 1.0, 100.0]}
    search = TreeCVSearchCV(Ridge(), grid, cv=5).fit(X, y)
    reference = GridSearchCV(Ridge(), grid, cv=KFold(5)).fit(X, y)
    assert_allclose(
        search.cv_results_["mean_test_score"],
        reference.cv_results_["mean_test_score"],
        rtol=0,
        atol=1e-10,
    )
    assert search.best_params_ == reference.best_params_
    refit = clone(Ridge()).set_params(**search.best_params_).fit(X, y)
    assert_array_equal(search.best_estimator_.coef_, refit.coef_)
    # The backend's own model on all rows (a two-chunk plan's totals) agrees.
    exact = tree_cross_validate(
        Ridge(**search.best_params_),
        X,
        y,
        cv=KFold(2),
        return_estimator=True,
        return_run_info=True,
    )
    first = exact["estimator"][0]
    train = np.arange(len(y) // 2, len(y))
    assert_allclose(
        first.coef_,
        Ridge(**search.best_params_).fit(X[train], y[train]).coef_,
        atol=1e-10,
    )


# -- choice and errors --------------------------------------------------------------
@pytest.mark.parametrize(
    "estimator",
    [
        MultinomialNB(),
        ComplementNB(),
        BernoulliNB(),
        CategoricalNB(),
        GaussianNB(),
        Ridge(),
        RidgeClassifier(),
        LinearRegression(),
        LinearDiscriminantAnalysis(solver="lsqr", shrinkage=0.1),
        LinearDiscriminantAnalysis(),  # the svd solver
        KNeighborsClassifier(),
        KNeighborsRegressor(weights="distance"),
    ],
)
def test_auto_picks_exact(estimator):
    assert choose_backend(estimator).name == "exact"
    assert choose_backend(estimator, "exact").name == "exact"
    name = type(estimator).__name__
    assert any(learner.endswith(name) for learner in exact_learners())


@pytest.mark.parametrize(
    "estimator",
    [
        Ridge(solver="sag"),
        Ridge(positive=True),
        LinearRegression(positive=True),
        RidgeClassifier(class_weight="balanced"),
        LinearDiscriminantAnalysis(shrinkage=0.2),  # svd: fit refuses shrinkage
        LinearDiscriminantAnalysis(solver="lsqr", shrinkage="auto"),
        KNeighborsClassifier(weights=lambda d: d),
    ],
)
def test_parameters_the_statistics_cannot_express_fall_back(estimator):
    # Without partial_fit, every backend scores the learner's fit: standard CV
    # runs it without a warning (the run records backend="standard").
    with warnings.catch_warnings():
        warnings.simplefilter("error", TreeCVFallbackWarning)
        assert choose_backend(estimator).name == "standard"
    with pytest.raises(TypeError, match="method='exact' cannot run"):
        choose_backend(estimator, "exact")


def test_subclasses_are_not_taken():
    """A subclass may change fit: only the exact scikit-learn classes run here."""

    class MyNB(MultinomialNB):
        pass

    assert not ExactStatisticsBackend.accepts(MyNB())


def test_errors_name_what_is_wrong(counts, gaussian):
    X, y = counts
    with pytest.raises(ValueError, match="only the fit parameter 'sample_weight'"):
        tree_cross_validate(
            MultinomialNB(),
            X,
            y,
            fit_params={"other": 1},
            method="exact",
            error_score="raise",
        )
    # method="auto" falls back, naming the parameter; fit then refuses it.
    with pytest.warns(TreeCVFallbackWarning, match="got \\['other'\\]"):
        with pytest.raises(ValueError, match="All the 5 fits failed"):
            tree_cross_validate(MultinomialNB(), X, y, fit_params={"other": 1})
    with pytest.raises(ValueError, match="Negative values"):
        tree_cross_validate(MultinomialNB(), -X, y, return_run_info=True)
    with pytest.raises(ValueError, match="alpha"):
        tree_cross_validate(MultinomialNB(alpha=-1.0), X, y, return_run_info=True)
    with pytest.raises(TypeError, match="StatisticsCache"):
        ExactStatisticsBackend(cache={})
    with pytest.raises(ValueError, match="'max_bytes' parameter of StatisticsCache"):
        StatisticsCache(max_bytes=-1)


@pytest.mark.parametrize(
    "estimator",
    [GaussianNB(), CategoricalNB(), LinearDiscriminantAnalysis(solver="lsqr")],
    ids=lambda estimator: type(estimator).__name__,
)
def test_sparse_X_is_refused_in_scikit_learns_words(counts, estimator):
    """One check for every dense-only learner; the message is the one its own fit
    raises (check_array's), naming the learner."""
    X, y = counts
    X = sparse.csr_matrix(X)
    with pytest.raises(TypeError) as theirs:
        clone(estimator).fit(X, y)
    ours = (
        "Sparse data was passed for X, but dense data is required by "
        f"{type(estimator).__name__}. Use '.toarray()' to convert to a dense "
        "numpy array."
    )
    assert str(theirs.value).startswith(ours.split(" by ")[0])
    assert ExactStatisticsBackend.accepts(estimator)
    # Every fold's fit fails: reported as cross_validate reports it.
    with pytest.raises(ValueError, match="All the 3 fits failed") as error:
        tree_cross_validate(estimator, X, y, cv=3, return_run_info=True)
    assert ours in str(error.value)


def test_model_selection_imports_no_learner_module():
    code = (
        "import sys, sklearn_ext.model_selection; "
        "names = ('sklearn.naive_bayes', 'sklearn.discriminant_analysis', "
        "'sklearn_ext.linear_model', 'sklearn_ext.svm'); "
        "assert not [n for n in names if n in sys.modules]"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- the statistics cache -----------------------------------------------------------
def test_a_grid_computes_the_statistics_once(regression):
    X, Y = regression
    cache = StatisticsCache()
    backend = ExactStatisticsBackend(cache=cache)
    results = [
        tree_cross_validate(
            Ridge(alpha=alpha), X, Y, cv=5, method=backend, return_run_info=True
        )
        for alpha in (0.1, 1.0, 10.0)
    ]
    assert (cache.misses, cache.hits, len(cache)) == (1, 2, 1)
    assert results[0]["n_samples_fed"] == len(Y)
    assert [r["n_samples_fed"] for r in results[1:]] == [0, 0]
    assert list(results[0]["statistics_hit"]) == [False] * 5
    assert list(results[1]["statistics_hit"]) == [True] * 5
    # Scores of a hit equal those of a cold run.
    cold = tree_cross_validate(
        Ridge(alpha=10.0),
        X,
        Y,
        cv=5,
        method=ExactStatisticsBackend(cache=StatisticsCache(0)),
        return_run_info=True,
    )
    assert_array_equal(cold["test_score"], results[2]["test_score"])


def test_the_key_holds_the_data_the_plan_and_the_statistics_parameters(counts):
    X, y = counts
    cache = StatisticsCache()
    backend = ExactStatisticsBackend(cache=cache)
    tree_cross_validate(
        BernoulliNB(binarize=1.0), X, y, cv=4, method=backend, return_run_info=True
    )
    tree_cross_validate(
        BernoulliNB(binarize=1.0, alpha=3.0),
        X,
        y,
        cv=4,
        method=backend,
        return_run_info=True,
    )
    assert cache.hits == 1
    tree_cross_validate(
        BernoulliNB(binarize=2.0), X, y, cv=4, method=backend, return_run_info=True
    )
    tree_cross_validate(
        BernoulliNB(binarize=1.0), X, y, cv=5, method=backend, return_run_info=True
    )
    changed = X.copy()
    changed[0, 0] += 1
    ours = tree_cross_validate(
        BernoulliNB(binarize=0.5),
        changed,
        y,
        cv=4,
        method=backend,
        return_run_info=True,
    )
    tree_cross_validate(
        BernoulliNB(binarize=0.5), X, y, cv=4, method=backend, return_run_info=True
    )  # Same parameters, the original data: not the entry of `changed`.
    assert cache.hits == 1 and cache.misses == 5
    ref = cross_validate(BernoulliNB(binarize=0.5), changed, y, cv=StratifiedKFold(4))
    assert_array_equal(ours["test_score"], ref["test_score"])


def test_in_place_change_of_writeable_data_is_a_miss(regression):
    X, Y = regression
    X = X.copy()
    cache = StatisticsCache()
    backend = ExactStatisticsBackend(cache=cache)
    tree_cross_validate(Ridge(), X, Y, cv=3, method=backend, return_run_info=True)
    X[0] += 1.0
    changed = tree_cross_validate(
        Ridge(), X, Y, cv=3, method=backend, return_run_info=True
    )
    assert cache.misses == 2
    ref = cross_validate(Ridge(), X, Y, cv=KFold(3))
    assert_allclose(changed["test_score"], ref["test_score"], rtol=0, atol=1e-10)


def test_cache_is_bounded(regression):
    X, Y = regression
    probe = StatisticsCache()
    tree_cross_validate(
        Ridge(), X, Y, cv=6, method=ExactStatisticsBackend(probe), return_run_info=True
    )
    bound = int(2.5 * probe.nbytes)
    cache = StatisticsCache(max_bytes=bound)
    backend = ExactStatisticsBackend(cache=cache)
    for k in (6, 5, 4, 3):
        tree_cross_validate(Ridge(), X, Y, cv=k, method=backend, return_run_info=True)
    assert 0 < len(cache) < 4
    assert cache.nbytes <= bound
    # The least recently used entry went first: k=6 is a miss again.
    tree_cross_validate(Ridge(), X, Y, cv=6, method=backend, return_run_info=True)
    assert cache.misses == 5
    cache.clear()
    assert len(cache) == cache.nbytes == 0


def test_optuna_trials_share_the_statistics(regression):
    X, Y = regression
    y = Y[:, 0]
    cache = StatisticsCache()
    objective = TreeCVObjective(
        Ridge(),
        {"alpha": optuna.distributions.FloatDistribution(1e-3, 1e3, log=True)},
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
    ref = cross_validate(Ridge(alpha=trial.params["alpha"]), X, y, cv=KFold(5))
    assert_allclose(trial.value, np.mean(ref["test_score"]), rtol=0, atol=1e-10)


# -- property tests -----------------------------------------------------------------
@settings(max_examples=15, deadline=None)
@given(
    n_samples=st.integers(8, 30),
    n_splits=st.integers(2, 8),
    seed=st.integers(0, 2**31 - 1),
    weighted=st.booleans(),
)
def test_property_multinomial_nb_is_bit_equal(n_samples, n_splits, seed, weighted):
    rng = np.random.default_rng(seed)
    X = rng.poisson(2.0, size=(n_samples, 4))
    y = rng.integers(0, 3, size=n_samples)
    weights = rng.integers(1, 4, size=n_samples).astype(float) if weighted else None
    cv = lambda: KFold(min(n_splits, n_samples), shuffle=True, random_state=seed % 97)  # noqa: E731
    _compare(MultinomialNB(), X, y, cv, weights=weights)


@settings(max_examples=15, deadline=None)
@given(
    n_samples=st.integers(12, 30),
    n_splits=st.integers(2, 6),
    seed=st.integers(0, 2**31 - 1),
    alpha=st.floats(1e-3, 1e3),
)
def test_property_ridge_within_1e10(n_samples, n_splits, seed, alpha):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_samples, 3)) + rng.normal(size=3)
    y = X @ rng.normal(size=3) + rng.normal(size=n_samples)
    cv = lambda: KFold(n_splits, shuffle=True, random_state=seed % 97)  # noqa: E731
    _compare(Ridge(alpha=alpha), X, y, cv, exact=False)


# -- discrete naive Bayes in stacked batches -----------------------------------------
@pytest.mark.parametrize("cv", list(CVS))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize(
    "estimator",
    [
        MultinomialNB(alpha=0.5),
        MultinomialNB(fit_prior=False),
        ComplementNB(),
        ComplementNB(norm=True),
        BernoulliNB(binarize=6.0),
        BernoulliNB(class_prior=[0.1, 0.2, 0.3, 0.4]),
    ],
    ids=["multinomial", "uniform-prior", "complement", "norm", "bernoulli", "prior"],
)
def test_batched_discrete_naive_bayes_equals_cross_validate(
    counts, estimator, weighted, cv
):
    """Without fold models (no return_estimator) the folds are scored in batches."""
    X, y = counts
    if cv == "loo":
        X, y = X[:24], y[:24]
    params = {"sample_weight": _weights(len(y))} if weighted else None
    leaves = []
    ours = tree_cross_validate(
        estimator,
        X,
        y,
        cv=CVS[cv](),
        fit_params=params,
        leaf_callback=leaves.append,
        method=ExactStatisticsBackend(cache=StatisticsCache(0)),  # cold
        return_run_info=True,
    )
    ref = cross_validate(estimator, X, y, cv=CVS[cv](), params=params)
    assert ours["backend"] == "exact"
    assert_array_equal(ours["test_score"], ref["test_score"])
    # Every leaf was streamed, in leaf order, with the statistics pass first.
    assert [leaf.leaf for leaf in leaves] == list(range(len(ref["test_score"])))
    assert [leaf.scores["score"] for leaf in leaves] == [
        ours["test_score"][leaf.split] for leaf in leaves
    ]
    assert leaves[0].n_samples_fed == len(y)


def test_batched_fold_lacking_a_class_drops_it():
    """Leave-one-out of the only row of a class: that fold is made and scored alone."""
    X, y = load_digits(n_class=3, return_X_y=True)
    X, y = np.vstack([X[:30], X[-1:]]), np.append(y[:30] % 2, 2)
    ours = tree_cross_validate(
        MultinomialNB(), X, y, cv=LeaveOneOut(), return_run_info=True
    )
    ref = cross_validate(MultinomialNB(), X, y, cv=LeaveOneOut())
    assert_array_equal(ours["test_score"], ref["test_score"])


def test_a_stopping_listener_stops_the_batched_run(counts):
    X, y = counts
    seen = []

    def stop(leaf):
        seen.append(leaf.split)
        if len(seen) == 3:
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        tree_cross_validate(
            MultinomialNB(), X, y, cv=10, leaf_callback=stop, return_run_info=True
        )
    assert len(seen) == 3


@settings(max_examples=20, deadline=None)
@given(
    n_samples=st.integers(6, 40),
    n_splits=st.integers(2, 40),
    seed=st.integers(0, 2**31 - 1),
    kind=st.sampled_from(["multinomial", "complement", "bernoulli"]),
)
def test_property_batched_log_likelihoods_are_the_fold_models(
    n_samples, n_splits, seed, kind
):
    """The stacked joint log-likelihoods equal each fold model's, bit for bit."""
    from sklearn_ext.model_selection._exact import _backend, _layout, _naive_bayes

    rng = np.random.default_rng(seed)
    X = rng.poisson(1.5, size=(n_samples, 5)).astype(float)
    y = rng.integers(0, 3, size=n_samples)
    estimator = {
        "multinomial": MultinomialNB(alpha=rng.uniform(0.1, 2.0)),
        "complement": ComplementNB(norm=bool(seed % 2)),
        "bernoulli": BernoulliNB(binarize=1.0),
    }[kind]
    family = _backend._family(estimator)
    X_seen, y_seen = family.prepare(estimator, X, y)
    plan = FoldPlan.from_cv(
        KFold(min(n_splits, n_samples), shuffle=True, random_state=seed % 89), X
    )
    stats = family.statistics(estimator, X_seen, y_seen, None, _layout._Chunks(plan))
    leaves = np.arange(plan.n_splits)
    counts, features, rows = stats.folds(leaves)
    for size in np.unique(np.diff(plan.bounds)):
        batch = leaves[(np.diff(plan.bounds) == size) & np.all(rows > 0, axis=1)]
        if not batch.size:
            continue
        index = plan.sample_order[plan.bounds[batch][:, None] + np.arange(size)]
        model = copy.copy(estimator)
        model.n_features_in_ = X.shape[1]
        jll = _naive_bayes._discrete_nb_jll(
            model,
            model._check_alpha(),
            counts[batch],
            features[batch],
            X_seen[index],
        )
        for i, leaf in enumerate(batch):
            fold = family.fold_model(copy.copy(estimator), stats, leaf, X.shape[1])
            expected = fold._joint_log_likelihood(X_seen[plan.test_indices(leaf)])
            assert_array_equal(jll[i], expected)


def test_leave_one_out_plan_is_the_splitters():
    """FoldPlan.from_cv knows LeaveOneOut's splits without asking for them."""

    class Asked(LeaveOneOut):  # Not LeaveOneOut itself: its splits are asked for.
        pass

    X = np.zeros((7, 2))
    known, asked = FoldPlan.from_cv(LeaveOneOut(), X), FoldPlan.from_cv(Asked(), X)
    assert_array_equal(known.bounds, asked.bounds)
    assert_array_equal(known.sample_order, asked.sample_order)
    assert known.complement and asked.complement
    for fold in range(7):
        assert_array_equal(known.train_indices(fold), asked.train_indices(fold))


# -- ridge: R^2 from the held-out chunk's moments, keys taken once per search ---------
@pytest.mark.parametrize("offset", [0.0, 1e6])
@pytest.mark.parametrize("two_targets", [False, True])
@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize(
    "estimator",
    [Ridge(alpha=0.3), Ridge(alpha=30.0, fit_intercept=False), LinearRegression()],
    ids=["ridge", "no-intercept", "ols"],
)
def test_r2_from_moments_equals_the_scorer(estimator, dense, two_targets, offset):
    """The held-out R^2 from moments is r2_score of the predictions, to 1e-12."""
    from sklearn_ext.model_selection._exact import _backend, _layout

    X, Y = make_regression(
        n_samples=80, n_features=6, n_targets=2, noise=4.0, random_state=1
    )
    X, Y = X + 3.0, Y + offset
    y = Y if two_targets else Y[:, 0]
    X = X if dense else sparse.csr_matrix(X)
    cv = KFold(4, shuffle=True, random_state=0)
    ref = cross_validate(estimator, X, y, cv=cv, return_estimator=True)
    plan = FoldPlan.from_cv(cv, X)
    family = _backend._family(estimator)
    X_seen, y_seen = family.prepare(estimator, X, y)
    stats = family.statistics(estimator, X_seen, y_seen, None, _layout._Chunks(plan))
    for leaf, model in enumerate(ref["estimator"]):
        at_shift = np.atleast_2d(model.coef_) @ stats.shift + model.intercept_
        r2 = stats.held_out_r2(leaf, model.coef_, at_shift)
        assert r2 is not None
        expected = ref["test_score"][leaf]
        assert abs(r2 - expected) < 1e-12 * max(1.0, abs(expected))


def test_r2_from_moments_steps_aside_where_it_cannot_be_trusted():
    """A constant held-out target, or terms far above the total sum of squares."""
    from sklearn_ext.model_selection._exact import _backend, _layout

    rng = np.random.default_rng(0)
    base = rng.normal(size=(40, 1))
    # Two nearly equal columns: least squares coefficients of opposite sign and
    # size 1e8, whose Gram quadratic form cancels.
    X = np.hstack([base, base + 1e-9 * rng.normal(size=(40, 1))])
    y = base[:, 0] + 0.1 * rng.normal(size=40)
    y[:10] = 2.0  # The first chunk's target is constant.
    cv = KFold(4)
    plan = FoldPlan.from_cv(cv, X)
    family = _backend._family(LinearRegression())
    stats = family.statistics(
        LinearRegression(), X, y.astype(float), None, _layout._Chunks(plan)
    )
    assert stats.held_out_r2(0, np.array([1.0, 0.0]), 0.0) is None
    assert stats.held_out_r2(1, np.array([1e8, -1e8]), 0.0) is None
    assert stats.held_out_r2(1, np.array([1.0, 0.0]), 0.0) is not None
    ours = tree_cross_validate(Ridge(alpha=1e-12), X, y, cv=cv, return_run_info=True)
    ref = cross_validate(Ridge(alpha=1e-12), X, y, cv=cv)
    assert ours["backend"] == "exact"
    assert_allclose(ours["test_score"], ref["test_score"], rtol=0, atol=1e-6)


def test_a_search_reads_the_data_once_for_its_keys(regression, monkeypatch):
    """Every candidate of one fit reuses the digest of X; a new fit takes it again."""
    from sklearn_ext.utils import _hashing

    X, Y = regression
    X = X.copy()
    digested = []
    digest = _hashing._array_digest
    monkeypatch.setattr(
        _hashing,
        "_array_digest",
        lambda a, memo: digested.append(a.shape) or digest(a, memo),
    )
    grid = {"alpha": [0.1, 1.0, 10.0, 100.0]}
    backend = ExactStatisticsBackend(cache=StatisticsCache())
    search = TreeCVSearchCV(Ridge(), grid, cv=5, method=backend, refit=False)
    search.fit(X, Y)
    assert digested.count(X.shape) == 1
    X[0, 0] += 1.0  # Changed between two fits: a new digest, a new entry.
    search.fit(X, Y)
    assert digested.count(X.shape) == 2
    assert (backend.cache.misses, backend.cache.hits) == (2, 6)
    ref = GridSearchCV(Ridge(), grid, cv=KFold(5), refit=False).fit(X, Y)
    assert_allclose(
        search.cv_results_["mean_test_score"],
        ref.cv_results_["mean_test_score"],
        rtol=0,
        atol=1e-10,
    )
