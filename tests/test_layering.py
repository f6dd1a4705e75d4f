"""Layering without circles: the floor imports nothing above it, and the CV
machinery imports no learner package (the engines are found by name)."""

import subprocess
import sys

import pytest
from sklearn.datasets import load_iris

from sklearn_ext import PegasosClassifier, SemiSupervisedAnomalyDetector

LEARNER_PACKAGES = (
    "sklearn_ext.svm",
    "sklearn_ext.linear_model",
    "sklearn_ext.anomaly",
)


def _loaded_after(statement: str) -> set[str]:
    code = (
        f"import sys; {statement}; "
        "print(' '.join(m for m in sys.modules if m.startswith('sklearn_ext')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return set(out.stdout.split())


def test_model_selection_imports_no_learner_package():
    loaded = _loaded_after("import sklearn_ext.model_selection")
    assert not {m for m in loaded if m.startswith(LEARNER_PACKAGES)}


@pytest.mark.parametrize(
    "module", ["_prefix_cache", "_fitted_state", "_data_scope", "_threads"]
)
def test_the_floor_imports_nothing_above_it(module):
    loaded = _loaded_after(f"import sklearn_ext.utils.{module}")
    assert loaded <= {
        "sklearn_ext",
        "sklearn_ext.utils",
        f"sklearn_ext.utils.{module}",
    }


def test_one_snapshot_for_the_native_learners():
    # The Python tree's snapshot/restore of our learners has one definition.
    from sklearn_ext.utils._fitted_state import FittedStateMixin

    for learner in (PegasosClassifier, SemiSupervisedAnomalyDetector):
        assert "_treecv_snapshot" not in vars(learner)
        assert learner._treecv_snapshot is FittedStateMixin._treecv_snapshot


def test_one_prefix_epoch_for_the_native_learners():
    # The cache-resumed first epoch of our learners has one definition too.
    from sklearn_ext.utils._prefix_cache import PrefixEpochMixin

    for learner in (PegasosClassifier, SemiSupervisedAnomalyDetector):
        for name in ("_first_epoch_from_prefix", "_resolve_cache"):
            assert name not in vars(learner)
            assert getattr(learner, name) is getattr(PrefixEpochMixin, name)


def test_learners_do_not_import_the_cv_machinery():
    for package in LEARNER_PACKAGES[1:]:
        loaded = _loaded_after(f"import {package}")
        assert "sklearn_ext.model_selection._search" not in loaded, package


@pytest.mark.parametrize(
    "estimator", [PegasosClassifier, SemiSupervisedAnomalyDetector], ids=str
)
def test_cache_parameter_is_validated(estimator):
    X, y = load_iris(return_X_y=True)
    y = (y == 0).astype(int) * 2 - 1
    with pytest.raises(
        ValueError,
        match=rf"The 'cache' parameter of {estimator.__name__} must be a str among "
        r"\{'memory'\}, an instance of '.*PrefixCache' or None. Got 'disk' instead.",
    ):
        estimator(cache="disk").fit(X, y)
