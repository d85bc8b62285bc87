"""What the launcher, its supervisor and the workers say to each other, as typed messages.

Each message is a frozen dataclass that declares its ``type`` on the wire; one table,
:data:`MESSAGES`, maps those names back to classes. The four channels of a run:
docs/design/cluster.md. What the launcher's owner loop reads of its cluster is
:class:`ClusterSettings`.

Example:
    >>> from mirrorkit.cluster.protocol import Exit, decode, encode
    >>> encode(Exit(worker=1, returncode=-9))
    '{"type": "exit", "worker": 1, "returncode": -9}'
    >>> decode(encode(Exit(worker=1, returncode=-9)))
    Exit(worker=1, returncode=-9)
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from mirrorkit._validate import require_int
from mirrorkit.cluster.events import WorkerEvent

#: The environment variable holding the file descriptor a worker writes its events to.
EVENT_FD = "MIRRORKIT_EVENT_FD"
#: The environment variable holding the supervisor's process id (workers die with it).
SUPERVISOR_PID = "MIRRORKIT_SUPERVISOR_PID"
#: In parameter-server mode, the chief's variable holding the server processes' ids (JSON).
SERVER_PIDS = "MIRRORKIT_SERVER_PIDS"
#: The environment variable every worker (and what it starts) inherits: the run's folder.
RUN_MARKER = "MIRRORKIT_RUN"
#: The launcher's workers inherit their owner's identity here (JSON), so a run is one writer.
RUN_OWNER = "MIRRORKIT_RUN_OWNER"
#: The launch spec's file name in the run's folder.
SPEC_FILE = "spec.json"
#: The pickled function or script the workers run, in the run's folder.
PAYLOAD_FILE = "payload.pkl"
#: What the owner writes on the supervisor's stdin to end the run early.
STOP = "stop"
#: How the run folders begin (in the temporary folder), followed by the owner's pid, "-" and a
#: random part. The warm process's command line ends the same way (``...-warm``), so every
#: process of an owner's clusters, forked ones included, has it in its command line.
RUN_PREFIX = "mirrorkit-cluster-"


def result_file(worker: int) -> str:
    """The file in the run's folder where ``worker`` leaves its pickled return value.

    Example:
        >>> from mirrorkit.cluster.protocol import result_file
        >>> result_file(1)
        'result-1.pkl'
    """
    return f"result-{worker}.pkl"


@dataclass(frozen=True)
class KillWorker:
    """Fault injection: SIGKILL one worker right after it reports a chosen step.

    The worker's :meth:`mirrorkit.WorkerContext.report` call for that step kills
    the process, as a power cut or an out-of-memory kill would.

    Attributes:
        worker: Task index of the worker to kill.
        at_step: The step after which it dies (1 is the first step).

    Raises:
        TypeError: If ``worker`` or ``at_step`` is not an int.
        ValueError: If ``worker`` is negative or ``at_step`` below 1. A ``worker`` beyond
            the cluster is refused by :meth:`mirrorkit.LocalCluster.run`.

    Example:
        >>> from mirrorkit import KillWorker
        >>> KillWorker(worker=1, at_step=3)
        KillWorker(worker=1, at_step=3)
    """

    worker: int
    at_step: int

    def __post_init__(self) -> None:
        write = "KillWorker(worker=1, at_step=3)"
        must = (
            "the index of the worker to kill, an int >= 0 (0 is the chief, 1 the next worker; "
            "one worker per KillWorker)"
        )
        require_int("KillWorker.worker", self.worker, must=must, write=write, minimum=0)
        must = "the step after which it dies, an int >= 1 (the first step is 1)"
        require_int("KillWorker.at_step", self.at_step, must=must, write=write, minimum=1)


@dataclass(frozen=True)
class LaunchSpec:
    """Everything the supervisor and the workers of one run need to know, from the owner.

    Attributes:
        num_workers: Workers in the cluster.
        network: ``"private"`` or ``"shared"`` (see :data:`mirrorkit.NETWORKS`).
        host: The address the workers listen on.
        run_dir: The run's folder (spec, payload, results).
        cwd: The workers' working directory.
        seed: Passed to :func:`mirrorkit.make_reproducible` on every worker.
        collective_timeout: Seconds each collective may take, or ``None``.
        grace_seconds: How long a stopped worker gets before SIGKILL.
        env: Environment variables every worker gets on top of the supervisor's.
        absent: Workers deliberately never started.
        fault: The worker to kill, and after which step, or ``None``.
        logical_devices: CPU devices per worker, or ``None`` for TensorFlow's default.
        num_ps: Parameter-server tasks; above 0, the processes are a chief (the coordinator),
            ``num_workers`` workers and ``num_ps`` parameter servers (see :func:`task_names`).

    Example:
        >>> from mirrorkit.cluster.protocol import KillWorker, LaunchSpec
        >>> spec = LaunchSpec(num_workers=2, network="private", host="127.0.0.1",
        ...                   run_dir="/tmp/run", cwd="/tmp", seed=0, collective_timeout=None,
        ...                   grace_seconds=2.0, env={}, fault=KillWorker(1, at_step=3))
        >>> LaunchSpec.from_json(spec.to_json()) == spec
        True
    """

    num_workers: int
    network: str
    host: str
    run_dir: str
    cwd: str
    seed: int
    collective_timeout: float | None
    grace_seconds: float
    env: dict[str, str]
    absent: tuple[int, ...] = ()
    fault: KillWorker | None = None
    logical_devices: int | None = None
    num_ps: int = 0

    @property
    def tasks(self) -> list[tuple[str, int]]:
        """Each process's ``(job, task index)``, in the launcher's process order."""
        return task_names(self.num_workers, self.num_ps)

    def to_json(self) -> str:
        """The spec as one JSON document (what :data:`SPEC_FILE` holds)."""
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> LaunchSpec:
        """Read a spec back from :meth:`to_json`'s text."""
        data = json.loads(text)
        fault = data.pop("fault")
        return cls(
            **{**data, "absent": tuple(data["absent"])},
            fault=None if fault is None else KillWorker(**fault),
        )

    def write(self) -> None:
        """Save the spec in its run's folder."""
        (Path(self.run_dir) / SPEC_FILE).write_text(self.to_json())

    @classmethod
    def read(cls, run_dir: str | os.PathLike) -> LaunchSpec:
        """Load the spec saved in ``run_dir``."""
        return cls.from_json((Path(run_dir) / SPEC_FILE).read_text())

    def fault_for(self, worker: int) -> KillWorker | None:
        """The fault to inject into ``worker``, if it is the one chosen.

        Example:
            >>> from mirrorkit.cluster.protocol import KillWorker, LaunchSpec
            >>> spec = LaunchSpec(2, "private", "127.0.0.1", "/tmp/run", "/tmp", 0, None, 2.0,
            ...                   {}, fault=KillWorker(1, at_step=3))
            >>> spec.fault_for(0), spec.fault_for(1)
            (None, KillWorker(worker=1, at_step=3))
        """
        return self.fault if self.fault is not None and self.fault.worker == worker else None


