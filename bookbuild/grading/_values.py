"""Answers that cross as plain values: numbers, text, lists, and all-reduce measurements.

Where an exercise's answer is data (chapter 5: a predicted ranking, a ranking derived from a
benchmark, a growth ratio, the learner's own measurement), the student's process writes it
as JSON (:func:`describe`): Python's numbers, text, ``None``, lists, tuples and dicts of them,
an ``AllReduceBenchmark`` as the data its ``to_json`` writes and an ``AllReduceRecord`` as its
fields; anything else as its type's name, all these checks read of it. The judge rebuilds
real values from that data (:func:`rebuild`): a benchmark through
``AllReduceBenchmark.from_json``, which checks its format and records. At most
:data:`MAX_ITEMS` items in all, :data:`MAX_DEPTH` deep.

Example:
    >>> rebuild(describe([("ring", 0.5), None]))
    [('ring', 0.5), None]
"""

from __future__ import annotations

import dataclasses
import json

from bookbuild.grading._wire import ExportError, plain, stand_in, type_name

MAX_ITEMS = 4096  # items of one answer, nested ones included: a ranking holds a few
MAX_DEPTH = 6
MAX_TEXT = 2000  # characters of one text
_SEQUENCES = {"list": list, "tuple": tuple}


def describe(value, _budget: list | None = None, depth: int = 0) -> dict:
    """The data that stands for ``value`` (the student's process).

    Raises:
        ExportError: If it holds more than :data:`MAX_ITEMS` items or nests deeper than
            :data:`MAX_DEPTH`.
    """
    import numpy as np

    from mirrorkit.measure.benchmark import AllReduceBenchmark, AllReduceRecord

    budget = [MAX_ITEMS] if _budget is None else _budget
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_DEPTH:
        raise ExportError(f"it holds more than {MAX_ITEMS} items, or nests deeper than {MAX_DEPTH}")
    if value is Ellipsis:
        return {"kind": "ellipsis"}
    if isinstance(value, np.generic) and not isinstance(value, np.str_ | np.bytes_):
        value = value.item()
    if (record := plain(value, MAX_TEXT)) is not None:
        return record
    if type(value) in _SEQUENCES.values():
        items = [describe(item, budget, depth + 1) for item in value]
        return {"kind": type(value).__name__, "items": items}
    if type(value) is dict:
        pairs = [
            [describe(k, budget, depth + 1), describe(v, budget, depth + 1)]
            for k, v in value.items()
        ]
        return {"kind": "dict", "items": pairs}
    if type(value) is AllReduceBenchmark:
        return {"kind": "benchmark", "data": json.loads(value.to_json())}
    if type(value) is AllReduceRecord:
        return {"kind": "record", "data": dataclasses.asdict(value)}
    return {"kind": "object", "type": type_name(value)}


def rebuild(record, depth: int = 0):
    """The value ``record`` describes (the judge).

    Raises:
        ExportError: If the record is not one :func:`describe` writes.
    """
    from mirrorkit.measure.benchmark import AllReduceBenchmark, AllReduceRecord

    kind = record.get("kind") if isinstance(record, dict) else None
    items = record.get("items") if isinstance(record, dict) else None
    if depth > MAX_DEPTH:
        raise ExportError("the exported answer nests deeper than the grader reads")
    if kind == "ellipsis":
        return Ellipsis
    if kind == "python" and plain(record.get("value"), MAX_TEXT) is not None:
        return record["value"]
    if kind in _SEQUENCES and isinstance(items, list) and len(items) <= MAX_ITEMS:
        return _SEQUENCES[kind](rebuild(item, depth + 1) for item in items)
    if kind == "dict" and isinstance(items, list) and len(items) <= MAX_ITEMS:
        pairs = [pair for pair in items if isinstance(pair, list) and len(pair) == 2]
        if len(pairs) == len(items):
            try:
                return {rebuild(k, depth + 1): rebuild(v, depth + 1) for k, v in pairs}
            except TypeError as error:  # a key that cannot be one, e.g. a list
                raise ExportError(f"the exported dict has a key it cannot have: {error}") from None
    if kind == "benchmark" and isinstance(record.get("data"), dict):
        try:
            return AllReduceBenchmark.from_json(json.dumps(record["data"]))
        except (TypeError, ValueError) as error:
            raise ExportError(f"the exported benchmark is not one: {error}") from None
    fields = set(AllReduceRecord.__dataclass_fields__)
    data = record.get("data") if kind == "record" else None
    if (
        isinstance(data, dict)
        and set(data) == fields
        and all(plain(v, MAX_TEXT) is not None for v in data.values())
    ):
        return AllReduceRecord(**data)
    if kind == "object" and isinstance(record.get("type"), str):
        return stand_in(record["type"])
    raise ExportError("the exported answer is not one the grader reads")
