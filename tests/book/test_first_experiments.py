"""What a reader changes first in a chapter's cell, run again in the same kernel, works.

Chapter 8 trains on eight replicas in a cell a reader of a chapter on replica counts edits at
once: another count, then another optimizer. The chapter's own cells run in a real kernel,
then the edited cell runs after the original, as in a notebook session.
"""

import nbformat
import nbformat.v4 as v4
import pytest

from bookbuild.cells import write_generated_cells
from bookbuild.execute import notebook_client
from bookbuild.manifest import load_manifest

pytestmark = [pytest.mark.book, pytest.mark.replica_counts]  # dev.py: reference job only

MANIFEST = load_manifest()
CHAPTER = next(c for c in MANIFEST["chapters"] if c["file"] == "08_scaling_the_batch.ipynb")
FIRST_RUN = "eight = mk.make_strategy(devices=devices[:8])"
EXPERIMENTS = [  # (what the reader replaces, with what, what the edited cell prints)
    ("devices[:8]", "devices[:2]", "global batch 16 | steps: 128"),
    ("devices[:8]", "devices[:4]", "global batch 32 | steps: 64"),
    ("keras.optimizers.SGD(learning_rate=0.1)", "keras.optimizers.Adam(0.01)", "steps: 32"),
]


def test_another_replica_count_or_optimizer_in_chapter_8s_first_cell(tmp_path):
    nb = nbformat.read(CHAPTER["path"], as_version=4)
    write_generated_cells(nb, MANIFEST, CHAPTER)
    first = next(i for i, c in enumerate(nb.cells) if FIRST_RUN in c.source)
    edited = nb.cells[first].source
    cells = [c for c in nb.cells[: first + 1] if c.cell_type == "code"]
    for old, new, _ in EXPERIMENTS:
        assert old in edited, f"chapter 8's first training cell no longer has {old!r}"
        cells.append(v4.new_code_cell(edited.replace(old, new)))
    run = v4.new_notebook(cells=cells, metadata=nb.metadata)
    with notebook_client(run, timeout=CHAPTER["cell_timeout"], cwd=tmp_path) as client:
        client.execute()  # raises CellExecutionError: the kernel broke on an edit
    printed = [
        "".join(o.get("text", "") for o in c.outputs) for c in run.cells[-len(EXPERIMENTS) :]
    ]
    for (old, new, expected), text in zip(EXPERIMENTS, printed, strict=True):
        assert expected in text, f"{old} -> {new}: {text}"
    assert "global batch 64 | steps: 32" in "".join(o.get("text", "") for o in cells[-4].outputs)