class ClusterSettings(Protocol):
    """What the launcher's owner loop (``_session.Session``) reads of its cluster.

    :class:`mirrorkit.LocalCluster` is one; the owner loop sits below the launcher, so it
    names what it needs here rather than the class.
    """

    num_workers: int
    num_ps: int
    echo: bool
    env: dict[str, str]
    warm: bool
    start_timeout: float
    grace_seconds: float

    @property
    def num_processes(self) -> int:
        """The workers, and the chief and the parameter servers if any."""
        ...


def task_names(num_workers: int, num_ps: int = 0) -> list[tuple[str, int]]:
    """Each process of a run as ``(job, task index)``, in the launcher's process order.

    Without parameter servers every process is a worker (worker 0 is the chief). With
    them, process 0 is the chief (the coordinator), then the workers, then the
    parameter servers.

    Example:
        >>> from mirrorkit.cluster.protocol import task_names
        >>> task_names(2)
        [('worker', 0), ('worker', 1)]
        >>> task_names(2, num_ps=1)
        [('chief', 0), ('worker', 0), ('worker', 1), ('ps', 0)]
    """
    if not num_ps:
        return [("worker", i) for i in range(num_workers)]
    return [
        ("chief", 0),
        *(("worker", i) for i in range(num_workers)),
        *(("ps", i) for i in range(num_ps)),
    ]


