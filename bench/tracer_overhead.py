"""How much does StepTracer slow training? Traced and untraced runs, side by side in one run.

Usage: python bench/tracer_overhead.py [--repeats 5] [--steps 200]

Trains the same model on 4 simulated replicas with ``model.fit`` (the second epoch of
each fit is timed, see fit_time) with and without ``StepTracer.callback()``, and a
custom loop with and without ``StepTracer``, alternating traced and untraced repeats
so machine noise hits both, and prints the ratio of the median times (traced /
untraced). The tracer's one-off all-reduce calibration runs after training and is
reported separately.
"""

from __future__ import annotations

import argparse
import statistics
import time

import mirrorkit as mk

mk.make_reproducible(0)
mk.simulate_replicas(4)

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from mirrorkit.tracing import StepTracer  # noqa: E402

BATCH = 64


def build(strategy):
    with strategy.scope():
        model = keras.Sequential(
            [
                keras.Input((32,)),
                keras.layers.Dense(256, activation="relu"),
                keras.layers.Dense(256, activation="relu"),
                keras.layers.Dense(1),
            ]
        )
        model.compile(keras.optimizers.SGD(0.01), "mse")
    return model


class EpochTimer(keras.callbacks.Callback):
    """Wall time of each epoch; in both runs, so it costs them the same."""

    def on_epoch_begin(self, epoch, logs=None):
        self.start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.last = time.perf_counter() - self.start


def fit_time(model, x, y, callbacks) -> float:
    """Seconds of the second epoch of a 2-epoch fit: Keras re-traces its own train function
    at the start of every fit (a new iterator each time), which the first epoch absorbs."""
    timer = EpochTimer()
    model.fit(
        x, y, batch_size=BATCH, epochs=2, verbose=0, shuffle=False, callbacks=[timer, *callbacks]
    )
    return timer.last


def custom_loop(strategy, model, dataset):
    optimizer = keras.optimizers.SGD(0.01)
    with strategy.scope():
        optimizer.build(model.trainable_variables)

    @tf.function
    def train_step(batch):
        def step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((model(x) - y) ** 2)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
            return loss

        return strategy.run(step, args=batch)

    def run(tracer=None) -> float:
        iterator = iter(strategy.experimental_distribute_dataset(dataset))
        start = time.perf_counter()
        while True:
            try:
                batch = tracer.next(iterator) if tracer else next(iterator)
            except StopIteration:
                break
            if tracer:
                with tracer.step():
                    train_step(batch)
            else:
                train_step(batch)
        return time.perf_counter() - start

    return run


def ratio(traced, plain) -> str:
    t, p = statistics.median(traced), statistics.median(plain)
    return f"median traced {t:.3f} s / untraced {p:.3f} s = {t / p:.4f} ({(t / p - 1) * 100:+.2f}%)"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200, help="steps per run")
    args = parser.parse_args()

    strategy = mk.make_strategy()
    n = BATCH * args.steps
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 32)).astype(np.float32)
    y = rng.normal(size=(n, 1)).astype(np.float32)

    # Keras fit.
    model = build(strategy)
    fit_time(model, x, y, [])  # traces Keras' train function
    fit_time(model, x, y, [StepTracer(strategy).callback()])  # and the traced path's
    plain, traced = [], []
    tracer = StepTracer(strategy)
    for _ in range(args.repeats):
        plain.append(fit_time(model, x, y, []))
        traced.append(fit_time(model, x, y, [tracer.callback()]))
    start = time.perf_counter()
    trace = tracer.result()
    calibration = time.perf_counter() - start
    print(f"model.fit, epoch of {args.steps} steps x {args.repeats} repeats on 4 replicas:")
    print("  " + ratio(traced, plain))
    print(f"  one-off all-reduce calibration after training: {calibration:.3f} s")
    print("\n".join("  " + line for line in str(trace).splitlines()))

    # Custom loop.
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH)
    run = custom_loop(strategy, model, dataset)
    run()
    plain, traced = [], []
    loop_tracer = StepTracer(strategy, model.trainable_variables)
    for _ in range(args.repeats):
        plain.append(run())
        traced.append(run(loop_tracer))
    print(f"custom loop, {args.steps} steps x {args.repeats} repeats on 4 replicas:")
    print("  " + ratio(traced, plain))


if __name__ == "__main__":
    main()
