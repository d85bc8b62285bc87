from __future__ import annotations

import re

import keras
import numpy as np
import pytest
import tensorflow as tf
import traitlets

from mirrorkit.report import style
from mirrorwidgets import LiveTrainingCallback, LiveTrainingHook, LiveTrainingView
from mirrorwidgets._snapshot import displayed
from mirrorwidgets._throttle import Throttle
from tests.mirrorwidgets.test_a11y import assert_lines_twin, twin_tables


def _data(n=64):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 4)).astype("float32")
    y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0]], "float32")).astype("float32")
    return x, y


def _model(strategy):
    with strategy.scope():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        model.compile(keras.optimizers.SGD(0.01), "mse")
    return model


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_throttle_keeps_interval_and_budget():
    clock = FakeClock()
    throttle = Throttle(min_interval=0.1, budget=0.05, clock=clock)
    assert throttle.due()
    throttle.begin()
    clock.now += 0.01  # the update takes 10 ms
    throttle.end()
    clock.now += 0.05
    assert not throttle.due()  # too soon
    clock.now += 0.06
    assert not throttle.due()  # 10 ms spent + 10 ms to come is over 5% of 120 ms
    clock.now = 0.39
    assert not throttle.due()
    clock.now = 0.4
    assert throttle.due()  # 10 + 10 ms of 400 ms is exactly 5%
    assert throttle.updates == 1
    assert throttle.overhead == pytest.approx(0.025)


def test_one_expensive_update_cannot_carry_the_total_over_budget():
    clock = FakeClock()
    throttle = Throttle(min_interval=0.0, budget=0.05, clock=clock)
    costs = iter([0.001] * 20 + [0.2] + [0.001] * 10_000)  # one 200 ms plot redraw
    worst = 0.0
    for _ in range(20_000):  # steps of 2 ms
        if throttle.due():
            throttle.begin()
            clock.now += next(costs)
            throttle.end()
            if throttle.updates > 21:  # the overshoot of the expensive update itself is paid off
                worst = max(worst, throttle.overhead)
        clock.now += 0.002
    assert throttle.updates > 21
    assert worst <= 0.05 + 1e-9


def test_fast_steps_get_ten_updates_per_second_when_updates_are_cheap():
    clock = FakeClock()
    throttle = Throttle(min_interval=0.1, budget=0.05, clock=clock)
    for _ in range(1000):  # 1000 steps of 1 ms; each update costs 1 ms
        if throttle.due():
            throttle.begin()
            clock.now += 0.001
            throttle.end()
        clock.now += 0.001
    assert 10 <= throttle.updates <= 11  # about a second of steps
    assert throttle.overhead <= 0.05


def test_charged_work_counts_against_the_budget():
    clock = FakeClock()
    throttle = Throttle(min_interval=0.0, budget=0.05, clock=clock)
    throttle.start_clock()
    throttle.charge(0.5)  # setting up, before the first step: half a second
    clock.now = 5.0
    assert not throttle.due()  # 0.5 s is 10% of 5 s
    clock.now = 10.0
    assert throttle.due()  # paid back: 5% of 10 s
    assert throttle.overhead == pytest.approx(0.05)
    throttle.charge(-1.0)  # nothing negative is ever credited
    assert throttle.spent == pytest.approx(0.5)


def test_the_step_after_an_update_is_charged_its_slowdown_at_most_the_update_cost():
    clock = FakeClock()
    throttle = Throttle(min_interval=0.0, budget=1.0, clock=clock)
    for _ in range(10):
        throttle.step_ended(0.004)  # typical steps: 4 ms, nothing charged
    assert throttle.spent == 0.0
    throttle.begin()
    clock.now += 0.002
    throttle.end()  # an update of 2 ms
    throttle.step_ended(0.005)  # the next step took 1 ms longer: the update's doing
    assert throttle.spent == pytest.approx(0.002 + 0.001)
    throttle.step_ended(0.009)  # later steps are not the update's
    assert throttle.spent == pytest.approx(0.003)
    throttle.begin()
    clock.now += 0.002
    throttle.end()
    throttle.step_ended(0.5)  # an epoch's first step, or a stalled machine: at most 2 ms
    assert throttle.spent == pytest.approx(0.003 + 0.002 + 0.002)


