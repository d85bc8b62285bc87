"""bookbuild.grading.report: the table, grades.csv (merged by student) and the feedback files."""

import csv
from pathlib import Path

from bookbuild.grading import ExerciseScore, Grade
from bookbuild.grading.report import (
    feedback_markdown,
    grades_table,
    short_feedback,
    write_feedback,
    write_grades_csv,
)

PASS = ExerciseScore(1.0, 1.0, "")


def fail(why: str) -> ExerciseScore:
    return ExerciseScore(0.0, 1.0, why)


def graded(student: str, *scores: ExerciseScore, **extra) -> Grade:
    names = {f"ex{i}": s for i, s in enumerate(scores, 1)}
    return Grade(student, Path(f"/class/{student}.ipynb"), "graded", names, **extra)


def read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_a_regrade_replaces_that_students_row_and_keeps_the_others(tmp_path):
    out = tmp_path / "grades.csv"
    write_grades_csv(
        [graded("bob", PASS, fail("x")), graded("ada", fail("y"), fail("z"))],
        out,
        graded_at="2026-01-05T10:00:00Z",
    )
    write_grades_csv([graded("ada", PASS, PASS)], out, graded_at="2026-01-06T09:00:00Z")
    rows = read(out)
    assert [r["student"] for r in rows] == ["ada", "bob"]
    ada, bob = rows
    assert (ada["ex1"], ada["ex2"], ada["total"], ada["possible"]) == ("1", "1", "2", "2")
    assert ada["graded_at"] == "2026-01-06T09:00:00Z" and ada["feedback"] == ""
    assert (bob["total"], bob["feedback"], bob["graded_at"]) == (
        "1",
        "ex2: x",
        "2026-01-05T10:00:00Z",
    )


def test_grades_csv_has_the_columns_a_course_site_imports_and_no_paths(tmp_path):
    out = write_grades_csv([graded("zoë", PASS, fail("the loss is\nsummed"))], tmp_path / "g.csv")
    text = out.read_text(encoding="utf-8")
    assert text.splitlines()[0] == "student,ex1,ex2,total,possible,status,feedback,graded_at"
    (row,) = read(out)
    assert row["student"] == "zoë" and "/class/" not in text
    assert row["feedback"] == "ex2: the loss is summed"
    assert row["graded_at"].endswith("Z") and row["status"] == "graded"
    assert [p.name for p in tmp_path.iterdir()] == ["g.csv"]  # no temporary file left behind


def test_a_row_that_was_not_graded_says_why_and_scores_zero_of_all(tmp_path):
    late = Grade(
        "cy",
        Path("cy.ipynb"),
        "timeout",
        {"ex1": fail("not graded"), "ex2": fail("not graded")},
        "ran over 600 s",
    )
    (row,) = read(write_grades_csv([late], tmp_path / "grades.csv"))
    assert (row["status"], row["total"], row["possible"]) == ("timeout", "0", "2")
    assert row["feedback"].startswith("TIMEOUT: ran over 600 s; ex1: not graded")
    assert "TIMEOUT: ran over 600 s" in grades_table([late])


def test_long_feedback_is_cut_in_the_csv_but_whole_in_the_feedback_file():
    why = "word " * 100
    g = graded("ada", fail(why))
    assert len(short_feedback(g)) < 200 and short_feedback(g).endswith("…")
    assert why.strip() in feedback_markdown(g, "03_custom_training_loops")


def test_feedback_file_has_the_points_messages_choices_and_isolation(tmp_path):
    g = graded(
        "ada",
        PASS,
        fail("line 3: SyntaxError: invalid syntax"),
        isolation="ran as user nobody, no network",
        choices={"replicas": [4, 2], "seed": 1234},
        seconds=42.0,
    )
    folder = write_feedback([g], tmp_path / "feedback", "03_custom_training_loops", "2026-01-05")
    text = (folder / "ada.md").read_text()
    assert text.startswith("# 03_custom_training_loops: ada\n")
    assert "**Total: 1 / 2** (graded, from `ada.ipynb`), graded 2026-01-05" in text
    assert "## ex1: 1 / 1\n\nPassed." in text
    assert "## ex2: 0 / 1\n\n```text\nline 3: SyntaxError: invalid syntax\n```" in text
    assert "- replica counts: 4, 2; seed: 1234" in text
    assert "- isolation: ran as user nobody, no network" in text


def test_feedback_file_of_a_tampered_submission_says_what_was_changed(tmp_path):
    g = Grade(
        "eve",
        Path("eve.ipynb"),
        "tampered",
        {"ex1": fail("not graded")},
        "mirrorkit.checks.replica_values.check_sum was replaced",
    )
    text = feedback_markdown(g, "03_custom_training_loops")
    assert "**TAMPERED**" in text and "check_sum was replaced" in text


def test_the_table_has_a_row_per_exercise_and_a_total_per_student():
    table = grades_table([graded("ada", PASS, fail("no\nall-reduce")), graded("bo", PASS)])
    lines = table.splitlines()
    assert lines[0].split() == ["student", "exercise", "points", "feedback"]
    assert lines[2].split() == ["ada", "ex2", "0/1", "no", "all-reduce"]
    assert lines[3].split() == ["ada", "total", "1/2"] and lines[-1].split() == [
        "bo",
        "total",
        "1/1",
    ]
