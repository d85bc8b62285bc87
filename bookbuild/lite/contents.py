"""The lab site's files: each chapter's browser lab, with the links written from the manifest.

A lab (``book/browser/``, named by its chapter's ``browser_lab`` in ``jupyter_book.toml``)
gets a markdown cell after its title linking back to its chapter's page in the built book
and to the chapter in Colab, where the real TensorFlow runs. Data files beside the labs (the
values a lab replays) are copied with them, for the file browser; the kernel gets them in its
own working folder from a wheel (:mod:`bookbuild.lite.kernel_start`).

Example:
    >>> from bookbuild.manifest import load_manifest
    >>> manifest = load_manifest()
    >>> [chapter["file"] for chapter in chapters_with_labs(manifest)][:1]
    ['02_input_distribution.ipynb']
"""

from __future__ import annotations

import shutil
from pathlib import Path

from bookbuild.cells import colab_url, github_url

LINKS_TAG = "lab-links"
# Where the site lands inside the HTML book's folder, and the page that opens one notebook.
SITE_FOLDER = "lite"
NOTEBOOK_PAGE = "notebooks/index.html"


def chapters_with_labs(manifest: dict) -> list[dict]:
    """The chapters that name a browser lab, in reading order.

    Args:
        manifest: What :func:`~bookbuild.manifest.load_manifest` returns.

    Returns:
        Those chapters; each has ``browser_lab_path``, the lab's file.
    """
    return [chapter for chapter in manifest["chapters"] if chapter.get("browser_lab_path")]


def lab_url(chapter: dict) -> str:
    """A chapter's lab, relative to the HTML book's folder (where its page is).

    Example:
        >>> lab_url({"browser_lab_path": Path("book/browser/05_ring.ipynb")})
        'lite/notebooks/index.html?path=05_ring.ipynb'
    """
    return f"{SITE_FOLDER}/{NOTEBOOK_PAGE}?path={chapter['browser_lab_path'].name}"


def links_source(manifest: dict, chapter: dict) -> str:
    """The markdown of a lab's links cell: its chapter, on GitHub and in Colab.

    The book's pages open a lab in a new tab, so the chapter stays open in the reader's
    first tab. A link from a notebook to the book's own page cannot be written: JupyterLab
    takes every relative link in a notebook for a file of the site's contents, and the
    site's address is known only where it is served.

    Example:
        >>> from bookbuild.manifest import load_manifest
        >>> manifest = load_manifest()
        >>> print(links_source(manifest, chapters_with_labs(manifest)[0]))  # doctest: +ELLIPSIS
        This lab is chapter 2's idea, *Datasets and input distribution*, ...[on GitHub](https://github.com/mirrorbook/mirrorbook/blob/main/book/02_input_distribution.ipynb); [open the chapter in Colab](...) ...
    """  # noqa: E501
    number = manifest["chapters"].index(chapter) + 1
    github = github_url(manifest, chapter)
    return (
        f"This lab is chapter {number}'s idea, *{chapter['title']}*, run in your browser: "
        "no installation, the book's own code, and no TensorFlow (it does not run in a "
        "browser). Came from the book? The chapter is still open in your first tab; it is "
        f"also, with its outputs, [on GitHub]({github}); "
        f"[open the chapter in Colab]({colab_url(manifest, chapter)}) "
        "to run the real thing, with TensorFlow. What you save stays in this browser; the "
        "book's link opens the book's version and offers your copy. Working in your copy? "
        f"The book's version is the file [{chapter['browser_lab_path'].name}]"
        f"({chapter['browser_lab_path'].name})."
    )


def write_contents(manifest: dict, into: Path) -> list[Path]:
    """Copy every lab, with its links cell, and the labs' data files into a folder.

    Args:
        manifest: What :func:`~bookbuild.manifest.load_manifest` returns.
        into: The site's contents folder (made if missing).

    Returns:
        The labs written.

    Raises:
        SystemExit: If a lab does not open with a markdown cell (its title).
    """
    import nbformat

    into.mkdir(parents=True, exist_ok=True)
    written = []
    for chapter in chapters_with_labs(manifest):
        source = chapter["browser_lab_path"]
        nb = nbformat.read(source, as_version=4)
        if not nb.cells or nb.cells[0].cell_type != "markdown":
            raise SystemExit(f"[dev] {source}: a browser lab opens with its title, a markdown cell")
        links = nbformat.v4.new_markdown_cell(
            links_source(manifest, chapter), metadata={"tags": [LINKS_TAG]}
        )
        nb.cells.insert(1, links)
        nbformat.write(nb, into / source.name)
        written.append(into / source.name)
    for data in data_files(manifest):
        shutil.copy2(data, into / data.name)
    return written


def data_files(manifest: dict) -> list[Path]:
    """The files beside the labs that are not labs: the values they replay.

    Example:
        >>> from bookbuild.manifest import load_manifest
        >>> [path.name for path in data_files(load_manifest())]
        ['05_ring_values.json', '05_step_phases.json']
    """
    folders = {chapter["browser_lab_path"].parent for chapter in chapters_with_labs(manifest)}
    found = {p for folder in folders for p in folder.iterdir() if p.is_file()}
    return sorted((p for p in found if p.suffix != ".ipynb"), key=lambda p: p.name)
