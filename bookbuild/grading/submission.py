"""The learner's answers, read from a submitted notebook.

Only the answer cells count: each exercise's answer is the one code cell tagged
``exercise-answer`` (or ``otter_answer_cell``, the tag ``otter assign`` gives it) between the
previous exercise's check cell and this exercise's check cell. Everything else the learner
changed or added is ignored: grading runs the chapter from the answer key.

Example:
    >>> import nbformat
    >>> from nbformat.v4 import new_code_cell, new_notebook
    >>> nb = new_notebook(cells=[
    ...     new_code_cell("x = 1", metadata={"tags": ["otter_answer_cell"]}),
    ...     new_code_cell("check(x)", metadata={"tags": ["exercise-check"]})])
    >>> answers_of(nb, [1])
    {1: 'x = 1'}
"""

from __future__ import annotations

from pathlib import Path

from bookbuild.exercises import ANSWER_TAG, CHECK_TAG

ANSWER_TAGS = (ANSWER_TAG, "otter_answer_cell")


def answers_of(nb, numbers: list[int]) -> dict[int, str | None]:
    """Each exercise's answer source in a notebook; None where it is missing or ambiguous.

    Args:
        nb: The submitted notebook, an ``nbformat`` notebook.
        numbers: The lab's exercise numbers, in order.

    Returns:
        ``{K: source or None}`` for every K of ``numbers``.

    Example:
        >>> import nbformat
        >>> from nbformat.v4 import new_code_cell, new_notebook
        >>> tag = {"tags": ["exercise-answer"]}
        >>> nb = new_notebook(cells=[new_code_cell("x = 1", metadata=tag),
        ...     new_code_cell("x = 2", metadata=tag),
        ...     new_code_cell("check(x)", metadata={"tags": ["exercise-check"]})])
        >>> answers_of(nb, [1, 2])
        {1: None, 2: None}
    """
    found: dict[int, str | None] = dict.fromkeys(numbers)
    pending: list[str] = []
    position = 0
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.get("cell_type") != "code":
            continue
        if any(tag in tags for tag in ANSWER_TAGS):
            pending.append(str(cell.get("source", "")))
        elif CHECK_TAG in tags:
            if position < len(numbers) and len(pending) == 1:
                found[numbers[position]] = pending[0]
            position += 1
            pending = []
    return found


def read_answers(path: Path, numbers: list[int]) -> tuple[dict[int, str | None], str]:
    """Read a submission's answers; never raises for a broken file.

    Args:
        path: The submitted ``.ipynb``.
        numbers: The lab's exercise numbers, in order.

    Returns:
        ``(answers, problem)``: the answers (:func:`answers_of`) and ``""``, or ``({}, why)``
        when the notebook cannot be read.

    Example:
        >>> import tempfile
        >>> bad = Path(tempfile.mkdtemp()) / "bad.ipynb"
        >>> _ = bad.write_text("{not json")
        >>> read_answers(bad, [1])[1].startswith("the notebook cannot be read")
        True
    """
    import nbformat

    try:
        nb = nbformat.read(Path(path), as_version=4)
        return answers_of(nb, numbers), ""
    except Exception as error:  # any broken file is the submission's problem, reported
        return {}, f"the notebook cannot be read: {type(error).__name__}: {error}"[:300]
