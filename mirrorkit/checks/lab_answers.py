"""The browser labs' exercises: each answer a plain function, each check a pure function.

A lab's answer cell (tagged ``lab-answer``) defines one function; its check cell calls
:func:`check` with it, which runs the answer on the exercise's own inputs, compares it with
the right results and names the mistake when one of the usual ones explains the answer. The
page's check reads those results from a table (``_lab_page.PAGE``), so the lab site carries
no answer key: the arithmetic that makes them (``_lab_exercises``) is not in its wheel.
:func:`check_answer` is the verdict for a grader: ``(answer, inputs)`` in, a
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
from mirrorkit.checks._lab_page import PAGE
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


def __getattr__(name: str):
    """``EXERCISES``, ``{key: Exercise}``: the answer key, loaded when first asked for.

    Graders and tests ask for it; the lab site's wheel does not hold it.
    """
    if name != "EXERCISES":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from mirrorkit.checks._lab_exercises import EXERCISE_TABLE

    exercises = {row[0]: Exercise(*row) for row in EXERCISE_TABLE}
    globals()["EXERCISES"] = exercises
    return exercises


def _exercises() -> dict[str, Exercise]:
    return globals().get("EXERCISES") or __getattr__("EXERCISES")


def _exercise(key: str) -> Exercise:
    exercises = _exercises()
    return exercises[require_choice("key", key, list(exercises))]


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
    exercise = _exercise(key)
    inputs = [tuple(args) for args in inputs]
    return _verdict(exercise.answer, answer, inputs, *_results(exercise, inputs))


def _results(exercise: Exercise, inputs: list[tuple]) -> tuple[list, list]:
    """The right results for ``inputs``, and ``[why, results]`` for each usual mistake."""
    wants = [exercise.right(*args) for args in inputs]
    wrongs = [[why, [_result(wrong, args) for args in inputs]] for wrong, why in exercise.mistakes]
    return wants, wrongs


def _result(function: Callable, args: tuple):
    """What a usual mistake gives for ``args``; Ellipsis, which no answer matches, if it raises."""
    try:
        return function(*args)
    except Exception:  # noqa: BLE001 - a mistake that has no result here matches nothing
        return Ellipsis


def page_table() -> dict:
    """The page's check data: per exercise, its inputs, the right results and each mistake's.

    ``_lab_page.PAGE`` holds this table; a test holds the two equal.

    Example:
        >>> page_table()["05_ring_all_reduce/ex1"]["outputs"][:2]
        [2, 6]
    """
    table = {}
    for key, exercise in _exercises().items():
        inputs = [tuple(args) for args in exercise.inputs]
        outputs, mistakes = _results(exercise, inputs)
        table[key] = {
            "answer": exercise.answer,
            "inputs": inputs,
            "outputs": outputs,
            "mistakes": mistakes,
        }
    return table


def _verdict(name: str, answer, inputs: list, wants: list, wrongs: list) -> CheckResult:
    """Try ``answer`` on each input against the right results and each mistake's."""
    if answer is None or answer is Ellipsis:
        return NOT_ATTEMPTED
    if not callable(answer):
        return CheckResult(False, f"{name} must be a function (def {name}(...)), got {answer!r}.")
    for k, (args, want) in enumerate(zip(inputs, wants, strict=True)):
        shown = f"{name}({', '.join(repr(a) for a in args)})"
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
                (text for text, results in wrongs if _same(got, results[k])),
                "not a mistake this check knows: compare with the lab's cells above.",
            )
            return CheckResult(False, f"{shown} gave {got!r}, not {want!r}: {why}")
    return CheckResult(True, f"{name} is right on all {len(inputs)} inputs tried.")


def check(key: str, answer) -> CheckResult:
    """The in-page verdict: ``answer`` tried on the exercise's own inputs.

    ``answer`` is the function the answer cell defines (``None`` if that cell has not run).

    Example:
        >>> check("02_batch_split/ex1", None).passed
        False
    """
    page = PAGE[require_choice("key", key, list(PAGE))]
    return _verdict(page["answer"], answer, page["inputs"], page["outputs"], page["mistakes"])


def draw_inputs(key: str, seed: int, count: int = 8) -> list[tuple]:
    """``count`` inputs for exercise ``key``, drawn from ``seed``: what a grader tries.

    Example:
        >>> draw_inputs("05_ring_all_reduce/ex1", 1, 3) == draw_inputs("05_ring_all_reduce/ex1", 1, 3)
        True
    """  # noqa: E501 - a doctest's line
    exercise = _exercise(key)
    count = require_count("count", count, maximum=1000, write="count=8")
    generator = random.Random(require_count("seed", seed, minimum=0, write="seed=1"))
    return [exercise.draw(generator) for _ in range(count)]
