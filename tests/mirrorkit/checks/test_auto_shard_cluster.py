"""worker_batches against a real two-worker MultiWorkerMirroredStrategy (mk.LocalCluster).

tests/mirrorkit/checks/test_auto_shard.py runs each worker's tf.data pipeline in this process;
here the workers are separate processes that loop over ``experimental_distribute_dataset``
together, as chapter 6 does. One run holds every case that trains; each case where TensorFlow
fails gets its own run (a worker that fails leaves the other waiting in a collective).
What the cluster adds: the loop runs as many steps as the worker with the most local batches
has, and a worker with none left gets an empty batch at each of those steps.
"""

from __future__ import annotations

import pytest

import mirrorkit as mk
from mirrorkit.checks.auto_shard import worker_batches

WORKERS = 2
FILE_SIZES = [5, 3, 4]  # the lab's three files; example 100 * f + i is line i of file f


def epoch(context, cases):
    """Each case's local batches on this worker, and the examples its pipeline read."""
    import tensorflow as tf

    strategy = context.strategy
    results = []
    for policy, paths, examples, global_batch in cases:
        read = tf.Variable(0, dtype=tf.int64)  # counts what the pipeline reads, before batching

        def count(example, read=read):
            read.assign_add(1)
            return example

        if paths is None:
            dataset = tf.data.Dataset.range(examples)
        else:
            lines = tf.data.TextLineDataset(paths)
            dataset = lines.map(lambda line: tf.strings.to_number(line, tf.int64))
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = getattr(
            tf.data.experimental.AutoShardPolicy, policy
        )
        dataset = dataset.map(count).batch(global_batch).with_options(options)
        batches = []
        for batch in strategy.experimental_distribute_dataset(dataset):
            for local in strategy.experimental_local_results(batch):
                batches.append(local.numpy().tolist())
        results.append((batches, int(read.numpy())))
    return results


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Text files of FILE_SIZES lines, and their examples."""
    folder = tmp_path_factory.mktemp("auto-shard")
    paths, contents = [], []
    for f, size in enumerate(FILE_SIZES):
        contents.append([100 * f + i for i in range(size)])
        path = folder / f"part-{f}.txt"
        path.write_text("".join(f"{example}\n" for example in contents[-1]))
        paths.append(str(path))
    return paths, contents


@pytest.fixture(scope="module")
def cluster():
    return mk.LocalCluster(WORKERS, echo=False)


def padded(per_worker):
    """Each worker's batches, with an empty one per step where it has none left."""
    steps = max(len(batches) for batches in per_worker)
    return [batches + [[]] * (steps - len(batches)) for batches in per_worker]


def test_each_worker_gets_what_worker_batches_says(cluster, files):
    paths, contents = files
    cases = [(p, None, 16, 4) for p in ("DATA", "OFF", "AUTO")]  # chapter 6's setting
    cases += [(p, None, 11, 5) for p in ("DATA", "OFF", "AUTO")]  # uneven, with a short batch
    cases += [(p, paths, None, 4) for p in ("FILE", "AUTO", "DATA", "OFF")]
    run = cluster.run(epoch, args=(cases,), timeout=240)
    for number, (policy, case_paths, examples, global_batch) in enumerate(cases):
        data = {"files": contents} if case_paths else {"examples": list(range(examples))}
        ours = [
            worker_batches(
                global_batch=global_batch, num_workers=WORKERS, worker=w, policy=policy, **data
            )
            for w in range(WORKERS)
        ]
        measured = [run.results[w][number][0] for w in range(WORKERS)]
        assert measured == padded(ours), (policy, case_paths is not None, examples)
        reads = [run.results[w][number][1] for w in range(WORKERS)]
        if case_paths and policy in ("FILE", "AUTO"):  # worker w reads files w, w + 2, ...
            mine = [sum(FILE_SIZES[w::WORKERS]) for w in range(WORKERS)]
            assert reads == mine == [9, 3]
        else:  # DATA reads everything and keeps its share; OFF keeps everything
            assert reads == [sum(FILE_SIZES) if case_paths else examples] * WORKERS
    chapter = [run.results[w][0][0] for w in range(WORKERS)]
    assert chapter == [[[0, 1], [4, 5], [8, 9], [12, 13]], [[2, 3], [6, 7], [10, 11], [14, 15]]]
    uneven_file = [run.results[w][6][0] for w in range(WORKERS)]  # FILE: 5 steps on both
    assert uneven_file == [
        [[0, 1], [2, 3], [4, 200], [201, 202], [203]],
        [[100, 101], [102], [], [], []],
    ]


@pytest.mark.parametrize("policy", ["FILE", "AUTO"])
def test_fewer_files_than_workers_fail_on_the_cluster_as_worker_batches_refuses(
    cluster, files, policy, refuses
):
    paths, contents = files
    with pytest.raises(mk.WorkerFailedError, match="Could not apply FILE based sharding"):
        cluster.run(epoch, args=([(policy, paths[:1], None, 4)],), timeout=120)
    refuses(
        lambda: worker_batches(files=contents[:1], num_workers=WORKERS, worker=0, policy=policy),
        ValueError,
        "files",
        "policy='DATA'",
    )
