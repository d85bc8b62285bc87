"""mk.check_loss_step: numbers fixed for one replica count, NumPy in the step, real errors."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import mirrorkit as mk

REPLICAS = 4  # the session's (tests/conftest.py)
BATCH = 16  # 4 examples per replica
rng = np.random.default_rng(0)
X = rng.normal(size=(BATCH, 3)).astype("float32")
Y = rng.normal(size=(BATCH, 1)).astype("float32")
PER_EXAMPLE = keras.losses.MeanSquaredError(reduction="none")
DEFAULT = keras.losses.MeanSquaredError()


def make_model(penalty=None):
    keras.utils.set_random_seed(0)
    return keras.Sequential(
        [
            keras.Input((3,)),
            keras.layers.Dense(2, kernel_regularizer=penalty),
            keras.layers.Dense(1),
        ]
    )


def _data(model, x, y):
    return tf.reduce_sum(PER_EXAMPLE(y, model(x, training=True)))


FIXED = [
    pytest.param(
        lambda model, x, y: _data(model, x, y) / 32,
        make_model,
        "divides by a fixed 32 where the global batch here is 16",
        id="fixed-global-batch",
    ),
    pytest.param(
        lambda model, x, y: tf.reduce_mean(PER_EXAMPLE(y, model(x, training=True))) / 3,
        make_model,
        "divides by a fixed 3 where there are 4 replicas",
        id="mean-over-fixed-replicas",
    ),
    pytest.param(
        lambda model, x, y: DEFAULT(y, model(x, training=True)) / REPLICAS * 3,
        make_model,
        "multiplies by a fixed 3 where there are 4 replicas",
        id="keras2-advice-times-fixed",
    ),
    pytest.param(
        lambda model, x, y: _data(model, x, y) / BATCH + tf.add_n(model.losses) / 3,
        lambda: make_model("l2"),
        "divides the penalty by a fixed 3 where there are 4 replicas",
        id="penalty-over-fixed-replicas",
    ),
]


@pytest.mark.parametrize(("compute_loss", "model_fn", "named"), FIXED)
def test_a_number_fixed_for_another_replica_count_is_named(strategy, compute_loss, model_fn, named):
    result = mk.check_loss_step(compute_loss, strategy, model_fn, (X, Y))
    assert not result.passed
    assert named in result.message, result.message


def test_the_global_batch_read_from_a_variable_passes(strategy):
    result = mk.check_loss_step(
        lambda m, x, y: _data(m, x, y) / BATCH, strategy, make_model, (X, Y)
    )
    assert result.passed, result


def test_numpy_inside_the_step_is_one_sentence(strategy):
    def compute_loss(model, x, y):
        return tf.constant(np.sum(PER_EXAMPLE(y, model(x, training=True)).numpy())) / BATCH

    result = mk.check_loss_step(compute_loss, strategy, make_model, (X, Y))
    assert not result.passed
    assert result.message.startswith("compute_loss failed: your code turns a tensor into NumPy")
    assert "in user code" not in result.message and "File " not in result.message


@pytest.mark.parametrize("reduce", [np.mean, np.sum], ids=["np.mean", "np.sum"])
def test_a_numpy_reduction_of_the_losses_is_one_sentence(strategy, reduce):
    # Eagerly (the check's probe) NumPy gets values; traced in strategy.run it gets none.
    def compute_loss(model, x, y):
        return reduce(PER_EXAMPLE(y, model(x, training=True))) / BATCH

    result = mk.check_loss_step(compute_loss, strategy, make_model, (X, Y))
    assert not result.passed
    assert result.message.startswith("compute_loss failed: your code turns a tensor into NumPy")
    assert "tf.reduce_mean" in result.message
    assert "in user code" not in result.message and "File " not in result.message


def test_an_error_only_when_traced_names_the_real_error(strategy):
    def compute_loss(model, x, y):
        per_example = PER_EXAMPLE(y, model(x, training=True))
        if not tf.executing_eagerly():  # the check's eager probe passes; strategy.run fails
            per_example = tf.reshape(per_example, [7, 3])
        return tf.reduce_sum(per_example) / BATCH

    result = mk.check_loss_step(compute_loss, strategy, make_model, (X, Y))
    assert not result.passed
    assert "ValueError: Cannot reshape a tensor with 4 elements" in result.message, result.message
    assert "in user code" not in result.message
