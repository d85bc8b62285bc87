"""The one home of argument checks: each refusal names the argument and says what to write.

Every message has one shape, ``"<name> must be <what>, got <value>: write <example>."``,
built by :func:`refuse`; the helpers below cover the arguments the package takes (flags,
counts, numbers, seconds, sizes, replica counts, choices, paths, functions, sequences and
strategies). This module imports no TensorFlow, so TensorFlow-free code can use it.

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
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NoReturn

_NO_VALUE = object()


def describe(value) -> str:
    """How a message shows the value it got: ``int 3``, ``the text 'x'``, ``the function f``."""
    if isinstance(value, str):
        return f"the text {value!r}"
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
        value: What was received; shown with :func:`describe` unless ``got`` says it.
        must: What the argument must be, e.g. ``"an int of at least 1"``.
        write: How a right call reads, e.g. ``"replicas=4"``.
        error: ``TypeError`` for the wrong kind of value, ``ValueError`` for a wrong value.
        got: Text shown in place of the value (e.g. ``"4 with only 2 devices"``).

    Example:
        >>> refuse("batch", "8", must="an int", write="batch=8")
        Traceback (most recent call last):
        ...
        TypeError: batch must be an int, got the text '8': write batch=8.
    """
    shown = got if got is not None else ("nothing" if value is _NO_VALUE else describe(value))
    raise error(f"{name} must be {must}, got {shown}: write {write}.")


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def require_flag(name: str, value, *, effect: str) -> bool:
    """``value`` if it is a real bool (the text ``'no'`` would count as True), or a TypeError.

    ``effect`` says what ``name=False`` does, e.g. ``"to print nothing"``.

    Example:
        >>> require_flag("quiet", "no", effect="to see all")
        Traceback (most recent call last):
        ...
        TypeError: quiet must be True or False, got the text 'no': write quiet=False to see all.
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
) -> int:
    """``value`` as an int from ``minimum`` to ``maximum`` (never a bool), or a clear error.

    ``whole_floats`` also accepts a float that is a whole number (``1e6``).

    Example:
        >>> require_count("workers", 0, write="workers=2")
        Traceback (most recent call last):
        ...
        ValueError: workers must be an int of at least 1, got int 0: write workers=2.
    """
    if whole_floats and isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        refuse(name, value, must="an int", write=write)
    if value < minimum or (maximum is not None and value > maximum):
        bound = f"of at least {minimum}" if maximum is None else f"from {minimum} to {maximum}"
        refuse(name, value, must=f"an int {bound}", write=write, error=ValueError)
    return value


def require_number(
    name: str,
    value,
    *,
    write: str,
    above: float | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
) -> float:
    """``value`` as a finite float, above ``above`` / from ``minimum`` to ``maximum``.

    Example:
        >>> require_number("rate", -1, write="rate=0.1", above=0)
        Traceback (most recent call last):
        ...
        ValueError: rate must be a number above 0, got int -1: write rate=0.1.
    """
    if not _is_number(value):
        refuse(name, value, must="a number", write=write)
    bounds = [f"above {above:g}" if above is not None else ""]
    bounds += [f"at least {minimum:g}" if minimum is not None else ""]
    bounds += [f"at most {maximum:g}" if maximum is not None else ""]
    wrong = not math.isfinite(value) or (above is not None and value <= above)
    wrong |= (minimum is not None and value < minimum) or (maximum is not None and value > maximum)
    if wrong:
        what = " and ".join(b for b in bounds if b) or "finite"
        refuse(name, value, must=f"a number {what}", write=write, error=ValueError)
    return float(value)


def require_seconds(name: str, value, *, write: str, allow_zero: bool = False) -> float:
    """``value`` as a float number of seconds above 0 (or at least 0), or a clear error.

    Example:
        >>> require_seconds("timeout", "1m", write="timeout=60")
        Traceback (most recent call last):
        ...
        TypeError: timeout must be a number of seconds, got the text '1m': write timeout=60.
    """
    if not _is_number(value):
        refuse(name, value, must="a number of seconds", write=write)
    if not (value >= 0 if allow_zero else value > 0) or math.isnan(value):
        bound = "0 or more" if allow_zero else "above 0"
        refuse(name, value, must=f"a number of seconds {bound}", write=write, error=ValueError)
    return float(value)


def require_size(name: str, value, *, write: str, minimum: int = 1, multiple_of: int = 1) -> int:
    """A size in bytes from an int or text such as ``"4KiB"`` (see :func:`parse_size`).

    Example:
        >>> require_size("size", "1KiB", write="size='4KiB'")
        1024
        >>> require_size("size", "6B", write="size=8", multiple_of=4)
        Traceback (most recent call last):
        ...
        ValueError: size must be a multiple of 4 bytes, got the text '6B' (6 bytes): write size=8.
    """
    from mirrorkit.report.units import parse_size

    try:
        nbytes = parse_size(value)
    except TypeError:
        refuse(name, value, must="a number of bytes or text such as '4KiB'", write=write)
    except ValueError as error:
        refuse(name, value, must=f"a size ({error})", write=write, error=ValueError)
    got = f"{describe(value)} ({nbytes} bytes)" if isinstance(value, str) else None
    if nbytes < minimum:
        must = f"at least {minimum} bytes"
        refuse(name, value, must=must, write=write, error=ValueError, got=got)
    if nbytes % multiple_of:
        must = f"a multiple of {multiple_of} bytes"
        refuse(name, value, must=must, write=write, error=ValueError, got=got)
    return nbytes


def require_replicas(name: str, value, *, available: int | None = None, write: str) -> int:
    """A replica count: an int of at least 1, and at most ``available`` devices if given.

    Example:
        >>> require_replicas("n", 8, available=4, write="n=4")
        Traceback (most recent call last):
        ...
        ValueError: n must be at most 4 (the devices there are), got int 8: write n=4.
    """
    value = require_count(name, value, write=write)
    if available is not None and value > available:
        must = f"at most {available} (the devices there are)"
        refuse(name, value, must=must, write=write, error=ValueError)
    return value


def require_choice(name: str, value, choices: Iterable, *, write: str | None = None):
    """``value`` if it is one of ``choices``, else a ValueError listing them.

    Example:
        >>> require_choice("policy", "FILES", ["AUTO", "DATA"])
        Traceback (most recent call last):
        ...
        ValueError: policy must be one of 'AUTO', 'DATA', got the text 'FILES': write policy='AUTO'.
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
        ValueError: name must be text that is not empty, got the text '': write name='run-1'.
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


def require_items(name: str, value, *, write: str, allow_empty: bool = False) -> list:
    """``value`` as a list: any iterable but text or a mapping; one item alone is refused.

    Example:
        >>> require_items("sizes", [], write="sizes=[4096]")
        Traceback (most recent call last):
        ...
        ValueError: sizes must be a list that is not empty, got list []: write sizes=[4096].
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
    if inspect.isroutine(strategy) or isinstance(strategy, str):
        got = describe(strategy)
    raise TypeError(
        f"strategy must be a tf.distribute.Strategy, got {got}: create one with "
        f"strategy = mk.make_strategy() and call {call}."
    )
