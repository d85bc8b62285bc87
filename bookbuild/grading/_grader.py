"""Grading one submission, or a chapter's test variants, through the sandboxed runner.

Example:
    >>> draw_choices({"replicas": 4, "grade_replicas": []}, seed=7)
    {'replicas': [4], 'seed': 7}
"""

from __future__ import annotations

import secrets
import threading
import time
from pathlib import Path

from bookbuild.grading import _asked, _by_export, _executed, _judged_here
from bookbuild.grading._ended import ended_how
from bookbuild.grading._exports import chapter_reads, exported_exercises
from bookbuild.grading._queried import (
    JUDGED_BY_QUERY,
    chapter_query,
    judge_chapter,
    queried_check,
    student_runs,
    unjudged,
)
from bookbuild.grading._result import ExerciseScore, Grade
from bookbuild.grading._runner import MISSING
from bookbuild.grading.program import load_program
from bookbuild.grading.sandbox import Outcome, isolation_here, run_sandboxed
from bookbuild.grading.submission import read_answers

# Seconds one submission may take (``dev.py grade --timeout``). The slowest right submission
# seen took 570 s (chapter 8's two runs beside the answer, on 2 cores at a load of 8 to 12,
# issue 47); by export, chapter 8's answer key took 531 s at 4 and 8 replicas at a load of
# 9.5 to 11.7 (2026-11-30). This is more than twice either, so a slow machine does not turn
# right answers into timeouts, and it still bounds a runaway. Each exercise also has its own
# limit (EXERCISE_LIMIT).
TIMEOUT = 1200.0
VARIANTS_TIMEOUT = 3600.0  # seconds for one run of every variant of a chapter (the tests)
JUDGED_BY_EXPORT = (
    "judged by export: the answers crossed as data (graphs, values) to a judge that runs none "
    "of the submission (docs/design/grading.md)"
)
JUDGED_BESIDE = (
    "judged in the student's process: the checks ran beside the answers (docs/design/"
    "grading.md says what that leaves open)"
)
QUERY_LIMIT = 300.0  # seconds a queried exercise's calls may take (TensorFlow's import included)
EXERCISE_LIMIT = 600.0  # seconds one exercise's answer and check may take, at the least


def draw_choices(program: dict, seed: int | None = None) -> dict:
    """Draw what a grading run uses: the second replica count and the seed.

    Args:
        program: The lab's program (:func:`~bookbuild.grading.program.load_program`).
        seed: A fixed seed, or None to draw one.

    Returns:
        ``{"replicas": [the manifest's, the drawn one], "seed": seed}`` (one replica count
        when the chapter's ``grade_replicas`` is empty).

    Example:
        >>> c = draw_choices({"replicas": 4, "grade_replicas": [2, 3]})
        >>> c["replicas"][0], c["replicas"][1] in (2, 3)
        (4, True)
    """
    second = program["grade_replicas"]
    replicas = [program["replicas"], *([secrets.choice(second)] if second else [])]
    return {"replicas": replicas, "seed": secrets.randbelow(2**31) if seed is None else seed}


