import os
import re
from pathlib import Path

import pytest

import mirrorkit as mk
from mirrorkit.cluster import _session, protocol as p

PACKAGE = Path(mk.__file__).parent

EXAMPLES = [
    p.Network("private", "user+net namespace", ("127.0.0.1:1", "127.0.0.1:2"), ("lo",)),
    p.Spawned(worker=1, pid=4321, address="127.0.0.1:2"),
    p.Output(worker=0, text='step 1 "quoted" \\ backslash'),
    p.Event(mk.WorkerEvent(1, "step", step=3, metrics={"loss": 0.25})),
    p.Flight(worker=1, record={"step": 2, "where": "train.py:9 `step()`"}),
    p.Listening(("127.0.0.1:1",)),
    p.Swept(("pid 123 (sleep 600)",)),
    p.Exit(worker=1, returncode=-9),
    p.Stopped(),
    p.Done(),
    p.Fatal("OSError: no ports"),
]


def test_there_is_an_example_of_every_message():
    assert {type(m) for m in EXAMPLES} == set(p.MESSAGES.values())


@pytest.mark.parametrize("message", EXAMPLES, ids=lambda m: m.type)
def test_each_message_survives_the_wire(message):
    line = p.encode(message)
    assert "\n" not in line
    assert p.decode(line) == message


def test_an_unknown_or_broken_line_is_an_error_not_a_guess():
    with pytest.raises(ValueError, match="unknown message type 'exit_now'"):
        p.decode('{"type": "exit_now", "worker": 0}')
    with pytest.raises(ValueError):
        p.decode("not json")
    with pytest.raises(TypeError):
        p.decode('{"type": "exit", "worker": 0}')  # a field missing


def test_the_launcher_handles_every_message_in_one_table():
    assert set(_session._HANDLERS) == set(p.MESSAGES.values())


def test_the_launch_spec_and_its_fault_round_trip(tmp_path):
    spec = p.LaunchSpec(
        num_workers=3,
        network="shared",
        host="127.0.0.1",
        run_dir=str(tmp_path),
        cwd="/",
        seed=7,
        collective_timeout=5.0,
        grace_seconds=1.5,
        env={"A": "1"},
        absent=(2,),
        fault=mk.KillWorker(worker=1, at_step=4),
        logical_devices=2,
    )
    spec.write()
    again = p.LaunchSpec.read(tmp_path)
    assert again == spec
    assert again.fault_for(1) == mk.KillWorker(1, at_step=4)
    assert again.fault_for(0) is None and again.fault_for(2) is None


def test_events_cross_a_real_pipe_stamped_with_the_sender():
    read_fd, write_fd = os.pipe()
    channel = p.EventChannel(write_fd)
    channel.send(mk.WorkerEvent(0, "ready", devices=("/job:worker/task:1/device:CPU:0",)))
    channel.send(mk.WorkerEvent(0, "step", step=2, metrics={"loss": 1.5}))
    channel._stream.close()
    with os.fdopen(read_fd, "rb") as stream:
        events = list(p.read_events(stream, worker=1))
    assert [(e.worker, e.kind, e.step) for e in events] == [(1, "ready", None), (1, "step", 2)]
    assert events[0].devices == ("/job:worker/task:1/device:CPU:0",)
    assert events[1].metrics == {"loss": 1.5}


def test_the_channel_comes_from_the_environment_once(monkeypatch):
    read_fd, write_fd = os.pipe()
    monkeypatch.setenv(p.EVENT_FD, str(write_fd))
    channel = p.EventChannel.from_environment()
    assert p.EVENT_FD not in os.environ  # the training code cannot reuse the descriptor
    channel.send(mk.WorkerEvent(0, "finished"))
    channel._stream.close()
    with os.fdopen(read_fd, "rb") as stream:
        assert [e.kind for e in p.read_events(stream, worker=0)] == ["finished"]


def test_environment_variable_names_are_written_only_in_the_protocol():
    written = [
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in PACKAGE.rglob("*.py")
        if path.name != "protocol.py"
        for name in re.findall(r"MIRRORKIT_[A-Z_]+", path.read_text())
    ]
    assert written == []
