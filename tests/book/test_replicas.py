"""Chapters whose prose speaks of N replicas run, and their claims hold, at other counts."""

import nbformat
import pytest

from bookbuild.cells import write_generated_cells
from bookbuild.execute import notebook_client
from bookbuild.manifest import load_manifest
from tests.book.test_rerun import solutions

pytestmark = [pytest.mark.book, pytest.mark.replica_counts]  # dev.py: reference job only

MANIFEST = load_manifest()
CHAPTERS = {c["file"]: c for c in MANIFEST["chapters"]}
# Chapters 1 and 3 teach replica counts; the manifest's 4 is tested by nbval.
CASES = [
    (file, replicas)
    for file in ("01_strategy_scope.ipynb", "03_custom_training_loops.ipynb")
    for replicas in (2, 8)
]


@pytest.mark.parametrize(("file", "replicas"), CASES, ids=[f"{f[:2]}-{r}" for f, r in CASES])
def test_chapter_runs_and_its_claims_hold_at_other_replica_counts(file, replicas, tmp_path):
    chapter = dict(CHAPTERS[file], replicas=replicas)
    nb = nbformat.read(chapter["path"], as_version=4)
    write_generated_cells(nb, MANIFEST, chapter)  # the parameters cell now says REPLICAS = n
    nb.cells.append(nbformat.v4.new_code_cell(solutions(nb)))
    checks = [c for c in nb.cells if "exercise-check" in c.metadata.get("tags", [])]
    nb.cells.extend(nbformat.v4.new_code_cell(c.source) for c in checks)
    with notebook_client(nb, timeout=chapter["cell_timeout"], cwd=tmp_path) as client:
        client.execute()  # raises CellExecutionError if a cell, or a claim's assert, fails
    verdicts = [c.outputs[-1]["data"]["text/plain"] for c in nb.cells[-len(checks) :]]
    assert verdicts and all(v.startswith("PASS") for v in verdicts), verdicts
    devices_line = f"{replicas} replicas on {replicas} logical CPU devices"
    assert any(devices_line in str(o) for c in nb.cells for o in c.get("outputs", []))
