"""The tasks of a parameter-server cluster start with GRPC_FAIL_FAST=use_caller, unless set."""

from __future__ import annotations

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
