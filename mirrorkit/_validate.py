"""The one home of argument checks: each refusal names the argument and says what to write.

Every message has one shape, ``"<name> must be <what>, got <value>: write <example>."``,
built by :func:`refuse`; the helpers below cover the arguments the package takes (flags,
counts, numbers, seconds, sizes, choices, paths, functions, sequences and strategies). This
module imports no TensorFlow, so TensorFlow-free code can use it.

Example:
    >>> from mirrorkit._validate import require_count
    >>> require_count("repeats", 5, write="repeats=5")
    5
    >>> require_count("repeats", True, write="repeats=5")
    Traceback (most recent call last):
    ...
    TypeError: repeats must be an int, got bool True: write repeats=5.
"""

from __future__ import annotations

import inspect
import math
import numbers
import os
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NoReturn

_NO_VALUE = object()
_BINARY = {"": 1, "B": 1, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30}
_DECIMAL = {"KB": 10**3, "MB": 10**6, "GB": 10**9, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_SIZE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def describe(value) -> str:
    """How a message shows a value of the wrong kind: ``str '8'``, ``the function f``.

    Example:
        >>> describe("8"), describe(len), describe(int), describe([1] * 40)[:12]
        ("str '8'", 'the function len', 'the class int', 'list [1, 1, ')
    """
    if inspect.isclass(value):
        return f"the class {value.__name__}"
    if inspect.isroutine(value):
        return f"the function {getattr(value, '__name__', repr(value))}"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def refuse(
    name: str,
    value=_NO_VALUE,
    *,
    must: str,
    write: str,
    error: type[Exception] = TypeError,
    got: str | None = None,
) -> NoReturn:
    """Raise ``error("<name> must be <must>, got <got>: write <write>.")``.

    Args:
        name: The argument as the caller wrote it, e.g. ``"replicas"`` or ``"sizes[2]"``.
        value: What was received: shown with :func:`describe` for a TypeError (the kind is
            wrong) and as its ``repr`` for any other error (the kind is right, the value not).
        must: What the argument must be, e.g. ``"an int of at least 1"``.
        write: How a right call reads, e.g. ``"replicas=4"``.
        error: ``TypeError`` for the wrong kind of value, ``ValueError`` for a wrong value.
        got: Text shown in place of the value (e.g. ``"4 with only 2 devices"``).

    Example:
        >>> refuse("batch", "8", must="an int", write="batch=8")
        Traceback (most recent call last):
        ...
        TypeError: batch must be an int, got str '8': write batch=8.
    """
    if got is not None:
        shown = got
    elif value is _NO_VALUE:
        shown = "nothing"
    else:
        shown = describe(value) if issubclass(error, TypeError) else repr(value)
    raise error(f"{name} must be {must}, got {shown}: write {write}.")


def _is_number(value) -> bool:
    """A real number (NumPy's too, ``np.float32(0.1)``), but not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool | _numpy_bool())


def _numpy_bool() -> type:
    numpy = sys.modules.get("numpy")
    return numpy.bool_ if numpy is not None else bool


def require_flag(name: str, value, *, effect: str) -> bool:
    """``value`` if it is a real bool (the text ``'no'`` would count as True), or a TypeError.

    ``effect`` says what ``name=False`` does, e.g. ``"to print nothing"``.

    Example:
        >>> require_flag("quiet", "no", effect="to see all")
        Traceback (most recent call last):
        ...
        TypeError: quiet must be True or False, got str 'no': write quiet=False to see all.
    """
    if not isinstance(value, bool):
        refuse(name, value, must="True or False", write=f"{name}=False {effect}")
    return value


def require_count(
    name: str,
    value,
    *,
    write: str,
    minimum: int = 1,
    maximum: int | None = None,
    whole_floats: bool = False,
    why: str | None = None,
) -> int:
    """``value`` as an int from ``minimum`` to ``maximum`` (never a bool), or a clear error.

    ``whole_floats`` also accepts a float that is a whole number (``1e6``). ``why`` is the
    caller's reason for the range, e.g. a lab's ``"the lab holds 64 examples"``: given, every
    refusal (a wrong kind too) states the range and the reason, in the caller's own name.

    Example:
        >>> require_count("workers", 0, write="workers=2")
        Traceback (most recent call last):
        ...
        ValueError: workers must be an int of at least 1, got 0: write workers=2.
        >>> require_count("EXAMPLES", 9.5, write="EXAMPLES = 32", maximum=64, why="64 exist")
        Traceback (most recent call last):
        ...
        TypeError: EXAMPLES must be an int from 1 to 64 (64 exist), got float 9.5: write EXAMPLES = 32.
    """  # noqa: E501 - a doctest's expected line
    if whole_floats and isinstance(value, float) and value.is_integer():
        value = int(value)
    bound = f"of at least {minimum}" if maximum is None else f"from {minimum} to {maximum}"
    reason = f" ({why})" if why else ""
    if isinstance(value, bool) or not isinstance(value, int):
        refuse(name, value, must=f"an int {bound}{reason}" if why else "an int", write=write)
    if value < minimum or (maximum is not None and value > maximum):
        refuse(name, value, must=f"an int {bound}{reason}", write=write, error=ValueError)
    return value


def require_number(
    name: str,
    value,
    *,
    write: str,
    above: float | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
    why: str | None = None,
) -> float:
    """``value`` as a float (not NaN), above ``above`` / from ``minimum`` to ``maximum``.

    ``why`` is the caller's reason for the range: given, every refusal (a wrong kind too)
    states the range and the reason, as :func:`require_count` does.

    Example:
        >>> require_number("rate", -1, write="rate=0.1", above=0)
        Traceback (most recent call last):
        ...
        ValueError: rate must be a number above 0, got -1: write rate=0.1.
        >>> require_number("BASE", "0.1", write="BASE = 0.1", above=0, maximum=10, why="a rate")
        Traceback (most recent call last):
        ...
        TypeError: BASE must be a number above 0 and at most 10 (a rate), got str '0.1': write BASE = 0.1.
    """  # noqa: E501 - a doctest's expected line
    bounds = [f"above {above:g}" if above is not None else ""]
    bounds += [f"at least {minimum:g}" if minimum is not None else ""]
    bounds += [f"at most {maximum:g}" if maximum is not None else ""]
    what = " and ".join(b for b in bounds if b)
    must = f"a number {what}" if what else "a number, not NaN"
    must += f" ({why})" if why else ""
    if not _is_number(value):
        refuse(name, value, must=must if why else "a number", write=write)
    wrong = math.isnan(value) or (above is not None and value <= above)
    wrong |= (minimum is not None and value < minimum) or (maximum is not None and value > maximum)
    if wrong:
        refuse(name, value, must=must, write=write, error=ValueError)
    return float(value)


def require_seconds(name: str, value, *, write: str, allow_zero: bool = False) -> float:
    """``value`` as a float number of seconds above 0 (or at least 0), or a clear error.

    Example:
        >>> require_seconds("timeout", "1m", write="timeout=60")
        Traceback (most recent call last):
        ...
        TypeError: timeout must be a number of seconds, got str '1m': write timeout=60.
    """
    if not _is_number(value):
        refuse(name, value, must="a number of seconds", write=write)
    if not (value >= 0 if allow_zero else value > 0) or math.isnan(value):
        bound = "0 or more" if allow_zero else "above 0"
        refuse(name, value, must=f"a number of seconds {bound}", write=write, error=ValueError)
    return float(value)


def parse_size(size) -> int:
    """4096, "4096", "4KiB", "1 MiB", "16M" (binary), "1MB" (decimal) -> bytes as an int.

    Example:
        >>> parse_size("4KiB"), parse_size("1MB"), parse_size(2048.0)
        (4096, 1000000, 2048)
    """
    if isinstance(size, int) and not isinstance(size, bool):
        return size
    if isinstance(size, float) and size.is_integer():
        return int(size)
    if not isinstance(size, str):
        must = "a number of bytes or text like '4KiB'"
        refuse("a size", size, must=must, write="4096 or '4KiB'")
    match = _SIZE.match(size)
    unit = match.group(2).upper() if match else None
    factor = None if unit is None else (_BINARY.get(unit) or _DECIMAL.get(unit))
    if match is None or factor is None:
        raise ValueError(
            f"cannot read the size {size!r}: write bytes (4096) or a number with one of the "
            "units B, KiB, MiB, GiB (1024-based) or KB, MB, GB (1000-based), e.g. '4KiB'."
        )
    value = float(match.group(1)) * factor
    if not value.is_integer():
        raise ValueError(f"the size {size!r} is not a whole number of bytes.")
    return int(value)


def require_size(name: str, value, *, write: str, minimum: int = 1, multiple_of: int = 1) -> int:
    """A size in bytes from an int or text such as ``"4KiB"`` (see :func:`parse_size`).

    Example:
        >>> require_size("size", "1KiB", write="size='4KiB'")
        1024
        >>> require_size("size", "6B", write="size=8", multiple_of=4)
        Traceback (most recent call last):
        ...
        ValueError: size must be a multiple of 4 bytes, got '6B' (6 bytes): write size=8.
    """
    try:
        nbytes = parse_size(value)
    except TypeError:
        refuse(name, value, must="a number of bytes or text such as '4KiB'", write=write)
    except ValueError as error:
        refuse(name, value, must=f"a size ({error})", write=write, error=ValueError)
    got = f"{value!r} ({nbytes} bytes)" if isinstance(value, str) else None
    if nbytes < minimum:
        must = f"at least {minimum} bytes"
        refuse(name, value, must=must, write=write, error=ValueError, got=got)
    if nbytes % multiple_of:
        must = f"a multiple of {multiple_of} bytes"
        refuse(name, value, must=must, write=write, error=ValueError, got=got)
    return nbytes


def require_choice(name: str, value, choices: Iterable, *, write: str | None = None):
    """``value`` if it is one of ``choices``, else a ValueError listing them.

    Example:
        >>> require_choice("policy", "FILES", ["AUTO", "DATA"])
        Traceback (most recent call last):
        ...
        ValueError: policy must be one of 'AUTO', 'DATA', got 'FILES': write policy='AUTO'.
    """
    options = list(choices)
    if not any(value == option and type(value) is type(option) for option in options):
        listed = ", ".join(repr(option) for option in options)
        error = ValueError if isinstance(value, type(options[0])) else TypeError
        example = write or f"{name}={options[0]!r}"
        refuse(name, value, must=f"one of {listed}", write=example, error=error)
    return value


def require_text(name: str, value, *, write: str) -> str:
    """``value`` if it is text that is not empty, or a clear error.

    Example:
        >>> require_text("name", "", write="name='run-1'")
        Traceback (most recent call last):
        ...
        ValueError: name must be text that is not empty, got '': write name='run-1'.
    """
    if not isinstance(value, str):
        refuse(name, value, must="text", write=write)
    if not value.strip():
        refuse(name, value, must="text that is not empty", write=write, error=ValueError)
    return value


def require_path(name: str, value, *, write: str, exists: str | None = None) -> Path:
    """``value`` (text or a path) as a :class:`~pathlib.Path`.

    ``exists`` is ``"file"`` or ``"folder"`` when it must already be one.

    Example:
        >>> require_path("source", 3, write="source='b.json'")
        Traceback (most recent call last):
        ...
        TypeError: source must be a path (text or pathlib.Path), got int 3: write source='b.json'.
    """
    if not isinstance(value, str | os.PathLike) or (isinstance(value, str) and not value):
        refuse(name, value, must="a path (text or pathlib.Path)", write=write)
    path = Path(value)
    if exists == "file" and not path.is_file():
        refuse(name, value, must="an existing file", write=write, error=FileNotFoundError)
    if exists == "folder" and not path.is_dir():
        refuse(name, value, must="an existing folder", write=write, error=FileNotFoundError)
    return path


def require_callable(name: str, value, *, write: str) -> None:
    """A TypeError unless ``value`` can be called (a function, not what it returned).

    Example:
        >>> require_callable("model_fn", 3, write="model_fn=make_model")
        Traceback (most recent call last):
        ...
        TypeError: model_fn must be a function, got int 3: write model_fn=make_model.
    """
    if not callable(value):
        refuse(name, value, must="a function", write=write)


def require_model_fn(model_fn, *, write: str = "model_fn=make_model") -> None:
    """A TypeError unless ``model_fn`` is a function that builds a model (not a model).

    Example:
        >>> require_model_fn(None)
        Traceback (most recent call last):
        ...
        TypeError: model_fn must be a function that returns a NEW Keras model, got NoneType None: write model_fn=make_model.
    """  # noqa: E501
    keras = sys.modules.get("keras")  # not imported: nothing can be a Keras model yet
    if (keras is not None and isinstance(model_fn, keras.Model)) or not callable(model_fn):
        refuse("model_fn", model_fn, must="a function that returns a NEW Keras model", write=write)


def require_items(name: str, value, *, write: str, allow_empty: bool = False) -> list:
    """``value`` as a list: any iterable but text or a mapping; one item alone is refused.

    Example:
        >>> require_items("sizes", [], write="sizes=[4096]")
        Traceback (most recent call last):
        ...
        ValueError: sizes must be a list that is not empty, got []: write sizes=[4096].
    """
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        refuse(name, value, must="a list", write=write)
    items = list(value)
    if not items and not allow_empty:
        refuse(name, value, must="a list that is not empty", write=write, error=ValueError)
    return items


def require_strategy(strategy, call: str) -> None:
    """Raise a TypeError unless ``strategy`` is a ``tf.distribute.Strategy`` object.

    ``call`` is how the learner's call should read, e.g. ``"mk.preview_input(strategy,
    dataset)"``; the message quotes it. TensorFlow is read from ``sys.modules``: when it was
    never imported, nothing can be a strategy, and this module stays TensorFlow-free.

    Example:
        >>> require_strategy("mirrored", "mk.summarize(strategy)")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: strategy must be a tf.distribute.Strategy, got the text 'mirrored': ...
    """
    tf = sys.modules.get("tensorflow")
    base = getattr(getattr(tf, "distribute", None), "Strategy", None)
    if base is not None and isinstance(strategy, base):
        return
    if base is not None and isinstance(strategy, type) and issubclass(strategy, base):
        raise TypeError(
            f"strategy is the class {strategy.__name__}, not a strategy: create one first, "
            f"strategy = mk.make_strategy(), then call {call}."
        )
    if inspect.isroutine(strategy) and strategy.__name__ == "make_strategy":
        raise TypeError(
            f"strategy is the function make_strategy, not a strategy: call it "
            f"(strategy = mk.make_strategy()), then call {call}."
        )
    got = type(strategy).__name__
    if isinstance(strategy, str):
        got = f"the text {strategy!r}"
    elif inspect.isroutine(strategy):
        got = describe(strategy)
    raise TypeError(
        f"strategy must be a tf.distribute.Strategy, got {got}: create one with "
        f"strategy = mk.make_strategy() and call {call}."
    )


def require_numbers(name: str, value, *, write: str):
    """``value`` as a NumPy array of numbers (one number too), or a TypeError.

    Example:
        >>> require_numbers("expected", [1, 2], write="expected=3.0")
        array([1, 2])
        >>> require_numbers("expected", "0", write="expected=3")
        Traceback (most recent call last):
        ...
        TypeError: expected must be a number or an array of numbers, got str '0': write expected=3.
    """
    import numpy as np

    try:
        array = np.asarray(value)
    except ValueError:  # ragged nesting
        array = np.asarray(None)
    if array.dtype.kind not in "biuf":
        got = f"{type(value).__name__} {value!r}"  # the type, even for text: '0' is no number
        refuse(name, value, must="a number or an array of numbers", write=write, got=got)
    return array


def require_whole(name: str, value, *, write: str, minimum: int = 0) -> int:
    """``value`` as an int (NumPy's too, never a bool or a float) of at least ``minimum``.

    Example:
        >>> require_whole("epochs", 2.0, write="epochs=2")
        Traceback (most recent call last):
        ...
        TypeError: epochs must be a whole number, got float 2.0: write epochs=2.
        >>> require_whole("epochs", 0, write="epochs=2", minimum=1)
        Traceback (most recent call last):
        ...
        ValueError: epochs must be 1 or more, got 0: write epochs=2.
    """
    import operator

    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        got = f"{type(value).__name__} {value!r}"
        refuse(name, value, must="a whole number", write=write, got=got)
    if value < minimum:
        must = f"{minimum} or more"
        refuse(name, value, must=must, write=write, error=ValueError, got=str(value))
    return operator.index(value)


def _leaves(structure) -> list:
    """The arrays of a nested batch part, dict values in key order (as ``tf.nest`` walks)."""
    if isinstance(structure, Mapping):
        return [leaf for key in sorted(structure) for leaf in _leaves(structure[key])]
    if isinstance(structure, tuple | list):
        return [leaf for item in structure for leaf in _leaves(item)]
    return [structure]


_TEXT_FIXES = {
    "x": "keras.layers.StringLookup, to turn the text into numbers before the check",
    "y": "classes, y = np.unique(y, return_inverse=True), to map the labels to class ids first",
}


def require_batch(name: str, value, *, write: str) -> tuple:
    """``(x, y, examples)`` from one batch ``(x, y)`` of number arrays with one row per example.

    ``x`` and ``y`` may be nested (a dict of features); every array needs as many rows.

    Example:
        >>> import numpy as np
        >>> require_batch("batch", (np.ones((4, 2)), np.zeros(4)), write="batch=(x, y)")[2]
        4
        >>> require_batch("batch", np.ones(3), write="batch=(x[:8], y[:8])")
        Traceback (most recent call last):
        ...
        TypeError: batch must be one global batch (x, y), a pair of NumPy arrays with one row per example, got a ndarray: write batch=(x[:8], y[:8]).
    """  # noqa: E501 - a doctest's expected line
    import numpy as np

    if not isinstance(value, tuple | list) or len(value) != 2:
        got = f"a {type(value).__name__}"
        got += f" of {len(value)} items" if isinstance(value, tuple | list) else ""
        must = "one global batch (x, y), a pair of NumPy arrays with one row per example"
        refuse(name, value, must=must, write=write, got=got)
    rows = []
    for part in value:
        leaves = _leaves(part)
        lengths = {int(np.shape(leaf)[0]) if np.ndim(leaf) else -1 for leaf in leaves}
        if len(lengths) != 1 or -1 in lengths:
            must = "arrays with one row per example, and the same number of rows"
            got = f"shapes {[np.shape(leaf) for leaf in leaves]}"
            refuse(name, value, must=must, write=write, error=ValueError, got=got)
        rows.append(lengths.pop())
    if rows[0] != rows[1]:
        got = f"{rows[1]} rows (x has {rows[0]} examples but y has {rows[1]})"
        fewer = f"{name}=(x[:{min(rows)}], y[:{min(rows)}])"
        refuse("y", value, must="as long as x", write=fewer, error=ValueError, got=got)
    if rows[0] == 0:
        must = "a batch of at least one example"
        refuse(name, value, must=must, write=write, error=ValueError, got="an empty batch")
    for part, structure in zip("xy", value, strict=True):
        for leaf in _leaves(structure):
            array = np.asarray(leaf)
            if array.dtype.kind in "OSU":
                first = array.reshape(-1)[0] if array.size else ""
                first = first.decode() if isinstance(first, bytes) else str(first)
                got = f"text ({part} holds text such as {first!r})"
                must = "numbers: the model and the loss take numbers"
                refuse(part, value, must=must, write=_TEXT_FIXES[part], got=got)
    return value[0], value[1], rows[0]


def require_address(name: str, value, *, write: str) -> str:
    """``value`` if it is a ``'host:port'`` string with a numeric port, or a TypeError.

    Example:
        >>> require_address("chief", "10.0.0.1:2222", write="chief='10.0.0.1:2222'")
        '10.0.0.1:2222'
        >>> require_address("ps", "10.0.0.4", write="ps=['10.0.0.4:2222']")
        Traceback (most recent call last):
        ...
        TypeError: ps must be a 'host:port' string, got str '10.0.0.4': write ps=['10.0.0.4:2222'].
    """  # noqa: E501 - a doctest's expected line
    host, _, port = value.rpartition(":") if isinstance(value, str) else ("", "", "")
    if not host or not port.isdigit():
        refuse(name, value, must="a 'host:port' string", write=write)
    return value


def require_int(
    name: str,
    value,
    *,
    must: str,
    write: str,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int:
    """``value`` if it is an int (never a bool) from ``minimum`` to ``maximum``, or an error.

    Unlike :func:`require_count`, the caller says in ``must`` what the int is, for a wrong
    kind (a TypeError) and a wrong value (a ValueError) alike, e.g. ``"an int >= 1 (one
    worker each)"`` or ``"an int from 1 to 16"``.

    Example:
        >>> require_int("port", 0, must="an int from 1 to 65535", write="port=12345", minimum=1)
        Traceback (most recent call last):
        ...
        ValueError: port must be an int from 1 to 65535, got 0: write port=12345.
        >>> require_int("nodes", "2", must="an int >= 1 (one node each)", write="nodes=2")
        Traceback (most recent call last):
        ...
        TypeError: nodes must be an int >= 1 (one node each), got str '2': write nodes=2.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        refuse(name, value, must=must, write=write)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        refuse(name, value, must=must, write=write, error=ValueError)
    return value
