"""The exact backend at the edges: it answers as ``fit`` and ``cross_validate`` do,
refuses what they refuse, and keys its statistics by content (issues 30 and 35)."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import load_digits, make_regression
from sklearn.linear_model import LinearRegression, Ridge
from sklearn.model_selection import KFold, LeaveOneOut, cross_validate
from sklearn.naive_bayes import CategoricalNB, GaussianNB, MultinomialNB
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor

from sklearn_ext import tree_cross_validate
from sklearn_ext.model_selection import (
    ExactStatisticsBackend,
    StatisticsCache,
    TreeCVFallbackWarning,
)


def _exact():
    return ExactStatisticsBackend(cache=StatisticsCache())


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X[:400], y[:400]


# -- keys by content ------------------------------------------------------------------
def test_knn_metric_params_arrays_are_keyed_by_all_their_values():
    # repr() of a weight vector over 1,000 values elides its middle: the second
    # weights reused the first one's neighbour lists (issue 35).
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 1200))
    y = (X[:, 600] > 0).astype(int)
    backend = _exact()
    for middle in (1.0, 1e4):
        w = np.ones(1200)
        w[600] = middle
        est = KNeighborsClassifier(3, metric="minkowski", metric_params={"w": w})
        ours = tree_cross_validate(
            est, X, y, cv=KFold(4), method=backend, return_run_info=True
        )
        ref = cross_validate(est, X, y, cv=KFold(4))
        assert_array_equal(ours["test_score"], ref["test_score"])
    assert backend.cache.misses == 2


def test_a_callable_metric_is_never_keyed():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    backend = _exact()
    for scale in (1.0, 3.0):

        def metric(a, b, scale=scale):
            return float(np.abs(a - b)[0] * scale + np.abs(a - b)[1:].sum())

        est = KNeighborsClassifier(3, metric=metric, algorithm="brute")
        ours = tree_cross_validate(
            est, X, y, cv=KFold(4), method=backend, return_run_info=True
        )
        ref = cross_validate(est, X, y, cv=KFold(4))
        assert_array_equal(ours["test_score"], ref["test_score"])
    assert len(backend.cache) == 0


def test_read_only_data_changed_through_an_earlier_view_is_seen():
    # Issue 35: the digest of a read-only X was remembered by identity, so a
    # change made through a writable view taken before gave a stale score.
    rng = np.random.default_rng(2)
    X = rng.normal(size=(80, 4))
    y = (X[:, 0] > 0).astype(int)
    view = X[:]
    X.setflags(write=False)
    backend = _exact()
    tree_cross_validate(
        GaussianNB(), X, y, cv=KFold(4), method=backend, return_run_info=True
    )
    view[:, 0] *= -1.0
    ours = tree_cross_validate(
        GaussianNB(), X, y, cv=KFold(4), method=backend, return_run_info=True
    )
    ref = cross_validate(GaussianNB(), X.copy(), y, cv=KFold(4))
    assert_array_equal(ours["test_score"], ref["test_score"])
    assert backend.cache.misses == 2


# -- refuse what fit refuses ----------------------------------------------------------
@pytest.mark.parametrize("estimator", [MultinomialNB(), GaussianNB(), Ridge()])
@pytest.mark.parametrize(
    "weights, message",
    [
        (np.where(np.arange(400) == 3, np.nan, 1.0), "sample_weight contains NaN"),
        (np.zeros(400), "at least one non-zero number"),
        (np.where(np.arange(400) == 5, np.inf, 1.0), "sample_weight contains inf"),
    ],
    ids=["nan", "zeros", "inf"],
)
def test_weights_fit_refuses_are_refused(digits, estimator, weights, message):
    # Chance-level scores (0.10 on digits) used to come back (issue 35).
    X, y = digits
    with pytest.raises(ValueError, match=message):
        cross_validate(
            estimator,
            X,
            y,
            cv=KFold(5),
            params={"sample_weight": weights},
            error_score="raise",
        )
    with pytest.raises(ValueError, match=message):
        tree_cross_validate(
            estimator,
            X,
            y,
            cv=KFold(5),
            method=_exact(),
            fit_params={"sample_weight": weights},
            return_run_info=True,
        )


def test_a_fold_with_only_zero_weights_is_refused(digits):
    X, y = digits
    weights = np.zeros(400)
    weights[:80] = 1.0  # only the first chunk: the first fold trains on zeros
    with pytest.raises(ValueError, match="training rows of split 0 have only zero"):
        tree_cross_validate(
            MultinomialNB(),
            X,
            y,
            cv=KFold(5),
            method=_exact(),
            fit_params={"sample_weight": weights},
            return_run_info=True,
        )


@pytest.mark.parametrize(
    "weights, message",
    [
        (np.ones(401), r"'sample_weight' parameter of \w+ must have shape \(400,\)"),
        (np.ones((400, 2)), r"must have shape \(400,\). Got shape \(400, 2\)"),
        (np.array(["a"] * 400), "'sample_weight' parameter of .* must hold numbers"),
    ],
    ids=["long", "2d", "text"],
)
@pytest.mark.parametrize("estimator", [MultinomialNB(), Ridge()])
def test_bad_weights_get_a_clear_error(digits, estimator, weights, message):
    X, y = digits
    with pytest.raises(ValueError, match=message):
        tree_cross_validate(
            estimator,
            X,
            y,
            cv=KFold(5),
            method=_exact(),
            fit_params={"sample_weight": weights},
            return_run_info=True,
        )


def test_negative_ridge_weights_get_a_clear_error(digits):
    X, y = digits
    weights = np.ones(400)
    weights[7] = -2.0
    with pytest.raises(ValueError, match=r"non-negative .* Got -2.0 at row 7"):
        tree_cross_validate(
            Ridge(),
            X,
            y,
            cv=KFold(5),
            method=_exact(),
            fit_params={"sample_weight": weights},
            return_run_info=True,
        )


def test_gaussian_priors_fit_refuses_are_refused(digits):
    X, y = digits
    binary = y < 2
    est = GaussianNB(priors=[0.3, 0.3])
    backend = ExactStatisticsBackend()
    assert "sum of the priors should be 1" in backend.refusal(est, X, y[binary])
    assert backend.refusal(GaussianNB(priors=[0.5, 0.5]), X, y[binary]) is None
    # Asked for by name, the backend says why not; "auto" falls back to the
    # standard backend, whose fits fail as they do in cross_validate.
    with pytest.raises(TypeError, match="The sum of the priors should be 1"):
        tree_cross_validate(
            est,
            X[binary],
            y[binary],
            cv=KFold(5),
            method=_exact(),
            return_run_info=True,
        )
    with pytest.raises(ValueError, match="The sum of the priors should be 1"):
        cross_validate(est, X[binary], y[binary], cv=KFold(5))
    with pytest.raises(ValueError, match="The sum of the priors should be 1"):
        tree_cross_validate(
            est, X[binary], y[binary], cv=KFold(5), return_run_info=True
        )


def test_unseen_category_gets_a_clear_error():
    rng = np.random.default_rng(3)
    X = rng.integers(0, 3, size=(60, 3))
    y = rng.integers(0, 2, size=60)
    X[-5:, 1] = 7  # only in the last chunk
    with pytest.raises(ValueError, match=r"feature 1 .* category 7.*min_categories"):
        tree_cross_validate(
            CategoricalNB(), X, y, cv=KFold(5), method=_exact(), return_run_info=True
        )
    # With room for it, the scores are cross_validate's.
    est = CategoricalNB(min_categories=[3, 8, 3])
    ours = tree_cross_validate(
        est, X, y, cv=KFold(5), method=_exact(), return_run_info=True
    )
    assert_array_equal(
        ours["test_score"], cross_validate(est, X, y, cv=KFold(5))["test_score"]
    )
    with pytest.raises(ValueError, match=r"'min_categories' .* shape \(n_features,\)"):
        tree_cross_validate(
            CategoricalNB(min_categories=[3, 8]),
            X,
            y,
            cv=KFold(5),
            method=_exact(),
            return_run_info=True,
        )


# -- ridge: constant targets, conditioning, leave-one-out memory ----------------------
@pytest.mark.parametrize("estimator", [Ridge(), LinearRegression()])
def test_constant_target_scores_as_cross_validate(estimator):
    # R^2 0 used to come back on 4 of 5 folds where fit gives 1 (issue 35).
    X = np.random.default_rng(4).normal(size=(50, 3))
    y = np.full(50, 3.0)
    ours = tree_cross_validate(
        estimator, X, y, cv=KFold(5), method=_exact(), return_run_info=True
    )
    ref = cross_validate(estimator, X, y, cv=KFold(5))
    assert_array_equal(ours["test_score"], ref["test_score"])


def test_ill_conditioned_folds_are_fit():
    # Condition number about 1e12 at alpha 1e-12: the eigendecomposition
    # differed from fit by 8e-6; such folds are now fit as the docs promise.
    rng = np.random.default_rng(5)
    base = rng.normal(size=(60, 1))
    X = np.hstack(
        [base, base + 1e-6 * rng.normal(size=(60, 1)), rng.normal(size=(60, 2))]
    )
    y = X @ np.array([1.0, -1.0, 0.5, 2.0]) + 0.01 * rng.normal(size=60)
    est = Ridge(alpha=1e-12)
    ours = tree_cross_validate(
        est, X, y, cv=KFold(5), method=_exact(), return_run_info=True
    )
    ref = cross_validate(est, X, y, cv=KFold(5))
    assert_allclose(ours["test_score"], ref["test_score"], rtol=0, atol=1e-10)


def test_leave_one_out_keeps_a_bounded_number_of_factorisations():
    from sklearn_ext.model_selection._exact import _cache

    X, y = make_regression(n_samples=300, n_features=8, noise=1.0, random_state=0)
    cache = StatisticsCache()
    backend = ExactStatisticsBackend(cache=cache, gram_budget=2**14)
    scoring = "neg_mean_squared_error"
    for alpha in (0.5, 2.0):  # the second alpha recomputes what was dropped
        ours = tree_cross_validate(
            Ridge(alpha=alpha),
            X,
            y,
            cv=LeaveOneOut(),
            method=backend,
            scoring=scoring,
            return_run_info=True,
        )
        ref = cross_validate(
            Ridge(alpha=alpha), X, y, cv=LeaveOneOut(), scoring=scoring
        )
        assert ours["backend"] == "exact"
        assert_allclose(ours["test_score"], ref["test_score"], rtol=1e-9, atol=1e-9)
    ((_, stats),) = cache.items()
    per_fold = 9 * 9 * 8
    assert len(stats._folds) <= max(1, 2**14 // per_fold) < 300
    assert stats._folds.nbytes <= stats.reserved_bytes <= 2**14
    assert _cache._statistics_nbytes(stats) < 300 * per_fold


# -- nearest neighbours: ties and threads ---------------------------------------------
@pytest.mark.parametrize("weights", ["uniform", "distance"])
@pytest.mark.parametrize("n_neighbors", [1, 4, 9])
def test_knn_ties_are_resolved_as_scikit_learn_does(weights, n_neighbors):
    # Small integer features: many rows at exactly equal distances (issue 35:
    # fold accuracies differed from cross_validate by up to 5 points on a9a).
    rng = np.random.default_rng(6)
    X = rng.integers(0, 3, size=(300, 4)).astype(float)
    y = rng.integers(0, 3, size=300)
    est = KNeighborsClassifier(n_neighbors, weights=weights)
    cv = KFold(5, shuffle=True, random_state=0)
    ours = tree_cross_validate(est, X, y, cv=cv, method=_exact(), return_run_info=True)
    ref = cross_validate(est, X, y, cv=cv)
    assert_array_equal(ours["test_score"], ref["test_score"])
    reg = KNeighborsRegressor(n_neighbors, weights=weights)
    ours = tree_cross_validate(
        reg, X, y.astype(float), cv=cv, method=_exact(), return_run_info=True
    )
    ref = cross_validate(reg, X, y.astype(float), cv=cv)
    assert_allclose(ours["test_score"], ref["test_score"], rtol=0, atol=1e-12)


def test_knn_n_jobs_does_not_change_a_score():
    rng = np.random.default_rng(7)
    X = rng.integers(0, 2, size=(200, 6)).astype(float)
    y = rng.integers(0, 2, size=200)
    backend = _exact()
    scores = [
        tree_cross_validate(
            KNeighborsClassifier(5, n_jobs=n_jobs),
            X,
            y,
            cv=KFold(4),
            method=backend,
            return_run_info=True,
        )["test_score"]
        for n_jobs in (1, 2, 1)
    ]
    ref = cross_validate(KNeighborsClassifier(5), X, y, cv=KFold(4))["test_score"]
    for score in scores:
        assert_array_equal(score, ref)


# -- refusal: data the exact path cannot take falls back ------------------------------
def test_refusal_names_what_the_exact_backend_cannot_take():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(30, 3))
    labels = rng.integers(0, 2, size=(30, 2))  # multilabel
    backend = ExactStatisticsBackend()
    reason = backend.refusal(KNeighborsClassifier(), X, labels)
    assert "one-dimensional y" in reason and "(30, 2)" in reason
    assert "one-dimensional y" in backend.refusal(KNeighborsRegressor(), X, X[:, :2])
    assert "one-dimensional y" in backend.refusal(MultinomialNB(), X, labels)
    assert "'continuous'" in backend.refusal(GaussianNB(), X, X[:, 0])
    assert "does not run" in backend.refusal(
        KNeighborsClassifier(weights=len), X, labels[:, 0]
    )
    for estimator, target in [
        (KNeighborsClassifier(), labels[:, 0]),
        (Ridge(), X[:, :2]),  # ridge takes several targets
        (LinearRegression(), X[:, 0]),
        (GaussianNB(), labels[:, 0]),
    ]:
        assert backend.refusal(estimator, X, target) is None


@pytest.mark.parametrize("native", [True, False])
def test_native_accuracy_is_decided_by_the_task_metric(digits, native, monkeypatch):
    from sklearn_ext.model_selection._exact import _base

    X, y = digits
    called = []
    score_native = _base._score_native
    monkeypatch.setattr(
        "sklearn_ext.model_selection._exact._naive_bayes._score_native",
        lambda *a: called.append(1) or score_native(*a),
    )
    scoring = "accuracy" if native else "balanced_accuracy"
    result = tree_cross_validate(
        GaussianNB(),
        X,
        y,
        cv=KFold(5),
        method=_exact(),
        scoring=scoring,
        return_run_info=True,
    )
    assert bool(called) == native
    ref = cross_validate(GaussianNB(), X, y, cv=KFold(5), scoring=scoring)
    assert_allclose(result["test_score"], ref["test_score"], rtol=0, atol=1e-12)


# -- memory: checked before it is taken -----------------------------------------------
def test_statistics_beyond_the_memory_left_raise_a_clear_error(monkeypatch):
    from sklearn_ext.utils import _memory

    monkeypatch.setattr(
        _memory, "memory_headroom", lambda: (2.0**20, "the test's limit")
    )
    X, y = make_regression(n_samples=400, n_features=60, random_state=0)
    # Reported as every fold's failure, as cross_validate reports a failed fit.
    with pytest.raises(
        ValueError,
        match=r"(?s)MemoryError: The exact backend's statistics of Ridge "
        r"\(400 folds, 400 x 60 X\) needs about .* "
        r"GiB, but this process may allocate only 0.00 GiB more \(the test's "
        r"limit\)\. Use fewer folds",
    ):
        tree_cross_validate(
            Ridge(), X, y, cv=LeaveOneOut(), method=_exact(), return_run_info=True
        )


def test_leave_one_out_under_an_address_space_limit_fails_cleanly():
    # Issue 35: exact ridge leave-one-out died with SIGSEGV under a memory cap;
    # now its statistics are bounded or refused before they are allocated.
    import subprocess
    import sys

    code = """
