"""mirrorkit.cluster.scaleout: TF_CONFIG and Slurm configuration, checked against
TensorFlow's own cluster resolvers and a real shell (Kubernetes: test_kubernetes_manifest.py)."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess

import pytest
import tensorflow as tf

from mirrorkit.cluster.scaleout import (
    DEFAULT_PORT,
    kubernetes_manifest,
    slurm_script,
    slurm_tf_config,
    tf_config,
    tf_config_env,
    tf_configs,
)

SLURM_VARS = (
    "SLURM_PROCID",
    "SLURM_STEP_NUM_TASKS",
    "SLURM_STEP_NODELIST",
    "SLURM_STEP_TASKS_PER_NODE",
)


# --- TF_CONFIG ---------------------------------------------------------------------------


def test_tf_config_fills_default_and_given_ports():
    config = tf_config(["node1", "node2:2222", "10.0.0.3", "[fd00::4]:7"], 2)
    assert config == {
        "cluster": {"worker": ["node1:12345", "node2:2222", "10.0.0.3:12345", "[fd00::4]:7"]},
        "task": {"type": "worker", "index": 2},
    }
    assert tf_config(["a", "b"], 0, port=4000)["cluster"]["worker"] == ["a:4000", "b:4000"]
    assert DEFAULT_PORT == 12345


def test_tf_configs_is_one_tf_config_per_host():
    hosts = ["node1", "node2", "node3:999"]
    configs = tf_configs(hosts, port=2000)
    assert configs == [tf_config(hosts, i, port=2000) for i in range(3)]
    assert [c["task"]["index"] for c in configs] == [0, 1, 2]
    assert all(c["cluster"] == configs[0]["cluster"] for c in configs)


def test_tf_config_env_is_compact_json_of_tf_config():
    text = tf_config_env(["node1", "node2"], 1, port=3000)
    assert " " not in text and "'" not in text  # safe inside '...' in a shell
    assert json.loads(text) == tf_config(["node1", "node2"], 1, port=3000)


@pytest.mark.parametrize("index", [0, 1, 2])
def test_tensorflow_reads_tf_config_env_as_written(monkeypatch, index):
    hosts = ["node1", "node2:2222", "node3"]
    monkeypatch.setenv("TF_CONFIG", tf_config_env(hosts, index, port=4444))
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    expected = tf_configs(hosts, port=4444)[index]
    assert resolver.cluster_spec().as_dict() == expected["cluster"]
    assert (resolver.task_type, resolver.task_id) == ("worker", index)


@pytest.mark.parametrize(
    ("hosts", "index", "kwargs", "match"),
    [
        ([], 0, {}, "hosts is empty"),
        ("node1,node2", 0, {}, r"split\(','\)"),
        (["node1", "node2", "node1"], 0, {}, "hosts 0 and 2 are both 'node1:12345'"),
        (["node1", "NODE1:12345"], 0, {}, "cannot share a port"),
        (["node1:5", "node1:5"], 0, {}, "'node1:5' and 'node1:6'"),
        (["node1", "node2"], 2, {}, "use 0 to 1"),
        (["node1", "node2"], -1, {}, "out of range"),
        (["node1"], True, {}, "index must be an int"),
        (["node1"], 0, {"port": 0}, "port must be an int from 1 to 65535"),
        (["node1"], 0, {"port": 70000}, "from 1 to 65535"),
        (["node1"], 0, {"port": "12345"}, "port must be an int"),
        (["node1:0"], 0, {}, "the port of host 'node1:0'"),
        (["node1:http"], 0, {}, "not a number"),
        (["node1:"], 0, {}, "no port"),
        (["no de"], 0, {}, "malformed host 'no de'"),
        (["-node"], 0, {}, "malformed host"),
        (["node..x"], 0, {}, "malformed host"),
        ([""], 0, {}, "malformed host"),
        (["http://node1"], 0, {}, "malformed host"),
        ([None], 0, {}, "must be a string"),
        (["fd00::1"], 0, {}, r"put it in brackets, e\.g\. '\[fd00::1\]'"),
        (["[not-ipv6]:1"], 0, {}, "write an IPv6 address"),
        (["node1"], 0, {"task_type": "Worker"}, "TensorFlow job name"),
        (["node1", "node2"], 0, {"task_type": "chief"}, "one chief"),
    ],
)
def test_tf_config_rejects_bad_input_saying_what_to_do(hosts, index, kwargs, match):
    with pytest.raises(ValueError, match=match):
        tf_config(hosts, index, **kwargs)


def test_tf_configs_validates_like_tf_config():
    with pytest.raises(ValueError, match="hosts is empty"):
        tf_configs([])
    with pytest.raises(ValueError, match="cannot share a port"):
        tf_configs(["a:1", "a:1"])


# --- Slurm -------------------------------------------------------------------------------


def _parse_sbatch(script: str) -> tuple[dict[str, str], list[str]]:
    """The #SBATCH options before the first command, and the srun command's words."""
    options: dict[str, str] = {}
    commands = []
    for line in script.splitlines():
        if line.startswith("#SBATCH "):
            assert not commands, "an #SBATCH line after a command is ignored by sbatch"
            key, _, value = line.removeprefix("#SBATCH ").partition("=")
            options[key] = value
        elif line.strip() and not line.startswith("#"):
            commands.append(line)
    srun = [shlex.split(c) for c in commands if c.startswith("srun ")]
    assert len(srun) == 1
    return options, srun[0]


