"""``python -m mirrorkit.worker``: one worker of a real cluster, with bounded join and stalls.

Example:
    >>> from mirrorkit.cluster.worker_cli import main
    >>> try:  # a target that cannot run exits with status 2 at once, before anything joins
    ...     main(["no-such-train.py"])
    ... except SystemExit as exit:
    ...     print(exit.code)
    2
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from mirrorkit.cluster.events import WorkerEvent
from mirrorkit.cluster.targets import joins_by_itself, run_target, target_problem
from mirrorkit.cluster.worker import WorkerContext
from mirrorkit.cluster.worker_config import own_address_problem, resolve_tf_config


def main(argv: list[str] | None = None) -> int:
    """``python -m mirrorkit.worker FILE[:FUNCTION]`` on each node of a real cluster.

    A target that cannot run (no such file, not a ``.py`` file, a function the file does not
    define), a working folder that no longer exists, and an address of this worker that
    cannot work (a host that does not resolve, a port another program holds) exit with
    status 2 at once, before anything joins. Joins within
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
    parser.add_argument("--leases", default=None, help=argparse.SUPPRESS)  # the child's list
    args = parser.parse_args(argv)
    _refuse_a_deleted_folder(parser, args.target)
    # Found here, not after the cluster joined: a typo must not wait for every other worker.
    file, _, function = args.target.partition(":")
    problem = target_problem(file, function)
    if problem is not None:
        where = ""
        if problem[0] is FileNotFoundError:  # on one node of many, often a folder not shared
            where = (
                f" Every node must see the script at this path (a filesystem all nodes "
                f"share); this node is {socket.gethostname()}."
            )
        parser.error(f"argument target: {args.target!r} {problem[1]}{where}")
    if not function and joins_by_itself(file):
        parser.error(
            f"argument target: {file} builds its own multi-worker strategy, so it joins "
            f"the cluster by itself: run it as it is (python {file}, with TF_CONFIG set "
            "on every task), or take the worker's strategy from "
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
    try:
        config = resolve_tf_config(args.resolver, args.port)
    except (KeyError, ValueError, RuntimeError):
        config = None  # the worker refuses it, with its reason
    problem = own_address_problem(config, args.resolver) if config else None
    if problem is not None:
        parser.exit(2, problem + "\n")
    return _parent(args, sys.argv[1:] if argv is None else list(argv))


def _refuse_a_deleted_folder(parser: argparse.ArgumentParser, target: str) -> None:
    """Exit with status 2 if the folder this command runs in no longer exists."""
    try:
        os.getcwd()
    except FileNotFoundError:
        folder = os.environ.get("PWD")
        parser.exit(
            2,
            f"mirrorkit.worker: the working folder{f', {folder},' if folder else ''} no longer "
            "exists (deleted or moved after this shell entered it), and the worker cannot run "
            f"in it (relative paths, like the target's {target!r}, name nothing there): cd "
            "into a folder that exists, the one that holds the target, and run the command "
            "again.\n",
        )


def _parent(args: argparse.Namespace, argv: list[str]) -> int:
    # TensorFlow holds the GIL while it waits for the cluster, and its preemption notifier
    # swallows SIGTERM from then on: no code in that process can keep a bound or obey
    # SIGTERM. This process, without TensorFlow, keeps both for its child, the worker.
    # It also ends, with the worker, whatever the worker started (_reaper), and gives back
    # the checkpoint folders' leases the worker holds, however this ends (the worker's end,
    # the join's bound, a signal, an error here), once the worker has ended.
    from mirrorkit.cluster import _lease, _reaper

    _reaper.become_subreaper()
    with _lease.freed_after() as leases:
        return _supervise(args, argv, leases)


def _supervise(args: argparse.Namespace, argv: list[str], leases: dict) -> int:
    import queue

    from mirrorkit.cluster import _reaper, protocol
    from mirrorkit.cluster._flight import join_report

    read_fd, write_fd = os.pipe()
    env = {
        **os.environ,
        protocol.EVENT_FD: str(write_fd),
        protocol.SUPERVISOR_PID: str(os.getpid()),
    }
    listing = ["--leases", leases["listing"]] if leases["listing"] else []
    child = subprocess.Popen(
        [sys.executable, "-m", "mirrorkit.worker", *argv, "--child", *listing],
        env=env,
        pass_fds=(write_fd,),
    )
    leases["child"] = child
    os.close(write_fd)

    def end(signum, frame) -> None:
        # Not child.wait(): the main thread may be inside it, holding the lock it takes.
        # The exception leaves through _lease.freed_after, which waits once it is out.
        child.kill()
        _reaper.sweep()  # the worker, what it started, and their exits
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, end)
    events: queue.Queue = queue.Queue()

    def read() -> None:
        with os.fdopen(read_fd, "rb") as stream:
            for event in protocol.read_events(stream, 0):
                if not isinstance(event, protocol.Flight):
                    events.put(event.kind)
        events.put("closed")

    threading.Thread(target=read, name="mirrorkit-events", daemon=True).start()
    started, kind = time.monotonic(), ""
    while kind not in ("ready", "closed"):
        try:
            kind = events.get(timeout=0.2)
        except queue.Empty:
            if time.monotonic() - started > args.join_timeout:
                config = resolve_tf_config(args.resolver, args.port)  # as the child did
                task = config.get("task", {})
                job, index = task.get("type", "worker"), int(task.get("index", 0))
                child.kill()
                child.wait()
                _reaper.sweep()
                print(join_report(config, job, index, args.join_timeout), file=sys.stderr)
                return 2
    code = child.wait()
    left = _reaper.sweep()
    if left:
        print(
            f"mirrorkit.worker: ended {len(left)} process{'es' if len(left) > 1 else ''} the "
            f"worker started and left running: {', '.join(left)}",
            file=sys.stderr,
        )
    return code


def _child(args: argparse.Namespace) -> int:
    from mirrorkit.cluster import _lease, _procs, protocol
    from mirrorkit.cluster._flight import FlightRecorder, failure_report

    _procs.die_with_parent(int(os.environ.pop(protocol.SUPERVISOR_PID)))
    channel = protocol.EventChannel.from_environment()
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
        with _lease.listed_in(args.leases), context.as_current():  # the parent frees them
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
