"""The HTML book: Jupyter Book 1's configuration written from the manifest, and the build.

Chapters are executed before the build (:mod:`bookbuild.execute`) and stored with their
outputs, so Jupyter Book executes nothing: what the book shows is what nbval verifies.

Example:
    >>> from bookbuild.manifest import load_manifest
    >>> config, toc = jupyter_book_files(load_manifest())
    >>> config["execute"]["execute_notebooks"]
    'off'
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bookbuild import ROOT
from bookbuild.manifest import load_manifest
from bookbuild.shell import run, say

# Jupyter Book 1.0.4's default Sphinx extensions without sphinx_thebe: it runs code on Binder,
# which an offline book cannot reach, and under Sphinx 7.4 its inline script
# `const THEBE_JS_URL = ...` lands twice on every page, a SyntaxError in the browser.
BOOK_EXTENSIONS = (
    "sphinx_togglebutton",
    "sphinx_copybutton",
    "myst_nb",
    "jupyter_book",
    "sphinx_comments",
    "sphinx_external_toc",
    "sphinx.ext.intersphinx",
    "sphinx_design",
    "sphinx_book_theme",
    # The API reference's directive and the chapters' links to it (bookbuild/apiref.py);
    # local_extensions below puts the project on sys.path for it.
    "bookbuild.apiref",
)


def jupyter_book_files(manifest: dict) -> tuple[dict, dict]:
    """The ``_config.yml`` and ``_toc.yml`` contents that Jupyter Book 1 wants.

    Style sheets in the source's ``_static/`` (``book/_static/mirrorbook.css``: output lines
    wrap) are served and linked from every page by Jupyter Book itself.

    Args:
        manifest: What :func:`~bookbuild.manifest.load_manifest` returns.

    Returns:
        ``(config, toc)`` as dicts; written as JSON, which is valid YAML.

    Example:
        >>> config, toc = jupyter_book_files(load_manifest())
        >>> config["execute"], toc["root"], toc["chapters"][0]
        ({'execute_notebooks': 'off'}, 'intro', {'file': '01_strategy_scope'})
    """
    book = manifest["book"]
    config = {
        "title": book["title"],
        "author": book["author"],
        "copyright": str(book.get("copyright", "")),
        "only_build_toc_files": True,
        # Chapters are executed by `dev.py book` and stored with their outputs.
        "execute": {"execute_notebooks": "off"},
        "html": {"use_repository_button": False, "use_issues_button": False},
        "sphinx": {
            "config": {
                "html_show_sourcelink": False,
                "extensions": list(BOOK_EXTENSIONS),
                # pydata-sphinx-theme reads the colour mode from this context value; without
                # it a first visit starts in mode "" and logs "Got invalid theme mode".
                "html_context": {"default_mode": "auto"},
                # Show each widget's static snapshot (its text/html) instead of the live
                # view, and load no widget JavaScript: the live view needs RequireJS and
                # the widget manager from a CDN, which a classroom offline cannot reach.
                "nb_mime_priority_overrides": [
                    ["*", "application/vnd.jupyter.widget-view+json", None]
                ],
                "nb_ipywidgets_js": {},
            },
            "local_extensions": {"bookbuild.apiref": str(ROOT)},
        },
    }
    toc = {
        "format": "jb-book",
        "root": Path(book["root"]).with_suffix("").as_posix(),
        "chapters": [
            {"file": Path(c["file"]).with_suffix("").as_posix()} for c in manifest["chapters"]
        ]
        # Pages after the chapters ([book] pages): the API reference, your own code.
        + [{"file": Path(page).with_suffix("").as_posix()} for page in book.get("pages", [])],
    }
    return config, toc


def build_html(out: Path | None = None, manifest: dict | None = None) -> Path:
    r"""Write ``_config.yml``/``_toc.yml`` from the manifest and build the HTML book.

    Runs the ``jupyter-book`` next to this Python (the environment's), with warnings as
    errors.

    Args:
        out: The output folder; the manifest's ``output`` (``build/``) by default.
        manifest: What :func:`~bookbuild.manifest.load_manifest` returns; this project's
            by default.

    Returns:
        The folder holding ``index.html``.

    Raises:
        SystemExit: If Jupyter Book fails or warns (its output says why).

    Example:
        A two-page book (a few seconds):

        >>> import tempfile
        >>> tmp = tempfile.TemporaryDirectory()
        >>> folder = Path(tmp.name)
        >>> (folder / "book").mkdir()
        >>> _ = (folder / "book" / "intro.md").write_text("# Welcome\n")
        >>> _ = (folder / "book" / "one.md").write_text("# One\n\nA chapter.\n")
        >>> _ = (folder / "jupyter_book.toml").write_text(
        ...     '[book]\ntitle = "T"\nauthor = "A"\nroot = "intro.md"\n'
        ...     'repository = "https://github.com/o/b"\n'
        ...     '[[chapters]]\nfile = "one.md"\nnbval = "strict"\n'
        ... )
        >>> manifest = load_manifest(folder / "jupyter_book.toml")
        >>> html = build_html(manifest=manifest)  # doctest: +ELLIPSIS
        [dev] book built: .../build/_build/html/index.html
        >>> sorted(page.name for page in html.glob("*.html"))
        ['genindex.html', 'index.html', 'intro.html', 'one.html', 'search.html']
        >>> tmp.cleanup()
    """
    manifest = manifest or load_manifest()
    out = Path(out or manifest["output"])
    generated = out / "jupyter-book"
    generated.mkdir(parents=True, exist_ok=True)
    config, toc = jupyter_book_files(manifest)
    (generated / "_config.yml").write_text(json.dumps(config, indent=2))
    (generated / "_toc.yml").write_text(json.dumps(toc, indent=2))
    jb = Path(sys.executable).with_name("jupyter-book")  # the venv's, next to its python
    run(
        jb,
        "build",
        manifest["source"],
        "--config",
        generated / "_config.yml",
        "--toc",
        generated / "_toc.yml",
        "--path-output",
        out,
        "--warningiserror",
        "--quiet",
    )
    html = out / "_build" / "html"
    say(f"book built: {html / 'index.html'}")
    return html
