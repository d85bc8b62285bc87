"""Keras 3's dynamic loss scale, step by step: when it halves, skips the update, and doubles.

The rule of ``keras.optimizers.LossScaleOptimizer`` (``loss_scale_optimizer.py`` in Keras
3.15): the scale starts at ``initial_scale`` with a counter of good steps at 0. A step whose
gradients hold an ``inf`` or ``nan`` is skipped, the scale is halved and the counter goes
back to 0. A finite step is applied (its gradients divided by the scale it used); if the
counter had reached ``dynamic_growth_steps - 1`` the scale doubles and the counter goes back
to 0, otherwise the counter grows by one. The scale is a float32 variable. Chapter 4 watches
the rule at work; this module imports no TensorFlow, so it runs where TensorFlow cannot.

Example:
    >>> from mirrorkit.training.dynamic_loss_scale import dynamic_loss_scale
    >>> [(s.scale, s.applied) for s in dynamic_loss_scale([True, False, True], initial_scale=8)]
    [(8.0, True), (8.0, False), (4.0, True)]
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial

from mirrorkit._floats import rounded
from mirrorkit._validate import require_count, require_flag, require_items, require_number
from mirrorkit.training.float16 import to_float16

_float32_of = partial(rounded, dtype="float32")  # a float32 value, as Keras keeps it


@dataclass(frozen=True)
class ScaleStep:
    """One step of the dynamic loss scale.

    Attributes:
        step: The step, counted from 0.
        scale: The loss scale this step multiplied the loss by.
        finite: Whether the step's gradients were all finite.
        applied: Whether the optimizer applied the update (it skips a step that overflowed).
        next_scale: The scale of the next step.
        good_steps: Keras's counter after the step: good steps since the scale last changed.

    Example:
        >>> ScaleStep(step=0, scale=8.0, finite=False, applied=False, next_scale=4.0,
        ...           good_steps=0).applied
        False
    """

    step: int
    scale: float
    finite: bool
    applied: bool
    next_scale: float
    good_steps: int


def next_scale(
    scale: float, good_steps: int, finite: bool, *, dynamic_growth_steps: int = 2000
) -> tuple[float, int]:
    """The scale and good-step counter after one step, by Keras's rule.

    Args:
        scale: The scale the step used, above 0.
        good_steps: The counter before the step, 0 or more.
        finite: Whether the step's gradients were all finite.
        dynamic_growth_steps: Good steps in a row after which the scale doubles, 1 or more.

    Returns:
        ``(next scale, next counter)``.

    Raises:
        TypeError: If an argument is of the wrong kind.
        ValueError: If an argument is out of range.

    Example:
        >>> next_scale(1024.0, 0, False)
        (512.0, 0)
        >>> next_scale(1024.0, 1, True, dynamic_growth_steps=2)
        (2048.0, 0)
        >>> next_scale(1024.0, 0, True, dynamic_growth_steps=2)
        (1024.0, 1)
    """
    scale = require_number("scale", scale, above=0, write="scale=32768.0")
    good_steps = require_count("good_steps", good_steps, minimum=0, write="good_steps=0")
    require_flag("finite", finite, effect="for a step that overflowed")
    require_count("dynamic_growth_steps", dynamic_growth_steps, write="dynamic_growth_steps=2000")
    if not finite:
        return _float32_of(scale * 0.5), 0
    if good_steps == dynamic_growth_steps - 1:
        return _float32_of(scale * 2.0), 0
    return scale, good_steps + 1


def dynamic_loss_scale(
    finite: Iterable[bool], *, initial_scale: float = 2.0**15, dynamic_growth_steps: int = 2000
) -> tuple[ScaleStep, ...]:
    """Each step's scale and whether it was applied, from whether its gradients were finite.

    Args:
        finite: Per step, whether its gradients were all finite (``False``: an overflow).
        initial_scale: The first scale (Keras's default is ``2.0**15``), above 0.
        dynamic_growth_steps: Good steps in a row after which the scale doubles (Keras's
            default is 2000).

    Returns:
        One :class:`ScaleStep` per step.

    Raises:
        TypeError: If an argument is of the wrong kind.
        ValueError: If an argument is out of range.

    Example:
        >>> steps = dynamic_loss_scale([True, True, True, False, True, True],
        ...                            dynamic_growth_steps=2)
        >>> [int(s.scale) for s in steps], [s.step for s in steps if not s.applied]
        ([32768, 32768, 65536, 65536, 32768, 32768], [3])
    """
    flags = require_items("finite", finite, write="finite=[True, True, False]", allow_empty=True)
    scale = _float32_of(
        require_number("initial_scale", initial_scale, above=0, write="initial_scale=2.0**15")
    )
    good_steps, steps = 0, []
    for step, ok in enumerate(flags):
        require_flag(f"finite[{step}]", ok, effect="for a step that overflowed")
        after, good_steps = next_scale(
            scale, good_steps, ok, dynamic_growth_steps=dynamic_growth_steps
        )
        steps.append(ScaleStep(step, scale, ok, ok, after, good_steps))
        scale = after
    return tuple(steps)


def scale_search(
    largest_gradients: Iterable[float],
    *,
    initial_scale: float = 2.0**15,
    dynamic_growth_steps: int = 2000,
) -> tuple[ScaleStep, ...]:
    """The dynamic scale when a step overflows if its largest gradient times the scale does.

    Each step's largest gradient (in absolute value) is multiplied by the scale in force and
    rounded to float16 (:func:`~mirrorkit.training.float16.to_float16`): ``inf`` is an
    overflow. The scale then settles near the largest power of two that keeps the gradients
    below 65504, the search the dynamic rule makes in real training.

    Args:
        largest_gradients: Per step, the largest absolute gradient of the unscaled loss.
        initial_scale: The first scale, above 0.
        dynamic_growth_steps: Good steps in a row after which the scale doubles.

    Returns:
        One :class:`ScaleStep` per step.

    Raises:
        TypeError: If an argument is of the wrong kind.
        ValueError: If an argument is out of range.

    Example:
        >>> steps = scale_search([3.0] * 4, dynamic_growth_steps=2)
        >>> [(int(s.scale), s.applied) for s in steps]
        [(32768, False), (16384, True), (16384, True), (32768, False)]
    """
    gradients = require_items(
        "largest_gradients",
        largest_gradients,
        write="largest_gradients=[0.5, 3.0]",
        allow_empty=True,
    )
    scale = _float32_of(
        require_number("initial_scale", initial_scale, above=0, write="initial_scale=2.0**15")
    )
    good_steps, steps = 0, []
    for step, gradient in enumerate(gradients):
        if isinstance(gradient, float) and math.isnan(gradient):
            ok = False  # a nan gradient is non-finite at any scale
        else:
            size = require_number(
                f"largest_gradients[{step}]", gradient, write="largest_gradients=[0.5, 3.0]"
            )
            ok = math.isfinite(to_float16(abs(size) * scale))
        after, good_steps = next_scale(
            scale, good_steps, ok, dynamic_growth_steps=dynamic_growth_steps
        )
        steps.append(ScaleStep(step, scale, ok, ok, after, good_steps))
        scale = after
    return tuple(steps)
