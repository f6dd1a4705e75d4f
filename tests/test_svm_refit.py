"""The refit on all rows seeded from the CV folds' solutions (issue 20)."""

import math
import warnings
from dataclasses import replace

import numpy as np
import optuna
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from optuna.distributions import CategoricalDistribution
from sklearn.datasets import make_classification
from sklearn.linear_model import SGDClassifier
from sklearn.preprocessing import scale

from optuna_treecv import TreeCVObjective, refit_estimator
from sklearn_ext import TreeCVSearchCV
from sklearn_ext.svm import (
    AlphaSeededSVC,
    WarmStartStore,
    alpha_seeded_cv,
    svm_c_path_cv,
)
from sklearn_ext.svm._solver import PairProblem
from sklearn_ext.svm._warm_start import StoredSolution


@pytest.fixture
def three_classes():
    X, y = make_classification(
        n_samples=300,
        n_features=8,
        n_informative=5,
        n_classes=3,
        flip_y=0.02,
        random_state=2,
    )
    return scale(X), y


def _cv_then_refit(X, y, **params):
    store = WarmStartStore()
    alpha_seeded_cv(
        AlphaSeededSVC(warm_start_store=store, **params), X, y, cv=10, n_jobs=1
    )
    seeded = AlphaSeededSVC(warm_start_store=store, **params).fit(X, y)
    cold = AlphaSeededSVC(**params).fit(X, y)
    return seeded, cold


@pytest.mark.parametrize("data", ["svm_binary", "three_classes"])
@pytest.mark.parametrize("class_weight", [None, "balanced"])
def test_refit_from_folds_is_the_cold_model(data, class_weight, request):
    # Solved to a tight tol, the seeded refit is LIBSVM's model: same dual
    # objective, same decision values.
    X, y = request.getfixturevalue(data)
    params = dict(C=2.0, gamma=0.1, tol=1e-7, class_weight=class_weight)
    seeded, cold = _cv_then_refit(X, y, **params)
    assert seeded.warm_start_from_fold_.all()
    assert_array_equal(seeded.warm_start_C_, 2.0)
    assert not seeded.warm_start_skipped_.any()
    assert_allclose(seeded.objective_, cold.objective_, rtol=1e-8)
    assert_allclose(seeded.decision_function(X), cold.decision_function(X), atol=1e-5)
    assert_array_equal(seeded.predict(X), cold.predict(X))


@pytest.mark.parametrize("data", ["svm_binary", "three_classes"])
def test_refit_from_folds_saves_iterations(data, request):
    # At the default tol the seed saves SMO iterations: this fails if it is
    # not used (a cold start makes exactly the cold fit's iterations).
    X, y = request.getfixturevalue(data)
    seeded, cold = _cv_then_refit(X, y, C=2.0, gamma=0.1)
    assert seeded.warm_start_from_fold_.all()
    assert seeded.n_iter_.sum() < 0.9 * cold.n_iter_.sum()
    assert_allclose(seeded.objective_, cold.objective_, rtol=1e-3)
    assert np.mean(seeded.predict(X) == cold.predict(X)) >= 0.99


def test_refit_seed_needs_the_same_C(svm_binary):
    # Folds at other values of C do not seed a refit (no cross-C fold seeds).
    X, y = svm_binary
    store = WarmStartStore()
    alpha_seeded_cv(
        AlphaSeededSVC(C=1.0, gamma=0.1, warm_start_store=store), X, y, cv=5
    )
    model = AlphaSeededSVC(C=3.0, gamma=0.1, warm_start_store=store).fit(X, y)
    assert not model.warm_start_from_fold_.any()
    assert math.isnan(model.warm_start_C_[0])


