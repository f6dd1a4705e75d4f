"""Link the public names that the guide pages show in code font to their API pages.

A guide page writes ``TreeCVSearchCV`` or ``tree_cross_validate()`` in backticks; this
extension turns each such inline literal (the whole literal a public name, optionally
module-qualified or followed by ``()``) into a cross-reference to the name's API page,
as scikit-learn's guide links every estimator it names. Literals inside titles, links
or code blocks are left alone. The public names are the ``__all__`` of the documented
packages, each under the module its API page documents it in.
"""

from __future__ import annotations

import importlib
import re

from docutils import nodes
from sphinx import addnodes

#: The packages whose ``__all__`` the API pages document, most public first: a
#: name re-exported by ``sklearn_ext`` is documented as ``sklearn_ext.NAME``.
PACKAGES = (
    "sklearn_ext",
    "optuna_treecv",
    "sklearn_ext.model_selection",
    "sklearn_ext.svm",
    "sklearn_ext.datasets",
    "sklearn_ext.linear_model",
    "sklearn_ext.anomaly",
)

NAME = re.compile(r"(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*)(?:\(\))?")


def public_names() -> dict[str, str]:
    """Short name -> the dotted name its API page documents."""
    names: dict[str, str] = {}
    for package in PACKAGES:
        for name in getattr(importlib.import_module(package), "__all__", ()):
            names.setdefault(name, f"{package}.{name}")
    return names


def _skip(node: nodes.Node) -> bool:
    parent = node.parent
    while parent is not None:
        if isinstance(
            parent,
            nodes.title | nodes.reference | addnodes.pending_xref | nodes.literal_block,
        ):
            return True
        parent = parent.parent
    return False


def link_names(app, doctree) -> None:
    names = app.env.temp_data.setdefault("link_names", public_names())
    docname = app.env.docname
    if docname.startswith(("generated/", "api", "auto_examples/")):
        return  # the API pages link themselves; the gallery has its own links
    for literal in list(doctree.findall(nodes.literal)):
        match = NAME.fullmatch(literal.astext())
        if match is None or match.group(1) not in names or _skip(literal):
            continue
        xref = addnodes.pending_xref(
            "",
            refdomain="py",
            reftype="obj",
            reftarget=names[match.group(1)],
            refexplicit=True,
            refwarn=True,
            refdoc=docname,
        )
        literal.replace_self(xref)
        xref += literal


def setup(app):
    app.connect("doctree-read", link_names)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
