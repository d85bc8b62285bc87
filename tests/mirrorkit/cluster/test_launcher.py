"""LocalCluster with real worker processes on loopback: success, faults, bounds, no orphans."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import keras
import pytest
import tensorflow as tf

import mirrorkit as mk
from mirrorkit.cluster import _procs, _warm, launcher
from tests.conftest import (
    CLUSTER_MARKER as MARKER,
    CLUSTER_OWNERS as OWNERS,
    ROOT,
    our_cluster_processes,
    wait_gone,
)
from tests.mirrorkit.cluster.faults import schedule_steps


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


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "new processes"])
def test_success_path_runs_every_worker_and_returns_results(no_orphans, capsys, warm):
    events = []
    cluster = mk.LocalCluster(2, warm=warm)
    run = cluster.run(count_steps, kwargs={"steps": 3}, on_event=events.append)

    assert run.launch.startswith("forked from" if warm else "new processes (asked for")
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
    # The private network hides the workers' servers: the same run shows it (issue 49 made
    # one launch of the two that each did the same work).
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
    # A run first if there is no warm process, so that it has imported TensorFlow: the 12 s
    # bound below is the cluster's forming, which a loaded machine's import (over 12 s in CI)
    # must not eat.
    if _warm.current_pid() is None:
        mk.LocalCluster(2, echo=False).run(count_steps, kwargs={"steps": 1})
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


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "new processes"])
def test_killed_worker_is_reported_and_the_others_stopped(no_orphans, warm):
    with pytest.raises(mk.WorkerFailedError) as error:
        mk.LocalCluster(2, echo=False, warm=warm).run(
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

    mk.LocalCluster(2, echo=False, warm={warm}).run(forever, on_event=on_event)
    """
)


def start_owner(tmp_path, warm=True):
    script = tmp_path / "owner.py"
    script.write_text(CHILD.format(root=str(ROOT), warm=warm))
    # Its run folders in a temporary folder of its own: any launch, in any job running beside
    # this one, removes the folders of owners that ended from the folder it shares.
    private = tmp_path / "tmp"
    private.mkdir()
    owner = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(private)},
    )
    OWNERS.add(owner.pid)
    deadline = time.monotonic() + 120
    seen = 0
    for line in owner.stdout:
        seen += "TRAINING" in line
        if seen == 2 or time.monotonic() > deadline:
            break
    assert seen == 2, owner.stderr.read()
    marker = f"{MARKER}{owner.pid}-"
    runs = [pid for pid in _procs.cluster_processes(marker) if _descends(pid, owner.pid)]
    assert len(runs) == 3  # the supervisor and two workers
    everything = [pid for pid in _procs.processes_with(marker) if _descends(pid, owner.pid)]
    assert len(everything) == 3 + warm  # and the warm process they were forked from
    return owner, everything


def _descends(pid, ancestor):
    while pid is not None and pid > 1:
        pid = _procs.parent_of(pid)
        if pid == ancestor:
            return True
    return False


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "new processes"])
def test_owner_killed_takes_every_worker_along(tmp_path, no_orphans, warm):
    owner, processes = start_owner(tmp_path, warm)
    owner.kill()  # as when the notebook kernel dies
    owner.wait()
    assert wait_gone(processes, within=10.0) == []
    # Its run folder (payload and spec) stays behind; the next launch removes it.
    private = tmp_path / "tmp"
    left = list(private.glob(f"mirrorkit-cluster-{owner.pid}-*"))
    assert left
    assert set(left) <= set(launcher._remove_stale_run_folders(str(private)))
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


# --- wrong inputs: each refused here, before any process starts ---

