"""Grading by export: the student's process exports, a judge that runs none of it checks.

For the exercises of a chapter judged on exported answers
(:func:`bookbuild.grading._exports.exported_exercises`), each replica count takes two
sandboxed processes in turn. The student's process (the runner in ``export`` mode) runs the
chapter's own cells and the learner's answers, holds no solution and runs no check, and
writes each answer as data. Its channel is read as untrusted data, sealed or not: a line it
forges can only change what its own answer is taken to be. The judge (``judge`` mode) runs
the chapter with the answer key, rebuilds each exported answer (allow-listed graphs, or
state) and runs the checks; nothing from the submission runs there, so its sealed verdicts
are the grade. An exercise whose answer ends the student's run (an exit, a signal, its own
time limit) is charged with the reason, and the student's process starts again for the rest.

Example:
    >>> exported({"kind": "export", "run": 0, "exercise": 1, "case": "ex1", "names": {}}, 0)
    (1, 'ex1')
"""

from __future__ import annotations

import time

from bookbuild.grading import _exports
from bookbuild.grading.sandbox import Outcome, run_sandboxed

FORGED = (
    "the student's process wrote a {kind!r} line: it exports answers, and verdicts come only "
    "from processes that run none of the submission"
)


def out_of_time(seconds: float) -> tuple[str, str]:
    """The row of a submission whose runs took longer than ``seconds`` together."""
    return "timeout", f"grading took longer than {seconds:g} s (stopped)"


def at_count(run: int, replicas: int, why: str) -> str:
    """Why an exercise scored 0, naming the replica count after the first run."""
    return why if run == 0 else f"at {replicas} replicas: {why}"


def exported(line: dict, run: int):
    """``(exercise, case)`` of an export line of this run, or None."""
    if line.get("kind") != "export" or line.get("run") != run:
        return None
    exercise = line.get("exercise")
    return (exercise, line.get("case")) if type(exercise) is int else None


def student_side(job: dict, deadline: float, limit, culprit_of, hide=(), seconds=0.0) -> tuple:
    """Run the student's process until every exercise of ``job`` exported or was charged.

    A verdict line (or a token request for one) from that process is forgery: the row is
    ``tampered``, since the runner in ``export`` mode writes neither.

    Args:
        job: The runner's job (``mode`` is set to ``export`` here).
        deadline: When the submission's time runs out (``time.monotonic()``).
        limit: Seconds one exercise may take.
        culprit_of: ``culprit_of(outcome, status, limit)``: ``(exercise, why)`` or None.
        hide: Folders the run must not see (the lab's, the submissions').
        seconds: The submission's time in all, for the row of a run that took longer.

    Returns:
        ``(exports, charged, failure)``: ``{(exercise, case): line}``, ``{exercise: why}`` and
        None, or ``(status, detail)`` when the run failed for a reason no exercise owns.
    """
    exports: dict = {}
    charged: dict[int, str] = {}
    remaining = sorted(int(k) for k in job["cases"])
    program = without_key(job["program"])  # the same for every start
    while remaining:
        cases = {str(k): job["cases"][str(k)] for k in remaining}
        left = deadline - time.monotonic()
        if left <= 0:
            return exports, charged, out_of_time(seconds)
        student = dict(job, mode="export", cases=cases, program=program)
        outcome = run_sandboxed(student, left, exercise_limit=limit, hide=hide)
        for line in outcome.lines:
            key = exported(line, job["run"])
            if key is not None and key[0] in remaining:
                exports.setdefault(key, line)
        done = {k for k in remaining if all((k, c) in exports for c, _ in cases[str(k)])}
        failure = _failure(outcome, seconds)
        if failure is None and set(remaining) <= done:
            break
        culprit = culprit_of(outcome, "error", limit)
        if culprit is None or culprit[0] not in remaining or culprit[0] in done:
            return exports, charged, failure or ("error", "the student's run ended early")
        charged[culprit[0]] = culprit[1]
        remaining = [k for k in remaining if k not in done and k != culprit[0]]
    return exports, charged, None


def without_key(program: dict) -> dict:
    """The program as the student's process gets it: no solution, no check.

    A check whose answer crosses with the check's other arguments (``_exports.AT_CHECK``)
    keeps its cell's text, as the student edition shows it: the student's process reads
    the arguments from it and runs none of the check.

    Example:
        >>> without_key({"steps": [{"kind": "answer", "solution": "x = 1", "asks": ["x"]}]})
        {'steps': [{'kind': 'answer', 'asks': ['x']}]}
    """
    kinds = _exports.exported_exercises(program)
    steps = [
        {k: v for k, v in step.items() if k not in ("solution", "source")}
        if step["kind"] == "answer"
        or (step["kind"] == "check" and kinds.get(step["exercise"]) not in _exports.AT_CHECK)
        else step
        for step in program["steps"]
    ]
    return dict(program, steps=steps)


def _failure(outcome: Outcome, seconds: float):
    """The student's run's own failure, from its (untrusted) lines: tampering or an error."""
    forged = [line["kind"] for line in outcome.lines if line.get("kind") in ("verdict", "token?")]
    if forged and forged != ["token?"]:  # the runner asks for its token once, to seal
        return "tampered", FORGED.format(kind="verdict" if "verdict" in forged else "token?")
    if outcome.timed_out and not outcome.exercise_timed_out:
        return out_of_time(seconds)
    for line in outcome.lines:
        if line.get("kind") in ("tampered", "error", "ended"):
            kind = "tampered" if line["kind"] == "tampered" else "error"
            return kind, str(line.get("detail", ""))[:500]
    if outcome.returncode not in (0, None):
        return "error", f"the student's run ended with status {outcome.returncode}"
    return None


def judge_job(job: dict, exports: dict) -> dict:
    """The judge's job: the same chapter and counts, each case given its export."""
    cases = {
        number: [[case, exports.get((int(number), case))] for case, _ in items]
        for number, items in job["cases"].items()
    }
    return dict(job, mode="judge", cases=cases)