def _flag(words: list[str], name: str) -> str:
    for i, word in enumerate(words):
        if word.startswith(name + "="):
            return word.split("=", 1)[1]
        if word == name:
            return words[i + 1]
    raise AssertionError(f"{name} not in {words}")


def test_slurm_script_runs_one_worker_per_node():
    script = slurm_script(
        "jobs/my train.py:train",
        nodes=4,
        job_name="big-run",
        time="2-00:00:00",
        port=23456,
        python="/opt/venv/bin/python",
        extra_sbatch=["--partition=gpu", "#SBATCH --gres=gpu:4"],
    )
    assert script.startswith("#!/bin/bash\n")
    options, srun = _parse_sbatch(script)
    assert options == {
        "--job-name": "big-run",
        "--nodes": "4",
        "--ntasks-per-node": "1",
        "--time": "2-00:00:00",
        "--partition": "gpu",
        "--gres": "gpu:4",
    }
    assert _flag(srun, "--nodes") == "4" and _flag(srun, "--ntasks-per-node") == "1"
    start = srun.index("/opt/venv/bin/python")
    assert srun[start:] == [
        "/opt/venv/bin/python",
        "-m",
        "mirrorkit.worker",
        "jobs/my train.py:train",  # one word despite the space
        "--resolver",
        "slurm",
        "--port",
        "23456",
    ]
    assert "no authentication" in script and "never on the internet" in script


def test_slurm_script_is_valid_bash():
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    script = slurm_script("train.py:train", nodes=2, extra_sbatch="--account=ml")
    result = subprocess.run([bash, "-n"], input=script, text=True, capture_output=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"nodes": 0}, "nodes must be an int >= 1"),
        ({"nodes": 2, "time": "one hour"}, "Slurm time limit"),
        ({"nodes": 2, "job_name": "my job"}, "job_name may hold"),
        ({"nodes": 2, "port": 0}, "from 1 to 65535"),
        ({"nodes": 2, "python": "python\nrm -rf ~"}, "python must be a non-empty string"),
        ({"nodes": 2, "extra_sbatch": ["--nodes=8"]}, "use its argument nodes="),
        ({"nodes": 2, "extra_sbatch": ["-N8"]}, "use its argument nodes="),
        ({"nodes": 2, "extra_sbatch": ["--ntasks=8"]}, "one task per node"),
        ({"nodes": 2, "extra_sbatch": ["-t 10"]}, "use its argument time="),
        ({"nodes": 2, "extra_sbatch": ["partition=gpu"]}, "such as '--partition=gpu'"),
        ({"nodes": 2, "extra_sbatch": ["--x=1\necho hi"]}, "on one line"),
    ],
)
def test_slurm_script_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        slurm_script("train.py:train", **kwargs)


@pytest.mark.parametrize("target", ["train.py:", ":train", "train.py:2fast", "", 7])
def test_generators_reject_a_malformed_target(target):
    with pytest.raises(ValueError, match=r"path/to/train\.py:function"):
        slurm_script(target, nodes=2)
    with pytest.raises(ValueError, match=r"path/to/train\.py:function"):
        kubernetes_manifest("img", target, workers=2)


def test_generators_accept_a_script_path_alone():
    # python -m mirrorkit.worker also takes FILE alone and runs it as __main__.
    assert "mirrorkit.worker run.py --resolver slurm" in slurm_script("run.py", nodes=2)
    assert "mirrorkit.worker run.py\n" in kubernetes_manifest("img", "run.py", workers=2)


