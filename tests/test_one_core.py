"""One core for every door: each case has one outcome whichever door it takes.

``tree_cross_validate``, ``TreeCVSearchCV``, ``GridSearchCV(TreeCVEstimator(...))``,
``TreeCVObjective`` and the command line all run through the run core
(``sklearn_ext.model_selection._core.RunCore``). Where the standard backend runs,
the outcome is ``cross_validate``'s / ``GridSearchCV``'s; a search's
``best_score_`` is the CV of ``clone(best_estimator_)`` on the same folds.
"""

from __future__ import annotations

import warnings

import numpy as np
import optuna
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from optuna.distributions import CategoricalDistribution
from optuna.trial import FixedTrial
from sklearn.base import clone
from sklearn.cluster import Birch, MiniBatchKMeans
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.impute import SimpleImputer
from sklearn.linear_model import SGDClassifier, SGDOneClassSVM
from sklearn.model_selection import (
    GridSearchCV,
    GroupKFold,
    KFold,
    cross_val_score,
    cross_validate,
)
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler, scale

from optuna_treecv import TreeCVObjective
from optuna_treecv._cli import main
from sklearn_ext import (
    PegasosClassifier,
    TreeCVEstimator,
    TreeCVSearchCV,
    TreeCVSplitter,
    tree_cross_validate,
)
from sklearn_ext.model_selection import TreeCVFallbackWarning, TreeCVRegimeWarning

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return scale(X[:240]), y[:240]


def _trial_value(estimator, X, y, *, cv, grid, **kwargs):
    """The value of one ``TreeCVObjective`` trial at the grid's first point."""
    space = {name: CategoricalDistribution(values) for name, values in grid.items()}
    objective = TreeCVObjective(estimator, space, X, y, cv=cv, **kwargs)
    trial = FixedTrial({name: values[0] for name, values in grid.items()})
    value = objective(trial)
    return value, trial.user_attrs["cv"]


def _splits(table, n_splits):
    return np.array([table[f"split{i}_test_score"][0] for i in range(n_splits)])


# -- a purged splitter: training rows that are not the complement ----------------
class PurgedKFold(KFold):
    """K-fold that leaves the ``gap`` rows after each test fold out of training."""

    def __init__(self, n_splits=4, gap=5):
        super().__init__(n_splits)
        self.gap = gap

    def split(self, X, y=None, groups=None):
        for train, test in super().split(X, y, groups):
            purge = np.arange(test[-1] + 1, test[-1] + 1 + self.gap)
            yield np.setdiff1d(train, purge), test


def test_purged_splitter_refused_by_the_tree_in_every_door(cancer):
    X, y = cancer
    cv = PurgedKFold()
    message = "are not the complement of its test folds"
    with pytest.raises(ValueError, match=message):
        tree_cross_validate(PegasosClassifier(), X, y, cv=cv, return_run_info=True)
    with pytest.raises(ValueError, match=message):
        TreeCVSearchCV(PegasosClassifier(), {"alpha": [1e-3]}, cv=cv).fit(X, y)
    with pytest.raises(ValueError, match=message):
        _trial_value(PegasosClassifier(), X, y, cv=cv, grid={"alpha": [1e-3]})


def test_purged_splitter_standard_is_cross_validate_in_every_door(cancer):
    X, y = cancer
    cv = PurgedKFold()
    learner = SGDClassifier(max_iter=5, tol=None, random_state=0)
    reference = cross_validate(learner, X, y, cv=cv)["test_score"]
    direct = tree_cross_validate(
        learner, X, y, cv=cv, method="standard", return_run_info=True
    )
    search = TreeCVSearchCV(
        learner, {"alpha": [1e-4]}, cv=cv, method="standard", refit=False
    ).fit(X, y)
    value, attrs = _trial_value(
        learner, X, y, cv=cv, grid={"alpha": [1e-4]}, backend="standard"
    )
    assert_array_equal(direct["test_score"], reference)
    assert_array_equal(_splits(search.cv_results_, 4), reference)
    assert value == pytest.approx(reference.mean(), abs=1e-15)


