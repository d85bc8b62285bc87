from __future__ import annotations

import math
import re
from dataclasses import dataclass

import keras
import numpy as np
import pytest
import tensorflow as tf
import traitlets

import mirrorkit as mk
from mirrorwidgets import LossScaleView

INITIAL_SCALE = 2.0**10
GROWTH_STEPS = 2
STEPS = 6
OVERFLOW_STEP = 3


@dataclass(frozen=True)
class Record:
    """What mirrorkit's mixed-precision helpers return: attributes, not dict keys."""

    step: int
    loss_scale: float
    overflow: bool
    loss: float | None = None


class History:
    def __init__(self, records):
        self.records = records


@pytest.fixture(scope="module")
def training(strategy):
    """Real mixed-precision steps under the 4-replica strategy, one forced overflow.

    At OVERFLOW_STEP the loss is multiplied by 1e30 before scaling: its float16 gradients
    overflow, so LossScaleOptimizer must skip the update and halve the scale. Each record
    holds the scale the step multiplied its loss by, and the (unmultiplied) loss.
    """
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        with strategy.scope():
            model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
            optimizer = keras.optimizers.LossScaleOptimizer(
                keras.optimizers.SGD(0.1),
                initial_scale=INITIAL_SCALE,
                dynamic_growth_steps=GROWTH_STEPS,
            )
            optimizer.build(model.trainable_variables)
        dense = model.layers[0]
        assert (dense.compute_dtype, dense.kernel.dtype) == ("float16", "float32")
        x = np.linspace(-1.0, 1.0, 24, dtype="float32").reshape(8, 3)
        y = x.sum(axis=1, keepdims=True)
        batch = next(
            iter(strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensors((x, y))))
        )

        @tf.function
        def train_step(features, labels, factor):
            def replica_step(features, labels):
                with tf.GradientTape() as tape:
                    predictions = tf.cast(model(features, training=True), tf.float32)
                    loss = tf.reduce_mean(tf.square(predictions - labels))
                    loss = loss / strategy.num_replicas_in_sync  # summed across replicas
                    scaled = optimizer.scale_loss(loss * factor)
                grads = tape.gradient(scaled, model.trainable_variables)
                optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
                return loss

            per_replica = strategy.run(replica_step, args=(features, labels))
            return strategy.reduce("SUM", per_replica, axis=None)

        records, observed = [], []
        for step in range(STEPS):
            scale = float(optimizer.dynamic_scale.numpy())
            iterations = int(optimizer.iterations.numpy())
            kernel = dense.kernel.numpy().copy()
            factor = 1e30 if step == OVERFLOW_STEP else 1.0
            loss = float(train_step(*batch, tf.constant(factor)))
            skipped = int(optimizer.iterations.numpy()) == iterations
            unchanged = np.array_equal(kernel, dense.kernel.numpy())
            observed.append((scale, float(optimizer.dynamic_scale.numpy()), skipped, unchanged))
            records.append({"step": step, "loss_scale": scale, "overflow": skipped, "loss": loss})
    finally:
        keras.mixed_precision.set_global_policy(previous)
    return records, observed


def test_keras_loss_scale_optimizer_halves_the_scale_and_skips_the_step(training):
    records, observed = training
    assert keras.mixed_precision.global_policy().name == "float32"  # restored
    before = [o[0] for o in observed]
    after = [o[1] for o in observed]
    # Doubles after every GROWTH_STEPS good steps; halves at the overflow and starts over.
    assert before == [1024.0, 1024.0, 2048.0, 2048.0, 1024.0, 1024.0]
    assert after == [*before[1:], 2048.0]
    assert after[OVERFLOW_STEP] == before[OVERFLOW_STEP] / 2
    skipped = [o[2] for o in observed]
    unchanged = [o[3] for o in observed]
    assert skipped == [step == OVERFLOW_STEP for step in range(STEPS)]  # iterations held
    assert unchanged == skipped  # the weights moved at every other step
    losses = [r["loss"] for r in records]
    assert all(math.isfinite(loss) for loss in losses)
    assert losses[OVERFLOW_STEP] == losses[OVERFLOW_STEP + 1]  # nothing learned in between
    assert losses[0] > losses[2]