def _step_environment(monkeypatch, nodelist: str, tasks_per_node: str, tasks: int, rank: int):
    """The variables srun sets in task `rank` of a job step (those TF's resolver reads)."""
    env = {
        "SLURM_PROCID": str(rank),
        "SLURM_STEP_NUM_TASKS": str(tasks),
        "SLURM_STEP_NODELIST": nodelist,
        "SLURM_STEP_TASKS_PER_NODE": tasks_per_node,
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


def _tf_slurm_resolver(port: int, gpus_per_node: int = 1):
    # gpus_per_node given: without it TensorFlow runs nvidia-smi, absent on CPU machines.
    # auto_set_gpu=False: do not rewrite this test process's CUDA_VISIBLE_DEVICES.
    return tf.distribute.cluster_resolver.SlurmClusterResolver(
        port_base=port, gpus_per_node=gpus_per_node, auto_set_gpu=False
    )


@pytest.mark.parametrize("nodes", [2, 3])
def test_tf_slurm_resolver_agrees_with_tf_configs_in_the_generated_job(monkeypatch, nodes):
    script = slurm_script("train.py:train", nodes=nodes, port=23456)
    options, srun = _parse_sbatch(script)
    num_nodes = int(options["--nodes"])
    per_node = int(_flag(srun, "--ntasks-per-node"))
    port = int(_flag(srun, "--port"))
    assert (num_nodes, per_node, port) == (nodes, 1, 23456)

    hosts = [f"node{i}" for i in range(1, num_nodes + 1)]
    expected = tf_configs(hosts, port=port)
    for rank in range(num_nodes * per_node):
        env = _step_environment(
            monkeypatch,
            nodelist=f"node[1-{num_nodes}]",  # Slurm's compact form; no scontrol needed
            tasks_per_node=f"{per_node}(x{num_nodes})",
            tasks=num_nodes * per_node,
            rank=rank,
        )
        resolver = _tf_slurm_resolver(port)
        assert resolver.cluster_spec().as_dict() == expected[rank]["cluster"]
        assert resolver.get_task_info() == ("worker", expected[rank]["task"]["index"])
        assert resolver.master() == f"grpc://{hosts[rank]}:{port}"
        assert slurm_tf_config(env, port=port) == expected[rank]
        assert slurm_tf_config(port=port) == expected[rank]  # os.environ by default


def test_slurm_tf_config_agrees_with_tf_for_several_tasks_per_node(monkeypatch):
    for rank in range(4):
        env = _step_environment(monkeypatch, "gpu[01-02]", "2(x2)", tasks=4, rank=rank)
        resolver = _tf_slurm_resolver(port=5000, gpus_per_node=2)
        ours = slurm_tf_config(env, port=5000)
        assert ours["cluster"] == resolver.cluster_spec().as_dict()
        assert ours["cluster"]["worker"] == ["gpu01:5000", "gpu01:5001", "gpu02:5000", "gpu02:5001"]
        assert (ours["task"]["type"], ours["task"]["index"]) == resolver.get_task_info()


def test_tf_slurm_resolver_sorts_node_names_as_strings(monkeypatch):
    # Slurm's order is node9, node10: task 0 runs on node9. TensorFlow sorts the names as
    # strings, so it gives task 0 node10's address; slurm_tf_config keeps Slurm's order.
    # If this fails, TensorFlow changed: revisit slurm_script's and slurm_tf_config's notes.
    env = _step_environment(monkeypatch, "node[9-10]", "1(x2)", tasks=2, rank=0)
    resolver = _tf_slurm_resolver(port=12345)
    assert resolver.cluster_spec().as_dict() == {"worker": ["node10:12345", "node9:12345"]}
    assert resolver.get_task_info() == ("worker", 0)
    assert slurm_tf_config(env) == tf_configs(["node9", "node10"])[0]


@pytest.mark.parametrize(
    "nodelist",
    ["n[1-2],m5,o[3-4,6,7-9]", "node[08-11]", "a,b,c", "gpu[1-2]-ib", "x[1]", "r1n[001-003]"],
)
def test_node_list_expands_like_tensorflow(nodelist):
    from tensorflow.python.distribute.cluster_resolver.slurm_cluster_resolver import (
        expand_hostlist,
    )

    n = len(expand_hostlist(nodelist)) if "]-" not in nodelist else 2
    env = {
        "SLURM_PROCID": "0",
        "SLURM_STEP_NUM_TASKS": str(n),
        "SLURM_STEP_NODELIST": nodelist,
        "SLURM_STEP_TASKS_PER_NODE": f"1(x{n})",
    }
    hosts = [a.rsplit(":", 1)[0] for a in slurm_tf_config(env)["cluster"]["worker"]]
    if "]-" in nodelist:  # a suffix after the range: Slurm allows it, TensorFlow does not
        assert hosts == ["gpu1-ib", "gpu2-ib"]
    else:
        assert hosts == expand_hostlist(nodelist)


@pytest.mark.parametrize(
    ("changes", "error", "match"),
    [
        ({"SLURM_PROCID": None}, RuntimeError, "SLURM_PROCID not set: run this inside"),
        ({"SLURM_STEP_NUM_TASKS": "3"}, ValueError, "holds 2 tasks"),
        ({"SLURM_STEP_TASKS_PER_NODE": "1(x3)"}, ValueError, "gives 3 nodes"),
        ({"SLURM_STEP_TASKS_PER_NODE": "one"}, ValueError, "malformed SLURM_STEP_TASKS"),
        ({"SLURM_STEP_NODELIST": "node[1-2"}, ValueError, "Slurm node list"),
        ({"SLURM_STEP_NODELIST": "node1,node1"}, ValueError, "cannot share a port"),
        ({"SLURM_PROCID": "2"}, ValueError, "SLURM_PROCID is 2"),
        ({"SLURM_PROCID": "x"}, ValueError, "SLURM_PROCID must be a number"),
    ],
)
def test_slurm_tf_config_errors(changes, error, match):
    env = {
        "SLURM_PROCID": "0",
        "SLURM_STEP_NUM_TASKS": "2",
        "SLURM_STEP_NODELIST": "node[1-2]",
        "SLURM_STEP_TASKS_PER_NODE": "1(x2)",
    }
    for name, value in changes.items():
        if value is None:
            del env[name]
        else:
            env[name] = value
    with pytest.raises(error, match=match):
        slurm_tf_config(env)