# -- data as given: DataFrames by column name, NaN, nested lists ----------------------
def _frame(cancer, *, nan: bool = False):
    """Five numeric columns, and a text column or NaN in the first."""
    X, y = cancer
    frame = pd.DataFrame(X[:, :5], columns=[f"f{i}" for i in range(5)])
    if nan:
        frame.loc[::5, "f0"] = np.nan
    else:
        frame["colour"] = np.where(y == 1, "red", "blue")
        frame.loc[::7, "colour"] = "green"
    return frame, y


def _column_pipeline():
    encode = ColumnTransformer(
        [
            ("num", StandardScaler(), ["f0", "f1", "f2", "f3", "f4"]),
            ("cat", OneHotEncoder(), ["colour"]),
        ]
    )
    return make_pipeline(encode, SGDClassifier(max_iter=20, tol=None, random_state=0))


def _imputer_pipeline():
    return make_pipeline(
        SimpleImputer(), SGDClassifier(max_iter=20, tol=None, random_state=0)
    )


@pytest.mark.parametrize(
    "make, nan", [(_column_pipeline, False), (_imputer_pipeline, True)], ids=str
)
def test_frames_and_nan_reach_the_pipeline_in_every_door(cancer, make, nan):
    X, y = _frame(cancer, nan=nan)
    cv = KFold(4)
    grid = {"sgdclassifier__alpha": [1e-4]}
    reference = cross_validate(make(), X, y, cv=cv)["test_score"]
    direct = tree_cross_validate(
        make(), X, y, cv=cv, method="standard", return_run_info=True
    )
    search = TreeCVSearchCV(make(), grid, cv=cv, method="standard", refit=False)
    search.fit(X, y)
    value, attrs = _trial_value(make(), X, y, cv=cv, grid=grid, backend="standard")
    assert direct["backend"] == attrs["backend"] == "standard"
    assert_array_equal(direct["test_score"], reference)
    assert_array_equal(_splits(search.cv_results_, 4), reference)
    assert value == pytest.approx(reference.mean(), abs=1e-15)


@pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")
@pytest.mark.parametrize(
    "make, nan, backend",
    [(_column_pipeline, False, "python_tree"), (_imputer_pipeline, True, "standard")],
    ids=["streams", "falls-back"],
)
def test_a_pipeline_has_one_outcome_in_every_door(cancer, make, nan, backend):
    X, y = _frame(cancer, nan=nan)
    cv = KFold(4)
    grid = {"sgdclassifier__alpha": [1e-4]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TreeCVFallbackWarning)  # the imputer's
        direct = tree_cross_validate(make(), X, y, cv=cv, return_run_info=True)
        search = TreeCVSearchCV(make(), grid, cv=cv, refit=False).fit(X, y)
        value, attrs = _trial_value(make(), X, y, cv=cv, grid=grid)
    assert direct["backend"] == attrs["backend"] == backend
    assert_array_equal(_splits(search.cv_results_, 4), direct["test_score"])
    assert value == pytest.approx(direct["test_score"].mean(), abs=1e-15)


@pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")
@pytest.mark.parametrize(
    "learner",
    [SGDClassifier(random_state=0), PegasosClassifier(), KNeighborsClassifier()],
    ids=lambda e: type(e).__name__,
)
def test_nested_list_X_gives_the_arrays_scores(cancer, learner):
    X, y = cancer
    name = "n_neighbors" if isinstance(learner, KNeighborsClassifier) else "alpha"
    grid = {name: [learner.get_params()[name]]}
    arrays = tree_cross_validate(learner, X, y, cv=4, return_run_info=True)
    lists = tree_cross_validate(learner, X.tolist(), y, cv=4, return_run_info=True)
    assert lists["backend"] == arrays["backend"]
    assert_array_equal(lists["test_score"], arrays["test_score"])
    search = TreeCVSearchCV(learner, grid, cv=4, refit=True).fit(X.tolist(), y)
    assert_array_equal(_splits(search.cv_results_, 4), arrays["test_score"])
    value, _ = _trial_value(learner, X.tolist(), y, cv=4, grid=grid)
    assert value == pytest.approx(arrays["test_score"].mean(), abs=1e-15)


