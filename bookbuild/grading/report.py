"""The grades as a teacher reads and returns them: a text table, grades.csv, feedback files.

Example:
    >>> from bookbuild.grading._result import ExerciseScore
    >>> g = Grade("ada", Path("ada.ipynb"), "graded", {"ex1": ExerciseScore(1.0, 1.0, "")})
    >>> print(grades_table([g]))
    student  exercise  points  feedback
    ada      ex1       1/1     -
    ada      total     1/1
"""

from __future__ import annotations

import csv
import io
import os
import re
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from bookbuild.grading._result import Grade

FIXED = ("total", "possible", "status", "feedback", "graded_at")  # grades.csv after ex1..exK
SHORT = 160  # characters of one exercise's feedback in grades.csv (the file has all of it)


def grades_table(grades: list[Grade]) -> str:
    """The grades as a plain text table: a row per student and exercise, then their total.

    A submission that was not graded shows its status and why on its total row.

    Args:
        grades: One :class:`Grade` per submission.

    Returns:
        The table.

    Example:
        >>> from bookbuild.grading._result import ExerciseScore as S
        >>> ada = Grade("ada", Path("ada.ipynb"), "graded",
        ...             {"ex1": S(1.0, 1.0, ""), "ex2": S(0.0, 1.0, "not attempted yet")})
        >>> bob = Grade("bob", Path("bob.ipynb"), "timeout",
        ...             {"ex1": S(0.0, 1.0, ""), "ex2": S(0.0, 1.0, "")}, "ran over 600 s")
        >>> print(grades_table([ada, bob]))
        student  exercise  points  feedback
        ada      ex1       1/1     -
        ada      ex2       0/1     not attempted yet
        ada      total     1/2
        bob      ex1       0/1     -
        bob      ex2       0/1     -
        bob      total     0/2     TIMEOUT: ran over 600 s
    """
    rows = [("student", "exercise", "points", "feedback")]
    for result in grades:
        for exercise, score in result.scores.items():
            points = f"{score.points:g}/{score.possible:g}"
            rows.append((result.student, exercise, points, _one_line(score.feedback) or "-"))
        score, possible = result.total
        rows.append((result.student, "total", f"{score:g}/{possible:g}", _status(result)))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, [*widths, 0], strict=True)).rstrip()
        for row in rows
    )


def _status(result: Grade) -> str:
    """``""`` for a graded submission, else e.g. ``"TIMEOUT: ran over 600 s"``."""
    if result.status == "graded":
        return ""
    return f"{result.status.upper()}: {_one_line(result.detail)}".rstrip(": ")


def _one_line(text: str, limit: int = 0) -> str:
    """``text`` on one line (whitespace runs made one space), cut to ``limit`` characters."""
    flat = re.sub(r"\s+", " ", text or "").strip()
    return flat[: limit - 1] + "…" if limit and len(flat) > limit else flat


def short_feedback(result: Grade) -> str:
    r"""One line for grades.csv: why it was not graded, then each lost exercise's message.

    Args:
        result: A submission's :class:`Grade`.

    Returns:
        ``""`` when every exercise passed; each part is cut to :data:`SHORT` characters.

    Example:
        >>> from bookbuild.grading._result import ExerciseScore as S
        >>> short_feedback(Grade("ada", Path("ada.ipynb"), "graded",
        ...                      {"ex1": S(1.0, 1.0, ""), "ex2": S(0.0, 1.0, "no\nall-reduce")}))
        'ex2: no all-reduce'
    """
    parts = [f"{result.status.upper()}: {_one_line(result.detail, SHORT)}"]
    parts = parts if result.status != "graded" else []
    parts += [
        f"{name}: {_one_line(score.feedback, SHORT)}"
        for name, score in result.scores.items()
        if score.feedback and score.points < score.possible
    ]
    return "; ".join(parts)