def test_refit_on_other_data_starts_cold_and_says_so(svm_binary):
    X, y = svm_binary
    store = WarmStartStore()
    alpha_seeded_cv(
        AlphaSeededSVC(C=2.0, gamma=0.1, warm_start_store=store), X, y, cv=5
    )
    changed = X.copy()
    changed[0, 0] += 1.0
    with pytest.warns(UserWarning, match="fingerprint mismatch"):
        model = AlphaSeededSVC(C=2.0, gamma=0.1, warm_start_store=store).fit(changed, y)
    cold = AlphaSeededSVC(C=2.0, gamma=0.1).fit(changed, y)
    assert not model.warm_start_from_fold_.any()
    assert_array_equal(model.n_iter_, cold.n_iter_)
    assert_allclose(model.objective_, cold.objective_)


def test_refit_prefers_its_own_exact_skip(svm_binary):
    # A stored solution of the refit problem itself that is optimal as it is
    # wins over any fold seed.
    X, y = svm_binary
    store = WarmStartStore()
    model = AlphaSeededSVC(C=2.0, gamma=0.1, warm_start_store=store)
    alpha_seeded_cv(model, X, y, cv=5)
    first = AlphaSeededSVC(C=2.0, gamma=0.1, warm_start_store=store).fit(X, y)
    again = AlphaSeededSVC(C=2.0, gamma=0.1, warm_start_store=store).fit(X, y)
    assert first.warm_start_from_fold_.all()
    assert again.warm_start_skipped_.all() and not again.warm_start_from_fold_.any()
    assert_array_equal(again.n_iter_, 0)


def test_search_refit_is_seeded_from_its_folds(three_classes):
    X, y = three_classes
    search = TreeCVSearchCV(
        AlphaSeededSVC(gamma=0.1), {"C": [0.5, 2.0, 8.0]}, cv=5
    ).fit(X, y)
    best = search.best_estimator_
    cold = AlphaSeededSVC(gamma=0.1, C=search.best_params_["C"]).fit(X, y)
    assert best.warm_start_from_fold_.all()
    assert best.warm_start_store is None  # the search's store is not kept
    assert best.n_iter_.sum() < cold.n_iter_.sum()
    assert np.mean(best.predict(X) == cold.predict(X)) >= 0.99

    opted_out = TreeCVSearchCV(
        AlphaSeededSVC(gamma=0.1, warm_start_store=False),
        {"C": [0.5, 2.0, 8.0]},
        cv=5,
    ).fit(X, y)
    assert not opted_out.best_estimator_.warm_start_from_fold_.any()
    assert_array_equal(opted_out.best_estimator_.n_iter_, cold.n_iter_)


def test_c_path_store_seeds_a_later_fit(svm_binary):
    X, y = svm_binary
    store = WarmStartStore()
    svm_c_path_cv(
        AlphaSeededSVC(gamma=0.1), X, y, [0.5, 2.0], cv=5, warm_start_store=store
    )
    model = AlphaSeededSVC(C=0.5, gamma=0.1, warm_start_store=store).fit(X, y)
    assert model.warm_start_from_fold_.all()


def test_refit_estimator_with_the_objectives_store(svm_binary):
    X, y = svm_binary
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = {"C": CategoricalDistribution([0.5, 2.0])}
    objective = TreeCVObjective(AlphaSeededSVC(gamma=0.1), space, X, y, cv=5)
    study = optuna.create_study(direction="maximize")
    study.optimize(objective, n_trials=3)
    store = objective.warm_start_store_
    assert isinstance(store, WarmStartStore)
    model = refit_estimator(
        study, AlphaSeededSVC(gamma=0.1), X, y, warm_start_store=store
    )
    plain = refit_estimator(study, AlphaSeededSVC(gamma=0.1), X, y)
    assert model.warm_start_from_fold_.all()
    assert model.warm_start_store is None
    assert not plain.warm_start_from_fold_.any()
    assert model.n_iter_.sum() < plain.n_iter_.sum()
    assert np.mean(model.predict(X) == plain.predict(X)) >= 0.99
    off = TreeCVObjective(
        AlphaSeededSVC(gamma=0.1), space, X, y, cv=5, warm_start_store=False
    )
    assert off.warm_start_store_ is None
    sgd = TreeCVObjective(SGDClassifier(), {"alpha": space["C"]}, X, y, cv=5)
    assert sgd.warm_start_store_ is None  # a learner whose backend keeps none
    given = WarmStartStore()
    svm = TreeCVObjective(
        AlphaSeededSVC(gamma=0.1), space, X, y, cv=5, warm_start_store=given
    )
    assert svm.warm_start_store_ is given


