"""Play an all-reduce's schedule on per-replica values, and judge it against another.

Plain Python, no NumPy: the replay runs in the browser labs too (docs/design/browser-labs.md).
Each replica's values are an ``array.array`` whose sums round to the values' own dtype as
the devices' additions do (:mod:`mirrorkit._floats`); NumPy arrays, what TensorFlow
gives, are converted when a replay is made. Why two correct all-reduces can differ, and by
how much: docs/design/measure.md.

Example:
    >>> from array import array
    >>> from mirrorkit.measure.replay import AllReduceReplay
    >>> from mirrorkit.measure.schedules import schedule
    >>> inputs = (array("f", [1.0, 2.0]), array("f", [10.0, 20.0]))
    >>> replay = AllReduceReplay(schedule=schedule("collective", 2), devices=("a", "b"),
    ...                          inputs=inputs, strategy_result=(array("f", [11.0, 22.0]),) * 2)
    >>> replay.comparison.verdict
    'identical'
"""

from __future__ import annotations

import json
import math
import numbers
import os
from array import array
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from mirrorkit import _floats
from mirrorkit._validate import refuse, require_count
from mirrorkit.measure.schedules import Schedule, schedule
from mirrorkit.report.render import Line, Report, Reported
from mirrorkit.report.units import format_size
from mirrorkit.report.values import number

_FORMAT = "mirrorkit all-reduce replay"


@dataclass(frozen=True)
class Comparison:
    """The replay's result against the strategy's own all-reduce and the exact sum.

    Attributes:
        max_difference: Largest ``|replay - strategy|`` over elements and replicas.
        bound: The largest difference two summation orders may produce for that element.
        verdict: ``"identical"`` (bit for bit), ``"rounding"`` (differs within the bound),
            or ``"different"`` (beyond it somewhere).
        strategy_error: Largest ``|strategy - exact sum|`` divided by that element's
            own rounding bound; above 1 means the strategy's result is not the sum.
        replicas_agree: Whether every replica received the same result from the strategy.
    """

    max_difference: float
    bound: float
    verdict: str
    strategy_error: float
    replicas_agree: bool