def grade(
    lab,
    submission: Path,
    *,
    timeout: float = TIMEOUT,
    choices: dict | None = None,
    exercise_limit: float | None = None,
) -> Grade:
    """Grade one submitted notebook in the sandbox; never raises for a bad submission.

    Each replica count's run exports every exercise in order, each under its own time limit
    (:data:`EXERCISE_LIMIT` or the chapter's ``cell_timeout``, the longer). An
    exercise whose answer or check ends the run (an exit, an abort, a signal, running over
    its limit) scores 0 with that reason, and a new run grades the exercises not yet
    graded: one exercise never costs the others.

    Args:
        lab: The chapter's :class:`~bookbuild.labs.Lab` (its ``program`` is read).
        submission: The learner's ``.ipynb``.
        timeout: Seconds all runs of this submission may take together.
        choices: ``{"replicas": [...], "seed": n}`` to reproduce a grading; drawn if None.
        exercise_limit: Seconds one exercise may take; None for the chapter's own.

    Returns:
        The :class:`~bookbuild.grading.Grade`: graded, or error / timeout / tampered with 0.
    """
    started = time.monotonic()
    program = load_program(lab.program)
    limit = exercise_limit or max(EXERCISE_LIMIT, float(program.get("cell_timeout") or 0))
    numbers = program["exercises"]
    choices = choices or draw_choices(program)
    blank = {f"ex{k}": ExerciseScore(0.0, 1.0, "") for k in numbers}
    base = {"student": Path(submission).stem, "submission": Path(submission)}
    queried = queried_exercises(program)
    base |= {"isolation": _isolation(program, queried), "choices": choices}
    answers, problem = read_answers(Path(submission), numbers)
    if problem:
        return Grade(status="error", scores=blank, detail=problem, **base)
    folder = Path(lab.program).resolve().parent
    lab_folder = folder.parent if folder.name == "autograder" else folder
    hide = (lab_folder, Path(submission).resolve().parent)
    verdicts, charged = {}, {}
    for runs, part in _parts(program, queried):
        cases = {str(k): [[f"ex{k}", answers[k]]] for k in part}
        plan = (program, choices, cases, started + timeout, limit, hide)
        found, more, failure = runs(*plan, timeout)
        if failure is not None:
            seconds = round(time.monotonic() - started, 1)
            return Grade(
                status=failure[0], scores=blank, detail=failure[1], seconds=seconds, **base
            )
        verdicts |= found
        charged |= more
    asks = _asks(program)
    asked = _queried_scores(asks, queried, answers, choices["seed"], started + timeout, hide)
    seconds = round(time.monotonic() - started, 1)
    scores = {}
    for k in numbers:
        if k in queried:
            scores[f"ex{k}"] = asked[k]
            continue
        failed = [v for v in verdicts.get((f"ex{k}",), []) if not v["passed"]]
        feedback = charged.get(k) or _feedback(failed)
        scores[f"ex{k}"] = ExerciseScore(0.0 if k in charged or failed else 1.0, 1.0, feedback)
    detail = "; ".join(f"exercise {k}: {why}" for k, why in sorted(charged.items()))
    return Grade(status="graded", scores=scores, detail=detail, seconds=seconds, **base)


def _parts(program: dict, queried: dict) -> list:
    """``[(runs, exercises)]``: the exercises judged by export, asked at the check, beside."""
    exported = exported_exercises(program)
    rest = [k for k in program["exercises"] if k not in queried]
    here = _judged_here.judged_here(program, exported)
    parts = [
        (_by_export_runs, [k for k in rest if k in exported and k not in here]),
        (_valued_part, [k for k in rest if here.get(k) == "values"]),
        (_asked_part, [k for k in rest if here.get(k) in _asked.KINDS]),
        (_executed_part, [k for k in rest if here.get(k) in _executed.KINDS]),
        (_runs, [k for k in rest if k not in exported]),
    ]
    return [(runs, part) for runs, part in parts if part]


HOW = {}  # each part's words in a row's isolation, filled below the runs


def _isolation(program: dict, queried: dict) -> str:
    """The row's isolation: this process's, then how each exercise was judged."""
    kinds = [(part, HOW[runs]) for runs, part in _parts(program, queried)]
    kinds += [([k], JUDGED_BY_QUERY) for k in sorted(queried)]
    named = [
        f"exercise{'s' * (len(part) > 1)} {', '.join(map(str, part))} {how}" for part, how in kinds
    ]
    return "; ".join([isolation_here(), *named])


def queried_exercises(program: dict) -> dict[int, str]:
    """``{exercise: check}`` for the exercises judged by query (:mod:`._queried`)."""
    steps = [s for s in program["steps"] if s["kind"] == "check"]
    found = {s["exercise"]: queried_check(s["source"]) for s in steps}
    return {k: check for k, check in found.items() if check}


def _asks(program: dict) -> dict[int, list[str]]:
    """The names each exercise's answer defines."""
    return {s["exercise"]: s["asks"] for s in program["steps"] if s["kind"] == "answer"}


def _queried_scores(asks: dict, queried: dict, answers: dict, seed: int, deadline, hide) -> dict:
    """Each queried exercise's score: its answer asked in the student's process, judged here."""
    exercises, contexts, scores = [], {}, {}
    for k, check in sorted(queried.items()):
        if answers.get(k) is None:
            scores[k] = ExerciseScore(0.0, 1.0, MISSING)
            continue
        calls, contexts[k] = chapter_query(check, seed)
        exercises.append(
            {"number": k, "source": answers[k], "name": asks[k][0], "inputs": calls}
            | {"imports": {"tf": "tensorflow", "np": "numpy", "keras": "keras"}}
        )
    results, charged = student_runs(exercises, deadline, QUERY_LIMIT, hide)
    for exercise in exercises:
        k = exercise["number"]
        passed, why = False, unjudged(results.get(k), charged.get(k), len(exercise["inputs"]))
        if why is None:
            passed, why = judge_chapter(queried[k], contexts[k], results[k]["outputs"])
        scores[k] = ExerciseScore(1.0 if passed else 0.0, 1.0, why)
    return scores


