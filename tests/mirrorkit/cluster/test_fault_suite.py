"""The fault suite: each class of fault, injected with real processes, names its culprit.

Which worker misbehaves and at which step are drawn from a seed (``MIRRORKIT_FAULT_SEED``,
0 by default: set it to try other draws). docs/faults.md tables what each fault gives.
"""

from __future__ import annotations

import os
import random
import signal

import pytest

import mirrorkit as mk
from tests.mirrorkit.cluster.faults import faulty, schedule_steps

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
    with pytest.raises(mk.ClusterTimeoutError) as error:
        # The bound counts from the launch: a loaded machine (CI's python3.13 shard) once
        # took 10 s to reach step 1. The late worker sleeps 600 s, so waiting costs no CPU.
        run(timeout=30)
    message, other = str(error.value), 1 - culprit
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
