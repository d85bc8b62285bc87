"""Classroom labs: a student edition and an autograder for every chapter with exercises.

The chapters' exercises are read by :mod:`bookbuild.exercises`; why otter-grader:
docs/design/build.md ("The labs"). Grading the submissions is :mod:`bookbuild.grading`,
with the grading program each lab holds (:mod:`bookbuild.grading.program`).

Example:
    >>> from bookbuild.manifest import load_manifest
    >>> [c["file"] for c in chapters_with_exercises(load_manifest(), ["3"])]
    ['03_custom_training_loops.ipynb']
"""

from __future__ import annotations

import ast
import builtins
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bookbuild import ROOT
from bookbuild.exercises import Exercise, exercises
from bookbuild.grading.program import write_program

LABS = ROOT / "build" / "labs"  # where `dev.py labs` writes, one folder per chapter
OTTER = str(Path(sys.executable).parent / "otter")  # this environment's otter command
OTTER_PIN = "otter-grader==7.0.0"  # the student edition installs this where otter is missing


def otter_test(exercise: Exercise, check: str) -> str:
    r"""The otter-grader test of one exercise: its check cell as a function that asserts.

    The function's arguments are the names the check cell reads and does not assign
    (otter-grader passes them from the learner's notebook); the check's message is the
    assertion's, so a failing test shows the learner the check's feedback.

    Args:
        exercise: The exercise.
        check: The source of its check cell.

    Returns:
        Python source: one ``def test_exK(...)``.

    Example:
        >>> ex = Exercise(1, 0, 1, 2, "x = 1")
        >>> print(otter_test(ex, "n = 2\nmk.check_twice(x, n)"))
        def test_ex1(mk, x):
            n = 2
            verdict = mk.check_twice(x, n)
            assert verdict.passed, verdict.message
    """
    tree = ast.parse(check)
    last = tree.body[-1] if tree.body else None
    if not isinstance(last, ast.Expr):
        raise ValueError(
            f"exercise {exercise.number}'s check cell must end with the check's call, "
            f"got {check!r}."
        )
    assigned = {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }
    read = sorted(
        {
            node.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
        }
        - assigned
        - set(dir(builtins))
    )
    lines = [ast.unparse(node) for node in tree.body[:-1]]
    lines += [f"verdict = {ast.unparse(last.value)}", "assert verdict.passed, verdict.message"]
    body = "\n".join("    " + line for text in lines for line in text.splitlines())
    return f"def test_{exercise.name}({', '.join(read)}):\n{body}"


def master_notebook(nb, name: str):
    r"""The notebook ``otter assign`` reads, made from a chapter.

    Cells before the first exercise stay as they are; each exercise becomes an otter
    question (one point) whose solution cell is the chapter's solution with the blank answer
    as the student's prompt, followed by the chapter's check cell (the learner's own check)
    and the question's test (:func:`otter_test`). The Solutions block is left out. The
    chapter's cells keep their stored outputs, except the exercises' own cells (from the
    task to the check), so the answer key shows the chapter as it ran.

    Args:
        nb: The chapter, an ``nbformat`` notebook.
        name: The assignment's name (the chapter's stem).

    Returns:
        A new ``nbformat`` notebook.

    Example:
        >>> import nbformat
        >>> from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
        >>> nb = new_notebook(cells=[
        ...     new_markdown_cell("**Exercise 1.** Make x."),
        ...     new_code_cell("x = ...", metadata={"tags": ["exercise-answer"]}),
        ...     new_code_cell("check(x)", metadata={"tags": ["exercise-check"]}),
        ...     new_markdown_cell("<summary>Solutions</summary>\n```python\n# Exercise 1\nx = 1\n```"),
        ... ])
        >>> [c.source.splitlines()[0] for c in master_notebook(nb, "lab").cells]  # doctest: +NORMALIZE_WHITESPACE
        ['# ASSIGNMENT CONFIG', '# BEGIN QUESTION', '**Exercise 1.** Make x.', '# BEGIN SOLUTION',
         '# BEGIN SOLUTION NO PROMPT', '# END SOLUTION', 'check(x)', '# BEGIN TESTS',
         'def test_ex1(check, x):', '# END TESTS', '# END QUESTION']
    """  # noqa: E501
    import nbformat
    from nbformat.v4 import new_code_cell, new_raw_cell

    found = exercises(nb)
    if not found:
        raise ValueError(f"{name} has no exercises: there is nothing to make a lab of.")
    config = "\n".join(
        [
            "# ASSIGNMENT CONFIG",
            f"name: {name}",
            "init_cell: true",
            "check_all_cell: false",
            "export_cell: false",
            "run_tests: false",
            "solutions_pdf: false",
            "generate: true",
            "tests:",
            "  ok_format: false",
        ]
    )
    cells = [new_raw_cell(config)]
    first = found[0].prompt
    key = next(i for i, c in enumerate(nb.cells) if "<summary>Solutions</summary>" in c.source)
    cells += [_copy(c) for c in nb.cells[:first]]
    for position, exercise in enumerate(found):
        stop = found[position + 1].prompt if position + 1 < len(found) else len(nb.cells)
        cells.append(new_raw_cell(f"# BEGIN QUESTION\nname: {exercise.name}\npoints: 1"))
        # An exercise's own cells carry no outputs (the key's check would print its verdict).
        cells += [_copy(nb.cells[i], False) for i in range(exercise.prompt, exercise.answer)]
        blank = nb.cells[exercise.answer].source
        solution = (
            f"# BEGIN SOLUTION NO PROMPT\n{exercise.solution}\n# END SOLUTION\n"
            f'""" # BEGIN PROMPT\n{blank}\n""" # END PROMPT'
        )
        cells += [new_raw_cell("# BEGIN SOLUTION"), new_code_cell(solution)]
        cells.append(new_raw_cell("# END SOLUTION"))
        after = range(exercise.answer + 1, exercise.check + 1)
        cells += [_copy(nb.cells[i], False) for i in after]
        check = nb.cells[exercise.check].source
        cells += [new_raw_cell("# BEGIN TESTS"), new_code_cell(otter_test(exercise, check))]
        cells += [new_raw_cell("# END TESTS"), new_raw_cell("# END QUESTION")]
        # What follows the check up to the next exercise (after the last: the summary).
        cells += [_copy(nb.cells[i]) for i in range(exercise.check + 1, stop) if i != key]
    return nbformat.v4.new_notebook(cells=cells, metadata=dict(nb.metadata))


