"""check_run_steps and check_partitioner_for: right answers pass, each usual mistake is named.

check_run_steps starts a real parameter-server cluster, so only three answers run it here;
the other families run in the grading stage (tests/book/variants/09_the_landscape.py).
"""

from __future__ import annotations

import math

import pytest
import tensorflow as tf

from mirrorkit.checks.parameter_server import check_run_steps
from mirrorkit.checks.partitioner import check_partitioner_for, shards_for

partitioners = tf.distribute.experimental.partitioners
SEEDS = range(6)  # each seed draws another cluster, limit and set of shapes


def run_steps(coordinator, dataset_fn, step, steps):
    batches = iter(coordinator.create_per_worker_dataset(dataset_fn))
    results = [coordinator.schedule(step, args=(batches, i)) for i in range(steps)]
    coordinator.join()
    return [result.fetch() for result in results]


def unfetched(coordinator, dataset_fn, step, steps):
    batches = iter(coordinator.create_per_worker_dataset(dataset_fn))
    return [coordinator.schedule(step, args=(batches, i)) for i in range(steps)]


def dataset_on_the_chief(coordinator, dataset_fn, step, steps):
    batches = iter(dataset_fn())
    return [coordinator.schedule(step, args=(batches, i)).fetch() for i in range(steps)]


def test_run_steps_on_a_real_cluster_passes_and_two_mistakes_are_named():
    result = check_run_steps(run_steps, seed=0)
    assert result.passed, result.message
    assert "steps scheduled on the workers" in result.message
    result = check_run_steps(unfetched, seed=0)
    assert not result.passed and "fetch()" in result.message, result.message
    result = check_run_steps(dataset_on_the_chief, seed=0)
    assert not result.passed, result.message
    assert "create_per_worker_dataset(dataset_fn)" in result.message, result.message


def test_a_chief_that_crashes_in_native_code_is_run_again_once(tmp_path):
    marker = str(tmp_path / "crashed")

    def crashes_once(coordinator, dataset_fn, step, steps):
        import os
        import signal

        if not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGSEGV)  # as TensorFlow's own crash would
        return run_steps(coordinator, dataset_fn, step, steps)

    def always_crashes(coordinator, dataset_fn, step, steps):
        import os
        import signal

        os.kill(os.getpid(), signal.SIGSEGV)

    assert check_run_steps(crashes_once, seed=0).passed
    result = check_run_steps(always_crashes, seed=0)
    assert not result.passed and "SIGSEGV" in result.message, result.message


WRONG_RUN_STEPS = [
    pytest.param(dict(run_steps=3), None, "run_steps", r"write a function", id="a number"),
    pytest.param(dict(run_steps=[1, 2]), None, "run_steps", r"def run_steps\(", id="a list"),
    pytest.param(dict(seed="7"), TypeError, "seed", r"write seed=7", id="seed as text"),
    pytest.param(dict(seed=-1), ValueError, "seed", r">= 0", id="negative seed"),
    pytest.param(dict(timeout=0), ValueError, "timeout", r"timeout=60", id="no time"),
    pytest.param(dict(timeout="60"), TypeError, "timeout", r"timeout=60", id="time as text"),
]


@pytest.mark.wrong_inputs("mk.check_run_steps")
@pytest.mark.parametrize(("kwargs", "error", "argument", "match"), WRONG_RUN_STEPS)
def test_check_run_steps_wrong_inputs(judged, kwargs, error, argument, match):
    kwargs = {"run_steps": ...} | kwargs  # never reaches a cluster
    judged(lambda: check_run_steps(**kwargs), error, argument, match)


