"""LocalCluster: a real MultiWorkerMirroredStrategy cluster of local processes, from a notebook.

Each worker is its own Python process with its own TF_CONFIG, talking to the others
over gRPC on loopback ports picked for the run. By default the workers live in a
private network namespace, so their unauthenticated gRPC servers (which TensorFlow
binds to every interface) are reachable from nowhere else. Every wait is bounded,
every process ends with the run, and a worker that fails is reported with its exit
status and the last lines it printed.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import inspect
import numbers
import os
import queue
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mirrorkit._validate import require_flag, require_seconds
from mirrorkit.cluster import _procs, _warm, protocol as p
from mirrorkit.cluster.events import ClusterStatus, WorkerEvent
from mirrorkit.cluster.protocol import KillWorker
from mirrorkit.cluster.worker import calling_on_event, joins_by_itself, target_problem
from mirrorkit.errors import (
    ClusterError,
    ClusterSecurityWarning,
    ClusterStartError,
    ClusterTimeoutError,
    WorkerFailedError,
)

NETWORKS = ("private", "shared")

_LAST_LINES = 8
_live_supervisors: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _stop_live_supervisors() -> None:  # the kernel is shutting down: take the workers along
    for process in list(_live_supervisors):
        if process.poll() is None:
            process.kill()


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
        output: Lines each worker printed.
        exits: How each worker's process ended (``"exit status 0"``, ``"killed by SIGKILL"``).
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
    exits: dict[int, str] = field(default_factory=dict)
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
        return p.cluster_tf_configs(self.addresses, self.num_ps) if self.addresses else []

    @property
    def tasks(self) -> list[str]:
        """Each process's name, in the order of ``results``: ``"worker 0"``, or ``"chief"``.

        Example:
            >>> from mirrorkit import ClusterRun
            >>> ClusterRun(num_workers=2, num_ps=1).tasks
            ['chief', 'worker 0', 'worker 1', 'ps 0']
        """
        return [p.task_label(job, i) for job, i in p.task_names(self.num_workers, self.num_ps)]

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


class LocalCluster:
    """Run a function on a real ``MultiWorkerMirroredStrategy`` cluster of local processes.

    Each run starts ``num_workers`` new processes, each joins the cluster
    (``MultiWorkerMirroredStrategy`` from its own TF_CONFIG), runs your function with a
    :class:`mirrorkit.WorkerContext`, and hands its return value back. Their output
    is printed here, labelled. When the run ends - finished, failed, timed out or
    interrupted with the stop button - every process is gone; if the notebook's
    kernel dies, the kernel's death takes them too.

    Args:
        num_workers: How many worker processes (1-16).
        network: ``"private"`` (default): the workers get their own network namespace
            whose only interface is loopback; if the system refuses namespaces, the
            run falls back to the machine's network with a
            :class:`mirrorkit.ClusterSecurityWarning`. ``"shared"``: use the machine's
            network (TensorFlow's servers then listen on every interface, unauthenticated).
        start_timeout: Seconds for every worker to start and join the cluster.
            TensorFlow itself waits an hour for a missing worker (its coordination
            service's default registration timeout).
        seed: Seed each worker applies with :func:`mirrorkit.make_reproducible`.
        collective_timeout: Seconds each collective may take (TensorFlow's
            ``CommunicationOptions.timeout_seconds``); ``None`` for no limit.
        echo: Print each worker's output here as it arrives, as ``[worker N] ...``.
        env: Extra environment variables for the workers.
        grace_seconds: How long a stopped worker gets to end before SIGKILL.
        logical_devices: Split each worker's CPU into this many logical devices before
            it joins (as :func:`mirrorkit.simulate_replicas` does in one process), to see
            what ``MultiWorkerMirroredStrategy`` does with them: it uses one device per
            worker without GPUs, so this does not add replicas.
        num_ps: Parameter-server tasks (0-4). With 0 (the default) the cluster is
            ``num_workers`` workers of a ``MultiWorkerMirroredStrategy``. Above 0 it is a
            ``ParameterServerStrategy`` cluster: a chief process (the coordinator) that runs
            your function with ``context.strategy`` a ``ParameterServerStrategy``, plus
            ``num_workers`` worker and ``num_ps`` parameter-server processes that only serve
            (a ``tf.distribute.Server`` each) until the chief's function returns. Steps run
            on the workers when the chief schedules them with a
            ``tf.distribute.coordinator.ClusterCoordinator``.
        warm: Start the processes warm (default, on Linux): the kernel's first run starts a
            warm process that imports TensorFlow once and forks the processes of every run,
            which start with TensorFlow imported and its runtime not yet started (each
            configures its own, as a new process does). Later runs skip the import, most
            of a start. The warm process ends with the kernel, or after 10 minutes without
            a run; ``ClusterRun.launch`` says how each run started. ``False``: every
            process is a new Python process that imports TensorFlow itself (as on systems
            where forking is not possible or not safe, which fall back to it).

    Raises:
        TypeError: If ``num_workers`` is not an int, a number of seconds is not a number, or
            ``env`` is not a dict of strings.
        ValueError: If ``num_workers`` is outside 1-16, ``network`` unknown, a timeout not
            above 0 or ``logical_devices`` below 1; if ``num_ps`` is not an int from 0 to 4,
            or is above 0 together with ``logical_devices`` or ``collective_timeout`` (which
            only a ``MultiWorkerMirroredStrategy`` uses).

    Example:
        >>> from mirrorkit import LocalCluster
        >>> LocalCluster(num_workers=0)
        Traceback (most recent call last):
        ...
        ValueError: num_workers must be an int from 1 to 16, got 0.
    """

    def __init__(
        self,
        num_workers: int = 2,
        *,
        network: str = "private",
        start_timeout: float = 60.0,
        seed: int = 0,
        collective_timeout: float | None = None,
        echo: bool = True,
        env: dict[str, str] | None = None,
        grace_seconds: float = 2.0,
        logical_devices: int | None = None,
        num_ps: int = 0,
        warm: bool = True,
    ) -> None:
        if isinstance(num_workers, bool) or not isinstance(num_workers, int):
            raise TypeError(
                f"num_workers must be an int from 1 to 16, got {_kind(num_workers)}: "
                "write LocalCluster(2) for two worker processes."
            )
        if not 1 <= num_workers <= 16:
            raise ValueError(f"num_workers must be an int from 1 to 16, got {num_workers}.")
        if network not in NETWORKS:
            raise ValueError(
                f"network must be one of {NETWORKS}, got {network!r}. Clusters of several "
                "machines are not launched from here: see mirrorkit.cluster.scaleout."
            )
        start_timeout = require_seconds("start_timeout", start_timeout, write="start_timeout=60")
        if collective_timeout is not None:
            example = "collective_timeout=30"
            require_seconds("collective_timeout", collective_timeout, write=example)
        if not isinstance(env, dict | type(None)) or any(
            not isinstance(k, str) or not isinstance(v, str) for k, v in (env or {}).items()
        ):
            raise TypeError(
                f"env must be a dict of strings (environment variables), got {env!r}: "
                "write env={'NAME': 'value'}, numbers quoted, e.g. env={'BATCH': '64'}."
            )
        self.num_workers = num_workers
        self.network = network
        self.start_timeout = start_timeout
        self.seed = seed
        self.collective_timeout = collective_timeout
        self.echo = echo
        self.env = dict(env or {})
        self.grace_seconds = require_seconds(
            "grace_seconds", grace_seconds, write="grace_seconds=2", allow_zero=True
        )
        if logical_devices is not None and (
            isinstance(logical_devices, bool)
            or not isinstance(logical_devices, int)
            or logical_devices < 1
        ):
            raise ValueError(f"logical_devices must be an int >= 1, got {logical_devices!r}.")
        self.logical_devices = logical_devices
        self.num_ps = _check_num_ps(num_ps, logical_devices, collective_timeout)
        require_flag("warm", warm, effect="to start every process as a new Python process")
        self.warm = warm

    @property
    def num_processes(self) -> int:
        """Processes per run: the workers, plus the chief and the parameter servers if any.

        Example:
            >>> from mirrorkit import LocalCluster
            >>> LocalCluster(2).num_processes, LocalCluster(2, num_ps=1).num_processes
            (2, 4)
        """
        return self.num_workers + (1 + self.num_ps if self.num_ps else 0)

    def run(
        self,
        function: Callable[..., Any],
        args: Sequence[Any] = (),
        kwargs: dict[str, Any] | None = None,
        *,
        on_event: Callable[[WorkerEvent], Any] | None = None,
        timeout: float | None = None,
        fault: KillWorker | None = None,
        absent: Sequence[int] = (),
    ) -> ClusterRun:
        """Run ``function(context, *args, **kwargs)`` on every worker and collect the results.

        The function is sent to the workers by value (cloudpickle), so it can be
        defined in the notebook; build TensorFlow objects inside it, not outside.
        With ``num_ps`` above 0 it runs on the chief only (the coordinator of a
        ``ParameterServerStrategy``); ``fault=KillWorker(worker=k, at_step=s)`` then kills
        worker task ``k`` when the chief reports step ``s``, and a worker task that dies
        after the cluster formed does not end the run (the coordinator runs its steps on
        the other workers).

        Args:
            function: Called on each worker with a :class:`mirrorkit.WorkerContext` first.
            args: More positional arguments (picklable).
            kwargs: Keyword arguments (picklable).
            on_event: Called here with each :class:`mirrorkit.WorkerEvent` as it arrives
                (``mirrorwidgets.ClusterView(...).update`` draws them).
            timeout: Seconds the whole run may take; ``None`` for no limit.
            fault: A :class:`KillWorker` to inject.
            absent: Workers that get an address but are never started, to see what a
                missing worker does (the run fails after ``start_timeout``). Not with
                ``num_ps``.

        Returns:
            A :class:`ClusterRun`; ``run.result`` is the chief's return value.

        Raises:
            TypeError: Before any process starts: ``function`` is not a function that can be
                called as ``function(context, *args, **kwargs)`` (a string, a Keras model, a
                function without the context parameter), ``args``, ``kwargs``, ``on_event``,
                ``fault`` or ``absent`` is of the wrong kind, or something in them cannot be
                sent to the workers (a strategy, a dataset, an open file).
            ValueError: Before any process starts: ``timeout`` is not above 0, ``fault``
                or ``absent`` names a worker outside the cluster, or ``absent`` is given to a
                parameter-server cluster.
            ClusterStartError: A worker did not start or the cluster did not form in time.
            WorkerFailedError: A worker failed or died; the others were stopped.
            ClusterTimeoutError: The run exceeded ``timeout``.

        Example:
            >>> import mirrorkit as mk
            >>> def replicas(context):
            ...     return context.task_id, context.strategy.num_replicas_in_sync
            >>> run = mk.LocalCluster(2, echo=False).run(replicas)
            >>> run.results
            [(0, 2), (1, 2)]
        """
        args, kwargs = _check_arguments(args, kwargs)
        _check_function(function, args, kwargs)
        payload = {"kind": "function", "function": function, "args": args, "kwargs": kwargs}
        return self._launch(payload, on_event, timeout, fault, absent, _module_of(function))

    def run_script(
        self,
        path: str | os.PathLike,
        args: Sequence[str] = (),
        *,
        on_event: Callable[[WorkerEvent], Any] | None = None,
        timeout: float | None = None,
        fault: KillWorker | None = None,
    ) -> ClusterRun:
        """Run a training script on every worker (``path.py`` or ``path.py:function``).

        A plain script is run as ``__main__`` after its worker joined the cluster; it
        gets the strategy with ``mirrorkit.current_context().strategy``. With
        ``:function``, that function is called with the context and its return
        value is collected. Either way, the same file runs on a real cluster with
        ``python -m mirrorkit.worker``.

        A plain script that builds its own ``tf.distribute.MultiWorkerMirroredStrategy``
        (found by reading it) is plain TensorFlow: its worker does not join for it but
        runs it with TF_CONFIG set, and the script joins when it creates the strategy,
        exactly as ``python train.py`` would on a real cluster. The launcher then sees
        no steps, only its output and how it ended: ``fault`` needs a script that
        reports, and ``start_timeout`` bounds only the processes' start.

        Args:
            path: The script, optionally followed by ``:function``.
            args: Command-line arguments the script sees in ``sys.argv[1:]``.
            on_event: As in :meth:`run`.
            timeout: As in :meth:`run`.
            fault: As in :meth:`run`.

        Returns:
            A :class:`ClusterRun`.

        Raises:
            FileNotFoundError: If the script does not exist.
            ValueError: If ``path`` is a folder, a notebook or not a ``.py`` file, or names a
                function the script does not define; ``fault`` with a script that builds its
                own strategy; ``timeout`` or ``fault`` as in :meth:`run`; the cluster has
                parameter servers (use :meth:`run`). All before any process starts.
            TypeError: If ``path`` is not a file name (a function: use :meth:`run`) or
                ``args`` is a string instead of a list.

        Example:
            >>> import mirrorkit as mk
            >>> mk.LocalCluster(2).run_script("/no/such/train.py")
            Traceback (most recent call last):
            ...
            FileNotFoundError: path '/no/such/train.py' names no file: check the name, or give the script's full path.
        """  # noqa: E501
        if callable(path) and not isinstance(path, str | os.PathLike):
            raise TypeError(
                f"path must be a script's file name, got the function "
                f"{getattr(path, '__name__', type(path).__name__)}: run a function with "
                "run(function), a script with run_script('train.py')."
            )
        if not isinstance(path, str | os.PathLike):
            raise TypeError(
                f"path must be a script's file name (str or pathlib.Path), got {_kind(path)}: "
                "write run_script('train.py') or run_script('train.py:train')."
            )
        if self.num_ps:
            raise ValueError(
                f"run_script runs MultiWorkerMirroredStrategy scripts; this cluster has "
                f"num_ps={self.num_ps} parameter servers: import the script's training "
                "function and call run(train), which runs it on the chief."
            )
        file, _, function = str(path).partition(":")
        problem = target_problem(file, function)
        if problem is not None:
            error, text = problem
            raise error(f"path {str(path)!r} {text}")
        if isinstance(args, str) or not isinstance(args, list | tuple):
            example = shlex.split(args) if isinstance(args, str) else ["--epochs", "3"]
            raise TypeError(
                f"args must be a list of command-line arguments, got {_kind(args)}: "
                f"write args={example!r}."
            )
        joins = not function and joins_by_itself(file)
        if joins and fault is not None:
            raise ValueError(
                f"fault cannot be injected into {Path(file).name}: it builds its own "
                "MultiWorkerMirroredStrategy, so the launcher never sees its steps. Take the "
                "strategy from mirrorkit.current_context().strategy and call "
                "current_context().report(step) after each step, or run it without fault=."
            )
        target = str(Path(file).resolve()) + (f":{function}" if function else "")
        payload = {
            "kind": "script",
            "path": target,
            "args": [str(a) for a in args],
            "joins_by_itself": joins,
        }
        return self._launch(payload, on_event, timeout, fault, (), None)

    # -- the run itself -------------------------------------------------------------

    def _launch(self, payload, on_event, timeout, fault, absent, module) -> ClusterRun:
        last = self.num_workers - 1
        if on_event is not None and not callable(on_event):
            raise TypeError(
                f"on_event must be a function called with each WorkerEvent, got "
                f"{type(on_event).__name__}: pass a function, e.g. on_event=events.append to "
                "collect them in a list, or on_event=view.update for a mirrorwidgets.ClusterView."
            )
        if timeout is not None:
            require_seconds("timeout", timeout, write="timeout=120 (or None for no limit)")
        if fault is not None and not isinstance(fault, KillWorker):
            raise TypeError(
                f"fault must be a mirrorkit.KillWorker, got {_kind(fault)}: write "
                f"fault=mk.KillWorker(worker={last}, at_step=3)."
            )
        if fault is not None and not 0 <= fault.worker < self.num_workers:
            raise ValueError(
                f"fault=KillWorker(worker={fault.worker}, ...) names no worker: this cluster "
                f"has workers 0..{last}; pick one of them, e.g. KillWorker(worker={last}, "
                f"at_step={fault.at_step})."
            )
        if (
            isinstance(absent, str)
            or not isinstance(absent, Sequence | set | frozenset)
            or any(isinstance(a, bool) or not isinstance(a, numbers.Integral) for a in absent)
        ):
            raise TypeError(
                f"absent must be a list of worker indices, got {_kind(absent)}: "
                f"write absent=[{last}]."
            )
        absent = sorted({int(a) for a in absent})
        if absent and self.num_ps:
            raise ValueError(
                f"absent={absent} is for MultiWorkerMirroredStrategy clusters, whose workers "
                "wait for each other; this cluster has parameter servers: leave absent out, "
                "and kill a worker during the run with fault=mk.KillWorker(worker=1, "
                "at_step=3) instead."
            )
        if any(not 0 <= a < self.num_workers for a in absent):
            raise ValueError(
                f"absent workers must be in 0..{last}, got {absent}: write absent=[{last}]."
            )
        _remove_stale_run_folders()
        run_dir = Path(tempfile.mkdtemp(prefix=f"{p.RUN_PREFIX}{os.getpid()}-"))
        try:
            (run_dir / p.PAYLOAD_FILE).write_bytes(_dumps(payload, module))
            p.LaunchSpec(
                num_workers=self.num_workers,
                network=self.network,
                host="127.0.0.1",
                run_dir=str(run_dir),
                cwd=os.getcwd(),
                seed=self.seed,
                collective_timeout=self.collective_timeout,
                grace_seconds=self.grace_seconds,
                env={**_worker_environment(), **self.env},
                absent=tuple(absent),
                fault=fault,
                logical_devices=self.logical_devices,
                num_ps=self.num_ps,
            ).write()
            session = _Session(self, run_dir, on_event, timeout, absent)
            return session.run()
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)


def stop_warm_process() -> bool:
    """End this kernel's warm process (see ``LocalCluster(warm=...)``) now, freeing its memory.

    Its supervisors and workers, if a run is going on, end with it. The next warm run starts
    a new one (and imports TensorFlow again), as after installing another version of a
    package the workers import. It also ends by itself with the kernel, or after 10 minutes
    without a run.

    Returns:
        Whether there was a warm process to end.

    Example:
        >>> import mirrorkit as mk
        >>> mk.stop_warm_process() in (True, False)
        True
    """
    return _warm.stop()


def _check_num_ps(num_ps: Any, logical_devices: Any, collective_timeout: Any) -> int:
    """``num_ps`` if it makes a cluster, or a clear error saying what to write."""
    if isinstance(num_ps, bool) or not isinstance(num_ps, int):
        raise TypeError(
            f"num_ps must be an int from 0 to 4 (parameter-server tasks), got {_kind(num_ps)}: "
            "write LocalCluster(2, num_ps=1) for a chief, two workers and one parameter server."
        )
    if not 0 <= num_ps <= 4:
        raise ValueError(
            f"num_ps must be an int from 0 to 4, got {num_ps}: 0 for a "
            "MultiWorkerMirroredStrategy cluster, 1 or more for a ParameterServerStrategy "
            "cluster with that many parameter servers."
        )
    if num_ps and logical_devices is not None:
        raise ValueError(
            f"logical_devices={logical_devices!r} splits a worker's CPU for "
            "MultiWorkerMirroredStrategy; a ParameterServerStrategy (num_ps > 0) counts only "
            "GPUs as replicas (one replica per worker on CPUs), so the split would change "
            "nothing: leave logical_devices out."
        )
    if num_ps and collective_timeout is not None:
        raise ValueError(
            f"collective_timeout={collective_timeout!r} bounds MultiWorkerMirroredStrategy's "
            "collectives; a ParameterServerStrategy (num_ps > 0) runs none (workers read and "
            "write the variables on the parameter servers): leave collective_timeout out and "
            "bound the run with run(..., timeout=120)."
        )
    return num_ps


def _check_arguments(args: Any, kwargs: Any) -> tuple[tuple, dict]:
    """``args`` as a tuple and ``kwargs`` as a dict, or a clear error if they are neither."""
    if isinstance(args, str | bytes | dict) or not isinstance(args, Sequence):
        raise TypeError(
            f"args must be a tuple of the function's extra arguments, got {_kind(args)}: "
            f"write args=({args!r},) for one argument, or use kwargs={{'name': value}}."
        )
    if kwargs is not None and (
        not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs)
    ):
        raise TypeError(
            f"kwargs must be a dict of argument names to values, got {_kind(kwargs)}: "
            "write kwargs={'epochs': 3}."
        )
    return tuple(args), dict(kwargs or {})


def _check_function(function: Any, args: tuple, kwargs: dict) -> None:
    """Refuse, before any process starts, what cannot be called as ``function(context, ...)``."""
    keras = sys.modules.get("keras")
    if keras is not None and isinstance(function, keras.Model):
        raise TypeError(
            f"function must be a training function, got a Keras model "
            f"({type(function).__name__}): a model cannot travel to the workers. Write "
            "def train(context): that builds the model under context.strategy.scope() and "
            "fits it, then run(train)."
        )
    if not callable(function):
        hint = (
            " for a script file use run_script(" + repr(function) + ")"
            if isinstance(function, str | os.PathLike)
            else " pass the function itself, run(train), not what it returns, run(train())"
        )
        raise TypeError(
            f"function must be a function taking the worker's context, got "
            f"{type(function).__name__}:{hint}."
        )
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without a signature: let it run
        return
    try:
        signature.bind(None, *args, **kwargs)
    except TypeError as error:
        name = getattr(function, "__name__", type(function).__name__)
        extra = ", ".join([*(repr(a) for a in args), *(f"{k}=..." for k in kwargs)])
        call = f"{name}(context{', ' + extra if extra else ''})"
        fix = "lambda context: ..." if name == "<lambda>" else f"def {name}(context, ...)"
        raise TypeError(
            f"function {name}{signature} cannot be called as {call} ({error}): each worker "
            f"calls it with its mirrorkit.WorkerContext first, then args and kwargs; write "
            f"{fix}."
        ) from None


def _module_of(function: Callable) -> Any:
    """The module to send by value with ``function`` (a notebook's or a test's), if any."""
    name = getattr(function, "__module__", None)
    module = sys.modules.get(name or "")
    if module is None or name == "__main__" or name.split(".")[0] == "mirrorkit":
        return None
    file = getattr(module, "__file__", None) or ""
    if "site-packages" in file or not file:
        return None
    return module


def _remove_stale_run_folders(folder: str | None = None) -> list[Path]:
    """Delete the run folders whose owner process is gone (a killed kernel leaves its own).

    Returns:
        The folders removed.
    """
    removed = []
    for path in Path(folder or tempfile.gettempdir()).glob(f"{p.RUN_PREFIX}*-*"):
        owner = path.name.removeprefix(p.RUN_PREFIX).split("-", 1)[0]
        if not owner.isdigit() or not path.is_dir() or path.stat().st_uid != os.getuid():
            continue
        try:
            os.kill(int(owner), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        except PermissionError:  # alive, another user's
            continue
    return removed


def _dumps(payload: dict, module: Any) -> bytes:
    import cloudpickle

    if module is not None:
        cloudpickle.register_pickle_by_value(module)
    try:
        return cloudpickle.dumps(payload)
    except Exception as error:  # noqa: BLE001 - pickling fails in many ways; name the part
        raise TypeError(_unpicklable(payload, error)) from None
    finally:
        if module is not None:
            cloudpickle.unregister_pickle_by_value(module)


def _unpicklable(payload: dict, error: Exception) -> str:
    """Which part of a run's payload cannot travel to the workers, and what to do instead."""
    import cloudpickle

    parts = [("the function", payload.get("function"))]
    parts += [(f"args[{i}]", value) for i, value in enumerate(payload.get("args", ()))]
    parts += [(f"kwargs[{k!r}]", value) for k, value in payload.get("kwargs", {}).items()]
    culprit = "the function (or something it uses from its notebook)"
    for name, value in parts:
        try:
            cloudpickle.dumps(value)
        except Exception:  # noqa: BLE001
            culprit = f"{name} ({type(value).__name__})"
            break
    return (
        f"{culprit} cannot be sent to the worker processes ({type(error).__name__}: "
        f"{str(error).splitlines()[0] if str(error) else 'not picklable'}). Each worker is its "
        "own process and gets the function and its arguments by value; what is tied to this "
        "process's TensorFlow runtime, such as a tf.distribute strategy or a tf.data dataset, "
        "cannot travel. Pass plain values (numbers, lists, NumPy arrays, file paths) and build "
        "the strategy's objects inside the function: ctx.strategy is the worker's strategy."
    )


def _worker_environment() -> dict[str, str]:
    """What every worker needs from this process: its import path, quiet logs, polite GPUs."""
    paths = [p for p in sys.path if p and Path(p).is_dir()]
    return {
        "PYTHONPATH": os.pathsep.join(paths),
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "TF_ENABLE_ONEDNN_OPTS": "0",
        # Local workers share the machine's GPUs: none may take all their memory.
        "TF_FORCE_GPU_ALLOW_GROWTH": "true",
    }


class _Session:
    """One launch: the supervisor process and everything heard from it."""

    def __init__(self, cluster: LocalCluster, run_dir: Path, on_event, timeout, absent) -> None:
        self.cluster = cluster
        self.run_dir = run_dir
        self.on_event = on_event
        self.timeout = timeout
        self.absent = absent
        n = cluster.num_processes
        self.record = ClusterRun(
            num_workers=cluster.num_workers, num_ps=cluster.num_ps, status=ClusterStatus(n)
        )
        self.names = self.record.tasks
        self.record.output = {i: [] for i in range(n)}
        self.messages: queue.Queue = queue.Queue()
        self.finished: set[int] = set()
        self.ready: set[int] = set()
        self.failures: list[tuple[int, str, bool]] = []  # (worker, why, killed by a signal)
        self.stderr: list[str] = []
        self.readers: list[threading.Thread] = []
        self.closed = False

    def emit(self, worker: int, kind: str, **fields: Any) -> None:
        self._publish(WorkerEvent(worker, kind, time=round(self.elapsed(), 3), **fields))

    def _publish(self, event: WorkerEvent) -> None:
        self.record.events.append(event)
        self.record.status.apply(event)
        if self.on_event is not None:
            with calling_on_event():
                self.on_event(event)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def run(self) -> ClusterRun:
        self.started = time.monotonic()
        self.process, self.record.launch = self._start_supervisor()
        self.readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, "out"), daemon=True),
            threading.Thread(target=self._read, args=(self.process.stderr, "err"), daemon=True),
        ]
        for reader in self.readers:
            reader.start()
        try:
            self._loop()
        except BaseException:
            self._shutdown()
            raise
        self._shutdown()
        self.record.wall_seconds = round(self.elapsed(), 3)
        self.record.results = [self._result(i) for i in range(self.cluster.num_processes)]
        return self.record

    def _start_supervisor(self) -> tuple[Any, str]:
        """The run's supervisor: forked by the warm process if it can, else a new process."""
        env = {**os.environ, **_worker_environment()}
        why = "asked for with warm=False"
        if self.cluster.warm:
            try:
                return _warm.start_supervisor(
                    str(self.run_dir), {**env, **self.cluster.env}, self.cluster.start_timeout
                )
            except _warm.WarmUnavailable as error:
                why = str(error)
            except TimeoutError as error:
                raise ClusterStartError(
                    f"the cluster could not start: {error}. Raise start_timeout if this "
                    "machine is just slow, or start new processes with warm=False.",
                    self.record,
                ) from error
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mirrorkit.cluster._supervisor",
                str(self.run_dir),
                str(os.getpid()),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        _live_supervisors.add(process)
        return process, f"new processes ({why})"

    def _read(self, stream, channel: str) -> None:
        for line in stream:
            self.messages.put((channel, line))
        self.messages.put((channel, None))

    def _loop(self) -> None:
        open_streams = 2
        while open_streams:
            try:
                channel, line = self.messages.get(timeout=0.1)
            except queue.Empty:
                self._check_deadlines()
                continue
            if line is None:
                open_streams -= 1
                continue
            if channel == "err":
                self.stderr.append(line.rstrip("\n"))
                continue
            if self._handle(p.decode(line)):
                return
            self._check_deadlines()
        raise ClusterError(
            "the cluster's supervisor process ended unexpectedly"
            + (": " + " | ".join(self.stderr[-_LAST_LINES:]) if self.stderr else "."),
            self.record,
        )

    def _handle(self, message: p.SupervisorMessage) -> bool:
        """Apply one supervisor message; True when the run is over."""
        return bool(_HANDLERS[type(message)](self, message))

    def _spawned(self, message: p.Spawned) -> None:
        self.emit(message.worker, "starting", address=message.address, pid=message.pid)

    def _output(self, message: p.Output) -> None:
        self.record.output[message.worker].append(message.text)
        if self.cluster.echo:
            print(f"[{self.names[message.worker]}] {message.text}", flush=True)
        self.emit(message.worker, "output", text=message.text)

    def _listening(self, message: p.Listening) -> None:
        self.record.listening = list(message.sockets)

    def _exit(self, message: p.Exit) -> None:
        if self._tolerated(message):
            return
        if self._note_exit(message.worker, message.returncode):
            self._fail()

    def _tolerated(self, message: p.Exit) -> bool:
        """Record a parameter-server cluster's server that died after the cluster formed.

        Its chief carries on (a ParameterServerStrategy's coordinator runs the steps on the
        workers left) or fails by itself (a parameter server is gone): the chief decides.
        The death may be heard after the chief finished: the supervisor reports exits in
        its own time.
        """
        worker = message.worker
        if not self.cluster.num_ps or worker == 0 or worker in self.finished:
            return False
        if worker not in self.ready and 0 not in self.ready:  # the cluster never formed
            return False
        how = _procs.describe_exit(message.returncode)
        self.record.exits[worker] = how
        self.emit(worker, "failed", text=how)
        return True

    def _fatal(self, message: p.Fatal) -> None:
        raise ClusterError(f"the cluster could not be set up: {message.text}", self.record)

    def _done(self, message: p.Done | p.Stopped) -> bool:
        return True

    def _network(self, message: p.Network) -> None:
        record = self.record
        record.network = message.mode
        record.network_note = message.note
        record.addresses = list(message.addresses)
        record.interfaces = list(message.interfaces)
        if record.network == "shared":
            warnings.warn(
                "the workers use the machine's network: TensorFlow's gRPC servers listen on "
                "every interface, without authentication, so anyone who can reach this machine "
                f"can reach them ({record.network_note}). Use network='private' on a machine "
                "that allows network namespaces, or keep this machine off shared networks.",
                ClusterSecurityWarning,
                stacklevel=7,
            )

    def _worker_event(self, message: p.Event) -> None:
        event = dataclasses.replace(message.event, time=round(self.elapsed(), 3))
        if event.kind == "ready":
            self.ready.add(event.worker)
            if len(self.ready) == self.cluster.num_processes:
                self.record.start_seconds = round(self.elapsed(), 3)
        elif event.kind == "finished":
            self.finished.add(event.worker)
        elif event.kind == "failed":
            self.failures.append((event.worker, event.text, False))
        self._publish(event)

    def _note_exit(self, worker: int, returncode: int) -> bool:
        """Record a worker's exit; True if it ended before finishing (a failure)."""
        how = _procs.describe_exit(returncode)
        self.record.exits[worker] = how
        if worker in self.finished:
            return False
        if not any(f[0] == worker for f in self.failures):
            self.failures.append((worker, how, returncode < 0))
            self.emit(worker, "failed", text=how)
        return True

    def _settle(self, seconds: float) -> None:
        """Hear what else ended at the same moment before naming the cause of a failure.

        A killed worker's peer often fails within milliseconds, and the supervisor may
        report the peer's exit first.
        """
        deadline = time.monotonic() + seconds
        for message in self._messages_until(lambda: deadline - time.monotonic()):
            if isinstance(message, p.Exit):
                if not self._tolerated(message):
                    self._note_exit(message.worker, message.returncode)
            elif not isinstance(message, p.Done | p.Fatal):
                self._handle(message)

    def _fail(self) -> None:
        """A worker failed: stop the rest and raise, naming the first cause."""
        self._settle(0.3)
        worker, why, _ = next((f for f in self.failures if f[2]), self.failures[0])
        self._shutdown()
        exit_note = self.record.exits.get(worker, "")
        detail = why if why == exit_note or not exit_note else f"{why} ({exit_note})"
        last = self._last_lines(worker)
        others = [
            i for i in range(self.cluster.num_processes) if i != worker and i not in self.absent
        ]
        name = self.names[worker]
        if worker not in self.ready:
            raise ClusterStartError(
                f"{name} failed before the cluster formed: {detail}.{last}",
                self.record,
            )
        stopped = (
            f"the other processes ({', '.join(self.names[i] for i in others)})"
            if self.cluster.num_ps
            else f"the other workers ({_names(others)})"
        )
        raise WorkerFailedError(
            f"{name} failed: {detail}; {stopped} were "
            f"stopped.{_heartbeat_hint(why, *self.record.output[worker])}{last}",
            self.record,
            worker=worker,
        )

    def _check_deadlines(self) -> None:
        elapsed = self.elapsed()
        n = self.cluster.num_processes
        if len(self.ready) < n and elapsed > self.cluster.start_timeout:
            waiting = [i for i in range(n) if i not in self.ready]
            self._shutdown()
            parts = []
            strategy = "ParameterServer" if self.cluster.num_ps else "MultiWorkerMirrored"
            waits_in = f"{strategy}Strategy()"
            for i in waiting:
                address = self.record.addresses[i] if self.record.addresses else "?"
                name = self.names[i]
                if i in self.absent:
                    parts.append(f"{name} ({address}) was never started (absent={self.absent})")
                elif self.record.output.get(i):
                    parts.append(f"{name} ({address}) did not join.{self._last_lines(i)}")
                else:
                    parts.append(
                        f"{name} ({address}) started and printed nothing: it was waiting "
                        f"for the others in {waits_in}"
                    )
            raise ClusterStartError(
                f"the cluster did not form within {self.cluster.start_timeout:g} s: "
                + "; ".join(parts)
                + ". TensorFlow would wait up to an hour for a missing worker (its coordination "
                "service's default); the launcher stopped every worker. Raise start_timeout if "
                "your workers are just slow to start.",
                self.record,
            )
        if self.timeout is not None and elapsed > self.timeout:
            self._shutdown()
            raise ClusterTimeoutError(
                f"the run took longer than timeout={self.timeout:g} s; every worker was "
                f"stopped. Steps reached: {self._steps()}.",
                self.record,
            )

    def _steps(self) -> str:
        return ", ".join(
            f"{self.names[w.worker]}: {w.step if w.step is not None else 'none'}"
            for w in self.record.status.workers
        )

    def _last_lines(self, worker: int) -> str:
        lines = [line for line in self.record.output.get(worker, []) if line.strip()]
        if not lines:
            return " It printed nothing."
        tail = "\n".join(f"    {line}" for line in lines[-_LAST_LINES:])
        return f" Its last output:\n{tail}"

    def _shutdown(self) -> None:
        """Stop every process of this run, within grace_seconds plus a little."""
        if self.closed:
            return
        self.closed = True
        process = self.process
        if process.poll() is None:
            try:
                process.stdin.write(p.STOP + "\n")
                process.stdin.flush()
                process.stdin.close()
            except (BrokenPipeError, ValueError, OSError):
                pass
            try:
                process.wait(self.cluster.grace_seconds + 3.0)
            except subprocess.TimeoutExpired:
                process.kill()  # its workers die with it (parent-death signal)
                process.wait()
        self._drain_exits()
        for reader in self.readers:  # they end at the pipes' end of file
            reader.join(timeout=2.0)
        for stream in (process.stdin, process.stdout, process.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.close()
        for worker in self.record.status.workers:
            if worker.state in ("starting", "ready", "training") and worker.worker not in (
                self.absent
            ):
                self.emit(worker.worker, "stopped", text="stopped by the launcher")
                self.record.exits.setdefault(worker.worker, "stopped by the launcher")

    def _drain_exits(self) -> None:
        """Record how the workers stopped during shutdown ended (their last messages)."""
        for message in self._messages_until(lambda: 0.5):
            if isinstance(message, p.Exit):
                how = _procs.describe_exit(message.returncode)
                self.record.exits.setdefault(message.worker, how)
            elif isinstance(message, p.Stopped):
                return

    def _messages_until(self, wait: Callable[[], float]) -> Iterator[p.SupervisorMessage]:
        """The supervisor's next messages, until none comes within ``wait()`` seconds."""
        while (left := wait()) > 0:
            try:
                channel, line = self.messages.get(timeout=left)
            except queue.Empty:
                return
            if line is not None and channel == "out":
                yield p.decode(line)

    def _result(self, worker: int) -> Any:
        path = self.run_dir / p.result_file(worker)
        if not path.exists():
            return None
        import cloudpickle

        return cloudpickle.loads(path.read_bytes())


# What the owner does with each supervisor message: the one dispatch table.
_HANDLERS = {
    p.Network: _Session._network,
    p.Spawned: _Session._spawned,
    p.Output: _Session._output,
    p.Event: _Session._worker_event,
    p.Listening: _Session._listening,
    p.Exit: _Session._exit,
    p.Fatal: _Session._fatal,
    p.Done: _Session._done,
    p.Stopped: _Session._done,
}


def _heartbeat_hint(*texts: str) -> str:
    """Name the worker TensorFlow's coordination service found silent, if it did."""
    why = "\n".join(texts)
    match = re.search(r"stopped sending heartbeats\)?:?\s*/job:\w+/replica:\d+/task:(\d+)", why)
    if not match:
        return ""
    return (
        f" TensorFlow reports that worker {match.group(1)} stopped sending heartbeats: it was "
        "frozen, overloaded or cut off, and the others could not go on without it."
    )


def _kind(value: Any) -> str:
    """``str '2'``: a wrong value with its type, for a message."""
    return f"{type(value).__name__} {value!r}"


def _names(workers: Sequence[int]) -> str:
    return ", ".join(str(w) for w in workers) if workers else "none"