def csv_row(result: Grade, graded_at: str) -> dict[str, str]:
    """A submission's row of grades.csv, by column.

    Args:
        result: Its :class:`Grade`.
        graded_at: When, as ISO 8601 text.

    Returns:
        ``{"student": ..., "ex1": ..., "total": ..., ..., "graded_at": ...}``.

    Example:
        >>> from bookbuild.grading._result import ExerciseScore as S
        >>> csv_row(Grade("ada", Path("ada.ipynb"), "graded", {"ex1": S(1.0, 1.0, "")}),
        ...         "2026-01-05T10:00:00Z")  # doctest: +NORMALIZE_WHITESPACE
        {'student': 'ada', 'ex1': '1', 'total': '1', 'possible': '1', 'status': 'graded',
         'feedback': '', 'graded_at': '2026-01-05T10:00:00Z'}
    """
    score, possible = result.total
    return {
        "student": result.student,
        **{name: f"{s.points:g}" for name, s in result.scores.items()},
        "total": f"{score:g}",
        "possible": f"{possible:g}",
        "status": result.status,
        "feedback": short_feedback(result),
        "graded_at": graded_at,
    }


def merge_rows(old: list[dict[str, str]], new: list[dict[str, str]]) -> list[dict[str, str]]:
    """The rows of grades.csv after a grading: ``new`` replaces old rows of the same student.

    Args:
        old: The rows already in the file.
        new: The rows of this grading.

    Returns:
        One row per student, sorted by student.

    Example:
        >>> old = [{"student": "bob", "total": "0"}, {"student": "ada", "total": "0"}]
        >>> merge_rows(old, [{"student": "ada", "total": "2"}])
        [{'student': 'ada', 'total': '2'}, {'student': 'bob', 'total': '0'}]
    """
    rows = {row["student"]: row for row in old if row.get("student")}
    rows.update({row["student"]: row for row in new})
    return [rows[student] for student in sorted(rows)]


def csv_columns(rows: list[dict[str, str]]) -> list[str]:
    """grades.csv's header: ``student``, the exercises in number order, then :data:`FIXED`.

    Example:
        >>> csv_columns([{"student": "a", "ex10": "1", "ex2": "0", "total": "1"}])
        ['student', 'ex2', 'ex10', 'total', 'possible', 'status', 'feedback', 'graded_at']
    """
    found = {key for row in rows for key in row} - {"student", *FIXED}
    return ["student", *sorted(found, key=lambda k: (len(k), k)), *FIXED]


