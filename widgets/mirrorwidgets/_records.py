"""Read loss-scale records (objects with attributes, or dicts) into one checked form.

Plain Python numbers are read without NumPy (the browser labs have none); NumPy's and
TensorFlow's numbers through NumPy, imported only then.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NoReturn

from mirrorkit._validate import refuse

FIELDS = ("step", "loss_scale", "overflow")
_HINT = (
    "Each record needs `step`, `loss_scale` and `overflow` (and optionally `loss`), as "
    "attributes or dict keys, e.g. {'step': 0, 'loss_scale': 32768.0, 'overflow': False, "
    "'loss': 0.7}."
)


@dataclass(frozen=True)
class ScaleRecord:
    """One training step under dynamic loss scaling."""

    step: int
    loss_scale: float
    overflow: bool
    loss: float | None = None
    next_scale: float | None = None  # the scale after the step, when the record says it


def refuse_field(
    where: str, name: str, value, *, must: str, write: str, error=TypeError, got=None
) -> NoReturn:
    """Refuse one field of a record through :func:`mirrorkit._validate.refuse`'s template.

    The message names the record first: ``"<where>: <name> must be <must>, got <value>:
    write <write>."``; ``got`` replaces the value shown, as in ``refuse``.

    Example:
        >>> refuse_field("records[0]", "step", "0", must="a whole number", write="step=0")
        Traceback (most recent call last):
        ...
        TypeError: records[0]: step must be a whole number, got str '0': write step=0.
    """
    refuse(f"{where}: {name}", value, must=must, write=write, error=error, got=got)


def scalar(value, name: str, where: str, want: str, example: str) -> bool | int | float:
    """``value`` as one Python number; ``want`` says what it should be, ``example`` a right value.

    Example:
        >>> scalar(3, "step", "records[0]", "a whole number", "0")
        3
        >>> scalar("3", "step", "records[0]", "a whole number", "0")
        Traceback (most recent call last):
        ...
        TypeError: records[0]: step must be a whole number, got str '3': write step=0.
    """
    write = f"{name}={example}"
    if isinstance(value, bool):
        return value
    if isinstance(value, float):  # NumPy's float64 too: a subclass of float
        return float(value)
    if isinstance(value, int) and -(2**63) <= value < 2**64:  # what NumPy reads as one number
        return int(value)
    if isinstance(value, str | bytes | int) or value is None:  # an int beyond 64 bits too
        refuse_field(where, name, value, must=want, write=write)
    import numpy as np  # only for NumPy's, TensorFlow's and other array-like numbers

    try:
        array = np.asarray(value)
    except Exception:  # noqa: BLE001 - anything numpy cannot read is a bad field
        refuse_field(where, name, value, must=want, write=write, got=type(value).__name__)
    if array.size != 1:
        got = f"shape {array.shape}"
        must = "a single number"
        refuse_field(where, name, value, must=must, write=write, error=ValueError, got=got)
    array = array.reshape(())
    if array.dtype.kind not in "biuf":
        refuse_field(where, name, value, must=want, write=write)
    return array.item()


def field(record, name: str, where: str, hint: str, *, required: bool = True):
    """``record.name`` or ``record[name]``; a ValueError with ``hint`` if required and absent."""
    if isinstance(record, Mapping):
        if name in record:
            return record[name]
    elif hasattr(record, name):
        return getattr(record, name)
    if required:
        raise ValueError(f"{where} has no {name!r}. {hint}")
    return None


def is_record(record, fields: tuple[str, ...]) -> bool:
    """A dict, or an object with at least one of ``fields``."""
    return isinstance(record, Mapping) or any(hasattr(record, name) for name in fields)


def read_step(record, where: str, hint: str) -> int:
    """The record's whole-number ``step``."""
    step = field(record, "step", where, hint)
    step = scalar(step, "step", where, "a whole number such as 0", "0")
    if isinstance(step, bool) or (isinstance(step, float) and not step.is_integer()):
        must = "a whole number (the training step)"
        got = repr(step)  # a float or a bool, shown as it was written
        refuse_field(where, "step", step, must=must, write="step=0", got=got)
    return int(step)


def _field(record, name: str, where: str, *, required: bool = True):
    return field(record, name, where, _HINT, required=required)


def read_record(record, where: str) -> ScaleRecord:
    """Check one record (``where``: how messages name it) and return a :class:`ScaleRecord`."""
    if not is_record(record, FIELDS):
        raise TypeError(f"{where} is {type(record).__name__} {record!r}, not a record. {_HINT}")
    step = read_step(record, where, _HINT)
    where = f"{where} (step {step})"
    scale = _field(record, "loss_scale", where)
    scale = float(
        scalar(scale, "loss_scale", where, "a positive number such as 32768.0", "32768.0")
    )
    if not (math.isfinite(scale) and scale > 0):
        must = "a positive finite number (dynamic loss scales are powers of 2, such as 32768)"
        write = "loss_scale=32768.0"
        refuse_field(where, "loss_scale", scale, must=must, write=write, error=ValueError)
    after = _field(record, "next_scale", where, required=False)
    if after is not None:
        after = float(scalar(after, "next_scale", where, "a positive number", "65536.0"))
        if not (math.isfinite(after) and after > 0):
            must, write = "a positive finite number", "next_scale=65536.0"
            refuse_field(where, "next_scale", after, must=must, write=write, error=ValueError)
    flag = scalar(_field(record, "overflow", where), "overflow", where, "True or False", "False")
    if not isinstance(flag, bool) and flag not in (0, 1):
        got = repr(flag)  # a count such as 3: shown as written
        refuse_field(where, "overflow", flag, must="True or False", write="overflow=False", got=got)
    loss = _field(record, "loss", where, required=False)
    if loss is not None:
        # inf or NaN allowed: overflowing steps
        loss = float(scalar(loss, "loss", where, "a number (the step's loss) or None", "0.7"))
    return ScaleRecord(step, scale, bool(flag), loss, after)


def read_records(source, what: str) -> tuple[ScaleRecord, ...]:
    """Records from a sequence of them, or from an object exposing ``.records``."""
    if not isinstance(source, Mapping) and hasattr(source, "records"):
        source = source.records
    if is_record(source, FIELDS):
        raise TypeError(
            f"records must be a sequence of records, got a single {type(source).__name__}: "
            f"wrap it in a list, {what}([record]), or add it with append(record)."
        )
    if isinstance(source, str | bytes) or not isinstance(source, Iterable):
        raise TypeError(
            "records must be a sequence of records (or an object with .records, such as the "
            f"LossScaleHistory mirrorkit.run_loss_scale returns), got {type(source).__name__}. "
            + _HINT
        )
    records = tuple(read_record(record, f"records[{i}]") for i, record in enumerate(source))
    if not records:
        raise ValueError(
            f"records is empty, so {what} has nothing to draw; pass at least one step "
            "(or create the view without records and append() them as training runs)."
        )
    check_order(records)
    return records


def check_order(records: tuple[ScaleRecord, ...]) -> None:
    """Steps must increase, so that the loss scale can be drawn over them."""
    check_increasing(records, "pass the records in training order, one per step.")


def check_increasing(items, advice: str) -> None:
    """Raise ValueError, ending with ``advice``, unless the items' ``step`` increases."""
    for before, after in zip(items, items[1:], strict=False):
        if after.step <= before.step:
            raise ValueError(
                f"steps must increase, but step {after.step} comes after step {before.step}; "
                + advice
            )
