"""Play an all-reduce's schedule on per-replica values in NumPy, and judge it against another.

Why two correct all-reduces can differ, and by how much: docs/design/measure.md.

Example:
    >>> import numpy as np
    >>> from mirrorkit.measure.replay import AllReduceReplay
    >>> from mirrorkit.measure.schedules import schedule
    >>> inputs = (np.array([1.0, 2.0], np.float32), np.array([10.0, 20.0], np.float32))
    >>> replay = AllReduceReplay(schedule=schedule("collective", 2), devices=("a", "b"),
    ...                          inputs=inputs, strategy_result=(inputs[0] + inputs[1],) * 2)
    >>> replay.comparison.verdict
    'identical'
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from mirrorkit._validate import require_count
from mirrorkit.measure.schedules import Schedule
from mirrorkit.report.render import Line, Report, Reported
from mirrorkit.report.units import format_size
from mirrorkit.report.values import number


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
        inputs: Each replica's values, as one flat vector (its tensors end to end).
        strategy_result: What the strategy's own all-reduce gave each replica (flat).

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
        Each replica sent at most 24 B = 2 x its tensor; the busiest link carried 48 B in all (4 x).
        SAME: The replay equals the strategy's own all-reduce (one_device) bit for bit.
    """  # noqa: E501

    schedule: Schedule
    devices: tuple[str, ...]
    inputs: tuple[np.ndarray, ...]
    strategy_result: tuple[np.ndarray, ...]

    @property
    def replicas(self) -> int:
        """How many replicas took part."""
        return self.schedule.replicas

    @property
    def nbytes(self) -> int:
        """Bytes of one replica's values."""
        return int(self.inputs[0].nbytes)

    @property
    def chunk_bounds(self) -> list[tuple[int, int]]:
        """``(start, stop)`` of each chunk in the flat vector."""
        return self.schedule.chunk_bounds(self.inputs[0].size)

    @cached_property
    def comparison(self) -> Comparison:
        """The replay's result against the strategy's own and against the exact sum."""
        end = self.buffers(len(self.schedule.steps))
        return _compare(self.inputs, end, self.strategy_result)

    @cached_property
    def _changes(self) -> list:
        """Per step, the chunks it changed: ``(replica, chunk, values after the step)``."""
        return _play(self.schedule, self.inputs)

    def buffers(self, step: int) -> tuple[np.ndarray, ...]:
        """Each replica's vector after ``step`` steps (0: the inputs, ``len(steps)``: the end).

        Example:
            >>> import numpy as np
            >>> from mirrorkit.measure.replay import AllReduceReplay
            >>> from mirrorkit.measure.schedules import schedule
            >>> inputs = (np.array([1.0, 2.0], np.float32), np.array([10.0, 20.0], np.float32))
            >>> replay = AllReduceReplay(schedule("collective", 2), ("CPU:0", "CPU:1"), inputs,
            ...                          (inputs[0] + inputs[1],) * 2)
            >>> replay.buffers(1)  # replica 0 sent chunk 0 to replica 1, and 1 sent chunk 1 to 0
            (array([ 1., 22.], dtype=float32), array([11., 20.], dtype=float32))
            >>> replay.buffers(2)[0], replay.comparison.verdict
            (array([11., 22.], dtype=float32), 'identical')
        """
        step = self._step(step)
        bounds = self.chunk_bounds
        out = [x.copy() for x in self.inputs]
        for changes in self._changes[:step]:
            for replica, chunk, values in changes:
                out[replica][slice(*bounds[chunk])] = values
        return tuple(out)

    def holders(self, step: int) -> tuple[tuple[frozenset, ...], ...]:
        """After ``step`` steps, per replica and chunk: whose values that chunk sums so far.

        The schedule's :meth:`~mirrorkit.measure.schedules.Schedule.holders`, checked for range.

        Example:
            >>> import numpy as np
            >>> from mirrorkit.measure.replay import AllReduceReplay
            >>> from mirrorkit.measure.schedules import schedule
            >>> inputs = tuple(np.ones(3, np.float32) for _ in range(3))
            >>> replay = AllReduceReplay(schedule("collective", 3), ("a", "b", "c"), inputs, inputs)
            >>> sorted(replay.holders(1)[1][0])  # replica 1, chunk 0: 0's values plus its own
            [0, 1]
        """
        return self.schedule.holders()[self._step(step)]

    def step_bytes(self) -> list[int]:
        """Per step, the bytes the busiest replica's link carries in one direction."""
        return self.schedule.step_link_bytes(self.inputs[0].size, self.inputs[0].itemsize)

    def sent_bytes(self) -> list[int]:
        """Bytes each replica sends over the whole all-reduce."""
        return self.schedule.sent_bytes(self.inputs[0].size, self.inputs[0].itemsize)

    def _step(self, step: int) -> int:
        last = len(self.schedule.steps)
        write = f"a step from 0 (the inputs) to {last} (the result), e.g. step={last}"
        step = int(step) if isinstance(step, np.integer) else step
        return require_count("step", step, minimum=0, maximum=last, write=write)

    def report(self) -> Report:
        """One row per step: what moves, and the bytes on the busiest link."""
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
        sent = max(self.sent_bytes())
        headline = (
            f"{s.algorithm} all-reduce of {self.inputs[0].size:,} {self.inputs[0].dtype} values "
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
            Line(
                f"Each replica sent at most {format_size(sent)} = "
                f"{sent / self.nbytes:.3g} x its tensor; the busiest link carried "
                f"{format_size(sum(moved))} in all ({sum(moved) / self.nbytes:.3g} x)."
                + _bus_note(s)
            ),
            *self._verdict_lines(),
        ]
        return Report(headline=headline, columns=columns, lines=tuple(lines), tone=self._tone())

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


