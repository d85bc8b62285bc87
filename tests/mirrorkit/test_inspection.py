import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.distribute import values as tf_values

import mirrorkit as mk
from tests.conftest import REPLICAS


def replica_id_times(scale):
    context = tf.distribute.get_replica_context()
    return tf.cast(context.replica_id_in_sync_group, tf.float32) * scale


def test_per_replica_result_of_run(strategy):
    table = mk.inspect(strategy.run(replica_id_times, args=(10.0,)))
    assert table.title == f"PerReplica: {REPLICAS} replicas"
    assert [row.replica for row in table.rows] == list(range(REPLICAS))
    assert [row.device for row in table.rows] == [f"CPU:{i}" for i in range(REPLICAS)]
    assert [row.summary for row in table.rows] == [str(10 * i) for i in range(REPLICAS)]
    assert table.in_sync is None  # per-replica values are not meant to agree
    assert table.num_replicas == REPLICAS
    np.testing.assert_array_equal(np.stack(table.arrays), 10.0 * np.arange(REPLICAS))


def test_outputs_of_a_tf_function_name_the_replica_that_made_them(strategy):
    values = tf.function(lambda: strategy.run(replica_id_times, args=(10.0,)))()
    plain = mk.inspect(values)  # TensorFlow reports the calling device for every copy
    assert {row.device for row in plain.rows} == {"CPU:0"}
    assert "Pass the strategy to see each replica's own device" in plain.notes[-1]
    table = mk.inspect(values, strategy=strategy)
    assert [row.device for row in table.rows] == [f"CPU:{i}" for i in range(REPLICAS)]
    assert table.notes[-1].startswith("TensorFlow reports CPU:0 for every copy")
    assert "from the strategy" in table.notes[-1]
    with strategy.scope():
        assert mk.inspect(values).rows[-1].device == f"CPU:{REPLICAS - 1}"


def test_mirrored_variable_in_sync_then_diverged(strategy):
    with strategy.scope():
        variable = tf.Variable([1.0, 2.0])
    table = mk.inspect(variable)
    assert table.title == f"MirroredVariable: {REPLICAS} replicas"
    assert table.in_sync is True
    assert {row.summary for row in table.rows} == {"[1, 2]"}
    assert "in sync" in str(table).splitlines()[1]

    strategy.run(lambda: variable.assign_add(tf.fill([2], replica_id_times(1.0))))
    diverged = mk.inspect(variable)
    assert diverged.in_sync is False
    assert [row.summary for row in diverged.rows][:2] == ["[1, 2]", "[2, 3]"]
    assert "aggregation" in diverged.notes[0]
    assert "NO" in str(diverged)


def test_tolerance_for_in_sync(strategy):
    with strategy.scope():
        variable = tf.Variable(1.0)
    strategy.run(lambda: variable.assign_add(replica_id_times(1e-4)))
    assert mk.inspect(variable).in_sync is False
    assert mk.inspect(variable, atol=1e-3).in_sync is True


def test_sync_on_read_variable_explains_its_aggregation(strategy):
    with strategy.scope():
        counter = tf.Variable(
            0.0,
            synchronization=tf.VariableSynchronization.ON_READ,
            aggregation=tf.VariableAggregation.SUM,
        )
    strategy.run(lambda: counter.assign_add(1.0))
    table = mk.inspect(counter)
    assert table.title.startswith("SyncOnReadVariable")
    assert table.in_sync is None
    assert f"SUM: {REPLICAS}" in table.notes[0]


def test_keras_model_weights_under_strategy(strategy, seeded):
    with strategy.scope():
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="d")], name="m")
    table = mk.inspect(model)
    assert table.title == "Keras model 'm': 2 weights, MirroredVariable"
    assert [row.name for row in table.rows] == ["m/d/kernel", "m/d/bias"]
    assert table.rows[0].device == ", ".join(f"CPU:{i}" for i in range(REPLICAS))
    assert table.rows[0].shape == (3, 2)
    assert table.in_sync is True


def test_keras_model_outside_scope_is_not_distributed(seeded):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    table = mk.inspect(model)
    assert table.title.endswith("not distributed")
    assert table.rows[0].device == "CPU:0"


def test_model_without_weights_says_build_it():
    with pytest.raises(ValueError, match="no weights yet"):
        mk.inspect(keras.Sequential([keras.layers.Dense(2)]))


def test_plain_values_are_one_copy():
    table = mk.inspect(tf.constant([[1, 2], [3, 4]]))
    assert table.title == "tf.Tensor (not distributed): one copy"
    assert table.rows[0].replica is None
    assert table.rows[0].summary == "[[1, 2], [3, 4]]"
    assert "replica" not in str(table).splitlines()[1]


def test_large_tensor_is_summarised():
    table = mk.inspect(tf.range(100, dtype=tf.float32))
    assert table.rows[0].summary == "mean 49.5, min 0, max 99"


def test_nested_structure_names_each_value(strategy):
    with strategy.scope():
        weights = tf.Variable([1.0])
    table = mk.inspect({"ids": strategy.run(replica_id_times, args=(1.0,)), "w": [weights]})
    assert table.title == "2 values"
    assert [row.name for row in table.rows] == ["ids"] * REPLICAS + ["w[0]"] * REPLICAS
    assert table.in_sync is True


