from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pytest
import traitlets

from mirrorkit.measure.step_trace import StepPhases
from mirrorkit.report import style
from mirrorwidgets import StepTimeline
from mirrorwidgets._snapshot import displayed
from mirrorwidgets._step_timeline_render import COLORS, HEIGHT, TOP

PHASES = ("input_wait_s", "compute_s", "all_reduce_s")


def _phases(step: int, wait: float, compute: float, reduce: float) -> StepPhases:
    return StepPhases(step, wait, compute + reduce, reduce, compute)


# Step 0 traces the tf.function: far slower than the others.
STEPS = [_phases(0, 0.004, 0.9, 0.003)] + [
    _phases(i, 0.001 * (i % 3), 0.008 + 0.0005 * i, 0.002 + 0.0001 * i) for i in range(1, 10)
]


@dataclass
class Trace:
    """What StepTracer.result() returns, as far as the timeline reads it."""

    steps: tuple
    replicas: int = 4


def _bars(svg: str) -> dict[int, dict]:
    bars = {}
    pattern = (
        r'<g class="mw-bar[^"]*" data-step="(\d+)" data-last="(\d+)" data-total="([^"]+)">(.*?)</g>'
    )
    for step, last, total, inner in re.findall(pattern, svg):
        segments = re.findall(
            r'<rect class="mw-seg" data-phase="(\w+)" x="[\d.]+" y="([\d.]+)" width="[\d.]+" '
            r'height="([\d.]+)" fill="([^"]+)"',
            inner,
        )
        bars[int(step)] = {
            "last": int(last),
            "total": float(total),
            "segments": [(p, float(y), float(h), fill) for p, y, h, fill in segments],
        }
    return bars


def _scale(svg: str) -> float:
    """Pixels per second of the time axis, from its grid lines."""
    pattern = r'<line x1="56" y1="([\d.]+)"[^>]*/><text class="mw-tick"[^>]*>([^<]*)</text>'
    ticks = re.findall(pattern, svg)
    (y0, zero), (y1, label) = ticks[0], ticks[-1]
    assert zero == "0"
    number, unit = label.split()
    seconds = float(number) * {"s": 1, "ms": 1e-3, "us": 1e-6}[unit]
    return (float(y0) - float(y1)) / seconds


def test_state_after_construction_and_from_a_trace():
    timeline = StepTimeline(STEPS[1:])
    assert timeline.num_steps == 9 and timeline.step == 9
    assert timeline.last_total_s == pytest.approx(STEPS[-1].total_s)
    assert timeline.clipped_steps == ()
    assert [s.step for s in timeline.steps] == list(range(1, 10))
    traced = StepTimeline(Trace(tuple(STEPS[1:])))
    assert traced.snapshot_html() != timeline.snapshot_html()  # says "4 replicas"
    assert "4 replicas" in traced.snapshot_html()
    assert traced.steps == timeline.steps
    dicts = [
        {f: getattr(s, f) for f in ("step", "input_wait_s", "step_s", "all_reduce_s", "compute_s")}
        for s in STEPS[1:]
    ]
    assert StepTimeline(dicts).snapshot_html() == timeline.snapshot_html()


def test_one_bar_per_step_its_segments_summing_to_the_step():
    svg = StepTimeline(STEPS[1:]).snapshot_html()
    bars = _bars(svg)
    assert sorted(bars) == list(range(1, 10))
    scale = _scale(svg)
    bottom = TOP + HEIGHT
    for record in STEPS[1:]:
        bar = bars[record.step]
        assert [p for p, *_ in bar["segments"]] == list(PHASES)  # bottom to top
        assert [fill for *_, fill in bar["segments"]] == [COLORS[p] for p in PHASES]
        heights = {p: h for p, _, h, _ in bar["segments"]}
        assert sum(heights.values()) == pytest.approx(record.total_s * scale, abs=0.15)
        for phase in PHASES:
            assert heights[phase] == pytest.approx(getattr(record, phase) * scale, abs=0.15)
        # Stacked: each segment starts where the one below ends, the first at the axis.
        ys = [(y, h) for _, y, h, _ in bar["segments"]]
        assert ys[0][0] + ys[0][1] == pytest.approx(bottom, abs=0.01)
        for (y_low, _), (y_up, h_up) in zip(ys, ys[1:], strict=False):
            assert y_up + h_up == pytest.approx(y_low, abs=0.01)
        assert bar["total"] == pytest.approx(record.total_s, rel=1e-5)
    assert "mw-over" not in svg and "input wait" in svg and "all-reduce" in svg
    assert "<script" not in svg
    assert StepTimeline(STEPS[1:])._repr_mimebundle_()["text/html"] == displayed(svg)
    header = re.search(r'data-phase="all_reduce_s">.*?all-reduce ([\d.]+)%', svg)
    expected = sum(s.all_reduce_s for s in STEPS[1:]) / sum(s.total_s for s in STEPS[1:])
    assert float(header.group(1)) == pytest.approx(100 * expected, rel=1e-2)