def _play(plan: Schedule, inputs: tuple[np.ndarray, ...]) -> list:
    """Run the schedule on the values: per step, the chunks it changed and their new values.

    Only changed chunks are kept (2 (n - 1) chunks per replica for the ring), not every
    replica's whole vector after every step.
    """
    bounds = plan.chunk_bounds(inputs[0].size)
    buffers = [x.copy() for x in inputs]
    changes = []
    for step in plan.steps:
        payload = [(t, buffers[t.source][slice(*bounds[t.chunk])].copy()) for t in step.transfers]
        changed = {}
        for t, chunk in payload:
            part = slice(*bounds[t.chunk])
            buffers[t.target][part] = (
                buffers[t.target][part] + chunk if t.combine == "add" else chunk
            )
            changed[t.target, t.chunk] = None
        changes.append([(r, c, buffers[r][slice(*bounds[c])].copy()) for r, c in changed])
    return changes


def _compare(inputs, replayed, result) -> Comparison:
    n = len(inputs)
    gamma = _gamma(n - 1, inputs[0].dtype)
    stacked = np.stack([x.astype(np.float64) for x in inputs])
    exact = stacked.sum(axis=0)
    scale = gamma * np.abs(stacked).sum(axis=0) + float(np.finfo(inputs[0].dtype).tiny)
    difference = np.max(
        [
            np.abs(a.astype(np.float64) - b.astype(np.float64))
            for a, b in zip(replayed, result, strict=True)
        ],
        axis=0,
    )
    identical = all(np.array_equal(a, b) for a, b in zip(replayed, result, strict=True))
    within = bool(np.all(difference <= 2 * scale))
    verdict = "identical" if identical else "rounding" if within else "different"
    error = np.abs(result[0].astype(np.float64) - exact) / scale
    agree = all(np.array_equal(result[0], r) for r in result[1:])
    return Comparison(
        max_difference=float(difference.max()),
        bound=float(2 * scale.max()),
        verdict=verdict,
        strategy_error=float(error.max()),
        replicas_agree=agree,
    )


def _gamma(k: int, dtype) -> float:
    """Higham's ``gamma_k = k u / (1 - k u)``, ``u`` the dtype's unit roundoff.

    ``k`` additions in any order drift from the exact sum by at most ``gamma_k`` times the
    sum of the absolute values.
    """
    u = float(np.finfo(dtype).eps) / 2
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
