"""docs/bounds.md names, for each bound, the test that checks it: those tests exist."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tests_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    }


def test_every_test_the_bounds_page_names_exists():
    text = (ROOT / "docs" / "bounds.md").read_text()
    named = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", text)
    assert len(named) >= 15
    missing = [
        f"{path}::{name}"
        for path, name in named
        if not (ROOT / path).is_file() or name not in _tests_in(ROOT / path)
    ]
    assert not missing, f"docs/bounds.md names tests that do not exist: {missing}"
