"""Grading submitted notebooks in a sandbox that the submission cannot touch.

The design (what runs where, the threat model): docs/design/grading.md.

Example:
    >>> from pathlib import Path
    >>> g = Grade("ada", Path("ada.ipynb"), "graded", {"ex1": ExerciseScore(1.0, 1.0, "")})
    >>> g.total
    (1.0, 1.0)
"""

from bookbuild.grading._grader import grade, grade_variants
from bookbuild.grading._result import ExerciseScore, Grade
from bookbuild.grading.report import grades_table, write_grades_csv

__all__ = [
    "ExerciseScore",
    "Grade",
    "grade",
    "grade_variants",
    "grades_table",
    "write_grades_csv",
]
