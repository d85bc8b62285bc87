"""TensorFlow's profiler for :mod:`~mirrorkit.measure.tracing`: record steps, read the all-reduce.

What a profile event carries, and how an all-reduce op is placed on its replica:
docs/design/measure.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

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


class Span(NamedTuple):
    """One all-reduce op execution inside a step marker.

    Attributes:
        start_ps: Start, in picoseconds from the marker's start (clipped to the marker).
        end_ps: End, likewise.
        kind: The op type counted (see :func:`reduce_kind`).
        replica: The replica it is attributed to, or ``None``.
        evidence: How it was attributed, or why it was not.
    """

    start_ps: int
    end_ps: int
    kind: str
    replica: int | None
    evidence: str


class StepProfile(NamedTuple):
    """What one step marker holds: its length and the all-reduce spans inside it.

    ``short_groups`` counts the collectives in the step with fewer member events than
    replicas (0 without ``devices``): the profiler lost a member's event (see
    :func:`profiled_steps`).
    """

    marker_ps: int
    spans: tuple[Span, ...]
    short_groups: int = 0

    @property
    def all_reduce_ps(self) -> int:
        """The union of the spans' intervals (picoseconds)."""
        return union_length((s.start_ps, s.end_ps) for s in self.spans)


def all_reduce_per_step(data: bytes) -> dict[int, tuple[float, float, frozenset[str]]]:
    """Parse one session's events: for each step marker, its length and the all-reduce inside.

    Returns:
        ``{step_num: (marker_s, all_reduce_s, kinds)}``: the marker's duration, the
        union of the all-reduce op intervals clipped to the marker (seconds), and which
        op types were counted.
    """
    return {
        step: (p.marker_ps / 1e12, p.all_reduce_ps / 1e12, frozenset(s.kind for s in p.spans))
        for step, p in profiled_steps(data).items()
    }


def profiled_steps(data: bytes, devices: Sequence[str] = ()) -> dict[int, StepProfile]:
    """Parse one session's events: each step marker and the all-reduce ops inside it.

    A collective op's event is recorded when its scope closes, after it has signalled
    its completion: when it is the last op of the step, the step can end and the session
    stop first, and its event is lost (seen in about 1 profiled step in 100 on a loaded
    machine). Then the step's all-reduce misses that op's interval, and the collective
    has a member too few to give its last member by elimination;
    :attr:`StepProfile.short_groups` counts such collectives.

    Args:
        data: A serialized ``tensorflow.profiler.Trace`` (:meth:`Session.stop`).
        devices: The replicas' devices, in replica order; ``()`` attributes nothing.

    Returns:
        ``{step_num: StepProfile}``, each span attributed to a replica as the module
        docstring says (with ``devices``).
    """
    from tensorflow.tsl.profiler.protobuf import trace_events_pb2

    trace = trace_events_pb2.Trace()
    trace.ParseFromString(data)
    planes = {key: dev.name for key, dev in trace.devices.items()}
    steps: dict[int, tuple[int, int]] = {}
    reduces = []  # (start, end, kind, op name, event)
    placed: dict[str, set[str]] = {}  # op name -> devices, from rendezvous keys
    for event in trace.trace_events:
        start = event.timestamp_ps
        end = start + event.duration_ps
        if event.name == STEP_MARKER and "step_num" in event.args:
            steps[int(event.args["step_num"])] = (start, end)
            continue
        # Op events are named by op type; "long_name" is "<op name>:<op type>".
        name = event.args.get("long_name", event.name)
        ends = _rendezvous(event.args)
        if ends:
            ops = (event.args.get("from"), event.args.get("to"))
            for op, device in zip(ops, ends, strict=True):
                if op:
                    placed.setdefault(op, set()).add(device)
        kind = reduce_kind(name, planes.get(event.device_id, "").startswith("/device:"))
        if kind:
            reduces.append((start, end, kind, name.rpartition(":")[0] or name, event))
    groups = _collectives(reduces)
    attributed = _attribute(reduces, planes, placed, tuple(devices), groups)
    out = {}
    for step, (lo, hi) in steps.items():
        spans = tuple(
            Span(max(s, lo) - lo, min(e, hi) - lo, kind, *who)
            for (s, e, kind, _, _), who in zip(reduces, attributed, strict=True)
            if e > lo and s < hi
        )
        short = sum(
            1
            for members in groups.values()
            if devices
            and len(members) < len(devices)
            and any(reduces[i][1] > lo and reduces[i][0] < hi for i in members)
        )
        out[step] = StepProfile(hi - lo, spans, short)
    return out


