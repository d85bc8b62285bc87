"""One replica count's strategy, model and traced step for the scaling sweep, reused by runs."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable

import numpy as np

from mirrorkit._validate import refuse


def optimizer_maker(optimizer) -> Callable:
    """``optimizer`` (a Keras optimizer's name, or a function of the learning rate) as a
    function of the learning rate that returns a new optimizer; the same name gives the same
    function, so that runs with it share their traced steps."""
    import keras

    write = 'optimizer=keras.optimizers.Adam (the class), or optimizer="adam"'
    if isinstance(optimizer, keras.optimizers.Optimizer):
        refuse(
            "optimizer",
            optimizer,
            must="a name or a function that makes a new optimizer: every replica count "
            "trains with one of its own",
            write=f"{write}, or lambda rate: keras.optimizers.SGD(rate, momentum=0.9)",
        )
    if isinstance(optimizer, str):
        return _named(optimizer.lower())
    if not callable(optimizer):
        refuse("optimizer", optimizer, must="a Keras optimizer's name or class", write=write)
    return optimizer


@functools.cache
def _named(name: str) -> Callable:
    import keras

    try:
        keras.optimizers.get(name)
    except ValueError:
        refuse(
            "optimizer",
            name,
            must="the name of a Keras optimizer",
            write='optimizer="sgd", "adam", "rmsprop" or "adamw"',
            error=ValueError,
        )
    return lambda rate: keras.optimizers.get(
        {"class_name": name, "config": {"learning_rate": rate}}
    )


class Runner:
    """One replica count's strategy, model, optimizer and traced step, reused by runs.

    Tracing the step on eight replicas takes longer than training this chapter's task,
    so runs with the same strategy, ``model_fn``, loss, batch and optimizer share one
    traced step: each run puts back ``model_fn()``'s starting weights and every variable
    of the optimizer as it was built (its step count and its slots), then sets its
    learning rate, so a run starts exactly as on a new model.
    """

    def __init__(self, devices, model_fn, loss_fn, per_replica, make_optimizer):
        import keras
        import tensorflow as tf

        from mirrorkit.strategy import make_strategy

        self.strategy = strategy = make_strategy(devices=devices)
        self.global_batch = global_batch = len(devices) * per_replica
        with strategy.scope():
            model = model_fn()
            if not isinstance(model, keras.Model):
                refuse(
                    "model_fn",
                    must="a function that returns a new Keras model",
                    got=f"one that returned {type(model).__name__}",
                    write="`return model` at its end",
                )
            optimizer = make_optimizer(0.1)
            if not isinstance(optimizer, keras.optimizers.Optimizer):
                refuse(
                    "optimizer",
                    must="a function of the learning rate that returns a new Keras optimizer",
                    got=f"one that returned {type(optimizer).__name__}",
                    write="optimizer=lambda rate: keras.optimizers.SGD(rate, momentum=0.9)",
                )
            optimizer.build(model.trainable_variables)
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss_fn
        self.initial = model.get_weights()
        self.initial_state = [variable.numpy() for variable in optimizer.variables]

        def replica_step(x_r, y_r):
            with tf.GradientTape() as tape:
                per_example = loss_fn(y_r, model(x_r, training=True))
                value = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
            gradients = tape.gradient(value, model.trainable_variables)
            optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
            return value

        def run_step(batch):
            return strategy.reduce("SUM", strategy.run(replica_step, args=batch), axis=None)

        # A new key per runner: TensorFlow warns when one function's code is traced five times.
        self.step = tf.function(functools.partial(run_step), autograph=False)

    def train(self, x, y, epochs, rate_at):
        """Train from the starting weights; the loss of every step, and the final loss."""
        import tensorflow as tf

        self.model.set_weights(self.initial)
        for variable, value in zip(self.optimizer.variables, self.initial_state, strict=True):
            variable.assign(value)
        dataset = (
            tf.data.Dataset.from_tensor_slices((x, y))
            .batch(self.global_batch, drop_remainder=True)
            .repeat(epochs)
        )
        losses, rate = [], None
        for step, batch in enumerate(self.strategy.experimental_distribute_dataset(dataset)):
            if rate_at(step) != rate:
                rate = rate_at(step)
                self.optimizer.learning_rate = rate
            losses.append(float(self.step(batch)))
        prediction = self.model(x, training=False)
        final = float(np.mean(np.asarray(self.loss_fn(tf.convert_to_tensor(y), prediction))))
        return losses, final


# model_fn -> {(devices, loss, per_replica_batch, optimizer): Runner}; forgotten with model_fn.
_RUNNERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def runner_for(devices, model_fn, loss, loss_fn, per_replica, make_optimizer) -> Runner:
    """The :class:`Runner` of these devices, ``model_fn``, loss, batch and optimizer:
    reused, or new."""
    try:
        key = (tuple(devices), loss, per_replica, make_optimizer)
        hash(key)
        runners = _RUNNERS.setdefault(model_fn, {})
    except TypeError:  # an unhashable loss or model_fn: no reuse
        return Runner(devices, model_fn, loss_fn, per_replica, make_optimizer)
    if key not in runners:
        runners[key] = Runner(devices, model_fn, loss_fn, per_replica, make_optimizer)
    return runners[key]