def task_label(job: str, index: int) -> str:
    """How output and messages name a process: ``"chief"``, ``"worker 1"``, ``"ps 0"``.

    Example:
        >>> from mirrorkit.cluster.protocol import task_label
        >>> task_label("chief", 0), task_label("ps", 0)
        ('chief', 'ps 0')
    """
    return "chief" if job == "chief" else f"{job} {index}"


def cluster_tf_configs(addresses: list[str] | tuple[str, ...], num_ps: int = 0) -> list[dict]:
    """The TF_CONFIG of each process of a run, from one address per process.

    Args:
        addresses: One ``host:port`` per process, in :func:`task_names` order.
        num_ps: Parameter-server tasks (0: a ``MultiWorkerMirroredStrategy`` cluster).

    Example:
        >>> from mirrorkit.cluster.protocol import cluster_tf_configs
        >>> configs = cluster_tf_configs(["h:1", "h:2", "h:3"], num_ps=1)
        >>> configs[0]["cluster"]
        {'chief': ['h:1'], 'worker': ['h:2'], 'ps': ['h:3']}
        >>> configs[2]["task"]
        {'type': 'ps', 'index': 0}
    """
    if not num_ps:
        from mirrorkit.cluster.scaleout import tf_configs

        return tf_configs(list(addresses))
    tasks = task_names(len(addresses) - 1 - num_ps, num_ps)
    cluster: dict[str, list[str]] = {}
    for (job, _), address in zip(tasks, addresses, strict=True):
        cluster.setdefault(job, []).append(address)
    return [
        {"cluster": {k: list(v) for k, v in cluster.items()}, "task": {"type": j, "index": i}}
        for j, i in tasks
    ]


# -- the supervisor's messages to the owner ------------------------------------------------


@dataclass(frozen=True)
class Network:
    """The network the workers got: ``"private"`` (and how) or ``"shared"`` (and why)."""

    type: ClassVar[str] = "network"
    mode: str
    note: str
    addresses: tuple[str, ...]
    interfaces: tuple[str, ...]


@dataclass(frozen=True)
class Spawned:
    """A worker process was started."""

    type: ClassVar[str] = "spawned"
    worker: int
    pid: int
    address: str


@dataclass(frozen=True)
class Output:
    """One line a worker printed."""

    type: ClassVar[str] = "output"
    worker: int
    text: str


@dataclass(frozen=True)
class Event:
    """An event a worker reported on its event channel."""

    type: ClassVar[str] = "event"
    event: WorkerEvent


@dataclass(frozen=True)
class Flight:
    """Where a worker is: its flight record, sent once a second, to name who holds up whom.

    ``record`` holds the fields of :class:`mirrorkit.cluster._flight.Record`.
    """

    type: ClassVar[str] = "flight"
    worker: int
    record: dict


@dataclass(frozen=True)
class Listening:
    """The listening sockets seen from the workers' network once all of them joined."""

    type: ClassVar[str] = "listening"
    sockets: tuple[str, ...]


@dataclass(frozen=True)
class Exit:
    """A worker process ended with ``returncode`` (negative: killed by that signal)."""

    type: ClassVar[str] = "exit"
    worker: int
    returncode: int


@dataclass(frozen=True)
class Swept:
    """Processes the workers started that were still running when the run ended, now ended."""

    type: ClassVar[str] = "swept"
    processes: tuple[str, ...]


@dataclass(frozen=True)
class Stopped:
    """The supervisor stopped every worker, as the owner asked, and is leaving."""

    type: ClassVar[str] = "stopped"


@dataclass(frozen=True)
class Done:
    """Every worker ended on its own."""

    type: ClassVar[str] = "done"


@dataclass(frozen=True)
class Fatal:
    """The supervisor could not set the run up (the text says why)."""

    type: ClassVar[str] = "fatal"
    text: str


