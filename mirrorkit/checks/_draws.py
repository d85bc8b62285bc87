"""A check's own numbers: drawn from a seed a test or a grader gives, else unpredictably.

Example:
    >>> from mirrorkit.checks._draws import draw
    >>> draw(3).random() == draw(3).random()
    True
"""

from __future__ import annotations

import random

from mirrorkit._validate import require_int


def draw(seed: int | None) -> random.Random:
    """A generator from ``seed``; ``None`` draws from the system, so no answer can predict it."""
    if seed is None:
        return random.SystemRandom()
    require_int("seed", seed, must="an int >= 0, or None", write="seed=7", minimum=0)
    return random.Random(seed)
