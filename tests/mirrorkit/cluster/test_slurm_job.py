"""`slurm_script`'s job, submitted unchanged to a real Slurm of two nodes on this machine.

Debian's slurmctld and slurmd, one node per virtual host (`tests/slurm_cluster.py`): the
workers find each other through Slurm's own variables, across two network stacks.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import mirrorkit as mk
from mirrorkit.cluster.scaleout import slurm_script
from mirrorkit.training.recipes import checkpointed_training
from tests import slurm_cluster
from tests.conftest import ROOT

pytestmark = pytest.mark.slurm

JOB_BOUND = 180.0  # seconds for a whole job, queue to end (one took about 25 s here)
SCANCEL_BOUND = 10.0  # seconds from scancel until no worker of the job is left, anywhere

TRAIN = textwrap.dedent(
    """
    import json
    import numpy as np
    import tensorflow as tf

    from mirrorkit.training.recipes import checkpointed_training

    def train(context):
        result = checkpointed_training(context, {checkpoints!r})
        # TensorFlow's resolver cannot describe a node without GPUs: by default it runs
        # nvidia-smi (absent here), and gpus_per_node=0 fails in range(); one "GPU" per node
        # and auto_set_gpu=False make it list the cluster without touching any device.
        resolver = tf.distribute.cluster_resolver.SlurmClusterResolver(
            port_base=12345, gpus_per_node=1, auto_set_gpu=False
        )
        np.savez({folder!r} + f"/weights-{{context.task_id}}.npz", *result["weights"])
        record = {{
            "losses": {{str(step): loss for step, loss in result["losses"].items()}},
            "tf_config": context.tf_config,
            "tensorflow": [resolver.cluster_spec().as_dict(), resolver.task_id],
        }}
        with open({folder!r} + f"/result-{{context.task_id}}.json", "w") as out:
            json.dump(record, out)
    """
)

SLOW = textwrap.dedent(
    """
    import time

    def train(context):
        for step in range(1, 100000):
            context.strategy.reduce("SUM", context.strategy.run(lambda: 1.0), axis=None)
            context.report(step)
            print("step", step, flush=True)
            time.sleep(0.2)
    """
)


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    problem = slurm_cluster.missing()
    if problem:
        pytest.fail(f"a real Slurm cannot run here: {problem} (or deselect: -m 'not slurm')")
    folder = tmp_path_factory.mktemp("slurm")
    with slurm_cluster.SlurmCluster(folder, nodes=2, hide=str(folder / "node1-only")) as cluster:
        yield cluster


def submit(slurm, folder, script_text):
    """Submit ``script_text`` from ``folder``; the job's id."""
    (folder / "job.sbatch").write_text(script_text)
    env = {**slurm.env, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}
    output = f"--output={folder / 'job.out'}"
    return slurm.command("sbatch", "--parsable", output, "job.sbatch", cwd=folder, env=env)


def wait_for_end(slurm, job):
    """The job's final state and exit code, as Slurm's controller records them."""
    deadline = time.monotonic() + JOB_BOUND
    while slurm.command("squeue", "--noheader", f"--jobs={job}"):
        assert time.monotonic() < deadline, f"job {job} still queued or running"
        time.sleep(0.5)
    fields = dict(
        item.split("=", 1) for item in slurm.command("scontrol", "show", "job", job).split()
        if "=" in item
    )  # fmt: skip
    return fields["JobState"], fields["ExitCode"]