# -- class_weight="balanced": the tree cannot, so it falls back -----------------------
def test_balanced_class_weight_falls_back_in_every_door(cancer):
    X, y = cancer
    learner = SGDClassifier(class_weight="balanced", random_state=0)
    message = r"class_weight='balanced', which weighs classes by their counts"
    reference = cross_validate(learner, X, y, cv=KFold(4))["test_score"]
    with pytest.warns(TreeCVFallbackWarning, match=message):
        direct = tree_cross_validate(learner, X, y, cv=KFold(4), return_run_info=True)
    assert direct["backend"] == "standard"
    assert_array_equal(direct["test_score"], reference)
    with pytest.warns(TreeCVFallbackWarning, match=message):
        value, attrs = _trial_value(learner, X, y, cv=KFold(4), grid={"alpha": [1e-4]})
    assert attrs["backend"] == "standard"
    with pytest.raises(TypeError, match="method='treecv' cannot run SGDClassifier"):
        tree_cross_validate(learner, X, y, cv=4, method="treecv", return_run_info=True)
    # scikit-learn's own search of the streaming wrapper: a clear refusal.
    grid = GridSearchCV(TreeCVEstimator(learner), {"batch_size": [64]}, cv=KFold(4))
    with pytest.raises(ValueError, match="cannot take class_weight='balanced'"):
        grid.set_params(error_score="raise").fit(X, y)


# -- scoring=None is the estimator's score, as in cross_validate ----------------------
@pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")
def test_scoring_none_for_a_clusterer_is_its_score_in_every_door():
    X, _ = load_iris(return_X_y=True)
    learner = MiniBatchKMeans(n_clusters=3, random_state=0, n_init=1)
    direct = tree_cross_validate(
        learner, X, cv=5, return_estimator=True, return_run_info=True
    )
    search = TreeCVSearchCV(learner, {"n_clusters": [3]}, cv=5, refit=False).fit(X)
    value, _ = _trial_value(learner, X, None, cv=5, grid={"n_clusters": [3]})
    assert_array_equal(_splits(search.cv_results_, 5), direct["test_score"])
    assert value == pytest.approx(direct["test_score"].mean(), abs=1e-12)
    # The scale of KMeans.score (minus the test rows' inertia), not a mean.
    assert direct["test_score"].mean() < -5


@pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")
@pytest.mark.parametrize("learner", [SGDOneClassSVM(), Birch()], ids=str)
def test_scoring_none_without_score_is_refused_in_every_door(learner):
    X, _ = load_iris(return_X_y=True)
    message = "should have a 'score' method"
    name = "tol" if isinstance(learner, SGDOneClassSVM) else "threshold"
    grid = {name: [learner.get_params()[name]]}
    with pytest.raises(TypeError, match=message):
        cross_validate(learner, X, cv=4)
    with pytest.raises(TypeError, match=message):
        tree_cross_validate(learner, X, cv=4, return_run_info=True)
    with pytest.raises(TypeError, match=message):
        TreeCVSearchCV(learner, grid, cv=4).fit(X)
    with pytest.raises(TypeError, match=message):
        _trial_value(learner, X, None, cv=4, grid=grid)