def _runs(program, choices, cases, deadline, limit, hide, timeout):
    """Each replica count's runs, checks beside the answers: (verdicts, charged, failure)."""
    charged: dict[int, str] = {}  # an exercise that ended its run: why
    verdicts: dict = {}
    for run, replicas in enumerate(choices["replicas"]):
        remaining = [k for k in program["exercises"] if str(k) in cases and k not in charged]
        while remaining:
            job = _job(program, run, replicas, choices["seed"], cases, remaining)
            status, detail, found, culprit = _one_run(job, deadline, timeout, limit, hide)
            if culprit is not None and culprit[0] not in remaining:  # a forged progress line
                status, culprit = "tampered", None
                detail = "a progress line named an exercise this run was not grading"
            if culprit is None and status != "graded":
                return {}, {}, (status, detail)
            for key, records in found.items():
                verdicts.setdefault(key, []).extend(records)
            done = {int(case[2:]) for (case,) in found}
            if culprit is not None:
                charged[culprit[0]] = _by_export.at_count(run, replicas, culprit[1])
                done.add(culprit[0])
            remaining = [k for k in remaining if k not in done] if culprit else []
    return verdicts, charged, None


def _by_export_runs(program, choices, cases, deadline, limit, hide, timeout):
    """Each replica count: the student's process exports, the judge checks (_by_export)."""
    charged: dict[int, str] = {}
    verdicts: dict = {}
    for run, replicas in enumerate(choices["replicas"]):
        remaining = [k for k in program["exercises"] if str(k) in cases and k not in charged]
        job = _job(program, run, replicas, choices["seed"], cases, remaining)
        exports, more, failure = _by_export.student_side(
            job, deadline, limit, _culprit, hide, timeout
        )
        if failure is not None:
            return {}, {}, failure
        charged |= {k: _by_export.at_count(run, replicas, why) for k, why in more.items()}
        judged = [k for k in remaining if k not in more]
        if not judged:
            continue
        job = _by_export.judge_job(
            _job(program, run, replicas, choices["seed"], cases, judged), exports
        )
        status, detail, found, _ = _one_run(job, deadline, timeout, None, hide)  # no limit
        if status != "graded":
            return {}, {}, (status, f"the judge (no code of the submission runs there): {detail}")
        for key, records in found.items():
            verdicts.setdefault(key, []).extend(records)
    return verdicts, charged, None


def _asked_part(program, choices, cases, deadline, limit, hide, timeout, together=False):
    """The exercises the grader judges itself (_judged_here): (verdicts, charged, failure)."""
    jobs = [
        _job(program, run, replicas, choices["seed"], cases)
        for run, replicas in enumerate(choices["replicas"])
    ]
    return _judged_here.runs(jobs, deadline, limit, _culprit, hide, timeout, together)


def _valued_part(*plan, together=False):
    """The exercises whose values the grader judges itself: as :func:`_asked_part`."""
    return _asked_part(*plan, together=together)


def _executed_part(*plan, together=False):
    """The exercises an executor asks and the grader judges (_executed): as _asked_part."""
    return _asked_part(*plan, together=together)


HOW |= {
    _by_export_runs: JUDGED_BY_EXPORT,
    _valued_part: _judged_here.JUDGED_VALUES,
    _asked_part: _judged_here.JUDGED_ASKED,
    _executed_part: _executed.JUDGED,
    _runs: JUDGED_BESIDE,
}
HERE = (_valued_part, _asked_part, _executed_part)  # the parts the grader judges itself


def _one_run(job: dict, deadline: float, timeout: float, limit: float | None, hide=()):
    """(status, detail, verdicts, culprit) of one sandboxed run before the deadline."""
    left = deadline - time.monotonic()
    outcome = run_sandboxed(job, left, exercise_limit=limit, hide=hide) if left > 0 else None
    status, detail, found = _combine_runs(
        [outcome], [job["run"]], [job["replicas"]], job["cases"], timeout
    )
    return status, detail, found, _culprit(outcome, status, limit)


