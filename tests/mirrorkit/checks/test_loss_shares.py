"""A replica's loss division and the SUM of gradients in plain Python, against TensorFlow's.

The same per-example values go through ``strategy.run`` (each replica's loss divided as
chapters 3 and 4 divide it) and ``strategy.reduce``, and through mirrorkit.checks.loss_shares.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

import mirrorkit as mk
from mirrorkit.checks.loss_shares import (
    DIVISIONS,
    divisor,
    example_weights,
    reduce_values,
    replica_losses,
    single_device,
    squared_error_gradients,
)
from tests.conftest import REPLICAS

KERAS_DEFAULT = keras.losses.MeanSquaredError()


def divided(division, per_example, y=None, prediction=None, global_batch=None):
    """A replica's loss in TensorFlow, divided as ``division`` says."""
    n = tf.distribute.get_replica_context().num_replicas_in_sync
    if division == "global batch":
        return tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
    if division == "local mean":
        return tf.reduce_mean(per_example)
    if division == "sum":
        return tf.reduce_sum(per_example)
    keras_default = KERAS_DEFAULT(y[:, None], prediction[:, None])  # 1/N inside strategy.run
    return keras_default if division == "keras default" else keras_default / n


def split(strategy, examples):
    """``examples`` (x, y) split by experimental_distribute_dataset, as TensorFlow and lists."""
    data = tf.data.Dataset.from_tensor_slices(examples).batch(len(examples[0]))
    shares = next(iter(strategy.experimental_distribute_dataset(data)))
    xs, ys = (strategy.experimental_local_results(part) for part in shares)
    return shares, [x.numpy().tolist() for x in xs], [y.numpy().tolist() for y in ys]


@pytest.fixture(scope="module")
def examples():
    rng = np.random.default_rng(3)
    return rng.normal(size=32).astype("float32"), rng.normal(size=32).astype("float32")


@pytest.mark.parametrize("count", [32, 10])  # 8 on each replica; 3, 3, 3, 1 (chapter 4)
@pytest.mark.parametrize("division", list(DIVISIONS))
def test_the_summed_gradient_is_the_strategys(strategy, examples, division, count):
    shares, xs, ys = split(strategy, (examples[0][:count], examples[1][:count]))
    with strategy.scope():
        weight = tf.Variable(0.5)

    def replica_gradient(x, y):
        with tf.GradientTape() as tape:
            prediction = weight * x
            per_example = tf.square(prediction - y)
            loss = divided(division, per_example, y, prediction, global_batch=count)
        return tape.gradient(loss, weight)

    per_replica = tf.function(lambda x, y: strategy.run(replica_gradient, args=(x, y)))(*shares)
    summed = float(strategy.reduce("SUM", per_replica, axis=None))
    gradients = [squared_error_gradients(0.5, x, y) for x, y in zip(xs, ys, strict=True)]
    ours = reduce_values(replica_losses(gradients, division), "SUM")
    assert ours == pytest.approx(summed, rel=1e-5)
    # Each example weighs example_weights in units of one device's 1/B:
    weights = example_weights([len(x) for x in xs], division)
    weighted = sum(w * sum(g) / count for w, g in zip(weights, gradients, strict=True))
    assert weighted == pytest.approx(summed, rel=1e-5)
    if division == "global batch":
        assert summed == pytest.approx(single_device(gradients), rel=1e-5)


@pytest.mark.parametrize("op", ["SUM", "MEAN"])
def test_the_reduced_losses_are_the_strategys(strategy, examples, op):  # chapter 3's shares
    shares, xs, ys = split(strategy, examples)

    def replica_losses_tf(x, y):
        per_example = tf.square(0.5 * x - y)
        return divided("global batch", per_example, global_batch=32), tf.reduce_mean(per_example)

    shares_tf, means_tf = tf.function(lambda x, y: strategy.run(replica_losses_tf, args=(x, y)))(
        *shares
    )
    losses = [
        [(0.5 * x - y) ** 2 for x, y in zip(xr, yr, strict=True)]
        for xr, yr in zip(xs, ys, strict=True)
    ]
    for division, tf_values in (("global batch", shares_tf), ("local mean", means_tf)):
        reduced = float(strategy.reduce(op, tf_values, axis=None))
        assert reduce_values(replica_losses(losses, division), op) == pytest.approx(
            reduced, rel=1e-5
        )
    # SUM of the shares is the mean over the global batch; MEAN of the local means is it too.
    mean = single_device(losses)
    assert reduce_values(replica_losses(losses, "global batch"), "SUM") == pytest.approx(mean)
    assert reduce_values(replica_losses(losses, "local mean"), "MEAN") == pytest.approx(mean)
    assert reduce_values(replica_losses(losses, "global batch"), "MEAN") == pytest.approx(
        mean / REPLICAS
    )


def model_fn():
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input(shape=(8,)), keras.layers.Dense(1)])


@pytest.mark.parametrize(
    ("division", "count", "step"),
    [
        ("local mean", 32, lambda m, x, y: tf.reduce_mean(tf.square(y - m(x, training=True)))),
        ("keras default", 10, lambda m, x, y: KERAS_DEFAULT(y, m(x, training=True))),
    ],
)
def test_the_weights_are_what_check_step_equivalence_measures(strategy, division, count, step):
    rng = np.random.default_rng(0)
    batch = rng.normal(size=(count, 8)).astype("float32"), rng.normal(size=(count, 1))
    batch = batch[0], batch[1].astype("float32")
    report = mk.check_step_equivalence(step, strategy, model_fn, batch, loss="mse")
    assert report.replica_batches, report.message
    sizes = list(report.replica_batches)
    assert example_weights(sizes, division) == pytest.approx(report.example_weights, rel=1e-3)


def test_the_chapters_factors():  # chapter 4: local mean 4, sum 32, Keras 2's advice 0.25
    even = [8] * 4
    assert example_weights(even, "global batch") == [1.0] * 4
    assert example_weights(even, "local mean") == [4.0] * 4
    assert example_weights(even, "sum") == [32.0] * 4
    assert example_weights(even, "keras default") == [1.0] * 4
    assert example_weights(even, "keras default / N") == [0.25] * 4
    assert [round(w, 3) for w in example_weights([3, 3, 3, 1], "keras default")] == [
        0.833,
        0.833,
        0.833,
        2.5,
    ]
    assert example_weights([2, 2, 2, 0], "local mean") == [3.0, 3.0, 3.0, 0.0]


def test_wrong_arguments_are_refused(refuses):
    refuses(lambda: example_weights([8, 8], "mean"), ValueError, "division", "'global batch'")
    refuses(lambda: example_weights([0, 0], "sum"), ValueError, "replica_batches", "at least 1")
    refuses(lambda: divisor("sum", 0, 8, 2), ValueError, "replica_examples", "at least 1")
    refuses(lambda: reduce_values([1.0], "AVG"), ValueError, "op", "'SUM'")
    refuses(lambda: squared_error_gradients(1.0, [1.0], []), ValueError, "ys", "write")
