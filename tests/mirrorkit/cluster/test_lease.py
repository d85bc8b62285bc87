"""One writer per checkpoint folder: the lease, taken, refused, taken over, across namespaces.

The holders are real processes (``sleep``, a Python process in a pid namespace of its own);
the runs of the cluster cases are in test_fault_suite.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from mirrorkit.cluster import _lease
from tests.mirrorkit.cluster.faults import foreign_lease
from tests.mirrorkit.cluster.worker_command import start_alone

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def sleeper():
    process = subprocess.Popen(["sleep", "300"])
    yield process
    process.kill()
    process.wait()


def lease_of(folder) -> dict:
    return json.loads((Path(folder) / _lease.LEASE_FILE).read_text())


def test_a_live_holder_on_this_machine_is_named_and_kept(tmp_path, sleeper):
    foreign_lease(tmp_path, sleeper.pid)
    with pytest.raises(_lease.FolderInUseError) as refused:
        _lease.take(tmp_path)
    message = str(refused.value)
    assert message.startswith(
        f"the folder {tmp_path} is being written by another run: process {sleeper.pid} "
        f"(sleep 300) on host {socket.gethostname()}, since "
    )
    assert " UTC (last heartbeat 0 s ago). Two runs writing one checkpoint folder " in message
    assert (
        "Wait for that run to end (or stop it), or give this run a folder of its own, e.g. "
        f"{tmp_path}-2." in message
    )
    assert lease_of(tmp_path)["pid"] == sleeper.pid  # still theirs


def test_a_dead_holder_on_this_machine_is_taken_over_with_a_warning(tmp_path, sleeper):
    foreign_lease(tmp_path, sleeper.pid)
    sleeper.kill()
    sleeper.wait()
    with pytest.warns(_lease.FolderTakenOverWarning) as warned:
        _lease.take(tmp_path)
    message = str(warned[0].message)
    assert message.startswith(f"the folder {tmp_path} was held by a run that is gone (process ")
    assert (
        f"its process {sleeper.pid} on this machine has ended); this run takes it over." in message
    )
    assert lease_of(tmp_path)["pid"] == os.getpid()


@pytest.mark.parametrize(
    ("heartbeat_age", "taken"), [(120, True), (5, False)], ids=["silent 120 s", "heartbeat 5 s ago"]
)
def test_a_holder_on_another_host_is_judged_by_its_heartbeat(tmp_path, heartbeat_age, taken):
    lease = foreign_lease(tmp_path, 999_999_999)
    lease["host"], lease["boot"] = "other-node", "another-boot"
    path = tmp_path / _lease.LEASE_FILE
    path.write_text(json.dumps(lease))
    then = time.time() - heartbeat_age
    os.utime(path, (then, then))
    if taken:
        with pytest.warns(_lease.FolderTakenOverWarning, match="its last heartbeat was 120 s ago"):
            _lease.take(tmp_path)
    else:
        with pytest.raises(
            _lease.FolderInUseError, match="on host other-node, since .*heartbeat 5 s ago"
        ):
            _lease.take(tmp_path)


def test_a_holder_in_another_pid_namespace_is_not_taken_for_dead(tmp_path):
    # A Python process in a pid namespace of its own (as the grader runs clusters) takes the
    # lease: its pid means nothing here, so only its heartbeat counts.
    code = (
        "import sys, time; from mirrorkit.cluster import _lease; "
        "lease = _lease.take(sys.argv[1]); print(lease['pid'], lease['pidns'], flush=True); "
        "time.sleep(300)"
    )
    inside = subprocess.Popen(
        [
            "unshare",
            "-p",
            "-f",
            "--mount-proc",
            "--kill-child",
            sys.executable,
            "-c",
            code,
            str(tmp_path),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        pid, namespace = inside.stdout.readline().split()
        assert namespace != os.readlink("/proc/self/ns/pid") and int(pid) < 10
        with pytest.raises(_lease.FolderInUseError, match=f"process {pid} .* on host "):
            _lease.take(tmp_path)
    finally:
        inside.kill()
        inside.wait()


def test_a_runs_workers_are_one_writer_and_the_owner_frees_the_lease(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    monkeypatch.setenv(_lease.OWNER_VARIABLE, json.dumps(_lease.identity()))
    monkeypatch.setenv("MIRRORKIT_RUN", str(run_dir))
    folder = tmp_path / "ckpt"
    folder.mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no takeover between the workers of one run
        first = _lease.take(folder)  # the chief
        second = _lease.take(folder)  # worker 1, for its .worker-1 copy
    assert first == second and first["run"] == str(run_dir)
    unfinished = folder / ".worker-1" / "ckpt-3_temp"
    unfinished.mkdir(parents=True)
    (unfinished / "part-00000-of-00001.index").write_bytes(b"")
    assert _lease.release_run(run_dir) == [str(folder.resolve() / _lease.LEASE_FILE)]
    assert not (folder / _lease.LEASE_FILE).exists() and not unfinished.exists()
    assert sorted(p.name for p in folder.iterdir()) == [".worker-1"]  # no lock file left


def test_the_heartbeat_renews_what_is_held_and_lets_go_of_what_was_taken_over(tmp_path, sleeper):
    kept, lost = tmp_path / "kept", tmp_path / "lost"
    for folder in (kept, lost):
        folder.mkdir()
        _lease.take(folder)
        then = time.time() - 50
        os.utime(folder / _lease.LEASE_FILE, (then, then))
    foreign_lease(lost, sleeper.pid)  # another run took it over meanwhile

    held = _lease.beat_once()

    assert kept in held and lost not in held
    assert time.time() - (kept / _lease.LEASE_FILE).stat().st_mtime < 10  # renewed
    assert lease_of(lost)["pid"] == sleeper.pid  # left to its new holder


def test_the_errors_are_public_and_the_old_import_path_still_works(tmp_path):
    import mirrorkit as mk

    assert mk.FolderInUseError is _lease.FolderInUseError
    assert mk.FolderTakenOverWarning is _lease.FolderTakenOverWarning
    _lease.take(tmp_path)  # this process's run holds it: its own reads and writes pass
    assert mk.FolderInUseError.check(tmp_path, reading=True) is None


def test_the_chief_names_itself_in_a_lease_another_worker_of_its_run_took(tmp_path, monkeypatch):
    # Two workers of one `python -m mirrorkit.worker` job (one TF_CONFIG cluster): worker 1
    # asks first; the chief's end, not worker 1's, must be what gives the folder back.
    config = {"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}}
    code = "import sys; from mirrorkit.cluster import _lease; _lease.take(sys.argv[1], chief=False)"
    env = {**os.environ, "TF_CONFIG": json.dumps({**config, "task": {"index": 1}})}
    env.pop(_lease.OWNER_VARIABLE, None)
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, env=env, check=True)
    first = lease_of(tmp_path)
    monkeypatch.delenv(_lease.OWNER_VARIABLE, raising=False)
    monkeypatch.setenv("TF_CONFIG", json.dumps({**config, "task": {"index": 0}}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one run: no takeover, though worker 1 has ended
        _lease.take(tmp_path)
    now = lease_of(tmp_path)
    assert now["pid"] == os.getpid() != first["pid"]
    assert (now["since"], now["run"]) == (first["since"], first["run"])


HOLDER = (
    "import sys, time; from mirrorkit.cluster import _lease\n"
    "with _lease.listed_in(sys.argv[2]):\n"
    "    _lease.take(sys.argv[1])\n"
    "print('held', flush=True)\n"
    "if sys.argv[3] == 'stay':\n"
    "    time.sleep(300)\n"
)


@pytest.mark.parametrize("end", ["worker ended", "parent's error"])
def test_the_worker_commands_parent_frees_its_workers_leases_however_it_ends(tmp_path, end):
    # The construct the worker command's parent runs in (_lease.freed_after), with a real
    # child holding a lease; SIGTERM, through the real command, is the next test.
    folder, other = tmp_path / "ckpt", tmp_path / "taken-over"
    folder.mkdir()
    with contextlib.suppress(RuntimeError), _lease.freed_after() as leases:
        stay = "stay" if end == "parent's error" else "go"
        child = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(folder), leases["listing"], stay],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        leases["child"] = child
        assert child.stdout.readline() == "held\n"
        assert lease_of(folder)["pid"] == child.pid
        _lease._append(Path(leases["listing"]), other)  # listed, but no longer the child's
        foreign_lease(other, os.getpid())
        if end == "parent's error":
            raise RuntimeError("the parent's own error")
        child.wait()
    assert child.returncode == (0 if end == "worker ended" else -9)
    assert not (folder / _lease.LEASE_FILE).exists()
    assert lease_of(other)["pid"] == os.getpid()  # another holder's lease is left alone
    assert not Path(leases["listing"]).exists()


TRAIN = """
import time