def _culprit(outcome: Outcome | None, status: str, limit: float | None):
    """(exercise, why) when one exercise ended the run; None when the run is not its doing."""
    if outcome is None or status in ("graded", "tampered") or outcome.exercise is None:
        return None
    ended = [r for r in outcome.records if r.get("kind") == "ended"]
    if ended and type(ended[0].get("exercise")) is int:  # sealed: sys.exit and the like
        return ended[0]["exercise"], f"{ended[0].get('detail', '')}: not graded"
    number = outcome.exercise
    if outcome.exercise_timed_out:
        return number, (
            f"it took longer than {limit:g} s and was stopped: look for a loop that never "
            "ends, or work far larger than asked"
        )
    if outcome.timed_out or not outcome.problem:
        return None  # the submission's time ran out, or a sealed error that is not its doing
    return number, f"the run ended while exercise {number} ran: {ended_how(outcome.log)}"


def _job(program: dict, run: int, replicas: int, seed: int, cases: dict, only=None) -> dict:
    """The runner's job; ``only``: the exercises whose cases it checks (all by default).

    ``exports`` tells the runner what each exported exercise's answer crosses as, ``reads``
    which of the chapter's names cross with it.
    """
    if only is not None:
        cases = {str(k): cases[str(k)] for k in only}
    exports = {str(k): kind for k, kind in exported_exercises(program).items()}
    reads = {str(k): names for k, names in chapter_reads(program).items()}
    job = {"program": program, "run": run, "replicas": replicas, "seed": seed, "cases": cases}
    return job | {"exports": exports, "reads": reads}


def _feedback(failed: list[dict]) -> str:
    """The first failing run's feedback, naming its replica count after the first run."""
    if not failed:
        return ""
    first = failed[0]
    return (
        first["feedback"]
        if first["run"] == 0
        else (f"at {first['replicas']} replicas: {first['feedback']}")
    )


def _combine(outcomes: list[Outcome | None], replicas: list[int], cases: dict, timeout: float):
    """(status, detail, {(case,): [verdicts]}) from the outcomes of runs 0, 1, ... in order."""
    return _combine_runs(outcomes, list(range(len(outcomes))), replicas, cases, timeout)


def _combine_runs(outcomes, runs: list[int], replicas: list[int], cases: dict, timeout: float):
    expected = {(c[0], run) for items in cases.values() for c in items for run in runs}
    verdicts: dict = {}
    seen = set()
    for run, count, outcome in zip(runs, replicas, outcomes, strict=True):
        if outcome is None or outcome.timed_out:
            return *_by_export.out_of_time(timeout), verdicts
        if outcome.problem:
            kind = "tampered" if "forged" in outcome.problem else "error"
            return kind, f"{outcome.problem}: {ended_how(outcome.log)}", {}
        for record in outcome.records:
            if record.get("kind") in ("tampered", "error", "ended"):
                kind = "tampered" if record["kind"] == "tampered" else "error"
                kept = verdicts if record["kind"] == "ended" else {}  # sealed, before the exit
                return kind, str(record.get("detail", "")), kept
            if record.get("kind") != "verdict":
                continue
            key = (record.get("case"), record.get("run"))
            if key not in expected or key in seen or record.get("run") != run:
                return "tampered", f"an unexpected verdict line: {key}", {}
            seen.add(key)
            record["replicas"] = count
            verdicts.setdefault((record["case"],), []).append(record)
    if seen != expected:
        missing = sorted(expected - seen)[:3]
        return "error", f"the checks did not all run (missing {missing})", {}
    return "graded", "", verdicts


