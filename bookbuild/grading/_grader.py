"""Grading one submission, or a chapter's test variants, through the sandboxed runner.

Example:
    >>> draw_choices({"replicas": 4, "grade_replicas": []}, seed=7)
    {'replicas': [4], 'seed': 7}
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from pathlib import Path

from bookbuild.grading._result import ExerciseScore, Grade
from bookbuild.grading.program import load_program
from bookbuild.grading.sandbox import Outcome, isolation_note, run_sandboxed, user_namespaces
from bookbuild.grading.submission import read_answers

VARIANTS_TIMEOUT = 3600.0  # seconds for one run of every variant of a chapter (the tests)


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


def _isolation() -> str:
    root = os.geteuid() == 0
    return isolation_note(root, root or user_namespaces())


def grade(lab, submission: Path, *, timeout: float = 600.0, choices: dict | None = None) -> Grade:
    """Grade one submitted notebook in the sandbox; never raises for a bad submission.

    Args:
        lab: The chapter's :class:`~bookbuild.labs.Lab` (its ``program`` is read).
        submission: The learner's ``.ipynb``.
        timeout: Seconds all runs of this submission may take together.
        choices: ``{"replicas": [...], "seed": n}`` to reproduce a grading; drawn if None.

    Returns:
        The :class:`~bookbuild.grading.Grade`: graded, or error / timeout / tampered with 0.
    """
    started = time.monotonic()
    program = load_program(lab.program)
    numbers = program["exercises"]
    choices = choices or draw_choices(program)
    blank = {f"ex{k}": ExerciseScore(0.0, 1.0, "") for k in numbers}
    base = {"student": Path(submission).stem, "submission": Path(submission)}
    base |= {"isolation": _isolation(), "choices": choices}
    answers, problem = read_answers(Path(submission), numbers)
    if problem:
        return Grade(status="error", scores=blank, detail=problem, **base)
    cases = {str(k): [[f"ex{k}", answers[k]]] for k in numbers}
    outcomes = []
    for run, replicas in enumerate(choices["replicas"]):
        left = timeout - (time.monotonic() - started)
        job = _job(program, run, replicas, choices["seed"], cases)
        outcomes.append(run_sandboxed(job, left) if left > 0 else None)
        if outcomes[-1] is None or outcomes[-1].timed_out or outcomes[-1].problem:
            break
    status, detail, verdicts = _combine(outcomes, choices, cases, timeout)
    seconds = round(time.monotonic() - started, 1)
    if status != "graded":
        return Grade(status=status, scores=blank, detail=detail, seconds=seconds, **base)
    scores = {}
    for k in numbers:
        failed = [v for v in verdicts[(f"ex{k}",)] if not v["passed"]]
        scores[f"ex{k}"] = ExerciseScore(0.0 if failed else 1.0, 1.0, _feedback(failed))
    return Grade(status="graded", scores=scores, seconds=seconds, **base)


def _job(program: dict, run: int, replicas: int, seed: int, cases: dict) -> dict:
    return {"program": program, "run": run, "replicas": replicas, "seed": seed, "cases": cases}


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


def _combine(outcomes: list[Outcome | None], choices: dict, cases: dict, timeout: float):
    """(status, detail, {(case,): [verdicts]}) from the runs' outcomes."""
    runs = range(len(choices["replicas"]))
    expected = {(c[0], run) for items in cases.values() for c in items for run in runs}
    verdicts: dict = {}
    seen = set()
    for run, outcome in enumerate(outcomes):
        if outcome is None or outcome.timed_out:
            return "timeout", f"grading took longer than {timeout:g} s (stopped)", {}
        if outcome.problem:
            kind = "tampered" if "forged" in outcome.problem else "error"
            return kind, f"{outcome.problem}{_last_line(outcome.log)}", {}
        for record in outcome.records:
            if record.get("kind") in ("tampered", "error"):
                return record["kind"], str(record.get("detail", "")), {}
            if record.get("kind") != "verdict":
                continue
            key = (record.get("case"), record.get("run"))
            if key not in expected or key in seen or record.get("run") != run:
                return "tampered", f"an unexpected verdict line: {key}", {}
            seen.add(key)
            record["replicas"] = choices["replicas"][run]
            verdicts.setdefault((record["case"],), []).append(record)
    if seen != expected:
        missing = sorted(expected - seen)[:3]
        return "error", f"the checks did not all run (missing {missing})", {}
    return "graded", "", verdicts


def _last_line(log: str) -> str:
    lines = [line for line in log.splitlines() if line.strip()]
    return f" (its last output: {lines[-1][:200]})" if lines else ""


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
    jobs_cases: dict = {}
    for index, (exercise, _, code) in enumerate(cases):
        jobs_cases.setdefault(str(exercise), []).append([index, code])
    outcomes: list = [None] * len(choices["replicas"])

    def one(run: int, replicas: int) -> None:
        job = _job(program, run, replicas, choices["seed"], jobs_cases)
        outcomes[run] = run_sandboxed(job, VARIANTS_TIMEOUT)

    threads = [threading.Thread(target=one, args=a) for a in enumerate(choices["replicas"])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    status, detail, verdicts = _combine(outcomes, choices, jobs_cases, VARIANTS_TIMEOUT)
    if status != "graded":
        logs = "\n".join(o.log[-3000:] for o in outcomes if o is not None)
        raise RuntimeError(f"{status}: {detail}\n{logs}")
    found = []
    for index, (exercise, label, _) in enumerate(cases):
        runs = sorted(verdicts[(index,)], key=lambda v: v["run"])
        failed = [v for v in runs if not v["passed"]]
        found.append(
            {
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
        )
    return found
