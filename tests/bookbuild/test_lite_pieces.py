"""The lab site's pieces: Pyodide checked by its sum, its lock cut to the wheels held, the links."""

from __future__ import annotations

import html
import io
import json
import re
import tarfile

import pytest

from bookbuild.lite import downloads, links, live_cells
from bookbuild.lite.pyodide_lock import rewrite_lock


def _lock(folder, packages: dict[str, list[str]]) -> None:
    entries = {
        name: {
            "name": name,
            "version": "0",
            "file_name": f"{name}-0-py3-none-any.whl",
            "depends": depends,
            "sha256": "0" * 64,
        }
        for name, depends in packages.items()
    }
    (folder / "pyodide-lock.json").write_text(json.dumps({"info": {}, "packages": entries}))


def test_the_lock_keeps_exactly_the_wheels_held_with_their_own_sums(tmp_path):
    _lock(tmp_path, {"ipython": ["traitlets"], "traitlets": [], "numpy": []})
    (tmp_path / "ipython-9.12.0-py3-none-any.whl").write_bytes(b"one")
    (tmp_path / "traitlets-5.14.3-py3-none-any.whl").write_bytes(b"two")
    assert rewrite_lock(tmp_path) == ["ipython", "traitlets"]
    kept = json.loads((tmp_path / "pyodide-lock.json").read_text())["packages"]
    assert kept["traitlets"]["file_name"] == "traitlets-5.14.3-py3-none-any.whl"
    assert kept["traitlets"]["version"] == "5.14.3"
    # sha256 of b"two"
    assert kept["traitlets"]["sha256"].startswith("3fc4ccfe745870e2c0d99f71f30ff0656c8dedd4")


def test_a_kept_package_whose_dependency_is_not_held_stops_the_build(tmp_path):
    _lock(tmp_path, {"ipython": ["traitlets"], "traitlets": []})
    (tmp_path / "ipython-9.12.0-py3-none-any.whl").write_bytes(b"one")
    with pytest.raises(SystemExit, match=r"needed but not pinned \['traitlets'\]"):
        rewrite_lock(tmp_path)


def test_the_kernels_own_wheels_and_the_lab_files_get_entries_from_their_metadata(tmp_path):
    from bookbuild.lite.kernel_start import ADDED_TO_LOCK, kernel_wheels, lab_files_wheel
    from bookbuild.lite.wheels import write_wheel

    _lock(tmp_path, {"ipython": [], "micropip": []})
    for name in ("ipython", "micropip"):
        (tmp_path / f"{name}-1.0-py3-none-any.whl").write_bytes(b"pyodide's")
    kernel_wheels(tmp_path)
    write_wheel(tmp_path, "comm", "0.2.3", [("comm/__init__.py", b"")], [])
    data = tmp_path / "05_ring_values.json"
    data.write_text("{}")
    lab_files_wheel([data], tmp_path)
    held = ["comm", "ipykernel", "ipython", "micropip", "mirrorbook-lab-files", "piplite"]
    assert rewrite_lock(tmp_path, added=ADDED_TO_LOCK) == [*held, "pyodide-kernel"]
    kept = json.loads((tmp_path / "pyodide-lock.json").read_text())["packages"]
    kernel = kept["pyodide-kernel"]
    assert (kernel["depends"], kernel["imports"]) == (["comm", "ipython"], ["pyodide_kernel"])
    assert kept["ipykernel"]["depends"] == ["pyodide-kernel"]
    assert kept["mirrorbook-lab-files"]["imports"] == []  # data files only
    # Without the entries, Pyodide's lock alone does not know them: the build stops.
    _lock(tmp_path, {"ipython": [], "micropip": []})
    with pytest.raises(SystemExit, match="not in the lock .*'pyodide-kernel'"):
        rewrite_lock(tmp_path)


def test_a_pyodide_package_that_is_not_the_registrys_is_refused_and_removed(tmp_path, monkeypatch):
    monkeypatch.setattr(downloads, "CACHE", tmp_path)
    tampered = tmp_path / f"pyodide-{downloads.PYODIDE_VERSION}.tgz"
    with tarfile.open(tampered, "w:gz") as archive:
        data = b"console.log('not pyodide')"
        info = tarfile.TarInfo("package/pyodide.mjs")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    with pytest.raises(SystemExit, match="its sum differs.*fetch it anew"):
        downloads.pyodide_runtime(tmp_path / "out")
    assert not tampered.exists()
    assert not (tmp_path / "out").exists()