@dataclass(frozen=True, repr=False)
class AllReduceReplay(Reported):
    """What :func:`replay_all_reduce` returns: the schedule, the values, the comparison.

    Attributes:
        schedule: The algorithm's steps (:class:`~mirrorkit.measure.schedules.Schedule`).
        devices: The replicas' devices.
        inputs: Each replica's values, as one flat vector (its tensors end to end): an
            ``array.array`` (``"f"`` for float16 and float32, ``"d"`` for float64). NumPy
            arrays or ``array.array`` values given here are converted to it.
        strategy_result: What the strategy's own all-reduce gave each replica (flat, as
            ``inputs``).
        dtype: ``"float16"``, ``"float32"`` or ``"float64"``: the values' dtype, in which
            every sum of the replay is rounded. ``None`` takes it from ``inputs`` (a NumPy
            array's dtype; ``array("f")`` is float32, ``array("d")`` float64).

    Example:
        >>> import numpy as np
        >>> from mirrorkit.measure.replay import AllReduceReplay
        >>> from mirrorkit.measure.schedules import schedule
        >>> inputs = tuple(np.array([1.0, 2.0, 3.0], np.float32) * (r + 1) for r in range(3))
        >>> replay = AllReduceReplay(schedule("one_device", 3), ("a", "b", "c"), inputs,
        ...                          (inputs[0] * 6,) * 3)
        >>> print(replay)  # doctest: +NORMALIZE_WHITESPACE
        one_device all-reduce of 3 float32 values (12 B) on 3 replicas: 2 steps
        step  phase      sends         busiest link
        1     reduce     1→0+, 2→0+    24 B
        2     broadcast  0→1=, 0→2=    24 B
        a→b+: replica a sends its tensor to replica b, which adds it to its own; a→b=: b keeps it in place of its own.
        Each replica sent at most 24 B and no link carried more than 24 B in one direction (2 x its tensor). Each step waits for its own busiest link; those, step by step, add up to 48 B (4 x): the bytes the cost model divides by the bandwidth.
        SAME: The replay equals the strategy's own all-reduce (one_device) bit for bit.
        >>> replay.inputs[1]
        array('f', [2.0, 4.0, 6.0])
    """  # noqa: E501

    schedule: Schedule
    devices: tuple[str, ...]
    inputs: tuple[array, ...]
    strategy_result: tuple[array, ...]
    dtype: str | None = None

    def __post_init__(self):
        dtype = self.dtype or _dtype_of(self.inputs[0] if len(self.inputs) else None)
        if dtype not in _floats.DTYPES:
            must = f"one of {', '.join(_floats.DTYPES)}"
            refuse("dtype", dtype, must=must, write='dtype="float32"', error=ValueError)
        for name in ("inputs", "strategy_result"):
            vectors = tuple(_floats.vector(_floats_of(x), dtype) for x in getattr(self, name))
            object.__setattr__(self, name, vectors)
        object.__setattr__(self, "devices", tuple(self.devices))
        object.__setattr__(self, "dtype", dtype)

    @property
    def replicas(self) -> int:
        """How many replicas took part."""
        return self.schedule.replicas

    @property
    def size(self) -> int:
        """How many values each replica holds."""
        return len(self.inputs[0])

    @property
    def itemsize(self) -> int:
        """Bytes of one value (2, 4 or 8)."""
        return _floats.ITEMSIZE[self.dtype]

    @property
    def nbytes(self) -> int:
        """Bytes of one replica's values."""
        return self.size * self.itemsize

    @property
    def chunk_bounds(self) -> list[tuple[int, int]]:
        """``(start, stop)`` of each chunk in the flat vector."""
        return self.schedule.chunk_bounds(self.size)

    @cached_property
    def comparison(self) -> Comparison:
        """The replay's result against the strategy's own and against the exact sum."""
        end = self.buffers(len(self.schedule.steps))
        return _compare(self.inputs, end, self.strategy_result, self.dtype)

    @cached_property
    def _changes(self) -> list:
        """Per step, the chunks it changed: ``(replica, chunk, values after the step)``."""
        return _play(self.schedule, self.inputs, self.dtype)

    def buffers(self, step: int) -> tuple[array, ...]:
        """Each replica's vector after ``step`` steps (0: the inputs, ``len(steps)``: the end).

        Example:
            >>> from array import array
            >>> from mirrorkit.measure.replay import AllReduceReplay
            >>> from mirrorkit.measure.schedules import schedule
            >>> inputs = (array("f", [1.0, 2.0]), array("f", [10.0, 20.0]))
            >>> replay = AllReduceReplay(schedule("collective", 2), ("CPU:0", "CPU:1"), inputs,
            ...                          (array("f", [11.0, 22.0]),) * 2)
            >>> replay.buffers(1)  # replica 0 sent chunk 0 to replica 1, and 1 sent chunk 1 to 0
            (array('f', [1.0, 22.0]), array('f', [11.0, 20.0]))
            >>> replay.buffers(2)[0], replay.comparison.verdict
            (array('f', [11.0, 22.0]), 'identical')
        """
        step = self._step(step)
        bounds = self.chunk_bounds
        out = [array(x.typecode, x) for x in self.inputs]
        for changes in self._changes[:step]:
            for replica, chunk, values in changes:
                out[replica][slice(*bounds[chunk])] = values
        return tuple(out)

    def holders(self, step: int) -> tuple[tuple[frozenset, ...], ...]:
        """After ``step`` steps, per replica and chunk: whose values that chunk sums so far.

        The schedule's :meth:`~mirrorkit.measure.schedules.Schedule.holders`, checked for range.

        Example:
            >>> from array import array
            >>> from mirrorkit.measure.replay import AllReduceReplay
            >>> from mirrorkit.measure.schedules import schedule
            >>> inputs = tuple(array("f", [1.0] * 3) for _ in range(3))
            >>> replay = AllReduceReplay(schedule("collective", 3), ("a", "b", "c"), inputs, inputs)
            >>> sorted(replay.holders(1)[1][0])  # replica 1, chunk 0: 0's values plus its own
            [0, 1]
        """
        return self.schedule.holders()[self._step(step)]

    def step_bytes(self) -> list[int]:
        """Per step, the bytes the busiest replica's link carries in one direction."""
        return self.schedule.step_link_bytes(self.size, self.itemsize)

    def sent_bytes(self) -> list[int]:
        """Bytes each replica sends over the whole all-reduce."""
        return self.schedule.sent_bytes(self.size, self.itemsize)

    def to_json(self, path: str | os.PathLike | None = None) -> str:
        """The replay's values as JSON text; also written to ``path`` if one is given.

        What :meth:`from_json` reads back into the same replay: the algorithm, the devices,
        the dtype, each replica's inputs and the strategy's result, every value written as
        the exact decimal of its double (so float32 values come back bit for bit).

        Example:
            >>> from array import array
            >>> from mirrorkit.measure.replay import AllReduceReplay
            >>> from mirrorkit.measure.schedules import schedule
            >>> inputs = (array("f", [0.1, 2.0]), array("f", [10.0, 20.0]))
            >>> replay = AllReduceReplay(schedule("collective", 2), ("CPU:0", "CPU:1"), inputs,
            ...                          (array("f", [10.1, 22.0]),) * 2)
            >>> again = AllReduceReplay.from_json(replay.to_json())
            >>> again.inputs == replay.inputs, again.schedule.algorithm, again.dtype
            (True, 'collective', 'float32')
        """
        data = {
            "format": _FORMAT,
            "algorithm": self.schedule.algorithm,
            "devices": list(self.devices),
            "dtype": self.dtype,
            "inputs": [x.tolist() for x in self.inputs],
            "strategy_result": [x.tolist() for x in self.strategy_result],
        }
        rows = ",\n".join(f" {json.dumps(key)}: {json.dumps(value)}" for key, value in data.items())
        text = "{\n" + rows + "\n}\n"  # one line per field: a replica's values on one line
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
        return text

    @classmethod
    def from_json(cls, source: str | os.PathLike) -> AllReduceReplay:
        """The replay :meth:`to_json` wrote: its JSON text, or the path of its file.

        Raises:
            TypeError: If ``source`` is neither text nor a path.
            ValueError: If the text is not a replay's JSON.
            FileNotFoundError: If the path names no file.
        """
        write = "AllReduceReplay.from_json('values.json'), a file replay.to_json wrote"
        if not isinstance(source, str | os.PathLike):
            refuse("source", source, must="JSON text or the path of a JSON file", write=write)
        if isinstance(source, str) and source.lstrip().startswith("{"):
            text = source
        else:
            text = Path(source).read_text(encoding="utf-8")
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            got = "JSON without its format" if isinstance(data, dict) else type(data).__name__
            must = f'the JSON of a replay (its "format" is {_FORMAT!r})'
            refuse("source", must=must, got=got, write=write, error=ValueError)
        return cls(
            schedule=schedule(data["algorithm"], len(data["devices"])),
            devices=tuple(data["devices"]),
            inputs=tuple(data["inputs"]),
            strategy_result=tuple(data["strategy_result"]),
            dtype=data["dtype"],
        )

    def _step(self, step: int) -> int:
        last = len(self.schedule.steps)
        write = f"a step from 0 (the inputs) to {last} (the result), e.g. step={last}"
        if isinstance(step, numbers.Integral) and not isinstance(step, bool):
            step = int(step)  # NumPy's integers too
        return require_count("step", step, minimum=0, maximum=last, write=write)

    def report(self) -> Report:
        """One row per step: what moves, and the bytes on that step's busiest link."""
        s = self.schedule
        n = s.replicas
        moved = self.step_bytes()
        rows = [
            (
                str(i + 1),
                step.phase,
                _transfers(step.transfers, s.chunks),
                format_size(b),
            )
            for i, (step, b) in enumerate(zip(s.steps, moved, strict=True))
        ]
        columns = tuple(
            (head, tuple(r[k] for r in rows))
            for k, head in enumerate(("step", "phase", "sends", "busiest link"))
        )
        headline = (
            f"{s.algorithm} all-reduce of {self.size:,} {self.dtype} values "
            f"({format_size(self.nbytes)}) on {n} replicas: {len(s.steps)} steps",
        )
        lines = [
            Line(
                "a→b c2+: replica a sends chunk 2 to replica b, which adds it to its own; "
                "a→b c2=: b keeps it in place of its own."
                if s.chunks > 1
                else "a→b+: replica a sends its tensor to replica b, which adds it to its own; "
                "a→b=: b keeps it in place of its own."
            ),
            self._bytes_line(moved),
            *self._verdict_lines(),
        ]
        return Report(headline=headline, columns=columns, lines=tuple(lines), tone=self._tone())

    def _bytes_line(self, moved: list[int]) -> Line:
        # Each step's busiest link may be another link: their sum is the cost model's byte
        # term (each step waits for its own busiest link), not the load of any one link.
        total = sum(moved)
        sent = self.sent_bytes()
        most = max(*sent, *self.schedule.received_bytes(self.size, self.itemsize))
        return Line(
            f"Each replica sent at most {format_size(max(sent))} and no link carried more "
            f"than {format_size(most)} in one direction ({most / self.nbytes:.3g} x its "
            f"tensor). Each step waits for its own busiest link; those, step by step, add up "
            f"to {format_size(total)} ({total / self.nbytes:.3g} x): the bytes the cost model "
            "divides by the bandwidth." + _bus_note(self.schedule)
        )

    def _tone(self) -> str:
        c = self.comparison
        return "good" if c.verdict != "different" and c.strategy_error <= 1 else "warn"

    def _verdict_lines(self) -> list[Line]:
        c = self.comparison
        name = f"the strategy's own all-reduce ({self.schedule.algorithm})"
        out = []
        if c.verdict == "identical":
            out.append(Line(f"The replay equals {name} bit for bit.", "good", "SAME"))
        elif c.verdict == "rounding":
            out.append(
                Line(
                    f"The replay differs from {name} by at most {number(c.max_difference)}, "
                    f"within what summing in another order can change "
                    f"({number(c.bound)} here): float addition is not associative, and "
                    "the two add the replicas' values in different orders.",
                    "good",
                    "SAME SUM",
                )
            )
        else:
            out.append(
                Line(
                    f"The replay differs from {name} by {number(c.max_difference)}, more "
                    f"than rounding can explain ({number(c.bound)}).",
                    "bad",
                    "DIFFERENT",
                )
            )
        lost = self.schedule.left_out()
        if lost:
            out.append(
                Line(
                    f"Neither result is the sum: replica {', '.join(map(str, lost))}'s values "
                    f"were never sent. TensorFlow's HierarchicalCopyAllReduce splits the "
                    f"replicas into two groups of {self.replicas // 2}, so with an odd count the "
                    "last one is in neither; use an even replica count or another algorithm.",
                    "bad",
                    "WRONG SUM",
                )
            )
        elif c.strategy_error > 1:
            out.append(
                Line(
                    "The strategy's result is not the sum of the replicas' values.",
                    "bad",
                    "WRONG SUM",
                )
            )
        if not c.replicas_agree:
            out.append(
                Line("The strategy gave different replicas different results.", "bad", "WARNING")
            )
        return out