def test_the_callback_counts_its_set_up_and_reuses_the_split_probe(strategy):
    model = _model(strategy)
    x, y = _data(64)
    probe = (x[:16], y[:16])
    first = LiveTrainingCallback(probe)
    first.set_model(model)
    first.on_train_begin()
    assert first.updates == 0 and first.throttle.spent > 0  # traced the probe: counted
    assert not first.throttle.due()  # and paid back before the first update
    again = LiveTrainingCallback((x[:16].copy(), y[:16].copy()))  # the same numbers
    again.set_model(model)
    again.on_train_begin()
    assert again._batch is first._batch  # split across the replicas once
    assert again.throttle.spent < first.throttle.spent
    other = LiveTrainingCallback((x[16:32], y[16:32]))
    other.set_model(model)
    other.on_train_begin()
    assert other._batch is not first._batch  # other numbers, another split


def test_view_records_per_replica_values(strategy):
    view = LiveTrainingView()
    assert "no steps yet" in view.snapshot_html()
    loss = strategy.run(
        lambda: tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32)
    )
    norm = strategy.run(lambda: tf.constant(0.25))
    view.record(5, loss, norm, step_time=0.002, fit_loss=1.5)
    assert view.step == 5 and view.num_replicas == 4
    np.testing.assert_array_equal(view.history["loss"][-1], [0.0, 1.0, 2.0, 3.0])
    np.testing.assert_array_equal(view.history["grad_norm"][-1], [0.25] * 4)
    html = view.snapshot_html()
    assert "step 5" in html and "2.0 ms" in html and "fit loss 1.5" in html
    assert html.count('class="mw-cell"') == 4
    assert "mw-live-loss" not in html  # the first chart waits for plot_interval
    view.refresh_plot()
    html = view.snapshot_html()
    assert html.count('<svg class="mw-live-loss"') == 1
    # One step so far: each replica's line is one dot, in its palette colour.
    dots = re.findall(r'<circle class="mw-series" data-series="([^"]+)"[^>]* fill="([^"]+)"', html)
    assert dots == [(f"replica {i}", style.SERIES[i]) for i in range(4)]
    assert "replica 3: 3 at step 5" in html
    bundle = view._repr_mimebundle_()
    assert bundle["text/html"] == displayed(html)
    grid = view._grid
    view.record(6, loss, norm)
    assert view._grid is grid  # updated in place
    assert view.history["step"] == [5, 6]
    # The chart's table twins follow it: each replica's points, step by step.
    assert [row["step"] for row in twin_tables(html)["the chart as a table"]] == ["5"]
    view.record(7, strategy.run(lambda: tf.constant(0.5)))
    view.refresh_plot()
    lines = {f"replica {i}": [(5, float(i)), (6, float(i)), (7, 0.5)] for i in range(4)}
    view._twin.shown = True  # the live view's tables: behind a toggle button
    for markup in (view._twin.tables.value, view.snapshot_html()):
        assert_lines_twin(markup, lines)


def test_the_live_charts_tables_stay_shown_across_redraws(strategy):
    """A <details> in a redrawn HTML widget closed at each redraw: the state is the kernel's."""
    view = LiveTrainingView(plot_interval=0)
    view.record(1, strategy.run(lambda: tf.constant(1.0)))
    view.refresh_plot()
    twin = view._twin
    assert twin.layout.display is None and twin.tables.layout.display == "none"
    assert twin.toggle.description == "Show the chart as tables"
    twin.toggle.value = True  # pressed, as a reader would
    assert twin.tables.layout.display is None
    assert twin.toggle.description == "Hide the chart's tables"
    view.record(2, strategy.run(lambda: tf.constant(0.5)))
    view.refresh_plot()  # a redraw: new numbers, still shown, drawn open
    assert twin.shown and twin.tables.layout.display is None
    assert twin.tables.value.count('<details class="mw-twin" open>') == 2
    assert [r["step"] for r in twin_tables(twin.tables.value)["the chart as a table"]] == ["1", "2"]
    twin.toggle.value = False
    view.refresh_plot()
    assert twin.tables.layout.display == "none"


