"""The worker side: the context, and `python -m mirrorkit.worker` as a real cluster runs it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

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


# --- wrong inputs: each refused before this process joins anything ---

PORTS = _procs.free_ports(2)
ADDRESSES = [f"127.0.0.1:{port}" for port in PORTS]
CLUSTER = json.dumps({"worker": ADDRESSES})
SLURM = ("SLURM_PROCID", "SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE", "SLURM_STEP_NUM_TASKS")

WRONG_ENVIRONMENTS = [  # TF_CONFIG (None: unset), from_environment's arguments
    pytest.param(
        None,
        {},
        ValueError,
        "TF_CONFIG",
        r"export it on every worker \(mirrorkit\.cluster\.scaleout\.tf_configs",
        id="outside a worker",
    ),
    pytest.param(
        str({"cluster": {"worker": ADDRESSES}, "task": {"type": "worker", "index": 0}}),
        {},
        ValueError,
        "TF_CONFIG",
        r"not JSON; it uses Python's quotes.*write it with json\.dumps",
        id="a Python dict, not JSON",
    ),
    pytest.param(
        json.dumps({"worker": ADDRESSES, "task": {"type": "worker", "index": 0}}),
        {},
        ValueError,
        "TF_CONFIG",
        r"no cluster with a list of worker addresses.*\{\"cluster\": \{\"worker\"",
        id="no cluster around the workers",
    ),
    pytest.param(
        f'{{"cluster": {CLUSTER}}}',
        {},
        ValueError,
        "TF_CONFIG",
        r'add "task": \{"type": "worker", "index": N\}',
        id="no task",
    ),
    pytest.param(
        json.dumps({"cluster": {"worker": ADDRESSES}, "task": {"type": "worker", "index": 2}}),
        {},
        ValueError,
        "TF_CONFIG",
        r"task index 2 .* use 0 to 1",
        id="a task index outside the cluster",
    ),
    pytest.param(
        json.dumps({"cluster": {"worker": ADDRESSES}, "task": {"type": "chief", "index": 0}}),
        {},
        ValueError,
        "TF_CONFIG",
        r"task type 'chief' is not in its cluster.*write \"type\": \"worker\"",
        id="a task type the cluster lacks",
    ),
    pytest.param(
        None,
        {"resolver": "mpi"},
        ValueError,
        "resolver",
        r"'tf_config' or 'slurm'",
        id="an unknown resolver",
    ),
    pytest.param(
        None,
        {"resolver": "slurm"},
        RuntimeError,
        "resolver='slurm'",
        r"run this inside a Slurm job step, i\.e\. in a command started by srun",
        id="slurm outside srun",
    ),
    pytest.param(
        json.dumps({"cluster": {"worker": ADDRESSES}, "task": {"type": "worker", "index": 0}}),
        {"timeout_seconds": "30"},
        TypeError,
        "timeout_seconds",
        r"write timeout_seconds=30, or None for no limit",
        id="a timeout as a string",
    ),
    pytest.param(
        json.dumps({"cluster": {"worker": ADDRESSES}, "task": {"type": "worker", "index": 0}}),
        {"port": 12345},
        ValueError,
        "port",
        r"only with resolver='slurm'.*port is in its address",
        id="a port beside TF_CONFIG",
    ),
]


@pytest.mark.wrong_inputs("mk.WorkerContext.from_environment")
@pytest.mark.parametrize(("tf_config", "kwargs", "error", "argument", "match"), WRONG_ENVIRONMENTS)
def test_wrong_environments_are_refused_before_joining(
    refuses, monkeypatch, tf_config, kwargs, error, argument, match
):
    for name in SLURM:
        monkeypatch.delenv(name, raising=False)
    if tf_config is None:
        monkeypatch.delenv("TF_CONFIG", raising=False)
    else:
        monkeypatch.setenv("TF_CONFIG", tf_config)
    refuses(lambda: mk.WorkerContext.from_environment(**kwargs), error, argument, match)
    # Nothing joined: no TensorFlow server was started at the addresses of TF_CONFIG.
    assert all(probe_state(address) != "listening" for address in ADDRESSES)


def in_the_notebook(monkeypatch, strategy):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    return mk.current_context


def in_a_process_started_with_python_train_py(monkeypatch, strategy):
    config = {"cluster": {"worker": ADDRESSES}, "task": {"type": "worker", "index": 0}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(config))
    return mk.current_context


def inside_a_strategy_scope(monkeypatch, strategy):
    monkeypatch.delenv("TF_CONFIG", raising=False)

    def call():
        with strategy.scope():
            return mk.current_context()

    return call


def inside_a_replica_function(monkeypatch, strategy):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    return lambda: strategy.run(lambda: mk.current_context())


def in_an_on_event_callback(monkeypatch, strategy):
    # The one case that needs a cluster: the callback runs here while the workers start.
    monkeypatch.delenv("TF_CONFIG", raising=False)
    return lambda: mk.LocalCluster(1, echo=False).run(
        lambda context: None, on_event=lambda event: mk.current_context()
    )


WRONG_PLACES = [  # where(monkeypatch, strategy) -> the call
    pytest.param(
        in_the_notebook,
        r"LocalCluster\(2\)\.run\(train\): each worker passes its context",
        id="in the notebook",
    ),
    pytest.param(
        in_a_process_started_with_python_train_py,
        r"start it with `python -m mirrorkit\.worker train\.py`.*from_environment\(\)",
        id="in a process started with python train.py",
    ),
    pytest.param(
        inside_a_strategy_scope,
        r"tf\.distribute\.get_strategy\(\) gives it",
        id="inside a strategy's scope",
    ),
    pytest.param(
        inside_a_replica_function,
        r"tf\.distribute\.get_replica_context\(\) the replica",
        id="inside strategy.run",
    ),
    pytest.param(
        in_an_on_event_callback,
        r"on_event callback runs in this notebook.*event\.worker says which worker",
        id="in an on_event callback",
    ),
]


@pytest.mark.wrong_inputs("mk.current_context")
@pytest.mark.parametrize(("where", "match"), WRONG_PLACES)
def test_current_context_in_the_wrong_place_says_what_to_use(
    refuses, monkeypatch, strategy, where, match
):
    refuses(where(monkeypatch, strategy), RuntimeError, "current_context()", match)


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


# --- bounds: the join, SIGTERM, a stalled run (real processes on loopback) ---

STALLS = textwrap.dedent(
    """
    import time
    import tensorflow as tf

    def train(context):
        strategy = context.strategy
        with strategy.scope():
            weight = tf.Variable(1.0)

        @tf.function
        def step():
            return strategy.reduce("SUM", strategy.run(lambda: tf.identity(weight)), axis=None)

        for number in range(1, 1000):
            if context.task_id == 1 and number == 4:
                time.sleep(3600)  # worker 1 stops after step 3
            step()
            context.report(number)
    """
)


def start_worker(tmp_path, addresses, index, *args):
    script = tmp_path / "stalls.py"
    script.write_text(STALLS)
    config = {"cluster": {"worker": addresses}, "task": {"type": "worker", "index": index}}
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "TF_CONFIG": json.dumps(config),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "mirrorkit.worker", f"{script}:train", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )


def finish(worker, bound):
    try:
        _, err = worker.communicate(timeout=bound)
    finally:
        worker.kill()
    return worker.returncode, err


def test_a_worker_whose_peer_never_starts_names_it_within_the_join_timeout(tmp_path):
    addresses = [f"127.0.0.1:{p}" for p in _procs.free_ports(2)]
    code, err = finish(start_worker(tmp_path, addresses, 0, "--join-timeout", "6"), bound=60)
    assert code == 2
    assert "the cluster did not form within 6 s (worker 0 of 2 waited for its peers)" in err
    assert f"worker 1 at {addresses[1]}: not listening (connection refused)" in err
    assert "Waiting for: worker 1." in err
    assert "Traceback" not in err


def test_under_slurm_the_join_report_names_the_task_that_never_started(tmp_path):
    # `srun --ntasks=2` on one node, but only task 0 ever runs: the report must read the
    # cluster from Slurm's variables, as the worker did (there is no TF_CONFIG here).
    port = _procs.free_ports(1)[0]
    script = tmp_path / "stalls.py"
    script.write_text(STALLS)
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    env.update(
        PYTHONPATH=str(ROOT),
        TF_CPP_MIN_LOG_LEVEL="3",
        SLURM_STEP_NODELIST="localhost",
        SLURM_STEP_TASKS_PER_NODE="2",
        SLURM_STEP_NUM_TASKS="2",
        SLURM_PROCID="0",
    )
    args = ["--resolver", "slurm", "--port", str(port), "--join-timeout", "6"]
    worker = subprocess.Popen(
        [sys.executable, "-m", "mirrorkit.worker", f"{script}:train", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    code, err = finish(worker, bound=60)
    assert code == 2
    assert "(worker 0 of 2 waited for its peers)" in err
    assert f"worker 1 at localhost:{port + 1}: not listening" in err
    assert "Traceback" not in err


def test_one_wrong_address_in_tf_config_is_named_by_the_worker_that_uses_it(tmp_path):
    # Worker 1 listens where its own TF_CONFIG says; worker 0's TF_CONFIG has a typo there.
    # Whether the join fails (worker 1 not yet registered with worker 0, the leader) or the
    # first collective does (it had), worker 0 names the wrong address, bounded, in a few lines.
    right, wrong, chief = _procs.free_ports(3)
    first = start_worker(
        tmp_path, [f"127.0.0.1:{chief}", f"127.0.0.1:{wrong}"], 0, "--join-timeout", "8"
    )
    second = start_worker(
        tmp_path, [f"127.0.0.1:{chief}", f"127.0.0.1:{right}"], 1, "--join-timeout", "8"
    )
    (code0, err0), (code1, err1) = finish(first, 60), finish(second, 60)
    assert code0 in (1, 2) and code1 in (1, 2), err0[-2000:] + err1[-2000:]
    if code0 == 2:
        assert f"worker 1 at 127.0.0.1:{wrong}: not listening (connection refused)" in err0
        assert "Waiting for: worker 1." in err0
    else:
        assert "worker 0 failed at stalls.py:" in err0 and "UnavailableError" in err0
        assert f"127.0.0.1:{wrong} is worker 1 in this worker's TF_CONFIG: not listening" in err0
    assert "Traceback" not in err0 + err1
    assert "mirrorkit.worker: " in err1


def test_sigterm_ends_a_worker_waiting_for_its_peers(tmp_path):
    addresses = [f"127.0.0.1:{p}" for p in _procs.free_ports(2)]
    worker = start_worker(tmp_path, addresses, 0)
    deadline = time.monotonic() + 60
    while probe_state(addresses[0]) != "listening" and time.monotonic() < deadline:
        time.sleep(0.2)  # TensorFlow's server is up: the worker is inside the join
    assert worker.poll() is None
    worker.terminate()
    code, _ = finish(worker, bound=10)
    assert code == 128 + signal.SIGTERM
    assert probe_state(addresses[0]) != "listening"  # the TensorFlow child ended too


def test_a_stalled_run_reports_every_workers_last_step_and_line(tmp_path):
    addresses = [f"127.0.0.1:{p}" for p in _procs.free_ports(2)]
    workers = [start_worker(tmp_path, addresses, i, "--stall-timeout", "10") for i in range(2)]
    results = [finish(w, bound=120) for w in workers]
    assert [code for code, _ in results] == [3, 3]
    line = STALLS.splitlines().index("            time.sleep(3600)  # worker 1 stops after step 3")
    for index, (_, err) in enumerate(results):
        assert f"the run stalled: worker {index} finished no step for" in err
        assert "worker 0 at" in err and "finished step 3" in err
        assert "now at stalls.py:" in err and "`step()`, inside tf.function 'step'" in err
        assert f"now at stalls.py:{line + 1} `time.sleep(3600)" in err
        assert "Who waits for whom: worker 1 has not reached step 4's collectives" in err
        assert "; worker 0 waits in them (now at stalls.py:" in err
        assert "Traceback" not in err


WRONG_OPTIONS = [  # arguments after the target train.py:train (None: no target either)
    pytest.param(
        ["--join-timeout", "0"],
        "--join-timeout",
        r"expected a number of seconds above 0, got '0'",
        id="a join timeout of 0",
    ),
    pytest.param(
        ["--join-timeout", "-5"],
        "--join-timeout",
        r"expected a number of seconds above 0, got '-5'",
        id="a negative join timeout",
    ),
    pytest.param(
        ["--join-timeout", "soon"],
        "--join-timeout",
        r"expected a number of seconds above 0, got 'soon'",
        id="a join timeout in words",
    ),
    pytest.param(
        ["--stall-timeout", "-1"],
        "--stall-timeout",
        r"expected a number of seconds \(0 for never\)",
        id="a negative stall timeout",
    ),
    pytest.param(
        ["--stall-timeout", "inf"],
        "--stall-timeout",
        r"expected a number of seconds \(0 for never\), got 'inf'",
        id="an endless stall timeout",
    ),
    pytest.param(
        ["--resolver", "mpi"],
        "--resolver",
        r"invalid choice: 'mpi' \(choose from '?tf_config'?, '?slurm'?\)",
        id="an unknown resolver",
    ),
    pytest.param(
        None,
        "target",
        r"usage: python -m mirrorkit\.worker .*target.*the following arguments are required",
        id="no target",
    ),
    pytest.param(
        ["--port", "12345"],
        "--port",
        r"used only with --resolver slurm; with TF_CONFIG, each worker's port is in its address",
        id="a port without slurm",
    ),
    pytest.param(
        ["--resolver", "slurm", "--port", "99999"],
        "--port",
        r"from 1 to 65535",
        id="a port out of range",
    ),
    pytest.param(
        ["missing.py:train"],
        "target",
        r"'missing\.py:train' names no file \(looked in .*\): check the name",
        id="a file that does not exist",
    ),
    pytest.param(
        ["train.ipynb"],
        "target",
        r"jupyter nbconvert --to script train\.ipynb",
        id="a notebook",
    ),
    pytest.param(
        ["train.py:trian"],
        "target",
        r"its functions: train\): check the name after the colon",
        id="a function the file does not define",
    ),
    pytest.param(
        ["plain.py"],
        "target",
        r"plain\.py builds its own multi-worker strategy, so it joins the cluster by "
        r"itself: run it as it is \(python plain\.py, with TF_CONFIG set on every task\)",
        id="a script that builds its own strategy",
    ),
]


PLAIN = "import tensorflow as tf\n\nstrategy = tf.distribute.MultiWorkerMirroredStrategy()\n"


def test_a_script_that_builds_its_own_strategy_is_told_apart(tmp_path):
    from mirrorkit.cluster.targets import joins_by_itself

    cases = {
        "plain.py": (PLAIN, True),
        "imported.py": (
            "from tensorflow.distribute import MultiWorkerMirroredStrategy\n"
            "strategy = MultiWorkerMirroredStrategy(communication_options=None)\n",
            True,
        ),
        "inside.py": (
            "def main():\n    return tf.distribute.MultiWorkerMirroredStrategy()\n",
            True,
        ),
        "helped.py": ("import mirrorkit as mk\nstrategy = mk.current_context().strategy\n", False),
        "named.py": ("# MultiWorkerMirroredStrategy() is made by the worker\nx = 1\n", False),
        "broken.py": ("def (:\n", False),
    }
    for name, (text, expected) in cases.items():
        (tmp_path / name).write_text(text)
        assert joins_by_itself(tmp_path / name) is expected, name
    assert joins_by_itself(tmp_path / "missing.py") is False


@pytest.mark.wrong_inputs("python -m mirrorkit.worker")
@pytest.mark.parametrize(("args", "argument", "match"), WRONG_OPTIONS)
def test_worker_cli_options_that_cannot_work_are_refused(
    clear_message, capsys, monkeypatch, tmp_path, args, argument, match
):
    from mirrorkit.cluster.worker_cli import main

    monkeypatch.chdir(tmp_path)  # where train.py defines train, and nothing else is
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "train.ipynb").write_text("{}")
    (tmp_path / "plain.py").write_text(PLAIN)
    if args is None:
        argv = []
    elif args[0].startswith("--"):
        argv = ["train.py:train", *args]
    else:
        argv = args  # a target of its own
    started = time.monotonic()
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert time.monotonic() - started < 10  # refused at once, not after a join
    clear_message(capsys.readouterr().err, argument, match)


def taken_port(monkeypatch, tmp_path, busy):
    config = {"cluster": {"worker": [f"127.0.0.1:{busy}"]}, "task": {"type": "worker", "index": 0}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(config))
    return ["train.py:train"]


def second_worker_port_taken(monkeypatch, tmp_path, busy):
    peer = _procs.free_ports(1)[0]
    config = {
        "cluster": {"worker": [f"127.0.0.1:{peer}", f"localhost:{busy}"]},
        "task": {"type": "worker", "index": 1},
    }
    monkeypatch.setenv("TF_CONFIG", json.dumps(config))
    return ["train.py:train"]


def slurm_port_taken(monkeypatch, tmp_path, busy):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    for name, value in {
        "SLURM_STEP_NODELIST": "localhost",
        "SLURM_STEP_TASKS_PER_NODE": "1",
        "SLURM_STEP_NUM_TASKS": "1",
        "SLURM_PROCID": "0",
    }.items():
        monkeypatch.setenv(name, value)
    return ["train.py:train", "--resolver", "slurm", "--port", str(busy)]


def unknown_host(monkeypatch, tmp_path, busy):
    config = {
        "cluster": {"worker": ["no-such-host.invalid:2222"]},
        "task": {"type": "worker", "index": 0},
    }
    monkeypatch.setenv("TF_CONFIG", json.dumps(config))
    return ["train.py:train"]


def deleted_folder(monkeypatch, tmp_path, busy):
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    monkeypatch.setenv("PWD", str(gone))
    gone.rmdir()
    return ["train.py:train"]


WRONG_PLACES = [  # each a setup(monkeypatch, tmp_path, a port something listens on): argv
    pytest.param(
        taken_port,
        "TF_CONFIG",
        r"this worker's address 127\.0\.0\.1:\d+ \(worker 0 in TF_CONFIG\) cannot be used: "
        r"port \d+ on this machine is already taken by another program.*end the program "
        r"that holds it.*or give this worker a free port",
        id="its port taken",
    ),
    pytest.param(
        second_worker_port_taken,
        "worker 1 in TF_CONFIG",
        r"address localhost:\d+ .*already taken.*the same change in every worker's TF_CONFIG",
        id="the second worker's port taken",
    ),
    pytest.param(
        slurm_port_taken,
        "--port",
        r"address localhost:\d+ \(worker 0, from Slurm's nodes and --port\).*already taken"
        r".*give this worker a free port \(--port\), the same on every task",
        id="a Slurm port taken",
    ),
    pytest.param(
        unknown_host,
        "'no-such-host.invalid'",
        r"names a host, 'no-such-host\.invalid', that does not resolve on this machine.*"
        r"write this machine's name as the others reach it .* or its IP address, or 127\.0\.0\.1",
        id="a one-worker cluster on an unknown host",
    ),
    pytest.param(
        deleted_folder,
        "working folder",
        r"the working folder, .*gone, no longer exists.*cd into a folder that exists",
        id="a deleted working folder",
    ),
]


@pytest.mark.wrong_inputs("python -m mirrorkit.worker")
@pytest.mark.parametrize(("setup", "argument", "match"), WRONG_PLACES)
def test_a_worker_that_cannot_listen_where_it_is_says_so_at_once(
    clear_message, capsys, monkeypatch, tmp_path, setup, argument, match
):
    import socket

    from mirrorkit.cluster.worker_cli import main

    (tmp_path / "train.py").write_text(TRAIN)
    monkeypatch.chdir(tmp_path)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        argv = setup(monkeypatch, tmp_path, busy.getsockname()[1])
        started = time.monotonic()
        with pytest.raises(SystemExit) as exit_:
            main(argv)
    assert exit_.value.code == 2
    assert time.monotonic() - started < 10  # at once, not after TensorFlow gave up
    clear_message(capsys.readouterr().err, argument, match)


def probe_state(address):
    from mirrorkit.cluster._flight import probe

    return probe(address, timeout=0.5)
