"""Answers that cross as values, judged by the grader itself: no judge process.

Chapter 5's answers are data (a ranking, a ratio, a measurement): the student's process
writes them (:mod:`._values`), and the check reads nothing but them, the chapter's names
that cross with them (:func:`._exports.chapter_reads`) and the run's parameters. So the
grader rebuilds the values and calls the check cell's own call on them (:func:`judge`): a
check cell that is one call of a values check, whose arguments are those names and
constants. Nothing of the submission runs here; the values are built only through
:func:`._values.rebuild` (closed sets of types, a benchmark through its own ``from_json``).

Example:
    >>> judge({"failed": "your answer raised ValueError: no"}, "mk.check_x(a)", 4, 1)
    (False, 'your answer raised ValueError: no')
"""

from __future__ import annotations

import ast

from bookbuild.grading._exports import EXPORTED_CHECKS, check_function, import_value
from bookbuild.grading._wire import ExportError, opened

KIND = "values"


def judges(source: str) -> bool:
    """Whether a check cell is one the grader can call on values alone.

    Example:
        >>> judges('mk.check_all_reduce_ranking(p, r, benchmark, size="8MiB", replicas=REPLICAS)')
        True
        >>> judges("x = 2\\nmk.check_all_reduce_ranking(p, r, x)")
        False
    """
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    if len(body) != 1 or not isinstance(body[0], ast.Expr):
        return False
    call = body[0].value
    if EXPORTED_CHECKS.get(check_function(source) or "") != KIND:
        return False
    passed = [*call.args, *(k.value for k in call.keywords if k.arg)]
    return isinstance(call, ast.Call) and all(
        isinstance(a, ast.Name | ast.Constant) for a in passed
    )


def judge(line, source: str, replicas: int, seed: int) -> tuple[bool, str]:
    """(passed, feedback) of one export line, from the check cell's call on its values."""
    import mirrorkit

    names, why = opened(line)
    if names is None:
        return False, why
    try:
        given = {str(name): import_value(record, KIND) for name, record in names.items()}
    except ExportError as error:
        return False, str(error)[:2000]
    except Exception as error:  # noqa: BLE001 - malformed data: the answer's, not ours
        return False, f"the exported answer could not be rebuilt: {type(error).__name__}"
    given |= {"REPLICAS": replicas, "SEED": seed}
    call = ast.parse(source).body[0].value
    missing = [a.id for a in _passed(call) if isinstance(a, ast.Name) and a.id not in given]
    if missing:
        return False, f"your answer does not define {', '.join(missing)}"
    args = [_value(a, given) for a in call.args]
    keywords = {k.arg: _value(k.value, given) for k in call.keywords}
    _machine_facts()
    try:
        result = getattr(mirrorkit, call.func.attr)(*args, **keywords)
    except Exception as error:  # noqa: BLE001 - as the runner reports a check that stopped
        return False, f"the check stopped: {type(error).__name__}: {error}"[:2000]
    return result.passed, "" if result.passed else str(result.message)


def _passed(call: ast.Call) -> list:
    return [*call.args, *(k.value for k in call.keywords)]


def _value(node, given: dict):
    return given[node.id] if isinstance(node, ast.Name) else node.value


def _machine_facts() -> None:
    """Import TensorFlow, so that "measured on this machine" compares its version too, as the
    judge process did (``_benchmark_records.this_machine`` reads it where it is imported)."""
    import tensorflow  # noqa: F401