def _copy(cell, outputs: bool = True):
    """A copy of a chapter's cell, with its stored outputs or (``outputs=False``) without."""
    import copy

    cell = copy.deepcopy(cell)
    if cell.cell_type == "code" and not outputs:
        cell.outputs, cell.execution_count = [], None
    return cell


@dataclass(frozen=True)
class Lab:
    """What :func:`build_lab` wrote for one chapter.

    Attributes:
        student: The student edition (solutions removed, checks and otter's cells kept).
        answer_key: The chapter with the solutions in place, for the instructor.
        autograder: The zip otter-grader made (for courses that grade with otter or Gradescope;
            ``dev.py grade`` uses ``program``).
        program: The grading program, ``program.json``, :func:`~bookbuild.grading.grade`
            runs (:mod:`bookbuild.grading.program`).
    """

    student: Path
    answer_key: Path
    autograder: Path
    program: Path


def build_lab(chapter: dict, into: Path = LABS) -> Lab:
    """Write a chapter's student edition and autograder with ``otter assign``.

    Args:
        chapter: One of :func:`~bookbuild.manifest.load_manifest`'s chapters.
        into: The folder that gets ``<stem>/student`` and ``<stem>/autograder``.

    Returns:
        The :class:`Lab`'s paths.

    Raises:
        ValueError: If the chapter has no exercises or they break the format.
        subprocess.CalledProcessError: If ``otter assign`` fails (its output is printed).
    """
    import nbformat

    path = Path(chapter["path"])
    stem = path.stem
    out = Path(into) / stem
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="mirrorbook-lab-") as work:
        master = Path(work) / path.name
        nbformat.write(master_notebook(nb, stem), master)
        subprocess.run(
            [OTTER, "assign", "--no-pdfs", master, out],
            check=True,
            timeout=600,
        )
    student = out / "student" / path.name
    _finish_student(student)
    _finish_answer_key(out / "autograder" / path.name)
    zips = sorted((out / "autograder").glob("*.zip"))
    if len(zips) != 1:
        raise RuntimeError(f"otter assign wrote {len(zips)} autograder zips in {out}, not one.")
    program = write_program(chapter, out / "autograder" / "program.json")
    return Lab(student, out / "autograder" / path.name, zips[0], program)


STUDENT_NOTE = (
    "This is the student edition: it has no solutions. After each exercise's check,\n"
    '`grader.check("exK")` runs the test your teacher grades with: the same check.'
)


