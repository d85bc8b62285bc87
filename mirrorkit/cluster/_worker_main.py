"""One worker process of a LocalCluster run: join the cluster, run the payload, hand back a result.

Started by the supervisor as ``python -m mirrorkit.cluster._worker_main RUN_DIR INDEX`` with
TF_CONFIG and the variables :data:`~mirrorkit.cluster.protocol.EVENT_FD` and
:data:`~mirrorkit.cluster.protocol.SUPERVISOR_PID` set.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback
from pathlib import Path


def main(run_dir: str, index: str) -> None:
    from mirrorkit.cluster import _procs, protocol

    _procs.die_with_parent(int(os.environ[protocol.SUPERVISOR_PID]))
    run, worker = Path(run_dir), int(index)
    spec = protocol.LaunchSpec.read(run)
    if spec.num_ps:
        fail_fast_by_caller()  # while this process has one thread: setenv is not thread-safe
    from mirrorkit.cluster.events import WorkerEvent

    channel = protocol.EventChannel.from_environment()
    code = 0
    try:
        import mirrorkit as mk

        mk.make_reproducible(spec.seed)
        if spec.logical_devices:
            # Configure only: listing devices would start the runtime, and collective ops
            # must be configured (by the strategy) before it starts.
            import tensorflow as tf

            cpu = tf.config.list_physical_devices("CPU")[0]
            tf.config.set_logical_device_configuration(
                cpu, [tf.config.LogicalDeviceConfiguration()] * spec.logical_devices
            )
        import cloudpickle

        payload = cloudpickle.loads((run / protocol.PAYLOAD_FILE).read_bytes())
        if payload.get("joins_by_itself") and spec.num_ps and worker != 0:
            result = _serve_plain_script(payload, worker, channel)
        elif payload.get("joins_by_itself"):
            result = _run_plain_script(payload, worker, channel)
        elif spec.num_ps and worker != 0:
            result = _serve(worker, channel)
        elif spec.num_ps:
            result = _coordinate(payload, channel, spec)
        else:
            result = _join_and_run(payload, worker, channel, spec)
        partial = run / f"{protocol.result_file(worker)}.partial"
        from mirrorkit.cluster import _results

        data = _results.dump(result, bool(payload.get("keep_tensors")))
        try:
            partial.write_bytes(data)
            partial.rename(run / protocol.result_file(worker))
        except OSError as error:
            from mirrorkit.cluster._run_folder import TMP_FIX, explained

            raise explained(error, run, "the run's folder, writing the result,", TMP_FIX) from None
        sys.stdout.flush()
        channel.send(WorkerEvent(worker, "finished"))
    except BaseException as error:  # noqa: BLE001 - every failure is reported, then we exit
        traceback.print_exc(file=sys.stdout)
        summary = _hint(error, spec.num_workers) or _one_line(error)
        sys.stdout.flush()
        channel.send(WorkerEvent(worker, "failed", text=summary))
        code = 1
    # Leave only when the supervisor says so (it closes our stdin once every worker has
    # finished): a chief that left early would take the coordination service with it.
    if code == 0:
        sys.stdin.read()
    os._exit(code)


def _join_and_run(payload: dict, worker: int, channel, spec) -> object:
    """Join the cluster (the worker's own strategy), then run the payload with the context."""
    from mirrorkit.cluster._flight import FlightRecorder
    from mirrorkit.cluster.events import WorkerEvent
    from mirrorkit.cluster.targets import run_target
    from mirrorkit.cluster.worker import WorkerContext

    started = time.perf_counter()
    recorder = FlightRecorder(0, channel=channel)  # where it is, for naming who holds up whom
    context = WorkerContext.from_environment(
        timeout_seconds=spec.collective_timeout, events=recorder, fault=spec.fault_for(worker)
    )
    # Joining installs TensorFlow's preemption notifier on SIGTERM, which leaves a worker
    # blocked in a collective running; the launcher's stop must end it at once.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    channel.send(
        WorkerEvent(
            worker,
            "ready",
            devices=tuple(context.strategy.extended.worker_devices),
            text=f"joined in {time.perf_counter() - started:.2f} s",
        )
    )
    recorder.start("worker", worker, context.tf_config)
    try:
        with context.as_current():
            if payload["kind"] == "function":
                return payload["function"](context, *payload["args"], **payload["kwargs"])
            sys.argv = [payload["path"], *payload["args"]]
            return run_target(payload["path"], context)
    finally:
        recorder.stop()


def fail_fast_by_caller() -> str:
    """Set GRPC_FAIL_FAST=use_caller in a parameter-server task, unless it is set; the value.

    TensorFlow's parameter-server tutorial sets it on every task, the chief included. Each RPC
    then fails at once or waits for its server as the TensorFlow code making it asks: the
    calls that run steps fail at once with UnavailableError when a worker is gone (the
    coordinator moves its steps to another worker), the first contact at start-up waits.
    TensorFlow reads the variable at each RPC, and "use_caller" has been its default since its
    RFC 355 (2021): in TensorFlow 2.21 setting it changes nothing, and it keeps this behaviour
    where a build defaults otherwise. A value the user set (``"true"``, ``"false"``) is kept.
    """
    return os.environ.setdefault("GRPC_FAIL_FAST", "use_caller")


