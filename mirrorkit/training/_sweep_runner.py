"""One replica count's strategy, model and traced step for the scaling sweep, reused by runs."""

from __future__ import annotations

import functools
import weakref

import numpy as np

from mirrorkit._validate import refuse


class Runner:
    """One replica count's strategy, model, SGD optimizer and traced step, reused by runs.

    Tracing the step on eight replicas takes longer than training this chapter's task,
    so runs with the same strategy, ``model_fn``, loss and batch share one traced step:
    each run puts back ``model_fn()``'s starting weights, sets the optimizer's step
    count to 0 and its learning rate, so a run starts exactly as on a new model.
    """

    def __init__(self, devices, model_fn, loss_fn, per_replica):
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
            optimizer = keras.optimizers.SGD(0.1)
            optimizer.build(model.trainable_variables)
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss_fn
        self.initial = model.get_weights()

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
        self.optimizer.iterations.assign(0)
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


# model_fn -> {(devices, loss, per_replica_batch): Runner}; forgotten with model_fn.
_RUNNERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def runner_for(devices, model_fn, loss, loss_fn, per_replica) -> Runner:
    """The :class:`Runner` of these devices, ``model_fn``, loss and batch: reused, or new."""
    try:
        key = (tuple(devices), loss, per_replica)
        hash(key)
        runners = _RUNNERS.setdefault(model_fn, {})
    except TypeError:  # an unhashable loss or model_fn: no reuse
        return Runner(devices, model_fn, loss_fn, per_replica)
    if key not in runners:
        runners[key] = Runner(devices, model_fn, loss_fn, per_replica)
    return runners[key]
