"""Exercises the grader judges itself, from data: the processes they take, in order.

Two kinds of answer need no judge process. Values (chapter 5, :mod:`._valued`) cross as data
and the check reads nothing else. Answers asked at the check (chapter 7, :mod:`._asked`) are
called in the chapter on drawn inputs and what they gave crosses as data. Their processes:

1. The inputs process (the runner in ``inputs`` mode, sandboxed), only for a restore: the
   chapter without the key and without any answer; at each restore check it draws
   checkpoints from a secret only the grader and it know, and seals their files and saved
   records.
2. The student's process (``export`` mode, as for answers judged by export): the chapter and
   the answers; each answer written as data (at the check, for an asked one), read as
   untrusted data. It is restarted for the exercises left when one ends it.
3. This process, the grader: each export judged by the check's own verdict, with the records
   the student's process never saw.

Example:
    >>> verdict(0, 4, "ex1", (False, "evaluate gives 2, but the mean loss is 1."))["feedback"]
    'evaluate gives 2, but the mean loss is 1.'
"""

from __future__ import annotations

import secrets
import threading
import time

from bookbuild.grading import _asked, _by_export, _executed, _executor_runs, _valued
from bookbuild.grading._by_export import without_key
from bookbuild.grading._ended import ended_how
from bookbuild.grading._exports import check_function
from bookbuild.grading.sandbox import run_sandboxed

JUDGED_VALUES = (
    "judged by export: the answers crossed as values, and the grader gave the check's verdict "
    "on them (no code of the submission runs there)"
)
JUDGED_ASKED = (
    "judged by query at the check: the answer ran in the chapter on inputs drawn at grading "
    "time (checkpoints drawn by a process the answer never ran in); the verdict read what it "
    "gave as data"
)


def judged_here(program: dict, exported: dict) -> dict[int, str]:
    """``{exercise: kind}`` of the exported exercises the grader judges itself.

    Example:
        >>> call = "mk.check_all_reduce_growth(p, g, m, replicas=REPLICAS)"
        >>> judged_here({"steps": [{"kind": "check", "exercise": 2, "source": call},
        ...     {"kind": "check", "exercise": 5, "source": "m = g; " + call}]},
        ...     {2: "values", 3: "restore", 4: "loss", 5: "values"})
        {2: 'values', 3: 'restore', 4: 'loss'}
    """
    sources = {s["exercise"]: s["source"] for s in program["steps"] if s["kind"] == "check"}
    return {
        k: kind
        for k, kind in exported.items()
        if kind in _asked.KINDS | _executed.KINDS
        or (kind == _valued.KIND and _valued.judges(sources.get(k, "")))
    }


def drawn_inputs(job: dict, deadline: float, hide=()) -> tuple[dict, str | None]:
    """``({exercise: inputs}, None)`` from the inputs process, or ``({}, why not)``.

    Only a restore's exercise needs one; ``job`` is the student's job (its cases name the
    exercises asked).
    """
    kinds = job.get("exports", {})
    wanted = {k for k in job["cases"] if kinds.get(k) == "restore"}
    if not wanted:
        return {}, None
    left = deadline - time.monotonic()
    if left <= 0:
        return {}, "grading ran out of time before the inputs were drawn"
    cases = {k: job["cases"][k] for k in wanted}
    secret = secrets.randbelow(2**62)  # never in the student's job: its checkpoints' values
    drawer = dict(job, mode="inputs", cases=cases, program=without_key(job["program"]))
    outcome = run_sandboxed(drawer | {"secret": secret}, left, hide=hide)
    found = {
        str(r["exercise"]): r
        for r in outcome.records  # sealed: nothing of the submission ran there
        if r.get("kind") == "inputs" and str(r.get("exercise")) in wanted
    }
    if outcome.problem or set(found) != wanted:
        said = [str(r.get("detail")) for r in outcome.records if r.get("kind") == "error"]
        why = outcome.problem or (said[0] if said else ended_how(outcome.log))
        return {}, f"the inputs for the exercises asked at the check could not be drawn: {why}"
    return found, None


def verdict(run: int, replicas: int, case, judged: tuple[bool, str]) -> dict:
    """A verdict record, as the runner's sealed ones read."""
    passed, feedback = judged
    return {
        "kind": "verdict",
        "run": run,
        "replicas": replicas,
        "case": case,
        "passed": passed,
        "feedback": feedback,
        "seconds": 0.0,
    }


