"""The lab site's pieces: Pyodide checked by its sum, its lock cut to the wheels held, the links."""

from __future__ import annotations

import io
import json
import tarfile

import pytest

from bookbuild.lite import downloads, links
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