def _dtype_of(values) -> str | None:
    """The dtype's name of a NumPy array or an ``array.array`` (``None`` for anything else)."""
    dtype = getattr(values, "dtype", None)  # a NumPy array, told without importing NumPy
    if dtype is not None:
        return str(dtype)
    if isinstance(values, array):
        return {"f": "float32", "d": "float64"}.get(values.typecode)
    return None


def _floats_of(values) -> list[float]:
    """A flat vector's values as Python floats (a NumPy array's by ``tolist``)."""
    if hasattr(values, "tolist") and not isinstance(values, array):
        values = values.reshape(-1).tolist() if hasattr(values, "reshape") else values.tolist()
    return [float(x) for x in values]


def _play(plan: Schedule, inputs: tuple[array, ...], dtype: str) -> list:
    """Run the schedule on the values: per step, the chunks it changed and their new values.

    Only changed chunks are kept (2 (n - 1) chunks per replica for the ring), not every
    replica's whole vector after every step. Every sum is rounded to ``dtype``.
    """
    bounds = plan.chunk_bounds(len(inputs[0]))
    buffers = [array(x.typecode, x) for x in inputs]
    changes = []
    for step in plan.steps:
        payload = [(t, buffers[t.source][slice(*bounds[t.chunk])]) for t in step.transfers]
        changed = {}
        for t, chunk in payload:
            part = slice(*bounds[t.chunk])
            buffers[t.target][part] = (
                _floats.add(buffers[t.target][part], chunk, dtype) if t.combine == "add" else chunk
            )
            changed[t.target, t.chunk] = None
        changes.append([(r, c, buffers[r][slice(*bounds[c])]) for r, c in changed])
    return changes


