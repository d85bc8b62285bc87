r"""A learner's second "Run All" and the exercises' solutions, as cells added to a chapter.

:func:`run_again` returns cells that run a chapter's code again in the same kernel, then its
Solutions block, then each check, which fails unless its result passed. One kernel's run does
all of it: the reference job's nbval run (after comparing the stored outputs), the hosted
job's run of each chapter alone, and ``tests/book/test_rerun.py`` in the other jobs. The
added cells are tagged ``nbval-ignore-output``: a second run may print other timings.

Example:
    >>> import nbformat.v4 as v4
    >>> chapter = v4.new_notebook(cells=[
    ...     v4.new_code_cell("x = 1"),
    ...     v4.new_code_cell("x = ...", metadata={"tags": ["exercise-answer"]}),
    ...     v4.new_code_cell("check(x)", metadata={"tags": ["exercise-check"]}),
    ...     v4.new_markdown_cell(
    ...         "<summary>Solutions</summary>\n```python\n# Exercise 1\nx = 2\n```"),
    ... ])
    >>> [cell.source.splitlines()[0] for cell in run_again(chapter, times=1)]
    ['x = 1', 'x = ...', 'check(x)', 'x = 2', '_verdict = check(x)']
"""

from __future__ import annotations

import ast

from bookbuild.exercises import CHECK_TAG, solutions

ADDED = "mirrorbook-rerun"  # the metadata key marking an added cell, with what it does
IGNORED = "nbval-ignore-output"
# After a check's last expression (its result, kept as _verdict): the result must pass.
VERDICT = (
    "assert getattr(_verdict, 'passed', None) is True, "
    "f'the Solutions block fails its check: {_verdict!r}'\n"
    "_verdict"
)


def run_again(nb, *, times: int = 1) -> list:
    """The cells that run ``nb``'s code ``times`` more, then its solutions and checks.

    Args:
        nb: The chapter, an ``nbformat`` notebook (not changed).
        times: How many more times every code cell runs, in order, before the solutions.

    Returns:
        New code cells: the chapter's code cells ``times`` over, then (for a chapter with
        exercises) the Solutions block as one cell, then each check, made to fail unless
        its result passed (:func:`checked`).

    Example:
        >>> import nbformat.v4 as v4
        >>> cells = run_again(v4.new_notebook(cells=[v4.new_code_cell("y = 3")]), times=2)
        >>> [(c.source, c.metadata["tags"]) for c in cells]
        [('y = 3', ['nbval-ignore-output']), ('y = 3', ['nbval-ignore-output'])]
    """
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    added = [_added(cell.source, "run again") for _ in range(times) for cell in code]
    answers = solutions(nb)
    if answers:
        added.append(_added("\n\n".join(answers.values()), "solutions"))
    added += [_added(checked(cell.source), "check") for cell in checks_of(nb) if answers]
    return added


def checked(source: str) -> str:
    r"""A check cell's code, then an assert that its result (its last expression) passed.

    Args:
        source: The check cell's code; its last statement is the expression of the result.

    Returns:
        The code with that expression kept as ``_verdict``, asserted, and shown.

    Raises:
        ValueError: If the code does not end with an expression.

    Example:
        >>> print(checked("answer = 2\nmk.check_answer(answer)"))
        answer = 2
        _verdict = mk.check_answer(answer)
        assert getattr(_verdict, 'passed', None) is True, f'the Solutions block fails its check: {_verdict!r}'
        _verdict
    """  # noqa: E501
    last = ast.parse(source).body[-1] if source.strip() else None
    if not isinstance(last, ast.Expr):
        raise ValueError(
            f"a check cell must end with the check's call, whose result it shows. Received: "
            f"source={source!r}; write e.g. source='mk.check_x(answer)'."
        )
    lines = source.splitlines()
    before = "\n".join(lines[: last.lineno - 1])
    expression = ast.get_source_segment(source, last.value)
    return "\n".join(part for part in (before, f"_verdict = {expression}", VERDICT) if part)


def checks_of(nb) -> list:
    """The chapter's exercise checks (cells tagged ``exercise-check``).

    Example:
        >>> import nbformat.v4 as v4
        >>> checks_of(v4.new_notebook(cells=[v4.new_code_cell("1")]))
        []
    """
    return [c for c in nb.cells if CHECK_TAG in c.metadata.get("tags", [])]


def _added(source: str, what: str):
    import nbformat  # the book's environment has it; dev.py's own Python need not

    return nbformat.v4.new_code_cell(source, metadata={"tags": [IGNORED], ADDED: what})