def test_view_of_real_records(training):
    records, _ = training
    view = LossScaleView(records)
    assert view.num_steps == STEPS
    assert view.step == STEPS - 1
    assert view.loss_scale == 1024.0
    assert view.overflow_steps == (OVERFLOW_STEP,)
    assert [r.overflow for r in view.records] == [r["overflow"] for r in records]
    snapshot = view.snapshot_html()
    assert snapshot.count('class="mw-overflow"') == 1
    assert f'class="mw-overflow" data-step="{OVERFLOW_STEP}"' in snapshot
    assert f'class="mw-overflow-line" data-step="{OVERFLOW_STEP}"' in snapshot
    assert snapshot.count('class="mw-point"') == STEPS - 1
    assert "loss scale at the last step 2¹⁰ = 1024" in snapshot
    assert 'data-count="1"' in snapshot and "1 overflow<" in snapshot
    assert "overflow (skipped) step: 3." in snapshot
    assert 'class="mw-loss"' in snapshot  # the loss panel
    assert "<script" not in snapshot


def test_the_scale_is_drawn_as_steps_on_a_log2_axis(training):
    records, _ = training
    svg = LossScaleView(records).snapshot_html()
    ticks = re.findall(r'<text class="mw-tick"[^>]*>([^<]*)</text>', svg)
    assert ticks[:2] == ["2¹⁰", "2¹¹"]  # whole powers: the scale went from 1024 to 2048
    y = {
        label: float(v)
        for v, label in re.findall(
            r'<line x1="56" y1="([\d.]+)"[^>]*/><text class="mw-tick"[^>]*>([^<]*)</text>', svg
        )
    }
    assert y["2¹⁰"] > y["2¹¹"]  # larger scales higher up
    path = re.search(r'<path class="mw-scale" d="([^"]+)"', svg).group(1)
    jumps = [float(v) for v in re.findall(r"V([\d.]+)", path)]
    assert len(jumps) == STEPS - 1
    assert jumps[1] == pytest.approx(y["2¹¹"], abs=0.1)  # doubled to 2048 at step 2
    assert jumps[3] == pytest.approx(y["2¹⁰"], abs=0.1)  # halved after the overflow
    marker = re.search(r'class="mw-overflow" data-step="3" cx="[\d.]+" cy="([\d.]+)"', svg)
    assert float(marker.group(1)) == pytest.approx(y["2¹¹"], abs=0.1)
    assert LossScaleView(records).snapshot_html() == svg  # deterministic text


def test_attribute_records_and_objects_with_records(training):
    records, _ = training
    objects = [Record(**r) for r in records]
    from_dicts = LossScaleView(records).snapshot_html()
    assert LossScaleView(objects).snapshot_html() == from_dicts
    assert LossScaleView(History(objects)).snapshot_html() == from_dicts
    numpy_fields = [
        Record(np.int64(r.step), np.float32(r.loss_scale), np.bool_(r.overflow)) for r in objects
    ]
    view = LossScaleView(numpy_fields)
    assert view.records[0].loss is None and view.overflow_steps == (OVERFLOW_STEP,)
    assert 'class="mw-loss"' not in view.snapshot_html()  # no loss recorded, no panel


def test_append_and_update_for_live_use(training):
    records, _ = training
    view = LossScaleView(title="live")
    assert view.num_steps == 0 and view.step is None and view.loss_scale is None
    assert "no steps yet" in view.snapshot_html()
    header, chart, notes, status = view.children
    for record in records:
        view.append(record)
    assert view.children == (header, chart, notes, status)  # same widgets, new HTML
    assert view.num_steps == STEPS and view.overflow_steps == (OVERFLOW_STEP,)
    assert view.snapshot_html() == LossScaleView(records, title="live").snapshot_html()
    assert 'data-step="3"' in chart.value and "skipped" in notes.value
    with pytest.raises(ValueError, match="step 2 comes after step 5"):
        view.append({"step": 2, "loss_scale": 8.0, "overflow": False})
    assert view.num_steps == STEPS  # refused records leave the view as it was
    view.update(records[:OVERFLOW_STEP])
    assert view.overflow_steps == () and view.loss_scale == 2048.0
    assert notes.value == "" and 'data-count="0"' in header.value
    view.show_loss = False
    assert 'class="mw-loss"' not in chart.value


def test_non_finite_loss_breaks_the_loss_line():
    records = [
        {"step": 0, "loss_scale": 32768.0, "overflow": False, "loss": 2.0},
        {"step": 1, "loss_scale": 32768.0, "overflow": False, "loss": 1.5},
        {"step": 2, "loss_scale": 32768.0, "overflow": True, "loss": float("inf")},
        {"step": 3, "loss_scale": 16384.0, "overflow": False, "loss": 1.2},
        {"step": 4, "loss_scale": 16384.0, "overflow": False, "loss": 1.0},
    ]
    svg = LossScaleView(records).snapshot_html()
    assert svg.count('<polyline class="mw-loss"') == 2  # before and after the gap
    assert 'class="mw-loss-off" data-step="2"' in svg and ">inf<" in svg
    assert "2¹⁵" in svg and "2¹⁴" in svg
    # A huge but finite loss at an overflow step (a forced overflow) must not flatten the
    # others: the axis fits the other steps, and the huge value is a mark at the top.
    records[2] = {**records[2], "loss": 3.4e38}
    svg = LossScaleView(records).snapshot_html()
    assert 'class="mw-loss-off" data-step="2"' in svg and ">3.4e+38<" in svg
    ticks = re.findall(r'<text class="mw-tick"[^>]*>([^<]*)</text>', svg)
    assert ticks[-3:] == ["1", "1.5", "2"]  # the loss axis: 1.0 to 2.0