def test_the_script_trains_chapter_6s_function_as_the_local_cluster_does(slurm, tmp_path):
    train = tmp_path / "train.py"
    train.write_text(TRAIN.format(checkpoints=str(tmp_path / "ckpt"), folder=str(tmp_path)))
    script = slurm_script(f"{train}:train", nodes=2, python=sys.executable, time="5")
    job = submit(slurm, tmp_path, script)
    assert wait_for_end(slurm, job) == ("COMPLETED", "0:0"), (tmp_path / "job.out").read_text()

    local = mk.LocalCluster(2, seed=0, echo=False).run(
        checkpointed_training, args=(str(tmp_path / "local"),)
    )
    for task in (0, 1):
        record = json.loads((tmp_path / f"result-{task}.json").read_text())
        assert record["tf_config"]["cluster"]["worker"] == ["node1:12345", "node2:12345"]
        assert record["tf_config"]["task"] == {"type": "worker", "index": task}
        # TensorFlow's own resolver, in the same job step, agrees (names of one length).
        assert record["tensorflow"] == [{"worker": ["node1:12345", "node2:12345"]}, task]
        losses = {int(step): loss for step, loss in record["losses"].items()}
        assert losses == local.results[task]["losses"]
        with np.load(tmp_path / f"weights-{task}.npz") as saved:
            weights = [saved[f"arr_{k}"] for k in range(len(saved.files))]
        expected = local.results[task]["weights"]
        assert [w.tobytes() for w in weights] == [np.asarray(w).tobytes() for w in expected]
    # The chief's checkpoints only: the other worker wrote to a folder of its own.
    assert sorted(p.name for p in (tmp_path / "ckpt").glob("ckpt-*.index")) == [
        "ckpt-12.index",
        "ckpt-4.index",
        "ckpt-8.index",
    ]


def test_scancel_ends_every_worker_on_every_node(slurm, tmp_path):
    train = tmp_path / "slow_train.py"
    train.write_text(SLOW)
    job = submit(slurm, tmp_path, slurm_script(f"{train}:train", nodes=2, python=sys.executable))
    out = tmp_path / "job.out"
    deadline = time.monotonic() + JOB_BOUND
    while out.read_text().count("step 3\n") < 2 if out.exists() else True:
        assert time.monotonic() < deadline, "the two workers did not train"
        time.sleep(0.2)
    workers = slurm_cluster.processes(f"{train}:train")
    assert len(workers) >= 2, workers  # each node's worker (and its child)

    slurm.command("scancel", job)
    cancelled = time.monotonic()
    while slurm_cluster.processes(f"{train}:train"):
        assert time.monotonic() - cancelled < SCANCEL_BOUND, slurm_cluster.processes(
            f"{train}:train"
        )
        time.sleep(0.1)
    print(f"no worker left {time.monotonic() - cancelled:.2f} s after scancel")  # -s shows it
    assert wait_for_end(slurm, job)[0] == "CANCELLED"


def test_a_worker_that_cannot_start_is_named_in_the_jobs_output(slurm):
    # train.py sits in a folder that node2 does not share: its worker cannot start there.
    folder = Path(slurm.hide)
    (folder / "train.py").write_text(SLOW)
    script = slurm_script(
        f"{folder / 'train.py'}:train", nodes=2, python=sys.executable, join_timeout=8
    )
    state, code = wait_for_end(slurm, submit(slurm, folder, script))
    output = (folder / "job.out").read_text()
    assert (state, code) == ("FAILED", "2:0"), output
    assert "the cluster did not form within 8 s (worker 0 of 2 waited for its peers)" in output
    assert "worker 1 at node2:12345: not listening (connection refused)" in output
    assert "Waiting for: worker 1." in output
    # ...and the worker that never started says why, on the node it could not start on.
    assert "names no file: check the name, or give the script's full path." in output
    assert "Every node must see the script at this path" in output
    assert "this node is node2." in output
    assert "Traceback" not in output


OWNER = textwrap.dedent(
    """
    import sys, time
    from tests.slurm_cluster import SlurmCluster

    SlurmCluster(sys.argv[1], nodes=2).start()
    print("up", flush=True)
    time.sleep(600)
    """
)


def test_nothing_of_the_slurm_outlives_its_owner_even_after_kill_9(tmp_path):
    # The test's own Slurm ends with the test: its controller, nodes, munge and every job's
    # processes are in one PID namespace, whose first process dies with the owner.
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(tmp_path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout.readline() == "up\n"
        running = slurm_cluster.processes(str(tmp_path))
        daemons = sorted(line.split()[1] for line in running)
        assert daemons.count("slurmd") == 2 and {"munged", "slurmctld"} < set(daemons), running
        owner.kill()
        owner.wait()
        killed = time.monotonic()
        while slurm_cluster.processes(str(tmp_path)):
            assert time.monotonic() - killed < 10, slurm_cluster.processes(str(tmp_path))
            time.sleep(0.1)
    finally:
        owner.kill()
