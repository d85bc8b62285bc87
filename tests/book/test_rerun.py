"""A learner's "Run All", again in the same kernel (see RUN_ALL), then the solutions pass.

The reference job leaves this test to its nbval stage, which runs the same added cells
(bookbuild.rerun) after comparing each chapter's outputs; the other jobs run it here.
"""

import os

import nbformat
import pytest

from bookbuild.execute import notebook_client
from bookbuild.manifest import load_manifest
from bookbuild.rerun import checks_of, run_again

pytestmark = [pytest.mark.book, pytest.mark.run_all]

# How many times "Run All" runs before the solutions: twice by default; once in the other
# Pythons' jobs (dev.py sets MIRRORBOOK_RUN_ALL=1 there), where what is tested is that the
# chapter runs and its solutions pass on that Python and that TensorFlow.
RUN_ALL = int(os.environ.get("MIRRORBOOK_RUN_ALL", "2"))


@pytest.mark.parametrize("chapter", load_manifest()["chapters"], ids=lambda c: c["file"])
def test_run_all_twice_then_solutions_pass(chapter, tmp_path):
    nb = nbformat.read(chapter["path"], as_version=4)
    # Exercises are per chapter in the manifest; a chapter with exercises has their checks.
    assert bool(checks_of(nb)) == bool(chapter["exercises"]), chapter["exercises"]
    nb.cells.extend(run_again(nb, times=RUN_ALL - 1))
    # In its own folder: what the chapter writes (a trace file) stays out of book/, and jobs
    # that run side by side do not write the same file. A failing cell, or a check of the
    # Solutions block that does not pass, raises CellExecutionError.
    with notebook_client(nb, timeout=chapter["cell_timeout"], cwd=tmp_path) as client:
        client.execute()
