"""The stored chapters agree with jupyter_book.toml and are clean enough for nbval."""

import re
import tomllib

import nbformat
import pytest

import dev
from tests.conftest import ROOT

EXEMPT = re.compile(r"^#\s*NBVAL_(IGNORE_OUTPUT|SKIP)\b.*$(?:\n(?P<reason>.*))?", re.M)


def chapters():
    return dev.load_manifest()["chapters"]


def test_manifest_lists_every_notebook_in_the_book(manifest):
    listed = {c["path"] for c in manifest["chapters"]}
    found = {p for p in manifest["source"].glob("*.ipynb")}
    assert listed == found
    assert (manifest["source"] / manifest["book"]["root"]).exists()


def test_generated_table_of_contents_follows_the_manifest(manifest):
    config, toc = dev.jupyter_book_files(manifest)
    assert toc["root"] == "intro"
    assert [c["file"] for c in toc["chapters"]] == [c["path"].stem for c in manifest["chapters"]]
    assert config["title"] == manifest["book"]["title"]
    assert config["execute"]["execute_notebooks"] == "off"


def test_chapter_settings_fall_back_to_defaults(tmp_path):
    path = tmp_path / "jupyter_book.toml"
    path.write_text(
        '[book]\ntitle="t"\nauthor="a"\nroot="intro.md"\n'
        '[defaults]\nreplicas=4\nseed=1\nnbval="strict"\ncell_timeout=9\n'
        '[[chapters]]\nfile="a.ipynb"\n[[chapters]]\nfile="b.ipynb"\nreplicas=2\nnbval="lax"\n'
    )
    a, b = dev.load_manifest(path)["chapters"]
    assert (a["replicas"], a["nbval"], b["replicas"], b["nbval"]) == (4, "strict", 2, "lax")


def test_unknown_nbval_mode_is_refused(tmp_path):
    path = tmp_path / "jupyter_book.toml"
    path.write_text('[book]\ntitle="t"\n[[chapters]]\nfile="a.ipynb"\nnbval="sometimes"\n')
    with pytest.raises(SystemExit, match="nbval must be one of"):
        dev.load_manifest(path)


@pytest.mark.parametrize("chapter", chapters(), ids=lambda c: c["file"])
def test_parameters_cell_was_written_from_the_manifest(chapter):
    nb = nbformat.read(chapter["path"], as_version=4)
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1
    assert cells[0].source == dev.parameters_source(chapter), "run `python3 dev.py book`"


@pytest.mark.parametrize("chapter", chapters(), ids=lambda c: c["file"])
def test_stored_outputs_are_complete_and_quiet(chapter):
    nb = nbformat.read(chapter["path"], as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), "run in order"
    for cell in code:
        for output in cell.outputs:
            assert output.output_type != "error", cell.source
            assert output.get("name") != "stderr", f"log noise in: {cell.source[:60]}"
            text = output.get("text", "") + str(output.get("data", {}).get("text/plain", ""))
            assert "WARNING:tensorflow" not in text and "INFO:tensorflow" not in text


@pytest.mark.parametrize("chapter", chapters(), ids=lambda c: c["file"])
def test_every_exempt_cell_says_why(chapter):
    nb = nbformat.read(chapter["path"], as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    for cell in code:
        for marker in EXEMPT.finditer(cell.source):
            # nbval only sees the marker alone on its line; the reason is the next line.
            assert (marker.group("reason") or "").startswith("# Why: "), cell.source[:80]
    exempt = sum(1 for c in code if EXEMPT.search(c.source))
    assert exempt <= len(code) / 3, "nbval should still compare most cells"


def test_environment_yml_is_conda_forge_only_with_what_binder_needs():
    text = (ROOT / "environment.yml").read_text()
    assert re.search(r"channels:\n  - conda-forge\n(?!  -)", text)
    for needed in ("python=3.11", "graphviz", "jupyterlab", "pip", "-e .", "-e ./widgets"):
        assert needed in text
    with open(ROOT / "pyproject.toml", "rb") as f:
        tensorflow = [d for d in tomllib.load(f)["project"]["dependencies"] if "tensorflow" in d]
    assert tensorflow[0] in text
