"""Grading a class: many submissions side by side, one bad one never stopping the batch.

``python3 dev.py grade CH PATH...`` is :func:`bookbuild.grading.command.grade_command`;
docs/instructors_guide.md says how a teacher uses it.

Example:
    >>> error_grade(Path("ada_lovelace.ipynb"), "its process ended early", ["ex1", "ex2"]).total
    (0.0, 2.0)
"""

from __future__ import annotations

import os
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from pathlib import Path

from bookbuild.grading._grader import TIMEOUT, grade
from bookbuild.grading._result import ExerciseScore, Grade
from bookbuild.grading.program import load_program
from bookbuild.labs import Lab

SAY = partial(print, flush=True)  # progress lines: at once, even into a file


def grade_all(
    lab: Lab,
    submissions: Sequence[Path],
    *,
    timeout: float = TIMEOUT,
    jobs: int | None = None,
    choices: dict | None = None,
    grade_one: Callable[..., Grade] = grade,
    say: Callable[[str], None] = SAY,
) -> list[Grade]:
    """Grade submissions side by side; each that fails or runs over is a row, and the rest go on.

    Each grading is a process tree of its own (:func:`~bookbuild.grading.grade`), so a pool of
    ``jobs`` threads runs ``jobs`` of them at once. A line is said as each one finishes.

    Args:
        lab: The chapter's :class:`~bookbuild.labs.Lab`.
        submissions: The notebooks; the result keeps their order.
        timeout: Seconds each submission may take.
        jobs: How many at once; the machine's cores by default.
        choices: What grading would otherwise draw (``{"replicas": [4, 3], "seed": 7}``),
            the same for every submission; drawn for each when None.
        grade_one: Grades one submission: ``grade_one(lab, path, timeout=, choices=)``.
        say: Where the progress lines go.

    Returns:
        One :class:`Grade` per submission, in the order given: an unexpected exception of
        ``grade_one`` becomes an ``"error"`` row that names it.

    Example:
        >>> def full(lab, path, *, timeout, choices):
        ...     return Grade(path.stem, path, "graded", {"ex1": ExerciseScore(1.0, 1.0, "")})
        >>> [g.student for g in grade_all(None, [Path("b.ipynb"), Path("a.ipynb")],
        ...                               grade_one=full, jobs=2, say=lambda line: None)]
        ['b', 'a']
    """
    paths = [Path(s) for s in submissions]
    workers = max(1, min(jobs or os.cpu_count() or 1, len(paths) or 1))
    names = exercise_names(lab)
    finished: list[Grade] = []
    lock = threading.Lock()

    def one(path: Path) -> Grade:
        start = time.perf_counter()
        try:
            result = grade_one(lab, path, timeout=timeout, choices=choices)
        except Exception as error:  # noqa: BLE001 - a bug in grading must not stop the batch
            last = traceback.format_exception_only(error)[-1].strip()
            detail = f"grading failed: {last}"
            result = error_grade(path, detail, names, time.perf_counter() - start)
        with lock:
            finished.append(result)
            points, possible = result.total
            why = f" ({_first_line(result.detail)})" if result.status != "graded" else ""
            say(
                f"[grade] {len(finished)}/{len(paths)} {result.student}: {result.status} "
                f"{points:g}/{possible:g} in {result.seconds:.0f} s{why}"
            )
        return result

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="grade") as pool:
        grades = list(pool.map(one, paths))
    known = next((list(g.scores) for g in grades if g.scores), [])
    return [g if g.scores else replace(g, scores=_zeros(known)) for g in grades]


def error_grade(path: Path, detail: str, names: Sequence[str], seconds: float = 0.0) -> Grade:
    """An ``"error"`` row: every exercise 0 of 1, and why.

    Example:
        >>> g = error_grade(Path("ada.ipynb"), "boom", ["ex1", "ex2"])
        >>> g.status, g.total, g.detail
        ('error', (0.0, 2.0), 'boom')
    """
    return Grade(path.stem, path, "error", _zeros(names), detail, seconds)


def _first_line(text: str, limit: int = 120) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line[:limit]


def _zeros(names: Sequence[str]) -> dict[str, ExerciseScore]:
    return {name: ExerciseScore(0.0, 1.0, "not graded") for name in names}


def exercise_names(lab: Lab | None) -> list[str]:
    """The lab's exercises, ``["ex1", ...]``, from its ``program.json``; ``[]`` if it has none.

    Example:
        >>> exercise_names(None)
        []
    """
    program = getattr(lab, "program", None)
    if program is None or not Path(program).is_file():
        return []
    return [f"ex{n}" for n in load_program(program).get("exercises", [])]


def collect_submissions(paths: Sequence[Path]) -> list[Path]:
    """The notebooks to grade: each folder's ``*.ipynb`` (sorted), and each notebook named.

    Folders are read one level deep (not ``.ipynb_checkpoints``); Jupyter's checkpoints and
    hidden files are skipped.

    Raises:
        SystemExit: If a path is missing, is not a notebook, no notebook is found, or two
            submissions have the same file name (the student's name).

    Example:
        >>> collect_submissions([Path("ada.txt")])
        Traceback (most recent call last):
        ...
        SystemExit: [dev] not a notebook or a folder of notebooks: ada.txt
    """
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found += sorted(
                p
                for p in path.glob("*.ipynb")
                if not p.name.startswith(".") and not p.name.endswith("-checkpoint.ipynb")
            )
        elif path.suffix == ".ipynb" and path.is_file():
            found.append(path)
        else:
            raise SystemExit(f"[dev] not a notebook or a folder of notebooks: {path}")
    stems = [p.stem for p in found]
    twice = sorted({s for s in stems if stems.count(s) > 1})
    if twice or not found:
        why = f"two submissions are called {', '.join(twice)}" if twice else "no notebooks"
        raise SystemExit(f"[dev] {why} in {', '.join(map(str, paths))}: one file per student")
    return [p.resolve() for p in found]