def test_the_lab_link_goes_under_the_colab_link_once_however_often_it_is_written():
    colab = "https://colab.research.google.com/github/o/b/blob/main/book/02_x.ipynb"
    page = (
        f'<h1>Two</h1>\n<p><a href="{colab}">Open this chapter in Colab</a> (...)</p>\n<p>Next</p>'
    )
    once = links._with_link(page, colab, "lite/notebooks/index.html?path=02_x.ipynb")
    twice = links._with_link(once, colab, "lite/notebooks/index.html?path=02_x.ipynb")
    assert once == twice
    assert once.count(links.TEXT) == 1
    assert once.index("Open this chapter in Colab") < once.index(links.TEXT) < once.index("Next")
    assert 'href="lite/notebooks/index.html?path=02_x.ipynb" target="_blank"' in once
    assert links._with_link("<p>no colab link</p>", colab, "lite/x") is None


def test_each_lab_gets_its_links_cell_second_and_its_data_files(tmp_path):
    import nbformat

    from bookbuild.lite.contents import LINKS_TAG, chapters_with_labs, write_contents
    from bookbuild.manifest import load_manifest

    manifest = load_manifest()
    written = write_contents(manifest, tmp_path)
    assert [p.name for p in written] == [
        c["browser_lab_path"].name for c in chapters_with_labs(manifest)
    ]
    for path, chapter in zip(written, chapters_with_labs(manifest), strict=True):
        cells = nbformat.read(path, as_version=4).cells
        assert cells[0].source.startswith("# Chapter ")
        assert cells[1].metadata["tags"] == [LINKS_TAG]
        assert chapter["file"] in cells[1].source  # GitHub's and Colab's addresses of it
        assert "colab.research.google.com" in cells[1].source
    assert (tmp_path / "05_ring_values.json").is_file()


def test_a_lab_without_its_title_first_is_refused(tmp_path):
    import nbformat

    from bookbuild.lite.contents import write_contents

    lab = tmp_path / "book" / "browser" / "02_x.ipynb"
    lab.parent.mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")]), lab)
    chapter = {"file": "02_x.ipynb", "title": "X", "browser_lab_path": lab}
    manifest = {"chapters": [chapter]}
    with pytest.raises(SystemExit, match="opens with its title, a markdown cell"):
        write_contents(manifest, tmp_path / "out")


def test_each_live_cell_gets_its_console_fold_inside_it_at_its_end():
    from urllib.parse import parse_qs, urlsplit

    cell = '<div class="cell tag_browser-live tag_x docutils container"><div><pre>{}</pre></div>'
    page = "<main>" + cell.format("a") + "</div><p>between</p>" + cell.format("b") + "</div></main>"
    done = live_cells.with_live_cells(page, ["print('a')", "print('b')"])
    first, second = re.findall(r'src="([^"]+)"', done)
    for url, source in ((first, "print('a')"), (second, "print('b')")):
        address = urlsplit(html.unescape(url))
        assert address.path == "lite/repl/index.html"
        wanted = {"kernel": ["python"], "code": [live_cells.PRELUDE, source]}
        assert parse_qs(address.query) == wanted
    # each fold closes its own cell: after the cell's code, before the cell's </div>
    assert "<pre>a</pre></div><details" in done and "</details></div><p>between" in done
    assert done.endswith("</details></div></main>")
    assert done.count('loading="lazy"') == 2 and done.count("<summary>") == 2
    assert live_cells.with_live_cells(page, ["print('a')"]) is None  # a cell missing: say so


def test_every_chapter_with_a_lab_has_a_cell_that_runs_in_its_page():
    from bookbuild.lite.contents import chapters_with_labs
    from bookbuild.manifest import load_manifest

    for chapter in chapters_with_labs(load_manifest()):
        assert live_cells.live_sources(chapter["path"]), chapter["file"]
