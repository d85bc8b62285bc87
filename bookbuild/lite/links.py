"""Each chapter page of the built book links to its browser lab, under its Colab link.

The link is written into the HTML pages once the lab site is built, so a page never links to
a site that is not there; the notebooks themselves keep only their Colab link, which works
wherever they are opened.

Example:
    >>> page = '<p><a href="https://colab.example/ch.ipynb">Open this chapter in Colab</a></p>'
    >>> print(_with_link(page, "https://colab.example/ch.ipynb", "lite/x.html"))  # doctest: +ELLIPSIS
    <p><a href="https://colab.example/ch.ipynb">Open this chapter in Colab</a></p>
    <p class="mirrorbook-browser-lab"><a href="lite/x.html" target="_blank">Run this chapter's idea in your browser</a> ...</p>
"""  # noqa: E501

from __future__ import annotations

import html
import re
from pathlib import Path

from bookbuild.cells import colab_url
from bookbuild.lite.contents import chapters_with_labs
from bookbuild.lite.launcher import launch_url

LINK_CLASS = "mirrorbook-browser-lab"
TEXT = "Run this chapter's idea in your browser"


def link_chapter_pages(html_folder: Path, manifest: dict) -> list[Path]:
    """Add the lab link to the page of every chapter that has a browser lab.

    Args:
        html_folder: The built book (``build/_build/html``).
        manifest: What :func:`~bookbuild.manifest.load_manifest` returns.

    Returns:
        The pages changed.

    Raises:
        SystemExit: If a page has no Colab link to put the lab's link under.
    """
    pages = []
    for chapter in chapters_with_labs(manifest):
        page = html_folder / Path(chapter["file"]).with_suffix(".html").name
        text = page.read_text(encoding="utf-8")
        lab = launch_url(chapter["browser_lab_path"].name)  # the book's version, a copy kept
        changed = _with_link(text, colab_url(manifest, chapter), lab)
        if changed is None:
            raise SystemExit(f"[dev] {page.name} has no Colab link to put its lab's link under")
        page.write_text(changed, encoding="utf-8")
        pages.append(page)
    return pages


def _with_link(page: str, colab: str, lab: str) -> str | None:
    """The page with the lab's paragraph after the Colab link's; None without that link."""
    page = re.sub(rf'\n<p class="{LINK_CLASS}">.*?</p>', "", page)  # a previous build's
    anchor = page.find(f'href="{html.escape(colab)}"')
    end = page.find("</p>", anchor)
    if anchor < 0 or end < 0:
        return None
    end += len("</p>")
    paragraph = (
        f'\n<p class="{LINK_CLASS}"><a href="{html.escape(lab)}" target="_blank">{TEXT}</a> '
        "(a new tab, no installation: the book's own code in your browser's Python, without "
        "TensorFlow)</p>"
    )
    return page[:end] + paragraph + page[end:]