SupervisorMessage = (
    Network | Spawned | Output | Event | Flight | Listening | Exit | Swept | Stopped | Done | Fatal
)

#: Wire name -> message class: the one table both ends use.
MESSAGES: dict[str, type] = {
    cls.type: cls
    for cls in (
        Network,
        Spawned,
        Output,
        Event,
        Flight,
        Listening,
        Exit,
        Swept,
        Stopped,
        Done,
        Fatal,
    )
}


def encode(message: SupervisorMessage) -> str:
    """One message as a JSON line (without its newline).

    Example:
        >>> from mirrorkit.cluster.protocol import Output, encode
        >>> encode(Output(worker=0, text="step 1"))
        '{"type": "output", "worker": 0, "text": "step 1"}'
    """
    fields = {f.name: getattr(message, f.name) for f in dataclasses.fields(message)}
    if isinstance(message, Event):
        fields["event"] = message.event.to_json()
    return json.dumps({"type": message.type, **fields})


def decode(line: str) -> SupervisorMessage:
    """Read one message back from :func:`encode`'s line.

    Raises:
        ValueError: If the line is not JSON or names no known message type.

    Example:
        >>> from mirrorkit.cluster.protocol import decode
        >>> decode('{"type": "listening", "sockets": ["127.0.0.1:4000"]}')
        Listening(sockets=('127.0.0.1:4000',))
        >>> decode('{"type": "hello"}')
        Traceback (most recent call last):
        ...
        ValueError: unknown message type 'hello' from the supervisor
    """
    data = json.loads(line)
    kind = data.pop("type", None)
    cls = MESSAGES.get(kind)
    if cls is None:
        raise ValueError(f"unknown message type {kind!r} from the supervisor")
    if cls is Event:
        return Event(WorkerEvent.from_json(data["event"]))
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


class EventChannel:
    """A worker's events to its supervisor, as JSON lines on an inherited file descriptor.

    Without a descriptor (a worker started by a real cluster's scheduler) it sends nothing.

    Args:
        fd: The descriptor :data:`EVENT_FD` names, or ``None``.

    Example:
        >>> from mirrorkit import WorkerEvent
        >>> from mirrorkit.cluster.protocol import EventChannel
        >>> EventChannel(None).send(WorkerEvent(0, "step", step=1))  # goes nowhere
    """

    def __init__(self, fd: int | None) -> None:
        self._stream = os.fdopen(fd, "w", buffering=1) if fd is not None else None
        self._lock = threading.Lock()

    @classmethod
    def from_environment(cls) -> EventChannel:
        """The channel :data:`EVENT_FD` names (and removes from the environment), if any."""
        fd = os.environ.pop(EVENT_FD, None)
        return cls(int(fd) if fd else None)

    def send(self, event: WorkerEvent) -> None:
        """Send one event (thread-safe)."""
        self._write(event.to_json())

    def send_flight(self, record: dict) -> None:
        """Send this worker's flight record (thread-safe), read back as a :class:`Flight`."""
        self._write({"flight": record})

    def _write(self, data: dict) -> None:
        if self._stream is None:
            return
        with self._lock:
            self._stream.write(json.dumps(data) + "\n")
            self._stream.flush()


def read_events(stream: Any, worker: int):
    """Yield the events a worker sent (its index stamped on each) and its flight records.

    Each event line gives a :class:`~mirrorkit.WorkerEvent`, each record a :class:`Flight`;
    a line that is neither (the worker wrote garbage to the descriptor) is skipped.

    Example:
        >>> import io
        >>> from mirrorkit.cluster.protocol import read_events
        >>> lines = io.BytesIO(b'{"worker": 0, "kind": "finished"}' + bytes([10]) + b"not json")
        >>> [(e.worker, e.kind) for e in read_events(lines, worker=3)]
        [(3, 'finished')]
    """
    for raw in stream:
        try:
            data = json.loads(raw)
            if isinstance(data.get("flight"), dict):
                yield Flight(worker, data["flight"])
            else:
                yield WorkerEvent.from_json({**data, "worker": worker})
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