def _collectives(reduces) -> dict[tuple, list[int]]:
    """The indices in ``reduces`` of each collective's member events, by collective."""
    groups: dict[tuple, list[int]] = {}
    for i, (*_, event) in enumerate(reduces):
        if "group_key" in event.args and "instance_key" in event.args:
            key = tuple(
                event.args.get(k, "")
                for k in ("step_id", "group_key", "instance_key", "frame_id", "iter_id")
            )
            groups.setdefault(key, []).append(i)
    return groups


def _rendezvous(args) -> tuple[str, str] | None:
    """The (from, to) devices of a ``_Send``/``_Recv``'s rendezvous key, if it has one."""
    parts = args.get("key", "").split(";")
    if len(parts) < 4 or "device:" not in parts[0] or "device:" not in parts[2]:
        return None
    return parts[0], parts[2]


def _device_key(name: str) -> tuple[tuple[str, ...] | None, str] | None:
    """``(job/replica/task or None, "GPU:0")`` of a device name, or ``None`` if not one."""
    found = re.search(r"device:([A-Za-z_]+):(\d+)$", name)
    if not found:
        return None
    task = re.search(r"/job:([^/]+)/replica:(\d+)/task:(\d+)", name)
    return (task.groups() if task else None), f"{found[1].upper()}:{found[2]}"


def replica_of(device: str, devices: Sequence[str]) -> int | None:
    """The index of the replica whose device is ``device`` (a full or short name), or ``None``.

    Example:
        >>> devices = ("/job:localhost/replica:0/task:0/device:GPU:0",
        ...            "/job:localhost/replica:0/task:0/device:GPU:1")
        >>> replica_of("/device:GPU:1", devices), replica_of("/device:CPU:0", devices)
        (1, None)
    """
    key = _device_key(device)
    if key is None:
        return None
    matches = [
        i
        for i, d in enumerate(devices)
        if (other := _device_key(d)) is not None
        and other[1] == key[1]
        and (key[0] is None or other[0] is None or key[0] == other[0])
    ]
    return matches[0] if len(matches) == 1 else None


_NO_EVIDENCE = "no device for this op in the profile"


def _attribute(reduces, planes, placed, devices, groups) -> list[tuple[int | None, str]]:
    """(replica or None, evidence) for each all-reduce op event (rules: docs/design/measure.md)."""
    out: list[tuple[int | None, str]] = []
    for _, _, kind, op, event in reduces:
        plane = planes.get(event.device_id, "")
        scope = re.search(r"(?:^|/)replica_(\d+)/", op)
        ends = _rendezvous(event.args) if kind in ("_Send", "_Recv") else None
        if not devices:
            out.append((None, "the replicas' devices are not known"))
        elif plane.startswith("/device:"):
            out.append(_on(plane, devices, "ran on the device plane"))
        elif scope and int(scope[1]) < len(devices):
            out.append((int(scope[1]), f"name scope replica_{scope[1]}/"))
        elif ends:
            device = ends[0] if kind == "_Send" else ends[1]
            out.append(_on(device, devices, f"rendezvous key of this {kind}"))
        elif len(placed.get(op, ())) == 1:
            (device,) = placed[op]
            out.append(_on(device, devices, "rendezvous key of a _Send/_Recv naming this op"))
        elif placed.get(op):
            out.append((None, f"rendezvous keys place it on {len(placed[op])} devices"))
        else:
            out.append((None, _NO_EVIDENCE))
    # A collective has one member per device: its last unattributed member is on the last one
    # (if nothing says where it ran: one on a device no replica uses is not the replicas').
    for members in groups.values():
        known = [out[i][0] for i in members if out[i][0] is not None]
        unknown = [i for i in members if out[i] == (None, _NO_EVIDENCE)]
        left = set(range(len(devices))) - set(known)
        if (
            len(members) == len(devices)
            and len(unknown) == 1
            and len(set(known)) == len(known)
            and len(left) == 1
        ):
            last = left.pop()
            out[unknown[0]] = (last, f"the last member of its collective group: {devices[last]}")
    return out


def _on(device: str, devices: Sequence[str], evidence: str) -> tuple[int | None, str]:
    replica = replica_of(device, devices)
    if replica is None:
        return None, f"ran on {device}, which is no replica's device"
    return replica, f"{evidence}: {device}"


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