def test_many_steps_are_thinned_but_overflows_kept():
    records = [
        {"step": i, "loss_scale": 2.0 ** (15 - (i >= 1234)), "overflow": i == 1233}
        for i in range(3000)
    ]
    view = LossScaleView(records, max_points=100)
    svg = view.snapshot_html()
    assert 'class="mw-overflow" data-step="1233"' in svg
    assert svg.count("H") < 200 and "mw-point" not in svg  # no dots for so many steps
    with pytest.raises(traitlets.TraitError, match="max_points must be >= 2"):
        view.max_points = 1


def _scale(**fields):
    return [{"step": 0, "loss_scale": 2.0, "overflow": False, **fields}]


NEEDS = r"Each record needs `step`, `loss_scale` and `overflow`"

WRONG_RECORDS = [
    pytest.param(
        lambda: LossScaleView([]),
        ValueError,
        "records",
        r"is empty.*pass at least one step",
        id="empty",
    ),
    pytest.param(
        lambda: LossScaleView("records.csv"),
        TypeError,
        "records",
        rf"sequence of records .*got str\. {NEEDS}",
        id="a file name",
    ),
    pytest.param(
        lambda: LossScaleView(42), TypeError, "records", rf"got int\. {NEEDS}", id="a number"
    ),
    pytest.param(
        lambda: LossScaleView([32768.0, 16384.0]),
        TypeError,
        "records[0]",
        rf"is float 32768\.0, not a record\. {NEEDS}",
        id="the loss scales alone",
    ),
    pytest.param(
        lambda: LossScaleView(keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD())),
        TypeError,
        "records",
        r"got LossScaleOptimizer\. Each record needs",
        id="the optimizer",
    ),
    pytest.param(
        lambda: LossScaleView(_scale()[0]),
        TypeError,
        "records",
        r"single dict: wrap it in a list, LossScaleView\(\[record\]\), or add it with append",
        id="one record, not in a list",
    ),
    pytest.param(
        lambda: LossScaleView([{"step": 0, "loss_scale": 1.0}]),
        ValueError,
        "records[0] (step 0) has no 'overflow'",
        NEEDS,
        id="no overflow",
    ),
    pytest.param(
        lambda: LossScaleView([Record(0, 1.0, False), {"step": 1, "overflow": True}]),
        ValueError,
        "records[1] (step 1) has no 'loss_scale'",
        NEEDS,
        id="no loss scale in the second record",
    ),
    pytest.param(
        lambda: LossScaleView([0.5]),
        TypeError,
        "records[0]",
        rf"is float 0\.5, not a record\. {NEEDS}",
        id="a list of a number",
    ),
    pytest.param(
        lambda: LossScaleView(_scale(loss_scale=0.0)),
        ValueError,
        "loss_scale",
        r"positive finite number \(dynamic loss scales are powers of 2, such as 32768\), got 0\.0",
        id="scale 0",
    ),
    pytest.param(
        lambda: LossScaleView(_scale(loss_scale=-8)),
        ValueError,
        "loss_scale",
        r"positive finite number .*such as 32768",
        id="a negative scale",
    ),
    pytest.param(
        lambda: LossScaleView(_scale(loss_scale=float("nan"), overflow=0)),
        ValueError,
        "loss_scale",
        r"positive finite number .*such as 32768",
        id="a NaN scale",
    ),
    pytest.param(
        lambda: LossScaleView(_scale(loss_scale="big")),
        TypeError,
        "loss_scale",
        r"must be a positive number such as 32768\.0, got str 'big'",
        id="a word as the scale",
    ),
    pytest.param(
        lambda: LossScaleView(_scale(overflow="no")),
        TypeError,
        "overflow",
        r"must be True or False, got str 'no'",
        id="overflow as a word",
    ),
    pytest.param(
        lambda: LossScaleView(_scale(overflow=3)),
        TypeError,
        "overflow",
        r"must be True or False, got 3",
        id="overflow as a count",
    ),
    pytest.param(
        lambda: LossScaleView(_scale(step=0.5)),
        TypeError,
        "step",
        r"must be a whole number \(the training step\), got 0\.5",
        id="a fractional step",
    ),
    pytest.param(
        lambda: LossScaleView(_scale(step=[0, 1])),
        ValueError,
        "step",
        r"must be a single number, got shape \(2,\)",
        id="several steps in one record",
    ),
    pytest.param(
        lambda: LossScaleView([Record(1, 2.0, False), Record(1, 2.0, False)]),
        ValueError,
        "records",
        r"steps must increase.*pass the records in training order",
        id="a step twice",
    ),
    pytest.param(
        lambda: LossScaleView().append(1024.0),
        TypeError,
        "record",
        rf"record is float 1024\.0, not a record\. {NEEDS}",
        id="append a number",
    ),
    pytest.param(
        lambda: LossScaleView(max_points=1),
        traitlets.TraitError,
        "max_points",
        r">= 2 \(a line needs two points\), got 1",
        id="max_points 1",
    ),
]


