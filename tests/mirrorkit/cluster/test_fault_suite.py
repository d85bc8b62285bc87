"""The fault suite: each class of fault, injected with real processes, names its culprit.

Which worker misbehaves and at which step are drawn from a seed (``MIRRORKIT_FAULT_SEED``,
0 by default: set it to try other draws). docs/faults.md tables what each fault gives.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import mirrorkit as mk
from mirrorkit.cluster import _lease, _output, _results, _warm
from tests.mirrorkit.cluster.faults import (
    busy,
    faulty,
    foreign_lease,
    schedule_steps,
    unsendable,
)

SEED = int(os.environ.get("MIRRORKIT_FAULT_SEED", "0"))


def draw(fault: str, workers: int = 2, last_step: int = 6) -> tuple[int, int]:
    """(culprit, step) for ``fault``, from the seed."""
    rng = random.Random(f"{SEED}-{fault}")
    return rng.randrange(workers), rng.randint(2, last_step)


def run_with(fault: str, **options):
    culprit, step = draw(fault)
    cluster = mk.LocalCluster(2, echo=False, **options.pop("cluster", {}))
    kwargs = {"fault": fault, "culprit": culprit, "at_step": step}
    return culprit, step, lambda **more: cluster.run(faulty, kwargs=kwargs, **options, **more)


@pytest.mark.parametrize(
    ("fault", "says"),
    [
        ("killed", "failed: killed by SIGKILL after step {last}; "),
        (
            "quiet exit",
            "failed: it ended with exit status 0 before it finished, reporting no error after "
            "step {last}; ",
        ),
        ("error", "failed: ValueError: worker {culprit} cannot go on at step {step}"),
    ],
)
def test_a_worker_that_leaves_is_named_with_how_it_ended(no_orphans, fault, says):
    culprit, step, run = run_with(fault)
    with pytest.raises(mk.WorkerFailedError) as error:
        if fault == "killed":  # the launcher's own fault injection: SIGKILL after a step
            run(fault=mk.KillWorker(worker=culprit, at_step=step - 1))
        else:
            run()
    message = str(error.value)
    seed = f"seed {SEED}: worker {culprit} at step {step}"
    assert error.value.worker == culprit, f"{seed}: {message}"
    assert message.startswith(f"worker {culprit} ") or f"worker {culprit} failed" in message
    assert says.format(culprit=culprit, step=step, last=step - 1) in message, f"{seed}: {message}"


def test_a_worker_that_never_reaches_an_all_reduce_is_named_not_its_waiting_peer(no_orphans):
    culprit, step, run = run_with("late", cluster={"collective_timeout": 5})
    with pytest.raises(mk.WorkerFailedError) as error:
        run()
    message, other = str(error.value), 1 - culprit
    seed = f"seed {SEED}: worker {culprit} at step {step}"
    assert error.value.worker == culprit, f"{seed}: {message}"
    assert message.startswith(
        f"worker {culprit} has not reached step {step}'s collectives (finished step {step - 1} "
    ), f"{seed}: {message}"
    assert "`time.sleep(600)`" in message
    assert f"; worker {other} waits in them (now at faults.py:" in message
    assert f"Then worker {other} failed: DeadlineExceededError" in message


def test_a_timeout_says_who_waited_for_whom(no_orphans):
    culprit, step, run = run_with("late")
    looked_away = []

    def owner_busy(event):  # the owner looks away from the launch to past the bound
        if not looked_away:
            looked_away.append(event)
            time.sleep(max(0.0, 31.0 - event.time))

    with pytest.raises(mk.ClusterTimeoutError) as error:
        # The bound counts from the launch: a loaded machine (CI's python3.13 shard) once
        # took 10 s to reach step 1. The late worker sleeps 600 s, so waiting costs no CPU.
        run(timeout=30, on_event=owner_busy)
    message, other = str(error.value), 1 - culprit
    # The steps as they are, though the owner read none of them before the bound ran out.
    reached = {culprit: step - 1, other: step - 1}
    assert f"Steps reached: worker 0: {reached[0]}, worker 1: {reached[1]}." in message, message
    assert f"Who waited for whom: worker {culprit} has not reached step {step}'s" in message
    assert f"worker {other} waits in them" in message


def test_a_killed_parameter_server_is_named_as_such(no_orphans):
    rng = random.Random(f"{SEED}-ps")
    at_step = rng.randint(2, 6)
    pids: dict[int, int] = {}

    def kill_the_server(event):
        if event.kind == "starting":
            pids[event.worker] = event.pid
        if event.kind == "step" and event.step == at_step:
            os.kill(pids[3], signal.SIGKILL)  # ps 0: chief, worker 0, worker 1, then ps 0

    with pytest.raises(mk.WorkerFailedError) as error:
        mk.LocalCluster(2, num_ps=1, echo=False).run(
            schedule_steps,
            kwargs={"steps": 40, "join_every": 1, "pause": 0.2},
            on_event=kill_the_server,
            timeout=240,
        )
    message = str(error.value)
    assert error.value.worker == 3, message
    assert message.startswith("ps 0 at 127.0.0.1:"), message
    assert "ended first (killed by SIGKILL" in message
    assert "a parameter server: no step runs without the variables it holds); then chief" in (
        message
    )


# -- third round (issue 49): one run shared by the cases below -----------------------------


@pytest.fixture(scope="module")
def late_owner(tmp_path_factory):
    """A run whose owner looks away (busy in on_event) until its workers have finished and its
    ``timeout`` has passed. Each worker prints 1000 lines (kept: 50, echo: 10 at once, then 5 a
    second: the bounds scaled down), asks for a folder a live process of another run holds,
    writes a folder of its own, and returns tensors.
    """
    folder = tmp_path_factory.mktemp("late-owner")
    held, own, done = folder / "held", str(folder / "own"), folder / "done"
    done.mkdir()
    holder = subprocess.Popen(["sleep", "300"])
    foreign_lease(held, holder.pid)
    timeout = 5.0

    def look_away(event):
        if done.exists():
            deadline = time.monotonic() + 120.0
            while len(os.listdir(done)) < 2 and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(max(0.0, timeout + 1.0 - event.time))
            done.rename(folder / "looked")  # once

    if _warm.current_pid() is None:  # the bound counts from the launch: import before it
        mk.LocalCluster(1, echo=False).run(faulty, args=("none", 1, 0, 1))
    echo = io.StringIO()
    try:
        with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(echo):
            patch.setattr(_output, "KEEP_LINES", 50)
            patch.setattr(_output, "ECHO_BURST", 10)
            patch.setattr(_output, "ECHO_PER_SECOND", 5.0)
            started = time.monotonic()
            run = mk.LocalCluster(2, echo=True).run(
                busy,
                args=([str(held)], own, str(done)),
                timeout=timeout,
                on_event=look_away,
            )
            took = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
    return {
        "run": run,
        "echo": echo.getvalue(),
        "took": took,
        "held": held,
        "own": own,
        "holder": holder.pid,
        "timeout": timeout,
    }


def test_a_run_whose_workers_finished_returns_their_results_though_the_owner_was_late(
    late_owner,
):
    run = late_owner["run"]
    assert late_owner["took"] > late_owner["timeout"]  # the bound had passed when it looked
    assert [w.state for w in run.status.workers] == ["finished", "finished"]
    assert [w.step for w in run.status.workers] == [6, 6]
    assert [r["own"] for r in run.results] == [late_owner["own"], late_owner["own"] + "/.worker-1"]


def test_tensors_and_variables_come_back_as_numpy_arrays(late_owner):
    result = late_owner["run"].result
    assert isinstance(result["variable"], np.ndarray) and result["variable"].tolist() == [1, 2]
    assert type(result["tensor"]).__module__ == "numpy" and int(result["tensor"]) == 3
    assert isinstance(result["nested"][0], np.ndarray)
    assert type(result["nested"][1]["deeper"][0]).__module__ == "numpy"


def test_a_flood_of_output_keeps_the_last_lines_the_count_and_the_full_log(late_owner):
    run, echo = late_owner["run"], late_owner["echo"]
    for worker in (0, 1):
        kept, log = run.output[worker], Path(run.logs[worker])
        everything = log.read_text().splitlines()
        assert f"line 0 of worker {worker}" in everything
        assert f"line 999 of worker {worker}" in everything
        assert len(kept) == 50 and kept == everything[-50:]
        assert run.output_dropped[worker] == len(everything) - 50 >= 950
        assert (
            f"[worker {worker}] ... " in echo
            and f"lines not shown: it printed faster than 5 lines a second (every line is in {log})"
            in echo
        )
        echoed = echo.count(f" of worker {worker}\n")
        assert 10 <= echoed < 10 + 5 * (late_owner["took"] + 1), echoed
    outputs = [e for e in run.events if e.kind == "output"]
    assert len(outputs) < 2 * (10 + 5 * (late_owner["took"] + 1))  # events bounded as the echo


def test_a_folder_another_run_writes_is_refused_naming_that_run(late_owner):
    held, holder = late_owner["held"], late_owner["holder"]
    for result in late_owner["run"].results:  # each worker, in the run
        refused = result["refused"]
        assert refused.startswith(
            f"the folder {held} is being written by another run: process {holder} (sleep 300) "
            f"on host {socket.gethostname()}, since "
        ), refused
        assert "overwrite each other's files" in refused
        assert f"give this run a folder of its own, e.g. {held}-2" in refused
    # The run's own folder: its two workers are one writer, and the lease ended with the run.
    assert not (Path(late_owner["own"]) / _lease.LEASE_FILE).exists()


def test_a_held_folder_in_the_arguments_is_refused_before_any_process_starts(tmp_path):
    holder = subprocess.Popen(["sleep", "300"])
    try:
        foreign_lease(tmp_path / "ckpt", holder.pid)
        with pytest.raises(_lease.FolderInUseError) as refused:
            mk.LocalCluster(2).run(busy, args=([], str(tmp_path / "ckpt"), str(tmp_path)))
    finally:
        holder.kill()
        holder.wait()
    assert str(refused.value).startswith(
        f"this run was not started: the folder {tmp_path / 'ckpt'} is being written by "
        f"another run: process {holder.pid} (sleep 300) on host {socket.gethostname()}, since "
    )


def test_one_backup_folder_for_every_worker_names_the_fix(late_owner):
    hint = late_owner["run"].result["backup_hint"]
    assert hint.startswith(
        "every worker runs keras.callbacks.BackupAndRestore on the same folder, so they write "
        'the same files. Give each its own: BackupAndRestore(f"{backup_dir}/worker-'
        '{context.task_id}")'
    ), hint
    assert "context.write_dir(backup_dir)" in hint


def test_a_result_that_cannot_cross_says_what_can(no_orphans):
    with pytest.raises(mk.WorkerFailedError) as error:
        mk.LocalCluster(2, echo=False).run(unsendable, keep_tensors=True)
    message = str(error.value)
    assert (
        f"worker {error.value.worker} failed: TypeError: the result cannot be sent back to the "
        "notebook: the result['weights'] is a MirroredVariable ("
    ) in message, message
    assert "Return plain values (numbers, strings, lists, dicts) and NumPy arrays: " in message
    assert "tensor.numpy()" in message


@pytest.mark.parametrize(
    ("result", "where", "kind"),
    [
        ({"losses": (loss for loss in [0.5])}, "the result['losses']", "generator"),
        ([1, {"lock": threading.Lock()}], "the result[1]['lock']", "lock"),
    ],
)
def test_each_result_that_cannot_cross_is_named_by_its_place(result, where, kind):
    with pytest.raises(TypeError) as refused:
        _results.dump(result, keep_tensors=False)
    assert str(refused.value).startswith(
        f"the result cannot be sent back to the notebook: {where} is a {kind} ("
    )
    assert str(refused.value).endswith(
        "Return plain values (numbers, strings, lists, dicts) and NumPy arrays: tensor.numpy(), "
        "model.get_weights(), float(loss); save bigger things to a file and return its path."
    )
