"""What grading returns: a submission's :class:`Grade` and its :class:`ExerciseScore` s."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

STATUSES = ("graded", "error", "timeout", "tampered")


@dataclass(frozen=True)
class ExerciseScore:
    """One exercise's score in a submission.

    Attributes:
        points: 0 or 1.
        possible: 1.
        feedback: Why it lost the point; ``""`` on a pass.
    """

    points: float
    possible: float
    feedback: str


@dataclass(frozen=True)
class Grade:
    """A submission's grade: how grading went, and a score per exercise.

    Attributes:
        student: Who: the submission file's stem, or the id given.
        submission: The graded notebook.
        status: ``"graded"``, ``"error"``, ``"timeout"`` or ``"tampered"``.
        scores: ``{"ex1": ExerciseScore, ...}``: every exercise of the lab (0 when not graded).
        detail: Why, for an error, a timeout or tampering; ``""`` when graded.
        seconds: How long grading took.
        isolation: What the sandbox isolated, and what it could not.
        choices: What grading drew, to reproduce it: ``{"replicas": [4, 3], "seed": 1234}``.
    """

    student: str
    submission: Path
    status: str
    scores: dict[str, ExerciseScore]
    detail: str = ""
    seconds: float = 0.0
    isolation: str = ""
    choices: dict = field(default_factory=dict)

    @property
    def total(self) -> tuple[float, float]:
        """Points scored and possible, over all exercises."""
        return (
            sum(s.points for s in self.scores.values()),
            sum(s.possible for s in self.scores.values()),
        )
