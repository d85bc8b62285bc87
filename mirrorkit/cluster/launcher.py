"""LocalCluster: a real MultiWorkerMirroredStrategy cluster of local processes, from a notebook.

Example:
    >>> import mirrorkit as mk
    >>> cluster = mk.LocalCluster(2, echo=False)
    >>> cluster.num_processes, cluster.network
    (2, 'private')
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mirrorkit._validate import (
    refuse,
    require_callable,
    require_flag,
    require_int,
    require_items,
    require_path,
    require_seconds,
    require_whole,
)
from mirrorkit.cluster import _lease, _run_folder, _warm, protocol
from mirrorkit.cluster._payload import dump_payload, function_payload
from mirrorkit.cluster._session import Session
from mirrorkit.cluster.cluster_run import ClusterRun
from mirrorkit.cluster.events import WorkerEvent
from mirrorkit.cluster.protocol import KillWorker
from mirrorkit.cluster.targets import joins_by_itself, target_problem

NETWORKS = ("private", "shared")


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
        echo: Print each worker's output here as it arrives, as ``[worker N] ...``; past 100
            lines at once, 20 a second per worker, with a note of what was left out.
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
        TypeError: If ``num_workers``, ``num_ps`` or ``logical_devices`` is not an int, a
            number of seconds is not a number, or ``env`` is not a dict of strings.
        ValueError: If ``num_workers`` is outside 1-16, ``network`` unknown, a timeout not
            above 0 or ``logical_devices`` below 1; if ``num_ps`` is outside 0-4, or above 0
            together with ``logical_devices`` or ``collective_timeout`` (which only a
            ``MultiWorkerMirroredStrategy`` uses).

    Example:
        >>> from mirrorkit import LocalCluster
        >>> LocalCluster(num_workers=0)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: num_workers must be an int from 1 to 16, got 0: write LocalCluster(2) ...
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
        self.num_workers = require_int(
            "num_workers",
            num_workers,
            must="an int from 1 to 16",
            write="LocalCluster(2) for two worker processes",
            minimum=1,
            maximum=16,
        )
        if network not in NETWORKS:
            refuse(
                "network",
                network,
                must=f"one of {NETWORKS}",
                write="network='private' (for clusters of several machines, see "
                "mirrorkit.cluster.scaleout)",
                error=ValueError,
            )
        self.network = network
        self.start_timeout = require_seconds(
            "start_timeout", start_timeout, write="start_timeout=60"
        )
        if collective_timeout is not None:
            write = "collective_timeout=30"
            require_seconds("collective_timeout", collective_timeout, write=write)
        if not isinstance(env, dict | type(None)) or any(
            not isinstance(k, str) or not isinstance(v, str) for k, v in (env or {}).items()
        ):
            must = "a dict of strings (environment variables)"
            write = "env={'NAME': 'value'}, numbers quoted, e.g. env={'BATCH': '64'}"
            refuse("env", env, must=must, write=write)
        self.seed = seed
        self.collective_timeout = collective_timeout
        self.echo = echo
        self.env = dict(env or {})
        self.grace_seconds = require_seconds(
            "grace_seconds", grace_seconds, write="grace_seconds=2", allow_zero=True
        )
        if logical_devices is not None:
            must = "an int >= 1 (logical devices per worker)"
            write = "logical_devices=2"
            require_int("logical_devices", logical_devices, must=must, write=write, minimum=1)
        self.logical_devices = logical_devices
        self.num_ps = self._parameter_servers(num_ps)
        require_flag("warm", warm, effect="to start every process as a new Python process")
        self.warm = warm

    def _parameter_servers(self, num_ps: Any) -> int:
        """``num_ps`` if it makes a cluster with the settings already given, or a clear error."""
        require_int(
            "num_ps",
            num_ps,
            must="an int from 0 to 4",
            write="LocalCluster(2, num_ps=1) for a chief, two workers and one parameter "
            "server; num_ps=0 for a MultiWorkerMirroredStrategy cluster",
            minimum=0,
            maximum=4,
        )
        if num_ps and self.logical_devices is not None:
            refuse(
                "logical_devices",
                self.logical_devices,
                must="left out with num_ps > 0 (a ParameterServerStrategy counts only GPUs as "
                "replicas, one replica per worker on CPUs, so the split would change nothing)",
                write="LocalCluster(2, num_ps=1) and leave logical_devices out",
                error=ValueError,
            )
        if num_ps and self.collective_timeout is not None:
            refuse(
                "collective_timeout",
                self.collective_timeout,
                must="left out with num_ps > 0 (a ParameterServerStrategy runs none of "
                "MultiWorkerMirroredStrategy's collectives: workers read and write the "
                "variables on the parameter servers)",
                write="LocalCluster(2, num_ps=1) and bound the run with run(..., timeout=120)",
                error=ValueError,
            )
        return num_ps

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
        keep_tensors: bool = False,
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
            args: More positional arguments: plain, picklable values (a TensorFlow or Keras
                object, such as a model, cannot travel: pass what builds it).
            kwargs: Keyword arguments, plain values as for ``args``.
            on_event: Called here with each :class:`mirrorkit.WorkerEvent` as it arrives
                (``mirrorwidgets.ClusterView(...).update`` draws them).
            timeout: Seconds the whole run may take; ``None`` for no limit.
            fault: A :class:`KillWorker` to inject.
            absent: Workers that get an address but are never started, to see what a
                missing worker does (the run fails after ``start_timeout``). Not with
                ``num_ps``.
            keep_tensors: Return TensorFlow tensors and variables as they are. By default
                each worker turns them (in lists, tuples and dicts too) into NumPy arrays,
                so this notebook needs no TensorFlow to read them (reading a tensor imports it).

        Returns:
            A :class:`ClusterRun`; ``run.result`` is the chief's return value.

        Raises:
            TypeError: Before any process starts: ``function`` is not a function that can be
                called as ``function(context, *args, **kwargs)`` (a string, a Keras model, a
                function without the context parameter), ``args``, ``kwargs``, ``on_event``,
                ``fault`` or ``absent`` is of the wrong kind, or something in them cannot be
                sent to the workers (a model, a tensor, a strategy, a dataset, an open file).
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
        require_flag("keep_tensors", keep_tensors, effect="to get NumPy arrays back")
        payload = {**function_payload(function, args, kwargs), "keep_tensors": keep_tensors}
        return self._launch(payload, function, on_event, timeout, fault, absent)

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
        reports, and ``start_timeout`` bounds only the processes' start. With parameter
        servers (``num_ps``) only such a script runs: one that builds its own
        ``ParameterServerStrategy`` on the chief and starts a ``tf.distribute.Server`` on
        the other tasks; those serve until the chief's script has ended.

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
                parameter servers and the script does not build its own strategy (use
                :meth:`run`). All before any process starts.
            TypeError: If ``path`` is not a file name (a function: use :meth:`run`) or
                ``args`` is a string instead of a list.

        Example:
            >>> import mirrorkit as mk
            >>> mk.LocalCluster(2).run_script("/no/such/train.py")
            Traceback (most recent call last):
            ...
            FileNotFoundError: path '/no/such/train.py' names no file: check the name, or give the script's full path.
        """  # noqa: E501
        write = "run_script('train.py') or run_script('train.py:train'); run a function with "
        require_path("path", path, write=write + "run(function)")
        file, _, function = str(path).partition(":")
        problem = target_problem(file, function)
        if problem is not None:
            error, text = problem
            raise error(f"path {str(path)!r} {text}")
        example = shlex.split(args) if isinstance(args, str) else ["--epochs", "3"]
        args = require_items("args", args, write=f"args={example!r}", allow_empty=True)
        joins = not function and joins_by_itself(file)
        if self.num_ps and not joins:
            refuse(
                "num_ps",
                self.num_ps,
                must="0 for a script that does not build its own ParameterServerStrategy "
                "(with parameter servers, run_script runs plain TensorFlow scripts whose tasks "
                "start their own tf.distribute.Server)",
                write="from train import train, then call run(train), which runs it on the chief",
                error=ValueError,
            )
        if joins and fault is not None:
            refuse(
                "fault",
                fault,
                must=f"left out for {Path(file).name}: it builds its own "
                "multi-worker strategy, so the launcher never sees its steps. Take the "
                "strategy from mirrorkit.current_context().strategy and call "
                "current_context().report(step) after each step",
                write=f"run_script({Path(file).name!r}) without fault=",
                error=ValueError,
            )
        target = str(Path(file).resolve()) + (f":{function}" if function else "")
        payload = {
            "kind": "script",
            "path": target,
            "args": [str(a) for a in args],
            "joins_by_itself": joins,
        }
        return self._launch(payload, None, on_event, timeout, fault, ())

    # -- the run itself -------------------------------------------------------------

    def _launch(self, payload, function, on_event, timeout, fault, absent) -> ClusterRun:
        absent = self._run_settings(on_event, timeout, fault, absent)
        values = [*payload.get("args", ()), *payload.get("kwargs", {}).values()]
        _run_folder.refuse_folders_in_use(values)
        cwd = _run_folder.working_folder()
        _remove_stale_run_folders()
        worker_env = _worker_environment()
        owner = {_lease.OWNER_VARIABLE: json.dumps(_lease.identity())}

        def write_spec(run_dir: Path) -> None:
            protocol.LaunchSpec(
                num_workers=self.num_workers,
                network=self.network,
                host="127.0.0.1",
                run_dir=str(run_dir),
                cwd=cwd,
                seed=self.seed,
                collective_timeout=self.collective_timeout,
                grace_seconds=self.grace_seconds,
                env={**worker_env, **self.env, **owner, protocol.RUN_MARKER: str(run_dir)},
                absent=tuple(absent),
                fault=fault,
                logical_devices=self.logical_devices,
                num_ps=self.num_ps,
            ).write()

        run_dir = _run_folder.make(dump_payload(payload, function), write_spec)
        try:
            plain = bool(payload.get("joins_by_itself"))
            session = Session(self, run_dir, on_event, timeout, absent, worker_env, not plain)
            return session.run()
        finally:
            _run_folder.remove(run_dir)

    def _run_settings(self, on_event, timeout, fault, absent) -> list[int]:
        """Refuse a run's wrong settings before any process starts; the absent workers, sorted."""
        last = self.num_workers - 1
        if on_event is not None:
            write = (
                "a function, e.g. on_event=events.append to collect them in a list, or "
                "on_event=view.update for a mirrorwidgets.ClusterView"
            )
            require_callable("on_event", on_event, write=write)
        if timeout is not None:
            require_seconds("timeout", timeout, write="timeout=120 (or None for no limit)")
        kill = f"fault=mk.KillWorker(worker={last}, at_step=3)"
        if fault is not None and not isinstance(fault, KillWorker):
            refuse("fault", fault, must="a mirrorkit.KillWorker", write=kill)
        if fault is not None and not 0 <= fault.worker < self.num_workers:
            refuse(
                "fault",
                must="a KillWorker of a worker of this cluster",
                got=f"KillWorker(worker={fault.worker}, ...), but this cluster has workers "
                f"0..{last}; pick one of them",
                write=f"fault=mk.KillWorker(worker={last}, at_step={fault.at_step})",
                error=ValueError,
            )
        write = f"absent=[{last}]"
        absent = require_items("absent", absent, write=write, allow_empty=True)
        absent = sorted(
            {require_whole(f"absent[{i}]", a, write=write) for i, a in enumerate(absent)}
        )
        if absent and self.num_ps:
            raise ValueError(
                f"absent={absent} is for MultiWorkerMirroredStrategy clusters, whose workers "
                "wait for each other; this cluster has parameter servers: leave absent out, "
                "and kill a worker during the run with fault=mk.KillWorker(worker=1, "
                "at_step=3) instead."
            )
        if any(not 0 <= a < self.num_workers for a in absent):
            must = f"in 0..{last} (the workers of this cluster)"
            refuse("absent", absent, must=must, write=f"absent=[{last}]", error=ValueError)
        return absent


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


def _remove_stale_run_folders(folder: str | None = None) -> list[Path]:
    """Delete the run folders whose owner process is gone (a killed kernel leaves its own).

    Returns:
        The folders removed.
    """
    removed = []
    for path in Path(folder or tempfile.gettempdir()).glob(f"{protocol.RUN_PREFIX}*-*"):
        owner = path.name.removeprefix(protocol.RUN_PREFIX).split("-", 1)[0]
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


def _worker_environment() -> dict[str, str]:
    """What every worker needs from this process: its import path, quiet logs, polite GPUs."""
    paths = [path for path in sys.path if path and Path(path).is_dir()]
    return {
        "PYTHONPATH": os.pathsep.join(paths),
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "TF_ENABLE_ONEDNN_OPTS": "0",
        # Local workers share the machine's GPUs: none may take all their memory.
        "TF_FORCE_GPU_ALLOW_GROWTH": "true",
    }