import resource, numpy as np
from sklearn.linear_model import Ridge
from sklearn.model_selection import LeaveOneOut
from sklearn_ext import tree_cross_validate
from sklearn_ext.model_selection import (
    ExactStatisticsBackend,
    StatisticsCache,
    TreeCVFallbackWarning,
)
from sklearn_ext.utils._memory import _fields, _read
X = np.random.default_rng(0).normal(size=(3000, 1500)); y = X[:, 0]
mapped = 1024 * float(_fields(_read("/proc/self/status"), ":")["VmSize"].split()[0])
resource.setrlimit(resource.RLIMIT_AS, (int(mapped + 2**28), resource.RLIM_INFINITY))
try:
    tree_cross_validate(Ridge(), X, y, cv=LeaveOneOut(),
                        method=ExactStatisticsBackend(cache=StatisticsCache()))
except (MemoryError, ValueError) as exc:
    print(type(exc).__name__, exc)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "statistics of Ridge (3000 folds" in out.stdout
    assert "RLIMIT_AS=" in out.stdout


def test_min_categories_arrays_are_keyed_by_all_their_values():
    rng = np.random.default_rng(9)
    X = rng.integers(0, 2, size=(40, 1200))
    y = rng.integers(0, 2, size=40)
    backend = _exact()
    for middle in (2, 5):
        minimum = np.full(1200, 2)
        minimum[600] = middle
        est = CategoricalNB(min_categories=minimum)
        ours = tree_cross_validate(
            est,
            X,
            y,
            cv=KFold(4),
            method=backend,
            return_estimator=True,
            return_run_info=True,
        )
        assert ours["estimator"][0].n_categories_[600] == middle
    assert backend.cache.misses == 2


