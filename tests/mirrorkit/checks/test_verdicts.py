import tensorflow as tf

import mirrorkit as mk
from tests.conftest import REPLICAS


def replica_id():
    return tf.distribute.get_replica_context().replica_id_in_sync_group


def test_not_attempted_placeholders(strategy):
    for result in (
        mk.check_mirrored(..., strategy),
        mk.check_per_replica(..., strategy, expected=[0] * REPLICAS),
        mk.check_all_reduced(..., strategy, expected=1.0),
    ):
        assert not result
        assert repr(result).startswith("NOT YET: not attempted")


def test_check_mirrored(strategy):
    with strategy.scope():
        good = tf.Variable(0.0)
        on_read = tf.Variable(
            0.0,
            synchronization=tf.VariableSynchronization.ON_READ,
            aggregation=tf.VariableAggregation.SUM,
        )
    assert mk.check_mirrored(good, strategy)
    assert repr(mk.check_mirrored(good, strategy)) == (
        f"PASS: a MirroredVariable with {REPLICAS} identical copies."
    )
    outside = mk.check_mirrored(tf.Variable(0.0), strategy)
    assert not outside and "with strategy.scope()" in outside.message
    assert "SyncOnReadVariable" in mk.check_mirrored(on_read, strategy).message
    assert "expected a tf.Variable" in mk.check_mirrored(3, strategy).message
    two = mk.make_strategy(devices=mk.replica_devices(strategy)[:2])
    wrong_strategy = mk.check_mirrored(good, two)
    assert f"it has {REPLICAS} copies but the strategy has 2 replicas" in wrong_strategy.message


def test_check_mirrored_diverged(strategy):
    with strategy.scope():
        variable = tf.Variable(0.0)
    strategy.run(lambda: variable.assign_add(tf.cast(replica_id(), tf.float32)))
    result = mk.check_mirrored(variable, strategy)
    assert not result and "copies differ" in result.message


def test_check_per_replica(strategy):
    squares = strategy.run(lambda: tf.cast(replica_id() * replica_id(), tf.float32))
    expected = [i * i for i in range(REPLICAS)]
    assert mk.check_per_replica(squares, strategy, expected=expected)
    wrong = mk.check_per_replica(squares, strategy, expected=[i for i in range(REPLICAS)])
    assert not wrong and wrong.message == "replica 2 holds 4, expected 2."
    not_distributed = mk.check_per_replica(tf.constant(1.0), strategy, expected=expected)
    assert "compute it with strategy.run" in not_distributed.message
    assert "got str" in mk.check_per_replica("x", strategy, expected=expected).message


def test_check_per_replica_wrong_expected_length(strategy):
    import pytest

    with pytest.raises(ValueError, match="expected has 1 values for"):
        mk.check_per_replica(tf.constant(1.0), strategy, expected=[1])


def test_check_all_reduced(strategy):
    def total_of_ids_plus_one():
        context = tf.distribute.get_replica_context()
        mine = tf.cast(context.replica_id_in_sync_group + 1, tf.float32)
        return context.all_reduce(tf.distribute.ReduceOp.SUM, mine)

    n = REPLICAS
    result = mk.check_all_reduced(strategy.run(total_of_ids_plus_one), strategy, n * (n + 1) / 2)
    assert repr(result) == f"PASS: all {n} replicas hold the all-reduced value {n * (n + 1) // 2}."
    no_reduce = strategy.run(lambda: tf.cast(replica_id() + 1, tf.float32))
    assert not mk.check_all_reduced(no_reduce, strategy, n * (n + 1) / 2)


def test_html_of_a_result():
    assert "<strong>PASS</strong>" in mk.CheckResult(True, "x")._repr_html_()
    assert "&lt;b&gt;" in mk.CheckResult(False, "<b>")._repr_html_()


def _model_fn():
    import keras

    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, name="check_loss_dense")])


def test_check_loss_step_passes_the_right_loss_and_names_the_wrong_one(strategy):
    import keras
    import numpy as np

    rng = np.random.default_rng(0)
    batch = (rng.normal(size=(8, 3)).astype("float32"), rng.normal(size=(8, 1)).astype("float32"))

    def right(model, x, y):
        per_example = keras.losses.mean_squared_error(y, model(x, training=True))
        return tf.nn.compute_average_loss(per_example, global_batch_size=8)

    def local_mean(model, x, y):
        return tf.reduce_mean(tf.square(y - model(x, training=True)))

    assert mk.check_loss_step(right, strategy, _model_fn, batch)
    wrong = mk.check_loss_step(local_mean, strategy, _model_fn, batch)
    assert not wrong and f"{REPLICAS}" in wrong.message
    assert repr(mk.check_loss_step(..., strategy, _model_fn, batch)).startswith("NOT YET")
    broken = mk.check_loss_step(lambda model, x, y: None, strategy, _model_fn, batch)
    assert not broken and "compute_loss" in broken.message
