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


def _loaded_after(statement: str, prefix: str = "sklearn_ext") -> set[str]:
    code = (
        f"import sys; {statement}; "
        f"print(' '.join(m for m in sys.modules if m.startswith({prefix!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return set(out.stdout.split())


KERNELS = (
    "sklearn_ext._fast._smo",
    "sklearn_ext._fast._tree",
    "sklearn_ext._fast._ssad",
)


def test_a_python_tree_run_loads_only_its_backend():
    # The run core finds the engines by name: a run of the Python tree loads
    # no learner package and none of the native or SVM kernels.
    loaded = _loaded_after(
        "import warnings; warnings.simplefilter('ignore'); "
        "from sklearn.datasets import load_iris; "
        "from sklearn.linear_model import SGDClassifier; "
        "from sklearn_ext import tree_cross_validate, TreeCVSearchCV; "
        "X, y = load_iris(return_X_y=True); "
        "tree_cross_validate(SGDClassifier(random_state=0), X, y, cv=5); "
        "TreeCVSearchCV(SGDClassifier(), {'alpha': [1e-4]}, cv=3).fit(X, y)"
    )
    assert "sklearn_ext.model_selection._backends" in loaded
    assert not {m for m in loaded if m.startswith(LEARNER_PACKAGES + KERNELS)}


PYTHON_TREE_RUN = (
    "import warnings; warnings.simplefilter('ignore'); "
    "from sklearn.datasets import load_iris; "
    "from sklearn.linear_model import SGDClassifier; "
    "from sklearn_ext import tree_cross_validate; "
    "X, y = load_iris(return_X_y=True); "
    "tree_cross_validate(SGDClassifier(random_state=0), X, y, cv=5)"
)


def test_an_in_memory_run_imports_no_distributed_library():
    # The Dask placement is found by the type of X, without importing dask.
    loaded = _loaded_after(PYTHON_TREE_RUN, prefix="")
    assert "sklearn_ext.model_selection._backends" in loaded
    assert "sklearn_ext.model_selection._dask" not in loaded
    assert not {m for m in loaded if m.split(".")[0] in ("dask", "distributed")}


def test_model_selection_imports_no_learner_package():
    loaded = _loaded_after("import sklearn_ext.model_selection")
    assert not {m for m in loaded if m.startswith(LEARNER_PACKAGES + KERNELS)}


@pytest.mark.parametrize(
    "module",
    [
        "_prefix_cache",
        "_fitted_state",
        "_data_scope",
        "_threads",
        "_hashing",
        "_lru",
        "_memory",
        "_scalers",
    ],
)
def test_the_floor_imports_nothing_above_it(module):
    loaded = _loaded_after(f"import sklearn_ext.utils.{module}")
    assert f"sklearn_ext.utils.{module}" in loaded
    # Only the floor itself (its modules may use one another).
    assert {m for m in loaded if not m.startswith("sklearn_ext.utils.")} <= {
        "sklearn_ext",
        "sklearn_ext.utils",
    }


def test_one_content_hash_and_one_lru_store():
    # Every cache is the floor's LRU store, keyed by the floor's content hash.
    from sklearn_ext.anomaly._features import FEATURE_CACHE
    from sklearn_ext.model_selection import StatisticsCache
    from sklearn_ext.svm import WarmStartStore
    from sklearn_ext.utils._lru import LRUStore
    from sklearn_ext.utils._prefix_cache import PrefixCache

    assert isinstance(FEATURE_CACHE, LRUStore)
    assert isinstance(StatisticsCache(), LRUStore)
    assert isinstance(PrefixCache()._memory, LRUStore)
    assert isinstance(WarmStartStore()._slots, LRUStore)


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
    # The SVM's doors and backend load on first access (sklearn_ext.svm).
    for package in LEARNER_PACKAGES:
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


def _project_imports() -> dict[str, set[str]]:
    """Every project module and the project modules it imports, anywhere in it.

    Imports inside functions count. ``from package import name`` is followed to
    the module the package takes ``name`` from; packages' ``__init__`` modules
    themselves are left out (they re-export, lazily or not).
    """
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    paths = {}
    for package in ("sklearn_ext", "optuna_treecv"):
        for path in (root / package).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            paths[name] = path
    packages = {m for m, p in paths.items() if p.name == "__init__.py"}

    def reexports(package: str) -> dict[str, str]:
        tree = ast.parse(paths[package].read_text())
        return {
            alias.asname or alias.name: node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and not node.level
            for alias in node.names
        }

    def resolve(module: str, name: str | None = None) -> str | None:
        if name is not None and f"{module}.{name}" in paths:
            return f"{module}.{name}"
        if module in packages and name is not None:
            source = reexports(module).get(name)
            if source in paths:
                return resolve(source)
        return module if module in paths else None

    graph = {}
    for module, path in paths.items():
        if module in packages:
            continue
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets |= {resolve(alias.name) for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets |= {resolve(node.module, a.name) for a in node.names}
        graph[module] = {t for t in targets if t and t != module} - packages
    return graph


def test_no_import_cycle_between_modules():
    graph = _project_imports()
    assert "sklearn_ext.model_selection._core" in graph

    def reaches(start: str, goal: str) -> list[str] | None:
        stack, seen = [(start, [start])], {start}
        while stack:
            module, path = stack.pop()
            for target in graph.get(module, ()):
                if target == goal:
                    return path + [goal]
                if target not in seen:
                    seen.add(target)
                    stack.append((target, path + [target]))
        return None

    cycles = [c for m in graph if (c := reaches(m, m)) is not None]
    assert not cycles, " -> ".join(cycles[0])


def test_modules_importing_dask_are_left_out_of_collection_without_it():
    # A fresh install without the dask extra collects the doctests of every
    # module: one that imports Dask at its top must be in conftest's list.
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    optional = {"dask", "distributed"}
    importing = set()
    for path in (root / "sklearn_ext").rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(name.split(".")[0] in optional for name in names):
                importing.add(path.relative_to(root).as_posix())
    conftest = (root / "conftest.py").read_text()
    assert importing and all(f'"{module}"' in conftest for module in importing)


def test_cli_commands_do_not_import_one_another():
    # `tune` (with its report) and `cv` are separate modules; what both use
    # (arguments, set-up, timing of standard CV) imports neither command.
    graph = _project_imports()
    tune = {"optuna_treecv._cli_tune", "optuna_treecv._cli_report"}
    cv = {"optuna_treecv._cli_cv"}
    shared = {
        "optuna_treecv._cli_args",
        "optuna_treecv._cli_setup",
        "optuna_treecv._cli_timing",
    }
    assert (tune | cv | shared) <= set(graph)
    assert not any(graph[m] & cv for m in tune)
    assert not any(graph[m] & tune for m in cv)
    assert not any(graph[m] & (tune | cv | {"optuna_treecv._cli"}) for m in shared)
