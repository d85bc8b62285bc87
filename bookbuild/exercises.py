"""The chapters' exercise format: each exercise's cells, tags and solution, read from a chapter.

An exercise is a ``**Exercise K.**`` markdown cell, then the cell the learner completes
(tagged :data:`ANSWER_TAG`) and its check cell (tagged :data:`CHECK_TAG`); its solution is
the ``# Exercise K`` part of the chapter's Solutions block (docs/design/build.md, "The
labs"). The labs (:mod:`bookbuild.labs`), the grading program
(:mod:`bookbuild.grading.program`) and the added solutions cells (:mod:`bookbuild.rerun`)
read chapters through it.

Example:
    >>> import nbformat
    >>> from bookbuild.manifest import load_manifest
    >>> chapter = load_manifest()["chapters"][2]
    >>> [e.name for e in exercises(nbformat.read(chapter["path"], as_version=4))][:2]
    ['ex1', 'ex2']
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ANSWER_TAG = "exercise-answer"
CHECK_TAG = "exercise-check"

_EXERCISE = re.compile(r"\*\*Exercise (\d+)\.\*\*")
_SOLUTION_PART = re.compile(r"^# Exercise (\d+)\s*$", re.M)


@dataclass(frozen=True)
class Exercise:
    """One exercise of a chapter: where its cells are, and its solution.

    Attributes:
        number: K in ``**Exercise K.**``.
        prompt: The index of the markdown cell that states it.
        answer: The index of the cell the learner completes.
        check: The index of its check cell.
        solution: The solution's code, from the chapter's Solutions block.
    """

    number: int
    prompt: int
    answer: int
    check: int
    solution: str

    @property
    def name(self) -> str:
        """The question's name in otter-grader, e.g. ``"ex1"``."""
        return f"ex{self.number}"


def solutions(nb) -> dict[int, str]:
    r"""The chapter's solutions by exercise number, from its Solutions block.

    Args:
        nb: The chapter, an ``nbformat`` notebook.

    Returns:
        ``{K: code}``; empty when the chapter has no Solutions block.

    Example:
        >>> import nbformat
        >>> block = "<details>\n<summary>Solutions</summary>\n\n```python\n"
        >>> block += "# Exercise 1\nx = 1\n\n# Exercise 2\ny = 2\n```\n</details>"
        >>> solutions(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(block)]))
        {1: 'x = 1', 2: 'y = 2'}
    """
    for cell in nb.cells:
        if cell.cell_type == "markdown" and "<summary>Solutions</summary>" in cell.source:
            code = "\n".join(re.findall(r"```python\n(.*?)```", cell.source, re.S))
            parts = _SOLUTION_PART.split(code)[1:]
            return {int(k): body.strip() for k, body in zip(parts[::2], parts[1::2], strict=True)}
    return {}


def exercises(nb) -> list[Exercise]:
    r"""The chapter's exercises, in order, each with its cells and its solution.

    Args:
        nb: The chapter, an ``nbformat`` notebook.

    Returns:
        One :class:`Exercise` per ``**Exercise K.**`` cell.

    Raises:
        ValueError: If an exercise lacks its answer cell, its check cell or its solution,
            or the numbers are not 1, 2, 3, ... in order.

    Example:
        >>> import nbformat
        >>> from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
        >>> nb = new_notebook(cells=[
        ...     new_markdown_cell("**Exercise 1.** Make x."),
        ...     new_code_cell("x = ...", metadata={"tags": ["exercise-answer"]}),
        ...     new_code_cell("check(x)", metadata={"tags": ["exercise-check"]}),
        ...     new_markdown_cell("<summary>Solutions</summary>\n```python\n# Exercise 1\nx = 1\n```"),
        ... ])
        >>> exercises(nb)
        [Exercise(number=1, prompt=0, answer=1, check=2, solution='x = 1')]
    """  # noqa: E501
    answers = solutions(nb)
    found: list[Exercise] = []
    prompts = [
        (i, int(m.group(1)))
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "markdown" and (m := _EXERCISE.search(cell.source))
    ]
    for position, (index, number) in enumerate(prompts):
        end = prompts[position + 1][0] if position + 1 < len(prompts) else len(nb.cells)
        tagged = {
            tag: [i for i in range(index, end) if tag in nb.cells[i].metadata.get("tags", [])]
            for tag in (ANSWER_TAG, CHECK_TAG)
        }
        where = f"exercise {number} (cell {index})"
        for tag, cells in tagged.items():
            if len(cells) != 1:
                raise ValueError(f"{where} has {len(cells)} cells tagged {tag!r}; it needs one.")
        if number != position + 1:
            raise ValueError(f"{where} should be exercise {position + 1}: number them in order.")
        if number not in answers:
            raise ValueError(f"{where} has no '# Exercise {number}' part in the Solutions block.")
        found.append(
            Exercise(number, index, tagged[ANSWER_TAG][0], tagged[CHECK_TAG][0], answers[number])
        )
    return found