def write_grades_csv(grades: list[Grade], path: Path, *, graded_at: str | None = None) -> Path:
    """Merge the grades into ``path``: one row per student, a re-graded student's row replaced.

    Plain UTF-8 CSV with a header row (as Canvas and Gradescope import it); the file is
    written whole to a temporary file beside it and then renamed over it, so a reader never
    sees half a file.

    Args:
        grades: One :class:`Grade` per submission (one lab).
        path: The CSV file; created, or merged into when it exists.
        graded_at: When, as ISO 8601 text; now (UTC, to the second) by default.

    Returns:
        ``path``.

    Example:
        >>> import tempfile
        >>> from bookbuild.grading._result import ExerciseScore as S
        >>> out = Path(tempfile.mkdtemp()) / "grades.csv"
        >>> g = Grade("ada", Path("ada.ipynb"), "graded", {"ex1": S(1.0, 1.0, "")})
        >>> print(write_grades_csv([g], out, graded_at="2026-01-05T10:00:00Z").read_text())
        student,ex1,total,possible,status,feedback,graded_at
        ada,1,1,1,graded,,2026-01-05T10:00:00Z
        <BLANKLINE>
    """
    path = Path(path)
    when = graded_at or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    old = list(csv.DictReader(path.open(newline="", encoding="utf-8"))) if path.exists() else []
    rows = merge_rows(old, [csv_row(g, when) for g in grades])
    text = io.StringIO()
    writer = csv.DictWriter(text, csv_columns(rows), restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_atomically(path, text.getvalue())
    return path


def write_atomically(path: Path, text: str) -> None:
    r"""Write ``text`` (UTF-8) to a temporary file beside ``path``, then rename it over ``path``.

    Example:
        >>> import tempfile
        >>> out = Path(tempfile.mkdtemp()) / "a" / "note.md"
        >>> write_atomically(out, "hi\n"); out.read_text()
        'hi\n'
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
        out.write(text)
    os.chmod(temporary, 0o644)
    os.replace(temporary, path)


def feedback_markdown(result: Grade, chapter: str, graded_at: str = "") -> str:
    """A student's feedback file: the total, each exercise's points and message, how graded.

    Args:
        result: The student's :class:`Grade`.
        chapter: The chapter's name, e.g. ``"03_custom_training_loops"``.
        graded_at: When, as text (left out if empty).

    Returns:
        Markdown.

    Example:
        >>> from bookbuild.grading._result import ExerciseScore as S
        >>> g = Grade("ada", Path("ada.ipynb"), "graded",
        ...           {"ex1": S(1.0, 1.0, ""), "ex2": S(0.0, 1.0, "no all-reduce")},
        ...           isolation="user nobody, no network", choices={"replicas": [4, 3], "seed": 7})
        >>> print(feedback_markdown(g, "03_custom_training_loops"))
        # 03_custom_training_loops: ada
        <BLANKLINE>
        **Total: 1 / 2** (graded, from `ada.ipynb`)
        <BLANKLINE>
        ## ex1: 1 / 1
        <BLANKLINE>
        Passed.
        <BLANKLINE>
        ## ex2: 0 / 1
        <BLANKLINE>
        ```text
        no all-reduce
        ```
        <BLANKLINE>
        ## How it was graded
        <BLANKLINE>
        - replica counts: 4, 3; seed: 7
        - isolation: user nobody, no network
    """
    score, possible = result.total
    lines = [f"# {chapter}: {result.student}", ""]
    lines += [
        f"**Total: {score:g} / {possible:g}** ({result.status}, from `{result.submission.name}`)"
    ]
    if graded_at:
        lines[-1] += f", graded {graded_at}"
    if result.status != "graded":
        lines += ["", f"**{result.status.upper()}**: not every exercise could be graded.", ""]
        lines += ["```text", result.detail.strip() or "(no detail)", "```"]
    for name, exercise in result.scores.items():
        lines += ["", f"## {name}: {exercise.points:g} / {exercise.possible:g}", ""]
        if exercise.feedback:
            lines += ["```text", exercise.feedback.strip().replace("```", "'''"), "```"]
        else:
            lines.append("Passed." if exercise.points >= exercise.possible else "Not graded.")
    lines += ["", "## How it was graded", "", f"- {_choices(result.choices)}"]
    lines.append(f"- isolation: {_one_line(result.isolation) or 'not recorded'}")
    return "\n".join(lines)


def _choices(choices: dict) -> str:
    """What grading drew, as a reader reads it: ``replica counts: 4, 3; seed: 7``."""
    if not choices:
        return "grading-time choices: not recorded"
    shown = {"replicas": "replica counts", "seed": "seed"}
    parts = []
    for key, value in choices.items():
        text = ", ".join(map(str, value)) if isinstance(value, list | tuple) else str(value)
        parts.append(f"{shown.get(key, key)}: {text}")
    return "; ".join(parts)


def write_feedback(grades: list[Grade], folder: Path, chapter: str, graded_at: str = "") -> Path:
    """Write ``folder/<student>.md`` for each submission (replacing an older one).

    Args:
        grades: One :class:`Grade` per submission.
        folder: Where the files go (made if missing).
        chapter: The chapter's name.
        graded_at: When, as text.

    Returns:
        ``folder``.

    Example:
        >>> import tempfile
        >>> from bookbuild.grading._result import ExerciseScore as S
        >>> out = Path(tempfile.mkdtemp()) / "feedback"
        >>> g = Grade("ada", Path("ada.ipynb"), "graded", {"ex1": S(1.0, 1.0, "")})
        >>> sorted(p.name for p in write_feedback([g], out, "03_x").iterdir())
        ['ada.md']
    """
    folder = Path(folder)
    for result in grades:
        write_atomically(
            folder / f"{result.student}.md", feedback_markdown(result, chapter, graded_at) + "\n"
        )
    return folder
