"""bookbuild.rerun: the cells that run a chapter again, then its solutions and checks."""

from pathlib import Path

import nbformat.v4 as v4
import pytest
from nbclient.exceptions import CellExecutionError

from bookbuild.execute import notebook_client
from bookbuild.rerun import ADDED, checked, run_again

CHECK = (
    "class Result:\n"
    "    def __init__(self, passed): self.passed = passed\n"
    "    def __repr__(self): return 'PASS' if self.passed else 'FAIL: x is not 2'\n"
    "def check(x):\n"
    "    return Result(x == 2)"
)


def chapter(solution: str):
    return v4.new_notebook(
        cells=[
            v4.new_code_cell(CHECK),
            v4.new_code_cell("runs = globals().get('runs', 0) + 1"),
            v4.new_code_cell("x = ...", metadata={"tags": ["exercise-answer"]}),
            v4.new_code_cell("check(x)", metadata={"tags": ["exercise-check"]}),
            v4.new_markdown_cell(
                f"<summary>Solutions</summary>\n```python\n# Exercise 1\n{solution}\n```"
            ),
        ]
    )


def test_the_added_cells_run_the_chapter_again_then_the_solutions_and_checks():
    cells = run_again(chapter("x = 2"), times=2)
    assert [c.metadata[ADDED] for c in cells] == ["run again"] * 8 + ["solutions", "check"]
    assert all(c.metadata["tags"] == ["nbval-ignore-output"] for c in cells)
    assert run_again(v4.new_notebook(cells=[v4.new_code_cell("1")]), times=0) == []


# The right solution gives 2 only once the chapter's cells ran twice (runs == 2).
@pytest.mark.parametrize(("solution", "passes"), [("x = runs", True), ("x = 3", False)])
def test_a_solution_that_fails_its_check_fails_the_run(solution, passes, tmp_path: Path):
    nb = chapter(solution)
    nb.cells.extend(run_again(nb, times=1))
    with notebook_client(nb, timeout=60, cwd=tmp_path) as client:
        if passes:
            client.execute()
        else:
            with pytest.raises(CellExecutionError, match="fails its check: FAIL: x is not 2"):
                client.execute()
    if passes:
        assert nb.cells[-1].outputs[0]["data"]["text/plain"] == "PASS"


def test_a_check_cell_must_end_with_its_result():
    assert checked("x = 1\ncheck(\n    x\n)").startswith(
        "x = 1\n_verdict = check(\n    x\n)\nassert"
    )
    with pytest.raises(ValueError, match="must end with the check's call"):
        checked("result = check(x)")
