import dataclasses
import subprocess
import sys
import textwrap
import time

import pytest
import tensorflow as tf

import mirrorkit as mk
from mirrorkit import _gpus
from mirrorkit.devices import KINDS, MIN_REPLICA_MEMORY_MIB, USABLE_MEMORY_PERCENT
from tests.conftest import REPLICAS


def run_fresh(code: str) -> subprocess.CompletedProcess:
    """Run code in a new Python process: devices can only be chosen once per process."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_session_has_the_simulated_replicas(devices):
    assert len(devices) == REPLICAS
    assert devices == tuple(f"/device:CPU:{i}" for i in range(REPLICAS))
    assert len(tf.config.list_logical_devices("CPU")) == REPLICAS


def test_same_count_again_is_harmless(devices):
    # A notebook cell run twice: TensorFlow has started, the answer is unchanged.
    assert mk.simulate_replicas(REPLICAS) == devices
    assert mk.simulate_replicas(REPLICAS, use_gpus=False) == devices


# The session already simulated REPLICAS replicas: every case here is refused before devices
# are touched, or (a different count) because TensorFlow has started.
RESTART = rf"already started with {REPLICAS} CPU device\(s\).*Restart the kernel"
WRONG_SIMULATE_REPLICAS = [
    pytest.param(
        dict(n=0), ValueError, "n", r"at least 1 replica.*simulate_replicas\(4\)", id="zero"
    ),
    pytest.param(
        dict(n=-3), ValueError, "n", r"at least 1 replica, got -3: ask for 1", id="negative"
    ),
    pytest.param(
        dict(n=2.0), TypeError, "n", r"must be an int.*simulate_replicas\(4\)", id="a float"
    ),
    pytest.param(dict(n="4"), TypeError, "n", r"must be an int.*got str '4'", id="a string"),
    pytest.param(
        dict(n=None), TypeError, "n", r"must be an int.*simulate_replicas\(4\)", id="None"
    ),
    pytest.param(dict(n=True), TypeError, "n", r"must be an int.*got bool", id="a bool"),
    pytest.param(dict(n=65), ValueError, "n=65", r"Ask for at most 64", id="too many"),
    pytest.param(
        dict(n=REPLICAS, use_gpus="no"),
        TypeError,
        "use_gpus",
        r"write use_gpus=False",
        id="use_gpus as text",
    ),
    pytest.param(
        dict(n=REPLICAS, report="no"),
        TypeError,
        "report",
        r"write report=False",
        id="report as text",
    ),
    pytest.param(
        dict(n=REPLICAS + 1),
        mk.ReplicaSetupError,
        f"simulate_replicas({REPLICAS + 1})",
        RESTART,
        id="more replicas after TensorFlow started",
    ),
    pytest.param(
        dict(n=2),
        mk.ReplicaSetupError,
        "simulate_replicas(2)",
        RESTART,
        id="fewer replicas after TensorFlow started",
    ),
]


@pytest.mark.wrong_inputs("mk.simulate_replicas")
@pytest.mark.parametrize(("kwargs", "error", "argument", "match"), WRONG_SIMULATE_REPLICAS)
def test_wrong_simulate_replicas_arguments_get_a_clear_message(
    refuses, devices, capsys, kwargs, error, argument, match
):
    refuses(lambda: mk.simulate_replicas(**kwargs), error, argument, match)
    assert capsys.readouterr().out == ""  # no line printed for a refused call
    assert mk.simulate_replicas(REPLICAS, report=False) == devices  # and nothing changed


def test_fresh_process_gets_that_many_replicas_in_a_default_strategy():
    result = run_fresh(
        """
        import mirrorkit as mk
        print(len(mk.simulate_replicas(3)))
        import tensorflow as tf
        print(tf.distribute.MirroredStrategy().num_replicas_in_sync)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-2:] == ["3", "3"]


def test_replica_devices_of_the_strategy(strategy, devices):
    names = mk.replica_devices(strategy)
    assert len(names) == REPLICAS
    assert [n.rsplit("/", 1)[-1] for n in names] == [d.rsplit("/", 1)[-1] for d in devices]


def test_replica_devices_of_the_default_strategy():
    (name,) = mk.replica_devices(tf.distribute.get_strategy())
    assert name.endswith("CPU:0")


