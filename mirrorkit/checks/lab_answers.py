"""The browser labs' exercises: each answer a plain function, each check a pure function.

A lab's answer cell (tagged ``lab-answer``) defines one function; its check cell calls
:func:`check` with it, which runs the answer on the exercise's inputs, compares it with the
book's own arithmetic and names the mistake when one of the usual ones explains the answer.
:func:`check_answer` is the same verdict for a grader: ``(answer, inputs)`` in, a
:class:`~mirrorkit.checks.result.CheckResult` out, with inputs drawn by :func:`draw_inputs`.
Nothing here imports TensorFlow or NumPy: the checks run in the reader's browser.

Example:
    >>> from mirrorkit.checks.lab_answers import check
    >>> check("05_ring_all_reduce/ex1", lambda n: n - 1)
    NOT YET: ring_steps(2) gave 1, not 2: you counted only the reduce-scatter half; the ring hands the finished sums round in as many steps again.
"""  # noqa: E501 - a doctest's expected line

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

from mirrorkit._validate import require_choice, require_count
from mirrorkit.checks._lab_exercises import EXERCISE_TABLE
from mirrorkit.checks.result import NOT_ATTEMPTED, CheckResult, raised


@dataclass(frozen=True)
class Exercise:
    """One lab exercise: what the answer is called, its inputs, and the right results.

    Attributes:
        key: ``"<lab>/exK"``, e.g. ``"02_batch_split/ex1"``.
        answer: The name of the function the answer cell defines.
        right: The book's arithmetic: the right result for one input (a tuple of arguments).
        mistakes: The usual wrong answers, each a function and the sentence naming it.
        draw: Inputs drawn from a random generator, for grading.
        inputs: The inputs the in-page check tries.
    """

    key: str
    answer: str
    right: Callable
    mistakes: tuple[tuple[Callable, str], ...]
    draw: Callable[[random.Random], tuple]
    inputs: tuple[tuple, ...]


EXERCISES: dict[str, Exercise] = {row[0]: Exercise(*row) for row in EXERCISE_TABLE}


def _same(got, want) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return got is want
    if isinstance(want, list | tuple):
        return (
            isinstance(got, list | tuple)
            and len(got) == len(want)
            and all(_same(g, w) for g, w in zip(got, want, strict=True))
        )
    if isinstance(want, int | float) and isinstance(got, int | float):
        return math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9)
    return got == want


def _call(function: Callable, args: tuple):
    return function(*args)


def check_answer(key: str, answer, inputs) -> CheckResult:
    """The verdict on ``answer`` for exercise ``key`` over ``inputs`` (a list of argument tuples).

    Example:
        >>> check_answer("05_ring_all_reduce/ex1", lambda n: 2 * (n - 1), [(3,), (8,)])
        PASS: ring_steps is right on all 2 inputs tried.
    """
    exercise = EXERCISES[require_choice("key", key, list(EXERCISES))]
    if answer is None or answer is Ellipsis:
        return NOT_ATTEMPTED
    if not callable(answer):
        return CheckResult(
            False,
            f"{exercise.answer} must be a function (def {exercise.answer}(...)), got {answer!r}.",
        )
    tried = 0
    for args in inputs:
        shown = f"{exercise.answer}({', '.join(repr(a) for a in args)})"
        want = exercise.right(*args)
        try:
            got = _call(answer, args)
        except Exception as error:  # the learner's code: its error is the feedback
            return CheckResult(False, f"{shown} raised {raised(error)}")
        if got is Ellipsis:
            return NOT_ATTEMPTED
        if got is None:
            return CheckResult(
                False, f"{shown} returned None: finish the function with return ... its result."
            )
        if not _same(got, want):
            why = next(
                (text for wrong, text in exercise.mistakes if _same(got, wrong(*args))),
                "not a mistake this check knows: compare with the lab's cells above.",
            )
            return CheckResult(False, f"{shown} gave {got!r}, not {want!r}: {why}")
        tried += 1
    return CheckResult(True, f"{exercise.answer} is right on all {tried} inputs tried.")


def check(key: str, answer) -> CheckResult:
    """The in-page verdict: ``answer`` tried on the exercise's own inputs.

    ``answer`` is the function the answer cell defines (``None`` if that cell has not run).

    Example:
        >>> check("02_batch_split/ex1", None).passed
        False
    """
    return check_answer(key, answer, EXERCISES[require_choice("key", key, list(EXERCISES))].inputs)


def draw_inputs(key: str, seed: int, count: int = 8) -> list[tuple]:
    """``count`` inputs for exercise ``key``, drawn from ``seed``: what a grader tries.

    Example:
        >>> draw_inputs("05_ring_all_reduce/ex1", 1, 3) == draw_inputs("05_ring_all_reduce/ex1", 1, 3)
        True
    """  # noqa: E501 - a doctest's line
    exercise = EXERCISES[require_choice("key", key, list(EXERCISES))]
    count = require_count("count", count, maximum=1000, write="count=8")
    generator = random.Random(require_count("seed", seed, minimum=0, write="seed=1"))
    return [exercise.draw(generator) for _ in range(count)]
