"""TreeCVSearchCV against GridSearchCV: the same scenarios, the same cv_results_.

The learners are deterministic one-pass learners (``fit`` is one ordered pass of
``partial_fit``) and the folds a :class:`TreeCVSplitter` whose training rows come
in the tree's feeding order, so GridSearchCV's fold models are TreeCV's fold
models. Everything but the timings must then be equal: keys, dtypes, masks,
scores, ranks and the ``best_*`` attributes. Scenarios follow scikit-learn's
``sklearn/model_selection/tests/test_search.py``.
"""

import re
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn import config_context
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.exceptions import FitFailedWarning
from sklearn.linear_model import SGDClassifier
from sklearn.metrics import accuracy_score, make_scorer
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.naive_bayes import MultinomialNB
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler

from sklearn_ext import (
    PegasosClassifier,
    StratifiedTreeCVSplitter,
    TreeCVEstimator,
    TreeCVRegimeWarning,
    TreeCVSearchCV,
    TreeCVSplitter,
)


@pytest.fixture(scope="module")
def data():
    X, y = load_digits(return_X_y=True)
    rng = np.random.RandomState(0)
    rows = rng.permutation(len(y))[:400]
    return X[rows] / 16.0, y[rows]


class TreeNB(MultinomialNB):
    """A subclass, which the exact statistics backend leaves to the Python tree."""


LEARNERS = {
    "native": (PegasosClassifier(), {"alpha": [1e-3, 1e-2, 1e-1]}),
    "python": (TreeNB(), {"alpha": [0.1, 1.0, 10.0]}),
    "exact": (MultinomialNB(), {"alpha": [0.1, 1.0, 10.0]}),
}


def _both(estimator, grid, X, y, **kwargs):
    """The same search through TreeCVSearchCV and GridSearchCV."""
    kwargs.setdefault("cv", TreeCVSplitter(4))
    fit_params = kwargs.pop("fit_params", {})
    tree = TreeCVSearchCV(estimator, grid, **kwargs).fit(X, y, **fit_params)
    grid_search = GridSearchCV(estimator, grid, **kwargs).fit(X, y, **fit_params)
    return tree, grid_search


def assert_same_results(tree, reference):
    """Equal cv_results_ (but timings) and best_* attributes."""
    results, expected = tree.cv_results_, reference.cv_results_
    # Exactly GridSearchCV's keys, in its order (the run's measurements only
    # with return_run_info=True).
    assert list(results) == list(expected)
    for key, value in expected.items():
        got = results[key]
        if key == "params":
            assert got == value
            continue
        assert type(got) is type(value), key
        assert got.dtype == value.dtype, key
        if isinstance(value, np.ma.MaskedArray):
            assert_array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(value))
        if key.endswith("_time"):
            continue
        if value.dtype.kind == "f":
            assert_allclose(got, value, rtol=1e-12, atol=1e-15, err_msg=key)
        else:
            assert_array_equal(got, value, err_msg=key)
    for attr in ("best_index_", "best_score_", "best_params_", "multimetric_"):
        assert hasattr(tree, attr) == hasattr(reference, attr), attr
        if hasattr(reference, attr):
            assert getattr(tree, attr) == pytest.approx(getattr(reference, attr)), attr
    assert tree.n_splits_ == reference.n_splits_
    assert hasattr(tree, "best_estimator_") == hasattr(reference, "best_estimator_")


@pytest.mark.parametrize("learner", LEARNERS)
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"refit": False},
        {"return_train_score": True},
        {"scoring": "balanced_accuracy", "refit": "balanced_accuracy"},
        {"scoring": ["accuracy", "f1_macro"], "refit": "f1_macro"},
        {"scoring": {"acc": "accuracy", "bal": "balanced_accuracy"}, "refit": "acc"},
        {"scoring": {"acc": "accuracy", "bal": "balanced_accuracy"}, "refit": False},
        {"scoring": ("accuracy", "f1_macro"), "refit": lambda results: 0},
        {"cv": StratifiedTreeCVSplitter(3)},
    ],
    ids=lambda kwargs: ",".join(f"{k}={v}" for k, v in kwargs.items()) or "default",
)
def test_cv_results_equal_grid_search(data, learner, kwargs):
    X, y = data
    estimator, grid = LEARNERS[learner]
    assert_same_results(*_both(estimator, grid, X, y, **kwargs))