WRONG_STRATEGIES = [
    pytest.param(
        "MirroredStrategy", r"got the text 'MirroredStrategy': create one with", id="name"
    ),
    pytest.param(
        tf.distribute.MirroredStrategy,
        r"the class MirroredStrategy.*create one first",
        id="the class",
    ),
    pytest.param(mk.make_strategy, r"the function make_strategy.*call it", id="the function"),
    pytest.param(
        None, r"got NoneType: create one with strategy = mk\.make_strategy\(\)", id="None"
    ),
    pytest.param(("/device:CPU:0", "/device:CPU:1"), r"got tuple: create one", id="its devices"),
    pytest.param(4, r"got int: create one with", id="a replica count"),
]


@pytest.mark.wrong_inputs("mk.replica_devices")
@pytest.mark.parametrize(("strategy", "match"), WRONG_STRATEGIES)
def test_replica_devices_of_something_else_gets_a_clear_message(refuses, strategy, match):
    refuses(lambda: mk.replica_devices(strategy), TypeError, "strategy", match)


# -- the decision, as data ----------------------------------------------------------------

T4 = ("Tesla T4", 15360)
HIDDEN = "hidden from TensorFlow in this process"


@pytest.mark.parametrize(
    ("n", "gpus", "use_gpus", "kind", "split", "limit", "message"),
    [
        pytest.param(
            4, [], True, "cpus", (), None,
            "4 replicas on 4 logical CPU devices (this machine has no GPU)",
            id="no GPU",
        ),
        pytest.param(
            1, [], True, "cpus", (), None,
            "1 replica on 1 logical CPU device (this machine has no GPU)",
            id="one replica, no GPU",
        ),
        pytest.param(
            4, [("Tesla T4", 16384)], True, "logical_gpus", (4,), 3686,
            "4 replicas on 4 logical GPUs: GPU 0 (Tesla T4, 16384 MiB) split into 4 of 3686 MiB",
            id="1 GPU of 16 GiB -> 4 logical GPUs",
        ),
        pytest.param(
            4, [T4], True, "logical_gpus", (4,), 3456,
            "4 replicas on 4 logical GPUs: GPU 0 (Tesla T4, 15360 MiB) split into 4 of 3456 MiB",
            id="Colab's T4",
        ),
        pytest.param(
            4, [("MX150", 2048)], True, "cpus", (0,), None,
            "4 replicas on 4 logical CPU devices: GPU 0 (MX150, 2048 MiB) cannot hold 4 "
            "replicas of at least 1024 MiB each (90% of its memory is usable); the GPU is "
            + HIDDEN,
            id="1 GPU of 2 GiB -> CPUs",
        ),
        pytest.param(
            4, [T4, T4], True, "logical_gpus", (2, 2), 6912,
            "4 replicas on 4 logical GPUs of 6912 MiB each: 2 on GPU 0 (Tesla T4, 15360 MiB), "
            "2 on GPU 1 (Tesla T4, 15360 MiB)",
            id="2 GPUs -> 2+2",
        ),
        pytest.param(
            4, [T4] * 3, True, "logical_gpus", (2, 1, 1), 6912,
            "4 replicas on 4 logical GPUs of 6912 MiB each: 2 on GPU 0 (Tesla T4, 15360 MiB), "
            "1 on GPU 1 (Tesla T4, 15360 MiB), 1 on GPU 2 (Tesla T4, 15360 MiB)",
            id="3 GPUs -> 2+1+1",
        ),
        pytest.param(
            4, [("A100", 40960)] * 8, True, "gpus", (1, 1, 1, 1, 0, 0, 0, 0), None,
            f"4 replicas on 4 of the 8 GPUs: GPUs 0-3 (A100); GPUs 4-7 are {HIDDEN}",
            id="8 GPUs -> the first 4",
        ),
        pytest.param(
            4, [("Tesla T4", None)], True, "cpus", (0,), None,
            "4 replicas on 4 logical CPU devices: GPU 0 (Tesla T4) would have to be split into "
            f"4 logical GPUs, but its memory is unknown; the GPU is {HIDDEN}",
            id="memory unknown -> CPUs",
        ),
        pytest.param(
            4, [T4, T4], False, "cpus", (0, 0), None,
            f"4 replicas on 4 logical CPU devices (use_gpus=False); the 2 GPUs are {HIDDEN}",
            id="use_gpus=False",
        ),
        pytest.param(
            4, [], False, "cpus", (), None,
            "4 replicas on 4 logical CPU devices (this machine has no GPU)",
            id="use_gpus=False without GPU reads as no GPU",
        ),
        pytest.param(
            1, [T4], True, "gpus", (1,), None,
            "1 replica on 1 GPU: GPU 0 (Tesla T4)",
            id="n=1 with 1 GPU",
        ),
        pytest.param(
            4, [T4] * 4, True, "gpus", (1, 1, 1, 1), None,
            "4 replicas on 4 GPUs: GPUs 0-3 (Tesla T4)",
            id="exactly n GPUs",
        ),
        pytest.param(
            2, [(None, None)] * 3, True, "gpus", (1, 1, 0), None,
            f"2 replicas on 2 of the 3 GPUs: GPUs 0-1; GPU 2 is {HIDDEN}",
            id="enough GPUs, nothing known about them",
        ),
        pytest.param(
            4, [("A", 16384), ("B", 2048)], True, "logical_gpus", (3, 1), 1843,
            "4 replicas on 4 logical GPUs of 1843 MiB each: 3 on GPU 0 (A, 16384 MiB), "
            "1 on GPU 1 (B, 2048 MiB)",
            id="uneven GPUs: as even as memory allows",
        ),
        pytest.param(
            3, [("A", 16384), ("B", 1024)], True, "logical_gpus", (3, 0), 4915,
            "3 replicas on 3 logical GPUs: GPU 0 (A, 16384 MiB) split into 3 of 4915 MiB; "
            f"GPU 1 is {HIDDEN} (less than 1024 MiB usable)",
            id="a GPU too small for one replica is left out",
        ),
        pytest.param(
            5, [("A", 2048), ("B", 2048)], True, "cpus", (0, 0), None,
            "5 replicas on 5 logical CPU devices: GPU 0 (A, 2048 MiB) and GPU 1 (B, 2048 MiB) "
            "cannot hold 5 replicas of at least 1024 MiB each (90% of their memory is usable); "
            f"the 2 GPUs are {HIDDEN}",
            id="2 small GPUs -> CPUs",
        ),
        pytest.param(
            3, [T4, ("Tesla T4", None)], True, "cpus", (0, 0), None,
            "3 replicas on 3 logical CPU devices: GPU 0 (Tesla T4, 15360 MiB) and GPU 1 "
            f"(Tesla T4) would have to be split into 3 logical GPUs, but their memory is "
            f"unknown; the 2 GPUs are {HIDDEN}",
            id="one GPU's memory unknown -> CPUs",
        ),
        pytest.param(
            2, [("Tesla T4", 2276)], True, "logical_gpus", (2,), 1024,
            "2 replicas on 2 logical GPUs: GPU 0 (Tesla T4, 2276 MiB) split into 2 of 1024 MiB",
            id="just enough memory",
        ),
        pytest.param(
            2, [("Tesla T4", 2275)], True, "cpus", (0,), None,
            "2 replicas on 2 logical CPU devices: GPU 0 (Tesla T4, 2275 MiB) cannot hold 2 "
            "replicas of at least 1024 MiB each (90% of its memory is usable); the GPU is "
            + HIDDEN,
            id="1 MiB short",
        ),
    ],
)  # fmt: skip
def test_plan_replicas(n, gpus, use_gpus, kind, split, limit, message):
    plan = mk.plan_replicas(n, gpus, use_gpus=use_gpus)
    assert (plan.kind, plan.split, plan.memory_limit_mib, plan.message) == (
        kind,
        split,
        limit,
        message,
    )
    assert plan.replicas == n and plan.kind in KINDS
    if kind == "logical_gpus":  # exactly n, each at least the minimum, never over 90 %
        assert sum(plan.split) == n and plan.memory_limit_mib >= MIN_REPLICA_MEMORY_MIB
        for (_, memory), k in zip(gpus, plan.split, strict=True):
            assert k * plan.memory_limit_mib <= memory * USABLE_MEMORY_PERCENT // 100
    if kind == "gpus":
        assert sum(plan.split) == n and set(plan.split) <= {0, 1}
    assert "fewer" not in plan.message


