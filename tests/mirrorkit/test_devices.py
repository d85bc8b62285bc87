import subprocess
import sys
import textwrap

import pytest
import tensorflow as tf

import mirrorkit as mk
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


def test_different_count_after_start_says_restart():
    with pytest.raises(mk.ReplicaSetupError) as error:
        mk.simulate_replicas(REPLICAS + 1)
    message = str(error.value)
    assert f"already started with {REPLICAS} CPU device(s)" in message
    assert "Restart the kernel" in message
    assert f"simulate_replicas({REPLICAS + 1})" in message


@pytest.mark.parametrize("bad", [0, -3])
def test_count_below_one_is_a_value_error(bad):
    with pytest.raises(ValueError, match="at least 1 replica"):
        mk.simulate_replicas(bad)


@pytest.mark.parametrize("bad", [2.0, "4", None, True])
def test_count_must_be_an_int(bad):
    with pytest.raises(TypeError, match="must be an int"):
        mk.simulate_replicas(bad)


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


def test_replica_devices_rejects_non_strategies():
    with pytest.raises(TypeError, match="tf.distribute.Strategy"):
        mk.replica_devices("MirroredStrategy")