def test_a_long_history_is_thinned_but_keeps_the_last_step():
    view = LiveTrainingView(max_points=10)
    for step in range(1, 26):
        view.record(step, tf.constant(1.0 / step))
    steps = view.history["step"]
    assert len(steps) <= 10 and steps[0] == 1 and steps[-1] == 25
    assert steps == sorted(steps)
    assert all(len(values) == len(steps) for values in view.history.values())
    view.refresh_plot()
    line = re.search(r'<polyline class="mw-series"[^>]* points="([^"]+)"', view._plot.value)
    assert len(line.group(1).split()) == len(steps)  # every step kept is drawn
    drawn = [(step, float(loss[0])) for step, loss in zip(steps, view.history["loss"], strict=True)]
    assert_lines_twin(view.snapshot_html(), {"replica 0": drawn})  # and in its tables


def test_hook_throttles_and_reads_only_when_due(strategy):
    hook = LiveTrainingHook(min_interval=3600)
    assert hook.step(strategy.run(lambda: tf.constant(1.0)))
    assert not hook.step("not read when not due")  # nothing is read on skipped steps
    assert hook.steps == 2 and hook.updates == 1 and hook.view.step == 1
    hook.finish()
    assert hook.view._plot.value.count('class="mw-series"') == 4  # a line per replica


def test_hook_in_a_custom_loop_shows_real_per_replica_loss(strategy):
    model = _model(strategy)
    x, y = _data(32)
    dataset = strategy.experimental_distribute_dataset(
        tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
    )
    batch = next(iter(dataset))

    @tf.function
    def train_step(inputs):
        def replica_step(bx, by):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(bx) - by))
            grads = tape.gradient(loss, model.trainable_variables)
            return loss, tf.linalg.global_norm(grads)

        return strategy.run(replica_step, args=inputs)

    hook = LiveTrainingHook(min_interval=0.0, budget=1.0)
    loss, norm = train_step(batch)
    assert hook.step(loss, norm)
    shards = np.array_split(np.arange(32), 4)
    prediction = model.predict(x, verbose=0)
    expected = [np.mean((prediction[s] - y[s]) ** 2) for s in shards]
    np.testing.assert_allclose(hook.view.history["loss"][-1], expected, rtol=1e-5)
    assert len(set(np.round(hook.view.history["loss"][-1], 6))) == 4  # replicas differ


def test_callback_streams_per_replica_loss_during_fit(strategy, seeded):
    model = _model(strategy)
    x, y = _data(64)
    live = LiveTrainingCallback((x[:16], y[:16]), min_interval=0.0, budget=1.0)
    model.fit(x, y, batch_size=16, epochs=2, verbose=0, callbacks=[live])
    assert live.updates == 8 and live.view.step == 8  # every step, with no throttle
    last = live.view.history["loss"][-1]
    prediction = model.predict(x[:16], verbose=0)
    expected = [np.mean((prediction[s] - y[s]) ** 2) for s in np.array_split(np.arange(16), 4)]
    np.testing.assert_allclose(last, expected, rtol=1e-4)  # each replica's own loss
    norms = live.view.history["grad_norm"][-1]
    assert np.all(norms > 0) and len(set(np.round(norms, 6))) == 4
    assert all(t is not None and t > 0 for t in live.view.history["step_time"])
    html = live.view.snapshot_html()
    assert "fit loss" in html
    assert '<svg class="mw-live-loss"' in html  # on_train_end drew the final chart
    line = re.search(r'<polyline class="mw-series" data-series="replica 3" points="([^"]+)"', html)
    assert len(line.group(1).split()) == 8  # a point per step
    assert re.search(r"<title>replica 3: [^<]* at step 8</title>", html)  # up to the last step