def test_a_slow_first_step_is_cut_not_flattening_the_others():
    timeline = StepTimeline(STEPS)
    svg = timeline.snapshot_html()
    assert timeline.clipped_steps == (0,)
    assert svg.count('class="mw-over"') == 1 and 'class="mw-bar mw-clipped" data-step="0"' in svg
    assert "beyond the axis" in svg and "step 0 (907 ms)" in svg
    bars = _bars(svg)
    assert sum(h for _, _, h, _ in bars[0]["segments"]) == pytest.approx(HEIGHT, abs=0.15)
    assert sum(h for _, _, h, _ in bars[9]["segments"]) > HEIGHT / 3  # the others stay readable
    timeline.y_max = 1.0  # an explicit axis shows everything
    assert timeline.clipped_steps == () and "mw-over" not in timeline._chart.value
    with pytest.raises(traitlets.TraitError, match="y_max must be None or > 0"):
        timeline.y_max = 0.0


def test_append_is_throttled_and_flush_draws_the_rest():
    timeline = StepTimeline(title="live", min_interval=3600)
    header, chart, notes, status = timeline.children
    assert "no steps yet" in timeline.snapshot_html() and timeline.step is None
    assert timeline.append(STEPS[0]) is True  # the first redraw is always due
    drawn = chart.value
    assert [timeline.append(s) for s in STEPS[1:]] == [False] * 9
    assert timeline.num_steps == 10 and timeline.step == 9  # the state is up to date
    assert chart.value == drawn  # the drawing is not, until a redraw is due
    assert timeline.snapshot_html() == StepTimeline(STEPS, title="live").snapshot_html()
    assert timeline.flush() is True and timeline.flush() is False
    assert timeline.children == (header, chart, notes, status)  # same widgets, new HTML
    assert chart.value in style.themed(timeline.snapshot_html())
    with pytest.raises(ValueError, match="step 3 comes after step 9"):
        timeline.append(_phases(3, 0.0, 0.01, 0.0))
    assert timeline.num_steps == 10  # refused steps leave the timeline as it was
    timeline.min_interval = 0.0
    timeline.budget = 1.0
    assert timeline.append(_phases(10, 0.0, 0.01, 0.001)) is True
    timeline.update(STEPS[:2])  # replaces, and draws at once
    assert (
        timeline.num_steps == 2 and '"mw-bar' in chart.value and 'data-step="9"' not in chart.value
    )


def test_long_runs_are_drawn_as_means_of_consecutive_steps():
    rng = np.random.default_rng(0)
    steps = [
        _phases(i, float(w), float(c), float(a))
        for i, (w, c, a) in enumerate(rng.uniform(0.001, 0.01, size=(1000, 3)))
    ]
    timeline = StepTimeline(steps, max_points=100)
    svg = timeline.snapshot_html()
    bars = _bars(svg)
    assert len(bars) == 100 and timeline.num_steps == 1000
    assert bars[0]["last"] == 9 and bars[990]["last"] == 999
    mean = sum(s.total_s for s in steps[:10]) / 10
    assert bars[0]["total"] == pytest.approx(mean, rel=1e-5)
    assert "mean of consecutive steps" in svg
    assert StepTimeline(steps, max_points=100).snapshot_html() == svg  # deterministic text
    with pytest.raises(traitlets.TraitError, match="max_points must be >= 1"):
        timeline.max_points = 0


NEEDS = r"Each step needs `step`, `input_wait_s`, `step_s`, `all_reduce_s` and `compute_s`"
TIME = r"must be a time >= 0 seconds"


def _tracer(strategy):
    from mirrorkit.measure.tracing import StepTracer

    return StepTracer(strategy)


