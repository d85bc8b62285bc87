"""Events from the workers, and the status they fold into."""

from __future__ import annotations

import math

import pytest

import mirrorkit as mk


def test_event_round_trips_through_json():
    event = mk.WorkerEvent(1, "step", time=1.5, step=7, metrics={"loss": 0.25}, text="x")
    assert mk.WorkerEvent.from_json(event.to_json()) == event


def test_bad_events_are_refused():
    with pytest.raises(ValueError, match="kind must be one of"):
        mk.WorkerEvent(0, "exploded")
    with pytest.raises(ValueError, match="task index >= 0"):
        mk.WorkerEvent(-1, "ready")
    status = mk.ClusterStatus(2)
    with pytest.raises(ValueError, match=r"has 2 workers \(0..1\)"):
        status.apply(mk.WorkerEvent(2, "ready"))
    with pytest.raises(ValueError, match="num_workers"):
        mk.ClusterStatus(0)


def test_status_follows_a_worker_through_its_life():
    status = mk.ClusterStatus(2)
    status.apply(mk.WorkerEvent(1, "starting", address="127.0.0.1:5"))
    status.apply(mk.WorkerEvent(1, "ready", devices=("/job:worker/task:1/device:CPU:0",)))
    for step in range(1, 4):
        status.apply(mk.WorkerEvent(1, "step", step=step, metrics={"loss": 1.0 / step}))
    status.apply(mk.WorkerEvent(1, "step", step=4, metrics={"loss": math.nan}))
    for n in range(30):
        status.apply(mk.WorkerEvent(1, "output", text=f"line {n}"))
    status.apply(mk.WorkerEvent(1, "failed", text="killed by SIGKILL"))
    worker = status.workers[1]
    assert (worker.state, worker.address, worker.step) == ("failed", "127.0.0.1:5", 4)
    assert worker.devices == ("/job:worker/task:1/device:CPU:0",)
    assert [step for step, _ in worker.losses] == [1, 2, 3]  # NaN is not drawn
    assert worker.last_output[0] == "line 10" and len(worker.last_output) == 20
    assert worker.message == "killed by SIGKILL" and not worker.is_chief
    assert status.workers[0].state == "starting" and status.events == 37
