"""``python3 dev.py grade``: a class's submissions of one chapter, graded, tabled and written.

Example:
    >>> fixed_choices({"replicas": 4, "grade_replicas": [2, 8]}, 7, "4,2")
    {'replicas': [4, 2], 'seed': 7}
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from bookbuild.grading._grader import grade
from bookbuild.grading._result import Grade
from bookbuild.grading.batch import TIMEOUT, collect_submissions, grade_all
from bookbuild.grading.browser_labs import find_lab, grade_lab
from bookbuild.grading.built_labs import lab_for, locked
from bookbuild.grading.program import load_program
from bookbuild.grading.report import grades_table, write_feedback, write_grades_csv
from bookbuild.grading.sandbox import user_namespaces
from bookbuild.labs import LABS, Lab, build_lab, chapters_with_exercises
from bookbuild.manifest import load_manifest

NO_SANDBOX = (
    "[dev] grading here cannot isolate the learners' code: this is not root, and user "
    "namespaces are not allowed, so the answers would run as you, with your files and the "
    "network. Grade as root (sudo python3 dev.py grade ...) or on a machine that allows "
    "unprivileged user namespaces; or add --unisolated to grade without a sandbox (each row "
    "then says so)."
)


def sandbox_possible() -> bool:
    """Whether grading can make its sandbox here: root, or an unprivileged user namespace."""
    return os.geteuid() == 0 or user_namespaces()


def fixed_choices(program: dict, seed: int | None, replicas: str | None) -> dict | None:
    """The grading choices a teacher fixed, or None to let grading draw them.

    Args:
        program: The lab's program (its ``replicas`` and ``grade_replicas``).
        seed: ``--seed``: the runs' seed; drawn when None.
        replicas: ``--replicas``, e.g. ``"4,3"``; when None, the chapter's count and a second
            one drawn from ``grade_replicas`` by ``seed``.

    Returns:
        ``{"replicas": [...], "seed": n}``, or None when neither is given.

    Example:
        >>> program = {"replicas": 4, "grade_replicas": [2, 3]}
        >>> fixed_choices(program, 7, None) == fixed_choices(program, 7, None)
        True
        >>> fixed_choices(program, 7, "4,2")
        {'replicas': [4, 2], 'seed': 7}
        >>> fixed_choices(program, None, None) is None
        True
    """
    if seed is None and replicas is None:
        return None
    seed = secrets.randbelow(2**31) if seed is None else seed
    if replicas is not None:
        counts = [int(n) for n in replicas.split(",")]
    else:
        second = program.get("grade_replicas", [])
        counts = [program["replicas"], *([random.Random(seed).choice(second)] if second else [])]
    return {"replicas": counts, "seed": seed}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python3 dev.py grade",
        description="Grade a class's submissions of one chapter: a table, grades.csv and a "
        "feedback file per student (named by the notebook's file name, e.g. ada_lovelace).",
    )
    parser.add_argument(
        "chapter",
        help="the chapter: its number, stem or file name; or a browser lab, e.g. browser/05",
    )
    parser.add_argument("paths", nargs="+", type=Path, help="notebooks, or folders of them")
    parser.add_argument(
        "--timeout",
        type=float,
        default=TIMEOUT,
        metavar="SECONDS",
        help=f"seconds each submission may take (default {TIMEOUT:g}: more than twice the "
        "slowest right submission seen, 531 s for chapter 8's answer key by export at 4 and 8 "
        "replicas on a 2-core machine at a load of 9.5 to 11.7); each exercise also stops "
        "after 600 s, or the chapter's cell timeout if longer",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count(),
        metavar="N",
        help="submissions at once (default: the cores; each takes about 0.7 GB of memory)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        metavar="N",
        help="the runs' seed, which also draws the second replica count: to repeat a "
        "grading, the seed its feedback file names (default: drawn for each submission)",
    )
    parser.add_argument(
        "--replicas", metavar="R1,R2", help="the runs' replica counts instead (e.g. 4,3)"
    )
    parser.add_argument(
        "--unisolated",
        action="store_true",
        help="grade even where no sandbox can be made (not root, and no user namespaces): the "
        "answers then run as you, with your files and the network; each row says so",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="FOLDER",
        help="where grades.csv and feedback/ go (default: build/labs/<chapter>/)",
    )
    return parser


def grade_command(
    args: Sequence[str],
    *,
    grade_one: Callable[..., Grade] = grade,
    labs: Path = LABS,
    build: Callable[..., Lab] = build_lab,
    can_isolate: Callable[[], bool] = sandbox_possible,
) -> int:
    """``python3 dev.py grade``: grade, print the table, write grades.csv and feedback files.

    Args:
        args: The command's arguments (``--help`` lists them).
        grade_one: Grades one submission (:func:`~bookbuild.grading.grade`).
        labs: Where the labs are built (:func:`lab_for`).
        build: Builds a lab.
        can_isolate: Whether a sandbox can be made here (as root, or in a user namespace).

    Returns:
        0 when every submission was graded; 1 when any is an error, a timeout or tampered.

    Example:
        >>> grade_command(["3", "missing.ipynb"])
        Traceback (most recent call last):
        ...
        SystemExit: [dev] not a notebook or a folder of notebooks: missing.ipynb
    """
    known = _parser().parse_args(list(args))
    if not known.unisolated and not can_isolate():
        raise SystemExit(NO_SANDBOX)
    submissions = collect_submissions(known.paths)
    if known.chapter.startswith("browser/"):
        return _grade_browser_lab(known, submissions, labs)
    (chapter,) = chapters_with_exercises(load_manifest(), [known.chapter])
    lab = lab_for(chapter, labs, build)
    program = load_program(lab.program)
    choices = fixed_choices(program, known.seed, known.replicas)

    def seeded(lab: Lab, path: Path, *, timeout: float, choices: dict | None) -> Grade:
        # Each submission's second replica count comes from its seed: --seed alone repeats it.
        drawn = choices or fixed_choices(program, secrets.randbelow(2**31), None)
        return grade_one(lab, path, timeout=timeout, choices=drawn)

    print(f"[grade] {len(submissions)} submission(s) of {chapter['file']}, {known.jobs} at once")
    print(f"[grade] each within {known.timeout:g} s; progress as each finishes:", flush=True)
    grades = grade_all(
        lab,
        submissions,
        timeout=known.timeout,
        jobs=known.jobs,
        choices=choices,
        grade_one=seeded,
    )
    stem = Path(chapter["path"]).stem
    return _report(grades, known.out or Path(labs) / stem, stem)


def _grade_browser_lab(known, submissions: list[Path], labs: Path) -> int:
    """``dev.py grade browser/NN ...``: a browser lab's answers (:mod:`.browser_labs`)."""
    if known.replicas is not None:
        raise SystemExit("[dev] a browser lab runs no replicas: leave out --replicas")
    lab = find_lab(known.chapter)

    def one(_lab, path: Path, *, timeout: float, choices) -> Grade:
        return grade_lab(lab, path, timeout=timeout, seed=known.seed)

    print(f"[grade] {len(submissions)} submission(s) of browser/{lab.name}, {known.jobs} at once")
    grades = grade_all(None, submissions, timeout=known.timeout, jobs=known.jobs, grade_one=one)
    return _report(grades, known.out or Path(labs) / "browser" / lab.stem, lab.stem)


def _report(grades: list[Grade], out: Path, name: str) -> int:
    """Print the table, write grades.csv and the feedback files: 1 if any was not graded."""
    print(grades_table(grades))
    when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    with locked(Path(out) / ".grades.lock"):
        csv = write_grades_csv(grades, Path(out) / "grades.csv", graded_at=when)
        feedback = write_feedback(grades, Path(out) / "feedback", name, when)
    print(f"[grade] wrote {csv} and {feedback}/<student>.md")
    failed = [g for g in grades if g.status != "graded"]
    if failed:
        who = ", ".join(f"{g.student} ({g.status})" for g in failed)
        print(f"[grade] {len(failed)} of {len(grades)} submission(s) were not graded: {who}")
    return 1 if failed else 0