def test_run_info_adds_columns_and_nothing_else(data):
    X, y = data
    estimator, grid = LEARNERS["python"]
    kwargs = {"cv": TreeCVSplitter(4)}
    plain = TreeCVSearchCV(estimator, grid, **kwargs).fit(X, y)
    info = TreeCVSearchCV(estimator, grid, return_run_info=True, **kwargs).fit(X, y)
    added = set(info.cv_results_) - set(plain.cv_results_)
    assert "n_samples_fed" in added
    assert not any(k.startswith(("split", "mean_", "std_", "rank_")) for k in added)
    assert [k for k in info.cv_results_ if k not in added] == list(plain.cv_results_)
    fed = TreeCVSplitter(4).plan(X).n_samples_fed()
    assert_array_equal(info.cv_results_["n_samples_fed"], [fed] * len(grid["alpha"]))
    assert list(info.cv_results_["backend"]) == ["python_tree"] * len(grid["alpha"])


def test_callable_scoring_returning_a_dict(data):
    X, y = data

    def scoring(estimator, X, y):
        predicted = estimator.predict(X)
        return {
            "acc": accuracy_score(y, predicted),
            "wrong": float(np.sum(predicted != y)),
        }

    tree, grid_search = _both(
        MultinomialNB(), {"alpha": [0.1, 1.0]}, X, y, scoring=scoring, refit="acc"
    )
    assert_same_results(tree, grid_search)
    assert tree.multimetric_ and "rank_test_wrong" in tree.cv_results_


def test_list_of_dict_grids_mask_missing_params_and_ties_rank_alike(data):
    X, y = data
    grid = [{"alpha": [1.0, 1.0]}, {"fit_prior": [False], "alpha": [0.5]}]
    tree, grid_search = _both(MultinomialNB(), grid, X, y)
    assert_same_results(tree, grid_search)
    ranks = tree.cv_results_["rank_test_score"]
    assert ranks[0] == ranks[1]  # identical candidates tie
    assert np.ma.getmaskarray(tree.cv_results_["param_fit_prior"]).tolist() == [
        True,
        True,
        False,
    ]


# error_score=nan on purpose: both searches say so.
@pytest.mark.filterwarnings("ignore:One or more of the test scores are non-finite")
def test_error_score_nan_and_raise_as_grid_search(data):
    X, y = data
    grid = {"alpha": [1e-2, -1.0]}
    with pytest.warns(FitFailedWarning, match="4 fits failed out of a total of 8"):
        tree = TreeCVSearchCV(PegasosClassifier(), grid, cv=TreeCVSplitter(4))
        tree.fit(X, y)
    with pytest.warns(FitFailedWarning, match="4 fits failed out of a total of 8"):
        grid_search = GridSearchCV(PegasosClassifier(), grid, cv=TreeCVSplitter(4))
        grid_search.fit(X, y)
    assert_same_results(tree, grid_search)
    # A successful search with error_score="raise" does not crash on the float.
    ok = TreeCVSearchCV(
        PegasosClassifier(), {"alpha": [1e-2]}, cv=3, error_score="raise"
    ).fit(X, y)
    assert ok.best_score_ > 0.5
    with pytest.raises(ValueError, match="alpha"):
        TreeCVSearchCV(
            PegasosClassifier(), grid, cv=3, error_score="raise", refit=False
        ).fit(X, y)
    with pytest.warns(FitFailedWarning):
        zero = TreeCVSearchCV(PegasosClassifier(), grid, cv=3, error_score=0).fit(X, y)
    assert zero.cv_results_["mean_test_score"][1] == 0


