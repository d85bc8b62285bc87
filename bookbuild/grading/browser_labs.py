"""Grading a browser lab's answers: the answers run apart, the verdict reads what they returned.

``python3 dev.py grade browser/05 submissions/`` grades each downloaded lab: the student's
process (:mod:`bookbuild.grading._lab_student`, sandboxed, seeing only the Python
environment) calls each answer function on inputs drawn at grading time and writes the
results as data; the verdict, here, gives the key's check a :class:`RecordedAnswer` that
only looks them up. docs/design/grading.md, "Browser labs", has the design.

Example:
    >>> RecordedAnswer([(3,)], [{"value": 4}])(3)
    4
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

from bookbuild import ROOT
from bookbuild.grading._queried import student_runs, unjudged
from bookbuild.grading._result import ExerciseScore, Grade
from bookbuild.grading.sandbox import isolation_here

LABS_FOLDER = ROOT / "book" / "browser"
EXERCISE_LIMIT = 60.0  # seconds one exercise's calls may take (the right ones take < 0.1 s)
INPUTS = 12  # inputs drawn per exercise
ANSWER_TAG = "lab-answer"
HAND_IN = f"hand in the lab as downloaded, its answer cells (tagged {ANSWER_TAG}) in place"
ISOLATION = (
    "answers run in the student's process on inputs drawn at grading time (it sees the "
    "Python environment only); the verdict read their results as data"
)


class RecordedAnswer:
    """The learner's function as the verdict sees it: its recorded results, looked up.

    Calling it with anything but the inputs it was recorded on, in order, raises.
    """

    def __init__(self, inputs: list[tuple], outputs: list[dict]) -> None:
        self._calls = list(zip(inputs, outputs, strict=True))
        self._next = 0

    def __call__(self, *args):
        """The next recorded result (or the error it raised), if ``args`` are the next input."""
        if self._next >= len(self._calls) or tuple(self._calls[self._next][0]) != args:
            raise LookupError(f"no recorded result for the input {args!r}")
        output = self._calls[self._next][1]
        self._next += 1
        if "value" in output:
            return output["value"]
        if output.get("ellipsis") is True:
            return Ellipsis
        if "raised" in output:
            from mirrorkit.checks.result import recorded_error

            raise recorded_error(output["raised"])
        raise TypeError(f"it returned a {output.get('unreadable', 'value')} the grader cannot read")


def find_lab(name: str) -> Path:
    """The browser lab ``name`` names: ``browser/05``, ``05_ring_all_reduce`` or a path.

    Raises:
        SystemExit: If no lab, or more than one, matches.

    Example:
        >>> find_lab("browser/05").name
        '05_ring_all_reduce.ipynb'
    """
    stem = Path(name.removeprefix("browser/")).stem
    found = sorted(LABS_FOLDER.glob(f"{stem}*.ipynb"))
    if len(found) != 1:
        known = ", ".join(f"browser/{p.stem}" for p in sorted(LABS_FOLDER.glob("*.ipynb")))
        raise SystemExit(f"[dev] no single browser lab is called {name!r}; the labs: {known}")
    return found[0]


def lab_keys(lab: Path) -> list[str]:
    """The exercises of a lab, in order: each answer cell's ``lab_exercise``.

    Example:
        >>> lab_keys(find_lab("browser/02"))
        ['02_batch_split/ex1', '02_batch_split/ex2']
    """
    import nbformat  # here: dev.py imports this module with the standard library alone

    cells = nbformat.read(lab, as_version=4).cells
    return [c.metadata["lab_exercise"] for c in cells if ANSWER_TAG in c.metadata.get("tags", [])]


def answer_cells(submission: Path, keys: list[str]) -> dict[str, str] | str:
    """The submission's answer cells by exercise, or why the notebook cannot be read.

    An answer cell is one tagged ``lab-answer``, as the lab has it; its ``lab_exercise`` says
    which exercise it answers (in their order where a copy lost that).
    """
    import nbformat

    try:
        cells = nbformat.read(submission, as_version=4).cells
    except Exception as error:  # noqa: BLE001 - a learner's file
        return f"the notebook could not be read: {type(error).__name__}: {error}"[:300]
    found = [c for c in cells if ANSWER_TAG in c.get("metadata", {}).get("tags", [])]
    named = {c.metadata.get("lab_exercise"): c.source for c in found}
    if not set(keys) <= set(named) and len(found) == len(keys):
        named = dict(zip(keys, (c.source for c in found), strict=True))
    return {key: named[key] for key in keys if isinstance(named.get(key), str)}


def grade_lab(
    lab: Path,
    submission: Path,
    *,
    timeout: float = 300.0,
    seed: int | None = None,
    exercise_limit: float = EXERCISE_LIMIT,
) -> Grade:
    """Grade one submission of a browser lab; never raises for a bad submission.

    Args:
        lab: The book's lab (``book/browser/*.ipynb``).
        submission: The learner's downloaded ``.ipynb``.
        timeout: Seconds all of this submission's runs may take together.
        seed: Draws the inputs; drawn itself when None (kept in the Grade's ``choices``).
        exercise_limit: Seconds one exercise's calls may take.

    Returns:
        The :class:`~bookbuild.grading.Grade`.
    """
    from mirrorkit.checks.lab_answers import EXERCISES, draw_inputs

    started = time.monotonic()
    keys = lab_keys(lab)
    seed = secrets.randbelow(2**31) if seed is None else seed
    base = {
        "student": Path(submission).stem,
        "submission": Path(submission),
        "choices": {"seed": seed, "inputs per exercise": INPUTS},
        "isolation": f"{isolation_here()}; {ISOLATION}",
    }
    sources = answer_cells(Path(submission), keys)
    if isinstance(sources, str):
        zeros = {f"ex{k}": ExerciseScore(0.0, 1.0, "not graded") for k in range(1, len(keys) + 1)}
        return Grade(status="error", scores=zeros, detail=sources, **base)
    inputs = {k: draw_inputs(key, seed, INPUTS) for k, key in enumerate(keys, 1)}
    exercises = [
        {"number": k, "source": sources[key], "name": EXERCISES[key].answer, "inputs": inputs[k]}
        for k, key in enumerate(keys, 1)
        if key in sources
    ]
    hide = (Path(lab).resolve().parent, Path(submission).resolve().parent)
    results, charged = student_runs(exercises, started + timeout, exercise_limit, hide)
    scores = {}
    for k, key in enumerate(keys, 1):
        missing = None if key in sources else f"no answer cell for {key}: {HAND_IN}"
        passed, feedback = _verdict(key, inputs[k], results.get(k), charged.get(k) or missing)
        scores[f"ex{k}"] = ExerciseScore(1.0 if passed else 0.0, 1.0, feedback)
    detail = "; ".join(f"exercise {k}: {why}" for k, why in sorted(charged.items()))
    seconds = round(time.monotonic() - started, 1)
    return Grade(status="graded", scores=scores, detail=detail, seconds=seconds, **base)


def _verdict(key: str, inputs: list, result, charged: str | None) -> tuple[bool, str]:
    """(passed, feedback) of one exercise from its recorded results: the key's check, here."""
    from mirrorkit.checks.lab_answers import check_answer

    why = unjudged(result, charged, len(inputs))
    if why is not None:
        return False, why
    verdict = check_answer(key, RecordedAnswer(inputs, result["outputs"]), inputs)
    return verdict.passed, "" if verdict.passed else str(verdict.message)
