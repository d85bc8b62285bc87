"""bookbuild.cells: the Colab link, set-up and parameters cells written from the manifest."""

import ast

import nbformat.v4 as v4
import pytest

from bookbuild import ROOT
from bookbuild.cells import (
    GENERATED_CELLS,
    colab_link_source,
    colab_url,
    parameters_source,
    setup_source,
    write_generated_cells,
)


def _notebook(*tagged):
    """A notebook with one cell per (cell type, tag), and an ordinary code cell at the end."""
    make = {"markdown": v4.new_markdown_cell, "code": v4.new_code_cell}
    cells = [make[kind]("old", metadata={"tags": [tag]}) for kind, tag in tagged]
    return v4.new_notebook(cells=[*cells, v4.new_code_cell("print('lesson')")])


def test_colab_links_and_set_up_follow_the_repository_setting(manifest):
    repository = manifest["book"]["repository"]
    chapter = manifest["chapters"][0]
    owner_name = repository.removeprefix("https://github.com/")
    assert colab_url(manifest, chapter) == (
        f"https://colab.research.google.com/github/{owner_name}/blob/"
        f"{manifest['book']['ref']}/book/{chapter['file']}"
    )
    assert f"({colab_url(manifest, chapter)})" in colab_link_source(manifest, chapter)
    assert f'"git+{repository}@{manifest["book"]["ref"]}"' in setup_source(manifest)
    readme = (ROOT / "README.md").read_text()
    assert colab_url(manifest, chapter) in readme, "the README links chapter 1 in Colab"


def test_a_fork_gets_its_own_links_and_installs(manifest):
    fork = {**manifest, "book": {**manifest["book"], "repository": "https://github.com/me/fork"}}
    fork["book"]["ref"] = "lesson-7"  # a branch of the fork (load_manifest: a dev version)
    chapter = fork["chapters"][1]
    assert colab_url(fork, chapter).startswith(
        "https://colab.research.google.com/github/me/fork/blob/lesson-7/book/"
    )
    assert '"git+https://github.com/me/fork@lesson-7"' in setup_source(fork)


def test_generated_sources_are_valid_python(manifest):
    ast.parse(setup_source(manifest))
    tree = ast.parse(parameters_source({"replicas": 2, "seed": 7}))
    assigned = {node.targets[0].id: node.value.value for node in tree.body}
    assert assigned == {"REPLICAS": 2, "SEED": 7}


def test_every_generated_cell_is_rewritten_and_the_rest_left_alone(manifest):
    chapter = manifest["chapters"][0]
    nb = _notebook(*((kind, tag) for tag, (kind, _) in GENERATED_CELLS.items()))
    write_generated_cells(nb, manifest, chapter)
    for cell, (_, source) in zip(nb.cells, GENERATED_CELLS.values(), strict=False):
        assert cell.source == source(manifest, chapter)
    assert nb.cells[-1].source == "print('lesson')"


@pytest.mark.parametrize(
    "tagged",
    [
        [("markdown", "open-in-colab"), ("code", "hosted-setup")],  # no parameters cell
        [("markdown", "open-in-colab"), ("code", "hosted-setup"), ("markdown", "parameters")],
        [
            ("markdown", "open-in-colab"),
            ("code", "hosted-setup"),
            ("code", "parameters"),
            ("code", "parameters"),
        ],
    ],
    ids=["missing", "wrong type", "twice"],
)
def test_a_chapter_without_exactly_one_of_each_is_refused(tagged, manifest):
    with pytest.raises(SystemExit, match="needs exactly one code cell tagged 'parameters'"):
        write_generated_cells(_notebook(*tagged), manifest, manifest["chapters"][0])
