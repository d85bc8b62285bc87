"""How much does StepTracer slow training? Traced and untraced runs, side by side in one run.

Usage: python bench/tracer_overhead.py [--repeats 15] [--steps 100] [--profile-every 100]

Trains the same model on 4 simulated replicas with ``model.fit`` (the second epoch of
each fit is timed, see fit_time) with and without ``StepTracer.callback()``, and a
custom loop with and without ``StepTracer``, alternating traced and untraced repeats
(and which of the two goes first) so machine noise hits both, and prints the ratio
of the median times (traced / untraced). The traced runs use the tracer's defaults:
every step timed, one step in ``--profile-every`` profiled with TensorFlow's
profiler, so the ratio includes starting and stopping the profiler and the slower
profiled steps. Parsing the profiles happens in ``result()``, after training, and
is reported separately.
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

from mirrorkit.measure.tracing import StepTracer  # noqa: E402

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
    """Wall time of each epoch from its first batch (Keras makes the epoch's dataset
    iterator before that, which takes long and varies); in both runs, so it costs them
    the same."""

    def on_epoch_begin(self, epoch, logs=None):
        self.start = None

    def on_train_batch_begin(self, batch, logs=None):
        if self.start is None:
            self.start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.last = time.perf_counter() - self.start


def fit_time(model, x, y, callbacks) -> float:
    """Seconds of the second epoch of a 2-epoch fit, from its first batch: Keras re-traces
    its own train function at the start of every fit (a new iterator each time), which
    the first epoch absorbs."""
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


def excess(trace) -> float:
    """How much longer the profiled steps took than the median unprofiled step."""
    profiled = set(trace.profiled_steps)
    plain = [t for i, t in enumerate(trace.step_times_s) if i not in profiled]
    typical = statistics.median(plain) if plain else 0.0
    return sum(max(0.0, trace.step_times_s[i] - typical) for i in profiled)


def side_by_side(run_plain, run_traced, repeats: int) -> tuple[list[float], list[float]]:
    """Alternate untraced and traced runs, swapping which goes first every repeat."""
    plain, traced = [], []
    for i in range(repeats):
        if i % 2:
            traced.append(run_traced())
            plain.append(run_plain())
        else:
            plain.append(run_plain())
            traced.append(run_traced())
    return plain, traced


def report(title: str, plain, traced, tracer: StepTracer) -> None:
    start = time.perf_counter()
    trace = tracer.result()
    parse = time.perf_counter() - start
    print(title)
    print("  " + ratio(traced, plain))
    paired = sorted(t / p for t, p in zip(traced, plain, strict=True))
    pairs = statistics.median(paired)
    low, _, high = statistics.quantiles(paired, n=4) if len(paired) > 1 else (pairs, 0, pairs)
    print(
        f"  median of the {len(plain)} paired ratios (traced / untraced next to it): {pairs:.4f}"
        f" (quartiles {low:.4f} to {high:.4f}: the machine's noise)"
    )
    steps = sum(trace.step_times_s)
    print(
        f"  accounted cost, last traced run: profiler start+stop {trace.profiler_s * 1e3:.1f} ms"
        f" + profiled steps' excess {excess(trace) * 1e3:.1f} ms over {steps:.3f} s of steps"
        f" = {(trace.profiler_s + excess(trace)) / steps * 100:.2f}%"
    )
    print(
        f"  parsing {len(trace.steps)} profiled step(s) in result(), after training: {parse:.3f} s"
    )
    print("  last traced run:")
    print("\n".join("    " + line for line in str(trace).splitlines()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--steps", type=int, default=100, help="steps per run")
    parser.add_argument("--profile-every", type=int, default=100)
    args = parser.parse_args()

    strategy = mk.make_strategy()
    n = BATCH * args.steps
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 32)).astype(np.float32)
    y = rng.normal(size=(n, 1)).astype(np.float32)

    def new_tracer() -> StepTracer:
        return StepTracer(strategy, profile_every=args.profile_every)

    # Keras fit: the callback leaves Keras' train function and dispatch as they are.
    model = build(strategy)
    fit_time(model, x, y, [])  # traces Keras' train function
    fit_time(model, x, y, [new_tracer().callback()])  # and warms up the profiler
    tracers = []

    def fit_traced() -> float:
        tracers.append(new_tracer())
        return fit_time(model, x, y, [tracers[-1].callback()])

    plain, traced = side_by_side(lambda: fit_time(model, x, y, []), fit_traced, args.repeats)
    report(
        f"model.fit, epoch of {args.steps} steps x {args.repeats} repeats on 4 replicas:",
        plain,
        traced,
        tracers[-1],
    )

    # Custom loop.
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH)
    run = custom_loop(strategy, model, dataset)
    run()
    run(new_tracer())
    tracers = []

    def loop_traced() -> float:
        tracers.append(new_tracer())
        return run(tracers[-1])

    plain, traced = side_by_side(run, loop_traced, args.repeats)
    report(
        f"custom loop, {args.steps} steps x {args.repeats} repeats on 4 replicas:",
        plain,
        traced,
        tracers[-1],
    )


if __name__ == "__main__":
    main()
