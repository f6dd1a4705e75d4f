"""scikit-learn's own model-selection test suites, run on TreeCV's doors.

Copies the installed scikit-learn's ``model_selection/tests/test_search.py``
and ``test_validation.py`` into a temporary directory, adds one line after
their imports that rebinds

* ``GridSearchCV`` and ``RandomizedSearchCV`` to ``TreeCVSearchCV`` (with
  scikit-learn's constructor signatures), in ``test_search.py``;
* ``cross_validate`` and ``cross_val_score`` to ``tree_cross_validate``
  (called with ``cross_validate``'s keywords), in ``test_validation.py``;

and runs them with pytest (scikit-learn's own ``conftest.py`` fixtures loaded).
Nothing else in the test files is edited; the shims are in
``benchmarks/_sklearn_suite_shims.py``.

A test is *applicable* when it calls one of the rebound names (constructing,
cloning or calling it) or names it in its source; a pass that names them but
never calls them is counted as *vacuous*, not as a pass. The shims also count
the calls that run TreeCV (a search's ``fit``, a function's call): a pass
that only constructed a search (the tests of its own tags) is listed apart.
The failures that remain are listed with the reason given in
``docs/searches.md#deliberate-differences`` (``KNOWN`` below);
``tests/test_sklearn_parity.py`` runs this harness (``slow``) and checks that
every failure is one of them.

Usage::

    python benchmarks/bench_sklearn_suites.py [search|validation ...] [-k EXPR]

Prints, per suite, the applicable tests and how many passed, failed, were
skipped or passed vacuously, then each failure. Takes about a minute.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import sklearn

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

SUITES = {
    "search": ("test_search.py", ("GridSearchCV", "RandomizedSearchCV")),
    "validation": ("test_validation.py", ("cross_validate", "cross_val_score")),
}

#: Failures that are deliberate differences, with their reason (the table of
#: docs/searches.md); the key is the test's name without its parameters.
KNOWN: dict[str, str] = {
    "test_cross_validate": (
        "sparse X: Ridge's exact statistics give the exact optimum, Ridge.fit's "
        "sparse solver stops at tol (scores agree to 1e-4, compared to 6 "
        "decimals); SVC(kernel='linear'): the fold models are AlphaSeededSVC "
        "solved to tol from seeded starts, whose coef_ agrees with SVC.fit's to "
        "1e-4 (compared to 7 decimals)"
    ),
    "test_validation_functions_routing": (
        "ConsumingClassifier has partial_fit: the tree calls partial_fit, "
        "routed by its partial_fit requests, never fit"
    ),
}


_CONFTEST = """
import inspect
import io
import json
import os
import tokenize

import pytest

import _sklearn_suite_shims as shims

pytest_plugins = ["sklearn.conftest"]
NAMES = {names!r}
RECORD = {{}}


def _code_names(source):
    # The names used in code (comments and strings left out).
    try:
        tokens = tokenize.generate_tokens(io.StringIO(source).readline)
        return {{t.string for t in tokens if t.type == tokenize.NAME}}
    except (tokenize.TokenError, SyntaxError):
        return set()


@pytest.fixture(autouse=True)
def _count_calls():
    shims.CALLS["n"] = shims.CALLS["runs"] = 0
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    try:
        source = inspect.getsource(item.function)
    except (OSError, TypeError):
        source = ""
    entry = RECORD.setdefault(item.nodeid, {{"outcome": "passed"}})
    entry["mentions"] = bool(_code_names(source) & set(NAMES))
    entry["params"] = item.nodeid.partition("[")[2]
    if call.when == "call":
        entry["calls"] = entry.get("calls", 0) + shims.CALLS["n"]
        entry["runs"] = entry.get("runs", 0) + shims.CALLS["runs"]
    if report.skipped:
        entry["outcome"] = "skipped"
    elif report.failed:
        entry["outcome"] = "failed"
        entry["message"] = str(report.longrepr).strip().splitlines()[-1][:300]


def pytest_sessionfinish(session):
    with open(os.environ["TREECV_SUITE_RECORD"], "w") as f:
        json.dump(RECORD, f)