def _compare(inputs, replayed, result, dtype: str = "float32") -> Comparison:
    """The comparison of the replay's end ``replayed`` with the strategy's ``result``.

    Each is one flat vector per replica; every difference and sum is taken in double.
    """
    n = len(inputs)
    gamma = _gamma(n - 1, dtype)
    columns = [[float(x) for x in values] for values in zip(*inputs, strict=True)]
    exact = [sum(column) for column in columns]
    scale = [gamma * sum(abs(x) for x in column) + _floats.TINY[dtype] for column in columns]
    pairs = list(zip(replayed, result, strict=True))
    difference = [
        _max([abs(float(a[i]) - float(b[i])) for a, b in pairs]) for i in range(len(columns))
    ]
    identical = all(_equal(a, b) for a, b in pairs)
    within = all(d <= 2 * s for d, s in zip(difference, scale, strict=True))
    verdict = "identical" if identical else "rounding" if within else "different"
    error = [abs(float(r) - e) / s for r, e, s in zip(result[0], exact, scale, strict=True)]
    return Comparison(
        max_difference=_max(difference),
        bound=2 * max(scale),
        verdict=verdict,
        strategy_error=_max(error),
        replicas_agree=all(_equal(result[0], r) for r in result[1:]),
    )


def _max(values: list[float]) -> float:
    """The largest value, or NaN if any is NaN (as NumPy's ``max``)."""
    return math.nan if any(math.isnan(v) for v in values) else max(values)


