"""LocalCluster with real worker processes on loopback: success, faults, bounds, no orphans."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
import tensorflow as tf

import mirrorkit as mk
from mirrorkit.cluster import _procs, launcher
from tests.conftest import ROOT

MARKER = "mirrorkit-cluster-"  # + the owner's pid: in its supervisor's and workers' command lines
# The owners started by this test process (itself, and owner scripts). Other test runs on the
# same machine have clusters too; the checks here count only ours.
OWNERS = {os.getpid()}


def our_cluster_processes() -> set[int]:
    return {pid for owner in OWNERS for pid in _procs.processes_with(f"{MARKER}{owner}-")}


def count_steps(context, steps=4):
    """All-reduce a constant each step; report the step; return what every worker saw."""
    import tensorflow as tf

    strategy = context.strategy
    totals = []
    for step in range(1, steps + 1):
        value = strategy.run(lambda: tf.constant(float(context.task_id + 1)))
        totals.append(float(strategy.reduce("SUM", value, axis=None)))
        context.report(step, loss=1.0 / step)
    print(f"worker {context.task_id} saw {totals[-1]}")
    return {"task": context.task_id, "replicas": strategy.num_replicas_in_sync, "sums": totals}


def wait_gone(pids, within=15.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = [pid for pid in pids if _procs.is_running(pid)]
        if not alive:
            return []
        time.sleep(0.1)
    return alive


@pytest.fixture
def no_orphans():
    """Every test here must leave no supervisor or worker behind."""
    before = our_cluster_processes()
    yield
    left = wait_gone(sorted(our_cluster_processes() - before), within=10.0)
    assert left == [], f"processes left behind: {left}"


def test_success_path_runs_every_worker_and_returns_results(no_orphans, capsys):
    events = []
    run = mk.LocalCluster(2).run(count_steps, kwargs={"steps": 3}, on_event=events.append)

    assert [r["task"] for r in run.results] == [0, 1]
    assert all(r["replicas"] == 2 for r in run.results)
    assert all(r["sums"] == [3.0, 3.0, 3.0] for r in run.results)  # 1 + 2 all-reduced
    assert run.result is run.results[0]
    out = capsys.readouterr().out
    assert "[worker 0] worker 0 saw 3.0" in out and "[worker 1] worker 1 saw 3.0" in out
    for worker in (0, 1):
        kinds = [e.kind for e in events if e.worker == worker and e.kind != "output"]
        assert kinds == ["starting", "ready", "step", "step", "step", "finished"]
    assert [w.state for w in run.status.workers] == ["finished", "finished"]
    assert run.status.workers[1].losses == [(1, 1.0), (2, 0.5), (3, 1 / 3)]
    assert run.exits == {0: "exit status 0", 1: "exit status 0"}
    assert run.tf_configs[1]["task"] == {"type": "worker", "index": 1}
    assert run.tf_configs[0]["cluster"]["worker"] == run.addresses
    assert 0 < run.start_seconds <= run.wall_seconds
    assert "worker 0 (chief): finished, 3 steps" in run.summary()


def test_private_network_hides_the_workers_servers(no_orphans):
    run = mk.LocalCluster(2, echo=False).run(count_steps, kwargs={"steps": 1})

    assert run.network == "private"
    assert run.interfaces == ["lo"]  # nothing else to listen on
    ports = sorted(int(a.rsplit(":", 1)[1]) for a in run.addresses)
    # TensorFlow binds every interface whatever TF_CONFIG says ...
    assert sorted(int(s.rsplit(":", 1)[1]) for s in run.listening) == ports
    assert all(s.startswith(("[::]:", "0.0.0.0:")) for s in run.listening)


def test_private_network_is_unreachable_from_the_machine(no_orphans):
    seen = {}

    def listen_and_wait(context):
        import socket

        return socket.gethostname()

    def on_event(event):
        if event.kind == "ready" and event.worker == 0:
            seen["host"] = set(_procs.listening_sockets(os.getpid()))

    run = mk.LocalCluster(2, echo=False).run(listen_and_wait, on_event=on_event)
    ports = {int(a.rsplit(":", 1)[1]) for a in run.addresses}
    host_ports = {int(s.rsplit(":", 1)[1]) for s in seen["host"]}
    assert not ports & host_ports, "a worker's port is open in the machine's own network"


def test_shared_network_warns_and_listens_on_every_interface(no_orphans):
    with pytest.warns(mk.ClusterSecurityWarning, match="every interface"):
        run = mk.LocalCluster(2, network="shared", echo=False).run(count_steps, kwargs={"steps": 1})
    assert run.network == "shared"
    ports = {int(a.rsplit(":", 1)[1]) for a in run.addresses}
    wildcard = {
        int(s.rsplit(":", 1)[1]) for s in run.listening if s.startswith(("[::]:", "0.0.0.0:"))
    }
    assert ports <= wildcard  # measured: TF_CONFIG says 127.0.0.1, the server binds '*'


def test_missing_worker_fails_within_the_start_timeout(no_orphans):
    started = time.monotonic()
    with pytest.raises(mk.ClusterStartError) as error:
        mk.LocalCluster(2, start_timeout=12, echo=False).run(count_steps, absent=[1])
    took = time.monotonic() - started

    message = str(error.value)
    assert "did not form within 12 s" in message
    assert "worker 1 (127.0.0.1:" in message and "never started" in message
    assert "worker 0" in message and "MultiWorkerMirroredStrategy()" in message
    assert took < 12 + 10  # the bound, plus stopping
    status = error.value.run.status
    assert [w.state for w in status.workers] == ["stopped", "starting"]


def test_killed_worker_is_reported_and_the_others_stopped(no_orphans):
    with pytest.raises(mk.WorkerFailedError) as error:
        mk.LocalCluster(2, echo=False).run(
            count_steps, kwargs={"steps": 50}, fault=mk.KillWorker(worker=1, at_step=3)
        )
    err = error.value
    assert err.worker == 1
    assert "worker 1 failed: killed by SIGKILL" in str(err)
    assert "fault injection kills this worker after step 3" in str(err)  # its last output
    assert err.run.exits[1] == "killed by SIGKILL"
    assert err.run.status.workers[1].step == 3
    assert err.run.status.workers[0].state in ("stopped", "failed")
    assert err.run.status.workers[0].step < 50


def test_failing_function_shows_the_traceback(no_orphans):
    def broken(context):
        if context.task_id == 1:
            raise ValueError("shapes (3,) and (4,) do not match")
        return count_steps(context, steps=50)

    with pytest.raises(mk.WorkerFailedError) as error:
        mk.LocalCluster(2, echo=False).run(broken)
    message = str(error.value)
    assert "worker 1 failed: ValueError: shapes (3,) and (4,) do not match (exit status 1)" in (
        message
    )
    assert 'raise ValueError("shapes (3,) and (4,) do not match")' in message


def test_run_timeout_stops_every_worker(no_orphans):
    def forever(context):
        time.sleep(600)

    started = time.monotonic()
    with pytest.raises(mk.ClusterTimeoutError, match="timeout=4 s"):
        mk.LocalCluster(2, echo=False, start_timeout=60).run(forever, timeout=4)
    assert time.monotonic() - started < 60 + 10


CHILD = textwrap.dedent(
    """
    import faulthandler, signal, sys, time
    sys.path.insert(0, {root!r})
    import mirrorkit as mk

    faulthandler.register(signal.SIGUSR1)  # the test asks for every thread's stack if stuck
    # As a Jupyter kernel does: SIGINT raises KeyboardInterrupt, even where this process was
    # started with SIGINT ignored (a shell without job control ignores it in background jobs).
    signal.signal(signal.SIGINT, signal.default_int_handler)

    def forever(context):
        context.report(1)
        time.sleep(600)

    def on_event(event):
        if event.kind == "step":
            print("TRAINING", flush=True)

    mk.LocalCluster(2, echo=False).run(forever, on_event=on_event)
    """
)


def start_owner(tmp_path):
    script = tmp_path / "owner.py"
    script.write_text(CHILD.format(root=str(ROOT)))
    owner = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    OWNERS.add(owner.pid)
    deadline = time.monotonic() + 120
    seen = 0
    for line in owner.stdout:
        seen += "TRAINING" in line
        if seen == 2 or time.monotonic() > deadline:
            break
    assert seen == 2, owner.stderr.read()
    descendants = [
        pid for pid in _procs.processes_with(f"{MARKER}{owner.pid}-") if _descends(pid, owner.pid)
    ]
    assert len(descendants) == 3  # the supervisor and two workers
    return owner, descendants


def _descends(pid, ancestor):
    while pid is not None and pid > 1:
        pid = _procs.parent_of(pid)
        if pid == ancestor:
            return True
    return False


def test_owner_killed_takes_every_worker_along(tmp_path, no_orphans):
    owner, processes = start_owner(tmp_path)
    owner.kill()  # as when the notebook kernel dies
    owner.wait()
    assert wait_gone(processes, within=10.0) == []
    # Its run folder (payload and spec) stays behind; the next launch removes it.
    left = list(Path(tempfile.gettempdir()).glob(f"mirrorkit-cluster-{owner.pid}-*"))
    assert left
    assert set(left) <= set(launcher._remove_stale_run_folders())
    assert not any(path.exists() for path in left)


def test_only_folders_of_ended_owners_are_removed(tmp_path):
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead = tmp_path / f"mirrorkit-cluster-{ended.stdout.strip()}-abc"
    alive = tmp_path / f"mirrorkit-cluster-{os.getpid()}-def"
    other = tmp_path / "mirrorkit-cluster-notapid-ghi"
    for folder in (dead, alive, other):
        folder.mkdir()
        (folder / "spec.json").write_text("{}")
    assert launcher._remove_stale_run_folders(str(tmp_path)) == [dead]
    assert not dead.exists() and alive.exists() and other.exists()


def test_a_strategy_passed_to_the_workers_gets_a_sentence_not_a_pickling_error(strategy):
    def train(context, strategy):
        return strategy.num_replicas_in_sync

    with pytest.raises(TypeError) as raised:
        mk.LocalCluster(2, echo=False).run(train, args=(strategy,))
    message = str(raised.value)
    assert message.startswith("args[0] (MirroredStrategy) cannot be sent to the worker processes")
    assert "ctx.strategy is the worker's strategy" in message
    with pytest.raises(TypeError, match=r"kwargs\['data'\] \(\w*Dataset\w*\)"):
        mk.LocalCluster(2, echo=False).run(train, kwargs={"data": tf.data.Dataset.range(3)})


def test_interrupt_stops_every_worker(tmp_path, no_orphans):
    owner, processes = start_owner(tmp_path)
    owner.send_signal(signal.SIGINT)  # the notebook's stop button
    try:
        _, stderr = owner.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        owner.send_signal(signal.SIGUSR1)  # where it is stuck, then end it and its cluster
        time.sleep(1)
        owner.kill()
        _, stderr = owner.communicate()
        pytest.fail(f"the owner did not stop within 30 s of SIGINT; its threads:\n{stderr}")
    assert "KeyboardInterrupt" in stderr
    assert wait_gone(processes, within=5.0) == []


def test_bad_arguments_say_what_to_do():
    with pytest.raises(ValueError, match="network must be one of"):
        mk.LocalCluster(2, network="public")
    with pytest.raises(ValueError, match="absent workers must be in 0..1"):
        mk.LocalCluster(2).run(count_steps, absent=[2])
    with pytest.raises(ValueError, match="this cluster has workers 0..1"):
        mk.LocalCluster(2).run(count_steps, fault=mk.KillWorker(worker=5, at_step=1))
    with pytest.raises(ValueError, match="at_step >= 1"):
        mk.KillWorker(worker=0, at_step=0)
    with pytest.raises(TypeError, match="function must be callable"):
        mk.LocalCluster(2).run("train.py")


def test_frozen_worker_is_found_by_heartbeat_and_named(no_orphans):
    pids = {}

    def freeze_worker_1(event):
        if event.kind == "starting":
            pids[event.worker] = event.pid
        if event.kind == "step" and event.worker == 1 and event.step == 2:
            os.kill(pids[1], signal.SIGSTOP)  # frozen, not dead: its process stays

    started = time.monotonic()
    with pytest.raises(mk.WorkerFailedError) as error:
        mk.LocalCluster(2, echo=False).run(
            count_steps, kwargs={"steps": 10_000}, on_event=freeze_worker_1
        )
    took = time.monotonic() - started
    message = str(error.value)
    assert error.value.worker == 0  # the survivor is the one that raises
    assert "worker 1 stopped sending heartbeats" in message
    assert took < 90
    assert set(error.value.run.exits) == {0, 1}  # the frozen one was ended too


def test_three_workers(no_orphans):
    run = mk.LocalCluster(3, echo=False).run(count_steps, kwargs={"steps": 2})
    assert [r["sums"] for r in run.results] == [[6.0, 6.0]] * 3  # 1 + 2 + 3
    assert len(set(run.addresses)) == 3


SCRIPT = textwrap.dedent(
    """
    import sys
    import tensorflow as tf
    import mirrorkit as mk

    def train(context):
        value = context.strategy.run(lambda: tf.constant(2.0))
        return float(context.strategy.reduce("SUM", value, axis=None))

    if __name__ == "__main__":
        context = mk.current_context()
        print("script sees", sys.argv[1:], "as worker", context.task_id, flush=True)
    """
)


def test_run_script_as_main_and_as_function(tmp_path, capsys, no_orphans):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    cluster = mk.LocalCluster(2)

    as_main = cluster.run_script(script, args=["--epochs", "3"])
    out = capsys.readouterr().out
    assert "[worker 1] script sees ['--epochs', '3'] as worker 1" in out
    assert as_main.results == [None, None]

    as_function = cluster.run_script(f"{script}:train")
    assert as_function.results == [4.0, 4.0]