def test_sample_weight_reaches_the_scorers_as_in_grid_search(data):
    X, y = data
    weights = np.linspace(0.2, 3.0, len(y))
    tree, grid_search = _both(
        PegasosClassifier(),
        {"alpha": [1e-3, 1e-1]},
        X,
        y,
        scoring="accuracy",
        fit_params={"sample_weight": weights},
    )
    assert_same_results(tree, grid_search)
    # The weighted accuracy of the first fold model, recomputed.
    split = next(TreeCVSplitter(4).split(X, y))
    model = PegasosClassifier(alpha=1e-3).fit(
        X[split[0]], y[split[0]], sample_weight=weights[split[0]]
    )
    expected = accuracy_score(
        y[split[1]], model.predict(X[split[1]]), sample_weight=weights[split[1]]
    )
    assert tree.cv_results_["split0_test_score"][0] == pytest.approx(expected)


def test_metadata_routing_follows_the_requests(data):
    from sklearn.exceptions import UnsetMetadataPassedError

    X, y = data
    weights = np.linspace(0.2, 3.0, len(y))
    with config_context(enable_metadata_routing=True):
        with pytest.raises(UnsetMetadataPassedError):
            TreeCVSearchCV(MultinomialNB(), {"alpha": [1.0]}, cv=3).fit(
                X, y, sample_weight=weights
            )
        learner = (
            MultinomialNB()
            .set_fit_request(sample_weight=True)
            .set_partial_fit_request(sample_weight=True)
        )
        scorer = make_scorer(accuracy_score).set_score_request(sample_weight=True)
        tree, grid_search = _both(
            learner,
            {"alpha": [0.1, 1.0]},
            X,
            y,
            scoring=scorer,
            fit_params={"sample_weight": weights},
        )
    assert_same_results(tree, grid_search)


def test_verbose_lines_are_grid_searchs(data, capsys):
    X, y = data

    def lines(search):
        search.fit(X, y)
        out = capsys.readouterr().out
        return [re.sub(r"\.+|total time=.*", "", line) for line in out.splitlines()]

    for verbose in (1, 2, 3):
        kwargs = {"cv": TreeCVSplitter(3), "verbose": verbose, "refit": False}
        tree = lines(TreeCVSearchCV(MultinomialNB(), {"alpha": [0.1, 1.0]}, **kwargs))
        grid = lines(GridSearchCV(MultinomialNB(), {"alpha": [0.1, 1.0]}, **kwargs))
        assert tree == grid and tree


def test_verbose_start_lines_and_multimetric_lines_are_grid_searchs(data, capsys):
    X, y = data

    def lines(search):
        search.fit(X, y)
        out = capsys.readouterr().out
        return [re.sub(r"\.+|total time=.*", "", line) for line in out.splitlines()]

    grid = {"alpha": [0.1, 1.0]}
    kwargs = {"cv": TreeCVSplitter(3), "refit": False}
    # Two metrics with train scores, as _fit_and_score writes them.
    multi = {"scoring": ["accuracy", "f1_macro"], "return_train_score": True}
    tree = lines(TreeCVSearchCV(MultinomialNB(), grid, verbose=3, **multi, **kwargs))
    grid_search = GridSearchCV(MultinomialNB(), grid, verbose=3, **multi, **kwargs)
    assert tree == lines(grid_search) and "f1_macro: (train=" in tree[1]
    # verbose > 9: a START line per fit, with the candidate's progress.
    tree = lines(TreeCVSearchCV(MultinomialNB(), grid, verbose=10, **kwargs))
    grid_lines = lines(GridSearchCV(MultinomialNB(), grid, verbose=10, **kwargs))
    assert sorted(tree) == sorted(grid_lines)
    assert "[CV 2/3; 1/2] START alpha=01" in tree
    # The tree trains a candidate's folds together: its three STARTs come
    # first, then its three ENDs (GridSearchCV alternates them, fit by fit).
    kinds = [line.split("] ")[1].split()[0] for line in tree[1:]]
    assert kinds == ["START"] * 3 + ["END"] * 3 + ["START"] * 3 + ["END"] * 3


def test_cv_given_as_a_list_of_splits(data):
    X, y = data
    splits = list(TreeCVSplitter(4).split(X, y))
    tree = TreeCVSearchCV(PegasosClassifier(), {"alpha": [1e-2, 1e-1]}, cv=splits)
    grid_search = GridSearchCV(PegasosClassifier(), {"alpha": [1e-2, 1e-1]}, cv=splits)
    assert_same_results(tree.fit(X, y), grid_search.fit(X, y))


