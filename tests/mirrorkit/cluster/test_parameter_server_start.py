"""The tasks of a parameter-server cluster start with GRPC_FAIL_FAST=use_caller, unless set."""

from __future__ import annotations

import pytest

import mirrorkit as mk
from mirrorkit.cluster._worker_main import fail_fast_by_caller


def fail_fast_on_the_chief(context):
    import os

    return os.environ.get("GRPC_FAIL_FAST")


def test_every_task_of_a_parameter_server_cluster_fails_fast_by_caller(no_orphans, monkeypatch):
    monkeypatch.delenv("GRPC_FAIL_FAST", raising=False)
    events = []
    run = mk.LocalCluster(1, num_ps=1, echo=False).run(
        fail_fast_on_the_chief, on_event=events.append, timeout=240
    )

    assert run.result == "use_caller"  # read by the chief's function, in the chief's process
    ready = {run.tasks[e.worker]: e.text for e in events if e.kind == "ready"}
    assert sorted(ready) == ["chief", "ps 0", "worker 0"]
    assert all(text.endswith("(GRPC_FAIL_FAST=use_caller)") for text in ready.values()), ready


def test_a_value_the_user_set_is_kept(monkeypatch):
    monkeypatch.setenv("GRPC_FAIL_FAST", "false")
    assert fail_fast_by_caller() == "false"
    monkeypatch.delenv("GRPC_FAIL_FAST")
    assert fail_fast_by_caller() == "use_caller"


PLAIN_SCRIPT = """
import os
import sys

import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
print("task", resolver.task_type, resolver.task_id, flush=True)
if resolver.task_type in ("worker", "ps"):
    server = tf.distribute.Server(
        resolver.cluster_spec(),
        job_name=resolver.task_type,
        task_index=resolver.task_id,
        protocol="grpc",
        start=True,
    )
    server.join()  # never returns: the launcher ends it when the chief is done
else:
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        total = tf.Variable(0.0)

    @tf.function
    def step():
        total.assign_add(1.0)

    for _ in range(int(sys.argv[1])):
        coordinator.schedule(step)
    coordinator.join()
    print("total", float(total.numpy()), "on", total.device, flush=True)
"""


def test_a_plain_parameter_server_script_runs_on_every_task_and_ends(tmp_path, no_orphans):
    script = tmp_path / "ps_train.py"
    script.write_text(PLAIN_SCRIPT)
    run = mk.LocalCluster(1, num_ps=1, echo=False).run_script(script, ["6"], timeout=240)
    assert run.tasks == ["chief", "worker 0", "ps 0"]
    assert run.output[0][-1] == "total 6.0 on /job:ps/replica:0/task:0/device:CPU:0"
    assert [lines[0] for lines in run.output.values()] == [
        "task chief 0",
        "task worker 0",
        "task ps 0",
    ]
    assert all(code == "exit status 0" for code in run.exits.values()), run.exits


def test_a_server_whose_script_fails_is_named(tmp_path, no_orphans):
    script = tmp_path / "ps_broken.py"
    script.write_text(PLAIN_SCRIPT.replace("server.join()", "raise RuntimeError('no join today')"))
    with pytest.raises(mk.WorkerFailedError, match="no join today") as error:
        mk.LocalCluster(1, num_ps=1, echo=False).run_script(script, ["2"], timeout=120)
    assert error.value.worker in (1, 2)