def test_multilabel_knn_falls_back_under_auto(capsys):
    # Issue 30: a multilabel y was sent to the exact backend, which raised. k-NN
    # has no partial_fit: the fallback is a note (verbose > 0), not a warning.
    rng = np.random.default_rng(10)
    X = rng.normal(size=(60, 3))
    Y = (X[:, :2] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TreeCVFallbackWarning)
        ours = tree_cross_validate(
            KNeighborsClassifier(3), X, Y, cv=KFold(4), return_run_info=True, verbose=1
        )
    assert "one-dimensional y; got y of" in capsys.readouterr().out
    ref = cross_validate(KNeighborsClassifier(3), X, Y, cv=KFold(4))
    assert ours["backend"] != "exact"
    assert_array_equal(ours["test_score"], ref["test_score"])


def test_directions_the_data_does_not_vary_along_cost_no_fit(monkeypatch):
    # One-hot columns beside an intercept make every fold's Gram matrix
    # singular; predictions do not see that direction, so no fold is fit.
    from sklearn_ext.model_selection._exact import _least_squares

    fits = []
    fit_fold = _least_squares._fit_fold
    monkeypatch.setattr(
        _least_squares, "_fit_fold", lambda *a: fits.append(1) or fit_fold(*a)
    )
    rng = np.random.default_rng(11)
    codes = rng.integers(0, 6, size=3000)
    X = np.hstack([rng.normal(size=(3000, 4)) * [1, 10, 100, 1000], np.eye(6)[codes]])
    y = X[:, :4] @ [1.0, 0.1, 0.01, 0.001] + codes + rng.normal(size=3000)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    for alpha in (1e-3, 1.0):
        ours = tree_cross_validate(
            Ridge(alpha=alpha), X, y, cv=KFold(5), method=_exact(), return_run_info=True
        )
        ref = cross_validate(Ridge(alpha=alpha), X, y, cv=KFold(5))
        assert_allclose(ours["test_score"], ref["test_score"], rtol=0, atol=1e-10)
    assert not fits