def test_plan_quotes_why_memory_is_unknown():
    plan = mk.plan_replicas(2, [T4[:1] + (None,)], memory_note="nvidia-smi was not found")
    assert "its memory is unknown (nvidia-smi was not found); the GPU is hidden" in plan.message


def test_plan_minimum_is_a_parameter():
    assert mk.plan_replicas(4, [T4], min_memory_mib=4096).kind == "cpus"
    assert mk.plan_replicas(4, [T4], min_memory_mib=3456).memory_limit_mib == 3456


@pytest.mark.parametrize("n", [2, 3, 5, 7, 16])
def test_plan_spreads_evenly_over_equal_gpus(n):
    plan = mk.plan_replicas(n, [("A100", 81920)] * 3)
    assert sum(plan.split) == n
    assert max(plan.split) - min(plan.split) <= 1
    assert list(plan.split) == sorted(plan.split, reverse=True)  # extras on the first GPUs


def test_plan_devices_are_the_logical_names():
    assert mk.plan_replicas(2).devices == ("/device:CPU:0", "/device:CPU:1")
    assert mk.plan_replicas(3, [T4]).devices == tuple(f"/device:GPU:{i}" for i in range(3))
    assert mk.plan_replicas(2, [T4], use_gpus=False).devices[-1] == "/device:CPU:1"


