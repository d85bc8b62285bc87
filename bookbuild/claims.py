r"""Claim cells: the executed evidence behind each version-dependent sentence of a chapter.

A chapter states facts that hold for the TensorFlow and Keras it was built with (Keras divides a
default-reduction loss by the number of replicas, an optimizer not built before its first traced
step fails, ...). Each such fact is also a code cell tagged ``claim`` that asserts it or prints
it. nbval compares those cells like any other at the pinned versions; against other versions,
:func:`claim_changes` says which claims no longer hold: a claim cell that raised, or printed
something else than the stored chapter.

Example:
    >>> import nbformat.v4 as v4
    >>> stored = v4.new_notebook(cells=[
    ...     v4.new_code_cell("print(1 / 4)", metadata={"tags": ["claim"]},
    ...                      outputs=[v4.new_output("stream", text="0.25\n")]),
    ... ])
    >>> claim_changes(stored, stored, "ch.ipynb")
    []
"""

from __future__ import annotations

import configparser
import re
from pathlib import Path

from bookbuild import ROOT
from bookbuild.execute import execute_chapters

CLAIM_TAG = "claim"
SANITIZE = ROOT / "tests" / "book" / "nbval_sanitize.cfg"


def claim_cells(nb) -> list[tuple[int, object]]:
    """The ``claim`` code cells of a notebook, with their indices.

    Args:
        nb: An ``nbformat`` notebook.

    Returns:
        ``(index, cell)`` pairs in notebook order.

    Example:
        >>> import nbformat.v4 as v4
        >>> nb = v4.new_notebook(cells=[v4.new_code_cell("x = 1"),
        ...     v4.new_code_cell("assert x == 1", metadata={"tags": ["claim"]})])
        >>> [index for index, _ in claim_cells(nb)]
        [1]
    """
    return [
        (index, cell)
        for index, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and CLAIM_TAG in cell.metadata.get("tags", [])
    ]


def output_text(cell) -> str:
    r"""What a code cell showed, as text: streams, plain-text results and errors, sanitized.

    The patterns of ``tests/book/nbval_sanitize.cfg`` (memory addresses, ports, temporary
    paths) are masked, as nbval masks them.

    Example:
        >>> import nbformat.v4 as v4
        >>> cell = v4.new_code_cell(outputs=[
        ...     v4.new_output("stream", text="at 0x7f3fc9834cc0\n"),
        ...     v4.new_output("error", ename="AssertionError", evalue="", traceback=[])])
        >>> print(output_text(cell))
        at 0xADDRESS
        AssertionError
    """
    parts = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type in ("execute_result", "display_data"):
            parts.append(str(output.get("data", {}).get("text/plain", "")) + "\n")
        elif output.output_type == "error":
            parts.append(f"{output.ename}: {output.evalue}".rstrip(": ") + "\n")
    text = "".join(parts)
    for pattern, replacement in _sanitize_patterns():
        text = re.sub(pattern, replacement, text)
    return text.rstrip("\n")


def executed_claims(into: Path, *files: str) -> list[tuple[dict, object, list[str]]]:
    """Copies of the chapters executed into ``into``, errors allowed, each with its changes.

    Args:
        into: The folder for the executed copies (the book's files stay untouched).
        *files: Chapter file names; none means every chapter.

    Returns:
        ``(chapter, executed notebook, claim_changes(...))`` for each chapter, in manifest
        order.

    Example:
        >>> runs = executed_claims(Path("/tmp/claims"), "09_the_landscape.ipynb")  # doctest: +SKIP
    """
    import nbformat

    return [
        (
            chapter,
            nb,
            claim_changes(nbformat.read(chapter["path"], as_version=4), nb, chapter["file"]),
        )
        for chapter, nb in execute_chapters(*files, into=into, allow_errors=True)
    ]


def claim_changes(stored, executed, name: str) -> list[str]:
    r"""The claims of a chapter that no longer hold, one line each.

    Args:
        stored: The chapter as the book stores it (executed at the pinned versions).
        executed: The same chapter executed again, in another environment, with errors
            allowed (so that one failed claim does not hide the next).
        name: The chapter's file name, for the lines.

    Returns:
        One line per claim cell that raised or printed something else (a claim that could
        not run because an earlier cell failed is "not checked"), and one for the first cell
        that is not a claim and raised (the chapter did not run through). Empty: every claim
        holds.

    Example:
        >>> import nbformat.v4 as v4
        >>> def chapter(text):
        ...     return v4.new_notebook(cells=[v4.new_code_cell(
        ...         "print(loss)", metadata={"tags": ["claim"]},
        ...         outputs=[v4.new_output("stream", text=text)])])
        >>> claim_changes(chapter("0.25\n"), chapter("1.0\n"), "03.ipynb")
        ["03.ipynb cell 0 `print(loss)`: printed '1.0', stored '0.25'"]
    """
    changes = []
    stored_claims = dict(claim_cells(stored))
    claims = dict(claim_cells(executed))
    # The first cell that is not a claim and raised: the cells after it may fail only for
    # want of what it would have defined (NameError), which says nothing about a claim.
    broke = next((i for i, c in enumerate(executed.cells) if i not in claims and _errors(c)), None)
    for index, cell in claims.items():
        first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
        where = f"{name} cell {index} `{first}`"
        errors = _errors(cell)
        now, before = output_text(cell), output_text(stored_claims.get(index, cell))
        if errors and broke is not None and index > broke and errors[0].ename == "NameError":
            changes.append(f"{where}: not checked, cell {broke} failed before it")
        elif errors:
            changes.append(f"{where}: raised {_error(errors[0])}")
        elif now != before:
            changes.append(f"{where}: printed {_short(now)!r}, stored {_short(before)!r}")
    if broke is not None:
        changes.append(
            f"{name} cell {broke}: not a claim, raised {_error(_errors(executed.cells[broke])[0])}"
            " (the chapter did not run through from there)"
        )
    return changes


def _errors(cell) -> list:
    return [o for o in cell.get("outputs", []) if o.output_type == "error"]


def _error(output) -> str:
    return f"{output.ename}: {output.evalue}".rstrip(": ")


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _sanitize_patterns() -> list[tuple[str, str]]:
    parser = configparser.ConfigParser()
    parser.read(SANITIZE)
    return [(parser[s]["regex"], parser[s]["replace"]) for s in parser.sections()]
