"""How much does the live training view slow ``model.fit``? Both measured in one run.

Usage: python bench/live_view.py [--seconds 8] [--repeats 2]

Trains the same model on 4 simulated replicas with and without LiveTrainingCallback,
alternating the two so that machine noise hits both, and prints the ratio of the median
fit times (with view / without) and how many view updates per second the callback made.
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

from mirrorwidgets import LiveTrainingCallback, LiveTrainingHook  # noqa: E402

BATCH = 64
STEPS_PER_EPOCH = 400  # long epochs: Keras spends ~1 s setting up each epoch's iterator


class Baseline(keras.callbacks.Callback):
    """Same per-batch hooks as the live view, doing nothing: isolates the view's own cost."""

    def on_train_batch_begin(self, batch, logs=None):
        pass

    def on_train_batch_end(self, batch, logs=None):
        pass


def build(strategy):
    with strategy.scope():
        model = keras.Sequential(
            [
                keras.Input((32,)),
                keras.layers.Dense(64, activation="relu"),
                keras.layers.Dense(64, activation="relu"),
                keras.layers.Dense(1),
            ]
        )
        model.compile(keras.optimizers.SGD(0.01), "mse")
    return model


def fit(model, x, y, epochs, callbacks):
    start = time.perf_counter()
    model.fit(x, y, batch_size=BATCH, epochs=epochs, verbose=0, shuffle=False, callbacks=callbacks)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.5, help="target length of one fit")
    parser.add_argument("--repeats", type=int, default=5, help="fits of each kind")
    args = parser.parse_args()

    strategy = mk.make_strategy()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(BATCH * STEPS_PER_EPOCH, 32)).astype("float32")
    y = rng.normal(size=(BATCH * STEPS_PER_EPOCH, 1)).astype("float32")
    model = build(strategy)
    probe = (x[:BATCH], y[:BATCH])

    # Warm up: trace the train step and the probe once, and size the fits.
    fit(model, x, y, 1, [LiveTrainingCallback(probe)])
    epoch = fit(model, x, y, 1, [])
    epochs = max(1, round(args.seconds / epoch))
    steps = epochs * len(x) // BATCH
    print(f"{steps} steps per fit ({epoch / STEPS_PER_EPOCH * 1000:.1f} ms per step), 4 replicas")

    plain, hooked, viewed, rates, overheads, costs = [], [], [], [], [], []
    for _ in range(args.repeats):
        plain.append(fit(model, x, y, epochs, []))
        hooked.append(fit(model, x, y, epochs, [Baseline()]))
        live = LiveTrainingCallback(probe)
        viewed.append(fit(model, x, y, epochs, [live]))
        rates.append(live.updates / viewed[-1])
        overheads.append(live.throttle.overhead)
        costs.append(live.throttle.spent / max(live.updates, 1))

    # Each pair ran back to back; the median pair ratio resists the noise of a busy machine.
    ratio = statistics.median(v / p for v, p in zip(viewed, plain, strict=True))
    print(f"fit without view: {', '.join(f'{t:.2f}s' for t in plain)}")
    print(f"fit, no-op callback: {', '.join(f'{t:.2f}s' for t in hooked)}")
    print(f"fit with view:    {', '.join(f'{t:.2f}s' for t in viewed)}")
    print(f"ratio (with view / without), median of pairs: {ratio:.3f}")
    print(f"ratio of the fastest fits (with view / without): {min(viewed) / min(plain):.3f}")
    noop = statistics.median(v / h for v, h in zip(viewed, hooked, strict=True))
    print(f"ratio (with view / no-op callback), median of pairs: {noop:.3f}")
    print(f"view updates per second: {statistics.median(rates):.1f}")
    print(f"share of fit time spent updating the view: {statistics.median(overheads):.1%}")
    cost = statistics.median(costs)
    print(
        f"one update (probe + grid + plot every 2 s) costs {cost * 1000:.1f} ms, so the 5% "
        f"budget allows {0.05 / cost:.1f} updates/s (the default min_interval caps it at "
        f"{1 / LiveTrainingHook().throttle.min_interval:.1f}/s)"
    )

    custom_loop(strategy, model, x, y, args.seconds)


def custom_loop(strategy, model, x, y, seconds: float) -> None:
    """The hook in a custom loop: real per-replica losses from strategy.run, fast steps."""
    import tensorflow as tf

    batch = next(
        iter(
            strategy.experimental_distribute_dataset(
                tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH)
            )
        )
    )
    optimizer = keras.optimizers.SGD(0.001)

    @tf.function
    def train_step(inputs):
        def replica_step(bx, by):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(bx, training=True) - by))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
            return loss, tf.linalg.global_norm(grads)

        return strategy.run(replica_step, args=inputs)

    def run(steps, hook):
        start = time.perf_counter()
        for _ in range(steps):
            loss, norm = train_step(batch)
            if hook is not None:
                hook.step(loss, norm)
        float(strategy.reduce("SUM", loss, axis=None))  # wait for the last step
        return time.perf_counter() - start

    run(20, LiveTrainingHook())  # trace
    per_step = run(100, None) / 100
    steps = max(100, round(seconds / per_step))
    plain, viewed, rates = [], [], []
    for _ in range(5):
        plain.append(run(steps, None))
        hook = LiveTrainingHook()
        viewed.append(run(steps, hook))
        rates.append(hook.updates / viewed[-1])
    ratio = statistics.median(v / p for v, p in zip(viewed, plain, strict=True))
    print(f"custom loop, {steps} steps of {per_step * 1000:.1f} ms with LiveTrainingHook:")
    print(f"  ratio (with view / without), median of pairs: {ratio:.3f}")
    print(f"  ratio of the fastest runs (with view / without): {min(viewed) / min(plain):.3f}")
    print(f"  view updates per second: {statistics.median(rates):.1f}")


if __name__ == "__main__":
    main()
