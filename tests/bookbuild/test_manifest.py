"""bookbuild.manifest: jupyter_book.toml read, completed with its defaults, and checked."""

import pytest

from bookbuild import ROOT
from bookbuild.manifest import MANIFEST, load_manifest

BOOK = '[book]\ntitle="t"\nauthor="a"\nroot="intro.md"\nrepository="https://github.com/o/b"\n'


def _write(tmp_path, text):
    path = tmp_path / "jupyter_book.toml"
    path.write_text(text)
    return path


def test_chapter_settings_fall_back_to_defaults(tmp_path):
    path = _write(
        tmp_path,
        BOOK + '[defaults]\nreplicas=4\nseed=1\nnbval="strict"\ncell_timeout=9\n'
        '[[chapters]]\nfile="a.ipynb"\n[[chapters]]\nfile="b.ipynb"\nreplicas=2\nnbval="lax"\n',
    )
    a, b = load_manifest(path)["chapters"]
    assert (a["replicas"], a["nbval"], b["replicas"], b["nbval"]) == (4, "strict", 2, "lax")
    assert (a["grade_replicas"], b["grade_replicas"]) == ([2, 8, 5], [8, 5, 16])


def test_paths_are_relative_to_the_manifest_and_the_branch_defaults_to_main(tmp_path):
    path = _write(tmp_path, BOOK + 'source="pages"\n[[chapters]]\nfile="a.ipynb"\nnbval="lax"\n')
    manifest = load_manifest(path)
    assert manifest["folder"] == tmp_path.resolve()
    assert manifest["chapters"][0]["path"] == tmp_path.resolve() / "pages" / "a.ipynb"
    assert manifest["output"] == tmp_path.resolve() / "build"
    assert manifest["book"]["branch"] == "main"


def test_the_project_manifest_is_read_from_the_top_folder():
    manifest = load_manifest()
    assert MANIFEST == ROOT / "jupyter_book.toml"
    assert manifest["source"] == ROOT / "book" and manifest["folder"] == ROOT


def test_unknown_nbval_mode_is_refused(tmp_path):
    path = _write(tmp_path, BOOK + '[[chapters]]\nfile="a.ipynb"\nnbval="sometimes"\n')
    with pytest.raises(SystemExit, match="nbval must be one of"):
        load_manifest(path)


def test_a_manifest_without_chapters_is_refused(tmp_path):
    with pytest.raises(SystemExit, match=r"no \[\[chapters\]\] listed"):
        load_manifest(_write(tmp_path, BOOK))


def test_a_repository_that_colab_cannot_open_is_refused(tmp_path):
    path = _write(
        tmp_path,
        '[book]\ntitle="t"\nrepository="https://gitlab.com/a/b"\n'
        '[defaults]\nnbval="strict"\n[[chapters]]\nfile="a.ipynb"\n',
    )
    with pytest.raises(SystemExit, match="GitHub address"):
        load_manifest(path)


@pytest.mark.parametrize("value", ['"8"', "[2, 0]", "[2.5]", "[true]"])
def test_grade_replicas_must_be_a_list_of_counts(tmp_path, value):
    text = BOOK + f'[[chapters]]\nfile="a.ipynb"\nnbval="strict"\ngrade_replicas={value}\n'
    with pytest.raises(SystemExit, match="grade_replicas must be a list of replica counts"):
        load_manifest(_write(tmp_path, text))


def test_grade_replicas_default_and_an_empty_list_means_one_run(tmp_path):
    text = BOOK + '[defaults]\nnbval="strict"\n[[chapters]]\nfile="a.ipynb"\n'
    text += '[[chapters]]\nfile="b.ipynb"\ngrade_replicas=[]\n'
    first, second = load_manifest(_write(tmp_path, text))["chapters"]
    assert first["grade_replicas"] == [2, 8, 5] and second["grade_replicas"] == []


@pytest.mark.parametrize("value", ["[2, 8]", "[2, 2, 8]", "[2, 4, 8]"])
def test_grade_replicas_must_offer_three_other_counts(tmp_path, value):
    text = BOOK + '[defaults]\nnbval="strict"\nreplicas=4\n'
    text += f'[[chapters]]\nfile="a.ipynb"\ngrade_replicas={value}\n'
    with pytest.raises(SystemExit, match=r"at least three counts other than the chapter's rep"):
        load_manifest(_write(tmp_path, text))
    if value != "[2, 4, 8]":  # fewer counts, with the reason written down
        why = 'grade_replicas_why="its global batch is 16"\n'
        assert load_manifest(_write(tmp_path, text + why))["chapters"][0]["grade_replicas"]