def _probe(n=8):
    x, y = _data(n)
    return x, y


def _fit_with(strategy, live):
    x, y = _data(8)
    _model(strategy).fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[live])


WRONG_CALLBACK = [
    pytest.param(
        lambda s: LiveTrainingCallback(np.ones((4, 4))),
        TypeError,
        "probe",
        r"got one array of shape \(4, 4\) \(the inputs alone\): write e\.g\. probe=\(x_train",
        id="the inputs without labels",
    ),
    pytest.param(
        lambda s: LiveTrainingCallback(_model(s)),
        TypeError,
        "probe",
        r"got a Keras model .*write e\.g\. probe=\(x_train\[:64\], y_train\[:64\]\)",
        id="the model",
    ),
    pytest.param(
        lambda s: LiveTrainingCallback(tf.data.Dataset.from_tensor_slices(_probe()).batch(8)),
        TypeError,
        "probe",
        r"got a tf\.data\.Dataset \(take one batch of it: probe=next\(iter\(dataset\)\)\)",
        id="a dataset",
    ),
    pytest.param(
        lambda s: LiveTrainingCallback((*_probe(), np.ones(8))),
        TypeError,
        "probe",
        r"got a tuple of 3: write e\.g\. probe=",
        id="x, y and sample weights",
    ),
    pytest.param(
        lambda s: _fit_with(s, LiveTrainingCallback(_probe(2))),
        ValueError,
        "probe",
        r"2 example\(s\) but there are 4 replicas; .*probe=\(x\[:4\], y\[:4\]\)",
        id="fewer examples than replicas",
    ),
    pytest.param(
        lambda s: LiveTrainingCallback(_probe(), s),
        TypeError,
        "view",
        r"got MirroredStrategy: the strategy is not needed here",
        id="the strategy as the view",
    ),
    pytest.param(
        lambda s: LiveTrainingCallback(_probe(), budget=5),
        ValueError,
        "budget",
        r"> 0 and <= 1, got 5: for 5% write budget=0\.05",
        id="budget in percent",
    ),
    pytest.param(
        lambda s: LiveTrainingCallback(_probe(), min_interval="0.1"),
        TypeError,
        "min_interval",
        r"must be a number, got str '0\.1': write e\.g\. min_interval=",
        id="min_interval as a string",
    ),
]


@pytest.mark.wrong_inputs("mirrorwidgets.LiveTrainingCallback")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_CALLBACK)
def test_wrong_callback_inputs_get_a_clear_message(refuses, strategy, call, error, argument, match):
    refuses(lambda: call(strategy), error, argument, match)


WRONG_HOOK = [
    pytest.param(
        lambda s: LiveTrainingHook(s),
        TypeError,
        "view",
        r"got MirroredStrategy: the strategy is not needed here .*LiveTrainingHook\(\.\.\.\)",
        id="the strategy as the view",
    ),
    pytest.param(
        lambda s: LiveTrainingHook(LiveTrainingView),
        TypeError,
        "view",
        r"got the class LiveTrainingView: make one, LiveTrainingHook\(view=LiveTrainingView\(\)\)",
        id="the view class, not a view",
    ),
    pytest.param(
        lambda s: LiveTrainingHook(min_interval=-1),
        ValueError,
        "min_interval",
        r">= 0 seconds, got -1: write e\.g\. min_interval=0\.05",
        id="a negative min_interval",
    ),
    pytest.param(
        lambda s: LiveTrainingHook(budget=0),
        ValueError,
        "budget",
        r"> 0 and <= 1, got 0: write e\.g\. budget=0\.05",
        id="budget 0",
    ),
    pytest.param(
        lambda s: LiveTrainingHook(budget="5%"),
        TypeError,
        "budget",
        r"must be a number, got str '5%': write e\.g\. budget=0\.05",
        id="budget as a string",
    ),
    pytest.param(
        lambda s: LiveTrainingHook().step([0.5, 0.4]),
        TypeError,
        "loss",
        r"got list: wrap plain numbers with tf\.constant\(\.\.\.\), or pass what strategy\.run",
        id="the losses as a list of numbers",
    ),
    pytest.param(
        lambda s: LiveTrainingHook().step(s.run(lambda: tf.constant(1.0)), step="one"),
        TypeError,
        "step",
        r"whole number \(the training step\), got str 'one': .*or leave step out",
        id="the step as a word",
    ),
]