def train(context):
    context.write_dir({folder!r})
    print("HOLDING", flush=True)
    if {end!r} == "raises":
        time.sleep(0.5)  # the test reads the lease first
        raise ValueError("the training function's own mistake")
    time.sleep(300)
"""


@pytest.mark.parametrize("end", ["raises"])
def test_the_worker_command_gives_its_lease_back_when_it_ends(tmp_path, end):
    # Through the real command: its TensorFlow child takes the lease at write_dir; the
    # training function fails (the child's end: the parent's ordinary return). A SIGTERM
    # and a normal end are tried by test_nothing_outlives.py's worker-command test.
    folder = tmp_path / "ckpt"
    (tmp_path / "train.py").write_text(TRAIN.format(folder=str(folder), end=end))
    worker = start_alone(tmp_path)
    try:
        assert worker.stdout.readline() == "HOLDING\n", worker.stderr.read()
        holder = lease_of(folder)
        assert holder["pid"] != worker.pid  # the lease names the TensorFlow child
        assert holder["run"].startswith("cluster ")
        if end == "SIGTERM":
            worker.send_signal(signal.SIGTERM)
        _, stderr = worker.communicate(timeout=60)
    finally:
        worker.kill()
        worker.wait()
    if end == "SIGTERM":
        assert worker.returncode == 128 + signal.SIGTERM, stderr
    else:
        assert worker.returncode == 1 and "the training function's own mistake" in stderr
    assert not (folder / _lease.LEASE_FILE).exists(), stderr
