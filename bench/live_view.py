"""How much does the live training view slow training? Measured side by side in one run.

Usage: python bench/live_view.py [--epochs 2] [--seconds 2.5] [--repeats 15] [--min-interval 0.05]

``model.fit`` on 4 simulated replicas, three ways interleaved (the order rotates every
repeat, so neither drift nor position favours one): without callbacks, with a no-op callback
that has the same per-batch hooks (Keras then runs the batch hooks on the main thread,
waiting for each step, as it must for any such callback), and with LiveTrainingCallback.
Then a custom loop with and without LiveTrainingHook, interleaved the same way.

For each, wall time and CPU time (the process's, every thread). On a shared or virtual
machine the wall time of the same fit varies by a factor of two or more with the CPU time
unchanged: a step hands work between TensorFlow's threads about 70 times, and each hand-off
waits for a sleeping CPU to wake, which takes as long as the host makes it. So the tables
give, for each ratio, the median of the per-repeat pairs with its spread (lowest and highest
pair), the ratio of the fastest runs, and the same for CPU time, the steadier measure. The
view's own accounting (the share of the run it counted against its budget) is printed next to
what the ratios measured.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import mirrorkit as mk

mk.make_reproducible(0)
mk.simulate_replicas(4)

import keras  # noqa: E402
import numpy as np  # noqa: E402

from mirrorwidgets import LiveTrainingCallback, LiveTrainingHook  # noqa: E402

BATCH = 64
STEPS_PER_EPOCH = 400  # long epochs: Keras spends a while setting up each epoch's iterator


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


def timed(work: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the whole process) that ``work()`` took."""
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - wall, time.process_time() - cpu


def interleaved(kinds: dict[str, Callable[[], object]], repeats: int) -> dict[str, list]:
    """Run every kind once per repeat, in an order that rotates; (wall, CPU) per run."""
    names = list(kinds)
    runs: dict[str, list] = {name: [] for name in names}
    for repeat in range(repeats):
        shift = repeat % len(names)
        for name in names[shift:] + names[:shift]:
            runs[name].append(timed(kinds[name]))
    return runs


def ratios(runs: dict[str, list], top: str, bottom: str) -> str:
    """One table row: ``top`` over ``bottom``, wall and CPU."""
    cells = []
    for index in (0, 1):  # wall, CPU
        pairs = [a[index] / b[index] for a, b in zip(runs[top], runs[bottom], strict=True)]
        fastest = min(r[index] for r in runs[top]) / min(r[index] for r in runs[bottom])
        cells.append(
            f"{statistics.median(pairs):.3f} ({min(pairs):.2f}-{max(pairs):.2f}) | {fastest:.3f}"
        )
    return f"| {top} / {bottom} | {' | '.join(cells)} |"


def table(runs: dict[str, list], rows: list[tuple[str, str]]) -> None:
    for name, values in runs.items():
        walls, cpus = [w for w, _ in values], [c for _, c in values]
        print(
            f"{name}: wall {statistics.median(walls):.2f} s median ({min(walls):.2f}-"
            f"{max(walls):.2f}), CPU {statistics.median(cpus):.2f} s ({min(cpus):.2f}-"
            f"{max(cpus):.2f})"
        )
    print()
    print(
        "| ratio | wall: median of pairs (spread) | wall: fastest "
        "| CPU: median of pairs (spread) | CPU: least |"
    )
    print("| --- | ---: | ---: | ---: | ---: |")
    for top, bottom in rows:
        print(ratios(runs, top, bottom))
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2, help="epochs of 400 steps per fit")
    parser.add_argument(
        "--seconds", type=float, default=2.5, help="target length of one custom-loop run"
    )
    parser.add_argument("--repeats", type=int, default=15, help="runs of each kind")
    parser.add_argument(
        "--min-interval", type=float, default=None, help="the view's (default: its own)"
    )
    args = parser.parse_args()
    settings = {} if args.min_interval is None else {"min_interval": args.min_interval}

    strategy = mk.make_strategy()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(BATCH * STEPS_PER_EPOCH, 32)).astype("float32")
    y = rng.normal(size=(BATCH * STEPS_PER_EPOCH, 1)).astype("float32")
    model = build(strategy)
    probe = (x[:BATCH], y[:BATCH])

    def fit(epochs, callbacks):
        model.fit(
            x, y, batch_size=BATCH, epochs=epochs, verbose=0, shuffle=False, callbacks=callbacks
        )

    # Warm up: trace the train step and the probe once, and size the fits.
    fit(1, [LiveTrainingCallback(probe, min_interval=0.0, budget=1.0)])
    epoch, _ = timed(lambda: fit(1, []))
    epochs = args.epochs  # fixed: sizing by a timed epoch would vary with the machine's noise
    steps = epochs * len(x) // BATCH
    views: list[LiveTrainingCallback] = []

    def with_view():
        views.append(LiveTrainingCallback(probe, **settings))
        fit(epochs, [views[-1]])

    runs = interleaved(
        {
            "no callback": lambda: fit(epochs, []),
            "no-op callback": lambda: fit(epochs, [Baseline()]),
            "live view": with_view,
        },
        args.repeats,
    )
    interval = views[0].throttle.min_interval
    print(
        f"model.fit: {steps} steps per fit ({epoch / STEPS_PER_EPOCH * 1000:.1f} ms per step), "
        f"4 replicas, {args.repeats} runs of each kind; the view's min_interval {interval:g} s"
    )
    table(
        runs,
        [
            ("live view", "no-op callback"),
            ("live view", "no callback"),
            ("no-op callback", "no callback"),
        ],
    )
    report_view(views, [w for w, _ in runs["live view"]])
    custom_loop(strategy, model, x, y, args.seconds, args.repeats, settings)


def report_view(views, walls: list[float]) -> None:
    rates = [v.updates / wall for v, wall in zip(views, walls, strict=True)]
    counted = [v.throttle.spent / wall for v, wall in zip(views, walls, strict=True)]
    costs = [v.throttle.spent / max(v.updates, 1) for v in views]
    print(
        f"view updates per second of run: {statistics.median(rates):.1f} median "
        f"({min(rates):.1f}-{max(rates):.1f}); the view counted {statistics.median(counted):.1%} "
        f"of the run against its budget of {views[0].throttle.budget:.0%} "
        f"({statistics.median(costs) * 1000:.1f} ms per update, everything counted)"
    )
    print()


def custom_loop(strategy, model, x, y, seconds, repeats, settings) -> None:
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
        for _ in range(steps):
            loss, norm = train_step(batch)
            if hook is not None:
                hook.step(loss, norm)
        float(strategy.reduce("SUM", loss, axis=None))  # wait for the last step
        if hook is not None:
            hook.finish()

    run(20, LiveTrainingHook())  # trace
    per_step, _ = timed(lambda: run(100, None))
    steps = max(100, round(seconds / (per_step / 100)))
    hooks: list[LiveTrainingHook] = []

    def with_hook():
        hooks.append(LiveTrainingHook(**settings))
        run(steps, hooks[-1])

    runs = interleaved({"loop": lambda: run(steps, None), "loop with view": with_hook}, repeats)
    print(f"custom loop: {steps} steps of {per_step * 10:.1f} ms, with LiveTrainingHook")
    table(runs, [("loop with view", "loop")])
    report_view(hooks, [w for w, _ in runs["loop with view"]])


if __name__ == "__main__":
    main()
