"""Whether keras-team/keras#23085 still fails, read from the chapter's claim cell that asserts it.

Example:
    >>> issue_verdict(None, "3.15.1")
    'keras#23085: not checked (its chapter was not executed)'
"""

from __future__ import annotations

from bookbuild.claims import CLAIM_TAG

ISSUE = "keras#23085"  # the chapter's claim cell that asserts it says whether it is fixed


def issue_claim(chapters: list[tuple[str, dict]]) -> tuple[str, int] | None:
    """The claim cell about :data:`ISSUE`: the first claim cell from its first mention on.

    Args:
        chapters: ``(file name, notebook as JSON)`` pairs, in reading order.

    Example:
        >>> cells = [{"cell_type": "markdown", "source": ["fails (keras-team/keras#23085)"]},
        ...          {"cell_type": "code", "source": "", "metadata": {"tags": ["claim"]}}]
        >>> issue_claim([("03.ipynb", {"cells": cells})])
        ('03.ipynb', 1)
    """
    for name, notebook in chapters:
        cells = notebook["cells"]
        mentions = [i for i, cell in enumerate(cells) if ISSUE in "".join(cell["source"])]
        for index in range(mentions[0] if mentions else len(cells), len(cells)):
            cell = cells[index]
            if cell["cell_type"] == "code" and CLAIM_TAG in cell["metadata"].get("tags", []):
                return name, index
    return None


def issue_verdict(cell: dict | None, keras: str) -> str:
    r"""Whether :data:`ISSUE` still fails, from its claim cell as executed in an environment.

    The cell runs a first step with an Adam that was not built, prints the type of the error
    it caught (``NoneType`` when none) and asserts the step failed as the issue says.

    Args:
        cell: The executed claim cell (JSON), or None if its chapter was not executed.
        keras: The environment's Keras version, for the line.

    Example:
        >>> held = {"outputs": [{"output_type": "stream", "text": "...: InvalidArgumentError"}]}
        >>> issue_verdict(held, "3.15.1")
        'keras#23085: still fails (work-around needed)'
        >>> ran = {"outputs": [{"output_type": "stream", "text": ["...: NoneType\n"]},
        ...     {"output_type": "error", "ename": "AssertionError", "evalue": ""}]}
        >>> issue_verdict(ran, "3.16.0")
        'keras#23085: fixed in keras 3.16.0 — the work-around can go'
    """
    if cell is None:
        return f"{ISSUE}: not checked (its chapter was not executed)"
    outputs = cell.get("outputs", [])
    printed = "".join("".join(o["text"]) for o in outputs if o["output_type"] == "stream")
    last = (printed.strip().splitlines() or [""])[-1]
    errors = [o for o in outputs if o["output_type"] == "error"]
    if not errors:
        return f"{ISSUE}: still fails (work-around needed)"
    error = f"{errors[0]['ename']}: {errors[0]['evalue']}".rstrip(": ")
    if errors[0]["ename"] == "AssertionError" and last.endswith("NoneType"):
        return f"{ISSUE}: fixed in keras {keras} — the work-around can go"
    if errors[0]["ename"] == "AssertionError":
        return f"{ISSUE}: still fails, with another message (work-around needed): {last!r}"
    if errors[0]["ename"] == "NameError":
        return f"{ISSUE}: not checked: a cell before its claim failed ({error})"
    return f"{ISSUE}: not decided: its claim cell raised {error}"