def test_estimators_given_as_grid_values_are_not_fitted_in_place(data):
    X, y = data
    from sklearn.pipeline import Pipeline

    candidates = [MultinomialNB(alpha=0.1), MultinomialNB(alpha=1.0)]
    search = TreeCVSearchCV(
        Pipeline([("model", MultinomialNB())]),
        {"model": candidates},
        cv=3,
        method="standard",
    ).fit(X, y)
    assert not any(hasattr(c, "classes_") for c in candidates)
    assert search.best_estimator_.named_steps["model"] is not candidates[0]


def test_refit_naming_the_single_metric(data):
    X, y = data
    tree, grid_search = _both(
        MultinomialNB(),
        {"alpha": [0.1, 1.0]},
        X,
        y,
        scoring="accuracy",
        refit="accuracy",
    )
    assert_same_results(tree, grid_search)


def test_feature_names_are_kept_and_checked(data):
    pd = pytest.importorskip("pandas")
    X, y = data
    frame = pd.DataFrame(X, columns=[f"pixel{i}" for i in range(X.shape[1])])
    search = TreeCVSearchCV(PegasosClassifier(), {"alpha": [1e-2]}, cv=3).fit(frame, y)
    assert_array_equal(search.feature_names_in_, frame.columns)
    assert search.n_features_in_ == X.shape[1]
    assert_array_equal(search.classes_, np.unique(y))
    with pytest.raises(ValueError, match="feature names"):
        search.predict(frame[frame.columns[::-1]])


# A multi-epoch learner through the tree on purpose: the regime note is expected.
@pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")
def test_scorer_for_data_without_y_gets_no_y(data):
    from sklearn.cluster import MiniBatchKMeans

    X, _ = data
    calls = []

    def inertia(estimator, X, *args):
        calls.append(len(args))
        return -estimator.score(X) if False else float(estimator.score(X))

    TreeCVSearchCV(
        MiniBatchKMeans(n_clusters=3, n_init=1, random_state=0),
        {"n_clusters": [2, 3]},
        scoring=inertia,
        cv=3,
    ).fit(X)
    assert calls and set(calls) == {0}


