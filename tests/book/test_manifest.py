"""The stored chapters agree with jupyter_book.toml and are clean enough for nbval."""

import re

import nbformat
import pytest

import dev
from tests.conftest import ROOT

# nbval's cell tags that exempt a cell; the reason sits in metadata.mirrorbook.nbval_reason.
EXEMPT_TAGS = {"nbval-ignore-output", "nbval-skip"}
COMMENT_MARKER = re.compile(r"^\s*#\s*(NBVAL|PYTEST_VALIDATE)_", re.M)


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
        '[book]\ntitle="t"\nauthor="a"\nroot="intro.md"\nrepository="https://github.com/o/b"\n'
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
def test_generated_cells_were_written_from_the_manifest(chapter, manifest):
    nb = nbformat.read(chapter["path"], as_version=4)
    for tag, (cell_type, source) in dev.GENERATED_CELLS.items():
        cells = [c for c in nb.cells if tag in c.metadata.get("tags", [])]
        assert len(cells) == 1 and cells[0].cell_type == cell_type, tag
        assert cells[0].source == source(manifest, chapter), "run `python3 dev.py book`"
    order = [t for c in nb.cells for t in c.metadata.get("tags", []) if t in dev.GENERATED_CELLS]
    assert order == list(dev.GENERATED_CELLS), "link, then set-up, then parameters"
    first_code = next(c for c in nb.cells if c.cell_type == "code")
    assert "hosted-setup" in first_code.metadata["tags"], "the set-up cell must run first"


def test_colab_links_and_set_up_follow_the_repository_setting(manifest):
    repository = manifest["book"]["repository"]
    chapter = manifest["chapters"][0]
    owner_name = repository.removeprefix("https://github.com/")
    assert dev.colab_url(manifest, chapter) == (
        f"https://colab.research.google.com/github/{owner_name}/blob/"
        f"{manifest['book']['branch']}/book/{chapter['file']}"
    )
    assert f'"git+{repository}@{manifest["book"]["branch"]}"' in dev.setup_source(manifest)
    readme = (ROOT / "README.md").read_text()
    assert dev.colab_url(manifest, chapter) in readme, "the README links chapter 1 in Colab"


def test_a_repository_that_colab_cannot_open_is_refused(tmp_path):
    path = tmp_path / "jupyter_book.toml"
    path.write_text(
        '[book]\ntitle="t"\nrepository="https://gitlab.com/a/b"\n'
        '[defaults]\nnbval="strict"\n[[chapters]]\nfile="a.ipynb"\n'
    )
    with pytest.raises(SystemExit, match="GitHub address"):
        dev.load_manifest(path)


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
    exempt = [c for c in code if EXEMPT_TAGS & set(c.metadata.get("tags", []))]
    for cell in exempt:
        reason = cell.metadata.get("mirrorbook", {}).get("nbval_reason", "")
        assert len(reason) > 10, (
            f"an exempt cell needs metadata.mirrorbook.nbval_reason: {cell.source[:80]}"
        )
    for cell in code:  # readers of the built book see no test markers
        assert not COMMENT_MARKER.search(cell.source), cell.source[:80]
    assert len(exempt) <= len(code) / 3, "nbval should still compare most cells"


def test_environment_yml_is_conda_forge_only_and_installs_from_the_lock():
    text = (ROOT / "environment.yml").read_text()
    assert re.search(r"channels:\n  - conda-forge\n(?!  -)", text)
    for needed in ("python=3.11", "graphviz", "pip", "-e .[book,test]", "-e ./widgets[test]"):
        assert needed in text
    assert f"-c {dev.LOCK.relative_to(ROOT).as_posix()}" in text
