"""Each worker's batches under the auto-shard policies, in plain Python and in tf.data.

A worker of ``MultiWorkerMirroredStrategy`` makes its pipeline in
``DistributedDataset._create_cloned_datasets_from_dataset`` (tensorflow/python/distribute/
input_lib.py): the dataset rebatched with ``batch_sizes_for_worker``, then
``input_ops.auto_shard_dataset(dataset, num_workers, worker, num_replicas_in_sync)``. The test
runs those same two calls for each worker, one replica per worker, in this one process.
"""

import pytest
import tensorflow as tf
from tensorflow.python.data.experimental.ops import distribute as tf_distribute
from tensorflow.python.distribute import input_ops

from mirrorkit.checks.auto_shard import rebatch_sizes, worker_batches


def tf_worker_batches(dataset, num_workers, worker, policy):
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = getattr(
        tf.data.experimental.AutoShardPolicy, policy
    )
    dataset = dataset.with_options(options)
    batch = tf_distribute.compute_batch_size(dataset)
    sizes = tf_distribute.batch_sizes_for_worker(batch, num_workers, 1, worker)
    dataset = input_ops.auto_shard_dataset(dataset.rebatch(sizes), num_workers, worker, num_workers)
    return [b.numpy().tolist() for b in dataset], sizes.numpy().tolist()


RANGES = [(4, 16, 2), (5, 16, 2), (4, 10, 2), (6, 16, 3), (5, 11, 3), (6, 16, 4), (1, 3, 2)]
RANGES += [(3, 7, 4), (7, 9, 4), (8, 8, 1), (3, 20, 5), (4, 16, 3)]


@pytest.mark.parametrize(("global_batch", "examples", "workers"), RANGES)
@pytest.mark.parametrize("policy", ["AUTO", "DATA", "OFF"])
def test_a_range_dataset_is_cut_as_tf_data_cuts_it(global_batch, examples, workers, policy):
    for worker in range(workers):
        dataset = tf.data.Dataset.range(examples).batch(global_batch)
        measured, sizes = tf_worker_batches(dataset, workers, worker, policy)
        ours = worker_batches(
            list(range(examples)),
            global_batch,
            num_workers=workers,
            worker=worker,
            policy=policy,
        )
        assert ours == measured, (worker, sizes)
        assert rebatch_sizes(global_batch, workers, worker) == sizes


@pytest.fixture(scope="module")
def record_files(tmp_path_factory):
    """Four TFRecord files of 5, 3, 4 and 2 examples: example 100 * f + i in file f."""
    folder = tmp_path_factory.mktemp("shards")
    files = []
    for f, count in enumerate([5, 3, 4, 2]):
        path = folder / f"part-{f}.tfrecord"
        with tf.io.TFRecordWriter(str(path)) as writer:
            for i in range(count):
                writer.write(str(100 * f + i).encode())
        files.append((str(path), [100 * f + i for i in range(count)]))
    return files


@pytest.mark.parametrize(("global_batch", "workers", "count"), [(4, 2, 3), (3, 3, 3), (2, 2, 4)])
@pytest.mark.parametrize("policy", ["AUTO", "FILE", "DATA", "OFF"])
def test_files_are_cut_as_tf_data_cuts_them(record_files, global_batch, workers, count, policy):
    paths, contents = zip(*record_files[:count], strict=True)
    for worker in range(workers):
        dataset = tf.data.TFRecordDataset(list(paths))
        dataset = dataset.map(lambda s: tf.strings.to_number(s, tf.int64)).batch(global_batch)
        measured, _ = tf_worker_batches(dataset, workers, worker, policy)
        ours = worker_batches(
            files=contents,
            global_batch=global_batch,
            num_workers=workers,
            worker=worker,
            policy=policy,
        )
        assert ours == measured, worker


def test_fewer_files_than_workers_fail_in_tf_data_and_are_refused_here(record_files, refuses):
    paths, contents = zip(*record_files[:3], strict=True)
    dataset = tf.data.TFRecordDataset(list(paths)).batch(4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Could not apply FILE based"):
        tf_worker_batches(dataset, 4, 0, "FILE")
    refuses(
        lambda: worker_batches(files=contents, num_workers=4, worker=0, policy="FILE"),
        ValueError,
        "files",
        "policy='DATA'",
    )


def test_the_chapters_cluster_output():  # chapter 6, two workers, range(16).batch(4)
    printed = {
        ("DATA", 0): [[0, 1], [4, 5], [8, 9], [12, 13]],
        ("DATA", 1): [[2, 3], [6, 7], [10, 11], [14, 15]],
        ("OFF", 0): [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11], [12, 13], [14, 15]],
        ("OFF", 1): [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11], [12, 13], [14, 15]],
    }
    for (policy, worker), batches in printed.items():
        got = worker_batches(list(range(16)), 4, num_workers=2, worker=worker, policy=policy)
        assert got == batches


def test_wrong_arguments_are_refused(refuses):
    refuses(
        lambda: worker_batches([1, 2], 2, num_workers=2, worker=0, policy="FILES"),
        ValueError,
        "policy",
        "'DATA'",
    )
    refuses(
        lambda: worker_batches([1, 2], 2, num_workers=2, worker=0, policy="FILE"),
        ValueError,
        "policy",
        "'DATA'",
    )
    refuses(lambda: worker_batches([1], 2, num_workers=2, worker=2), ValueError, "worker", "1")
    refuses(lambda: worker_batches(num_workers=2, worker=0), ValueError, "examples", "files")