# -- the score describes the model you get ----------------------------------------
# An MLP far from one pass is scored by its own fit ("auto"), whose small
# max_iter does not converge here: on purpose.
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize(
    "estimator",
    [
        SGDClassifier(random_state=0),
        PegasosClassifier(),
        MLPClassifier(hidden_layer_sizes=(8,), learning_rate_init=0.01, random_state=0),
    ],
    ids=["SGDClassifier", "PegasosClassifier", "MLPClassifier"],
)
def test_refit_model_reproduces_best_score(estimator):
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X[:600])
    y = y[:600]
    cv = StratifiedTreeCVSplitter(5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search = TreeCVSearchCV(estimator, {"alpha": [1e-4, 1e-2]}, cv=cv).fit(X, y)
    regime = [w for w in caught if issubclass(w.category, TreeCVRegimeWarning)]
    refit = clone(search.best_estimator_)
    scores = cross_val_score(refit, X, y, cv=cv)
    assert abs(scores.mean() - search.best_score_) <= 1e-12
    # clone(best_estimator_).fit(X, y) is the same model again.
    again = clone(search.best_estimator_).fit(X, y)
    assert_array_equal(again.predict(X), search.best_estimator_.predict(X))
    if isinstance(estimator, PegasosClassifier):
        assert not regime and type(search.best_estimator_) is PegasosClassifier
    elif isinstance(estimator, MLPClassifier):
        # One pass is far from MLPClassifier.fit: "auto" turned to its fit.
        assert len(regime) == 1 and "therefore scores" in str(regime[0].message)
        assert type(search.best_estimator_) is MLPClassifier
    else:
        assert len(regime) == 1 and "method='standard'" in str(regime[0].message)
        assert isinstance(search.best_estimator_, TreeCVEstimator)


def test_method_standard_scores_the_learners_own_fit():
    X, y = load_digits(return_X_y=True)
    X, y = X[:400], y[:400]
    cv = StratifiedTreeCVSplitter(4)
    sgd = SGDClassifier(random_state=0, max_iter=20, tol=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TreeCVRegimeWarning)
        search = TreeCVSearchCV(
            sgd, {"alpha": [1e-4, 1e-2]}, cv=cv, method="standard"
        ).fit(X, y)
    assert type(search.best_estimator_) is SGDClassifier
    scores = cross_val_score(clone(search.best_estimator_), X, y, cv=cv)
    assert abs(scores.mean() - search.best_score_) <= 1e-12


# -- TreeCVEstimator: weighted score, partial_fit ----------------------------------
def test_tree_cv_estimator_scores_with_sample_weight_in_grid_search(data):
    X, y = data
    weights = np.linspace(0.2, 3.0, len(y))
    wrapped = TreeCVEstimator(MultinomialNB(), batch_size=64, cache=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "does not support sample_weight"
        search = GridSearchCV(
            wrapped, {"estimator__alpha": [0.1, 1.0]}, cv=TreeCVSplitter(4)
        ).fit(X, y, sample_weight=weights)
    reference = GridSearchCV(
        MultinomialNB(), {"alpha": [0.1, 1.0]}, cv=TreeCVSplitter(4)
    ).fit(X, y, sample_weight=weights)
    assert_allclose(
        search.cv_results_["mean_test_score"],
        reference.cv_results_["mean_test_score"],
        rtol=1e-12,
    )


def test_tree_cv_estimator_score_request_in_a_routed_pipeline(data):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MaxAbsScaler

    X, y = data
    weights = np.linspace(0.2, 3.0, len(y))
    with config_context(enable_metadata_routing=True):
        wrapped = TreeCVEstimator(
            MultinomialNB().set_partial_fit_request(sample_weight=True),
            batch_size=64,
            cache=None,
        ).set_score_request(sample_weight=True)
        pipe = make_pipeline(MaxAbsScaler(), wrapped)
        search = GridSearchCV(
            pipe,
            {"treecvestimator__estimator__alpha": [0.1, 1.0]},
            cv=TreeCVSplitter(3),
            scoring=make_scorer(accuracy_score).set_score_request(sample_weight=True),
        ).fit(X, y, sample_weight=weights)
        assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
        weighted = pipe.fit(X, y, sample_weight=weights).score(
            X, y, sample_weight=weights
        )
    assert weighted == pytest.approx(
        accuracy_score(y, pipe.predict(X), sample_weight=weights)
    )


def test_tree_cv_estimator_partial_fit_for_incremental_tools(data):
    from sklearn.model_selection import learning_curve

    X, y = data
    wrapped = TreeCVEstimator(SGDClassifier(random_state=0), batch_size=50, cache=None)
    sizes, train, test = learning_curve(
        wrapped,
        X,
        y,
        cv=TreeCVSplitter(3),
        train_sizes=[0.5, 1.0],
        exploit_incremental_learning=True,
    )
    assert test.shape == (2, 3) and np.all(np.isfinite(test))
    # Streaming in pieces gives the model of one fit over the same rows.
    streamed = clone(wrapped)
    for rows in np.array_split(np.arange(len(y)), 7):
        streamed.partial_fit(X[rows], y[rows], classes=np.unique(y))
    fitted = clone(wrapped).fit(X, y)
    assert_array_equal(streamed.estimator_.coef_, fitted.estimator_.coef_)


def test_tree_cv_estimator_keeps_feature_names(data):
    pd = pytest.importorskip("pandas")
    X, y = data
    frame = pd.DataFrame(X, columns=[f"pixel{i}" for i in range(X.shape[1])])
    model = TreeCVEstimator(MultinomialNB(), cache=None).fit(frame, y)
    assert_array_equal(model.feature_names_in_, frame.columns)
    with pytest.raises(ValueError, match="feature names"):
        model.predict(frame[frame.columns[::-1]])


# -- tree_cross_validate: error_score, feature names -------------------------------
def test_tree_cross_validate_error_score_as_cross_validate(data):
    from sklearn.model_selection import cross_validate

    from sklearn_ext import tree_cross_validate

    X, y = data

    def fails_on_first_fold(estimator, X, y):
        if len(y) and y[0] == first_label:
            raise RuntimeError("this fold cannot be scored")
        return accuracy_score(y, estimator.predict(X))

    cv = TreeCVSplitter(4)
    first_label = y[next(cv.split(X, y))[1][0]]
    with pytest.warns(UserWarning, match="Scoring failed"):
        ours = tree_cross_validate(
            MultinomialNB(),
            X,
            y,
            cv=cv,
            scoring=fails_on_first_fold,
            return_run_info=True,
        )
    with pytest.warns(UserWarning, match="Scoring failed"):
        theirs = cross_validate(
            MultinomialNB(), X, y, cv=cv, scoring=fails_on_first_fold
        )
    assert_array_equal(np.isnan(ours["test_score"]), np.isnan(theirs["test_score"]))
    with pytest.raises(RuntimeError, match="cannot be scored"):
        tree_cross_validate(
            MultinomialNB(),
            X,
            y,
            cv=cv,
            scoring=fails_on_first_fold,
            error_score="raise",
            return_run_info=True,
        )


def test_tree_cross_validate_fold_models_keep_feature_names(data):
    pd = pytest.importorskip("pandas")
    from sklearn_ext import tree_cross_validate

    X, y = data
    frame = pd.DataFrame(X, columns=[f"pixel{i}" for i in range(X.shape[1])])
    for estimator in (MultinomialNB(), PegasosClassifier()):
        result = tree_cross_validate(
            estimator, frame, y, cv=3, return_estimator=True, return_run_info=True
        )
        for model in result["estimator"]:
            assert_array_equal(model.feature_names_in_, frame.columns)


def test_text_pipeline_reaches_the_estimator_as_given():
    from sklearn.feature_extraction.text import HashingVectorizer
    from sklearn.pipeline import make_pipeline

    texts = ["good film", "bad film", "great plot", "awful plot"] * 10
    labels = np.array([1, 0, 1, 0] * 10)
    vectorizer = HashingVectorizer(n_features=64, alternate_sign=False)
    pipe = make_pipeline(vectorizer, MultinomialNB())
    # A stateless vectorizer before naive Bayes streams through the tree to the
    # very models its fit trains: no fallback, no regime note.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        search = TreeCVSearchCV(pipe, {"multinomialnb__alpha": [0.1, 1.0]}, cv=4).fit(
            texts, labels
        )
    assert search.best_score_ == 1.0
    assert type(search.best_estimator_) is type(pipe)
    grid_search = GridSearchCV(
        pipe, {"multinomialnb__alpha": [0.1, 1.0]}, cv=StratifiedTreeCVSplitter(4)
    ).fit(texts, labels)
    assert_allclose(
        search.cv_results_["mean_test_score"],
        grid_search.cv_results_["mean_test_score"],
    )


def test_precomputed_kernels_are_sliced_by_rows_and_columns():
    from sklearn.svm import SVC

    from sklearn_ext import tree_cross_validate

    X, y = load_digits(return_X_y=True)
    X, y = X[:200] / 16.0, y[:200]
    kernel = X @ X.T
    cv = StratifiedTreeCVSplitter(4)
    reference = cross_val_score(SVC(kernel="precomputed"), kernel, y, cv=cv)
    for method in ("standard", "auto"):
        ours = tree_cross_validate(
            SVC(kernel="precomputed"),
            kernel,
            y,
            cv=cv,
            method=method,
            return_run_info=True,
        )
        assert_allclose(ours["test_score"], reference)
    search = TreeCVSearchCV(
        SVC(kernel="precomputed"),
        {"C": [0.1, 1.0]},
        cv=cv,
        method="standard",
        return_train_score=True,
    ).fit(kernel, y)
    reference = GridSearchCV(
        SVC(kernel="precomputed"), {"C": [0.1, 1.0]}, cv=cv, return_train_score=True
    ).fit(kernel, y)
    assert_same_results(search, reference)
