import pytest
import tensorflow as tf

import mirrorkit as mk
from tests.conftest import REPLICAS
from tests.mirrorkit.test_devices import run_fresh


def all_reduce_sum(strategy):
    def fn():
        context = tf.distribute.get_replica_context()
        return context.all_reduce("sum", tf.cast(context.replica_id_in_sync_group, tf.float32))

    return [float(v) for v in strategy.experimental_local_results(strategy.run(fn))]


@pytest.mark.parametrize(
    ("name", "ops_class"),
    [
        ("collective", "CollectiveAllReduce"),
        ("one_device", "ReductionToOneDevice"),
        ("hierarchical_copy", "HierarchicalCopyAllReduce"),
    ],
)
def test_each_runnable_algorithm_gives_a_real_strategy_that_all_reduces(name, ops_class):
    strategy = mk.make_strategy(name)
    assert isinstance(strategy, tf.distribute.MirroredStrategy)
    assert strategy.num_replicas_in_sync == REPLICAS
    assert type(strategy.extended._cross_device_ops).__name__ == ops_class
    total = sum(range(REPLICAS))
    assert all_reduce_sum(strategy) == [total] * REPLICAS


def test_same_request_returns_the_same_strategy(strategy):
    assert mk.make_strategy() is strategy
    assert mk.make_strategy("one_device") is mk.make_strategy("one_device")
    assert mk.make_strategy("one_device") is not strategy


def test_devices_subset(devices):
    strategy = mk.make_strategy(devices=devices[:2])
    assert strategy.num_replicas_in_sync == 2
    assert all_reduce_sum(strategy) == [1.0, 1.0]


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown all_reduce 'ring'.*'collective'.*'nccl'"):
        mk.make_strategy("ring")


def test_empty_devices():
    with pytest.raises(ValueError, match="devices is empty"):
        mk.make_strategy(devices=[])


def test_nccl_without_gpu_fails_at_construction_with_the_reason():
    with pytest.raises(mk.AllReduceUnavailableError) as error:
        mk.make_strategy("nccl")
    message = str(error.value)
    assert "no GPU" in message
    assert "no NcclAllReduce kernel for CPUs" in message
    assert "all_reduce='collective'" in message


def test_every_algorithm_is_described():
    assert set(mk.ALL_REDUCE_ALGORITHMS) == {
        "collective",
        "one_device",
        "hierarchical_copy",
        "nccl",
    }
    assert all(len(text) > 20 for text in mk.ALL_REDUCE_ALGORITHMS.values())


REPRODUCE_COLLISION = """
import mirrorkit as mk
mk.make_reproducible(0)
mk.simulate_replicas(2)
import tensorflow as tf

def reduce_ones(size):
    ctx = tf.distribute.get_replica_context()
    return ctx.all_reduce("sum", tf.ones([size]))

{make}
first.run(reduce_ones, args=(3,))
try:
    second.run(reduce_ones, args=(5,))
    print("RESULT ok")
except tf.errors.InvalidArgumentError as error:
    print("RESULT", "Shape mismatch in the collective instance" in str(error))
"""


def test_two_raw_strategies_collide_but_two_from_make_strategy_do_not():
    # What chapter 1 teaches, checked against the installed TensorFlow: two default
    # MirroredStrategy objects share collective keys; make_strategy's do not.
    raw = run_fresh(
        REPRODUCE_COLLISION.format(
            make="first, second = [tf.distribute.MirroredStrategy() for _ in range(2)]"
        )
    )
    assert "RESULT True" in raw.stdout, raw.stdout + raw.stderr
    cached = run_fresh(
        REPRODUCE_COLLISION.format(
            make="first = tf.distribute.MirroredStrategy(); second = mk.make_strategy()"
        )
    )
    assert "RESULT ok" in cached.stdout, cached.stdout + cached.stderr