WRONG_PLAN_REPLICAS = [
    pytest.param(dict(n=0), ValueError, "n", r"at least 1 replica.*plan_replicas\(4\)", id="zero"),
    pytest.param(dict(n=2.0), TypeError, "n", r"must be an int.*plan_replicas\(4\)", id="a float"),
    pytest.param(dict(n=65), ValueError, "n=65", r"Ask for at most 64", id="too many"),
    pytest.param(
        dict(n=2, min_memory_mib=0),
        ValueError,
        "min_memory_mib",
        r"at least 1, got 0: write a number of MiB",
        id="no memory",
    ),
    pytest.param(
        dict(n=2, min_memory_mib=1.5),
        TypeError,
        "min_memory_mib",
        r"must be an int.*min_memory_mib=1024",
        id="a float of MiB",
    ),
    pytest.param(
        dict(n=4, gpus=("Tesla T4", 15360)),
        TypeError,
        "gpus",
        r"the single pair .* write gpus=\[\('Tesla T4', 15360\)\]",
        id="one pair, no list",
    ),
    pytest.param(
        dict(n=4, gpus=["Tesla T4"]),
        TypeError,
        "gpus",
        r"'Tesla T4', not a \(name, memory\) pair: write gpus=",
        id="names only",
    ),
    pytest.param(
        dict(n=4, gpus=[("Tesla T4", "15GB")]),
        TypeError,
        "gpus",
        r"int number of MiB or None.*\('Tesla T4', 15360\)",
        id="memory as text",
    ),
    pytest.param(
        dict(n=4, gpus={"Tesla T4": 15360}),
        TypeError,
        "gpus",
        r"list of pairs, got dict: write gpus=",
        id="a dict",
    ),
    pytest.param(dict(n=4, gpus=1), TypeError, "gpus", r"got int: write gpus=", id="a count"),
    pytest.param(
        dict(n=4, use_gpus="no"),
        TypeError,
        "use_gpus",
        r"write use_gpus=False",
        id="use_gpus as text",
    ),
]


@pytest.mark.wrong_inputs("mk.plan_replicas")
@pytest.mark.parametrize(("kwargs", "error", "argument", "match"), WRONG_PLAN_REPLICAS)
def test_wrong_plan_arguments_get_a_clear_message(refuses, kwargs, error, argument, match):
    refuses(lambda: mk.plan_replicas(**kwargs), error, argument, match)