def _equal(a, b) -> bool:
    """Whether two vectors hold equal values everywhere (NaN equals nothing, -0.0 equals 0.0)."""
    return len(a) == len(b) and all(float(x) == float(y) for x, y in zip(a, b, strict=True))


def _gamma(k: int, dtype: str) -> float:
    """Higham's ``gamma_k = k u / (1 - k u)``, ``u`` the dtype's unit roundoff.

    ``k`` additions in any order drift from the exact sum by at most ``gamma_k`` times the
    sum of the absolute values.
    """
    u = _floats.UNIT_ROUNDOFF[dtype]
    return k * u / (1 - k * u)


def _transfers(transfers, chunks: int) -> str:
    def one(t):
        arrow = "+" if t.combine == "add" else "="
        part = f" c{t.chunk}" if chunks > 1 else ""
        return f"{t.source}→{t.target}{part}{arrow}"

    return ", ".join(one(t) for t in transfers)


def _bus_note(plan: Schedule) -> str:
    if plan.algorithm not in ("collective", "nccl"):
        return ""
    n = plan.replicas
    return (
        f" That is 2(n-1)/n = {2 * (n - 1) / n:.3g} for n = {n}: the time is bounded by those "
        "bytes over the link's bandwidth, which is why busbw = algbw x 2(n-1)/n."
    )