def _solution(C, alpha, objective, rows):
    alpha = np.asarray(alpha, dtype=float)
    problem = PairProblem(
        0, 1, np.asarray(rows, dtype=np.intp), np.ones(len(alpha)), np.full(2, C), alpha
    )
    problem.G = np.full(len(alpha), -1.0)
    solution = StoredSolution.from_problem(C, problem)
    # The objective only ranks the candidates here.
    object.__setattr__(solution, "objective", objective)
    return solution


def test_lookup_folds_takes_the_lowest_objective_on_the_same_data():
    store = WarmStartStore()
    store.put(("k", "fold-a", 0, 1), "data", _solution(1.0, [0.1, 0.2], -3.0, [0, 1]))
    store.put(("k", "fold-b", 0, 1), "data", _solution(1.0, [0.3, 0.1], -5.0, [1, 2]))
    store.put(("k", "fold-c", 0, 1), "other", _solution(1.0, [0.3, 0.3], -9.0, [0, 2]))
    store.put(("k", "fold-d", 0, 1), "data", _solution(2.0, [0.3, 0.3], -9.0, [0, 2]))
    found, skip = store.lookup_folds(("k", "fit:data", 0, 1), "data", 1.0)
    assert not skip
    assert found.objective == -5.0
    assert_array_equal(found.rows, [1, 2])
    assert store.lookup_folds(("k", "fit:data", 0, 2), "data", 1.0) is None
    assert store.lookup_folds(("j", "fit:data", 0, 1), "data", 1.0) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert store.lookup_folds(("k", "fit:data", 0, 1), "data", 4.0) is None


def test_rows_are_kept_once_per_problem():
    store = WarmStartStore()
    first = _solution(1.0, [0.1, 0.2], -1.0, [3, 4])
    second = _solution(2.0, [0.1, 0.2], -1.0, [3, 4])
    store.put(("k", "fold", 0, 1), "data", first)
    store.put(("k", "fold", 0, 1), "data", second)
    # Two alphas and two gradients, one copy of the rows.
    assert store.nbytes == 2 * (2 * 16) + 16
    found, _ = store.lookup(("k", "fold", 0, 1), "data", 2.0)
    assert found.rows is None


