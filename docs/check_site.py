"""Check the built documentation site: every page, link and image a reader follows.

Run after ``make docs`` (which runs it): ``python docs/check_site.py docs/_build/html``.
It fails (exit 1, one line per problem) when

- a page of the toctree is missing, or a local link (``href``/``src``) points to a
  file that was not built or to an ``#anchor`` that the target page does not define;
- a guide page names a public class or function of ``sklearn_ext`` or
  ``optuna_treecv`` (an inline literal that is the name, as ``docs/_ext/link_names.py``
  links them) without linking it to its API page at least once;
- a gallery thumbnail is sphinx-gallery's placeholder (an example without a figure
  and without a ``sphinx_gallery_thumbnail_path``).

Only the standard library is used, so it runs wherever the site was built.
"""

from __future__ import annotations

import hashlib
import re
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

#: An inline literal that names an object: ``name``, ``module.name``, ``name()``.
NAME = re.compile(r"(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*)(?:\(\))?")

#: The guide pages: each must link the public names it shows in code font.
GUIDE_PAGES = (
    "getting_started.html",
    "treecv.html",
    "searches.html",
    "optuna.html",
    "native_learners.html",
    "svm.html",
    "exact.html",
    "anomaly.html",
    "dask.html",
    "stores.html",
    "bounds.html",
)


class _Page(HTMLParser):
    """The links, ids and inline code of one HTML page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.code: list[str] = []
        self.linked: set[str] = set()
        self._in_code = 0
        self._in_link: list[str | None] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "a":
            href = attrs.get("href")
            self._in_link.append(href)
            if href:
                self.links.append(href)
            if "name" in attrs:
                self.ids.add(attrs["name"])
        elif tag in ("img", "script", "link") and (
            attrs.get("src") or attrs.get("href")
        ):
            self.links.append(attrs.get("src") or attrs.get("href"))
        elif tag == "code":
            self._in_code += 1

    def handle_endtag(self, tag):
        if tag == "a" and self._in_link:
            self._in_link.pop()
        elif tag == "code" and self._in_code:
            self._in_code -= 1

    def handle_data(self, data):
        if not self._in_code:
            return
        match = NAME.fullmatch(data.strip())
        if match is None:
            return
        if any(href and "generated/" in href for href in self._in_link):
            self.linked.add(match.group(1))
        elif not any(self._in_link):  # a name in another link (a page title) is a link
            self.code.append(match.group(1))


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def _public_names(site: Path) -> set[str]:
    """The public API names: one page each under ``generated/``."""
    names = set()
    for page in (site / "generated").glob("*.html"):
        parts = page.stem.split(".")
        if parts[0] in ("sklearn_ext", "optuna_treecv"):
            names.add(parts[-1])
    return names


def check_links(site: Path) -> list[str]:
    problems = []
    pages = {
        p: _parse(p)
        for p in site.rglob("*.html")
        if not {"_sources", "_static"} & set(p.relative_to(site).parts)
    }
    for path, page in pages.items():
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "data:")):
                continue
            target = (
                (path.parent / unquote(parts.path)).resolve() if parts.path else path
            )
            if not target.exists():
                problems.append(f"{path.relative_to(site)}: broken link {link}")
                continue
            # viewcode's source pages point back at every name an object is
            # re-exported under; the API pages document one of them.
            if (
                parts.fragment
                and target.suffix == ".html"
                and "_modules" not in path.parts
            ):
                ids = pages[target].ids if target in pages else _parse(target).ids
                if parts.fragment not in ids:
                    problems.append(f"{path.relative_to(site)}: no anchor {link}")
    return problems


def check_guides(site: Path) -> list[str]:
    problems = []
    public = _public_names(site)
    for name in GUIDE_PAGES:
        path = site / name
        if not path.exists():
            problems.append(f"{name}: page missing")
            continue
        page = _parse(path)
        shown = {word for word in page.code if word in public}
        for word in sorted(shown - page.linked):
            problems.append(f"{name}: names {word} but never links its API page")
    return problems


def check_thumbnails(site: Path) -> list[str]:
    """Every gallery thumbnail differs from sphinx-gallery's placeholder."""
    thumbs = sorted((site / "_images").glob("sphx_glr_*_thumb.png"))
    digests = {}
    for thumb in thumbs:
        digests.setdefault(hashlib.sha256(thumb.read_bytes()).hexdigest(), []).append(
            thumb
        )
    placeholder = _placeholder_digest()
    return [
        f"_images/{thumb.name}: sphinx-gallery's placeholder thumbnail"
        for digest, group in digests.items()
        if digest == placeholder
        for thumb in group
    ]


def _placeholder_digest() -> str | None:
    """The digest of the thumbnail sphinx-gallery makes for an example without
    a figure: its ``no_image.png``, scaled as it scales every thumbnail."""
    try:
        import sphinx_gallery
        from sphinx_gallery.gen_rst import scale_image
    except ImportError:
        return None
    source = Path(sphinx_gallery.__file__).parent / "_static" / "no_image.png"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "thumb.png"
        scale_image(source, out, 400, 280)  # sphinx-gallery's default size
        return hashlib.sha256(out.read_bytes()).hexdigest()


def main(argv: list[str]) -> int:
    site = Path(argv[1] if len(argv) > 1 else "docs/_build/html")
    if not (site / "index.html").exists():
        print(f"{site}: no built site (run make docs first)", file=sys.stderr)
        return 1
    problems = check_links(site) + check_guides(site) + check_thumbnails(site)
    for problem in problems:
        print(problem, file=sys.stderr)
    n_pages = sum(1 for _ in site.rglob("*.html"))
    print(f"checked {n_pages} pages: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