WRONG_CLUSTERS = [
    pytest.param(dict(num_workers=0), ValueError, "num_workers", r"from 1 to 16", id="no worker"),
    pytest.param(
        dict(num_workers="2"), TypeError, "num_workers", r"write LocalCluster\(2\)", id="a string"
    ),
    pytest.param(
        dict(num_workers=1.5), TypeError, "num_workers", r"an int from 1 to 16", id="a float"
    ),
    pytest.param(dict(num_workers=17), ValueError, "num_workers", r"from 1 to 16", id="too many"),
    pytest.param(
        dict(network="public"),
        ValueError,
        "network",
        r"one of \('private', 'shared'\).*see mirrorkit\.cluster\.scaleout",
        id="an unknown network",
    ),
    pytest.param(
        dict(start_timeout="60"),
        TypeError,
        "start_timeout",
        r"write start_timeout=60",
        id="a timeout as a string",
    ),
    pytest.param(
        dict(start_timeout=0), ValueError, "start_timeout", r"above 0", id="a timeout of 0"
    ),
    pytest.param(
        dict(collective_timeout=-1),
        ValueError,
        "collective_timeout",
        r"write collective_timeout=30",
        id="a negative collective timeout",
    ),
    pytest.param(
        dict(env={"BATCH": 64}),
        TypeError,
        "env",
        r"numbers quoted, e\.g\. env=\{'BATCH': '64'\}",
        id="a number in env",
    ),
    pytest.param(
        dict(logical_devices=0), ValueError, "logical_devices", r">= 1", id="no logical device"
    ),
    pytest.param(
        dict(num_ps="1"),
        TypeError,
        "num_ps",
        r"write LocalCluster\(2, num_ps=1\)",
        id="num_ps as a string",
    ),
    pytest.param(
        dict(num_ps=True), TypeError, "num_ps", r"an int from 0 to 4", id="num_ps as a bool"
    ),
    pytest.param(
        dict(num_ps=-1), ValueError, "num_ps", r"0 for a MultiWorkerMirroredStrategy", id="-1 ps"
    ),
    pytest.param(dict(num_ps=5), ValueError, "num_ps", r"from 0 to 4, got 5", id="too many ps"),
    pytest.param(
        dict(num_ps=1, logical_devices=2),
        ValueError,
        "logical_devices",
        r"counts only GPUs as replicas.*leave logical_devices out",
        id="logical devices with parameter servers",
    ),
    pytest.param(
        dict(num_ps=1, collective_timeout=30),
        ValueError,
        "collective_timeout",
        r"runs none.*run\(\.\.\., timeout=120\)",
        id="a collective timeout with parameter servers",
    ),
    pytest.param(
        dict(warm="no"),
        TypeError,
        "warm",
        r"True or False.*write warm=False to start every process as a new Python process",
        id="warm as a string",
    ),
]


@pytest.mark.wrong_inputs("mk.LocalCluster")
@pytest.mark.parametrize(("kwargs", "error", "argument", "match"), WRONG_CLUSTERS)
def test_wrong_cluster_settings_get_a_clear_message(refuses, kwargs, error, argument, match):
    refuses(lambda: mk.LocalCluster(**{"echo": False, **kwargs}), error, argument, match)


def train(context, epochs=1):
    return epochs


def no_context():
    return 1


