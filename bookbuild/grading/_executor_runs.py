"""The executor's runs for one replica count: every executed exercise asked, or charged.

The executor (:mod:`._executed`) runs the rebuilt answers, graphs the student's process
traced, and a graph can run over its exercise's limit or end the run. As the student's
process does (:func:`._by_export.student_side`), an exercise whose answer ended the
executor's run is charged with that reason, and the executor starts again for the exercises
not yet asked; the records sealed before it ended are kept. A failure no exercise owns (a
chapter cell, tampering, the submission's time running out) is the row's.

Example:
    >>> executed({"cases": {"1": [["ex1", "x = 1"]]}, "exports": {"1": "values"}}, {}, {}, 0.0)
    ({}, {}, None)
"""

from __future__ import annotations

import time

from bookbuild.grading._ended import ended_how
from bookbuild.grading._executed import KINDS, for_executor
from bookbuild.grading.sandbox import Outcome, run_sandboxed

CHARGED = "the executor, running your answer's graph: {why}"


def executed(  # noqa: PLR0913 - as student_side, with the student's exports
    job: dict, exports: dict, charged: dict, deadline: float, hide=(), limit=None, culprit_of=None
) -> tuple[dict, dict, tuple | None]:
    """Ask every executed exercise of ``job`` not yet charged: ``(found, charged_here, failure)``.

    Args:
        job: The student's job of one replica count (``_grader._job``).
        exports: ``{(exercise, case): export line}`` from the student's process.
        charged: The exercises already charged (not asked).
        deadline: When the submission's time runs out (``time.monotonic()``).
        hide: Folders the runs must not see.
        limit: Seconds one exercise may take (None: no limit of its own).
        culprit_of: ``_grader._culprit``: ``(exercise, why)`` of a run an exercise ended.

    Returns:
        ``{(exercise, case): sealed record}``, ``{exercise: why}`` for the exercises whose
        answers ended a run, and None; or ``({}, {}, (status, detail))`` when a run failed
        for a reason no exercise owns.
    """
    kinds = job.get("exports", {})
    remaining = sorted(
        int(k) for k in job["cases"] if kinds.get(k) in KINDS and int(k) not in charged
    )
    found: dict = {}
    more: dict[int, str] = {}
    program = for_executor(job["program"]) if remaining else None
    while remaining:
        cases = {
            str(k): [[c, exports.get((k, c))] for c, _ in job["cases"][str(k)]] for k in remaining
        }
        left = deadline - time.monotonic()
        if left <= 0:
            return {}, {}, ("timeout", "grading ran out of time before the executor ran")
        executor = dict(job, mode="execute", cases=cases, program=program)
        outcome = run_sandboxed(executor, left, exercise_limit=limit, hide=hide)
        for record in outcome.records:  # sealed: nothing of the submission's Python ran there
            key = (record.get("exercise"), record.get("case"))
            if (
                record.get("kind") == "asked"
                and record.get("run") == job["run"]
                and key[0] in remaining
            ):
                found.setdefault(key, record)
        done = {k for k in remaining if all((k, c) in found for c, _ in cases[str(k)])}
        failure = _failure(outcome)
        if failure is None and set(remaining) <= done:
            break
        culprit = culprit_of(outcome, "error", limit) if culprit_of else None
        if culprit is None or culprit[0] not in remaining or culprit[0] in done:
            return {}, {}, failure or _unfinished(outcome)
        more[culprit[0]] = CHARGED.format(why=culprit[1])
        remaining = [k for k in remaining if k not in done and k != culprit[0]]
    return found, more, None


def _failure(outcome: Outcome):
    """The executor's run's own failure, from its sealed records and its end."""
    if outcome.timed_out and not outcome.exercise_timed_out:
        return "timeout", "the executor ran out of the submission's time"
    for record in outcome.records:
        if record.get("kind") in ("tampered", "error", "ended"):
            return "error", f"the executor: {str(record.get('detail', ''))[:500]}"
    if outcome.exercise_timed_out or outcome.problem:
        return "error", _unfinished(outcome)[1]
    return None


def _unfinished(outcome: Outcome) -> tuple[str, str]:
    why = outcome.problem or ended_how(outcome.log)
    return "error", f"the executor did not ask every answer: {why}"
