"""How a batch is split across replicas, as TensorFlow's distributed dataset really splits it."""

import pytest
import tensorflow as tf

from mirrorkit.checks.batch_split import distributed_steps, replica_batch_sizes
from tests.conftest import REPLICAS


@pytest.mark.parametrize(("global_batch", "examples"), [(8, 8), (10, 15), (6, 6), (13, 17), (2, 3)])
def test_replica_batch_sizes_are_what_the_strategy_delivers(strategy, global_batch, examples):
    dataset = tf.data.Dataset.range(examples).batch(global_batch)
    delivered = [
        [int(tf.size(part)) for part in strategy.experimental_local_results(element)]
        for element in strategy.experimental_distribute_dataset(dataset)
    ]
    batches = [min(global_batch, examples - start) for start in range(0, examples, global_batch)]
    assert delivered == [replica_batch_sizes(size, REPLICAS) for size in batches]
    assert len(delivered) == distributed_steps(len(batches), REPLICAS, per_replica_input=False)


def test_wrong_arguments_are_refused():
    with pytest.raises(TypeError, match="num_replicas must be an int"):
        replica_batch_sizes(8, 4.0)
    with pytest.raises(ValueError, match="examples must be an int of at least 0"):
        replica_batch_sizes(-1, 4)