def test_cli_final_svm_is_seeded_from_the_trials_folds(tmp_path, capsys):
    import joblib

    from optuna_treecv._cli import main

    path = tmp_path / "model.joblib"
    code = main(
        ["tune", "svc", "iris", "--cv", "3", "--n-trials", "3", "--no-baseline",
         "--pruner", "none", "--storage", f"sqlite:///{tmp_path / 'cli.db'}",
         "--study-name", "s", "--no-progress-bar", "--save-model", str(path),
         "--preprocess", "none"]  # Scaled, the SVC runs standard CV (issue 31).
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    model = joblib.load(path)
    assert model.warm_start_from_fold_.all()
    assert model.warm_start_store is None


def test_a_search_hashes_the_data_once(svm_binary, monkeypatch):
    # Every candidate keys its store by a hash of X and y: within one search
    # fit X is read once (data_scope), with the same value as outside it.
    import sklearn_ext.svm._warm_start as warm_start
    from sklearn_ext.utils._data_scope import data_scope

    X, y = svm_binary
    plain = warm_start.data_fingerprint(X, y)
    with data_scope():
        assert warm_start.data_fingerprint(X, y) == plain
        assert warm_start.data_fingerprint(X, y) == plain
    changed = X.copy()
    changed[0, 0] += 1.0
    with data_scope():
        assert warm_start.data_fingerprint(changed, y) != plain

    import sklearn_ext.utils._hashing as hashing

    reads = []
    array_digest = hashing._array_digest

    def counting(array, memo):
        reads.extend([array.shape] if array.shape == X.shape else [])
        return array_digest(array, memo)

    monkeypatch.setattr(hashing, "_array_digest", counting)
    TreeCVSearchCV(AlphaSeededSVC(gamma=0.1), {"C": [0.5, 1.0, 2.0]}, cv=3).fit(X, y)
    # One read for the three candidates and the refit.
    assert len(reads) == 1


@pytest.mark.parametrize("gammas", [None, [0.05, 0.2]])
def test_c_path_on_two_chains_is_the_one_chain_path(svm_binary, monkeypatch, gammas):
    # Each C runs its folds as two seeding chains (both cores); every fold is
    # solved to tol, so the table is that of one chain.
    import sklearn_ext.svm._cv as cv

    X, y = svm_binary
    monkeypatch.setattr(cv, "MIN_ROWS_FOR_CHAINS", 0)
    runs = []
    run_chains = cv._run_chains

    def spy(run, plan, store, chains, random_state):
        runs.append(len(chains))
        yield from run_chains(run, plan, store, chains, random_state)

    monkeypatch.setattr(cv, "_run_chains", spy)
    Cs = [0.25, 1.0, 4.0, 16.0]
    results = {}
    for n_threads in (1, 2):
        monkeypatch.setattr(cv, "available_threads", lambda n=n_threads: n)
        results[n_threads] = svm_c_path_cv(
            AlphaSeededSVC(gamma=0.1, tol=1e-7), X, y, Cs, gammas=gammas, cv=6
        )
    n_candidates = len(Cs) * (1 if gammas is None else len(gammas))
    assert runs == [2] * n_candidates  # one chain never starts threads
    one, two = results[1], results[2]
    for i in range(6):
        assert_array_equal(one[f"split{i}_test_score"], two[f"split{i}_test_score"])
    assert_array_equal(one["rank_test_score"], two["rank_test_score"])
    assert two["warm_start_hits"].sum() > 0  # the cross-C seeds are kept


def test_search_refit_from_folds_precomputed_and_probability(svm_binary):
    from sklearn.metrics.pairwise import rbf_kernel

    X, y = svm_binary
    K = rbf_kernel(X, gamma=0.1)
    search = TreeCVSearchCV(
        AlphaSeededSVC(kernel="precomputed"), {"C": [0.5, 2.0]}, cv=5
    ).fit(K, y)
    best = search.best_estimator_
    cold = AlphaSeededSVC(kernel="precomputed", C=search.best_params_["C"]).fit(K, y)
    assert best.warm_start_from_fold_.all()
    assert np.mean(best.predict(K) == cold.predict(K)) >= 0.99

    params = dict(probability=True, random_state=0, gamma=0.1)
    search = TreeCVSearchCV(AlphaSeededSVC(**params), {"C": [0.5, 2.0]}, cv=5)
    best = search.fit(X, y).best_estimator_
    plain = AlphaSeededSVC(C=search.best_params_["C"], **params).fit(X, y)
    assert best.warm_start_from_fold_.all()
    assert_allclose(best.predict_proba(X), plain.predict_proba(X), atol=1e-2)


def test_artifact_folds_seed_a_refit_in_another_process(svm_binary, tmp_path):
    # A worker's published folds carry their rows: a fresh store that loads
    # them (untrusted: gradients recomputed) seeds the final model from them.
    from optuna_treecv import ArtifactWarmStartStore

    X, y = svm_binary
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize")
    study.enqueue_trial({"C": 2.0})
    space = {"C": CategoricalDistribution([2.0])}
    estimator = AlphaSeededSVC(gamma=0.1, tol=1e-7)
    first = ArtifactWarmStartStore(tmp_path / "artifacts", study)
    objective = TreeCVObjective(estimator, space, X, y, cv=5, warm_start_store=first)
    study.optimize(objective, n_trials=1)
    second = ArtifactWarmStartStore(tmp_path / "artifacts", study)
    assert second.sync() == 1
    model = refit_estimator(study, estimator, X, y, warm_start_store=second)
    cold = AlphaSeededSVC(gamma=0.1, tol=1e-7, C=2.0).fit(X, y)
    assert model.warm_start_from_fold_.all()
    assert_allclose(model.objective_, cold.objective_, rtol=1e-8)
    assert_array_equal(model.predict(X), cold.predict(X))


def test_artifact_rows_round_trip_and_checks(tmp_path):
    from optuna_treecv._warm_start import read_solutions, write_solutions

    solution = _solution(1.0, [0.1, 0.2], -1.0, [3, 7])
    path = str(tmp_path / "s.npz")
    write_solutions(path, [(("k", "r", 0, 1), "d", solution)])
    [(_, _, back)] = read_solutions(path)
    assert_array_equal(back.rows, [3, 7]) and not back.trusted
    for bad in ([7, 3], [3, 3], [-1, 3], [3]):
        forged = _solution(1.0, [0.1, 0.2], -1.0, [0, 1])
        object.__setattr__(forged, "rows", np.array(bad))
        write_solutions(path, [(("k", "r", 0, 1), "d", forged)])
        with pytest.raises(ValueError, match="malformed rows"):
            read_solutions(path)


def test_refit_estimator_refuses_a_store_that_is_not_one(svm_binary):
    # A wrong warm_start_store is refused with the parameter and the value named,
    # never ignored (the refit would silently start cold).
    X, y = svm_binary
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize")
    study.add_trial(
        optuna.trial.create_trial(
            params={"C": 1.0},
            distributions={"C": CategoricalDistribution([1.0])},
            value=0.5,
        )
    )
    with pytest.raises(ValueError, match="'warm_start_store' parameter.*Got 'oops'"):
        refit_estimator(study, AlphaSeededSVC(), X, y, warm_start_store="oops")


def test_seed_from_fold_needs_a_subset_of_the_rows(svm_binary):
    # A fold's rows seed a problem only when they are all among its rows;
    # otherwise the problem is left as it was (cold), never a wrong start.
    from sklearn_ext.svm import KernelStore
    from sklearn_ext.svm._solver import solve_pair
    from sklearn_ext.svm._warm_start import seed_from_fold

    X, y = svm_binary
    store = KernelStore(X, "rbf", 0.2, 3, 0.0, cache_size=10)
    y_pm = np.where(y == 1, 1.0, -1.0)

    def problem(idx):
        n = idx.shape[0]
        return PairProblem(
            0, 1, idx, y_pm[idx], np.ones(n), np.zeros(n), np.full(n, -1.0)
        )

    fold_rows = np.arange(0, 250, dtype=np.intp)
    fold = solve_pair(store, problem(fold_rows), tol=1e-3, max_iter=-1, shrinking=True)
    solution = StoredSolution.from_problem(1.0, fold)
    solution = replace(solution, rows=fold_rows)
    full = problem(np.arange(300, dtype=np.intp))
    assert seed_from_fold(store, solution, full)
    assert_array_equal(full.alpha[:250], fold.alpha)
    assert not full.alpha[250:].any()
    # Rows the problem lacks: 250..299, or only row 250.
    for rows in (np.arange(50, 300, dtype=np.intp), np.arange(1, 251, dtype=np.intp)):
        other = problem(fold_rows)
        before = other.alpha.copy()
        assert not seed_from_fold(store, replace(solution, rows=rows), other)
        assert_array_equal(other.alpha, before)
