"""ClusterRun: the record of one local cluster run - results, events, output and exits.

Example:
    >>> from mirrorkit import ClusterRun
    >>> ClusterRun(num_workers=2, results=[1, 1]).result
    1
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mirrorkit.cluster import protocol
from mirrorkit.cluster.events import ClusterStatus, WorkerEvent


@dataclass
class ClusterRun:
    """What one cluster run did: each worker's result, events, output and exit.

    Attributes:
        num_workers: Workers in the cluster.
        num_ps: Parameter-server tasks; above 0, the run's processes are the chief, the
            workers and the parameter servers, in that order (see :attr:`tasks`), and
            ``results``, ``output`` and ``exits`` are indexed by that order.
        network: ``"private"`` (own network namespace) or ``"shared"`` (the machine's).
        network_note: How the namespace was made, or why the network is shared.
        addresses: Each worker's (each process's) ``host:port``.
        interfaces: Network interfaces the workers could use.
        listening: Listening TCP sockets seen from the workers' network once all joined.
        results: Each worker's return value (``None`` where it did not finish).
        events: Every :class:`mirrorkit.WorkerEvent`, in arrival order.
        status: The final :class:`mirrorkit.ClusterStatus`.
        output: The last lines each worker printed (at most 200 per worker: a worker that
            prints more has the rest counted in ``output_dropped`` and kept in ``logs``).
        output_dropped: Per worker, how many earlier lines ``output`` no longer holds.
        logs: Per worker, the file on disk that holds every line it printed (kept for this
            process's last 10 runs, in the temporary folder).
        exits: How each worker's process ended (``"exit status 0"``, ``"killed by SIGKILL"``).
        left_running: Processes the workers started (at any depth) that were still running
            when the run ended; the launcher ended them (``"pid 123 (sleep 600)"``).
        start_seconds: From launch until every worker had joined (``None`` if never).
        wall_seconds: From launch until the last process ended.
        launch: How the processes were started: forked from the kernel's warm process
            (see ``LocalCluster(warm=...)``), or as new Python processes, and why.

    Example:
        >>> from mirrorkit import ClusterRun
        >>> run = ClusterRun(num_workers=2, results=[{"loss": 0.5}, {"loss": 0.5}])
        >>> run.result
        {'loss': 0.5}
    """

    num_workers: int
    num_ps: int = 0
    network: str = ""
    network_note: str = ""
    addresses: list[str] = field(default_factory=list)
    interfaces: list[str] = field(default_factory=list)
    listening: list[str] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)
    events: list[WorkerEvent] = field(default_factory=list)
    status: ClusterStatus | None = None
    output: dict[int, list[str]] = field(default_factory=dict)
    output_dropped: dict[int, int] = field(default_factory=dict)
    logs: dict[int, str] = field(default_factory=dict)
    exits: dict[int, str] = field(default_factory=dict)
    left_running: list[str] = field(default_factory=list)
    start_seconds: float | None = None
    wall_seconds: float | None = None
    launch: str = ""

    @property
    def result(self) -> Any:
        """The chief's (worker 0's) return value.

        Example:
            >>> from mirrorkit import ClusterRun
            >>> ClusterRun(num_workers=1, results=[42]).result
            42
        """
        return self.results[0] if self.results else None

    @property
    def tf_configs(self) -> list[dict]:
        """The TF_CONFIG each worker (each process) was given, as dicts.

        Example:
            >>> from mirrorkit import ClusterRun
            >>> ClusterRun(num_workers=2, addresses=["127.0.0.1:1", "127.0.0.1:2"]).tf_configs[1]
            {'cluster': {'worker': ['127.0.0.1:1', '127.0.0.1:2']}, 'task': {'type': 'worker', 'index': 1}}
        """  # noqa: E501
        return protocol.cluster_tf_configs(self.addresses, self.num_ps) if self.addresses else []

    @property
    def tasks(self) -> list[str]:
        """Each process's name, in the order of ``results``: ``"worker 0"``, or ``"chief"``.

        Example:
            >>> from mirrorkit import ClusterRun
            >>> ClusterRun(num_workers=2, num_ps=1).tasks
            ['chief', 'worker 0', 'worker 1', 'ps 0']
        """
        return [
            protocol.task_label(job, i)
            for job, i in protocol.task_names(self.num_workers, self.num_ps)
        ]

    def summary(self) -> str:
        """One line per worker: state, steps, last loss and how its process ended.

        Example:
            >>> from mirrorkit import ClusterRun, ClusterStatus, WorkerEvent
            >>> status = ClusterStatus(1)
            >>> status.apply(WorkerEvent(0, "step", step=4, metrics={"loss": 0.125}))
            >>> status.apply(WorkerEvent(0, "finished"))
            >>> run = ClusterRun(num_workers=1, status=status, exits={0: "exit status 0"})
            >>> print(run.summary())
            worker 0 (chief): finished, 4 steps, last loss 0.125, exit status 0
        """
        lines = []
        names = self.tasks
        for worker in self.status.workers if self.status else []:
            role = " (chief)" if worker.is_chief and not self.num_ps else ""
            steps = f"{worker.step} steps" if worker.step is not None else "no steps"
            loss = f", last loss {worker.losses[-1][1]:.4g}" if worker.losses else ""
            ending = self.exits.get(worker.worker, "never started")
            why = f" - {worker.message}" if worker.message not in ("", ending) else ""
            name = names[worker.worker] if worker.worker < len(names) else f"worker {worker.worker}"
            lines.append(f"{name}{role}: {worker.state}, {steps}{loss}, {ending}{why}")
        return "\n".join(lines)
