"""float16 in plain Python: where a gradient rounds to zero and where it overflows to inf.

Python's ``struct`` module packs a float into IEEE 754 half precision (format ``"e"``),
rounding to the nearest float16, ties to even, as NumPy's ``float16`` does and as TensorFlow
casts a float32 to float16; it refuses a value that rounds past float16's largest number,
65504, which is where the cast gives ``inf``. Chapter 4 explains loss scaling with the range
of float16. This module imports no TensorFlow and no NumPy, so it runs where neither can.

Example:
    >>> from mirrorkit.training.float16 import to_float16
    >>> to_float16(1e-8), to_float16(0.1), to_float16(70000.0)
    (0.0, 0.0999755859375, inf)
"""

from __future__ import annotations

import math

from mirrorkit._floats import rounded
from mirrorkit._validate import require_number

FLOAT16_MAX = 65504.0
"""The largest finite float16."""

FLOAT16_SMALLEST_NORMAL = 2.0**-14
"""The smallest positive normal float16, about 6.1e-05; below it float16 loses digits."""

FLOAT16_SMALLEST = 2.0**-24
"""The smallest positive float16 (a subnormal), about 6e-08; half of it rounds to 0."""


def to_float16(value: float) -> float:
    """``value`` rounded to float16, as a Python float: ``inf`` past the range, 0 far below it.

    Args:
        value: A real number; ``inf``, ``-inf`` and ``nan`` pass through.

    Returns:
        The float16 nearest to ``value`` (ties to even), or ``inf`` with ``value``'s sign if
        it rounds beyond :data:`FLOAT16_MAX`.

    Raises:
        TypeError: If ``value`` is not a number.

    Example:
        >>> to_float16(65519.0), to_float16(65520.0), to_float16(-1e6)
        (65504.0, inf, -inf)
        >>> to_float16(2.0**-25), to_float16(3 * 2.0**-26) == FLOAT16_SMALLEST
        (0.0, True)
    """
    if isinstance(value, float) and math.isnan(value):
        return value
    value = require_number("value", value, write="value=0.001")
    return rounded(value, "float16")


def scaled_in_float16(gradient: float, scale: float) -> tuple[float, float]:
    """A gradient computed in float16 on the loss times ``scale``, and what dividing gives back.

    Mixed precision computes the gradient of ``scale * loss`` in float16, which is
    ``scale * gradient`` rounded to float16; the optimizer divides it by ``scale`` again (for a
    power of two, without rounding: float32 holds every float16 value). The first number is
    ``inf`` when the scaled gradient overflows, and the second is 0 when it underflowed.

    Args:
        gradient: The exact gradient of the unscaled loss.
        scale: The loss scale, above 0 (1 for no scaling).

    Returns:
        ``(scaled gradient in float16, that divided by scale)``.

    Raises:
        TypeError: If an argument is not a number.
        ValueError: If ``scale`` is not above 0.

    Example:
        >>> scaled_in_float16(1e-8, 1.0)
        (0.0, 0.0)
        >>> scaled_in_float16(1e-8, 2.0**15)
        (0.0003275871276855469, 9.997165761888027e-09)
        >>> scaled_in_float16(3.0, 2.0**15)
        (inf, inf)
    """
    gradient = require_number("gradient", gradient, write="gradient=0.001")
    scale = require_number("scale", scale, above=0, write="scale=2.0**15")
    in_float16 = to_float16(gradient * scale)
    return in_float16, in_float16 / scale
