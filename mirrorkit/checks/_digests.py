"""A value as data a judge in another process can compare bit for bit: shape, dtype, digest.

Example:
    >>> import numpy as np
    >>> digest(np.zeros((2, 1), "float32"))[:2]
    [[2, 1], 'float32']
    >>> digest(np.zeros(2, "float32")) == digest(np.zeros(2, "float64"))
    False
"""

from __future__ import annotations

import hashlib

import numpy as np


def digest(value) -> list:
    """``[shape, dtype, sha-256 of the bytes]`` of an array, a tensor or a variable's value."""
    if hasattr(value, "numpy"):
        value = value.numpy()
    array = np.ascontiguousarray(np.asarray(value))
    return [list(array.shape), array.dtype.name, hashlib.sha256(array.tobytes()).hexdigest()]
