"""The book's custom-loop pattern works with Keras's common optimizers, as `fit` does.

A learner's first change to chapter 3's loop is the optimizer. Built in the scope before the
first traced step (as the chapter teaches), each optimizer below must train exactly as
`model.fit` does; not built, each stateful one must still fail the way chapter 3 shows.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

OPTIMIZERS = {
    "SGD": lambda: keras.optimizers.SGD(0.05),
    "SGD with momentum": lambda: keras.optimizers.SGD(0.05, momentum=0.9),
    "Adam": lambda: keras.optimizers.Adam(0.01),
    "AdamW": lambda: keras.optimizers.AdamW(0.01),
    "RMSprop": lambda: keras.optimizers.RMSprop(0.01),
    "Adagrad": lambda: keras.optimizers.Adagrad(0.05),
    "Nadam": lambda: keras.optimizers.Nadam(0.01),
}
STATELESS = {"SGD"}
# What Keras's optimizers do under a strategy, not mirrorkit: once per TensorFlow and Keras.
pytestmark = pytest.mark.per_keras
EPOCHS = 2


def dataset(strategy):
    global_batch = 4 * strategy.num_replicas_in_sync
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4 * global_batch, 5)).astype("float32")
    y = x @ rng.normal(size=(5, 1)).astype("float32")
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(global_batch), global_batch


def make_model():
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((5,)), keras.layers.Dense(3), keras.layers.Dense(1)])


def train_step(strategy, model, optimizer, global_batch):
    per_example_mse = keras.losses.MeanSquaredError(reduction="none")

    def replica_step(x, y):
        with tf.GradientTape() as tape:
            per_example = per_example_mse(y, model(x, training=True))
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))

    return tf.function(lambda batch: strategy.run(replica_step, args=batch))


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_the_custom_loop_trains_as_fit_does(strategy, name):
    data, global_batch = dataset(strategy)
    with strategy.scope():
        fitted = make_model()
        fitted.compile(optimizer=OPTIMIZERS[name](), loss="mse")
        looped = make_model()
        optimizer = OPTIMIZERS[name]()
        optimizer.build(looped.trainable_variables)  # before the first traced step
    fitted.fit(data, epochs=EPOCHS, shuffle=False, verbose=0)
    step = train_step(strategy, looped, optimizer, global_batch)
    for _ in range(EPOCHS):
        for batch in strategy.experimental_distribute_dataset(data):
            step(batch)
    assert int(optimizer.iterations.numpy()) == int(fitted.optimizer.iterations.numpy()) > 0
    for loop_weight, fit_weight in zip(looped.get_weights(), fitted.get_weights(), strict=True):
        np.testing.assert_allclose(loop_weight, fit_weight, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(set(OPTIMIZERS) - STATELESS))
def test_a_stateful_optimizer_not_built_fails_its_first_traced_step(strategy, name):
    """Chapter 3's trap (keras-team/keras#23085), for every stateful optimizer above."""
    data, global_batch = dataset(strategy)
    with strategy.scope():
        model = make_model()
        optimizer = OPTIMIZERS[name]()
    step = train_step(strategy, model, optimizer, global_batch)
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="You must feed a value for placeholder"
    ):
        step(next(iter(strategy.experimental_distribute_dataset(data))))