# -- method="standard" is cross_validate, in the splitter's own order -----------------
def test_standard_follows_the_splitters_order_for_order_sensitive_learners(cancer):
    X, y = cancer
    groups = np.arange(len(y)) % 6
    cv = GroupKFold(3)
    learner = SGDClassifier(max_iter=1, tol=None, shuffle=False, random_state=0)
    reference = cross_validate(learner, X, y, cv=cv, groups=groups)["test_score"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter=1 does not converge
        direct = tree_cross_validate(
            learner, X, y, groups=groups, cv=cv, method="standard", return_run_info=True
        )
        search = TreeCVSearchCV(
            learner, {"alpha": [1e-4, 1e-2]}, cv=cv, method="standard"
        ).fit(X, y, groups=groups)
        refit = cross_val_score(
            clone(search.best_estimator_), X, y, cv=cv, groups=groups
        )
        grid = GridSearchCV(learner, {"alpha": [1e-4, 1e-2]}, cv=cv).fit(
            X, y, groups=groups
        )
    assert_array_equal(direct["test_score"], reference)
    assert search.best_score_ == pytest.approx(refit.mean(), abs=1e-15)
    assert_allclose(
        search.cv_results_["mean_test_score"], grid.cv_results_["mean_test_score"]
    )


@pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")
def test_best_score_is_the_cv_of_the_returned_model(cancer):
    # The tree's folds are one pass in the splitter's order: a TreeCVSplitter
    # lists each fold's training rows in the order the tree feeds them.
    X, y = cancer
    cv = TreeCVSplitter(4)
    search = TreeCVSearchCV(
        SGDClassifier(random_state=0), {"alpha": [1e-4, 1e-2]}, cv=cv
    ).fit(X, y)
    again = cross_val_score(clone(search.best_estimator_), X, y, cv=cv)
    assert search.best_score_ == pytest.approx(again.mean(), abs=1e-12)


def test_tree_cv_estimator_in_grid_search_matches_the_search(cancer):
    X, y = cancer
    learner = SGDClassifier(max_iter=1, tol=None, shuffle=False, random_state=0)
    grid = GridSearchCV(
        TreeCVEstimator(learner), {"estimator__alpha": [1e-4, 1e-2]}, cv=KFold(4)
    ).fit(X, y)
    search = TreeCVSearchCV(learner, {"alpha": [1e-4, 1e-2]}, cv=KFold(4)).fit(X, y)
    assert search.best_params_["alpha"] == grid.best_params_["estimator__alpha"]


# -- decisions made once ---------------------------------------------------------------
def _count_resolves(monkeypatch):
    from sklearn_ext.model_selection import _core

    calls = []
    original = _core.resolve_backend

    def counting(*args, **kwargs):
        calls.append(args[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(_core, "resolve_backend", counting)
    return calls


def test_the_resolver_runs_once_per_candidate(cancer, monkeypatch):
    X, y = cancer
    calls = _count_resolves(monkeypatch)
    TreeCVSearchCV(PegasosClassifier(), {"alpha": [1e-4, 1e-3, 1e-2]}, cv=4).fit(X, y)
    assert len(calls) == 3 + 1  # each candidate, and the search's store


def test_the_resolver_runs_once_per_trial(cancer, monkeypatch):
    X, y = cancer
    space = {"alpha": CategoricalDistribution([1e-4, 1e-3])}
    objective = TreeCVObjective(PegasosClassifier(), space, X, y, cv=4)
    calls = _count_resolves(monkeypatch)
    study = optuna.create_study(direction="maximize")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study.optimize(objective, n_trials=5)
    assert len(calls) == 5


def test_notes_are_said_once_per_search_and_study(cancer):
    X, y = cancer
    grid = {"alpha": [1e-4, 1e-3, 1e-2]}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        TreeCVSearchCV(SGDClassifier(random_state=0), grid, cv=4).fit(X, y)
    assert sum(w.category is TreeCVRegimeWarning for w in caught) == 1
    space = {"alpha": CategoricalDistribution(grid["alpha"])}
    objective = TreeCVObjective(SGDClassifier(random_state=0), space, X, y, cv=4)
    study = optuna.create_study(direction="maximize")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        study.optimize(objective, n_trials=6)
    assert sum(w.category is TreeCVRegimeWarning for w in caught) == 1


def test_a_failing_fit_is_reported_as_cross_validate_reports_it(cancer):
    X, y = cancer
    single = np.zeros_like(y)
    for learner in (SGDClassifier(random_state=0), PegasosClassifier()):
        with pytest.raises(ValueError) as tree_error:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree_cross_validate(
                    learner, X, single, cv=KFold(4), return_run_info=True
                )
        with pytest.raises(ValueError) as sklearn_error:
            cross_validate(learner, X, single, cv=KFold(4))
        assert "All the 4 fits failed" in str(tree_error.value)
        assert "All the 4 fits failed" in str(sklearn_error.value)


def test_the_command_line_runs_the_same_core(capsys, tmp_path):
    argv = ["tune", "sgd", "digits", "--cv", "4", "--n-trials", "3"]
    argv += ["--storage", f"sqlite:///{tmp_path}/s.db"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    notes = [w for w in caught if w.category is TreeCVRegimeWarning]
    assert len(notes) <= 1


def test_the_command_line_says_why_it_falls_back(capsys):
    argv = ["cv", "sgd", "iris", "--cv", "4", "--set", "class_weight=balanced"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    # The learner runs in a pipeline after the CLI's scaler (issue 31).
    assert (
        "No fast backend runs SGDClassifier (sgdclassifier__class_weight='balanced'"
        in out
    )
    assert "standard" in out and "python_tree" not in out


def _count_digests(monkeypatch, shape):
    from sklearn_ext.utils import _hashing

    reads = []
    original = _hashing._array_digest

    def counting(array, memo):
        if getattr(array, "shape", None) == shape:
            reads.append(shape)
        return original(array, memo)

    monkeypatch.setattr(_hashing, "_array_digest", counting)
    return reads


def test_X_is_hashed_once_per_search(cancer, monkeypatch):
    from sklearn.linear_model import Ridge

    X, y = cancer
    X = X.copy()
    reads = _count_digests(monkeypatch, X.shape)
    grid = {"alpha": [0.1, 1.0, 10.0, 100.0]}
    search = TreeCVSearchCV(Ridge(), grid, cv=5, refit=False).fit(X, y)
    assert search.cv_results_["mean_test_score"].shape == (4,)
    assert len(reads) == 1
    TreeCVSearchCV(Ridge(), grid, cv=5, refit=False).fit(X, y)
    assert len(reads) == 2  # a new fit reads the data again


def test_X_is_hashed_once_per_study(cancer, monkeypatch):
    from sklearn.linear_model import Ridge

    X, y = cancer
    X = X.copy()
    space = {"alpha": CategoricalDistribution([0.1, 1.0, 10.0])}
    objective = TreeCVObjective(Ridge(), space, X, y, cv=5)
    reads = _count_digests(monkeypatch, X.shape)
    study = optuna.create_study(direction="maximize")
    study.optimize(objective, n_trials=5)
    assert len(study.trials) == 5
    assert len(reads) == 1


class _BrokenSGD(SGDClassifier):
    """An SGD classifier whose updates fail."""

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        raise RuntimeError("the update failed")


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_failing_update_is_a_failed_fit_in_every_worker(cancer, n_jobs):
    X, y = cancer
    learner = _BrokenSGD(max_iter=1, tol=None, shuffle=False)
    with pytest.raises(ValueError, match="All the 8 fits failed") as error:
        tree_cross_validate(learner, X, y, cv=8, n_jobs=n_jobs, return_run_info=True)
    assert "the update failed" in str(error.value)
    with pytest.raises(RuntimeError, match="the update failed"):
        tree_cross_validate(
            learner,
            X,
            y,
            cv=8,
            n_jobs=n_jobs,
            error_score="raise",
            return_run_info=True,
        )


def test_multilabel_knn_has_one_outcome_in_every_door(capsys):
    # k-NN has no partial_fit: the fallback is the same note (verbose > 0) and
    # recorded backend in every door, and no warning.
    rng = np.random.default_rng(10)
    X = rng.normal(size=(80, 3))
    Y = (X[:, :2] > 0).astype(int)
    cv = KFold(4)
    reference = cross_validate(KNeighborsClassifier(3), X, Y, cv=cv)["test_score"]
    grid = {"n_neighbors": [3]}
    with warnings.catch_warnings():
        warnings.simplefilter("error", TreeCVFallbackWarning)
        direct = tree_cross_validate(
            KNeighborsClassifier(3), X, Y, cv=cv, return_run_info=True, verbose=1
        )
        search = TreeCVSearchCV(KNeighborsClassifier(), grid, cv=cv, verbose=1)
        search.fit(X, Y)
        value, attrs = _trial_value(KNeighborsClassifier(), X, Y, cv=cv, grid=grid)
    assert capsys.readouterr().out.count("one-dimensional y") == 2
    assert direct["backend"] == attrs["backend"] == "standard"
    assert_array_equal(direct["test_score"], reference)
    assert_array_equal(_splits(search.cv_results_, 4), reference)
    assert value == pytest.approx(reference.mean(), abs=1e-15)


def test_cv_compares_like_with_like(capsys):
    # The time ratio is against standard CV of the same one-pass models; the
    # learner's own fit is reported apart, as a different regime.
    assert main(["cv", "sgd", "digits", "--cv", "4"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    tree = next(line for line in lines if line.startswith("python_tree "))
    standard = next(line for line in lines if line.startswith("standard "))
    assert tree.split()[1:3] == standard.split()[1:3]  # the same scores
    assert "standard CV of the same models (one ordered pass each)" in out
    assert "SGDClassifier.fit, a different training regime, scores" in out
    assert "faster than standard CV" not in out
    assert main(["cv", "sgd", "digits", "--cv", "4", "--backend", "standard"]) == 0
    out = capsys.readouterr().out
    assert "python_tree" not in out and "a different training regime" not in out