@pytest.mark.wrong_inputs("mirrorwidgets.LiveTrainingHook")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_HOOK)
def test_wrong_hook_inputs_get_a_clear_message(refuses, strategy, call, error, argument, match):
    refuses(lambda: call(strategy), error, argument, match)


WRONG_VIEW = [
    pytest.param(
        lambda s: LiveTrainingView(title=3),
        traitlets.TraitError,
        "'title'",
        r"expected a unicode string",
        id="a number as the title",
    ),
    pytest.param(
        lambda s: LiveTrainingView(plot_interval=-1),
        traitlets.TraitError,
        "plot_interval",
        r">= 0 seconds, got -1",
        id="a negative plot_interval",
    ),
    pytest.param(
        lambda s: LiveTrainingView(plot_interval="2s"),
        traitlets.TraitError,
        "'plot_interval'",
        r"expected a float",
        id="plot_interval with a unit",
    ),
    pytest.param(
        lambda s: setattr(LiveTrainingView(), "max_points", 1),
        traitlets.TraitError,
        "max_points",
        r">= 2 \(a line needs two points\), got 1",
        id="max_points 1",
    ),
    pytest.param(
        lambda s: LiveTrainingView().record(1, [0.5, 0.4]),
        TypeError,
        "loss",
        r"got list: wrap plain numbers .*Return each replica's value from the function",
        id="the losses as a list of numbers",
    ),
    pytest.param(
        lambda s: LiveTrainingView().record(1, s.run(lambda: tf.constant(1.0)), grad_norm=0.1),
        TypeError,
        "grad_norm",
        r"got float: wrap plain numbers with tf\.constant",
        id="a plain number as grad_norm",
    ),
    pytest.param(
        lambda s: LiveTrainingView().record(1, None),
        TypeError,
        "loss",
        r"got NoneType: did the function given to strategy\.run return its value\?",
        id="a step function that returns nothing",
    ),
    pytest.param(
        lambda s: LiveTrainingView().record(1, s.run(lambda: tf.ones([8]))),
        ValueError,
        "loss",
        r"one number per replica, got shape \(8,\) on replica 0: .*tf\.reduce_mean",
        id="per-example losses",
    ),
    pytest.param(
        lambda s: LiveTrainingView().record("one", tf.constant(0.5)),
        TypeError,
        "step",
        r"got str 'one': write view\.record\(step, loss\) with the step as an int",
        id="the step as a word",
    ),
]


@pytest.mark.wrong_inputs("mirrorwidgets.LiveTrainingView")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_VIEW)
def test_wrong_view_inputs_get_a_clear_message(refuses, strategy, call, error, argument, match):
    refuses(lambda: call(strategy), error, argument, match)


def test_a_refused_record_keeps_what_is_shown(strategy):
    view = LiveTrainingView()
    view.record(1, strategy.run(lambda: tf.constant(0.5)))
    with pytest.raises(ValueError, match="one number per replica"):
        view.record(2, strategy.run(lambda: tf.ones([8])))
    assert view.step == 1 and view.history["step"] == [1]
    assert "0.5" in view.snapshot_html()
