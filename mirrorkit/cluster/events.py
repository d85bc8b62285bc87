"""What a local cluster reports while it runs: one event per change, folded into a status.

Example:
    >>> from mirrorkit import ClusterStatus, WorkerEvent
    >>> status = ClusterStatus(2)
    >>> status.apply(WorkerEvent(1, "step", step=3, metrics={"loss": 0.5}))
    >>> status.workers[1].state, status.workers[1].step
    ('training', 3)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from mirrorkit._validate import refuse, require_choice, require_count, require_int

# The life of one worker, in order. "failed" and "stopped" can follow any state.
WORKER_STATES = ("starting", "ready", "training", "finished", "failed", "stopped")

EVENT_KINDS = ("starting", "ready", "step", "output", "finished", "failed", "stopped")


@dataclass(frozen=True)
class WorkerEvent:
    """One thing that happened on one worker.

    Attributes:
        worker: The worker's task index in the cluster (0 is the chief).
        kind: One of :data:`EVENT_KINDS`.
        time: Seconds since the cluster was launched.
        step: The training step just finished (``kind == "step"``), else ``None``.
        metrics: Numbers reported with a step, such as ``{"loss": 0.25}``.
        text: A line the worker printed (``"output"``) or why it failed or stopped.
        address: The worker's ``host:port`` (``"starting"``).
        pid: The worker's process id (``"starting"``), for instance to freeze it by hand.
        devices: The devices the worker's strategy uses (``"ready"``).

    Example:
        >>> from mirrorkit import WorkerEvent
        >>> WorkerEvent(worker=1, kind="step", time=2.5, step=3, metrics={"loss": 0.5}).step
        3
    """

    worker: int
    kind: str
    time: float = 0.0
    step: int | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    text: str = ""
    address: str = ""
    pid: int | None = None
    devices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        require_choice("kind", self.kind, EVENT_KINDS, write="kind='step'")
        must = "a task index >= 0 (an int)"
        require_int("worker", self.worker, must=must, write="worker=0", minimum=0)

    def to_json(self) -> dict:
        """The event as a JSON-ready dict (the wire format between processes).

        Example:
            >>> from mirrorkit import WorkerEvent
            >>> WorkerEvent(0, "ready", devices=("/job:worker/task:0/device:CPU:0",)).to_json()[
            ...     "devices"]
            ['/job:worker/task:0/device:CPU:0']
        """
        return {
            "worker": self.worker,
            "kind": self.kind,
            "time": self.time,
            "step": self.step,
            "metrics": dict(self.metrics),
            "text": self.text,
            "address": self.address,
            "pid": self.pid,
            "devices": list(self.devices),
        }

    @classmethod
    def from_json(cls, data: dict) -> WorkerEvent:
        """Rebuild an event from :meth:`to_json`'s dict.

        Example:
            >>> from mirrorkit import WorkerEvent
            >>> event = WorkerEvent(2, "failed", time=1.0, text="exit status -9")
            >>> WorkerEvent.from_json(event.to_json()) == event
            True
        """
        return cls(
            worker=int(data["worker"]),
            kind=str(data["kind"]),
            time=float(data.get("time", 0.0)),
            step=None if data.get("step") is None else int(data["step"]),
            metrics={str(k): float(v) for k, v in (data.get("metrics") or {}).items()},
            text=str(data.get("text", "")),
            address=str(data.get("address", "")),
            pid=None if data.get("pid") is None else int(data["pid"]),
            devices=tuple(data.get("devices") or ()),
        )


@dataclass
class WorkerStatus:
    """Everything known about one worker at one moment.

    Attributes:
        worker: Task index (0 is the chief).
        state: One of :data:`WORKER_STATES`.
        address: ``host:port`` its gRPC server uses.
        devices: Devices its strategy uses, once ready.
        step: Last finished step, or ``None`` before the first.
        losses: ``(step, loss)`` pairs reported so far.
        last_output: The last lines it printed (at most 20).
        message: Why it failed or was stopped, else ``""``.

    Example:
        >>> from mirrorkit import WorkerStatus
        >>> WorkerStatus(worker=0).state
        'starting'
    """

    worker: int
    state: str = "starting"
    address: str = ""
    devices: tuple[str, ...] = ()
    step: int | None = None
    losses: list[tuple[int, float]] = field(default_factory=list)
    last_output: list[str] = field(default_factory=list)
    message: str = ""

    @property
    def is_chief(self) -> bool:
        """Whether this worker is the chief (task 0 of job ``worker``).

        Example:
            >>> from mirrorkit import WorkerStatus
            >>> WorkerStatus(worker=0).is_chief, WorkerStatus(worker=1).is_chief
            (True, False)
        """
        return self.worker == 0


_KEEP_LINES = 20


class ClusterStatus:
    """The state of every worker of a cluster, updated one :class:`WorkerEvent` at a time.

    Args:
        num_workers: How many workers the cluster has.

    Example:
        >>> from mirrorkit import ClusterStatus, WorkerEvent
        >>> status = ClusterStatus(2)
        >>> status.apply(WorkerEvent(0, "ready", devices=("/job:worker/task:0/device:CPU:0",)))
        >>> status.apply(WorkerEvent(0, "step", step=1, metrics={"loss": 0.5}))
        >>> status.workers[0].state, status.workers[0].losses, status.workers[1].state
        ('training', [(1, 0.5)], 'starting')
    """

    def __init__(self, num_workers: int) -> None:
        require_count("num_workers", num_workers, write="ClusterStatus(2)")
        self.workers = [WorkerStatus(worker=i) for i in range(num_workers)]
        self.events = 0

    def apply(self, event: WorkerEvent) -> None:
        """Fold one event into the status.

        Args:
            event: An event from this cluster's launcher.

        Raises:
            ValueError: If the event names a worker this cluster does not have.

        Example:
            >>> from mirrorkit import ClusterStatus, WorkerEvent
            >>> status = ClusterStatus(1)
            >>> status.apply(WorkerEvent(0, "failed", text="killed by SIGKILL"))
            >>> status.workers[0].state, status.workers[0].message
            ('failed', 'killed by SIGKILL')
        """
        if event.worker >= len(self.workers):
            last = len(self.workers) - 1
            refuse(
                "event.worker",
                event.worker,
                must=f"a worker of this cluster, which has {last + 1} workers (0..{last})",
                write=f"WorkerEvent({last}, ...)",
                error=ValueError,
            )
        status = self.workers[event.worker]
        self.events += 1
        if event.kind == "starting":
            status.state = "starting"
            status.address = event.address or status.address
        elif event.kind == "ready":
            status.state = "ready"
            status.devices = tuple(event.devices)
        elif event.kind == "step":
            status.state = "training"
            status.step = event.step
            loss = event.metrics.get("loss")
            if loss is not None and event.step is not None and math.isfinite(loss):
                status.losses.append((event.step, float(loss)))
        elif event.kind == "output":
            status.last_output = [*status.last_output, event.text][-_KEEP_LINES:]
        elif event.kind in ("finished", "failed", "stopped"):
            status.state = event.kind
            status.message = event.text

    @property
    def num_workers(self) -> int:
        """How many workers the cluster has.

        Example:
            >>> from mirrorkit import ClusterStatus
            >>> ClusterStatus(3).num_workers
            3
        """
        return len(self.workers)
