"""Chapter cells that also run in the page: each code cell tagged ``browser-live``.

Such a cell uses only the book's TensorFlow-free code (the split arithmetic, the loss-scale
rule, the learning-rate rule). Once the lab site is built, its chapter page gets, as the last
part of the cell, a fold that opens the site's own Python console (JupyterLite's REPL, the
same Pyodide kernel as the labs, nothing from the network) on the cell: the console installs
mirrorkit from the site, runs the cell, and leaves the reader a prompt to change it. The
console loads only when the fold is opened (``loading="lazy"`` in a closed ``<details>``).

Example:
    >>> page = '<div class="cell tag_browser-live docutils container"><pre>x</pre></div>'
    >>> print(with_live_cells(page, ["print(1)"]))  # doctest: +ELLIPSIS
    <div class="cell tag_browser-live ...<pre>x</pre><details class="mirrorbook-live">...</div>
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from urllib.parse import urlencode

import nbformat

from bookbuild.lite.contents import SITE_FOLDER

TAG = "browser-live"
# Run first in the console: mirrorkit's TensorFlow-free modules, from the site's own wheels.
PRELUDE = 'import piplite\nawait piplite.install(["mirrorkit"])'
SUMMARY = "Run this cell here, in your browser"
_OPENING = re.compile(rf'<div class="cell tag_{TAG}\b[^"]*">')
_DIV = re.compile(r"<(/?)div\b")


def live_sources(chapter: Path) -> list[str]:
    """The sources of the chapter's ``browser-live`` code cells, in order.

    Example:
        >>> from bookbuild import ROOT
        >>> live_sources(ROOT / "book" / "02_input_distribution.ipynb")[0].startswith("#")
        True
    """
    notebook = nbformat.read(chapter, as_version=4)
    return [
        cell.source
        for cell in notebook.cells
        if cell.cell_type == "code" and TAG in cell.metadata.get("tags", [])
    ]


def console_url(source: str) -> str:
    """The site's console, relative to a chapter page, running the prelude and ``source``.

    Example:
        >>> console_url("print(1)")[:45]
        'lite/repl/index.html?kernel=python&code=impor'
    """
    query = urlencode([("kernel", "python"), ("code", PRELUDE), ("code", source)])
    return f"{SITE_FOLDER}/repl/index.html?{query}"


def with_live_cells(page: str, sources: list[str]) -> str | None:
    """The page with a console fold closing each ``browser-live`` cell.

    Returns None if the page's tagged cells are not as many as ``sources``.
    """
    starts = [match.end() for match in _OPENING.finditer(page)]
    if len(starts) != len(sources):
        return None
    for start, source in reversed(list(zip(starts, sources, strict=True))):
        end = _cell_end(page, start)
        page = page[:end] + _fold(source) + page[end:]
    return page


def _cell_end(page: str, start: int) -> int:
    """Where the cell whose opening tag ends at ``start`` closes (before its ``</div>``)."""
    depth = 1
    for match in _DIV.finditer(page, start):
        depth += -1 if match.group(1) else 1
        if depth == 0:
            return match.start()
    raise ValueError("a browser-live cell is not closed in the page")


def _fold(source: str) -> str:
    return (
        f'<details class="mirrorbook-live"><summary>{SUMMARY}</summary>'
        '<iframe title="this cell in a Python console in your browser (Pyodide, no TensorFlow)" '
        f'loading="lazy" src="{html.escape(console_url(source))}" '
        'style="width:100%;height:22em;border:1px solid #d0d7de;border-radius:6px">'
        "</iframe></details>"
    )


def add_live_cells(html_folder: Path, chapters: list[dict]) -> list[Path]:
    """Give every chapter page its cells' console folds.

    Args:
        html_folder: The built book, whose ``lite/`` site has the ``repl`` app.
        chapters: The manifest's chapters (``path``, ``file``).

    Returns:
        The pages changed.

    Raises:
        SystemExit: If a page does not show its notebook's ``browser-live`` cells.
    """
    pages = []
    for chapter in chapters:
        sources = live_sources(chapter["path"])
        if not sources:
            continue
        page = html_folder / Path(chapter["file"]).with_suffix(".html").name
        changed = with_live_cells(page.read_text(encoding="utf-8"), sources)
        if changed is None:
            raise SystemExit(f"[dev] {page.name} does not show its {len(sources)} {TAG} cells")
        page.write_text(changed, encoding="utf-8")
        pages.append(page)
    return pages