@pytest.mark.wrong_inputs("mirrorwidgets.LossScaleView")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_RECORDS)
def test_wrong_inputs_get_a_clear_message(refuses, call, error, argument, match):
    refuses(call, error, argument, match)


def test_tensor_fields_are_read():
    view = LossScaleView(
        [{"step": tf.constant(7), "loss_scale": tf.Variable(64.0), "overflow": tf.constant(True)}]
    )
    assert (view.step, view.loss_scale, view.overflow_steps) == (7, 64.0, (7,))


def _tick_positions(svg: str) -> dict[str, float]:
    pattern = r'<line x1="56" y1="([\d.]+)"[^>]*/><text class="mw-tick"[^>]*>([^<]*)</text>'
    return {label: float(y) for y, label in re.findall(pattern, svg)}


def test_powers_of_two_are_evenly_spaced():
    scales = [2.0**15, 2.0**10, 2.0**12]
    records = [{"step": i, "loss_scale": s, "overflow": False} for i, s in enumerate(scales)]
    svg = LossScaleView(records).snapshot_html()
    y = _tick_positions(svg)
    labels = ["2¹⁰", "2¹¹", "2¹²", "2¹³", "2¹⁴", "2¹⁵"]
    assert list(y) == labels
    gaps = [y[a] - y[b] for a, b in zip(labels, labels[1:], strict=False)]
    assert max(gaps) - min(gaps) < 0.2  # log2: each doubling is the same height
    dots = re.findall(r'class="mw-point" data-step="(\d)" cx="[\d.]+" cy="([\d.]+)"', svg)
    assert [(int(s), float(cy)) for s, cy in dots] == [
        (0, y["2¹⁵"]),
        (1, y["2¹⁰"]),
        (2, y["2¹²"]),
    ]
    wide = [{"step": 0, "loss_scale": 1.0, "overflow": False}]
    wide.append({"step": 1, "loss_scale": 2.0**24, "overflow": False})
    assert list(_tick_positions(LossScaleView(wide).snapshot_html())) == [
        "2⁰",
        "2⁴",
        "2⁸",
        "2¹²",
        "2¹⁶",
        "2²⁰",
        "2²⁴",
    ]


def test_records_from_mirrorkit_run_loss_scale(strategy):
    import mirrorkit as mk

    if not hasattr(mk, "run_loss_scale"):  # pragma: no cover - added alongside this view
        pytest.skip("mirrorkit.run_loss_scale is not available")
    history = mk.run_loss_scale(strategy, steps=3, overflow_steps=[1])
    view = LossScaleView(history)
    assert view.records == LossScaleView(list(history.records)).records
    assert view.overflow_steps == (1,) == tuple(history.skipped_steps)
    assert [r.loss_scale for r in view.records] == list(history.scales)
    svg = view.snapshot_html()
    assert 'class="mw-overflow" data-step="1"' in svg


def test_the_header_shows_the_scale_after_the_last_step_when_records_carry_it(training):
    records, observed = training
    after = [dict(record, next_scale=o[1]) for record, o in zip(records, observed, strict=True)]
    view = LossScaleView(after)
    assert view.loss_scale == observed[-1][1] == 2048.0  # grown again after step 5
    grown = LossScaleView(after[:4])  # step 3 overflowed: the scale went from 2048 to 1024
    assert (grown.records[-1].loss_scale, grown.loss_scale) == (2048.0, 1024.0)
    assert "loss scale now 2¹⁰ = 1024" in grown.snapshot_html()
    assert "loss scale at the last step 2¹¹ = 2048" in LossScaleView(records[:4]).snapshot_html()


def test_a_history_from_mirrorkit_gives_the_scale_now(strategy):
    history = mk.run_loss_scale(
        strategy, steps=3, overflow_steps=[], initial_scale=4.0, dynamic_growth_steps=1
    )
    view = LossScaleView(history)
    assert view.loss_scale == history.records[-1].next_scale == 32.0