def _serve(worker: int, channel) -> None:
    """A worker or parameter-server task: start its server and serve until the chief is done.

    A real ``worker`` or ``ps`` task calls ``server.join()`` and serves forever; here the
    process ends when the supervisor closes its stdin, once the chief has finished.
    """
    import tensorflow as tf

    from mirrorkit.cluster.events import WorkerEvent

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    server = tf.distribute.Server(
        resolver.cluster_spec(),
        job_name=resolver.task_type,
        task_index=resolver.task_id,
        protocol=resolver.rpc_layer or "grpc",
        start=True,
    )
    name = f"/job:{resolver.task_type}/replica:0/task:{resolver.task_id}"
    text = f"serving {name} ({_fail_fast_setting()})"
    channel.send(WorkerEvent(worker, "ready", devices=(name,), text=text))
    sys.stdin.read()  # the supervisor closes it when the chief has finished
    del server
    return None


def _coordinate(payload: dict, channel, spec) -> object:
    """The chief of a parameter-server cluster: make the strategy, then run the function."""
    import json

    from mirrorkit.cluster import protocol
    from mirrorkit.cluster._flight import probe
    from mirrorkit.cluster.events import WorkerEvent
    from mirrorkit.cluster.worker import WorkerContext

    started = time.perf_counter()
    config = json.loads(os.environ["TF_CONFIG"])
    servers = [a for job in ("worker", "ps") for a in config["cluster"].get(job, [])]
    waiting = list(servers)
    while waiting:  # the owner's start_timeout bounds this wait
        if probe(waiting[0], timeout=0.5) == "listening":
            waiting.pop(0)
        else:
            time.sleep(0.05)
    import tensorflow as tf

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
    pids = {int(k): v for k, v in json.loads(os.environ.get(protocol.SERVER_PIDS, "{}")).items()}
    fault = spec.fault
    context = WorkerContext(
        strategy,
        task_type="chief",
        task_id=0,
        num_workers=spec.num_workers,
        tf_config=config,
        events=channel,
        fault=fault,
        fault_pid=None if fault is None else pids.get(fault.worker + 1),
    )
    channel.send(
        WorkerEvent(
            0,
            "ready",
            devices=tuple(strategy.extended.worker_devices),
            text=(
                f"made ParameterServerStrategy in {time.perf_counter() - started:.2f} s "
                f"({_fail_fast_setting()})"
            ),
        )
    )
    with context.as_current():
        return payload["function"](context, *payload["args"], **payload["kwargs"])


def _fail_fast_setting() -> str:
    """'GRPC_FAIL_FAST=<value>', for a parameter-server task's "ready" event."""
    return f"GRPC_FAIL_FAST={os.environ.get('GRPC_FAIL_FAST', '')}"


def _run_plain_script(payload: dict, worker: int, channel) -> None:
    """Run a script that builds its own strategy: it joins the cluster itself, from TF_CONFIG.

    The worker is "ready" when the script starts; TensorFlow's preemption notifier, which the
    script's strategy installs on SIGTERM, leaves the launcher's SIGKILL after its grace time.
    """
    import runpy

    from mirrorkit.cluster.events import WorkerEvent

    name = Path(payload["path"]).name
    channel.send(WorkerEvent(worker, "ready", text=f"running {name}, which joins by itself"))
    sys.argv = [payload["path"], *payload["args"]]
    try:
        runpy.run_path(payload["path"], run_name="__main__")
    except SystemExit as end:  # sys.exit() or sys.exit(0) is a script's normal end
        if end.code not in (None, 0):
            raise


def _serve_plain_script(payload: dict, worker: int, channel) -> None:
    """A worker or parameter server running a plain parameter-server script.

    The script starts its ``tf.distribute.Server`` and calls ``server.join()``, which never
    returns; it runs on a thread of its own, and the task ends when the chief has finished
    (the supervisor closes stdin), or with the script's error if it ends first.
    """
    import threading

    ended, outcome = threading.Event(), []

    def script() -> None:
        try:
            _run_plain_script(payload, worker, channel)
        except BaseException as error:  # noqa: BLE001 - raised again in the main thread
            outcome.append(error)
        ended.set()

    def chief_done() -> None:
        sys.stdin.read()
        ended.set()

    threading.Thread(target=script, name="script", daemon=True).start()
    threading.Thread(target=chief_done, name="stdin", daemon=True).start()
    ended.wait()
    if outcome:
        raise outcome[0]


def _hint(error: BaseException, num_workers: int) -> str | None:
    """What a misleading error means (printed too), or None; never fails itself."""
    try:
        from mirrorkit.cluster._worker_hints import hint

        text = hint(error, num_workers)
    except Exception:  # noqa: BLE001 - the error itself is reported either way
        return None
    if text:
        print(f"mirrorkit: {text}", flush=True)
    return text


def _one_line(error: BaseException) -> str:
    """'ValueError: first line ... last line' of an exception, at most 300 characters.

    Only the lines that say what went wrong (:func:`mirrorkit.report.values.error_lines`).
    """
    from mirrorkit.report.values import error_lines

    lines = error_lines(error)
    text = lines[0] if lines else ""
    if len(lines) > 1:
        text = f"{lines[0]} ... {lines[-1]}"
    text = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."


if __name__ == "__main__":
    main(*sys.argv[1:3])