def grade_variants(lab, cases: list, *, choices: dict) -> list[dict]:
    """Grade many answers of a chapter at once: one runner per replica count, side by side.

    Args:
        lab: The chapter's :class:`~bookbuild.labs.Lab`.
        cases: ``[(exercise, label, code), ...]``; each runs in its own copy of the chapter's
            namespace at its exercise's answer point (``code`` None: no answer cell).
        choices: ``{"replicas": [...], "seed": n}``.

    Returns:
        One dict per case, in order: ``exercise``, ``label``, ``passed`` (in every run),
        ``feedback`` (the first failing run's) and ``runs`` (each run's verdict).

    Raises:
        RuntimeError: If a run could not grade (a chapter cell failed, a timeout, tampering).
    """
    program = load_program(lab.program)
    queried = queried_exercises(program)
    jobs_cases: dict = {}
    for index, (exercise, _, code) in enumerate(cases):
        if exercise not in queried:
            jobs_cases.setdefault(str(exercise), []).append([index, code])
    asked = [(i, case) for i, case in enumerate(cases) if case[0] in queried]
    scores = _queried_variants(program, queried, asked, choices["seed"]) if asked else {}
    if not jobs_cases:
        return [_variant(case, [], scores[i]) for i, case in enumerate(cases)]
    parts = {  # by export, then beside (_parts): each with its own runs' outcomes
        runs: {str(k): jobs_cases[str(k)] for k in part if str(k) in jobs_cases}
        for runs, part in _parts(program, queried)
    }
    parts = {runs: part for runs, part in parts.items() if part}
    outcomes = {runs: [None] * len(choices["replicas"]) for runs in parts}
    problems: list[str] = []

    here: dict = {}  # the parts the grader judges: each count's student's process at once
    for runs in [r for r in HERE if r in parts]:
        deadline = time.monotonic() + VARIANTS_TIMEOUT
        part = parts.pop(runs)
        found, charged, failure = runs(
            program, choices, part, deadline, None, (), VARIANTS_TIMEOUT, together=True
        )
        if failure is not None or charged:
            raise RuntimeError(f"the exercises the grader judges failed: {failure or charged}")
        here |= found

    def one(run: int, replicas: int) -> None:
        for runs, part in parts.items():
            job = _job(program, run, replicas, choices["seed"], part)
            if runs is _by_export_runs:  # the student's process exports every case, then the judge
                deadline = time.monotonic() + VARIANTS_TIMEOUT
                exports, charged, failure = _by_export.student_side(
                    job, deadline, None, _culprit, seconds=VARIANTS_TIMEOUT
                )
                if failure is not None or charged:
                    problems.append(
                        f"at {replicas} replicas the export failed: {failure or charged}"
                    )
                    return
                job = _by_export.judge_job(job, exports)
            outcomes[runs][run] = run_sandboxed(job, VARIANTS_TIMEOUT)

    threads = [threading.Thread(target=one, args=a) for a in enumerate(choices["replicas"])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if problems:
        raise RuntimeError("; ".join(problems))
    verdicts: dict = {}
    for runs, part in parts.items():
        status, detail, found = _combine(
            outcomes[runs], choices["replicas"], part, VARIANTS_TIMEOUT
        )
        if status != "graded":
            logs = "\n".join(o.log[-3000:] for o in outcomes[runs] if o is not None)
            raise RuntimeError(f"{status}: {detail}\n{logs}")
        verdicts |= found
    verdicts |= here
    found = []
    for index, case in enumerate(cases):
        if index in scores:
            found.append(_variant(case, [], scores[index]))
            continue
        runs = sorted(verdicts[(index,)], key=lambda v: v["run"])
        found.append(_variant(case, runs, None))
    return found


def _variant(case, runs: list, score: ExerciseScore | None) -> dict:
    """One variant's result: its runs' verdicts, or its score when judged by query."""
    exercise, label, _ = case
    if score is not None:
        passed = score.points == 1.0
        return {"exercise": exercise, "label": label, "passed": passed, "feedback": score.feedback}
    failed = [v for v in runs if not v["passed"]]
    return {
        "exercise": exercise,
        "label": label,
        "passed": not failed,
        "feedback": _feedback(failed),
        "runs": [
            {"replicas": v["replicas"], "passed": v["passed"], "feedback": v["feedback"]}
            | {"seconds": v["seconds"]}
            for v in runs
        ],
    }


def _queried_variants(program, queried: dict, asked: list, seed: int) -> dict:
    """The scores of many answers to queried exercises, each graded as its own exercise."""
    names = _asks(program)
    asks = {index: names[exercise] for index, (exercise, _, _) in asked}
    checks = {index: queried[exercise] for index, (exercise, _, _) in asked}
    answers = {index: code for index, (_, _, code) in asked}
    deadline = time.monotonic() + VARIANTS_TIMEOUT
    return _queried_scores(asks, checks, answers, seed, deadline, ())
