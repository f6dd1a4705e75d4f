"""The README's Python examples run as written, in order, in one namespace."""

import re
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_python_examples():
    assert len(_blocks()) >= 4


@pytest.mark.slow
def test_readme_examples_run(tmp_path, monkeypatch):
    optuna = pytest.importorskip("optuna")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    monkeypatch.chdir(tmp_path)
    from sklearn_ext import TreeCVRegimeWarning

    namespace: dict = {"__name__": "readme"}
    for block in _blocks():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")  # every warning, not once per line
            exec(compile(block, str(README), "exec"), namespace)
        if "n_trials=30" in block:
            # The 30-trial study says its regime note once, as the README says.
            notes = [w for w in caught if w.category is TreeCVRegimeWarning]
            assert len(notes) == 1, [str(w.message) for w in notes]
    assert namespace["result"]["backend"] == "python_tree"
    assert namespace["model"].optuna_trial_.number == namespace["best"].number
