"""Where a training step's time goes: waiting for input, computing, and all-reducing.

:class:`StepTracer` wraps each step of a real training loop (yours, or Keras
``fit`` through :meth:`StepTracer.callback`). It times **every** step with
``time.perf_counter``, and runs TensorFlow's own profiler on a **sample** of steps
(one every ``profile_every``, from step ``profile_from``), whose op-level events
give the all-reduce time *inside the real step*. What is measured, exactly:

* **input wait** (measured, every step, custom loops): the wall time of
  ``next(iterator)`` before the step (:meth:`StepTracer.next`). In Keras ``fit`` the
  batch is fetched *inside* Keras' compiled train function, so it is not separable
  from the step there: ``input_wait_s`` is 0 and the fetch is part of ``step_s``.
* **step** (measured, every step): the wall time of the step; on GPUs it ends with
  ``tf.test.experimental.sync_devices()``. In ``fit``: from one
  ``on_train_batch_begin`` to the next, so every step of an epoch but its last,
  whose end is not observable without a batch-end hook (see :meth:`StepTracer.callback`).
* **all-reduce** (measured, profiled steps only): the union, over all replicas, of
  the wall-time intervals of the step's all-reduce ops as TensorFlow's profiler
  recorded them, clipped to the step. On the default collective path these are the
  ``CollectiveReduceV2`` executions (from the moment every replica has joined to
  the end of the reduction; a replica waiting for slower ones to *join* is not
  counted, it is compute imbalance). Also counted: the other collective ops, NCCL's
  ops and kernels, and for ``ReductionToOneDevice``/``HierarchicalCopyAllReduce`` the
  ``AddN`` sums outside ``gradient_tape/`` plus the ``_Send``/``_Recv`` copies of
  their results (copies *into* the reducing device are not separately visible).
* **compute** (derived, profiled steps): ``step_s - all_reduce_s``: forward,
  backward, optimizer update and TensorFlow's own overheads.

So ``input_wait_s + compute_s + all_reduce_s == total_s`` for every profiled step,
and ``all_reduce_s <= step_s``. Unprofiled steps cost two ``perf_counter`` calls
and a list append; a profiled step also starts and stops a profiler session
around itself (outside its timed interval) and runs slower while profiled.

**A timeline** (:meth:`StepTrace.write_trace`, :meth:`StepTrace.to_trace_events`): the
tracer also keeps when each step and its input wait started (``perf_counter``, seconds
from the tracer's first reading), and for profiled steps every all-reduce op's interval
(:class:`AllReduceSpan`), placed in the step by the profiler's step marker (it starts
within microseconds of the step's ``perf_counter`` start) and clipped to the step, with
the replica that ran it when the profile proves it. On 4 simulated CPU replicas the op
events carry no device and share threads; what proves the replica is the rendezvous key
of a ``_Send``/``_Recv`` naming the op (or the op's own ``replica_k/`` name scope, or a GPU
device plane), and a collective's last member goes to the replica left (see
:mod:`~mirrorkit.measure._profiler` for the evidence and the rules). An all-reduce op
the profile does not place goes on its own "all-reduce (unattributed)" track, never
guessed onto a replica.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from mirrorkit._validate import require_strategy
from mirrorkit.measure import _profiler
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
        >>> from mirrorkit.measure.tracing import StepPhases
        >>> phases = StepPhases(0, input_wait_s=0.001, step_s=0.010, all_reduce_s=0.002,
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
        >>> from mirrorkit.measure.tracing import AllReduceSpan
        >>> span = AllReduceSpan(3, 0.004, 0.005, "CollectiveReduceV2", 1, "name scope")
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
    """What :meth:`StepTracer.result` returns.

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
            :meth:`StepTracer.next`; the step's start if it had none), likewise.
        all_reduce_spans: Every all-reduce op interval of the profiled steps
            (:class:`AllReduceSpan`), attributed to a replica where the profile proves it.

    Example:
        >>> from mirrorkit.measure.tracing import StepPhases, StepTrace
        >>> trace = StepTrace((StepPhases(1, 0.001, 0.010, 0.002, 0.008),),
        ...                   (0.012, 0.010, 0.009), (0.001, 0.001, 0.001), 2,
        ...                   ("CollectiveReduceV2",))
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
            >>> from mirrorkit.measure.tracing import AllReduceSpan, StepPhases, StepTrace
            >>> trace = StepTrace(
            ...     (StepPhases(1, 0.0, 0.010, 0.002, 0.008),), (0.012, 0.010), (0.0, 0.0), 2,
            ...     step_starts_s=(0.0, 0.012),
            ...     all_reduce_spans=(AllReduceSpan(1, 0.008, 0.010, "CollectiveReduceV2", 0),
            ...                       AllReduceSpan(1, 0.007, 0.010, "CollectiveReduceV2", 1)))
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
        waits_at, starts = self._layout()
        profiled = {s.step: s for s in self.steps}
        spans: dict[int, list[AllReduceSpan]] = {}
        for span in self.all_reduce_spans:
            spans.setdefault(span.step, []).append(span)
        tracks: dict[int, list[tuple]] = {r: [] for r in range(self.replicas)}
        loose: list[tuple] = []  # the unattributed all-reduce slices
        for i, step_s in enumerate(self.step_times_s):
            lo, hi = _ns(starts[i]), _ns(starts[i] + step_s)
            wait_s = self.input_waits_s[i]
            wait = _ns(waits_at[i])
            base = {"step": i}
            for slices in tracks.values():
                if wait_s > 0:
                    args = {**base, "seconds": wait_s, "measured": "next(iterator), perf_counter"}
                    slices.append(
                        ("input wait", "input", wait, min(_ns(waits_at[i] + wait_s), lo), args)
                    )
            phases = profiled.get(i)
            here = spans.get(i, [])
            if phases is None or (not here and phases.all_reduce_s > 0):
                args = {**base, "seconds": step_s, "profiled": phases is not None}
                if phases is None:
                    args["note"] = "not profiled: compute and all-reduce are not separated"
                else:
                    args |= {"compute_s": phases.compute_s, "all_reduce_s": phases.all_reduce_s}
                    args["note"] = "profiled, but where its all-reduce fell was not recorded"
                for slices in tracks.values():
                    slices.append(("step", "step", lo, hi, args))
                continue
            base |= {"step_s": step_s, "step_all_reduce_s": phases.all_reduce_s}
            for replica, slices in tracks.items():
                mine = [s for s in here if s.replica == replica]
                slices += _profiled_slices(lo, hi, mine, base, compute=True)
            loose += _profiled_slices(lo, hi, [s for s in here if s.replica is None], base)
        names = {r + 1: f"replica {r}" for r in range(self.replicas)}
        by_tid = {r + 1: slices for r, slices in tracks.items()}
        if loose:
            names[self.replicas + 1] = "all-reduce (unattributed)"
            by_tid[self.replicas + 1] = loose
        events = [_meta("process_name", 0, name=f"mirrorkit StepTracer: {self.replicas} replicas")]
        for tid, name in names.items():
            events.append(_meta("thread_name", tid, name=name))
            events.append(_meta("thread_sort_index", tid, sort_index=tid))
        for tid, slices in by_tid.items():
            end = 0
            for name, cat, lo, hi, args in slices:
                lo = max(lo, end)  # never overlap the slice before (nanosecond rounding)
                if hi > lo:
                    events.append(_complete(name, cat, tid, lo, hi, args))
                    end = hi
        return {
            "traceEvents": events,
            "displayTimeUnit": "ms",
            "otherData": {
                "generator": "mirrorkit.measure.tracing.StepTracer",
                "headline": self._headline(),
                "time origin": "the tracer's first perf_counter reading (first step)",
                "counted as all-reduce": ", ".join(self.counted) or "none found",
                "notes": " ".join(self._notes()),
            },
        }

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
            >>> from mirrorkit.measure.tracing import StepTrace
            >>> trace = StepTrace((), (0.010, 0.011), (0.001, 0.002), 2)
            >>> written = trace.write_trace(Path(tempfile.mkdtemp()) / "trace.json")
            >>> events = json.loads(written.read_text())["traceEvents"]
            >>> sorted({e["name"] for e in events if e["ph"] == "X"})
            ['input wait', 'step']
        """
        if isinstance(path, io.IOBase) or hasattr(path, "write"):
            raise TypeError(
                "path must be a file name, got an open file: pass its name instead, e.g. "
                "trace.write_trace('trace.json')."
            )
        if not isinstance(path, str | os.PathLike):
            raise TypeError(
                f"path must be a file name such as 'trace.json' (str or pathlib.Path), got "
                f"{type(path).__name__} {path!r}: write e.g. trace.write_trace('trace.json')."
            )
        target = Path(path)
        if target.is_dir():
            raise ValueError(
                f"path {str(path)!r} is a folder: name a file in it, e.g. "
                f"trace.write_trace('{(target / 'trace.json').as_posix()}')."
            )
        if target.suffix.lower() != ".json":
            raise ValueError(
                f"path must name a .json file (the trace is JSON), got {str(path)!r}: write "
                f"e.g. trace.write_trace('{target.with_suffix('.json').as_posix()}')."
            )
        if not target.parent.is_dir():
            raise FileNotFoundError(
                f"path {str(path)!r}: its folder {target.parent.as_posix()!r} does not exist. "
                f"Create it first, Path('{target.parent.as_posix()}').mkdir(parents=True), or "
                "write to an existing folder."
            )
        target.write_text(json.dumps(self.to_trace_events()))
        return target

    def _layout(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """(input wait starts, step starts), checked; laid end to end if not recorded."""
        n = len(self.step_times_s)
        waits, starts, wait_starts = (
            self.input_waits_s,
            self.step_starts_s,
            self.input_wait_starts_s,
        )
        hint = "(a StepTrace built by hand: give one value per step, or leave it out)"
        for name, values in (
            ("input_waits_s", waits),
            ("step_starts_s", starts),
            ("input_wait_starts_s", wait_starts),
        ):
            if values and len(values) != n:
                raise ValueError(f"{name} has {len(values)} values for {n} steps {hint}.")
        if len(waits) != n:
            raise ValueError(f"input_waits_s has {len(waits)} values for {n} steps {hint}.")
        if not starts:
            if wait_starts:
                raise ValueError(
                    "input_wait_starts_s was given without step_starts_s: give both, or "
                    "neither to lay the steps end to end."
                )
            clock, wait_starts, starts = 0.0, [], []
            for wait, step in zip(waits, self.step_times_s, strict=True):
                wait_starts.append(clock)
                starts.append(clock + wait)
                clock += wait + step
            return tuple(wait_starts), tuple(starts)
        if not wait_starts:
            wait_starts = tuple(max(0.0, s - w) for s, w in zip(starts, waits, strict=True))
        end = 0.0
        for i in range(n):
            if wait_starts[i] < end - 1e-6 or starts[i] < wait_starts[i] + waits[i] - 1e-6:
                raise ValueError(
                    f"step {i} (input wait from {wait_starts[i]!r} s, step from {starts[i]!r} s) "
                    f"starts before the time before it ends ({end!r} s): step_starts_s and "
                    "input_wait_starts_s must be increasing seconds from the first step, each "
                    "step after its input wait."
                )
            end = starts[i] + self.step_times_s[i]
        for span in self.all_reduce_spans:
            if span.step not in self.profiled_steps or (
                span.replica is not None and not 0 <= span.replica < self.replicas
            ):
                raise ValueError(
                    f"all_reduce_spans holds {span!r}: each span's step must be a profiled "
                    f"step {self.profiled_steps} and its replica None or 0..{self.replicas - 1}."
                )
        return tuple(wait_starts), tuple(starts)


class StepTracer:
    """Time every step of a real training loop; profile a sample to split it into phases.

    In a custom loop, fetch each batch through :meth:`next` and run the step inside
    :meth:`step`; with Keras, pass :meth:`callback` to ``model.fit``. Then call
    :meth:`result`. See the module docstring for what is measured, and how.

    Args:
        strategy: The ``tf.distribute.Strategy`` the steps run on.
        profile_every: Profile one step in this many (``None``: never profile).
        profile_from: The first step to profile (the first steps trace and compile
            ``tf.function`` s, and are not typical).
        on_step: Optional function called with each profiled step's
            :class:`StepPhases` as soon as the step ends, to draw it live (for example
            ``mirrorwidgets.StepTimeline().append``). Its parsing time is counted as
            profiler overhead.

    Raises:
        TypeError: If ``strategy`` is not a ``tf.distribute.Strategy``, or ``on_step`` is
            not callable.
        ValueError: If ``profile_every`` is not an int of at least 1 (or ``None``), or
            ``profile_from`` not an int of at least 0.

    Example:
        >>> import tensorflow as tf
        >>> from mirrorkit.measure.tracing import StepTracer
        >>> strategy = tf.distribute.get_strategy()
        >>> weights = tf.Variable(tf.ones([4]))
        >>> tracer = StepTracer(strategy, profile_every=2, profile_from=1)
        >>> batches = iter(tf.data.Dataset.from_tensors(tf.ones([4])).repeat(4))
        >>> for _ in range(4):
        ...     batch = tracer.next(batches)
        ...     with tracer.step():
        ...         _ = weights.assign_sub(0.1 * batch)
        >>> trace = tracer.result()
        >>> len(trace.step_times_s), trace.profiled_steps
        (4, (1, 3))
        >>> all(abs(s.input_wait_s + s.compute_s + s.all_reduce_s - s.total_s) < 1e-12
        ...     for s in trace.steps)
        True
    """

    def __init__(
        self,
        strategy,
        *,
        profile_every: int | None = 100,
        profile_from: int = 2,
        on_step: Callable[[StepPhases], object] | None = None,
    ):
        require_strategy(strategy, "StepTracer(strategy)")
        if profile_every is not None and (
            isinstance(profile_every, bool)
            or not isinstance(profile_every, int)
            or profile_every < 1
        ):
            raise ValueError(
                f"profile_every must be an int >= 1 or None, got {profile_every!r}: write e.g. "
                "profile_every=10 to profile one step in ten, or None to never profile."
            )
        if isinstance(profile_from, bool) or not isinstance(profile_from, int) or profile_from < 0:
            raise ValueError(
                f"profile_from must be an int >= 0 (a step index, counted from 0), got "
                f"{profile_from!r}: write e.g. profile_from=2 to skip the first steps, which "
                "trace the tf.function."
            )
        if on_step is not None and not callable(on_step):
            append = (
                " (pass its append method: on_step=timeline.append)"
                if hasattr(on_step, "append")
                else ""
            )
            raise TypeError(
                f"on_step must be a function of StepPhases, got {type(on_step).__name__} "
                f"{on_step!r}{append}; e.g. on_step=print."
            )
        self.strategy = strategy
        self.on_step = on_step
        self.profile_every = profile_every
        self.profile_from = profile_from
        self._devices = _replica_devices(strategy)
        self._sync = any("GPU" in d.upper() for d in self._devices)
        self._notes: list[str] = []
        self.reset()

    def reset(self) -> None:
        """Forget the steps traced so far; the next step is step 0 again."""
        if getattr(self, "_open", None) is not None:
            self._end(keep=False)  # stops a profiler session left running
        self._waits: list[float] = []
        self._times: list[float] = []
        self._starts: list[float] = []  # perf_counter, minus _origin
        self._wait_starts: list[float] = []
        self._origin: float | None = None  # the first perf_counter reading
        self._profiles: list[tuple[int, bytes]] = []
        self._pending_wait = 0.0
        self._pending_wait_start: float | None = None
        self._profiler_s = 0.0
        self._open = None  # (start, session, marker) of the step under way
        self._notes = [n for n in self._notes if n.startswith("Profiling was off")]

    def next(self, iterator: Iterator):
        """Return ``next(iterator)``, timing the wait as the next step's input wait.

        ``StopIteration`` passes through and records nothing.
        """
        if not hasattr(iterator, "__next__"):
            made = "iter(dataset)" if hasattr(iterator, "__iter__") else "an iterator"
            raise TypeError(
                f"iterator must be an iterator, got {type(iterator).__name__}: make one before "
                f"the loop, iterator = {made}, and call tracer.next(iterator) in each step."
            )
        start = time.perf_counter()
        element = next(iterator)
        self._pending_wait += time.perf_counter() - start
        if self._pending_wait_start is None:
            self._pending_wait_start = start
        return element

    @contextlib.contextmanager
    def step(self):
        """Time (and maybe profile) the step run inside this ``with`` block.

        A step that raises is not recorded.

        Raises:
            RuntimeError: If called inside another step's ``with`` block.
        """
        if self._open is not None:
            raise RuntimeError(
                "tracer.step() is already timing a step: steps cannot be nested. End the "
                "`with tracer.step():` block before the next one starts, one per training step."
            )
        self._begin()
        try:
            yield
        except BaseException:
            self._end(keep=False)
            raise
        self._end(keep=True, sync=self._sync)

    def _profiled(self, index: int) -> bool:
        every = self.profile_every
        return (
            every is not None
            and index >= self.profile_from
            and (index - self.profile_from) % every == 0
        )

    def _begin(self) -> None:
        session = None
        if self._profiled(len(self._times)):
            started = time.perf_counter()
            session = _profiler.Session()
            try:
                session.start()
            except _profiler.ProfilerBusyError as error:
                session = None
                self.profile_every = None
                self._notes.append(
                    f"Profiling was off: another profiler session was running ({error}). "
                    "Only step and input wait were measured."
                )
            self._profiler_s += time.perf_counter() - started
        start = time.perf_counter()
        # The step marker lies inside the timed interval, so what the profiler finds
        # inside the marker is inside the step.
        marker = _profiler.marker(len(self._times)) if session is not None else None
        self._open = (start, session, marker)

    def _end(self, keep: bool, sync: bool = False) -> None:
        if self._open is None:
            return
        start, session, marker = self._open
        self._open = None
        if sync:
            import tensorflow as tf

            tf.test.experimental.sync_devices()
        if marker is not None:
            marker.Stop()
        elapsed = time.perf_counter() - start
        data = None
        if session is not None:
            data = session.stop()
            self._profiler_s += time.perf_counter() - start - elapsed
        if keep:
            index = len(self._times)
            self._times.append(elapsed)
            self._waits.append(self._pending_wait)
            wait_start = start if self._pending_wait_start is None else self._pending_wait_start
            if self._origin is None:
                self._origin = wait_start
            self._starts.append(start - self._origin)
            self._wait_starts.append(wait_start - self._origin)
            if data is not None:
                self._profiles.append((index, data))
                if self.on_step is not None:  # live: split this step now, not at result()
                    started = time.perf_counter()
                    phases, _ = self._split(index, data)
                    self._profiler_s += time.perf_counter() - started
                    if phases is not None:
                        self.on_step(phases)
        self._pending_wait = 0.0
        self._pending_wait_start = None

    def _split(self, index: int, data: bytes) -> tuple[StepPhases | None, set[str]]:
        found = _profiler.all_reduce_per_step(data).get(index)
        if found is None:
            return None, set()
        _, reduce_s, counted = found
        step_s = self._times[index]
        reduce_s = min(reduce_s, step_s)
        return StepPhases(index, self._waits[index], step_s, reduce_s, step_s - reduce_s), counted

    def result(self) -> StepTrace:
        """Parse the profiled steps and split them into phases (every step's time is kept)."""
        steps, kinds, notes, spans, short = [], set(), list(self._notes), [], []
        for index, data in self._profiles:
            profile = _profiler.profiled_steps(data, self._devices).get(index)
            if profile is None:
                notes.append(f"Step {index} was profiled but its marker is not in the profile.")
                continue
            if profile.short_groups:
                short.append(str(index))
            step_s = self._times[index]
            reduce_s = min(profile.all_reduce_ps / 1e12, step_s)
            kinds |= {s.kind for s in profile.spans}
            steps.append(StepPhases(index, self._waits[index], step_s, reduce_s, step_s - reduce_s))
            spans += [
                AllReduceSpan(
                    index,
                    min(s.start_ps / 1e12, step_s),
                    min(s.end_ps / 1e12, step_s),
                    s.kind,
                    s.replica,
                    s.evidence,
                )
                for s in profile.spans
            ]
        if short:
            notes.append(
                f"In profiled step{'s' if len(short) > 1 else ''} {', '.join(short)} the "
                "profiler lost the event of a replica's all-reduce op that was still closing "
                "as the step ended: its all-reduce may be undercounted there, and a replica's "
                "all-reduce left unattributed."
            )
        if self._profiles and not kinds:
            notes.append(
                "No all-reduce op ran in the profiled steps (one replica, no gradients, or an "
                "all-reduce this tracer does not recognise): all-reduce is 0 there."
            )
        return StepTrace(
            tuple(steps),
            tuple(self._times),
            tuple(self._waits),
            self.strategy.num_replicas_in_sync,
            tuple(sorted(kinds)),
            tuple(notes),
            self._profiler_s,
            tuple(self._starts),
            tuple(self._wait_starts),
            tuple(spans),
        )

    def set_model(self, model) -> None:
        """Refuse to be a Keras callback: :meth:`callback` makes the one ``fit`` takes.

        Keras calls ``set_model`` on each of ``fit``'s callbacks first.

        Raises:
            TypeError: Always.
        """
        raise TypeError(
            "callbacks holds the StepTracer itself, which is not a Keras callback: pass "
            "model.fit(..., callbacks=[tracer.callback()])."
        )

    def callback(self):
        """A ``keras.callbacks.Callback`` that times every step of ``model.fit`` here.

        It only uses ``on_train_batch_begin``, ``on_epoch_end`` and ``on_train_end``, so
        ``fit`` runs exactly as without it: the same compiled train function, and Keras
        still dispatches batch-end callbacks asynchronously (a callback with its own
        ``on_train_batch_end`` would make Keras call them synchronously). A step is the
        time from one ``on_train_batch_begin`` to the next, so the last step of each
        epoch is not recorded: what follows it until ``on_epoch_end`` is mostly Keras'
        end-of-epoch work (ending the dataset iterator, reading metrics, validation),
        not the step. Keras fetches the batch inside its train function, so input wait
        is part of the step: ``input_wait_s`` is 0. Step indices count the recorded
        steps. It needs ``steps_per_execution=1`` (Keras' default).
        """
        return _keras_callback_class()(self)


# The trace's one process. Its threads (tracks) are 1..N+1: a pid no tid shares, so no
# replica's track is taken for the process's main thread.
_PID = 100


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


def _meta(event: str, tid: int, **args) -> dict:
    return {"name": event, "ph": "M", "pid": _PID, "tid": tid, "args": args}


def _complete(name: str, cat: str, tid: int, lo: int, hi: int, args: dict) -> dict:
    # Microseconds from whole nanoseconds: each slice ends exactly where the next starts.
    return {
        "name": name,
        "cat": cat,
        "ph": "X",
        "ts": lo / 1000,
        "dur": (hi - lo) / 1000,
        "pid": _PID,
        "tid": tid,
        "args": {**args, "seconds": (hi - lo) / 1e9} if "seconds" not in args else args,
    }


def _profiled_slices(lo: int, hi: int, spans, base: dict, compute: bool = False) -> list[tuple]:
    """A profiled step's slices on one track: the union of ``spans`` as "all-reduce" slices,
    and, with ``compute``, "compute" slices filling the rest of ``[lo, hi)`` (nanoseconds).
    """  # noqa: D205
    merged: list[list] = []  # [start, end, spans]
    for span in sorted(spans, key=lambda s: (s.start_s, s.end_s)):
        a = min(max(lo + _ns(span.start_s), lo), hi)
        b = min(max(lo + _ns(span.end_s), lo), hi)
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
            merged[-1][2].append(span)
        elif b > a:
            merged.append([a, b, [span]])
    out, cursor = [], lo
    mine = sum(b - a for a, b, _ in merged) / 1e9
    for a, b, inside in merged:
        if compute and a > cursor:
            out.append(("compute", "compute", cursor, a, _compute_args(base, mine)))
        ops = dict(sorted(Counter(s.kind for s in inside).items()))
        how = sorted({s.evidence for s in inside if s.evidence})
        args = {**base, "seconds": (b - a) / 1e9, "ops": ops}
        args["attributed by" if compute else "not attributed"] = "; ".join(how) or "unknown"
        out.append(("all-reduce", "all-reduce", a, b, args))
        cursor = b
    if compute and cursor < hi:
        out.append(("compute", "compute", cursor, hi, _compute_args(base, mine)))
    return out


def _compute_args(base: dict, all_reduce_s: float) -> dict:
    return {
        **base,
        "replica_all_reduce_s": all_reduce_s,
        "derived": "the step minus the all-reduce ops attributed to this replica",
    }


def _keras_callback_class():
    import keras

    class StepTracerCallback(keras.callbacks.Callback):
        def __init__(self, tracer: StepTracer):
            super().__init__()
            self.tracer = tracer

        def on_train_begin(self, logs=None):
            self.tracer._end(keep=False)  # a fit that raised never reached on_train_end
            steps = getattr(self.model, "steps_per_execution", 1)
            if steps != 1:
                raise ValueError(
                    "StepTracer traces one step at a time: compile the model with "
                    f"steps_per_execution=1 (it has {steps})."
                )

        def on_train_batch_begin(self, batch, logs=None):
            self.tracer._end(keep=True)
            self.tracer._begin()

        def on_epoch_end(self, epoch, logs=None):
            self.tracer._end(keep=False)  # the epoch's last step: its end was not seen

        def on_train_end(self, logs=None):
            self.tracer._end(keep=False)  # stopped early: fit broke out of its loop

        def result(self) -> StepTrace:
            return self.tracer.result()

    return StepTracerCallback


def _replica_devices(strategy) -> tuple[str, ...]:
    from mirrorkit.devices import replica_devices

    return replica_devices(strategy)
