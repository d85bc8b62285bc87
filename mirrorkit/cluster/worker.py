"""What a training function sees on each worker, under the local launcher or a real cluster.

A function written for :class:`mirrorkit.LocalCluster` takes one argument, a
:class:`WorkerContext`: the worker's ``MultiWorkerMirroredStrategy``, its task index,
whether it is the chief, and :meth:`WorkerContext.report` to send progress to the
notebook. The same function runs unchanged on a real cluster with::

    python -m mirrorkit.worker train.py:train                  # TF_CONFIG set by you or Kubernetes
    python -m mirrorkit.worker train.py:train --resolver slurm  # inside `srun`
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import runpy
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mirrorkit._validate import require_seconds
from mirrorkit.cluster.events import WorkerEvent
from mirrorkit.cluster.protocol import EventChannel, KillWorker

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
            >>> WorkerContext.from_environment("mpi")
            Traceback (most recent call last):
            ...
            ValueError: resolver must be 'tf_config' or 'slurm', got 'mpi'.
        """
        if resolver not in ("tf_config", "slurm"):
            raise ValueError(f"resolver must be 'tf_config' or 'slurm', got {resolver!r}.")
        if timeout_seconds is not None:
            example = "timeout_seconds=30, or None for no limit"
            require_seconds("timeout_seconds", timeout_seconds, write=example)
        if port is not None and resolver != "slurm":
            raise ValueError(
                f"port={port!r} is used only with resolver='slurm': with TF_CONFIG, each "
                "worker's port is in its address in TF_CONFIG's cluster."
            )
        if resolver == "tf_config" and not os.environ.get("TF_CONFIG"):
            raise ValueError(
                "TF_CONFIG is not set: export it on every worker "
                "(mirrorkit.cluster.scaleout.tf_configs writes it for a list of hosts) "
                "or use resolver='slurm' inside srun."
            )
        try:
            config = _resolve_tf_config(resolver, port)  # checked before anything joins
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
        ``base/.worker-N``, which nothing reads.

        Args:
            base: The folder the chief writes to.

        Returns:
            The folder for this worker (created if missing).

        Example:
            >>> import tempfile
            >>> from mirrorkit import WorkerContext
            >>> base = tempfile.mkdtemp()
            >>> ctx = WorkerContext(None, task_type="worker", task_id=1, num_workers=2,
            ...                     tf_config={})
            >>> ctx.write_dir(base).endswith(".worker-1")
            True
        """
        path = Path(base) if self.is_chief else Path(base) / f".worker-{self.task_id}"
        path.mkdir(parents=True, exist_ok=True)
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


def target_problem(file: str, function: str = "") -> tuple[type[Exception], str] | None:
    """What is wrong with a training target ``file[:function]``, found without running it.

    Returns ``None`` when ``file`` is a Python script that defines ``function`` at its top
    level, else the error to raise and a sentence to follow the target's name.

    Example:
        >>> from mirrorkit.cluster.worker import target_problem
        >>> target_problem("train.ipynb")[1]
        'is a notebook, which the workers cannot run: export it with `jupyter nbconvert --to script train.ipynb` and run the .py file.'
    """  # noqa: E501
    path = Path(file)
    if path.suffix == ".ipynb":
        return ValueError, (
            "is a notebook, which the workers cannot run: export it with "
            f"`jupyter nbconvert --to script {file}` and run the .py file."
        )
    if path.is_dir():
        return ValueError, (
            f"is a folder: name the training script inside it, e.g. '{path / 'train.py'}'."
        )
    if not path.is_file():
        where = "" if path.is_absolute() else f" (looked in {Path.cwd()})"
        return FileNotFoundError, (
            f"names no file{where}: check the name, or give the script's full path."
        )
    if path.suffix != ".py":
        return ValueError, (
            f"is not a Python script (.py): name the .py file that holds the training code, "
            f"e.g. '{path.with_suffix('.py')}'."
        )
    if not function:
        return None
    if not function.isidentifier():
        name = function.split("(")[0].strip()
        fix = f"'{file}:{name}'" if name.isidentifier() else f"'{file}:train'"
        return ValueError, (
            f"names {function!r} after the colon, which is not a function's name: write {fix}."
        )
    try:
        body = ast.parse(path.read_text(encoding="utf-8"), str(path)).body
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None  # the worker runs it and reports Python's own error, with its line
    names = _top_level_names(body)
    if names is None or function in names:
        return None
    defined = [n.name for n in body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    return ValueError, (
        f"names a function {function!r} that {path.name} does not define at its top level "
        f"(its functions: {', '.join(defined) or 'none'}): check the name after the colon."
    )


STRATEGY_CLASSES = ("MultiWorkerMirroredStrategy", "CollectiveAllReduceStrategy")


def joins_by_itself(file: str | os.PathLike) -> bool:
    """Whether a training script builds its own ``MultiWorkerMirroredStrategy``.

    Such a script is plain TensorFlow: it reads TF_CONFIG and joins the cluster when it
    creates the strategy, so a worker must not join for it (collective ops can be set up
    only once per process). Found by reading the script, without running it.

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from mirrorkit.cluster.worker import joins_by_itself
        >>> folder = Path(tempfile.mkdtemp())
        >>> plain = "strategy = tf.distribute.MultiWorkerMirroredStrategy()"
        >>> helped = "strategy = mirrorkit.current_context().strategy"
        >>> _ = (folder / "plain.py").write_text(plain)
        >>> _ = (folder / "helped.py").write_text(helped)
        >>> joins_by_itself(folder / "plain.py"), joins_by_itself(folder / "helped.py")
        (True, False)
    """
    try:
        tree = ast.parse(Path(file).read_text(encoding="utf-8"), str(file))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return False  # the worker runs it and reports the error, with its line
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            called = node.func
            name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
            if name in STRATEGY_CLASSES:
                return True
    return False


def _top_level_names(body: list[ast.stmt]) -> set[str] | None:
    """Names a module's statements bind at its top level; ``None`` if unknowable (``import *``)."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    return None
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.If | ast.Try | ast.With | ast.For | ast.While):
            for block in ("body", "orelse", "finalbody"):
                inner = _top_level_names(getattr(node, block, []))
                if inner is None:
                    return None
                names |= inner
            for handler in getattr(node, "handlers", []):
                inner = _top_level_names(handler.body)
                if inner is None:
                    return None
                names |= inner
    return names


