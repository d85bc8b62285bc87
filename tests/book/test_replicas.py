"""Chapters whose prose speaks of N replicas run, and their claims hold, at other counts."""

import nbformat
import pytest

from bookbuild.cells import write_generated_cells
from bookbuild.execute import notebook_client
from bookbuild.manifest import load_manifest
from bookbuild.rerun import run_again

pytestmark = [pytest.mark.book, pytest.mark.replica_counts]  # dev.py: reference job only

MANIFEST = load_manifest()
CHAPTERS = {c["file"]: c for c in MANIFEST["chapters"]}
# Chapters 1 and 3 teach replica counts; the manifest's 4 is tested by nbval. The grading
# test (tests/book/test_labs.py) already runs every cell of a chapter, its claims and its
# answer key's checks at the first of its grade_replicas, so that count is not run here too.
CASES = [
    (file, replicas)
    for file in ("01_strategy_scope.ipynb", "03_custom_training_loops.ipynb")
    for replicas in (2, 8)
    if replicas not in CHAPTERS[file]["grade_replicas"][:1]
]


def test_every_count_is_run_here_or_by_the_grading_test():
    for file in ("01_strategy_scope.ipynb", "03_custom_training_loops.ipynb"):
        graded = CHAPTERS[file]["grade_replicas"][:1]
        assert sorted(r for f, r in CASES if f == file) + graded in ([2, 8], [8, 2]), file


@pytest.mark.parametrize(("file", "replicas"), CASES, ids=[f"{f[:2]}-{r}" for f, r in CASES])
def test_chapter_runs_and_its_claims_hold_at_other_replica_counts(file, replicas, tmp_path):
    chapter = dict(CHAPTERS[file], replicas=replicas)
    nb = nbformat.read(chapter["path"], as_version=4)
    write_generated_cells(nb, MANIFEST, chapter)  # the parameters cell now says REPLICAS = n
    nb.cells.extend(run_again(nb, times=0))  # the solutions, each check, and PASS required
    with notebook_client(nb, timeout=chapter["cell_timeout"], cwd=tmp_path) as client:
        client.execute()  # raises CellExecutionError if a cell, a claim or a check fails
    devices_line = f"{replicas} replicas on {replicas} logical CPU devices"
    assert any(devices_line in str(o) for c in nb.cells for o in c.get("outputs", []))