def judged(job: dict, exports: dict, inputs: dict, charged: dict, asked=None) -> dict:
    """``{(case,): [verdict]}`` for each case of ``job`` not charged, from its export (or,
    for an executed kind, from the executor's record of it: ``asked``)."""
    found: dict = {}
    kinds = job.get("exports", {})
    steps = job["program"]["steps"]
    sources = {str(s["exercise"]): s["source"] for s in steps if s["kind"] == "check"}
    seed, replicas = job["seed"], job["replicas"]
    for number, items in job["cases"].items():
        if int(number) in charged:
            continue
        for case, _ in items:
            line = exports.get((int(number), case))
            if kinds[number] == _valued.KIND:
                result = _valued.judge(line, sources[number], replicas, seed)
            elif kinds[number] in _executed.KINDS:
                record = (asked or {}).get((int(number), case))
                result = _executed.judge(check_function(sources[number]), record)
            else:
                result = _asked.judge(kinds[number], line, inputs.get(number), seed, replicas)
            found.setdefault((case,), []).append(verdict(job["run"], job["replicas"], case, result))
    return found


def runs(
    jobs: list[dict], deadline: float, limit, culprit_of, hide=(), timeout=0.0, together=False
):
    """Every replica count's student's process, then the verdicts: (verdicts, charged, failure).

    Args:
        jobs: The student's job per replica count, in order (``_grader._job``).
        deadline: When the submission's time runs out (``time.monotonic()``).
        limit: Seconds one exercise may take.
        culprit_of: ``_grader._culprit``.
        hide: Folders the runs must not see.
        timeout: The submission's time in all, for the row of a run that took longer.
        together: Run the replica counts' student's processes at once (the tests' variants,
            where an exercise charged in one count is not spared in the next).
    """
    inputs, why = drawn_inputs(jobs[0], deadline, hide)
    if why is not None:
        return {}, {}, ("error", why)
    sent = {k: _asked.sent(v) for k, v in inputs.items()}
    verdicts: dict = {}
    charged: dict[int, str] = {}
    if together:  # the tests' variants: each count's student's process at once, then executor
        sides = _together([dict(job, inputs=sent) for job in jobs], deadline, culprit_of)
        executors = _executors_together(jobs, sides, deadline, culprit_of)
    for index, job in enumerate(jobs):
        cases = {k: v for k, v in job["cases"].items() if int(k) not in charged}
        if not cases:
            continue
        job = dict(job, cases=cases, inputs=sent)
        if together:
            exports, more, failure = sides[index]
        else:
            exports, more, failure = _by_export.student_side(
                job, deadline, limit, culprit_of, hide, timeout
            )
        if failure is not None:
            return {}, {}, failure
        run, replicas = job["run"], job["replicas"]
        if together:
            asked, ended, failure = executors[index]
        else:
            asked, ended, failure = _executor_runs.executed(
                job, exports, more, deadline, hide, limit, culprit_of
            )
        if failure is not None:
            return {}, {}, failure
        more = {**more, **ended}  # an answer that ended the executor's run: charged alike
        charged |= {k: _by_export.at_count(run, replicas, w) for k, w in more.items()}
        for key, found in judged(job, exports, inputs, more, asked).items():
            verdicts.setdefault(key, []).extend(found)
    return verdicts, charged, None


def _together(jobs: list[dict], deadline: float, culprit_of) -> list:
    """Each job's ``student_side`` result, the jobs run side by side in threads."""
    found = _side_by_side(
        len(jobs), lambda i: _by_export.student_side(jobs[i], deadline, None, culprit_of)
    )
    return [r or ({}, {}, ("error", "the student's run did not finish")) for r in found]


def _executors_together(jobs: list[dict], sides: list, deadline: float, culprit_of) -> list:
    """Each count's executor run on its student's exports, side by side (the tests)."""

    def one(index: int):
        exports, charged, failure = sides[index]
        if failure is not None:
            return {}, {}, None  # the student's side's failure is the row's
        return _executor_runs.executed(
            jobs[index], exports, charged, deadline, culprit_of=culprit_of
        )

    found = _side_by_side(len(jobs), one)
    return [r or ({}, {}, ("error", "the executor's run did not finish")) for r in found]


def _side_by_side(count: int, work) -> list:
    """``[work(0), work(1), ...]``, each in its own thread (None where one raised)."""
    results: list = [None] * count

    def one(index: int) -> None:
        results[index] = work(index)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results
