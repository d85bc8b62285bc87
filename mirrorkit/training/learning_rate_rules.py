"""The learning rate of each step when replicas multiply the global batch: rules and warm-up.

Chapter 8's arithmetic: the linear scaling rule (the rate times the replica count), the
square-root rule proposed for Adam, and a linear warm-up from the one-replica rate to the
scaled one. With a warm-up, the numbers are the float32 values Keras 3's
``CosineDecay(base, decay_steps=1, alpha=1.0, warmup_target=target, warmup_steps=W)``
computes (what :func:`mirrorkit.training.scaling.linear_scaling_schedule` builds), bit for bit.
This module imports no TensorFlow, so it runs where TensorFlow cannot.

Example:
    >>> from mirrorkit.training.learning_rate_rules import scaled_learning_rate
    >>> scaled_learning_rate(0.1, 8)
    0.8
"""

from __future__ import annotations

from functools import partial

from mirrorkit._floats import rounded
from mirrorkit._validate import require_choice, require_number, require_whole

RULES = ("same", "linear", "sqrt")
"""The rules :func:`scaled_learning_rate` knows: the same rate, times k, times sqrt(k)."""

_float32_of = partial(rounded, dtype="float32")  # a float32 value, as Keras keeps it


def scaled_learning_rate(base_learning_rate: float, replicas: int, *, rule: str = "linear"):
    """The learning rate for ``replicas`` times the one-replica batch, by ``rule``.

    ``"same"`` keeps ``base_learning_rate``; ``"linear"`` multiplies it by ``replicas``
    (the linear scaling rule, for SGD); ``"sqrt"`` multiplies it by ``replicas ** 0.5``
    (the square-root rule proposed for Adam).

    Args:
        base_learning_rate: The rate that works on one replica, above 0.
        replicas: The replica count (how many times the global batch grew), 1 or more.
        rule: One of :data:`RULES`.

    Returns:
        The rate, a float.

    Raises:
        TypeError: If an argument is of the wrong kind.
        ValueError: If an argument is out of range or ``rule`` is unknown.

    Example:
        >>> [round(scaled_learning_rate(0.01, 8, rule=rule), 4) for rule in RULES]
        [0.01, 0.08, 0.0283]
    """
    require_number(
        "base_learning_rate", base_learning_rate, above=0, write="base_learning_rate=0.1"
    )
    require_whole("replicas", replicas, minimum=1, write="replicas=8")
    require_choice("rule", rule, RULES, write="rule='linear'")
    if rule == "same":
        return float(base_learning_rate)
    if rule == "linear":
        return base_learning_rate * replicas
    return base_learning_rate * replicas**0.5


def warmup_learning_rate(
    step: int, base_learning_rate: float, target_learning_rate: float, *, warmup_steps: int
) -> float:
    """The rate at ``step`` of a linear warm-up from the base rate to the target, in float32.

    Step 0 uses ``base_learning_rate``; the rate grows by equal amounts up to
    ``target_learning_rate`` at step ``warmup_steps`` and stays there. Each operation is
    rounded to float32 in Keras's order, ``(target - base) * (step / warmup_steps) + base``,
    so the result equals Keras 3's ``CosineDecay`` warm-up with ``alpha=1.0`` exactly.

    Args:
        step: The optimizer step, counted from 0.
        base_learning_rate: The rate at step 0, above 0.
        target_learning_rate: The rate from step ``warmup_steps`` on, above 0.
        warmup_steps: Steps of warm-up; 0 uses the target from step 0.

    Returns:
        The float32 rate, as a Python float.

    Raises:
        TypeError: If an argument is of the wrong kind.
        ValueError: If an argument is out of range.

    Example:
        >>> [round(warmup_learning_rate(s, 0.1, 0.8, warmup_steps=8), 3) for s in range(10)]
        [0.1, 0.188, 0.275, 0.362, 0.45, 0.538, 0.625, 0.713, 0.8, 0.8]
    """
    require_whole("step", step, write="step=0")
    require_number(
        "base_learning_rate", base_learning_rate, above=0, write="base_learning_rate=0.1"
    )
    require_number(
        "target_learning_rate", target_learning_rate, above=0, write="target_learning_rate=0.8"
    )
    require_whole("warmup_steps", warmup_steps, write="warmup_steps=8 (or 0 for none)")
    base, target = _float32_of(base_learning_rate), _float32_of(target_learning_rate)
    if step >= warmup_steps:
        return target
    fraction = _float32_of(_float32_of(step) / _float32_of(warmup_steps))
    rise = _float32_of(target - base)
    return _float32_of(_float32_of(rise * fraction) + base)


def learning_rates(
    base_learning_rate: float,
    replicas: int,
    steps: int,
    *,
    rule: str = "linear",
    warmup_steps: int = 0,
) -> list[float]:
    """The float32 learning rate of each of the first ``steps`` steps on ``replicas`` replicas.

    The target is :func:`scaled_learning_rate`; with ``warmup_steps`` the rate climbs to it
    from ``base_learning_rate`` as :func:`warmup_learning_rate` says. These are the rates the
    optimizer uses (it keeps its rate in float32).

    Args:
        base_learning_rate: The rate that works on one replica, above 0.
        replicas: The replica count, 1 or more.
        steps: How many steps to list, 0 or more.
        rule: One of :data:`RULES`.
        warmup_steps: Steps of warm-up, 0 or more.

    Returns:
        One float per step.

    Raises:
        TypeError: If an argument is of the wrong kind.
        ValueError: If an argument is out of range.

    Example:
        >>> [round(rate, 4) for rate in learning_rates(0.1, 4, 5, warmup_steps=3)]
        [0.1, 0.2, 0.3, 0.4, 0.4]
    """
    target = scaled_learning_rate(base_learning_rate, replicas, rule=rule)
    require_whole("steps", steps, write="steps=16")
    require_whole("warmup_steps", warmup_steps, write="warmup_steps=8 (or 0 for none)")
    return [
        warmup_learning_rate(step, base_learning_rate, target, warmup_steps=warmup_steps)
        for step in range(steps)
    ]
