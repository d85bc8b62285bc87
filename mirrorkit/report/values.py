"""Short, stable text for devices and array values, as every report writes them.

Example:
    >>> from mirrorkit.report.values import number, short_device
    >>> short_device("/job:localhost/replica:0/task:0/device:CPU:1"), number(0.5)
    ('CPU:1', '0.5')
"""

from __future__ import annotations

import math
import numbers
import re

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_TF_NOISE = (
    re.compile(r"\{\{function_node [^}]*\}\}\s*"),  # which kernel ran the op
    re.compile(r"\s*\[Op:[^\]]*\](\s*name:\s*\S*)?"),  # the op's name
)

SMALL = 8  # arrays with at most this many elements are shown in full


def short_device(name: str) -> str:
    """A device name without what every device here shares; another job's device keeps its task.

    Example:
        >>> from mirrorkit.report.values import short_device
        >>> short_device("/job:localhost/replica:0/task:0/device:CPU:1")
        'CPU:1'
        >>> short_device("/job:worker/replica:0/task:1/device:CPU:0")
        'worker:1/CPU:0'
    """
    if not name:
        return "?"
    parts = dict(p.split(":", 1) for p in name.strip("/").split("/") if ":" in p)
    device = name.rsplit("device:", 1)[-1] if "device:" in name else name
    job = parts.get("job")
    if job and job != "localhost":
        return f"{job}:{parts.get('task', '0')}/{device}"
    return device


def number(x) -> str:
    """A scalar as short text: booleans and whole numbers exactly, others to 4 digits.

    Example:
        >>> from mirrorkit.report.values import number
        >>> number(3.0), number(2 / 3), number(True), number(float("nan")), number(-float("inf"))
        ('3', '0.6667', 'True', 'nan', '-inf')
        >>> import numpy as np
        >>> number(np.bool_(True)), number(np.int64(7)), number(np.float32(0.1))
        ('True', '7', '0.1')
    """
    if isinstance(x, bool) or _numpy_bool(x):
        return str(bool(x))
    if isinstance(x, numbers.Integral):  # NumPy's integers register as Integral
        return str(int(x))
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.4g}"


def _numpy_bool(x) -> bool:
    """Whether ``x`` is NumPy's bool scalar, told without importing NumPy (not an Integral)."""
    return type(x).__module__ == "numpy" and type(x).__name__ in ("bool", "bool_")


def summarize(array) -> str:
    """The values themselves when few, else mean / min / max.

    Example:
        >>> import numpy as np
        >>> from mirrorkit.report.values import summarize
        >>> summarize(np.array([1.0, 2.5])), summarize(np.arange(100.0))
        ('[1, 2.5]', 'mean 49.5, min 0, max 99')
    """
    import numpy as np  # here, not at the top: the browser's modules import this one

    array = np.asarray(array)
    if array.size == 0:
        return "empty"
    if array.ndim == 0:
        return number(array[()])
    if array.size <= SMALL:
        return _nested(array)
    if array.dtype.kind in "biuf":
        return f"mean {number(array.mean())}, min {number(array.min())}, max {number(array.max())}"
    return f"{array.size} values"


def _nested(array) -> str:
    if array.ndim == 1:
        return "[" + ", ".join(number(x) for x in array) + "]"
    return "[" + ", ".join(_nested(sub) for sub in array) + "]"


def error_lines(error: BaseException) -> list[str]:
    r"""The lines of an error's message that say what went wrong, for a one-line summary.

    Terminal colour codes go; so do Keras's "Exception encountered when calling ..." header
    and the list of call arguments it appends ("Arguments received by ..."), and the
    kernel and op names TensorFlow puts around its own messages.

    Example:
        >>> from mirrorkit.report.values import error_lines
        >>> error_lines(ValueError("Exception encountered when calling Dense.call().\n\n"
        ...     "\x1b[1mInput 0 is incompatible\x1b[0m\n\nArguments received by Dense.call():"
        ...     "\n  x=tf.Tensor(shape=(2, 3))"))
        ['Input 0 is incompatible']
        >>> error_lines(ValueError("{{function_node __wrapped__Sub}} Incompatible shapes: "
        ...     "[8] vs. [8,5] [Op:Sub] name: "))
        ['Incompatible shapes: [8] vs. [8,5]']
    """
    text = _ANSI.sub("", str(error)).split("Arguments received by", 1)[0]
    for pattern in _TF_NOISE:
        text = pattern.sub("", text)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return [line for line in lines if not line.startswith("Exception encountered when calling")]
