"""An array as data another process reads back exactly: its dtype, shape and bytes.

A check that is asked in one process and judged in another (the grader's executor and its
verdict) sends what it read of the learner's value this way. Numbers keep their own dtype
where NumPy has it; another float (``longdouble``, ``bfloat16``) travels as float64 with its
name and NumPy's kind kept (``bfloat16``'s is ``V``, which the checks read as no number);
text travels as its dtype and shape only.

Example:
    >>> import numpy as np
    >>> back = from_data(as_data(np.array([1, 4], "int32")))
    >>> back, back.dtype.name
    (array([1, 4], dtype=int32), 'int32')
"""

from __future__ import annotations

import base64

import numpy as np

MAX_NUMBERS = 1 << 16  # numbers sent at most; a larger array travels as its shape alone
_EXACT = frozenset(
    {"bool", "float16", "float32", "float64"}
    | {f"{sign}int{bits}" for sign in ("", "u") for bits in (8, 16, 32, 64)}
)
_ML_FLOATS = ("bfloat16", "float8", "float6", "float4")


def as_data(value) -> dict:
    """``{"dtype", "shape", "kind", "data"}``: ``data`` is base64, or None when not sent.

    Example:
        >>> as_data(np.float32(0.5))["shape"]
        []
    """
    array = np.asarray(value)
    name = array.dtype.name
    floats = name.startswith(_ML_FLOATS)  # ml_dtypes' floats: NumPy's kind "V"
    numbers = (array.dtype.kind in "biuf" or floats) and array.size <= MAX_NUMBERS
    stored = None if not numbers else array if name in _EXACT else array.astype("float64")
    data = None if stored is None else base64.b64encode(np.ascontiguousarray(stored).tobytes())
    return {
        "dtype": name,
        "shape": [int(d) for d in array.shape],
        "kind": array.dtype.kind,
        "stored": None if stored is None else stored.dtype.name,
        "data": None if data is None else data.decode(),
    }


def from_data(record: dict) -> np.ndarray | None:
    """The array :func:`as_data` wrote, or None when its numbers were not sent.

    Raises:
        ValueError: If the record is not one :func:`as_data` writes.
    """
    stored, shape = record.get("stored"), record.get("shape")
    if stored is None or record.get("data") is None:
        return None
    if (
        stored not in _EXACT
        or not isinstance(shape, list)
        or any(type(d) is not int for d in shape)
    ):
        raise ValueError(f"not an array record: dtype {stored!r}, shape {shape!r}")
    if any(d < 0 for d in shape) or int(np.prod(shape)) > MAX_NUMBERS:
        raise ValueError(f"not an array record: shape {shape!r}")
    raw = base64.b64decode(str(record["data"]), validate=True)
    return np.frombuffer(raw, dtype=stored).reshape(shape).copy()
