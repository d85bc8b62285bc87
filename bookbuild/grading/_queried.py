"""Answers judged by query: the student's process calls them, the verdict reads the results.

The student's process is :mod:`bookbuild.grading._lab_student`, started in the sandbox with
``python -I -c`` so that it sees the Python environment and nothing of the repository (not
mirrorkit, whose checks hold the answers). It runs each answer cell on its own and makes the
calls it is sent, writing what they returned as data. :func:`student_runs` starts it until
every exercise's results came back or the exercise was charged; the checks' own judges read
the results (the browser labs' ``check_answer``, chapter 9's ``judge_partitioner_for``).

Example:
    >>> queried_check("mk.check_partitioner_for(partitioner_for)")
    'check_partitioner_for'
"""

from __future__ import annotations

import time
from pathlib import Path

from bookbuild.grading._ended import ended_how
from bookbuild.grading._exports import check_function
from bookbuild.grading.sandbox import run_sandboxed

STUDENT = Path(__file__).with_name("_lab_student.py")
QUERIED_CHECKS = frozenset({"check_partitioner_for"})  # chapters' checks judged by query
JUDGED_BY_QUERY = (
    "judged by query: the answer ran alone in a process that sees only the Python "
    "environment, on inputs drawn at grading time; the verdict read its results as data"
)


def queried_check(source: str) -> str | None:
    """The check a check cell calls, if it is judged by query; else None."""
    name = check_function(source)
    return name if name in QUERIED_CHECKS else None


def chapter_query(check: str, seed: int) -> tuple[list[dict], object]:
    """The calls to send for a chapter exercise's answer, and what its judge needs back.

    Example:
        >>> calls, queries = chapter_query("check_partitioner_for", 3)
        >>> len(calls) == len(queries) == 2 and sorted(calls[0]) == ["args", "then"]
        True
    """
    from mirrorkit.checks.partitioner import partitioner_queries

    if check != "check_partitioner_for":
        raise ValueError(f"no query for {check}")
    queries = partitioner_queries(seed)
    calls = [
        {
            "args": [query["cluster"], query["limit"]],
            "then": [
                {"kwargs": {"shape": {"TensorShape": dims}, "dtype": {"DType": dtype}}}
                for dims, dtype in query["cases"]
            ],
        }
        for query in queries
    ]
    return calls, queries


def judge_chapter(check: str, queries, outputs: list) -> tuple[bool, str]:
    """(passed, feedback) of a chapter exercise from its recorded results."""
    from mirrorkit.checks.partitioner import judge_partitioner_for

    answers = [_partitioner_answer(output) for output in outputs]
    verdict = judge_partitioner_for(queries, answers)
    return verdict.passed, "" if verdict.passed else str(verdict.message)


def _partitioner_answer(output) -> dict:
    """The student's process's result of one ``partitioner_for`` call, as its judge reads it."""
    if not isinstance(output, dict):
        return {}
    if "raised" in output:
        return {"raised": str(output["raised"])}
    if not isinstance(output.get("calls"), list):
        kind = output.get("returned") or output.get("unreadable") or "value"
        return {"returned": str(kind)[:80]}
    calls = []
    for call in output["calls"]:
        call = call if isinstance(call, dict) else {}
        if "raised" in call:
            calls.append({"raised": str(call["raised"])})
        elif "value" in call:
            calls.append({"value": call["value"]})
        else:
            calls.append({"value": {"repr": str(call.get("unreadable", "nothing"))[:80]}})
    return {"calls": calls}


def unjudged(result, charged: str | None, count: int) -> str | None:
    """Why an exercise's results cannot be judged (its feedback), or None when they can.

    Example:
        >>> unjudged({"outputs": [{"value": 1}]}, None, 1) is None
        True
        >>> unjudged({"outputs": []}, None, 1)
        'its results did not come back whole'
    """
    if charged:
        return charged
    if not isinstance(result, dict):
        return "no results came back for this exercise"
    if "failed" in result:
        return str(result["failed"])[:500]
    if result.get("ellipsis") is True:  # the answer's name is still ...
        from mirrorkit.checks.result import NOT_ATTEMPTED

        return NOT_ATTEMPTED.message
    outputs = result.get("outputs")
    if not isinstance(outputs, list) or len(outputs) != count:
        return "its results did not come back whole"
    if not all(isinstance(output, dict) for output in outputs):
        return "its results are not ones the grader reads"
    return None


def student_runs(exercises: list[dict], deadline: float, limit: float, hide) -> tuple:
    """Run the student's process until every exercise's results came back or it was charged.

    Args:
        exercises: ``{"number", "source", "name", "inputs"}`` each, and ``"imports"``
            (``{"tf": "tensorflow"}``) where the answer uses the chapter's imports.
        deadline: When the submission's time runs out (``time.monotonic()``).
        limit: Seconds one exercise's calls may take.
        hide: Folders the run must not see.

    Returns:
        ``({exercise: result line}, {exercise: why it scored 0})``.
    """
    source = STUDENT.read_text(encoding="utf-8")
    results: dict[int, dict] = {}
    charged: dict[int, str] = {}
    remaining = list(exercises)
    while remaining:
        left = deadline - time.monotonic()
        if left <= 0:
            charged |= {e["number"]: "grading ran out of time before it ran" for e in remaining}
            break
        numbers = {e["number"] for e in remaining}
        job = {"exercises": remaining, "run": 0}
        outcome = run_sandboxed(job, left, exercise_limit=limit, hide=hide, source=source)
        for line in outcome.lines:  # untrusted data: the first result of each exercise counts
            number = line.get("exercise")
            if line.get("kind") == "export" and number in numbers and number not in results:
                results[number] = line
        missing = [n for n in sorted(numbers) if n not in results]
        if outcome.timed_out and not outcome.exercise_timed_out:  # the submission's own time
            charged |= {n: "grading ran out of time before it finished" for n in missing}
            break
        culprit = outcome.exercise if outcome.exercise in missing else None
        if culprit is None:
            charged |= {n: "its process ended without its results" for n in missing}
            break
        charged[culprit] = _why(outcome, culprit, limit)
        remaining = [e for e in remaining if e["number"] not in results | charged.keys()]
    return results, charged


def _why(outcome, number: int, limit: float) -> str:
    if outcome.exercise_timed_out:
        return (
            f"exercise {number}'s function took longer than {limit:g} s on the inputs "
            "drawn and was stopped: look for a loop that never ends"
        )
    return f"its process ended while exercise {number} ran: {ended_how(outcome.log)}"
