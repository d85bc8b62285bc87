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
    with pytest.raises(ValueError, match="atol must be >= 0"):
        mk.inspect(variable, atol=-1.0)


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


@pytest.mark.parametrize("bad", ["hello", 3.0, np.ones(3), object()])
def test_non_tensorflow_values_are_rejected_with_advice(bad):
    with pytest.raises(TypeError, match="takes TensorFlow values.*tf.constant"):
        mk.inspect(bad)


def test_bad_value_inside_a_structure_is_located():
    with pytest.raises(TypeError, match=r"at \[1\]"):
        mk.inspect([tf.constant(1.0), "oops"])


def test_empty_structure_and_empty_per_replica():
    with pytest.raises(ValueError, match="empty structure"):
        mk.inspect([])
    with pytest.raises(ValueError, match="PerReplica has no replicas"):
        mk.inspect(tf_values.PerReplica(()))


def test_symbolic_tensor_inside_tf_function():
    @tf.function
    def inside_graph(x):
        return mk.inspect(x)

    with pytest.raises(ValueError, match="outside tf.function"):
        inside_graph(tf.constant(1.0))


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
