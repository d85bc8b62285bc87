"""A learner's "Run All" twice in one kernel, then the exercises' solutions (see RUN_ALL)."""

import os

import nbformat
import pytest

from bookbuild.execute import notebook_client
from bookbuild.labs import solutions as solutions_by_exercise
from bookbuild.manifest import load_manifest

pytestmark = pytest.mark.book

# How many times "Run All" runs before the solutions: twice in the reference job, once in the
# other Pythons' jobs (dev.py sets MIRRORBOOK_RUN_ALL=1 there), where what is tested is that the
# chapter runs and its solutions pass on that Python and that TensorFlow.
RUN_ALL = int(os.environ.get("MIRRORBOOK_RUN_ALL", "2"))


def solutions(nb) -> str:
    """The code in the chapter's Solutions block, as the learner would paste it."""
    parts = solutions_by_exercise(nb)
    assert parts, "no Solutions block"
    return "\n\n".join(parts.values())


@pytest.mark.parametrize("chapter", load_manifest()["chapters"], ids=lambda c: c["file"])
def test_run_all_twice_then_solutions_pass(chapter, tmp_path):
    # Exercises are per chapter in the manifest; every chapter must survive Run All twice.
    nb = nbformat.read(chapter["path"], as_version=4)
    code = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    with (
        # In its own folder: what the chapter writes (a trace file) stays out of book/, and jobs
        # that run side by side do not write the same file.
        notebook_client(nb, timeout=chapter["cell_timeout"], cwd=tmp_path) as client,
        client.setup_kernel(),
    ):
        for _ in range(RUN_ALL):
            for index, cell in code:
                client.execute_cell(cell, index)  # raises CellExecutionError on failure
        checks = [c for _, c in code if "exercise-check" in c.metadata.get("tags", [])]
        if not chapter["exercises"]:
            assert checks == [], "the manifest says this chapter has no exercises"
            return
        answer = nbformat.v4.new_code_cell(solutions(nb))
        nb.cells.append(answer)
        client.execute_cell(answer, len(nb.cells) - 1)
        verdicts = []
        for cell in checks:
            client.execute_cell(cell, 0)
            verdicts.append(cell.outputs[-1]["data"]["text/plain"])
    assert verdicts, "a chapter with exercises ends with their checks"
    assert all(v.startswith("PASS") for v in verdicts), verdicts
