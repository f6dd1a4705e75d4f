"""TreeCVEstimator inside tools that drive ``partial_fit`` themselves (issue 16):
``OptunaSearchCV(enable_pruning=True)`` and
``learning_curve(exploit_incremental_learning=True)``.

``optuna-integration`` is part of the test extra (``pip install -e .[test]``),
so its absence is a broken test environment, not a reason to skip.
"""

from __future__ import annotations

import warnings

import optuna
import pytest
from numpy.testing import assert_allclose
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState
from optuna_integration import OptunaSearchCV
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import learning_curve

from sklearn_ext import TreeCVEstimator, TreeCVSplitter

optuna.logging.set_verbosity(optuna.logging.WARNING)
# OptunaSearchCV imports a module Optuna has deprecated; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:`optuna.terminator`:FutureWarning")


@pytest.fixture(scope="module")
def data():
    X, y = load_digits(return_X_y=True)
    return X[:600] / 16.0, y[:600]


def test_learning_curve_streams_the_fit_of_each_prefix(data):
    X, y = data
    wrapped = TreeCVEstimator(SGDClassifier(random_state=0), batch_size=50, cache=None)
    common = {"cv": TreeCVSplitter(3), "train_sizes": [0.3, 0.6, 1.0]}
    sizes, train, test = learning_curve(
        wrapped, X, y, exploit_incremental_learning=True, **common
    )
    # Fed piece by piece with partial_fit, each point is the model that fit
    # gives on the same training prefix, fitted afresh.
    sizes_fit, train_fit, test_fit = learning_curve(
        wrapped, X, y, exploit_incremental_learning=False, **common
    )
    assert_allclose(sizes, sizes_fit)
    assert_allclose(test, test_fit, rtol=0, atol=1e-12)
    assert_allclose(train, train_fit, rtol=0, atol=1e-12)
    assert test.shape == (3, 3) and test[-1].mean() > test[0].mean()


def test_optuna_search_cv_prunes_a_tree_cv_estimator(data):
    X, y = data
    wrapped = TreeCVEstimator(SGDClassifier(random_state=0), batch_size=64, cache=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        search = OptunaSearchCV(
            wrapped,
            {"estimator__alpha": FloatDistribution(1e-6, 10.0, log=True)},
            cv=TreeCVSplitter(3),
            enable_pruning=True,
            max_iter=4,
            n_trials=12,
            random_state=0,
            study=optuna.create_study(
                direction="maximize",
                sampler=optuna.samplers.RandomSampler(seed=0),
                pruner=optuna.pruners.MedianPruner(
                    n_startup_trials=3, n_warmup_steps=0
                ),
            ),
        )
        search.fit(X, y)
    trials = search.study_.trials
    # Every trial reports one value per pass of partial_fit over the folds.
    assert all(t.intermediate_values for t in trials)
    assert max(len(t.intermediate_values) for t in trials) == 4
    assert any(t.state == TrialState.PRUNED for t in trials)
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    assert len(complete) + sum(t.state == TrialState.PRUNED for t in trials) == 12
    # The refit model is the wrapper with the best alpha, and it predicts.
    best = search.best_estimator_
    assert isinstance(best, TreeCVEstimator)
    assert best.estimator_.alpha == search.best_params_["estimator__alpha"]
    assert search.score(X, y) > 0.5
