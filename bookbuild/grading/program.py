"""A lab's grading program: the chapter's code cells in order, as ``program.json``.

The runner (:mod:`bookbuild.grading._runner`) executes these steps, taken from the BOOK
chapter (the answer key), never from a submission: the chapter's own cells, each exercise's
answer step (the key's solution runs in the chapter; the learner's answer runs beside it) and
its check step. Cells tagged ``hosted-setup`` or ``open-in-colab`` are left out (``claim``
cells stay: later cells use what they define); the ``parameters`` cell becomes a
``parameters`` step the runner writes itself.

Example:
    >>> asked_names("counter = ...  # your answer")
    ['counter']
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from bookbuild.exercises import ANSWER_TAG, CHECK_TAG, exercises

LEFT_OUT = ("hosted-setup", "open-in-colab")  # cells the grading program skips


def asked_names(blank: str) -> list[str]:
    r"""The names an exercise's blank answer cell assigns: what the learner must define.

    Args:
        blank: The source of the answer cell as the student edition shows it.

    Returns:
        The names, in order of first assignment.

    Example:
        >>> asked_names("predicted = ...  # a guess\nmeasured = ...\ndef f(): pass")
        ['predicted', 'measured', 'f']
    """
    names: list[str] = []
    for node in ast.parse(blank).body:
        targets: list = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        for target in targets:
            names += [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
    return list(dict.fromkeys(names))


def program_steps(nb) -> list[dict]:
    r"""The grading program of a chapter: one step per code cell that grading runs.

    Args:
        nb: The book's chapter, an ``nbformat`` notebook (it holds the answer key).

    Returns:
        Steps: ``{"kind": "parameters"}``, ``{"kind": "cell", "source", "cell"}``,
        ``{"kind": "answer", "exercise", "blank", "solution", "asks", "cell"}`` and
        ``{"kind": "check", "exercise", "source", "cell"}`` (``cell``: the chapter's index).

    Example:
        >>> import nbformat
        >>> from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
        >>> nb = new_notebook(cells=[
        ...     new_code_cell("REPLICAS = 4", metadata={"tags": ["parameters"]}),
        ...     new_markdown_cell("**Exercise 1.** Make x."),
        ...     new_code_cell("x = ...", metadata={"tags": ["exercise-answer"]}),
        ...     new_code_cell("check(x)", metadata={"tags": ["exercise-check"]}),
        ...     new_markdown_cell("<summary>Solutions</summary>\n```python\n# Exercise 1\nx = 1\n```"),
        ... ])
        >>> [(s["kind"], s.get("asks")) for s in program_steps(nb)]
        [('parameters', None), ('answer', ['x']), ('check', None)]
    """  # noqa: E501
    found = {e.answer: e for e in exercises(nb)}
    checks = {e.check: e for e in found.values()}
    steps: list[dict] = []
    for index, cell in enumerate(nb.cells):
        tags = cell.metadata.get("tags", [])
        if cell.cell_type != "code" or any(tag in tags for tag in LEFT_OUT):
            continue
        if "parameters" in tags:
            steps.append({"kind": "parameters", "cell": index})
        elif index in found:
            exercise = found[index]
            steps.append(
                {
                    "kind": "answer",
                    "exercise": exercise.number,
                    "blank": cell.source,
                    "solution": exercise.solution,
                    "asks": asked_names(cell.source),
                    "cell": index,
                }
            )
        elif index in checks:
            steps.append(
                {"kind": "check", "exercise": checks[index].number, "source": cell.source}
                | {"cell": index}
            )
        elif ANSWER_TAG not in tags and CHECK_TAG not in tags:
            steps.append({"kind": "cell", "source": cell.source, "cell": index})
    return steps


def write_program(chapter: dict, path: Path) -> Path:
    """Write a chapter's grading program, ``program.json``, for the runner.

    Args:
        chapter: One of :func:`~bookbuild.manifest.load_manifest`'s chapters.
        path: The file to write.

    Returns:
        ``path``.

    Example:
        >>> import tempfile
        >>> from bookbuild.manifest import load_manifest
        >>> chapter = load_manifest()["chapters"][0]
        >>> out = write_program(chapter, Path(tempfile.mkdtemp()) / "program.json")
        >>> sorted(load_program(out))[:3]
        ['cell_timeout', 'chapter', 'exercises']
    """
    import nbformat

    nb = nbformat.read(chapter["path"], as_version=4)
    steps = program_steps(nb)
    program = {
        "chapter": Path(chapter["path"]).stem,
        "replicas": chapter["replicas"],
        "seed": chapter["seed"],
        "grade_replicas": list(chapter["grade_replicas"]),  # load_manifest fills it in
        "cell_timeout": chapter.get("cell_timeout", 300),
        "exercises": [s["exercise"] for s in steps if s["kind"] == "answer"],
        "steps": steps,
    }
    Path(path).write_text(json.dumps(program, indent=1))
    return Path(path)


def load_program(path: Path) -> dict:
    """Read a ``program.json`` that :func:`write_program` wrote.

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "program.json"
        >>> _ = p.write_text('{"steps": []}')
        >>> load_program(p)
        {'steps': []}
    """
    return json.loads(Path(path).read_text())