def by_hand(cluster, max_shard_bytes):
    def partitioner(shape, dtype):
        rows_per_shard = max(1, max_shard_bytes // (dtype.size * shape[1:].num_elements()))
        shards = min(len(cluster["ps"]), math.ceil(shape[0] / rows_per_shard))
        return [shards] + [1] * (shape.rank - 1)

    return partitioner


def with_a_cluster_spec(cluster, max_shard_bytes):
    servers = tf.train.ClusterSpec(cluster).num_tasks("ps")
    return partitioners.MaxSizePartitioner(max_shard_bytes, max_shards=servers)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "partitioner_for",
    [
        lambda cluster, size: partitioners.MaxSizePartitioner(size, len(cluster["ps"])),
        by_hand,
        with_a_cluster_spec,
    ],
    ids=["MaxSizePartitioner", "by hand", "ClusterSpec"],
)
def test_right_partitioners_pass_for_every_drawn_cluster(partitioner_for, seed):
    result = check_partitioner_for(partitioner_for, seed=seed)
    assert result.passed, result.message


def with_dtype(assumed):
    def partitioner_for(cluster, size):
        rule = partitioners.MaxSizePartitioner(size, len(cluster["ps"]))
        return lambda shape, dtype: rule(shape, assumed)

    return partitioner_for


MISTAKES = [
    (lambda c, size: partitioners.FixedShardsPartitioner(len(c["ps"])), "even those under"),
    (with_dtype(tf.int8), "counts elements, not bytes"),
    (with_dtype(tf.float32), "4 bytes an element"),
    (lambda c, size: partitioners.MaxSizePartitioner(size, len(c["worker"])), "per worker"),
    (lambda c, size: partitioners.MaxSizePartitioner(size), "more shards than the cluster"),
    (lambda c, size: partitioners.MaxSizePartitioner(256 * 1024, len(c["ps"])), "256 KiB"),
    (lambda c, size: partitioners.MinSizePartitioner(size, len(c["ps"])), "whole rows"),
    (lambda c, size: lambda shape, dtype: [2] + [1] * (shape.rank - 1), "shards, not"),
    (
        lambda c, size: (
            lambda shape, dtype: (
                [math.ceil(shape.num_elements() * dtype.size / size)] + [1] * (shape.rank - 1)
            )
        ),
        "more than its 2 rows",
    ),
]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("partitioner_for", "words"),
    MISTAKES,
    ids=[
        "always split",
        "elements",
        "float32 assumed",
        "workers",
        "no cap",
        "the chapter's 256 KiB",
        "MinSizePartitioner",
        "a constant",
        "ceil of bytes, no row limit",
    ],
)
def test_each_partitioner_mistake_is_named_whatever_the_draw(partitioner_for, words, seed):
    result = check_partitioner_for(partitioner_for, seed=seed)
    assert not result.passed
    assert words in result.message, result.message


def test_the_rule_is_tensorflows_max_size_partitioner():
    for dims in [(3, 1025), (2, 3000), (10, 7), (1, 100), (4096, 16)]:
        rule = partitioners.MaxSizePartitioner(4096, max_shards=4)
        assert rule(tf.TensorShape(dims), tf.float32)[0] == shards_for(dims, 4, 4096, 4)


WRONG_PARTITIONER_FOR = [
    pytest.param(
        dict(partitioner_for=4), None, "partitioner_for", r"def partitioner_for\(", id="int"
    ),
    pytest.param(
        dict(partitioner_for=lambda cluster: None),
        None,
        "partitioner_for",
        r"TypeError",
        id="one parameter",
    ),
    pytest.param(
        dict(partitioner_for=lambda cluster, size: 2),
        None,
        "partitioner_for",
        r"return a partitioner",
        id="returns a number",
    ),
    pytest.param(
        dict(partitioner_for=lambda cluster, size: lambda shape, dtype: 2),
        None,
        "partitioner",
        r"list of\s+ints",
        id="partitioner returns an int",
    ),
    pytest.param(dict(seed=1.5), TypeError, "seed", r"write seed=7", id="float seed"),
    pytest.param(dict(seed=-3), ValueError, "seed", r">= 0", id="negative seed"),
]


@pytest.mark.wrong_inputs("mk.check_partitioner_for")
@pytest.mark.parametrize(("kwargs", "error", "argument", "match"), WRONG_PARTITIONER_FOR)
def test_check_partitioner_for_wrong_inputs(judged, kwargs, error, argument, match):
    kwargs = {"partitioner_for": ..., "seed": 0} | kwargs
    judged(lambda: check_partitioner_for(**kwargs), error, argument, match)