def run_target(target: str, context: WorkerContext) -> Any:
    """Run ``path.py:function`` (called with the context) or ``path.py`` (as a script).

    Example:
        >>> from mirrorkit.cluster.worker import run_target
        >>> run_target("missing.py:train", None)
        Traceback (most recent call last):
        ...
        FileNotFoundError: no such training file: missing.py (target 'missing.py:train')
    """
    path, _, function = target.partition(":")
    if not Path(path).is_file():
        raise FileNotFoundError(f"no such training file: {path} (target {target!r})")
    if not function:
        runpy.run_path(path, run_name="__main__")
        return None
    namespace = runpy.run_path(path, run_name="__mirrorkit_worker__")
    if function not in namespace:
        raise AttributeError(f"{path} defines no function {function!r}")
    return namespace[function](context)


def main(argv: list[str] | None = None) -> int:
    """``python -m mirrorkit.worker FILE[:FUNCTION]`` on each node of a real cluster.

    A target that cannot run (no such file, not a ``.py`` file, a function the file does not
    define) exits with status 2 at once, before anything joins. Joins within
    ``--join-timeout`` seconds or exits with status 2, naming the peers that
    are not listening; SIGTERM ends it at once; once steps are reported
    (:meth:`WorkerContext.report`), a run in which no step finishes for ``--stall-timeout``
    seconds prints every worker's last step and current line and exits with status 3
    (:mod:`mirrorkit.cluster._flight`).
    """
    parser = argparse.ArgumentParser(prog="python -m mirrorkit.worker", description=main.__doc__)
    parser.add_argument("target", help="train.py:train (called with a WorkerContext) or train.py")
    parser.add_argument("--resolver", choices=("tf_config", "slurm"), default="tf_config")
    parser.add_argument("--port", type=int, default=None, help="with --resolver slurm")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--join-timeout",
        type=_seconds(allow_zero=False),
        default=120.0,
        help="seconds for every worker to join the cluster (default 120)",
    )
    parser.add_argument(
        "--stall-timeout",
        type=_seconds(allow_zero=True),
        default=300.0,
        help="seconds without a reported step before the run counts as stalled "
        "(default 300; 0 never)",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    # Found here, not after the cluster joined: a typo must not wait for every other worker.
    file, _, function = args.target.partition(":")
    problem = target_problem(file, function)
    if problem is not None:
        parser.error(f"argument target: {args.target!r} {problem[1]}")
    if not function and joins_by_itself(file):
        parser.error(
            f"argument target: {file} builds its own MultiWorkerMirroredStrategy, so it joins "
            f"the cluster by itself: run it as it is (python {file}, with TF_CONFIG set "
            "on every worker), or take the worker's strategy from "
            "mirrorkit.current_context().strategy to run it with mirrorkit.worker."
        )
    if args.port is not None and args.resolver != "slurm":
        parser.error(
            "argument --port: used only with --resolver slurm; with TF_CONFIG, each worker's "
            "port is in its address in TF_CONFIG's cluster."
        )
    if args.port is not None and not 1 <= args.port <= 65535:
        parser.error(f"argument --port: must be from 1 to 65535, got {args.port}: e.g. 12345.")
    if args.child:
        return _child(args)
    return _parent(args, sys.argv[1:] if argv is None else list(argv))


def _parent(args: argparse.Namespace, argv: list[str]) -> int:
    # TensorFlow holds the GIL while it waits for the cluster, and its preemption notifier
    # swallows SIGTERM from then on: no code in that process can keep a bound or obey
    # SIGTERM. This process, without TensorFlow, keeps both for its child, the worker.
    import queue

    from mirrorkit.cluster import protocol as p
    from mirrorkit.cluster._flight import join_report

    read_fd, write_fd = os.pipe()
    env = {**os.environ, p.EVENT_FD: str(write_fd), p.SUPERVISOR_PID: str(os.getpid())}
    child = subprocess.Popen(
        [sys.executable, "-m", "mirrorkit.worker", *argv, "--child"], env=env, pass_fds=(write_fd,)
    )
    os.close(write_fd)

    def end(signum, frame) -> None:
        child.kill()
        child.wait()
        os._exit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, end)
    events: queue.Queue = queue.Queue()

    def read() -> None:
        with os.fdopen(read_fd, "rb") as stream:
            for event in p.read_events(stream, 0):
                events.put(event.kind)
        events.put("closed")

    threading.Thread(target=read, name="mirrorkit-events", daemon=True).start()
    started, kind = time.monotonic(), ""
    while kind not in ("ready", "closed"):
        try:
            kind = events.get(timeout=0.2)
        except queue.Empty:
            if time.monotonic() - started > args.join_timeout:
                config = _resolve_tf_config(args.resolver, args.port)  # as the child did
                task = config.get("task", {})
                job, index = task.get("type", "worker"), int(task.get("index", 0))
                child.kill()
                print(join_report(config, job, index, args.join_timeout), file=sys.stderr)
                return 2
    return child.wait()