WRONG_RUNS = [  # each a call(cluster of 2 workers, the session's strategy)
    pytest.param(
        lambda cluster, strategy: cluster.run(train(None)),
        TypeError,
        "function",
        r"pass the function itself, run\(train\), not what it returns",
        id="the function's result",
    ),
    pytest.param(
        lambda cluster, strategy: cluster.run("train.py"),
        TypeError,
        "function",
        r"for a script file use run_script\('train.py'\)",
        id="a script's name",
    ),
    pytest.param(
        lambda cluster, strategy: cluster.run(
            keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        ),
        TypeError,
        "function",
        r"Keras model.*def train\(context\): that builds the model",
        id="a Keras model",
    ),
    pytest.param(
        lambda cluster, strategy: cluster.run(no_context),
        TypeError,
        "context",
        r"WorkerContext first.*write def no_context\(context, \.\.\.\)",
        id="a function without the context",
    ),
    pytest.param(
        lambda cluster, strategy: cluster.run(train, args=(1, 2)),
        TypeError,
        "args",
        r"train\(context, 1, 2\) \(too many positional arguments\)",
        id="more args than the function takes",
    ),
    pytest.param(
        lambda cluster, strategy: cluster.run(train, args="data.csv"),
        TypeError,
        "args",
        r"write args=\('data.csv',\)",
        id="args as a string",
    ),
    pytest.param(
        lambda cluster, strategy: cluster.run(train, kwargs=[("epochs", 3)]),
        TypeError,
        "kwargs",
        r"write kwargs=\{'epochs': 3\}",
        id="kwargs as a list",
    ),
    pytest.param(
        lambda cluster, strategy: cluster.run(train, args=(strategy,)),
        TypeError,
        "args[0]",
        r"^args\[0\] must be a plain value .*got a tf\.distribute strategy \(MirroredStrategy\), "
        r"which cannot travel to the workers.*inside train, context\.strategy is the worker's",
        id="a strategy as an argument",
    ),
    pytest.param(
        lambda cluster, strategy: cluster.run(train, kwargs={"epochs": tf.data.Dataset.range(3)}),
        TypeError,
        "kwargs['epochs']",
        r"got a tf\.data dataset \(\w*Dataset\w*\).*write run\(train, kwargs=\{'path': "
        r"'data\.csv'\}\) with what builds the dataset .* and build it inside train",
        id="a dataset as an argument",
    ),
    pytest.param(
        lambda cluster, strategy: cluster.run(
            train, args=(keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)]),)
        ),
        TypeError,
        "args[0]",
        r"got a Keras model \(Sequential\), which cannot travel to the workers.*holds "
        r"variables.*def train\(context, units\): that builds the model inside train, under "
        r"context\.strategy\.scope\(\); pass what builds the model \(a plain function, its "
        r"sizes, a file path\)",
        id="a Keras model as an argument",
    ),
    pytest.param(
        lambda cluster, strategy: cluster.run(train, args=([1, {"head": keras.layers.Dense(2)}],)),
        TypeError,
        "args[0][1]['head']",
        r"got a Keras layer \(Dense\).*builds the layer inside train",
        id="a layer deep in a list",
    ),
    pytest.param(
        lambda cluster, strategy: cluster.run(train, args=(tf.constant([1.0, 2.0]),)),
        TypeError,
        "args[0]",
        r"got a tensor \(EagerTensor\).*write run\(train, args=\(tensor\.numpy\(\),\)\)",
        id="a tensor as an argument",
    ),
    pytest.param(
        lambda cluster, strategy: cluster.run(train, kwargs={"epochs": tf.Variable(3)}),
        TypeError,
        "kwargs['epochs']",
        r"got a tf\.Variable .*make the variable inside train",
        id="a variable as an argument",
    ),
    pytest.param(
        lambda cluster, strategy: cluster.run(train, on_event=[]),
        TypeError,
        "on_event",
        r"e\.g\. on_event=events\.append",
        id="a list as on_event",
    ),
    pytest.param(
        lambda cluster, strategy: cluster.run(train, timeout=0),
        ValueError,
        "timeout",
        r"write timeout=120 \(or None for no limit\)",
        id="a timeout of 0",
    ),
    pytest.param(
        lambda cluster, strategy: cluster.run(train, timeout="30"),
        TypeError,
        "timeout",
        r"write timeout=120",
        id="a timeout as a string",
    ),
    pytest.param(
        lambda cluster, strategy: cluster.run(train, fault=(1, 3)),
        TypeError,
        "fault",
        r"write fault=mk\.KillWorker\(worker=1, at_step=3\)",
        id="a fault as a tuple",
    ),
    pytest.param(
        lambda cluster, strategy: cluster.run(train, fault=mk.KillWorker(worker=5, at_step=1)),
        ValueError,
        "fault",
        r"this cluster has workers 0\.\.1; pick one of them",
        id="a fault on a worker the cluster lacks",
    ),
    pytest.param(
        lambda cluster, strategy: cluster.run(train, absent=1),
        TypeError,
        "absent",
        r"write absent=\[1\]",
        id="absent as an int",
    ),
    pytest.param(
        lambda cluster, strategy: cluster.run(train, absent=[2]),
        ValueError,
        "absent",
        r"must be in 0\.\.1",
        id="an absent worker the cluster lacks",
    ),
]


@pytest.mark.wrong_inputs("mk.LocalCluster.run")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_RUNS)
def test_wrong_runs_are_refused_before_any_process_starts(
    refuses, strategy, no_orphans, call, error, argument, match
):
    before = our_cluster_processes()
    refuses(lambda: call(mk.LocalCluster(2, echo=False), strategy), error, argument, match)
    assert our_cluster_processes() == before


TRAIN_SCRIPT = "import tensorflow as tf\n\n\ndef train(context):\n    return 1\n"

PLAIN_SCRIPT = textwrap.dedent(
    """
    import json
    import os
    import sys

    import tensorflow as tf

    task = json.loads(os.environ["TF_CONFIG"])["task"]
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    value = strategy.run(lambda: tf.constant(float(task["index"] + 1)))
    total = strategy.reduce("SUM", value, axis=None)
    print("worker", task["index"], "of", strategy.num_replicas_in_sync, "sum", float(total))
    sys.exit(0)
    """
)

