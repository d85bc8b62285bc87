import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from mirrorkit.strategy import make_strategy
from mirrorkit.tracing import StepPhases, StepTrace, StepTracer


class SlowIterator:
    """Yields ``n`` items, each after sleeping ``wait`` seconds."""

    def __init__(self, n, wait):
        self.n, self.wait = n, wait

    def __iter__(self):
        return self

    def __next__(self):
        if self.n == 0:
            raise StopIteration
        self.n -= 1
        time.sleep(self.wait)
        return self.n


def test_phases_sum_to_the_wall_time_measured_outside(strategy):
    variables = [((64, 64), "float32"), ((64,), "float32")]
    tracer = StepTracer(strategy, variables, calibration_repeats=3)
    wall = []
    batches = SlowIterator(5, wait=0.02)
    for _ in range(5):
        start = time.perf_counter()
        tracer.next(batches)
        with tracer.step():
            time.sleep(0.03)
        wall.append(time.perf_counter() - start)
    with pytest.raises(StopIteration):
        tracer.next(batches)
    trace = tracer.result()
    assert len(trace.steps) == 5
    for phases, outside in zip(trace.steps, wall, strict=True):
        parts = phases.input_wait_s + phases.compute_s + phases.all_reduce_s
        assert parts == pytest.approx(phases.total_s, abs=1e-12)
        assert phases.total_s == pytest.approx(outside, abs=2e-3)  # tracer's own cost < 2 ms
        assert phases.input_wait_s >= 0.02
        assert phases.step_s >= 0.03
        assert 0 < phases.all_reduce_s <= phases.step_s
    assert trace.all_reduce_estimate_s > 0
    assert trace.gradient_bytes == (64 * 64 + 64) * 4
    assert trace.replicas == strategy.num_replicas_in_sync
    assert sum(trace.fractions.values()) == pytest.approx(1.0)


def test_custom_loop_with_a_real_distributed_step(strategy):
    with strategy.scope():
        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
        optimizer = keras.optimizers.SGD(0.01)

    @tf.function
    def train_step(batch):
        def step(x):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(model(x) ** 2)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
            return loss

        return strategy.run(step, args=(batch,))

    data = tf.data.Dataset.from_tensor_slices(np.ones((64, 8), np.float32)).batch(16)
    iterator = iter(strategy.experimental_distribute_dataset(data))
    tracer = StepTracer(strategy, model.trainable_variables, calibration_repeats=3)
    for _ in range(4):
        batch = tracer.next(iterator)
        with tracer.step():
            train_step(batch)
    trace = tracer.result()
    assert len(trace.steps) == 4
    assert trace.gradient_bytes == (8 * 4 + 4) * 4
    assert all(s.input_wait_s > 0 and s.step_s > 0 for s in trace.steps)


def test_keras_fit_callback_traces_every_step_and_restores_the_model(strategy):
    with strategy.scope():
        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
        model.compile(keras.optimizers.SGD(0.01), "mse")
    x = np.ones((128, 8), np.float32)
    y = np.zeros((128, 1), np.float32)
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)  # builds Keras' train function
    original = model.train_function
    tracer = StepTracer(strategy, calibration_repeats=3)
    callback = tracer.callback()
    history = model.fit(x, y, batch_size=32, epochs=2, verbose=0, callbacks=[callback])
    assert model.train_function is original
    assert len(history.history["loss"]) == 2
    trace = callback.result()
    assert len(trace.steps) == 8  # 2 epochs x 4 batches
    assert trace.gradient_bytes == (8 + 1) * 4
    for s in trace.steps:
        assert s.input_wait_s + s.compute_s + s.all_reduce_s == pytest.approx(s.total_s)
        assert s.input_wait_s > 0 and s.step_s > 0


def test_keras_training_still_learns_under_the_tracer(devices):
    strategy = make_strategy("one_device", devices=devices[:2])
    with strategy.scope():
        model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
        model.compile(keras.optimizers.SGD(0.1), "mse")
    x = np.linspace(-1, 1, 64, dtype=np.float32)[:, None]
    tracer = StepTracer(strategy, calibration_repeats=2)
    history = model.fit(x, 3 * x, batch_size=16, epochs=5, verbose=0, callbacks=[tracer.callback()])
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert len(tracer.result().steps) == 20


def test_steps_per_execution_above_one_is_refused(strategy):
    with strategy.scope():
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        model.compile("sgd", "mse", steps_per_execution=2)
    tracer = StepTracer(strategy)
    with pytest.raises(ValueError, match="steps_per_execution=1"):
        model.fit(np.ones((8, 2)), np.ones((8, 1)), verbose=0, callbacks=[tracer.callback()])


def test_all_reduce_estimate_is_capped_at_the_step(strategy):
    tracer = StepTracer(strategy, [((256, 256), "float32")], calibration_repeats=2)
    with tracer.step():
        pass  # a step far shorter than any all-reduce
    trace = tracer.result()
    (phases,) = trace.steps
    assert phases.all_reduce_s == phases.step_s and phases.compute_s == 0
    assert "capped" in str(trace)


def test_no_variables_means_no_all_reduce(strategy):
    tracer = StepTracer(strategy)
    with tracer.step():
        time.sleep(0.001)
    trace = tracer.result()
    assert trace.all_reduce_estimate_s is None
    assert trace.steps[0].all_reduce_s == 0 and trace.steps[0].compute_s > 0


def test_a_failing_step_is_not_recorded_and_reset_forgets(strategy):
    tracer = StepTracer(strategy)
    with pytest.raises(ZeroDivisionError), tracer.step():
        1 / 0  # noqa: B018
    assert tracer.result().steps == ()
    with tracer.step():
        pass
    tracer.reset()
    assert tracer.result().steps == ()


def test_trace_reprs():
    trace = StepTrace((StepPhases(0, 0.001, 0.010, 0.002, 0.008),), 0.002, 4096, 2)
    text = str(trace)
    assert (
        text.splitlines()[0]
        == "1 training step on 2 replicas, 4 KiB of gradients all-reduced per step"
    )
    assert "Estimated: all-reduce" in text
    assert trace.median("total_s") == pytest.approx(0.011)
    page = trace._repr_html_()
    assert "<table>" in page and "all-reduce" in page


def test_bad_calibration_repeats(strategy):
    with pytest.raises(ValueError, match="calibration_repeats must be at least 1"):
        StepTracer(strategy, calibration_repeats=0)
