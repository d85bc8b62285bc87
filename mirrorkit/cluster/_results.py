"""A worker's return value, made ready to cross to the notebook, or a clear refusal.

TensorFlow tensors and variables come back as NumPy arrays (``.numpy()`` in the worker), so
the notebook needs no TensorFlow to read them (unpickling a tensor imports it: tens of
seconds and hundreds of MiB), and a ``tf.Variable``, which cannot be pickled at all, comes
back too. ``LocalCluster.run(..., keep_tensors=True)`` keeps tensors as they are. A value
that still cannot cross is named, with what can and how.

Example:
    >>> from mirrorkit.cluster._results import crossable
    >>> crossable({"loss": 0.5, "steps": [1, 2]}, keep_tensors=False)
    {'loss': 0.5, 'steps': [1, 2]}
"""

from __future__ import annotations

import sys
from typing import Any

WHAT_CROSSES = (
    "Return plain values (numbers, strings, lists, dicts) and NumPy arrays: tensor.numpy(), "
    "model.get_weights(), float(loss); save bigger things to a file and return its path."
)


def _is_tensor(value: Any) -> bool:
    tf = sys.modules.get("tensorflow")
    if tf is not None and isinstance(value, tf.Tensor | tf.Variable):
        return True
    module = type(value).__module__ or ""
    return module.startswith("keras") and type(value).__name__ == "Variable"


def crossable(value: Any, keep_tensors: bool) -> Any:
    """``value`` with every tensor and variable in it (in lists, tuples, dicts) as NumPy."""
    if keep_tensors:
        return value
    if _is_tensor(value):
        try:
            return value.numpy()
        except Exception:  # noqa: BLE001 - a symbolic tensor has no value: left to the check
            return value
    if isinstance(value, dict):
        return type(value)((k, crossable(v, False)) for k, v in value.items())
    if isinstance(value, list | tuple):
        items = [crossable(v, False) for v in value]
        if hasattr(value, "_fields"):  # a named tuple
            return type(value)(*items)
        return type(value)(items)
    return value


def _culprit(value: Any, where: str, dumps) -> tuple[str, Any, Exception] | None:
    """(where, value, error) of the first part of ``value`` that cannot be pickled."""
    try:
        dumps(value)
        return None
    except Exception as error:  # noqa: BLE001 - any pickling failure names this part
        if isinstance(value, dict):
            parts = [(f"{where}[{k!r}]", v) for k, v in value.items()]
        elif isinstance(value, list | tuple):
            parts = [(f"{where}[{i}]", v) for i, v in enumerate(value)]
        else:
            parts = []
        for part_where, part in parts:
            found = _culprit(part, part_where, dumps)
            if found is not None:
                return found
        return where, value, error


def dump(result: Any, keep_tensors: bool) -> bytes:
    """The bytes of ``result`` (tensors as NumPy unless ``keep_tensors``).

    Raises:
        TypeError: The result cannot be pickled; the message names the part and what can.
    """
    import cloudpickle

    value = crossable(result, keep_tensors)
    try:
        return cloudpickle.dumps(value)
    except Exception:  # noqa: BLE001 - named below, part by part
        where, part, error = _culprit(value, "the result", cloudpickle.dumps) or (
            "the result",
            value,
            Exception("?"),
        )
        kind = type(part).__qualname__
        why = f"{type(error).__name__}: {error}"
        why = why if len(why) <= 70 else why[:67] + "..."
        raise TypeError(
            f"the result cannot be sent back to the notebook: {where} is a {kind} ({why}). "
            + WHAT_CROSSES
        ) from None