def test_html_representation_is_a_table_and_escapes(strategy):
    with strategy.scope():
        model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1, name="a<b")])
    text = mk.inspect(model)._repr_html_()
    assert text.startswith('<div class="mirrorkit-report"')
    assert text.count("<tr>") == 1 + 2
    assert "a&lt;b" in text and "a<b" not in text


def inside_tf_function(x):
    @tf.function
    def inside_graph(x):
        return mk.inspect(x)

    return inside_graph(x)


def per_replica_dataset(strategy):
    return strategy.experimental_distribute_dataset(tf.data.Dataset.range(8).batch(4))


# Each case: call(strategy) makes the learner's call.
WRONG_VALUES = [
    pytest.param(
        lambda s: mk.inspect(np.ones(3)),
        TypeError,
        "value",
        r"got ndarray: wrap it first with tf\.constant",
        id="a NumPy array",
    ),
    pytest.param(
        lambda s: mk.inspect([1.0, 2.0]),
        TypeError,
        "value",
        r"list of plain numbers.*mk\.inspect\(tf\.constant\(\[1\.0, 2\.0\]\)\)",
        id="a list of numbers",
    ),
    pytest.param(
        lambda s: mk.inspect(3.0),
        TypeError,
        "value",
        r"got float: wrap it.*tf\.constant",
        id="a number",
    ),
    pytest.param(
        lambda s: mk.inspect("hello"),
        TypeError,
        "value",
        r"got str: pass a tensor.*tf\.constant",
        id="text",
    ),
    pytest.param(
        lambda s: mk.inspect(object()),
        TypeError,
        "value",
        r"got object: pass a tensor",
        id="any object",
    ),
    pytest.param(
        lambda s: mk.inspect(s),
        TypeError,
        "value",
        r"got MirroredStrategy: a strategy holds no values.*strategy\.run\(fn\)",
        id="the strategy",
    ),
    pytest.param(
        lambda s: mk.inspect(tf.data.Dataset.range(4)),
        TypeError,
        "value",
        r"inspect one batch, next\(iter\(dataset\)\)",
        id="a dataset",
    ),
    pytest.param(
        lambda s: mk.inspect(per_replica_dataset(s)),
        TypeError,
        "value",
        r"got DistributedDataset.*next\(iter\(dataset\)\)",
        id="a distributed dataset",
    ),
    pytest.param(
        lambda s: mk.inspect(replica_id_times),
        TypeError,
        "value",
        r"got function: run the function first, e\.g\. mk\.inspect\(strategy\.run",
        id="the replica function",
    ),
    pytest.param(
        lambda s: mk.inspect(None),
        TypeError,
        "value",
        r"returned nothing: make it return its tensor",
        id="None from strategy.run",
    ),
    pytest.param(
        lambda s: mk.inspect({"loss": 0.5, "ids": s.run(replica_id_times, args=(1.0,))}),
        TypeError,
        "value at loss",
        r"got float: wrap it first with tf\.constant",
        id="a dict holding a number",
    ),
    pytest.param(
        lambda s: mk.inspect([tf.constant(1.0), "oops"]),
        TypeError,
        "value at [1]",
        r"got str: pass a tensor",
        id="a list holding text",
    ),
    pytest.param(
        lambda s: mk.inspect([]),
        ValueError,
        "value",
        r"empty list: pass at least one tensor",
        id="an empty list",
    ),
    pytest.param(
        lambda s: inside_tf_function(tf.constant(1.0)),
        ValueError,
        "value",
        r"symbolic tensor.*call mk\.inspect outside tf\.function",
        id="inside tf.function",
    ),
    pytest.param(
        lambda s: mk.inspect(tf.constant(1.0), atol=-1.0),
        ValueError,
        "atol",
        r"must be >= 0, got -1\.0: write e\.g\. atol=1e-6",
        id="negative atol",
    ),
    pytest.param(
        lambda s: mk.inspect(tf.constant(1.0), atol="0.1"),
        TypeError,
        "atol",
        r"must be a number, got str '0\.1': write e\.g\. atol=",
        id="atol as text",
    ),
]


@pytest.mark.wrong_inputs("mk.inspect")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_VALUES)
def test_wrong_values_get_a_clear_message(refuses, strategy, call, error, argument, match):
    refuses(lambda: call(strategy), error, argument, match)


def test_empty_per_replica():
    with pytest.raises(ValueError, match="PerReplica has no replicas"):
        mk.inspect(tf_values.PerReplica(()))


def test_keras_variables_in_a_list_are_named_by_path(strategy):
    with strategy.scope():
        metric = keras.metrics.Mean(name="train_loss")
    table = mk.inspect(metric.variables)
    assert [row.name for row in table.rows][::REPLICAS] == ["train_loss/total", "train_loss/count"]
    assert {row.kind for row in table.rows} == {"SyncOnReadVariable"}


def test_tables_with_no_rows_still_print():
    from mirrorkit.report.render import html_table, text_table

    assert text_table([("step", []), ("replica", [])]) == ["step  replica"]
    assert "<tbody></tbody>" in html_table([("step", [])])
