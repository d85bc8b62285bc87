"""TensorFlow's profiler for :mod:`~mirrorkit.measure.tracing`: record steps, read the all-reduce.

A profiler session records TraceMe events (op executions, step markers) on every
thread (and device activity on GPUs). ``_pywrap_profiler.ProfilerSession.stop()``
hands them back in memory, as a serialized ``tensorflow.profiler.Trace`` (the
XSpace converted to trace events: one clock for all events, times in
picoseconds), so nothing is written to disk; it is parsed with the
``trace_events_pb2`` class TensorFlow ships. ``tf.profiler.experimental.start`` /
``stop`` would write the XSpace to a log directory instead, which costs more.
"""

from __future__ import annotations

from collections.abc import Iterable

#: Name of the step markers :class:`~mirrorkit.StepTracer` puts around profiled steps.
STEP_MARKER = "mirrorkit.step"

#: Op types of TensorFlow's collective ops (MirroredStrategy's default all-reduce path,
#: MultiWorkerMirroredStrategy) and of NCCL's all-reduce op.
COLLECTIVE_OPS = frozenset(
    {
        "CollectiveReduce",
        "CollectiveReduceV2",
        "CollectiveReduceV3",
        "CollectiveReduceScatterV2",
        "CollectiveGather",
        "CollectiveGatherV2",
        "CollectiveAllToAllV2",
        "CollectiveAllToAllV3",
        "CollectiveBcastSend",
        "CollectiveBcastRecv",
        "CollectiveBcastSendV2",
        "CollectiveBcastRecvV2",
        "NcclAllReduce",
        "NcclReduce",
        "NcclBroadcast",
    }
)


class ProfilerBusyError(RuntimeError):
    """Another profiler session (``tf.profiler``, TensorBoard's capture) is already running."""


class Session:
    """One profiler session: ``start()``, run steps, ``stop()`` returns the XSpace bytes."""

    def __init__(self):
        from tensorflow.python.profiler.internal import _pywrap_profiler

        self._session = _pywrap_profiler.ProfilerSession()

    def start(self) -> None:
        try:
            self._session.start("", {})
        except Exception as error:  # AlreadyExistsError, from the C++ singleton
            raise ProfilerBusyError(str(error)) from error

    def stop(self) -> bytes:
        return self._session.stop()


def marker(step: int):
    """A started TraceMe named :data:`STEP_MARKER` carrying ``step_num``; call ``.Stop()``."""
    from tensorflow.python.profiler.internal import _pywrap_traceme

    return _pywrap_traceme.TraceMe(STEP_MARKER, step_num=int(step))


def all_reduce_per_step(data: bytes) -> dict[int, tuple[float, float, frozenset[str]]]:
    """Parse one session's events: for each step marker, its length and the all-reduce inside.

    Returns:
        ``{step_num: (marker_s, all_reduce_s, kinds)}``: the marker's duration, the
        union of the all-reduce op intervals clipped to the marker (seconds), and which
        op types were counted.
    """
    from tensorflow.tsl.profiler.protobuf import trace_events_pb2

    trace = trace_events_pb2.Trace()
    trace.ParseFromString(data)
    on_device = {key: dev.name.startswith("/device:") for key, dev in trace.devices.items()}
    steps: dict[int, tuple[int, int]] = {}
    reduces: list[tuple[int, int, str]] = []
    for event in trace.trace_events:
        start = event.timestamp_ps
        end = start + event.duration_ps
        if event.name == STEP_MARKER and "step_num" in event.args:
            steps[int(event.args["step_num"])] = (start, end)
            continue
        # Op events are named by op type; "long_name" is "<op name>:<op type>".
        name = event.args.get("long_name", event.name)
        kind = reduce_kind(name, on_device.get(event.device_id, False))
        if kind:
            reduces.append((start, end, kind))
    out = {}
    for step, (lo, hi) in steps.items():
        inside = [(max(s, lo), min(e, hi), k) for s, e, k in reduces if e > lo and s < hi]
        busy = union_length((s, e) for s, e, _ in inside)
        out[step] = ((hi - lo) / 1e12, busy / 1e12, frozenset(k for *_, k in inside))
    return out


def reduce_kind(name: str, on_device: bool = False) -> str | None:
    """The all-reduce op type an event of this name is, or ``None``.

    Host-side op events are named ``"<op name>:<op type>"``. Counted: the collective
    and NCCL ops in :data:`COLLECTIVE_OPS`; for ``ReductionToOneDevice`` and
    ``HierarchicalCopyAllReduce``, the ``AddN`` sums outside ``gradient_tape/`` and the
    ``_Send``/``_Recv`` copies of their results. On GPU planes, kernels whose name
    contains ``nccl``.

    Example:
        >>> reduce_kind("sgd/CollectiveReduceV2_1:CollectiveReduceV2")
        'CollectiveReduceV2'
        >>> reduce_kind("sgd/AddN_2:AddN"), reduce_kind("gradient_tape/x/AddN:AddN")
        ('AddN', None)
        >>> reduce_kind("sgd/AddN_2/_41:_Send"), reduce_kind("replica_1/pow:Square")
        ('_Send', None)
    """
    if on_device:
        return "NCCL kernel" if "nccl" in name.lower() else None
    op_name, sep, op_type = name.rpartition(":")
    if not sep:
        return None
    if op_type in COLLECTIVE_OPS:
        return op_type
    if (
        op_type == "AddN"
        and not op_name.startswith("gradient_tape/")
        and "/gradient_tape/" not in op_name
    ):
        return op_type
    if op_type in ("_Send", "_Recv") and "/AddN" in op_name and "gradient_tape/" not in op_name:
        return op_type
    return None


def union_length(intervals: Iterable[tuple[int, int]]) -> int:
    """Total length covered by half-open intervals (overlaps counted once).

    Example:
        >>> union_length([(0, 10), (5, 12), (20, 25), (21, 22)])
        17
    """
    total, end = 0, None
    for lo, hi in sorted(intervals):
        if end is None or lo > end:
            total += hi - lo
            end = hi
        elif hi > end:
            total += hi - end
            end = hi
    return total
