import logging
import os
import random

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.framework import config as tf_config

import mirrorkit as mk
from mirrorkit.reproducibility import is_log_noise
from tests.mirrorkit.test_devices import run_fresh

# Start the child with TensorFlow's chattiest settings: make_reproducible must win.
NOISY_ENV = """
import os
os.environ.update(TF_CPP_MIN_LOG_LEVEL="0", TF_ENABLE_ONEDNN_OPTS="1")
"""


def draw():
    return random.random(), float(np.random.rand()), float(tf.random.uniform([]))


def test_same_seed_same_numbers_everywhere():
    mk.make_reproducible(123)
    first = draw()
    mk.make_reproducible(123)
    assert draw() == first
    mk.make_reproducible(124)
    assert draw() != first


def test_sets_determinism_and_quiet_loggers():
    assert mk.make_reproducible(0) == 0
    assert tf_config.is_op_determinism_enabled()
    assert logging.getLogger("tensorflow").level == logging.WARNING  # warnings stay visible
    assert os.environ["TF_ENABLE_ONEDNN_OPTS"] == "0"


WRONG_SEEDS = [
    pytest.param(
        dict(seed=1.5),
        TypeError,
        "seed",
        r"must be an int, got float 1\.5: pass a whole",
        id="a float",
    ),
    pytest.param(
        dict(seed="1"), TypeError, "seed", r"got str '1'.*make_reproducible\(42\)", id="text"
    ),
    pytest.param(
        dict(seed=None),
        TypeError,
        "seed",
        r"got NoneType None.*make_reproducible\(42\)",
        id="None for a random seed",
    ),
    pytest.param(dict(seed=False), TypeError, "seed", r"must be an int, got bool", id="a bool"),
    pytest.param(
        dict(seed=-1),
        ValueError,
        "seed",
        r"between 0 and 4294967295, got -1: pick a number in that range",
        id="negative",
    ),
    pytest.param(
        dict(seed=2**32),
        ValueError,
        "seed",
        r"between 0 and 4294967295.*pick a number",
        id="too large",
    ),
    pytest.param(
        dict(seed=0, quiet="no"), TypeError, "quiet", r"write quiet=False", id="quiet as text"
    ),
]


@pytest.mark.wrong_inputs("mk.make_reproducible")
@pytest.mark.parametrize(("kwargs", "error", "argument", "match"), WRONG_SEEDS)
def test_wrong_seeds_get_a_clear_message(refuses, kwargs, error, argument, match):
    refuses(lambda: mk.make_reproducible(**kwargs), error, argument, match)


def test_a_fresh_process_prints_no_tensorflow_noise():
    result = run_fresh(
        NOISY_ENV
        + """
import mirrorkit as mk
mk.make_reproducible(0)
mk.simulate_replicas(2)
import tensorflow as tf
strategy = mk.make_strategy()
strategy.run(lambda: tf.distribute.get_replica_context().all_reduce("sum", tf.ones([2])))
print("done")
"""
    )
    assert result.returncode == 0, result.stderr
    # Only simulate_replicas's own line (where the replicas run) and the script's.
    first, *rest = result.stdout.splitlines()
    assert first.startswith("2 replicas on ")
    assert rest == ["done"]
    # No log noise; TensorFlow's warning about this code (strategy.run called eagerly) stays.
    assert result.stderr.splitlines() == [
        "WARNING:tensorflow:Using MirroredStrategy eagerly has significant overhead currently. "
        "We will be working on improving this in the future, but for now please wrap "
        "`call_for_each_replica` or `experimental_run` or `run` inside a tf.function to get the "
        "best performance."
    ]


def test_without_make_reproducible_the_noise_is_there():
    # The control for the test above: TensorFlow does print at start-up here.
    result = run_fresh(NOISY_ENV + "import tensorflow as tf\ntf.config.list_physical_devices()\n")
    assert result.returncode == 0
    assert result.stderr != ""


@pytest.mark.parametrize(
    ("line", "noise"),
    [
        ("WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
         True),
        ("I0000 00:00:1795427009.422366   28804 grpc_server_lib.cc:466] Started server with "
         "target: grpc://127.0.0.1:56357", True),
        ("W0000 00:00:1795427009.4 1 cuda_executor.cc:1] no GPU", True),
        ("E0000 00:00:1795427009.422366   28804 coordination_service.cc:9] heartbeat lost", False),
        ("I printed this myself", False),
        ("worker 0 saw 3.0", False),
        ("Traceback (most recent call last):", False),
    ],
)  # fmt: skip
def test_only_tensorflow_info_and_warning_lines_count_as_log_noise(line, noise):
    assert is_log_noise(line) is noise