def test_class_weight_fit_refuses_is_refused():
    from sklearn.linear_model import RidgeClassifier

    rng = np.random.default_rng(12)
    X = rng.normal(size=(40, 2))
    y = np.arange(40) % 2
    est = RidgeClassifier(class_weight={5: 2.0})
    with pytest.raises(ValueError, match=r"The classes, \[0, 1\], are not in"):
        est.fit(X, y)
    with pytest.raises(ValueError, match=r"The classes, \[0, 1\], are not in"):
        tree_cross_validate(
            est, X, y, cv=KFold(4), method=_exact(), return_run_info=True
        )
    fine = RidgeClassifier(class_weight={0: 2.0})
    ours = tree_cross_validate(
        fine, X, y, cv=KFold(4), method=_exact(), return_run_info=True
    )
    ref = cross_validate(fine, X, y, cv=KFold(4))
    assert_allclose(ours["test_score"], ref["test_score"], rtol=0, atol=1e-12)


def test_every_folds_factorisation_is_kept_for_the_next_alpha(monkeypatch):
    # The store of per-fold eigendecompositions holds all k of them: an
    # estimate of a fold's size below its real size made a k-fold cycle evict
    # each fold just before it was needed again.
    from scipy import linalg

    from sklearn_ext.model_selection._exact import _least_squares

    calls = []
    eigh = linalg.eigh
    monkeypatch.setattr(
        _least_squares.linalg, "eigh", lambda *a, **k: calls.append(1) or eigh(*a, **k)
    )
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 30))
    y = X @ rng.normal(size=30) + rng.normal(size=400)
    backend = _exact()
    for alpha in (0.1, 1.0, 10.0):
        tree_cross_validate(Ridge(alpha=alpha), X, y, cv=KFold(10), method=backend)
    assert len(calls) == 10
