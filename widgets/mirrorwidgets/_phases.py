"""Read step phases (mirrorkit.StepPhases, or dicts) into one checked form."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from mirrorkit.measure.step_trace import StepPhases as Phases  # the tracer's record, checked
from mirrorwidgets._records import (
    check_increasing,
    field,
    is_record,
    read_step,
    refuse_field,
    scalar,
)

TIMES = ("input_wait_s", "step_s", "all_reduce_s", "compute_s")
FIELDS = ("step", *TIMES)
PHASES = ("input_wait_s", "compute_s", "all_reduce_s")  # bottom to top of a bar
_HINT = (
    "Each step needs `step`, `input_wait_s`, `step_s`, `all_reduce_s` and `compute_s` (in "
    "seconds, compute_s + all_reduce_s == step_s), as attributes (mirrorkit's StepPhases) "
    "or dict keys."
)


def read_phases(record, where: str) -> Phases:
    """Check one step (``where`` names it): times finite and >= 0, compute + all-reduce == step."""
    if not is_record(record, FIELDS):
        raise TypeError(f"{where} is {type(record).__name__} {record!r}, not a step. {_HINT}")
    step = read_step(record, where, _HINT)
    where = f"{where} (step {step})"
    times = {}
    for name in TIMES:
        value = field(record, name, where, _HINT)
        value = float(scalar(value, name, where, "a time in seconds such as 0.01", "0.01"))
        if not (math.isfinite(value) and value >= 0):
            must, write = "a time >= 0 seconds", f"{name}=0.0"
            refuse_field(where, name, value, must=must, write=write, error=ValueError)
        times[name] = value
    parts = times["compute_s"] + times["all_reduce_s"]
    if not math.isclose(parts, times["step_s"], rel_tol=1e-6, abs_tol=1e-9):
        raise ValueError(
            f"{where}: compute_s + all_reduce_s = {parts!r} is not step_s = "
            f"{times['step_s']!r}; the phases of a step must add up to it."
        )
    return Phases(step, **times)


def read_steps(source, what: str) -> tuple[Phases, ...]:
    """Steps from a sequence of them, or from an object exposing ``.steps`` (a StepTrace)."""
    if not isinstance(source, Mapping) and hasattr(source, "steps"):
        source = source.steps
    if callable(getattr(source, "result", None)) and not isinstance(source, Iterable):
        raise TypeError(
            f"steps must be a StepTrace, got the {type(source).__name__} that measures it: "
            f"pass what it measured, {what}(tracer.result())."
        )
    if is_record(source, FIELDS):
        raise TypeError(
            f"steps must be a sequence of steps (or a StepTrace), got a single "
            f"{type(source).__name__}: wrap it in a list, {what}([step]), or add it with "
            "append(phases)."
        )
    if isinstance(source, str | bytes) or not isinstance(source, Iterable):
        raise TypeError(
            "steps must be a mirrorkit StepTrace (what StepTracer.result() returns) or a "
            f"sequence of StepPhases, got {type(source).__name__}. {_HINT}"
        )
    steps = tuple(read_phases(record, f"steps[{i}]") for i, record in enumerate(source))
    if not steps:
        raise ValueError(
            f"steps is empty, so {what} has nothing to draw; trace at least one step "
            "(or create the timeline empty and append() steps as training runs)."
        )
    check_order(steps)
    return steps


def check_order(steps: tuple[Phases, ...]) -> None:
    """Steps must increase, one bar each, in training order."""
    check_increasing(steps, "pass the steps in training order.")