def _finish_student(student: Path) -> None:
    """Complete the student edition otter wrote.

    Its otter cell installs otter-grader where it is missing (Colab), the link to the book's
    chapter (which has the solutions) goes, and the exercises' introduction says where the
    solutions are not. ``otter assign`` clears every output: the chapter's cells get theirs
    back from the answer key beside it (:func:`_restore_outputs`), readable without a kernel.
    """
    import nbformat

    nb = nbformat.read(student, as_version=4)
    key = nbformat.read(student.parent.parent / "autograder" / student.name, as_version=4)
    _restore_outputs(nb, key)
    init = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("# Initialize")]
    if len(init) != 1 or "import otter\n" not in init[0].source:
        raise RuntimeError(f"{student} has no otter init cell to complete.")
    init[0].source = init[0].source.replace(
        "import otter\n",
        "try:\n    import otter\nexcept ImportError:  # e.g. on Colab\n"
        f'    %pip install --quiet "{OTTER_PIN}"\n    import otter\n',
        1,
    )
    nb.cells = [c for c in nb.cells if "open-in-colab" not in c.metadata.get("tags", [])]
    for cell in nb.cells:
        if cell.cell_type == "markdown" and "**Exercise 1.**" in cell.source:
            cell.source = cell.source.replace(" Solutions are at the end.", "")
            head, _, rest = cell.source.partition("\n\n**Exercise 1.**")
            cell.source = f"{head}\n\n{STUDENT_NOTE}\n\n**Exercise 1.**{rest}"
    nbformat.write(nb, student)


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _restore_outputs(student, key) -> None:
    """Give the student edition's chapter cells the outputs they have in the answer key.

    A code cell gets the outputs of the next key cell with the same source; the key's
    exercise cells have none (:func:`master_notebook`) and the student's answer cells differ
    from the key's, so answers, checks and otter's cells stay empty. The live widget views go
    (they need a kernel, and JupyterLab shows an error in their place, not the snapshot): the
    widgets' ``text/html`` snapshots stay, and so does no widget state.

    Example:
        >>> from nbformat.v4 import new_code_cell, new_notebook, new_output
        >>> view = {WIDGET_VIEW: {"model_id": "m"}, "text/html": "<b>4</b>", "text/plain": "4"}
        >>> shown = new_output("display_data", data=view)
        >>> key = new_notebook(cells=[new_code_cell("show()", outputs=[shown]),
        ...                           new_code_cell("x = 1  # solution")])
        >>> student = new_notebook(cells=[new_code_cell("x = ..."), new_code_cell("show()")],
        ...                        metadata={"widgets": {}})
        >>> _restore_outputs(student, key)
        >>> [[sorted(o.data) for o in c.outputs] for c in student.cells], student.metadata
        ([[], [['text/html', 'text/plain']]], {})
    """
    student.metadata.pop("widgets", None)
    stored = [c for c in key.cells if c.cell_type == "code"]
    at = 0
    for cell in student.cells:
        if cell.cell_type != "code":
            continue
        match = next((i for i in range(at, len(stored)) if stored[i].source == cell.source), None)
        if match is None:
            continue
        at = match + 1
        outputs = [_without_widget_view(o) for o in stored[match].outputs]
        cell.outputs = [o for o in outputs if o is not None]
        cell.execution_count = stored[match].execution_count if cell.outputs else None


def _without_widget_view(output):
    """An output without its live widget view; None if nothing else was in it."""
    import copy

    if WIDGET_VIEW not in output.get("data", {}):
        return output
    output = copy.deepcopy(output)
    del output.data[WIDGET_VIEW]
    return output if output.data else None


def _finish_answer_key(key: Path) -> None:
    """Leave only the solutions in the answer key's answer cells (otter keeps its markers)."""
    import nbformat

    nb = nbformat.read(key, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("# BEGIN SOLUTION NO PROMPT"):
            solution = cell.source.split("\n# END SOLUTION\n", 1)[0]
            cell.source = solution.removeprefix("# BEGIN SOLUTION NO PROMPT\n")
    nbformat.write(nb, key)


def chapters_with_exercises(manifest: dict, names=()) -> list[dict]:
    """The manifest's chapters that have exercises, or those of them ``names`` picks.

    Args:
        manifest: :func:`~bookbuild.manifest.load_manifest`'s result.
        names: Chapter files, stems or numbers (``"01_strategy_scope.ipynb"``,
            ``"01_strategy_scope"`` or ``"1"``); all chapters with exercises if empty.

    Returns:
        The chapters, in the manifest's order.

    Raises:
        SystemExit: If a name matches no chapter with exercises.

    Example:
        >>> from bookbuild.manifest import load_manifest
        >>> [c["file"] for c in chapters_with_exercises(load_manifest(), ["3"])]
        ['03_custom_training_loops.ipynb']
    """
    chapters = [c for c in manifest["chapters"] if c["exercises"]]
    if not names:
        return chapters

    def matches(chapter: dict, name: str) -> bool:
        stem = Path(chapter["file"]).stem
        return name in (chapter["file"], stem) or (
            name.isdigit() and stem.startswith(f"{int(name):02d}_")
        )

    picked = [c for c in chapters if any(matches(c, n) for n in names)]
    unknown = [n for n in names if not any(matches(c, n) for c in chapters)]
    if unknown:
        known = ", ".join(Path(c["file"]).stem for c in chapters)
        raise SystemExit(
            f"[dev] no chapter with exercises is called {', '.join(unknown)}; they are: {known}."
        )
    return picked
