"""check_cluster_spec and check_partitioner: right answers pass, each usual mistake is named."""

from __future__ import annotations

import copy
import json
import os

import pytest
import tensorflow as tf

from mirrorkit.checks.cluster_spec import check_cluster_spec, check_partitioner

EXPECTED = dict(
    chief="10.0.0.1:2222",
    worker=["10.0.0.2:2222", "10.0.0.3:2222"],
    ps=["10.0.0.4:2222"],
    task=("worker", 1),
)
RIGHT = {
    "cluster": {
        "chief": ["10.0.0.1:2222"],
        "worker": ["10.0.0.2:2222", "10.0.0.3:2222"],
        "ps": ["10.0.0.4:2222"],
    },
    "task": {"type": "worker", "index": 1},
}
LIMIT = 256 * 1024
partitioners = tf.distribute.experimental.partitioners


def changed(edit):
    config = copy.deepcopy(RIGHT)
    edit(config)
    return config


@pytest.mark.parametrize(
    "answer",
    [RIGHT, json.dumps(RIGHT), {"task": RIGHT["task"], "cluster": dict(RIGHT["cluster"])}],
    ids=["a dict", "its JSON text", "keys in another order"],
)
def test_a_right_tf_config_passes_and_leaves_the_environment_as_it_was(answer):
    before = os.environ.get("TF_CONFIG")
    result = check_cluster_spec(answer, **EXPECTED)
    assert result.passed, result.message
    assert "reads task worker 1" in result.message
    assert os.environ.get("TF_CONFIG") == before


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (..., "not attempted"),
        ("{'cluster': {}}", "not JSON"),
        (["10.0.0.1:2222"], "a TF_CONFIG is a dict"),
        ({"cluster": RIGHT["cluster"]}, "no 'task'"),
        (
            changed(lambda c: c["cluster"]["worker"].insert(0, "10.0.0.1:2222")),
            "also in the worker",
        ),
        (changed(lambda c: c["cluster"].update(parameter_server=c["cluster"].pop("ps"))), "'ps'"),
        (changed(lambda c: c["cluster"].update(master=c["cluster"].pop("chief"))), "'chief'"),
        (changed(lambda c: c["cluster"].pop("chief")), 'no "chief"'),
        (changed(lambda c: c["cluster"].pop("ps")), 'no "ps"'),
        (changed(lambda c: c["cluster"].update(ps="10.0.0.4:2222")), "not a list"),
        (changed(lambda c: c["cluster"].update(ps=["10.0.0.4"])), "needs its port"),
        (changed(lambda c: c["cluster"]["worker"].reverse()), "in another order"),
        (changed(lambda c: c["task"].update(index=2)), "counted from 1"),
        (changed(lambda c: c["task"].update(index=0)), "position 1"),
        (changed(lambda c: c["task"].update(type="ps")), "task type is 'ps'"),
        (changed(lambda c: c.update(task="worker 1")), '"type" and "index"'),
    ],
    ids=[
        "blank",
        "python quotes",
        "a list",
        "no task",
        "chief among workers",
        "parameter_server job",
        "master job",
        "no chief",
        "no ps",
        "ps as a string",
        "no port",
        "workers reversed",
        "index from 1",
        "another worker",
        "wrong task type",
        "task as a string",
    ],
)
def test_each_mistake_in_a_tf_config_is_named(answer, words):
    result = check_cluster_spec(answer, **EXPECTED)
    assert not result.passed
    assert words in result.message, result.message


WRONG_CLUSTER_SPEC = [
    pytest.param(
        dict(EXPECTED, chief=["10.0.0.1:2222"]),
        TypeError,
        "chief",
        r"write chief=\"10\.0\.0\.1:2222\"",
        id="chief as a list",
    ),
    pytest.param(
        dict(EXPECTED, worker="10.0.0.2:2222"),
        TypeError,
        "worker",
        r"write worker=\['10\.0\.0\.2:2222'\]",
        id="worker as a string",
    ),
    pytest.param(
        dict(EXPECTED, ps=[]),
        ValueError,
        "ps",
        r"needs a worker and a parameter server",
        id="no ps",
    ),
    pytest.param(
        dict(EXPECTED, ps=["10.0.0.4"]), TypeError, "ps", r"'host:port' strings", id="no port"
    ),
    pytest.param(
        dict(EXPECTED, task="worker 1"),
        TypeError,
        "task",
        r"write task=\('worker', 1\)",
        id="task as a string",
    ),
    pytest.param(
        dict(EXPECTED, task=("worker", 2)),
        ValueError,
        "task",
        r"worker 0\.\.1",
        id="a task outside the cluster",
    ),
    pytest.param(
        dict(EXPECTED, task=("parameter_server", 0)),
        ValueError,
        "task",
        r"jobs are chief 0\.\.0, worker 0\.\.1, ps 0\.\.0",
        id="an unknown job",
    ),
]


