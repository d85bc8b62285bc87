"""Grading submitted notebooks with a lab's autograder, offline and without Docker.

Example:
    >>> print(grades_table([Grade(Path("ada.ipynb"), {"ex1": (1.0, 1.0, "")})]))
    submission  exercise  points  feedback
    ada.ipynb   ex1       1/1     -
    ada.ipynb   total     1/1
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bookbuild.labs import OTTER, Lab

GRADE_TIMEOUT = 1800  # seconds one submission may take to grade (chapter 6 takes ~2 min)


@dataclass(frozen=True)
class Grade:
    """A submission's grade: points and the check's feedback per exercise.

    Attributes:
        submission: The graded notebook.
        scores: ``{"ex1": (points, possible, feedback), ...}``; feedback is empty on a pass.
    """

    submission: Path
    scores: dict[str, tuple[float, float, str]]

    @property
    def total(self) -> tuple[float, float]:
        """Points scored and possible, over all exercises."""
        return (
            sum(s for s, _, _ in self.scores.values()),
            sum(p for _, p, _ in self.scores.values()),
        )


def grade(lab: Lab, submission: Path, timeout: float = GRADE_TIMEOUT) -> Grade:
    """Grade one submitted notebook with the lab's autograder, offline and without Docker.

    Runs ``otter run -a <autograder.zip> <submission>``: the submission is executed from top
    to bottom in this environment, then every exercise's test runs against it.

    Args:
        lab: The chapter's :class:`Lab`.
        submission: The learner's notebook.
        timeout: Seconds the whole grading may take before it is stopped.

    Returns:
        The :class:`Grade`.

    Raises:
        subprocess.TimeoutExpired: If grading takes longer than ``timeout``.
        subprocess.CalledProcessError: If otter fails (not a failing test: that is a score).
    """
    with tempfile.TemporaryDirectory(prefix="mirrorbook-grade-") as out:
        subprocess.run(
            [
                OTTER,
                "run",
                "--no-logo",
                "-a",
                str(lab.autograder),
                "-o",
                out,
                str(submission),
            ],
            check=True,
            capture_output=True,
            timeout=timeout,
        )
        results = json.loads((Path(out) / "results.json").read_text())
    scores = {}
    for test in results["tests"]:
        if "score" not in test:  # otter's summary of the public tests
            continue
        name = test["name"].split(" - ")[0]
        score, possible = float(test["score"]), float(test["max_score"])
        feedback = "" if score == possible else _feedback(test.get("output", ""))
        scores[name] = (score, possible, feedback)
    return Grade(Path(submission), scores)


def _feedback(output: str) -> str:
    """The check's message from otter's output of a failed test (its AssertionError line)."""
    found = re.findall(r"AssertionError: (.*)", output)
    if found:
        return found[-1].strip()
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else ""  # the error that stopped the test, e.g. a NameError


def grades_table(grades: list[Grade]) -> str:
    """The grades as a text table: one row per submission and exercise, with the feedback.

    Args:
        grades: What :func:`grade` returned, one per submission.

    Returns:
        The table, ending with each submission's total.

    Example:
        >>> print(grades_table([Grade(Path("ada.ipynb"), {"ex1": (1.0, 1.0, ""),
        ...                                              "ex2": (0.0, 1.0, "not attempted yet")})]))
        submission  exercise  points  feedback
        ada.ipynb   ex1       1/1     -
        ada.ipynb   ex2       0/1     not attempted yet
        ada.ipynb   total     1/2
    """
    rows = [("submission", "exercise", "points", "feedback")]
    for result in grades:
        name = _shown(result.submission)
        for exercise, (score, possible, feedback) in result.scores.items():
            rows.append((name, exercise, f"{score:g}/{possible:g}", feedback or "-"))
        score, possible = result.total
        rows.append((name, "total", f"{score:g}/{possible:g}", ""))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "\n".join(
        "  ".join(
            cell.ljust(width) for cell, width in zip([*row[:3], row[3]], [*widths, 0], strict=True)
        ).rstrip()
        for row in rows
    )


def _shown(path: Path) -> str:
    """A submission's path as the teacher typed it: relative to here when it is below here."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def write_grades_csv(grades: list[Grade], path: Path) -> Path:
    """Write one row per submission: its points per exercise and its total.

    Args:
        grades: What :func:`grade` returned, one per submission (the same lab).
        path: The CSV file to write.

    Returns:
        ``path``.

    Example:
        >>> import tempfile
        >>> out = Path(tempfile.mkdtemp()) / "grades.csv"
        >>> print(write_grades_csv([Grade(Path("ada.ipynb"), {"ex1": (1.0, 1.0, "")})], out).read_text())
        submission,ex1,total,possible
        ada.ipynb,1,1,1
        <BLANKLINE>
    """  # noqa: E501
    import csv

    names = list(grades[0].scores) if grades else []
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["submission", *names, "total", "possible"])
        for result in grades:
            points = [f"{result.scores.get(n, (0, 0, ''))[0]:g}" for n in names]
            score, possible = result.total
            writer.writerow([_shown(result.submission), *points, f"{score:g}", f"{possible:g}"])
    return path