"""


def prepare(directory: Path, filename: str, names: tuple[str, ...]) -> Path:
    """Copy scikit-learn's ``filename`` into ``directory`` with the names rebound."""
    source_path = Path(sklearn.__file__).parent / "model_selection" / "tests" / filename
    source = source_path.read_text()
    tree = ast.parse(source)
    last_import = max(
        node.end_lineno
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom)
    )
    lines = source.splitlines(keepends=True)
    rebind = f"from _sklearn_suite_shims import {', '.join(names)}  # TreeCV\n"
    lines.insert(last_import, rebind)
    target = directory / filename
    target.write_text("".join(lines))
    (directory / "conftest.py").write_text(_CONFTEST.format(names=names))
    shutil.copy(HERE / "_sklearn_suite_shims.py", directory)
    return target


def run_suite(name: str, keyword: str | None) -> dict:
    """Run one suite in a fresh process; the per-test record."""
    filename, names = SUITES[name]
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        target = prepare(directory, filename, names)
        record = directory / "record.json"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(directory), str(ROOT)])
        env["TREECV_SUITE_RECORD"] = str(record)
        command = [
            sys.executable,
            "-m",
            "pytest",
            str(target),
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(directory),
            "-W",
            "ignore",
            "--no-header",
            "-o",
            "addopts=",
        ]
        if keyword:
            command += ["-k", keyword]
        subprocess.run(command, env=env, cwd=tmp, capture_output=True, check=False)
        return json.loads(record.read_text())


def _applicable(node: str, entry: dict, record: dict) -> bool:
    """Whether a test exercises the rebound names.

    It does when it called them. A test naming them in its code without
    calling them is applicable too (a pass is then vacuous), except one
    parametrization of a test whose other parametrizations call them: it
    exercises another function of the parameter list (``cross_val_predict``,
    ``HalvingGridSearchCV``), unless its parameters name ours.
    """
    if entry.get("calls"):
        return True
    if not entry.get("mentions"):
        return False
    base, _, params = node.partition("[")
    if not params:
        return True
    siblings = [e for n, e in record.items() if n.partition("[")[0] == base]
    if not any(e.get("calls") for e in siblings):
        return True
    ids = set(params.rstrip("]").split("-"))
    return any(name in ids for names in _NAMES for name in names)


_NAMES = [names for _, names in SUITES.values()]


def summarize(name: str, record: dict) -> dict:
    """Counts of the applicable tests, and the failures with their reasons."""
    applicable = {
        node: entry
        for node, entry in record.items()
        if _applicable(node, entry, record)
    }
    counts = {"applicable": 0, "passed": 0, "failed": 0, "vacuous": 0, "skipped": 0}
    failures, vacuous, unrun = [], [], []
    for node, entry in sorted(applicable.items()):
        outcome = entry["outcome"]
        if outcome == "skipped":
            counts["skipped"] += 1
            continue
        counts["applicable"] += 1
        if outcome == "passed" and not entry.get("calls"):
            counts["vacuous"] += 1
            vacuous.append(node.split("::")[-1])
        elif outcome == "passed":
            counts["passed"] += 1
            if not entry.get("runs"):
                unrun.append(node.split("::")[-1])
        else:
            counts["failed"] += 1
            test = node.split("::")[-1].split("[")[0]
            reason = KNOWN.get(test, entry.get("message", ""))
            failures.append((node.split("::")[-1], reason))
    return {
        "suite": name,
        **counts,
        "failures": failures,
        "vacuous_tests": vacuous,
        "passed_without_a_run": unrun,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suites", nargs="*", choices=[*SUITES, []], default=[])
    parser.add_argument("-k", dest="keyword", default=None)
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    suites = args.suites or list(SUITES)
    summaries = [summarize(s, run_suite(s, args.keyword)) for s in suites]
    if args.json:
        print(json.dumps(summaries, indent=1))
        return 0
    for s in summaries:
        share = s["passed"] / max(s["applicable"], 1)
        print(
            f"{SUITES[s['suite']][0]}: {s['applicable']} applicable, "
            f"{s['passed']} passed ({share:.0%}), {s['failed']} failed, "
            f"{s['vacuous']} vacuous, {s['skipped']} skipped"
        )
        for test, reason in s["failures"]:
            print(f"  FAILED {test}: {reason}")
        for test in s["vacuous_tests"]:
            print(f"  VACUOUS {test}")
        for test in s["passed_without_a_run"]:
            print(f"  passed, constructing the search without fit: {test}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