def _child(args: argparse.Namespace) -> int:
    from mirrorkit.cluster import _procs, protocol as p
    from mirrorkit.cluster._flight import FlightRecorder, failure_report

    _procs.die_with_parent(int(os.environ.pop(p.SUPERVISOR_PID)))
    channel = p.EventChannel.from_environment()
    import mirrorkit as mk

    mk.make_reproducible(args.seed)
    recorder = FlightRecorder(args.stall_timeout)
    context = WorkerContext.from_environment(args.resolver, port=args.port, events=recorder)
    # Joining installed TensorFlow's preemption notifier on SIGTERM: end at once instead.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    channel.send(WorkerEvent(context.task_id, "ready"))
    recorder.start(context.task_type, context.task_id, context.tf_config)
    import tensorflow as tf

    try:
        with context.as_current():
            run_target(args.target, context)
    except tf.errors.OpError as error:  # TensorFlow's own: a few lines, not its traceback
        print(
            failure_report(error, context.tf_config, (context.task_type, context.task_id)),
            file=sys.stderr,
            flush=True,
        )
        return 1
    finally:
        recorder.stop()
    return 0


def _resolve_tf_config(resolver: str, port: int | None) -> dict:
    """The cluster this process belongs to: TF_CONFIG, or built from Slurm's variables."""
    if resolver == "slurm":
        # mirrorkit.cluster.scaleout reads Slurm's variables itself: TensorFlow's resolver sorts
        # node names as strings (node10 before node9) and runs nvidia-smi on CPU nodes.
        from mirrorkit.cluster.scaleout import slurm_tf_config

        return slurm_tf_config(port=port)
    return check_tf_config(os.environ["TF_CONFIG"])


