"""The book's version: one place, its copies, and a release's links and CHANGELOG entry."""

import shutil

import nbformat

from bookbuild import ROOT
from bookbuild.cells import colab_url
from bookbuild.manifest import load_manifest
from bookbuild.release import release
from bookbuild.version import COPIES, book_version, version_copies

FILES = ["pyproject.toml", "jupyter_book.toml", "CHANGELOG.md", "README.md"]
FILES += sorted({c.split()[0] for c in COPIES})


def test_every_copy_holds_the_version_of_pyproject_toml():
    assert version_copies() == dict.fromkeys(COPIES, book_version())


def _project(tmp_path):
    for name in FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "book", tmp_path / "book")
    return tmp_path


def _links(root):
    manifest = load_manifest(root / "jupyter_book.toml")
    found = set()
    for chapter in manifest["chapters"]:
        nb = nbformat.read(chapter["path"], as_version=4)
        for cell in nb.cells:
            tags = cell.metadata.get("tags", [])
            if "hosted-setup" in tags or "open-in-colab" in tags:
                found.add(cell.source)
    return manifest, "\n".join(found)


def test_a_release_points_every_chapter_at_its_tag_and_a_dev_version_back_at_the_branch(
    tmp_path,
):
    root = _project(tmp_path)
    release("4.5.6", root, today="2031-02-03")
    assert set(version_copies(root).values()) == {"4.5.6"} == {book_version(root)}
    manifest, links = _links(root)
    assert manifest["book"]["ref"] == "v4.5.6"
    assert links.count("mirrorbook/mirrorbook@v4.5.6") == 1  # one set-up cell source
    assert "@main" not in links and "/blob/main/" not in links
    assert all(colab_url(manifest, c) in links for c in manifest["chapters"])
    assert "/blob/v4.5.6/book/01_strategy_scope.ipynb" in links
    assert colab_url(manifest, manifest["chapters"][0]) in (root / "README.md").read_text()
    changelog = (root / "CHANGELOG.md").read_text()
    assert "\n## Unreleased\n\n## 4.5.6 (2031-02-03)\n" in changelog

    release("4.6.0.dev0", root)
    manifest, links = _links(root)
    assert manifest["book"]["ref"] == "main" and "v4.5.6" not in links
    assert (root / "CHANGELOG.md").read_text() == changelog  # only a release dates an entry
    assert 'mirrorkit==4.6.0.dev0"' in (root / "widgets/pyproject.toml").read_text()
