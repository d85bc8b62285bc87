"""bookbuild.jupyterbook: Jupyter Book 1's configuration from the manifest (the build itself is
tested on the real book by tests/book/test_build.py, and on a two-page book by its doctest)."""

from bookbuild.jupyterbook import BOOK_EXTENSIONS, jupyter_book_files


def test_generated_table_of_contents_follows_the_manifest(manifest):
    config, toc = jupyter_book_files(manifest)
    assert toc["root"] == "intro"
    pages = [page.removesuffix(".md") for page in manifest["book"].get("pages", [])]
    chapters = [c["path"].stem for c in manifest["chapters"]]
    assert [c["file"] for c in toc["chapters"]] == chapters + pages  # pages after the chapters
    assert config["title"] == manifest["book"]["title"]
    assert config["execute"]["execute_notebooks"] == "off"


def test_the_book_needs_no_network_to_build_or_read(manifest):
    config, _ = jupyter_book_files(manifest)
    sphinx = config["sphinx"]["config"]
    assert sphinx["extensions"] == list(BOOK_EXTENSIONS)
    assert "sphinx_thebe" not in BOOK_EXTENSIONS  # Binder, and a duplicated inline script
    assert sphinx["nb_ipywidgets_js"] == {}  # no widget JavaScript from a CDN
    assert ["*", "application/vnd.jupyter.widget-view+json", None] in sphinx[
        "nb_mime_priority_overrides"
    ]
