"""WorkerContext: what a training function sees on each worker, locally or on a real cluster.

Example:
    >>> from mirrorkit import WorkerContext
    >>> context = WorkerContext(None, task_type="worker", task_id=0, num_workers=2,
    ...                         tf_config={"cluster": {"worker": ["a:1", "b:1"]}})
    >>> context.is_chief
    True
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mirrorkit._validate import refuse, require_seconds
from mirrorkit.cluster.events import WorkerEvent
from mirrorkit.cluster.protocol import EventChannel, KillWorker
from mirrorkit.cluster.worker_config import resolve_tf_config

_current: WorkerContext | None = None


class WorkerContext:
    """One worker's view of the cluster: strategy, identity, progress reporting.

    Build it with :meth:`from_environment` (the launcher and ``python -m mirrorkit.worker``
    do that for you); inside a function run by the launcher, :func:`current_context`
    returns it too.

    Attributes:
        strategy: The worker's ``tf.distribute.MultiWorkerMirroredStrategy``; on the chief
            of a parameter-server cluster (``LocalCluster(num_ps=1)``), its
            ``ParameterServerStrategy``.
        task_type: ``"worker"`` (or ``"chief"`` on clusters that name one).
        task_id: This worker's index within its task type.
        num_workers: How many workers (chief included) the cluster has; in a
            parameter-server cluster, how many worker tasks (the chief and the parameter
            servers not counted).
        tf_config: The cluster as TF_CONFIG describes it (a dict).

    Example:
        >>> from mirrorkit import WorkerContext
        >>> WorkerContext.is_chief.__doc__.split(".")[0]
        'Whether this worker does the chief duties (saving, logging)'
    """

    def __init__(
        self,
        strategy: Any,
        *,
        task_type: str,
        task_id: int,
        num_workers: int,
        tf_config: dict,
        events: EventChannel | None = None,
        fault: KillWorker | None = None,
        fault_pid: int | None = None,
    ) -> None:
        self.strategy = strategy
        self.task_type = task_type
        self.task_id = task_id
        self.num_workers = num_workers
        self.tf_config = tf_config
        self._events = events or EventChannel(None)
        self._fault = fault
        self._fault_pid = fault_pid  # parameter-server mode: the chief kills this process

    @classmethod
    def from_environment(
        cls,
        resolver: str = "tf_config",
        *,
        timeout_seconds: float | None = None,
        port: int | None = None,
        events: EventChannel | None = None,
        fault: KillWorker | None = None,
    ) -> WorkerContext:
        """Join the cluster this process belongs to and make its strategy.

        This call blocks until every worker of the cluster has joined: TensorFlow
        sets no bound on that wait, so a launcher must set one (LocalCluster does).

        Args:
            resolver: ``"tf_config"`` (read the TF_CONFIG environment variable) or
                ``"slurm"`` (the job step's Slurm variables, read by
                :func:`mirrorkit.cluster.scaleout.slurm_tf_config`, inside ``srun``).
            timeout_seconds: Passed to ``CommunicationOptions`` for each collective.
            port: With ``resolver="slurm"``, the port every worker listens on.
            events: Where :meth:`report` sends progress (the local launcher's channel);
                ``None`` sends nothing.
            fault: The local launcher's fault injection, for the worker it targets.

        Returns:
            The context, with a ready ``MultiWorkerMirroredStrategy``.

        Raises:
            ValueError: If ``resolver`` is unknown, TF_CONFIG is missing or does not describe
                a cluster and this process's place in it (not JSON, no ``cluster``, no
                ``task``, an index outside the list), ``timeout_seconds`` is not above 0, or
                ``port`` is given without ``resolver="slurm"``; all before anything joins.
            TypeError: If ``timeout_seconds`` is not a number.
            RuntimeError: With ``resolver="slurm"`` outside a Slurm job step.

        Example:
            >>> from mirrorkit import WorkerContext
            >>> WorkerContext.from_environment("mpi")  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            ValueError: resolver must be 'tf_config' or 'slurm', got 'mpi': write ...
        """
        if resolver not in ("tf_config", "slurm"):
            write = "resolver='tf_config' (TF_CONFIG) or resolver='slurm' (inside srun)"
            refuse(
                "resolver", resolver, must="'tf_config' or 'slurm'", write=write, error=ValueError
            )
        if timeout_seconds is not None:
            example = "timeout_seconds=30, or None for no limit"
            require_seconds("timeout_seconds", timeout_seconds, write=example)
        if port is not None and resolver != "slurm":
            refuse(
                "port",
                port,
                must="left out unless resolver='slurm' (a port is used only with "
                "resolver='slurm'; with TF_CONFIG, each worker's port is in its address in "
                "TF_CONFIG's cluster)",
                write="WorkerContext.from_environment() without port",
                error=ValueError,
            )
        if resolver == "tf_config" and not os.environ.get("TF_CONFIG"):
            refuse(
                "TF_CONFIG",
                must="set",
                got="nothing",
                write="TF_CONFIG='{...}': export it on every worker "
                "(mirrorkit.cluster.scaleout.tf_configs writes it for a list of hosts) "
                "or use resolver='slurm' inside srun",
                error=ValueError,
            )
        try:
            config = resolve_tf_config(resolver, port)  # checked before anything joins
        except RuntimeError as error:  # Slurm's variables are missing
            raise RuntimeError(f"resolver='slurm' reads Slurm's variables, but {error}") from None
        if resolver == "slurm":
            os.environ["TF_CONFIG"] = json.dumps(config)
        import tensorflow as tf

        cluster_resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        options = tf.distribute.experimental.CommunicationOptions(timeout_seconds=timeout_seconds)
        strategy = tf.distribute.MultiWorkerMirroredStrategy(
            cluster_resolver=cluster_resolver, communication_options=options
        )
        spec = cluster_resolver.cluster_spec().as_dict()
        num_workers = sum(len(spec.get(job, [])) for job in ("chief", "worker"))
        return cls(
            strategy,
            task_type=cluster_resolver.task_type,
            task_id=int(cluster_resolver.task_id),
            num_workers=num_workers,
            tf_config={
                "cluster": spec,
                "task": {"type": cluster_resolver.task_type, "index": cluster_resolver.task_id},
            },
            events=events,
            fault=fault,
        )

    @property
    def is_chief(self) -> bool:
        """Whether this worker does the chief duties (saving, logging).

        The chief is task ``chief`` if the cluster has one, else worker 0.

        Example:
            >>> from mirrorkit import WorkerContext
            >>> ctx = WorkerContext(None, task_type="worker", task_id=0, num_workers=2,
            ...                     tf_config={"cluster": {"worker": ["a:1", "b:1"]}})
            >>> ctx.is_chief
            True
        """
        if self.task_type == "chief":
            return True
        return (
            self.task_type == "worker"
            and self.task_id == 0
            and ("chief" not in self.tf_config.get("cluster", {}))
        )

    def report(self, step: int, **metrics: float) -> None:
        """Send progress to the notebook: the step just finished and numbers such as the loss.

        Outside the launcher it does nothing, so training code can always call it.
        Under the launcher's fault injection, the chosen worker is killed (SIGKILL)
        when it reports the chosen step; in a parameter-server cluster, where only the
        chief reports, the chief's report of that step kills the chosen worker task, once.

        Args:
            step: The global step just finished (1 for the first).
            **metrics: Numbers (Python floats, NumPy or TensorFlow scalars).

        Example:
            >>> from mirrorkit import WorkerContext
            >>> ctx = WorkerContext(None, task_type="worker", task_id=1, num_workers=2,
            ...                     tf_config={})
            >>> ctx.report(3, loss=0.25)  # no launcher here: nothing is sent
        """
        values = {name: float(value) for name, value in metrics.items()}
        self._events.send(WorkerEvent(self.task_id, "step", step=int(step), metrics=values))
        if self._fault is not None and int(step) >= self._fault.at_step:
            if self._fault_pid is not None:
                fault, self._fault = self._fault, None
                print(
                    f"mirrorkit: fault injection kills worker {fault.worker} after step "
                    f"{int(step)}",
                    flush=True,
                )
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self._fault_pid, signal.SIGKILL)
                return
            print(
                f"mirrorkit: fault injection kills this worker after step {int(step)}", flush=True
            )
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGKILL)

    def write_dir(self, base: str | os.PathLike) -> str:
        """Where this worker saves: ``base`` on the chief, a private folder inside it elsewhere.

        Every worker must take part in saving a distributed model (saving runs
        collective ops), but only the chief's copy is kept; the others write to
        ``base/.worker-N``, which nothing reads. The run takes ``base``'s lease (one writer
        per folder): a run of another notebook or process writing there is refused, naming
        it, and a lease its dead run left behind is taken over with a warning.

        Args:
            base: The folder the chief writes to.

        Returns:
            The folder for this worker (created if missing).

        Raises:
            mirrorkit.FolderInUseError: Another live run writes ``base``; the message names
                its host, process and since when, and what to do.
            OSError: ``base`` cannot be written (full, read-only, not yours), with its path,
                the cause and what to do, before anything is trained.

        Example:
            >>> import tempfile
            >>> from mirrorkit import WorkerContext
            >>> base = tempfile.mkdtemp()
            >>> ctx = WorkerContext(None, task_type="worker", task_id=1, num_workers=2,
            ...                     tf_config={})
            >>> ctx.write_dir(base).endswith(".worker-1")
            True
        """
        from mirrorkit.cluster import _lease, _run_folder

        path = Path(base) if self.is_chief else Path(base) / f".worker-{self.task_id}"
        try:
            path.mkdir(parents=True, exist_ok=True)
            _lease.take(base, chief=self.is_chief)
        except OSError as error:
            raise _run_folder.explained(
                error, base, "the checkpoint folder", _run_folder.CHECKPOINT_FIX
            ) from None
        return str(path)

    def keras_callback(self):
        """A Keras callback that reports each training batch's loss with :meth:`report`.

        The step is the optimizer's iteration count, so it keeps counting across a
        resumed run.

        Returns:
            A ``keras.callbacks.Callback``.

        Example:
            >>> from mirrorkit import WorkerContext
            >>> ctx = WorkerContext(None, task_type="worker", task_id=0, num_workers=1,
            ...                     tf_config={})
            >>> type(ctx.keras_callback()).__name__
            'ReportCallback'
        """
        import keras
        import numpy as np

        context = self

        class ReportCallback(keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                step = int(self.model.optimizer.iterations.numpy())
                loss = (logs or {}).get("loss")
                metrics = {} if loss is None else {"loss": float(np.ravel(loss)[0])}
                context.report(step, **metrics)

        return ReportCallback()

    @contextlib.contextmanager
    def as_current(self) -> Iterator[WorkerContext]:
        """Make this the context :func:`current_context` returns, inside a ``with`` block.

        The launcher and ``python -m mirrorkit.worker`` run your code inside one.

        Example:
            >>> from mirrorkit import WorkerContext, current_context
            >>> ctx = WorkerContext(None, task_type="worker", task_id=0, num_workers=1,
            ...                     tf_config={})
            >>> with ctx.as_current():
            ...     current_context() is ctx
            True
        """
        global _current
        before, _current = _current, self
        try:
            yield self
        finally:
            _current = before


def current_context() -> WorkerContext:
    """The context of the worker this code runs on (inside a launcher-run function or script).

    Returns:
        The worker's :class:`WorkerContext`.

    Raises:
        RuntimeError: Outside a worker started by the launcher or ``python -m mirrorkit.worker``
            (in the notebook, in an ``on_event`` callback, in a process that has TF_CONFIG
            but was started otherwise); the message says what to use there.

    Example:
        >>> from mirrorkit import current_context
        >>> current_context()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        RuntimeError: not on a worker: current_context() works in code run by mirrorkit.LocalCluster or `python -m mirrorkit.worker`. ...
    """  # noqa: E501
    if _current is None:
        raise RuntimeError(_not_on_a_worker())
    return _current


_on_event_calls = 0  # > 0 while the launcher calls an on_event callback, in the notebook


@contextlib.contextmanager
def calling_on_event() -> Iterator[None]:
    """Mark the launcher's call of an ``on_event`` callback, for :func:`current_context`."""
    global _on_event_calls
    _on_event_calls += 1
    try:
        yield
    finally:
        _on_event_calls -= 1


def _not_on_a_worker() -> str:
    """Why current_context() has no context here, and what to use instead."""
    message = (
        "not on a worker: current_context() works in code run by mirrorkit.LocalCluster "
        "or `python -m mirrorkit.worker`."
    )
    tf = sys.modules.get("tensorflow")
    if _on_event_calls:
        return message + (
            " An on_event callback runs in this notebook, not on a worker: read the event "
            "it is given (event.worker says which worker sent it)."
        )
    if os.environ.get("TF_CONFIG"):
        return message + (
            " This process has TF_CONFIG but was started otherwise: start it with "
            "`python -m mirrorkit.worker train.py`, or build the context with "
            "mirrorkit.WorkerContext.from_environment() and use it directly."
        )
    if tf is not None and tf.distribute.has_strategy():
        return message + (
            " Here a strategy of this process is in use: tf.distribute.get_strategy() gives "
            "it, and tf.distribute.get_replica_context() the replica running this code."
        )
    return message + (
        " In a notebook, write def train(context): ... and run it with "
        "mirrorkit.LocalCluster(2).run(train): each worker passes its context to train."
    )
