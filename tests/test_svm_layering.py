"""The SVM engine and the estimator are separate (issue 30, item 4).

The CV engine uses the solver's public interface only, never a private
attribute of ``AlphaSeededSVC``; one per-pair loop trains the one-vs-one
problems of ``fit`` and of every fold; ``probability=True`` runs its internal
CV through the engine, below the run core.
"""

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.datasets import load_iris
from sklearn.preprocessing import scale

import sklearn_ext
from sklearn_ext.svm import AlphaSeededSVC, _cv, _platt

SVM = Path(sklearn_ext.__file__).parent / "svm"
#: The CV engine and what runs it: none may reach into the estimator.
ENGINE = (
    SVM / "_cv.py",
    SVM / "_backend.py",
    SVM / "_scaled.py",
    SVM / "_seeding.py",
    SVM / "_platt.py",
    SVM / "_training.py",
    SVM.parent / "model_selection" / "_svm_cv.py",  # the doors (svm_c_path_cv)
)
RUN_CORE = (
    "sklearn_ext.model_selection._core",
    "sklearn_ext.model_selection._validation",
    "sklearn_ext.model_selection._search",
)


def _loaded_after(code: str) -> set[str]:
    code += (
        "\nimport sys; print(' '.join(m for m in sys.modules if 'sklearn_ext' in m))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return set(out.stdout.split())


@pytest.mark.parametrize("dataset", ["load_breast_cancer", "load_iris"])
def test_probability_fit_loads_no_run_core(dataset):
    loaded = _loaded_after(
        f"from sklearn.datasets import {dataset}\n"
        "from sklearn.preprocessing import scale\n"
        "from sklearn_ext.svm import AlphaSeededSVC\n"
        f"X, y = {dataset}(return_X_y=True)\n"
        "model = AlphaSeededSVC(probability=True, random_state=0).fit(scale(X), y)\n"
        "assert model.predict_proba(scale(X)[:3]).shape[0] == 3\n"
    )
    assert "sklearn_ext.svm._platt" in loaded  # the fit did run Platt scaling
    assert not loaded & set(RUN_CORE)
    assert not {m for m in loaded if m.startswith("sklearn_ext.linear_model")}


def test_importing_the_svm_package_loads_no_run_core():
    loaded = _loaded_after("import sklearn_ext.svm")
    assert not loaded & set(RUN_CORE)
    # The doors and the backend come on first access.
    loaded = _loaded_after("from sklearn_ext.svm import alpha_seeded_cv")
    assert set(RUN_CORE) <= loaded


def _imports(tree: ast.AST) -> set[str]:
    """Every module an AST imports, at module level or inside functions."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_svm_module_imports_the_run_core():
    for path in sorted(SVM.glob("*.py")):
        imported = _imports(ast.parse(path.read_text()))
        assert not imported & set(RUN_CORE), path.name


def _estimator_private_names() -> set[str]:
    """Private methods and attributes of AlphaSeededSVC (inherited ones too)."""
    names = {
        name
        for name in dir(AlphaSeededSVC)
        if name.startswith("_") and not name.startswith("__")
    }
    tree = ast.parse((SVM / "_classes.py").read_text())
    for node in ast.walk(tree):
        # Fitted private attributes: ``self._name = ...`` in the estimator.
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and node.attr.startswith("_")
        ):
            names.add(node.attr)
    return names


def test_the_private_names_are_found():
    # The scan below would pass vacuously on an empty set.
    assert {"_set_model", "_check_fit_data", "_alpha_by_pair", "_rho"} <= (
        _estimator_private_names()
    )


@pytest.mark.parametrize("module", ENGINE, ids=lambda path: path.name)
def test_engine_uses_no_private_attribute_of_the_estimator(module):
    private = _estimator_private_names()
    tree = ast.parse(module.read_text())
    reached = sorted(
        f"line {node.lineno}: .{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in private
    )
    assert reached == []
    # Nor does the engine import the estimator's module (the backend and the
    # doors adapt the estimator to the contract and the run core).
    if module.name not in ("_backend.py", "_scaled.py", "_svm_cv.py"):
        assert "sklearn_ext.svm._classes" not in _imports(tree)


def _calls(path: Path, name: str) -> int:
    return sum(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == name
        for node in ast.walk(ast.parse(path.read_text()))
    )


@pytest.mark.parametrize("function", ["pair_rows", "solve_pair"])
def test_one_per_pair_training_loop(function):
    # A pair's rows are cut and its problem solved in one place, the loop
    # that fit and every CV fold share (_training.train_pairs).
    where = {
        path.name: _calls(path, function)
        for path in SVM.glob("*.py")
        if _calls(path, function)
    }
    assert where == {"_training.py": 1}


def test_platt_scaling_runs_the_engine(monkeypatch):
    X, y = load_iris(return_X_y=True)
    X = scale(X)
    runs = []
    engine = _platt.run_folds

    def counting(params, X_, y_, folds, **kwargs):
        runs.append(folds.n_splits)
        return engine(params, X_, y_, folds, **kwargs)

    monkeypatch.setattr(_platt, "run_folds", counting)
    model = AlphaSeededSVC(probability=True, random_state=0).fit(X, y)
    assert runs == [5]  # LIBSVM's five internal folds, one engine run
    assert model.probA_.shape == (3,)


def test_test_folds_are_what_the_engine_reads_of_a_plan():
    folds = _cv.TestFolds([np.array([0, 2]), np.array([1, 3])])
    assert folds.n_splits == 2
    assert_array_equal(folds.test_indices(1), [1, 3])