WRONG_SCRIPTS = [  # each a call(cluster of 2 workers, a folder holding train.py)
    pytest.param(
        lambda cluster, folder: cluster.run_script("trian.py"),
        FileNotFoundError,
        "path 'trian.py'",
        r"names no file \(looked in .*\): check the name, or give the script's full path",
        id="a file that does not exist",
    ),
    pytest.param(
        lambda cluster, folder: cluster.run_script(folder),
        ValueError,
        "path",
        r"is a folder: name the training script inside it, e\.g\. '.*train\.py'",
        id="a folder",
    ),
    pytest.param(
        lambda cluster, folder: cluster.run_script(folder / "train.ipynb"),
        ValueError,
        "path",
        r"notebook.*jupyter nbconvert --to script .*train\.ipynb",
        id="a notebook",
    ),
    pytest.param(
        lambda cluster, folder: cluster.run_script(folder / "train.txt"),
        ValueError,
        "path",
        r"not a Python script \(\.py\).*e\.g\. '.*train\.py'",
        id="not a .py file",
    ),
    pytest.param(
        lambda cluster, folder: cluster.run_script(f"{folder / 'train.py'}:trian"),
        ValueError,
        "trian",
        r"its functions: train\): check the name after the colon",
        id="a function the script does not define",
    ),
    pytest.param(
        lambda cluster, folder: cluster.run_script(f"{folder / 'train.py'}:train()"),
        ValueError,
        "path",
        r"not a function's name: write '.*train\.py:train'",
        id="a call after the colon",
    ),
    pytest.param(
        lambda cluster, folder: cluster.run_script(train),
        TypeError,
        "path",
        r"run a function with run\(function\)",
        id="a function instead of a script",
    ),
    pytest.param(
        lambda cluster, folder: cluster.run_script(folder / "train.py", args="--epochs 3"),
        TypeError,
        "args",
        r"write args=\['--epochs', '3'\]",
        id="args as one string",
    ),
    pytest.param(
        lambda cluster, folder: cluster.run_script(folder / "train.py", timeout=-5),
        ValueError,
        "timeout",
        r"write timeout=120",
        id="a negative timeout",
    ),
    pytest.param(
        lambda cluster, folder: cluster.run_script(
            folder / "train.py", fault=mk.KillWorker(worker=2, at_step=1)
        ),
        ValueError,
        "fault",
        r"this cluster has workers 0\.\.1; pick one of them",
        id="a fault on a worker the cluster lacks",
    ),
    pytest.param(
        lambda cluster, folder: cluster.run_script(
            folder / "plain.py", fault=mk.KillWorker(worker=1, at_step=1)
        ),
        ValueError,
        "fault",
        r"plain\.py: it builds its own multi-worker strategy, so the launcher never sees "
        r"its steps\. Take the strategy from mirrorkit\.current_context\(\)\.strategy",
        id="a fault in a script that builds its own strategy",
    ),
]


@pytest.mark.wrong_inputs("mk.LocalCluster.run_script")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_SCRIPTS)
def test_wrong_scripts_are_refused_before_any_process_starts(
    refuses, tmp_path, no_orphans, call, error, argument, match
):
    (tmp_path / "train.py").write_text(TRAIN_SCRIPT)
    (tmp_path / "train.ipynb").write_text("{}")
    (tmp_path / "train.txt").write_text(TRAIN_SCRIPT)
    (tmp_path / "plain.py").write_text(PLAIN_SCRIPT)
    before = our_cluster_processes()
    refuses(lambda: call(mk.LocalCluster(2, echo=False), tmp_path), error, argument, match)
    assert our_cluster_processes() == before


WRONG_FAULTS = [
    pytest.param(
        dict(worker="1", at_step=3),
        TypeError,
        "KillWorker.worker",
        r"write KillWorker\(worker=1, at_step=3\)",
        id="a worker as a string",
    ),
    pytest.param(
        dict(worker=[1, 2], at_step=3),
        TypeError,
        "KillWorker.worker",
        r"one worker per KillWorker",
        id="two workers",
    ),
    pytest.param(
        dict(worker=-1, at_step=3),
        ValueError,
        "KillWorker.worker",
        r">= 0 \(0 is the chief",
        id="a negative worker",
    ),
    pytest.param(
        dict(worker=1, at_step=0),
        ValueError,
        "KillWorker.at_step",
        r"at_step >= 1|>= 1 \(the first step is 1\)",
        id="step 0",
    ),
    pytest.param(
        dict(worker=1, at_step=2.5),
        TypeError,
        "KillWorker.at_step",
        r"the step after which it dies",
        id="a fractional step",
    ),
    pytest.param(
        dict(worker=1, at_step=None),
        TypeError,
        "KillWorker.at_step",
        r"write KillWorker\(worker=1, at_step=3\)",
        id="no step",
    ),
]


@pytest.mark.wrong_inputs("mk.KillWorker")
@pytest.mark.parametrize(("kwargs", "error", "argument", "match"), WRONG_FAULTS)
def test_wrong_faults_get_a_clear_message(refuses, kwargs, error, argument, match):
    refuses(lambda: mk.KillWorker(**kwargs), error, argument, match)


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
    assert error.value.worker == 1, message  # the culprit, not the survivor that raised
    assert message.startswith("worker 1 went silent (no heartbeats); then worker 0 failed: ")
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


