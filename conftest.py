"""Settings for every item of the suite, doctests included (``tests/conftest.py``
holds the fixtures)."""

import pytest


def pytest_collection_modifyitems(items):
    # The docstring examples use the learners users know (SGDClassifier), whose
    # fit makes several epochs: the regime note they get is the documented one.
    # Tests that check the note is given live in tests/.
    note = pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")
    for item in items:
        if isinstance(item, pytest.DoctestItem):
            item.add_marker(note)


def _missing(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is None


# The Dask placement's modules import distributed, an optional dependency.
collect_ignore = (
    [
        "sklearn_ext/model_selection/_dask.py",
        "sklearn_ext/model_selection/_dask_blocks.py",
    ]
    if _missing("distributed")
    else []
)
