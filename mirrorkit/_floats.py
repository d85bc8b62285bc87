"""Floats and float vectors in plain Python, rounded as float16, float32 or float64 hardware rounds.

The all-reduce replay, the loss-scale rule and the warm-up run in the browser too, where
there is no NumPy. One value is rounded with ``struct`` (:func:`rounded`). A replica's values
are kept in an ``array.array``: ``"d"`` for float64, ``"f"`` for float32 and float16 (every
float16 value is a float32 value). Two values are added in Python's double and the sum is
rounded to the dtype: storing it into ``array("f")`` rounds to float32, and ``struct``'s
``"e"`` format rounds to float16. The exact sum of two float32 (or float16) values rounded
once to float32 (or float16) is what the hardware's own addition gives, and the double sum
of two such values is that exact sum rounded to 53 bits, which is at least twice the
precision plus two, so rounding it again to the dtype changes nothing: bit for bit the
devices' sums.

Example:
    >>> from mirrorkit._floats import add, vector
    >>> a, dtype = vector([0.1, 1e8], "float32"), "float32"
    >>> add(a, vector([0.2, 1.0], dtype), dtype).tolist()  # 1e8 + 1 rounds back to 1e8
    [0.30000001192092896, 100000000.0]
"""

from __future__ import annotations

import math
import struct
from array import array

DTYPES = ("float16", "float32", "float64")
ITEMSIZE = {"float16": 2, "float32": 4, "float64": 8}
# Unit roundoff u (half the machine epsilon) and the smallest normal value, per dtype.
UNIT_ROUNDOFF = {"float16": 2.0**-11, "float32": 2.0**-24, "float64": 2.0**-53}
TINY = {"float16": 2.0**-14, "float32": 2.0**-126, "float64": 2.0**-1022}
_TYPECODE = {"float16": "f", "float32": "f", "float64": "d"}
_STRUCT = {"float16": "<e", "float32": "<f", "float64": "<d"}


def vector(values, dtype: str) -> array:
    """``values`` (floats) as one replica's vector of ``dtype``, each rounded to it.

    Example:
        >>> from mirrorkit._floats import vector
        >>> vector([1 / 3], "float16").tolist(), vector([1 / 3], "float32").tolist()
        ([0.333251953125], [0.3333333432674408])
    """
    values = (rounded(x, "float16") for x in values) if dtype == "float16" else values
    return array(_TYPECODE[dtype], values)


def add(a: array, b: array, dtype: str) -> array:
    """``a + b`` element by element, each sum rounded to ``dtype`` as the hardware rounds it."""
    return vector([x + y for x, y in zip(a, b, strict=True)], dtype)


def rounded(x: float, dtype: str) -> float:
    """``x`` rounded to the nearest ``dtype`` value (ties to even), as a Python float.

    Beyond the dtype's largest value it is infinity with ``x``'s sign, as a cast gives.

    Example:
        >>> from mirrorkit._floats import rounded
        >>> rounded(0.1, "float16"), rounded(0.1, "float32"), rounded(70000.0, "float16")
        (0.0999755859375, 0.10000000149011612, inf)
    """
    code = _STRUCT[dtype]
    try:
        return struct.unpack(code, struct.pack(code, x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)