def test_a_plain_tensorflow_script_joins_the_cluster_itself(tmp_path, no_orphans):
    script = tmp_path / "plain.py"
    script.write_text(PLAIN_SCRIPT)
    run = mk.LocalCluster(2, echo=False).run_script(script, timeout=120)
    # The script's own strategy joined: two replicas, and 1 + 2 summed across the processes;
    # its sys.exit(0) is a normal end.
    # (after TensorFlow's warning that the script's strategy.run ran eagerly)
    assert run.output[0][-1] == "worker 0 of 2 sum 3.0"
    assert run.output[1][-1] == "worker 1 of 2 sum 3.0"
    assert run.exits == {0: "exit status 0", 1: "exit status 0"}
    assert run.results == [None, None]
    assert "finished, no steps" in run.summary()


def test_a_plain_script_that_fails_fails_the_run(tmp_path, no_orphans):
    script = tmp_path / "plain.py"
    script.write_text(PLAIN_SCRIPT.replace("sys.exit(0)", "sys.exit(4)"))
    with pytest.raises(mk.WorkerFailedError) as failed:
        mk.LocalCluster(2, echo=False).run_script(script, timeout=120)
    assert "SystemExit: 4" in str(failed.value)


# -- parameter-server clusters ---------------------------------------------------------------


def test_parameter_server_cluster_runs_steps_on_its_workers(no_orphans, capsys):
    events = []
    run = mk.LocalCluster(2, num_ps=1).run(
        schedule_steps,
        kwargs={"steps": 6},
        on_event=events.append,
        timeout=240,
        fault=mk.KillWorker(worker=1, at_step=3),
    )

    assert run.tasks == ["chief", "worker 0", "worker 1", "ps 0"]
    result = run.result
    assert result["strategy"] == "ParameterServerStrategyV2"
    assert result["device"] == "/job:ps/replica:0/task:0/device:CPU:0"
    assert result["fetched"] == [2.0] * 6  # steps 4-6 ran on worker 0 alone
    assert result["count"] == 6
    assert result["chief"] and result["workers"] == 2
    assert run.results[1:] == [None, None, None]
    out = capsys.readouterr().out
    assert "[chief] ParameterServerStrategyV2 counted 6" in out
    assert "[chief] mirrorkit: fault injection kills worker 1 after step 3" in out
    assert run.exits == {
        0: "exit status 0",
        1: "exit status 0",
        2: "killed by SIGKILL",
        3: "exit status 0",
    }
    assert [w.state for w in run.status.workers] == ["finished", "finished", "failed", "finished"]
    assert run.tf_configs[3] == {
        "cluster": {
            "chief": run.addresses[:1],
            "worker": run.addresses[1:3],
            "ps": run.addresses[3:],
        },
        "task": {"type": "ps", "index": 0},
    }
    ready = {e.worker: e.devices for e in events if e.kind == "ready"}
    assert ready[3] == ("/job:ps/replica:0/task:0",)
    assert "worker 1: failed, no steps, killed by SIGKILL" in run.summary()
    assert "chief: finished, 6 steps" in run.summary()


def fail_on_the_chief(context):
    raise RuntimeError("the coordinator gave up")


def test_a_failing_chief_ends_a_parameter_server_run(no_orphans):
    with pytest.raises(mk.WorkerFailedError) as error:
        mk.LocalCluster(1, num_ps=1, echo=False).run(fail_on_the_chief, timeout=240)
    message = str(error.value)
    assert message.startswith("chief failed: RuntimeError: the coordinator gave up")
    assert "the other processes (worker 0, ps 0) were stopped" in message


@pytest.mark.parametrize(
    ("call", "match"),
    [
        pytest.param(
            lambda cluster: cluster.run(schedule_steps, absent=[1]),
            r"absent=\[1\] is for MultiWorkerMirroredStrategy clusters.*KillWorker",
            id="absent",
        ),
        pytest.param(
            lambda cluster: cluster.run_script(__file__),
            r"does not build its own ParameterServerStrategy.*call run\(train\)",
            id="a script",
        ),
    ],
)
def test_parameter_server_runs_refuse_what_they_cannot_do(no_orphans, call, match):
    before = our_cluster_processes()
    with pytest.raises(ValueError, match=match):
        call(mk.LocalCluster(2, num_ps=1, echo=False))
    assert our_cluster_processes() == before
