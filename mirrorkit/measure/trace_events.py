"""A step trace as Chrome's Trace Event Format, the JSON that Perfetto and chrome://tracing open.

Example:
    >>> from mirrorkit.measure.step_trace import StepTrace
    >>> from mirrorkit.measure.trace_events import trace_events
    >>> trace = StepTrace(steps=(), step_times_s=(0.010,), input_waits_s=(0.0,), replicas=1)
    >>> [e["name"] for e in trace_events(trace)["traceEvents"] if e["ph"] == "X"]
    ['step']
"""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

from mirrorkit._validate import refuse, require_path


def trace_events(trace, *, headline: str = "", notes: str = "") -> dict:
    """``trace`` (a :class:`~mirrorkit.measure.step_trace.StepTrace`) as trace events.

    What the slices are: :meth:`~mirrorkit.measure.step_trace.StepTrace.to_trace_events`.

    Args:
        trace: The step trace.
        headline: The trace's one-line summary, kept in ``otherData``.
        notes: What the reader should know about it, kept in ``otherData``.

    Returns:
        ``{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}``.

    Example:
        >>> from mirrorkit.measure.step_trace import StepTrace
        >>> trace = StepTrace(steps=(), step_times_s=(0.010,), input_waits_s=(0.0,), replicas=1)
        >>> trace_events(trace, headline="one step")["otherData"]["headline"]
        'one step'
    """
    waits_at, starts = _layout(trace)
    profiled = {s.step: s for s in trace.steps}
    spans: dict[int, list] = {}  # step -> its AllReduceSpans
    for span in trace.all_reduce_spans:
        spans.setdefault(span.step, []).append(span)
    tracks: dict[int, list[tuple]] = {r: [] for r in range(trace.replicas)}
    loose: list[tuple] = []  # the unattributed all-reduce slices
    for i, step_s in enumerate(trace.step_times_s):
        lo, hi = _ns(starts[i]), _ns(starts[i] + step_s)
        wait_s = trace.input_waits_s[i]
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
    names = {r + 1: f"replica {r}" for r in range(trace.replicas)}
    by_tid = {r + 1: slices for r, slices in tracks.items()}
    if loose:
        names[trace.replicas + 1] = "all-reduce (unattributed)"
        by_tid[trace.replicas + 1] = loose
    events = [_meta("process_name", 0, name=f"mirrorkit StepTracer: {trace.replicas} replicas")]
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
            "headline": headline,
            "time origin": "the tracer's first perf_counter reading (first step)",
            "counted as all-reduce": ", ".join(trace.counted) or "none found",
            "notes": notes,
        },
    }


def write_trace(events: dict, path) -> Path:
    """Write ``events`` (from :func:`trace_events`) as JSON to ``path``, a ``.json`` file name.

    Example:
        >>> import json, tempfile
        >>> from pathlib import Path
        >>> written = write_trace({"traceEvents": []}, Path(tempfile.mkdtemp()) / "t.json")
        >>> json.loads(written.read_text())
        {'traceEvents': []}
    """
    write = "e.g. trace.write_trace('trace.json')"
    if isinstance(path, io.IOBase) or hasattr(path, "write"):
        got = "an open file: pass its name instead"
        refuse("path", path, must="a file name", got=got, write=write)
    must = "a file name such as 'trace.json' (str or pathlib.Path)"
    target = Path(path) if path == "" else require_path("path", path, write=write)
    if target.is_dir():
        got = f"{str(path)!r}, which is a folder: name a file in it"
        write = f"e.g. trace.write_trace('{(target / 'trace.json').as_posix()}')"
        refuse("path", must=must, got=got, write=write, error=ValueError)
    if target.suffix.lower() != ".json":
        must = "the name of a .json file (the trace is JSON)"
        write = f"e.g. trace.write_trace('{target.with_suffix('.json').as_posix()}')"
        refuse("path", must=must, got=repr(str(path)), write=write, error=ValueError)
    if not target.parent.is_dir():
        folder = target.parent.as_posix()
        got = f"{str(path)!r}, whose folder {folder!r} does not exist. Create it first, "
        got += f"Path('{folder}').mkdir(parents=True)"
        must = "a file in an existing folder"
        write = f"trace.write_trace({target.as_posix()!r}) again once the folder is there"
        refuse("path", must=must, got=got, write=write, error=FileNotFoundError)
    target.write_text(json.dumps(events))
    return target


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


def _layout(trace) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(input wait starts, step starts), checked; laid end to end if not recorded."""
    waits, starts, wait_starts = trace.input_waits_s, trace.step_starts_s, trace.input_wait_starts_s
    problem = _length_problem(trace)
    if not problem and not starts:
        clock, wait_starts, starts = 0.0, [], []
        for wait, step in zip(waits, trace.step_times_s, strict=True):
            wait_starts.append(clock)
            starts.append(clock + wait)
            clock += wait + step
    elif not problem and not wait_starts:
        wait_starts = tuple(max(0.0, s - w) for s, w in zip(starts, waits, strict=True))
    if not problem and trace.step_starts_s:
        problem = _order_problem(trace, wait_starts, starts)
    if problem:
        raise ValueError(problem)
    return tuple(wait_starts), tuple(starts)


def _length_problem(trace) -> str | None:
    """What is wrong with the lengths of a hand-built trace's fields, if anything."""
    n = len(trace.step_times_s)
    hint = "(a StepTrace built by hand: give one value per step, or leave it out)"
    for name in ("input_waits_s", "step_starts_s", "input_wait_starts_s"):
        values = getattr(trace, name)
        if (values or name == "input_waits_s") and len(values) != n:
            return f"{name} has {len(values)} values for {n} steps {hint}."
    if trace.input_wait_starts_s and not trace.step_starts_s:
        return (
            "input_wait_starts_s was given without step_starts_s: give both, or "
            "neither to lay the steps end to end."
        )
    return None


def _order_problem(trace, wait_starts, starts) -> str | None:
    """Which step of a hand-built trace starts too early, or which span lies outside it."""
    end = 0.0
    for i, step_s in enumerate(trace.step_times_s):
        if (
            wait_starts[i] < end - 1e-6
            or starts[i] < wait_starts[i] + trace.input_waits_s[i] - 1e-6
        ):
            return (
                f"step {i} (input wait from {wait_starts[i]!r} s, step from {starts[i]!r} s) "
                f"starts before the time before it ends ({end!r} s): step_starts_s and "
                "input_wait_starts_s must be increasing seconds from the first step, each "
                "step after its input wait."
            )
        end = starts[i] + step_s
    for span in trace.all_reduce_spans:
        if span.step not in trace.profiled_steps or (
            span.replica is not None and not 0 <= span.replica < trace.replicas
        ):
            return (
                f"all_reduce_spans holds {span!r}: each span's step must be a profiled "
                f"step {trace.profiled_steps} and its replica None or 0..{trace.replicas - 1}."
            )
    return None
