"""The worker side: the context, and `python -m mirrorkit.worker` as a real cluster runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import mirrorkit as mk
from mirrorkit.cluster import _procs
from tests.conftest import ROOT

TRAIN = textwrap.dedent(
    """
    import json, sys
    import tensorflow as tf

    def train(context):
        value = context.strategy.run(lambda: tf.constant(float(context.task_id + 1)))
        total = float(context.strategy.reduce("SUM", value, axis=None))
        print(json.dumps({"task": context.task_id, "chief": context.is_chief, "total": total,
                          "workers": context.num_workers}))
    """
)


def run_workers(tmp_path, envs, args):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    base = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "mirrorkit.worker", f"{script}:train", *args],
            env={**base, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        for env in envs
    ]
    try:
        outputs = [w.communicate(timeout=120) for w in workers]
    finally:
        for w in workers:
            w.kill()
    return [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]


def test_worker_cli_runs_a_function_from_tf_config(tmp_path):
    addresses = [f"127.0.0.1:{p}" for p in _procs.free_ports(2)]
    envs = [
        {
            "TF_CONFIG": json.dumps(
                {"cluster": {"worker": addresses}, "task": {"type": "worker", "index": i}}
            )
        }
        for i in range(2)
    ]
    results = run_workers(tmp_path, envs, [])
    assert [r["task"] for r in results] == [0, 1]
    assert [r["chief"] for r in results] == [True, False]
    assert all(r["total"] == 3.0 and r["workers"] == 2 for r in results)


def test_worker_cli_runs_under_slurm_variables(tmp_path):
    # Two tasks of one job step on one node, as `srun --ntasks=2` sets them; the
    # ports are consecutive from --port, as mirrorkit.cluster.scaleout.slurm_script expects.
    port = _procs.free_ports(1)[0]
    while set(_procs.free_ports(1)) & {port + 1}:  # pragma: no cover - rare
        port = _procs.free_ports(1)[0]
    slurm = {
        "SLURM_STEP_NODELIST": "localhost",
        "SLURM_STEP_TASKS_PER_NODE": "2",
        "SLURM_STEP_NUM_TASKS": "2",
    }
    envs = [{**slurm, "SLURM_PROCID": str(i)} for i in range(2)]
    results = run_workers(tmp_path, envs, ["--resolver", "slurm", "--port", str(port)])
    assert [r["task"] for r in results] == [0, 1]
    assert all(r["total"] == 3.0 for r in results)


def test_context_outside_a_worker_explains_itself(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError, match="TF_CONFIG is not set"):
        mk.WorkerContext.from_environment()
    with pytest.raises(RuntimeError, match="not on a worker"):
        mk.current_context()


def test_write_dir_keeps_the_chiefs_copy(tmp_path):
    def context(task_type, task_id, cluster):
        return mk.WorkerContext(
            None,
            task_type=task_type,
            task_id=task_id,
            num_workers=2,
            tf_config={"cluster": cluster},
        )

    workers = {"worker": ["a:1", "b:1"]}
    assert context("worker", 0, workers).write_dir(tmp_path) == str(tmp_path)
    assert context("worker", 1, workers).write_dir(tmp_path) == str(tmp_path / ".worker-1")
    with_chief = {"chief": ["c:1"], "worker": ["a:1"]}
    assert context("chief", 0, with_chief).is_chief
    assert not context("worker", 0, with_chief).is_chief


def test_a_failure_summary_has_no_colour_codes_nor_keras_argument_lists():
    from mirrorkit.cluster._worker_main import _one_line

    keras_error = ValueError(
        '\x1b[1mInput 0 of layer "dense" is incompatible\x1b[0m: expected axis -1 to have '
        "value 4\n\nArguments received by Dense.call():\n  \u2022 inputs=tf.Tensor(shape=(2, 3))"
        "\n  \u2022 kwargs=<class 'inspect._empty'>"
    )
    assert _one_line(keras_error) == (
        'ValueError: Input 0 of layer "dense" is incompatible: expected axis -1 to have value 4'
    )
    assert _one_line(RuntimeError("first\nmiddle\nlast")) == "RuntimeError: first ... last"
