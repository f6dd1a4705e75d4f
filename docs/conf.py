"""Sphinx configuration of the optuna-treecv documentation.

Build with ``make docs`` (warnings are errors). The user guide is Markdown
(MyST); the API pages are generated from the docstrings of every name in the
``__all__`` of ``sklearn_ext``, its subpackages and ``optuna_treecv``; the
gallery runs ``examples/*.py``.

Links to the scikit-learn, Optuna, NumPy and Python documentation (intersphinx)
need the network, which CI does not have: they are on only when the environment
sets ``OPTUNA_TREECV_DOCS_INTERSPHINX=1`` (``make docs INTERSPHINX=1``).
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import warnings
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))  # gallery_order

import sklearn_ext  # noqa: E402

project = "optuna-treecv"
author = "optuna-treecv developers"
copyright = "optuna-treecv developers"
release = sklearn_ext.__version__
version = release

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "sphinx_gallery.gen_gallery",
    "link_names",  # docs/_ext: guide pages link the public names they show
]

INTERSPHINX = os.environ.get("OPTUNA_TREECV_DOCS_INTERSPHINX", "0") == "1"
if INTERSPHINX:
    extensions.append("sphinx.ext.intersphinx")
    intersphinx_mapping = {
        "python": ("https://docs.python.org/3", None),
        "numpy": ("https://numpy.org/doc/stable", None),
        "sklearn": ("https://scikit-learn.org/stable", None),
        "optuna": ("https://optuna.readthedocs.io/en/stable", None),
    }

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_api_lists.rst", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]

# -- MyST (the user guide pages) -----------------------------------------------------
myst_heading_anchors = 4  # [text](page.md#a-heading) links, as on GitHub.
myst_enable_extensions = ["colon_fence", "deflist"]

# -- API pages --------------------------------------------------------------------
autosummary_generate = ["_api_lists.rst"]
autosummary_imported_members = True
autodoc_typehints = "none"  # numpydoc's Parameters sections say the types.
autodoc_default_options = {"members": True, "member-order": "bysource"}
add_module_names = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
# numpydoc shows the docstring of an attribute that is a property, and those
# inherited from scikit-learn (``n_features_in_``...) cite its glossary
# (":term:`fit`"), which exists only with intersphinx: plain text here.
suppress_warnings = ["ref.term"]


def skip_member(app, what, name, obj, skip, options):
    """Leave out scikit-learn's generated ``set_*_request`` methods (metadata
    routing, documented by scikit-learn) from the class pages."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", skip_member)


# Where each subpackage is explained in the user guide (shown on the API page).
API_GUIDES = {
    "sklearn_ext.model_selection": ("treecv", "searches"),
    "sklearn_ext.linear_model": ("native_learners",),
    "sklearn_ext.anomaly": ("native_learners", "gornitz"),
    "sklearn_ext.svm": ("svm",),
    "sklearn_ext.datasets": ("gornitz",),
    "optuna_treecv": ("optuna",),
}


def _kind(obj) -> str:
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        return "function"
    return "data"


def _subpackages(package) -> list[str]:
    """Public subpackages of ``package`` that list ``__all__``, sorted."""
    names = []
    for path in sorted(Path(package.__file__).parent.iterdir()):
        if path.name.startswith("_") or not (path / "__init__.py").is_file():
            continue
        module = importlib.import_module(f"{package.__name__}.{path.name}")
        if hasattr(module, "__all__"):
            names.append(module.__name__)
    return names


def _autosummary(module: str, names: list[str], objects: dict) -> list[str]:
    lines = []
    for kind in ("class", "function", "data"):
        chosen = [n for n in names if _kind(objects[n]) == kind]
        if not chosen:
            continue
        lines += [
            "",
            f".. currentmodule:: {module}",
            "",
            ".. autosummary::",
            "   :toctree: generated",
            f"   :template: {kind}.rst",
            "",
        ]
        lines += [f"   {name}" for name in chosen]
    return lines


def _guide_links(module: str) -> list[str]:
    pages = API_GUIDES.get(module, ())
    if not pages:
        return []
    links = ", ".join(f":doc:`{page}`" for page in pages)
    return ["", f"User guide: {links}."]


def write_api_lists() -> None:
    """Write ``_api_lists.rst``: one autosummary table per module, from ``__all__``.

    ``sklearn_ext`` re-exports the main names of its subpackages: those are
    documented once, as ``sklearn_ext.NAME``, in the section of the subpackage
    that defines them; a subpackage's other names as ``sklearn_ext.sub.NAME``.
    """
    import optuna_treecv

    top = set(sklearn_ext.__all__)
    placed: set[str] = set()
    lines = [
        ".. This file is written by docs/conf.py from the packages' __all__;",
        "   do not edit it.",
    ]
    for module_name in _subpackages(sklearn_ext):
        module = importlib.import_module(module_name)
        objects = {name: getattr(module, name) for name in module.__all__}
        title = f"``{module_name}``"
        lines += ["", title, "-" * len(title)]
        doc = inspect.getdoc(module) or ""
        lines += ["", doc.split("\n\n")[0].strip()]
        lines += _guide_links(module_name)
        exported = sorted(n for n in module.__all__ if n in top)
        placed.update(exported)
        lines += _autosummary("sklearn_ext", exported, objects)
        rest = sorted(n for n in module.__all__ if n not in top)
        if rest:
            lines += ["", f"Also in ``{module_name}``:"]
            lines += _autosummary(module_name, rest, objects)
    others = sorted(top - placed)
    if others:
        objects = {name: getattr(sklearn_ext, name) for name in others}
        lines += ["", "Other names of ``sklearn_ext``", "-" * 30]
        lines += _autosummary("sklearn_ext", others, objects)
    objects = {name: getattr(optuna_treecv, name) for name in optuna_treecv.__all__}
    title = "``optuna_treecv``"
    lines += ["", title, "-" * len(title), ""]
    lines += [(inspect.getdoc(optuna_treecv) or "").split("\n\n")[0].strip()]
    lines += _guide_links("optuna_treecv")
    lines += _autosummary("optuna_treecv", sorted(optuna_treecv.__all__), objects)
    text = "\n".join(lines) + "\n"
    target = DOCS / "_api_lists.rst"
    if not target.is_file() or target.read_text() != text:
        target.write_text(text)


write_api_lists()

# -- gallery ----------------------------------------------------------------------
# The Görnitz scripts are command-line tools running for minutes: shown, not run.
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/(?!gornitz_|plot_gornitz_)[^/]+\.py$",
    "ignore_pattern": r"^_",  # Helper modules (_gornitz.py), not examples.
    "within_subsection_order": "gallery_order.example_order",
    "doc_module": ("sklearn_ext", "optuna_treecv"),
    "backreferences_dir": "generated/backreferences",
    "reference_url": {"sklearn_ext": None, "optuna_treecv": None},
    "abort_on_example_error": True,
    "write_computation_times": False,
    "download_all_examples": False,
    "remove_config_comments": True,
    "min_reported_time": 1,
    "matplotlib_animations": False,
}
# Examples run in this process: keep their output free of Optuna's log lines.
warnings.filterwarnings("ignore", message="Matplotlib is currently using agg")

# -- HTML -------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"optuna-treecv {release}"
html_static_path: list[str] = []
html_show_sourcelink = False
html_theme_options = {
    "header_links_before_dropdown": 7,
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_context = {"default_mode": "light"}