_TF_CONFIG_FIX = (
    'write it with json.dumps, e.g. TF_CONFIG=\'{"cluster": {"worker": ["host1:12345", '
    '"host2:12345"]}, "task": {"type": "worker", "index": 0}}\' '
    "(mirrorkit.cluster.scaleout.tf_config writes it for you)"
)


def check_tf_config(text: str) -> dict:
    """TF_CONFIG's text as a dict, or a ValueError naming what is wrong with it.

    TensorFlow's own reading of a TF_CONFIG without a ``cluster`` gives a one-process
    strategy with no error; here it is refused, before any server starts.

    Example:
        >>> from mirrorkit.cluster.worker import check_tf_config
        >>> check_tf_config('{"cluster": {"worker": ["a:1", "b:1"]}, '
        ...                 '"task": {"type": "worker", "index": 1}}')["task"]
        {'type': 'worker', 'index': 1}
    """
    try:
        config = json.loads(text)
    except ValueError:
        quoted = "; it uses Python's quotes ('), JSON needs \"" if "'" in text else ""
        raise ValueError(
            f"TF_CONFIG is not JSON{quoted} (got {_short(text)}): {_TF_CONFIG_FIX}."
        ) from None
    cluster = config.get("cluster") if isinstance(config, dict) else None
    if not isinstance(cluster, dict) or not any(
        isinstance(cluster.get(job), list) and cluster[job] for job in ("chief", "worker")
    ):
        raise ValueError(
            f"TF_CONFIG has no cluster with a list of worker addresses (got {_short(text)}): "
            f"{_TF_CONFIG_FIX}."
        )
    task = config.get("task")
    if not isinstance(task, dict) or "type" not in task or "index" not in task:
        raise ValueError(
            f"TF_CONFIG has no task saying which worker this process is (got {_short(text)}): "
            'add "task": {"type": "worker", "index": N}, N being this machine\'s position in '
            "the cluster's worker list, different on every worker."
        )
    job, index = task["type"], task["index"]
    if job == "evaluator":  # a side-car evaluator is not part of the cluster it watches
        return config
    if job not in cluster or not isinstance(cluster[job], list):
        raise ValueError(
            f"TF_CONFIG's task type {job!r} is not in its cluster (which has "
            f'{", ".join(map(repr, cluster))}): write "type": "worker".'
        )
    if isinstance(index, str) and index.strip().isdigit():
        index = int(index)
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(cluster[job]):
        raise ValueError(
            f"TF_CONFIG's task index {index!r} is not a position in its {job} list of "
            f"{len(cluster[job])} addresses: use 0 to {len(cluster[job]) - 1}, this machine's "
            "position in the list."
        )
    return config


def _short(text: str) -> str:
    return repr(text) if len(text) <= 120 else repr(text[:117] + "...")


def _seconds(allow_zero: bool):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not (value >= 0 if allow_zero else value > 0) or value == float("inf"):
            raise argparse.ArgumentTypeError(
                f"expected a number of seconds{' (0 for never)' if allow_zero else ' above 0'}, "
                f"got {text!r}"
            )
        return value

    return parse