WRONG_STEPS = [
    pytest.param(
        lambda s: StepTimeline([]),
        ValueError,
        "steps",
        r"empty.*trace at least one step",
        id="empty",
    ),
    pytest.param(
        lambda s: StepTimeline(Trace(())),
        ValueError,
        "steps",
        r"empty.*trace at least one step",
        id="a trace of no steps",
    ),
    pytest.param(
        lambda s: StepTimeline(_tracer(s)),
        TypeError,
        "steps",
        r"got the StepTracer that measures it: .*StepTimeline\(tracer\.result\(\)\)",
        id="the tracer, not its result",
    ),
    pytest.param(
        lambda s: StepTimeline(42),
        TypeError,
        "steps",
        rf"StepTrace .*got int\. {NEEDS}",
        id="a number",
    ),
    pytest.param(
        lambda s: StepTimeline("trace.json"),
        TypeError,
        "steps",
        rf"got str\. {NEEDS}",
        id="a file name",
    ),
    pytest.param(
        lambda s: StepTimeline(STEPS[0]),
        TypeError,
        "steps",
        r"single StepPhases: wrap it in a list, StepTimeline\(\[step\]\), or add it with append",
        id="one step, not in a list",
    ),
    pytest.param(
        lambda s: StepTimeline([0.5, 0.25]),
        TypeError,
        "steps[0]",
        rf"is float 0\.5, not a step\. {NEEDS}",
        id="the step times alone",
    ),
    pytest.param(
        lambda s: StepTimeline([{"step": 0, "input_wait_s": 0.0, "step_s": 0.1}]),
        ValueError,
        "steps[0] (step 0) has no 'all_reduce_s'",
        NEEDS,
        id="a missing phase",
    ),
    pytest.param(
        lambda s: StepTimeline([_phases(0, -0.001, 0.01, 0.0)]),
        ValueError,
        "input_wait_s",
        rf"\(step 0\): input_wait_s {TIME}, got -0\.001",
        id="a negative wait",
    ),
    pytest.param(
        lambda s: StepTimeline([_phases(0, 0.0, -0.01, 0.0)]),
        ValueError,
        "step_s",
        TIME,
        id="a negative step",
    ),
    pytest.param(
        lambda s: StepTimeline([StepPhases(0, 0.0, 0.01, float("nan"), 0.01)]),
        ValueError,
        "all_reduce_s",
        TIME,
        id="a NaN all-reduce time",
    ),
    pytest.param(
        lambda s: StepTimeline([StepPhases(0, 0.0, 0.01, 0.002, 0.002)]),
        ValueError,
        "compute_s + all_reduce_s",
        r"the phases of a step must add up to it",
        id="phases that do not add up",
    ),
    pytest.param(
        lambda s: StepTimeline([StepPhases(0.5, 0.0, 0.01, 0.0, 0.01)]),
        TypeError,
        "step",
        r"whole number \(the training step\), got 0\.5",
        id="a fractional step",
    ),
    pytest.param(
        lambda s: StepTimeline(
            [{"step": 0, "input_wait_s": "x", "step_s": 1, "all_reduce_s": 0, "compute_s": 1}]
        ),
        TypeError,
        "input_wait_s",
        r"must be a time in seconds such as 0\.01, got str 'x'",
        id="a word as a time",
    ),
    pytest.param(
        lambda s: StepTimeline([STEPS[2], STEPS[1]]),
        ValueError,
        "steps",
        r"steps must increase.*pass the steps in training order",
        id="steps out of order",
    ),
    pytest.param(
        lambda s: StepTimeline().append(0.01),
        TypeError,
        "phases",
        rf"phases is float 0\.01, not a step\. {NEEDS}",
        id="append a time",
    ),
    pytest.param(
        lambda s: StepTimeline(STEPS, y_max=0),
        traitlets.TraitError,
        "y_max",
        r"None or > 0 seconds, got 0\.0",
        id="y_max 0",
    ),
    pytest.param(
        lambda s: StepTimeline(budget=0.0),
        traitlets.TraitError,
        "budget",
        r"> 0 and <= 1, got 0\.0: write e\.g\. budget=0\.05",
        id="budget 0",
    ),
    pytest.param(
        lambda s: StepTimeline(budget=5),
        traitlets.TraitError,
        "budget",
        r"for 5% write budget=0\.05",
        id="budget in percent",
    ),
    pytest.param(
        lambda s: StepTimeline(min_interval=-1.0),
        traitlets.TraitError,
        "min_interval",
        r">= 0 seconds, got -1\.0",
        id="a negative min_interval",
    ),
]


@pytest.mark.wrong_inputs("mirrorwidgets.StepTimeline")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_STEPS)
def test_wrong_inputs_get_a_clear_message(refuses, strategy, call, error, argument, match):
    refuses(lambda: call(strategy), error, argument, match)


def test_fed_live_by_a_real_step_tracer(strategy):
    import tensorflow as tf

    from mirrorkit.measure.tracing import StepTracer

    @tf.function
    def step():
        context = tf.distribute.get_replica_context
        return strategy.run(lambda: context().all_reduce("sum", tf.ones([1024])))

    timeline = StepTimeline()
    tracer = StepTracer(strategy, profile_every=1, profile_from=1, on_step=timeline.append)
    for _ in range(4):
        with tracer.step():
            step()
    timeline.flush()
    assert timeline.num_steps == 3  # steps 1, 2 and 3 were profiled and drawn as they ended
    assert timeline.step == 3