@pytest.mark.wrong_inputs("mk.check_cluster_spec")
@pytest.mark.parametrize(("kwargs", "error", "argument", "match"), WRONG_CLUSTER_SPEC)
def test_check_cluster_spec_wrong_inputs(refuses, kwargs, error, argument, match):
    refuses(lambda: check_cluster_spec(RIGHT, **kwargs), error, argument, match)


def split_above(shape, dtype):
    large = shape.num_elements() * dtype.size > LIMIT and shape[0] >= 2
    return [2 if large else 1] + [1] * (shape.rank - 1)


@pytest.mark.parametrize(
    "partitioner",
    [
        partitioners.MinSizePartitioner(min_shard_bytes=LIMIT, max_shards=2),
        partitioners.MaxSizePartitioner(max_shard_bytes=LIMIT, max_shards=2),
        split_above,
    ],
    ids=["MinSizePartitioner", "MaxSizePartitioner", "by hand"],
)
def test_right_partitioners_pass(partitioner):
    result = check_partitioner(partitioner)
    assert result.passed, result.message


def count(measure, rows=True, op=">"):
    def partitioner(shape, dtype):
        size = measure(shape, dtype)
        large = (size > LIMIT if op == ">" else size >= LIMIT) and (shape[0] >= 2 or not rows)
        return [2 if large else 1] + [1] * (shape.rank - 1)

    return partitioner


@pytest.mark.parametrize(
    ("partitioner", "words"),
    [
        (..., "not attempted"),
        (2, "it must be a function"),
        (partitioners.FixedShardsPartitioner(2), "stays whole"),
        (partitioners.MinSizePartitioner(min_shard_bytes=LIMIT // 2, max_shards=2), "stays whole"),
        (partitioners.MinSizePartitioner(min_shard_bytes=LIMIT, max_shards=8), "at most 2"),
        (count(lambda s, d: s.num_elements() * d.size, op=">="), ">, not >="),
        (count(lambda s, d: s.num_elements()), "dtype.size"),
        (count(lambda s, d: s.num_elements() * 4), "dtype.size"),
        (count(lambda s, d: s.num_elements() * d.size, rows=False), "one row"),
        (lambda shape, dtype: 2, "list of ints"),
        (lambda shape, dtype: [1], "one number per axis"),
        (lambda shape, dtype: [1] + [2] * (shape.rank - 1), "only along the first axis"),
        (lambda shape, dtype: 1 / 0, "ZeroDivisionError"),
    ],
    ids=[
        "blank",
        "a number",
        "always two",
        "a smaller limit",
        "eight shards",
        ">=",
        "elements",
        "float32 assumed",
        "one row split",
        "an int",
        "one axis only",
        "last axis",
        "raises",
    ],
)
def test_each_mistake_in_a_partitioner_is_named(partitioner, words):
    result = check_partitioner(partitioner)
    assert not result.passed
    assert words in result.message, result.message


WRONG_PARTITIONER = [
    pytest.param(
        dict(limit_bytes="256K"), TypeError, "limit_bytes", r"write limit_bytes=262144", id="str"
    ),
    pytest.param(dict(limit_bytes=0), ValueError, "limit_bytes", r">= 1, got 0", id="zero"),
    pytest.param(dict(limit_bytes=2.5e5), TypeError, "limit_bytes", r"must be an int", id="float"),
    pytest.param(dict(max_shards=1), ValueError, "max_shards", r">= 2, got 1", id="one shard"),
    pytest.param(dict(max_shards=True), TypeError, "max_shards", r"write max_shards=2", id="bool"),
]


@pytest.mark.wrong_inputs("mk.check_partitioner")
@pytest.mark.parametrize(("kwargs", "error", "argument", "match"), WRONG_PARTITIONER)
def test_check_partitioner_wrong_inputs(refuses, kwargs, error, argument, match):
    refuses(lambda: check_partitioner(split_above, **kwargs), error, argument, match)
