"""What a step tracer measured: each step's phases, and the trace they make together.

Example:
    >>> from mirrorkit.measure.step_trace import StepPhases, StepTrace
    >>> phases = StepPhases(step=0, input_wait_s=0.001, step_s=0.010, all_reduce_s=0.002,
    ...                     compute_s=0.008)
    >>> StepTrace(steps=(phases,), step_times_s=(0.010,), input_waits_s=(0.001,),
    ...           replicas=2).median("compute_s")
    0.008
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from mirrorkit.measure.trace_events import trace_events, write_trace
from mirrorkit.report.render import Line, Report, Reported
from mirrorkit.report.units import format_percent, format_seconds

_PHASES = ("input_wait_s", "compute_s", "all_reduce_s")


@dataclass(frozen=True)
class StepPhases:
    """The time of one profiled training step, split into phases (all in seconds).

    Attributes:
        step: The step's index, from 0, among all steps the tracer timed.
        input_wait_s: Measured wait for the step's batch (``next(iterator)``; 0 in ``fit``).
        step_s: Measured wall time of the step itself.
        all_reduce_s: Measured by TensorFlow's profiler: wall time inside the step during
            which at least one replica was running an all-reduce op.
        compute_s: ``step_s - all_reduce_s``.

    Example:
        >>> from mirrorkit.measure.step_trace import StepPhases
        >>> phases = StepPhases(step=0, input_wait_s=0.001, step_s=0.010, all_reduce_s=0.002,
        ...                     compute_s=0.008)
        >>> phases.total_s
        0.011
    """

    step: int
    input_wait_s: float
    step_s: float
    all_reduce_s: float
    compute_s: float

    @property
    def total_s(self) -> float:
        """Input wait plus step: the sum of the three phases."""
        return self.input_wait_s + self.step_s


class AllReduceSpan(NamedTuple):
    """One all-reduce op's execution inside a profiled step, as the profiler recorded it.

    Attributes:
        step: The step's index.
        start_s: When the op started, in seconds from the step's start (clipped to the step).
        end_s: When it ended, likewise.
        kind: The op type counted as all-reduce (``"CollectiveReduceV2"``, ``"AddN"``...).
        replica: The replica whose device ran it, or ``None`` when the profile does not
            say (see :mod:`~mirrorkit.measure._profiler`).
        evidence: How it was attributed to its replica, or why it was not.

    Example:
        >>> from mirrorkit.measure.step_trace import AllReduceSpan
        >>> span = AllReduceSpan(step=3, start_s=0.004, end_s=0.005, kind="CollectiveReduceV2",
        ...                      replica=1, evidence="name scope")
        >>> round(span.end_s - span.start_s, 6), span.replica
        (0.001, 1)
    """

    step: int
    start_s: float
    end_s: float
    kind: str
    replica: int | None
    evidence: str = ""


@dataclass(frozen=True, repr=False)
class StepTrace(Reported):
    """What :meth:`~mirrorkit.measure.tracing.StepTracer.result` returns.

    Attributes:
        steps: One :class:`StepPhases` per *profiled* step, in step order.
        step_times_s: The measured wall time of *every* step (index = step).
        input_waits_s: The measured input wait of every step (index = step).
        replicas: Replicas in sync.
        counted: The op types counted as all-reduce in the profiled steps.
        notes: Anything the reader should know about this trace.
        profiler_s: Seconds spent starting and stopping the profiler, outside the steps
            (the profiled steps' own slowdown is in their ``step_s``).
        step_starts_s: When every step started (index = step), in seconds from the
            tracer's first ``perf_counter`` reading; ``()`` in a trace built by hand.
        input_wait_starts_s: When every step's input wait started (its first
            :meth:`~mirrorkit.measure.tracing.StepTracer.next`; the step's start if it had
            none), likewise.
        all_reduce_spans: Every all-reduce op interval of the profiled steps
            (:class:`AllReduceSpan`), attributed to a replica where the profile proves it.

    Example:
        >>> from mirrorkit.measure.step_trace import StepPhases, StepTrace
        >>> phases = StepPhases(step=1, input_wait_s=0.001, step_s=0.010, all_reduce_s=0.002,
        ...                     compute_s=0.008)
        >>> trace = StepTrace(steps=(phases,), step_times_s=(0.012, 0.010, 0.009),
        ...                   input_waits_s=(0.001, 0.001, 0.001), replicas=2,
        ...                   counted=("CollectiveReduceV2",))
        >>> trace.profiled_steps
        (1,)
        >>> print(trace)  # doctest: +NORMALIZE_WHITESPACE +ELLIPSIS
        3 training steps timed on 2 replicas, 1 profiled (step 1)
        phase       median   share
        input wait  1 ms     9.09%
        compute     8 ms     72.7%
        all-reduce  2 ms     18.2%
        total       11 ms    100%
        Median step over all 3 steps: 10 ms (10.5 ms unprofiled, 10 ms profiled).
        Measured: step and input wait ... Counted as all-reduce: CollectiveReduceV2.
    """

    steps: tuple[StepPhases, ...]
    step_times_s: tuple[float, ...]
    input_waits_s: tuple[float, ...]
    replicas: int
    counted: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    profiler_s: float = 0.0
    step_starts_s: tuple[float, ...] = ()
    input_wait_starts_s: tuple[float, ...] = ()
    all_reduce_spans: tuple[AllReduceSpan, ...] = ()

    @property
    def profiled_steps(self) -> tuple[int, ...]:
        """The indices of the profiled steps (those in :attr:`steps`)."""
        return tuple(s.step for s in self.steps)

    def median(self, phase: str) -> float:
        """The median over profiled steps of ``"input_wait_s"``, ``"compute_s"``,
        ``"all_reduce_s"``, ``"step_s"`` or ``"total_s"`` (0.0 with none).
        """  # noqa: D205, D415
        values = [getattr(s, phase) for s in self.steps]
        return statistics.median(values) if values else 0.0

    @property
    def fractions(self) -> dict[str, float]:
        """Each phase's share of the summed time of the profiled steps."""
        total = sum(s.total_s for s in self.steps)
        if not total:
            return dict.fromkeys(_PHASES, 0.0)
        return {p: sum(getattr(s, p) for s in self.steps) / total for p in _PHASES}

    def _columns(self) -> list[tuple[str, list[str]]]:
        names = {"input_wait_s": "input wait", "compute_s": "compute", "all_reduce_s": "all-reduce"}
        shares = self.fractions
        return [
            ("phase", [*names.values(), "total"]),
            ("median", [format_seconds(self.median(p)) for p in (*_PHASES, "total_s")]),
            ("share", [format_percent(shares[p]) for p in _PHASES] + ["100%"]),
        ]

    def _headline(self) -> str:
        n, p = len(self.step_times_s), self.profiled_steps
        which = ", ".join(str(i) for i in p[:8]) + (", ..." if len(p) > 8 else "")
        return (
            f"{n} training step{'s' if n != 1 else ''} timed on {self.replicas} replicas, "
            f"{len(p)} profiled" + (f" (step{'s' if len(p) != 1 else ''} {which})" if p else "")
        )

    def _notes(self) -> list[str]:
        lines = []
        if self.step_times_s:
            profiled = set(self.profiled_steps)
            plain = [t for i, t in enumerate(self.step_times_s) if i not in profiled]
            prof = [t for i, t in enumerate(self.step_times_s) if i in profiled]
            parts = [
                f"{format_seconds(statistics.median(v))} {label}"
                for v, label in ((plain, "unprofiled"), (prof, "profiled"))
                if v
            ]
            lines.append(
                f"Median step over all {len(self.step_times_s)} steps: "
                f"{format_seconds(statistics.median(self.step_times_s))} ({', '.join(parts)})."
                + (
                    f" Starting and stopping the profiler took {format_seconds(self.profiler_s)}."
                    if self.profiler_s
                    else ""
                )
            )
        counted = ", ".join(self.counted) or "none found"
        lines.append(
            "Measured: step and input wait (perf_counter, every step); all-reduce (TensorFlow's "
            "profiler, profiled steps: union over replicas of the all-reduce ops' wall time "
            f"inside the step). Derived: compute = step - all-reduce. Counted as all-reduce: "
            f"{counted}."
        )
        return [*lines, *self.notes]

    def report(self) -> Report:
        """The trace as a report: the phases of each profiled step, how they were measured."""
        return Report(
            headline=(self._headline(),),
            columns=self._columns(),
            lines=tuple(Line(n) for n in self._notes()),
        )

    def to_trace_events(self) -> dict:
        """The trace as Chrome's Trace Event Format (JSON object form), for Perfetto.

        One process, "mirrorkit StepTracer: N replicas", with one track (thread) per
        replica, "replica 0" ... "replica N-1", named by ``"M"`` metadata events. On every
        replica's track, each step is a run of complete (``"ph": "X"``) slices:

        * "input wait": the measured ``next(iterator)`` wait before the step (the host
          waits once for all replicas, so it is on every track; none in ``fit``).
        * an unprofiled step: one "step" slice, its measured time, compute and all-reduce
          not separated (``args.profiled`` is false).
        * a profiled step: "all-reduce" slices, the union of the all-reduce op intervals
          the profile attributes to this replica, clipped to the step, and "compute"
          slices filling the rest of the step, so they add up to the measured step time.
          All-reduce ops the profile does not place on a replica go on one more track,
          "all-reduce (unattributed)", and count as compute on the replicas' tracks.

        ``ts`` and ``dur`` are microseconds (rounded to the nanosecond), from the tracer's
        first reading; ``args`` hold the step index, the seconds, the op types counted and
        how they were attributed; ``otherData`` the notes. A trace built by hand without
        :attr:`step_starts_s` lays its steps end to end, each after its input wait; a
        profiled step with all-reduce time but no :attr:`all_reduce_spans` stays one
        "step" slice whose ``args`` hold its phases (where the all-reduce fell is unknown).

        Returns:
            ``{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}``, ready
            for ``json.dump``.

        Raises:
            ValueError: If the trace's times do not fit together (a trace built by hand):
                the message says which field to fix.

        Example:
            >>> from mirrorkit.measure.step_trace import AllReduceSpan, StepPhases, StepTrace
            >>> phases = StepPhases(step=1, input_wait_s=0.0, step_s=0.010, all_reduce_s=0.002,
            ...                     compute_s=0.008)
            >>> spans = tuple(
            ...     AllReduceSpan(step=1, start_s=start, end_s=0.010, kind="CollectiveReduceV2",
            ...                   replica=replica)
            ...     for replica, start in enumerate((0.008, 0.007)))
            >>> trace = StepTrace(
            ...     steps=(phases,), step_times_s=(0.012, 0.010), input_waits_s=(0.0, 0.0),
            ...     replicas=2, step_starts_s=(0.0, 0.012), all_reduce_spans=spans)
            >>> events = trace.to_trace_events()["traceEvents"]
            >>> [e["args"]["name"] for e in events if e["name"] == "thread_name"]
            ['replica 0', 'replica 1']
            >>> for e in events:
            ...     if e["ph"] == "X":
            ...         print(e["tid"], e["name"], e["ts"], e["dur"])
            1 step 0.0 12000.0
            1 compute 12000.0 8000.0
            1 all-reduce 20000.0 2000.0
            2 step 0.0 12000.0
            2 compute 12000.0 7000.0
            2 all-reduce 19000.0 3000.0
        """
        return trace_events(self, headline=self._headline(), notes=" ".join(self._notes()))

    def write_trace(self, path) -> Path:
        """Write :meth:`to_trace_events` as a JSON file that Perfetto and chrome://tracing open.

        Open it at https://ui.perfetto.dev ("Open trace file") or in chrome://tracing
        ("Load").

        Args:
            path: The file to write, a name ending in ``.json`` (``str`` or ``pathlib.Path``);
                an existing file is replaced, its folder must exist.

        Returns:
            The path written, as a ``pathlib.Path``.

        Raises:
            TypeError: If ``path`` is not a file name (``None``, an open file, a number).
            ValueError: If ``path`` does not end in ``.json`` or is a folder.
            FileNotFoundError: If ``path``'s folder does not exist.

        Example:
            >>> import json, tempfile
            >>> from pathlib import Path
            >>> from mirrorkit.measure.step_trace import StepTrace
            >>> trace = StepTrace(steps=(), step_times_s=(0.010, 0.011),
            ...                   input_waits_s=(0.001, 0.002), replicas=2)
            >>> written = trace.write_trace(Path(tempfile.mkdtemp()) / "trace.json")
            >>> events = json.loads(written.read_text())["traceEvents"]
            >>> sorted({e["name"] for e in events if e["ph"] == "X"})
            ['input wait', 'step']
        """
        return write_trace(self.to_trace_events(), path)
