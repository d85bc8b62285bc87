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


_ARRAY = "__ndarray__"  # the key that marks an array in an encoded record; no record uses it


def encoded(value):
    """``value`` (dicts with text keys, lists, tuples, arrays, numbers, text) as JSON data.

    An array (or a NumPy number) becomes ``{"__ndarray__": as_data(array)}``; a tuple becomes
    a list. A record another process judges crosses this way.

    Example:
        >>> encoded({"g": (np.float32(2.0), 3)})["g"][1]
        3
    """
    if isinstance(value, dict):
        return {str(key): encoded(each) for key, each in value.items()}
    if isinstance(value, list | tuple):
        return [encoded(each) for each in value]
    if isinstance(value, np.ndarray | np.generic):
        return {_ARRAY: as_data(value)}
    return value


def decoded(value):
    """The record :func:`encoded` wrote, arrays read back with :func:`from_data`.

    Raises:
        ValueError: If an array in it is not one :func:`as_data` writes, or was not sent.

    Example:
        >>> decoded(encoded({"g": [np.arange(3)]}))["g"][0].tolist()
        [0, 1, 2]
    """
    if isinstance(value, dict):
        if set(value) == {_ARRAY} and isinstance(value[_ARRAY], dict):
            array = from_data(value[_ARRAY])
            if array is None:
                raise ValueError("an array of the record was too large to send")
            return array
        return {key: decoded(each) for key, each in value.items()}
    if isinstance(value, list):
        return [decoded(each) for each in value]
    return value