def test_plan_is_frozen():
    plan = mk.plan_replicas(2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.kind = "gpus"


# -- the printed line ---------------------------------------------------------------------

CPU_LINE = "{n} replicas on {n} logical CPU devices (this machine has no GPU)"


def test_a_rerun_prints_the_same_line_and_gives_the_same_devices(devices, capsys):
    assert mk.simulate_replicas(REPLICAS) == devices
    assert capsys.readouterr().out == CPU_LINE.format(n=REPLICAS) + "\n"
    assert mk.simulate_replicas(REPLICAS, report=False) == devices
    assert capsys.readouterr().out == ""


def test_a_refused_rerun_prints_nothing(capsys):
    with pytest.raises(mk.ReplicaSetupError, match="cannot give 2 replicas on logical CPU"):
        mk.simulate_replicas(2)
    assert capsys.readouterr().out == ""


def test_fresh_process_prints_one_line_and_a_default_strategy_has_n_replicas():
    result = run_fresh(
        """
        import mirrorkit as mk
        devices = mk.simulate_replicas(4)
        print(devices)
        mk.simulate_replicas(4)  # a notebook cell run again
        mk.simulate_replicas(4, report=False)
        import tensorflow as tf
        print(tf.distribute.MirroredStrategy().num_replicas_in_sync)
        print(mk.make_strategy().num_replicas_in_sync)
        print(tf.config.list_logical_devices("GPU"))
        """
    )
    assert result.returncode == 0, result.stderr
    line = CPU_LINE.format(n=4)
    devices = str(tuple(f"/device:CPU:{i}" for i in range(4)))
    assert result.stdout.splitlines() == [line, devices, line, "4", "4", "[]"]


def test_fresh_process_report_false_and_one_replica():
    result = run_fresh(
        """
        import mirrorkit as mk
        print(mk.simulate_replicas(1, report=False))
        print(mk.simulate_replicas(1, use_gpus=False))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "('/device:CPU:0',)",
        "1 replica on 1 logical CPU device (this machine has no GPU)",
        "('/device:CPU:0',)",
    ]


def test_fresh_process_after_tensorflow_started_still_accepts_one_replica():
    # TensorFlow already runs on its one CPU device: asking for 1 replica is fine...
    result = run_fresh(
        """
        import tensorflow as tf
        tf.constant(1.0)
        import mirrorkit as mk
        print(mk.simulate_replicas(1))
        try:
            mk.simulate_replicas(2)
        except mk.ReplicaSetupError as error:
            print("ReplicaSetupError:", error)
        """
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == [
        "1 replica on 1 logical CPU device (this machine has no GPU)",
        "('/device:CPU:0',)",
    ]
    # ...but not 2: the runtime cannot be split any more.
    assert lines[2].startswith(
        "ReplicaSetupError: TensorFlow's runtime already started with 1 CPU device(s), so it "
        "cannot give 2 replicas on logical CPU devices now"
    )
    assert len(lines) == 3


# -- nvidia-smi ---------------------------------------------------------------------------

SMI_TWO_T4 = "0, Tesla T4, 15360\n1, Tesla T4, 15360\n"


@pytest.mark.parametrize(
    ("text", "rows"),
    [
        ("0, Tesla T4, 15360\n", [(0, "Tesla T4", 15360)]),
        (SMI_TWO_T4, [(0, "Tesla T4", 15360), (1, "Tesla T4", 15360)]),
        (
            "0, NVIDIA A100-SXM4-40GB, 40960\r\n\r\n1, NVIDIA GeForce RTX 3090, 24576\r\n",
            [(0, "NVIDIA A100-SXM4-40GB", 40960), (1, "NVIDIA GeForce RTX 3090", 24576)],
        ),
        ("0, Weird, Model, 8192\n", [(0, "Weird, Model", 8192)]),  # a comma in the name
        ("0, Tesla T4, [N/A]\n", [(0, "Tesla T4", None)]),
        ("0, Tesla T4, [Not Supported]\n", [(0, "Tesla T4", None)]),
        ("", []),
        ("\n  \n", []),
    ],
)
def test_parse_smi(text, rows):
    assert [tuple(row) for row in _gpus.parse_smi(text)] == rows


@pytest.mark.parametrize(
    "text",
    [
        "No devices were found\n",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
        "index, name, memory.total [MiB]\n0, Tesla T4, 15360 MiB\n",  # header and units
        "0, Tesla T4, 15360\nGPU 1: fell off the bus\n",
        "0, Tesla T4, 15 GiB\n",
        "0, Tesla T4\n",
        "x, Tesla T4, 15360\n",
        "0, , 15360\n",
        "0, Tesla T4, 15360\n0, Tesla T4, 15360\n",  # the same index twice
        "\x00\xff\x1b[31m",
    ],
)
def test_parse_smi_rejects_garbage(text):
    with pytest.raises(ValueError):
        _gpus.parse_smi(text)


def fake_smi(code: str) -> list[str]:
    """A stand-in for nvidia-smi: a Python one-liner."""
    return [sys.executable, "-c", code]


@pytest.mark.parametrize(
    ("command", "rows", "reason"),
    [
        (fake_smi(f"print({SMI_TWO_T4!r}, end='')"), 2, None),
        (["mirrorkit-no-such-nvidia-smi"], 0, "nvidia-smi was not found"),
        (
            fake_smi("print('NVIDIA-SMI has failed because it could not talk to the driver');"
                     "raise SystemExit(9)"),
            0,
            "nvidia-smi failed with exit status 9: NVIDIA-SMI has failed because it could not "
            "talk to the driver",
        ),
        (fake_smi("raise SystemExit(6)"), 0, "nvidia-smi failed with exit status 6: no output"),
        (
            fake_smi("print('<html>garbage</html>')"),
            0,
            "nvidia-smi printed something unexpected (not 'index, name, memory.total': "
            "'<html>garbage</html>')",
        ),
        (fake_smi("pass"), 0, "nvidia-smi listed no GPU"),
    ],
)  # fmt: skip
def test_read_smi(command, rows, reason):
    found, why = _gpus.read_smi(command)
    assert (len(found), why) == (rows, reason)


def test_read_smi_gives_up_after_its_timeout():
    started = time.monotonic()
    found, why = _gpus.read_smi(fake_smi("import time; time.sleep(30)"), timeout=0.5)
    assert (found, why) == ((), "nvidia-smi did not answer within 0.5 s")
    assert time.monotonic() - started < 20


def test_read_smi_not_executable(tmp_path):
    script = tmp_path / "nvidia-smi"
    script.write_text("#!/bin/sh\necho 0, Tesla T4, 15360\n")
    script.chmod(0o600)  # not executable
    found, why = _gpus.read_smi([str(script)])
    assert found == () and why.startswith("nvidia-smi could not run: ")


def test_the_real_query_is_the_documented_one():
    assert _gpus.SMI_COMMAND == (
        "nvidia-smi",
        "--query-gpu=index,name,memory.total",
        "--format=csv,noheader,nounits",
    )
    assert 0 < _gpus.SMI_TIMEOUT <= 30


# -- which nvidia-smi line is which TensorFlow GPU ----------------------------------------

A40 = _gpus.SmiGpu(0, "NVIDIA A100-SXM4-40GB", 40960)
A80 = _gpus.SmiGpu(1, "NVIDIA A100-SXM4-80GB", 81920)
T4_0, T4_1 = _gpus.SmiGpu(0, "Tesla T4", 15360), _gpus.SmiGpu(1, "Tesla T4", 15360)
SMALL_A, BIG_A = _gpus.SmiGpu(0, "GPU-X", 2048), _gpus.SmiGpu(1, "GPU-X", 16384)


@pytest.mark.parametrize(
    ("names", "smi", "visible", "order", "memory", "reason"),
    [
        pytest.param([], [], None, None, (), None, id="no TF GPU"),
        pytest.param(["Tesla T4"], [T4_0], None, None, (15360,), None, id="Colab"),
        pytest.param([None], [T4_0], None, None, (15360,), None, id="one GPU, name unknown"),
        pytest.param(
            ["Tesla T4"], [], None, None, (None,), "nvidia-smi listed no GPU", id="no smi rows"
        ),
        pytest.param(
            ["Tesla T4", "Tesla T4"], [T4_0, T4_1], None, None, (15360, 15360), None,
            id="same model: order does not matter",
        ),
        pytest.param(
            ["NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-40GB"], [A40, A80], None, None,
            (81920, 40960), None,
            id="by model, whatever CUDA's order",
        ),
        pytest.param(
            ["nvidia  a100-sxm4-80gb"], [A40, A80], "1", None, (81920,), None,
            id="model names compared loosely",
        ),
        pytest.param(
            [None, None], [A40, A80], None, None, (None, None), "CUDA numbers GPUs fastest first",
            id="fastest-first order, models unknown: ambiguous",
        ),
        pytest.param(
            [None, None], [A40, A80], None, "PCI_BUS_ID", (40960, 81920), None,
            id="PCI bus order: by position",
        ),
        pytest.param(
            [None], [A40, A80], "1", "PCI_BUS_ID", (81920,), None,
            id="CUDA_VISIBLE_DEVICES picks nvidia-smi's GPU 1",
        ),
        pytest.param(
            [None, None], [A40, A80], "1,0", "PCI_BUS_ID", (81920, 40960), None,
            id="CUDA_VISIBLE_DEVICES reorders",
        ),
        pytest.param(
            [None], [A40, A80], " 1 , 7, 0", "PCI_BUS_ID", (81920,), None,
            id="CUDA stops at the first invalid entry",
        ),
        pytest.param(
            ["GPU-X", "GPU-X"], [SMALL_A, BIG_A], None, None, (None, None),
            "CUDA numbers GPUs fastest first",
            id="same model, different memory, fastest first: ambiguous",
        ),
        pytest.param(
            ["GPU-X", "GPU-X"], [SMALL_A, BIG_A], "1,0", "pci_bus_id", (16384, 2048), None,
            id="same model, different memory, PCI order",
        ),
        pytest.param(
            [None], [A40, A80], "GPU-8c1f3e2a-1111-2222-3333-444455556666", "PCI_BUS_ID",
            (None,), "names GPUs by UUID",
            id="UUIDs in CUDA_VISIBLE_DEVICES",
        ),
        pytest.param(
            ["NVIDIA A100-SXM4-40GB"], [A40], "MIG-4b2c6d8e-aaaa-bbbb-cccc-ddddeeeeffff", None,
            (None,), "MIG instances",
            id="MIG: the instance is smaller than the GPU",
        ),
        pytest.param(
            ["Tesla T4", "Tesla T4"], [T4_0], None, None, (None, None),
            "TensorFlow sees 2 GPUs but nvidia-smi lists 1",
            id="more TF GPUs than nvidia-smi lines",
        ),
        pytest.param(
            [None], [A40, A80], None, "PCI_BUS_ID", (None,),
            "TensorFlow sees 1 GPU(s) where nvidia-smi gives 2",
            id="count mismatch",
        ),
        pytest.param(
            ["Tesla T4"], [_gpus.SmiGpu(0, "Tesla V100", 16384)], None, None, (None,),
            "TensorFlow's GPU 'Tesla T4' is 'Tesla V100' in nvidia-smi's list",
            id="names disagree",
        ),
        pytest.param(
            ["Tesla T4"], [_gpus.SmiGpu(0, "Tesla T4", None)], None, None, (None,),
            "does not report the memory",
            id="memory N/A",
        ),
    ],
)  # fmt: skip
def test_match_gpus(names, smi, visible, order, memory, reason):
    gpus, why = _gpus.match_gpus(names, smi, visible, order)
    assert tuple(mib for _, mib in gpus) == memory
    assert len(gpus) == len(names)
    if reason is None:
        assert why is None
    else:
        assert reason in why


@pytest.mark.parametrize(
    ("ordinals", "visible", "memory", "reason"),
    [
        ([1], None, (81920,), None),  # TensorFlow left out CUDA device 0 (too old for it)
        ([0], "1,0", (81920,), None),
        ([2], None, (None,), "GPU numbers [2] are not among nvidia-smi's"),
        ([0, 1], None, (None,), "GPU numbers [0, 1] are not among"),
    ],
)
def test_match_gpus_uses_tensorflows_cuda_numbers(ordinals, visible, memory, reason):
    gpus, why = _gpus.match_gpus([None], [A40, A80], visible, "PCI_BUS_ID", ordinals=ordinals)
    assert tuple(mib for _, mib in gpus) == memory
    assert (why is None) if reason is None else (reason in why)


def test_matched_gpus_feed_the_plan():
    gpus, why = _gpus.match_gpus(["Tesla T4"], _gpus.parse_smi("0, Tesla T4, 15360\n"))
    assert mk.plan_replicas(4, gpus, memory_note=why).memory_limit_mib == 3456
    gpus, why = _gpus.match_gpus([None, None], [A40, A80])
    plan = mk.plan_replicas(4, gpus, memory_note=why)
    assert plan.kind == "cpus" and "memory is unknown (CUDA numbers GPUs fastest" in plan.message


@pytest.mark.parametrize("n", [65, 1000])
def test_more_replicas_than_any_lesson_needs_are_refused(n):
    from mirrorkit.devices import MAX_REPLICAS

    assert MAX_REPLICAS == 64
    with pytest.raises(
        ValueError, match=rf"n={n} replicas is more than mirrorkit simulates \(64\)"
    ):
        mk.plan_replicas(n)
    with pytest.raises(ValueError, match="Ask for at most 64"):
        mk.simulate_replicas(n)
    assert mk.plan_replicas(64).replicas == 64
