"""docs/check_site.py, the check ``make docs`` runs on the built site, finds what a
reader would stumble on: broken links and anchors, names not linked, placeholders."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def check_site():
    spec = importlib.util.spec_from_file_location(
        "check_site", ROOT / "docs" / "check_site.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _site(tmp_path, guide_body: str) -> Path:
    site = tmp_path / "html"
    (site / "generated").mkdir(parents=True)
    (site / "_images").mkdir()
    (site / "index.html").write_text('<a href="treecv.html#usage">guide</a>')
    (site / "generated" / "sklearn_ext.TreeCVSearchCV.html").write_text(
        '<dl id="sklearn_ext.TreeCVSearchCV"></dl>'
    )
    (site / "treecv.html").write_text(f'<section id="usage">{guide_body}</section>')
    return site


LINKED = (
    '<a href="generated/sklearn_ext.TreeCVSearchCV.html#sklearn_ext.TreeCVSearchCV">'
    '<code class="literal"><span class="pre">TreeCVSearchCV</span></code></a>'
)


def test_a_clean_site_passes(check_site, tmp_path):
    site = _site(tmp_path, LINKED + " and <code>TreeCVSearchCV</code> again")
    assert check_site.check_links(site) == []
    problems = check_site.check_guides(site)
    missing = [name for name in check_site.GUIDE_PAGES if name != "treecv.html"]
    assert problems == [f"{name}: page missing" for name in missing]


def test_broken_links_anchors_and_unlinked_names_are_found(check_site, tmp_path):
    site = _site(tmp_path, '<code>TreeCVSearchCV()</code> <a href="nope.html">x</a>')
    (site / "index.html").write_text('<a href="treecv.html#nowhere">guide</a>')
    problems = check_site.check_links(site)
    assert "index.html: no anchor treecv.html#nowhere" in problems
    assert "treecv.html: broken link nope.html" in problems
    guides = check_site.check_guides(site)
    assert "treecv.html: names TreeCVSearchCV but never links its API page" in guides


def test_a_placeholder_thumbnail_is_found(check_site, tmp_path):
    pytest.importorskip("sphinx_gallery")
    import sphinx_gallery
    from sphinx_gallery.gen_rst import scale_image

    site = _site(tmp_path, LINKED)
    source = Path(sphinx_gallery.__file__).parent / "_static" / "no_image.png"
    scale_image(source, site / "_images" / "sphx_glr_demo_thumb.png", 400, 280)
    assert check_site.check_thumbnails(site) == [
        "_images/sphx_glr_demo_thumb.png: sphinx-gallery's placeholder thumbnail"
    ]
