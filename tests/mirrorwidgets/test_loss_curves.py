from __future__ import annotations

import math
import re
from dataclasses import dataclass

import keras
import numpy as np
import pytest
import traitlets

from mirrorkit.training.scaling import ScalingCurve, ScalingSweep, run_scaling_sweep
from mirrorwidgets import LossCurves

EXAMPLES = (64, 128, 192)


def _curve(replicas, losses, final=0.5):
    return ScalingCurve(replicas, 8 * replicas, 24 // replicas, 0.1, 0, EXAMPLES, losses, final)


def _sweep(scaled, *curves):
    return ScalingSweep(tuple(curves), 8, 1, 0.1, scaled, 64, 192)


SAME = _sweep(False, _curve(1, (1.2, 0.8, 0.5)), _curve(8, (1.3, 1.2, 1.1)))
SCALED = _sweep(True, _curve(1, (1.2, 0.8, 0.5)), _curve(8, (1.25, 0.9, 0.6)))


@dataclass(frozen=True)
class Run:
    label: str
    examples: tuple
    losses: tuple


def _polylines(html: str) -> list[str]:
    return re.findall(r'<polyline class="mw-curve"[^>]*>', html)


def test_one_sweep_is_one_panel_with_one_line_per_replica_count():
    view = LossCurves(SAME)
    assert view.num_panels == 1 and view.labels == ("1 replica", "8 replicas")
    html = view.snapshot_html()
    lines = _polylines(html)
    assert len(lines) == 2
    assert 'data-label="1 replica" data-panel="0"' in lines[0]
    assert 'data-label="8 replicas"' in lines[1]
    assert html.count(" points=") == 2 and all(len(p.split()) == 3 for p in _points(html))
    assert "same learning rate 0.1" in html  # the panel's heading
    assert ">1 replica</text>" in html and ">8 replicas</text>" in html  # the legend
    assert "2 runs" in html and "examples" in html


def _points(html: str) -> list[str]:
    return re.findall(r'<polyline class="mw-curve"[^>]* points="([^"]*)"', html)


def test_two_sweeps_side_by_side_share_the_loss_axis_and_the_colours():
    view = LossCurves([SAME, SCALED])
    assert view.num_panels == 2 and len(view.labels) == 4
    html = view.snapshot_html()
    assert "learning rate 0.1 x replicas" in html and "one loss axis" in html
    lines = _polylines(html)
    color = {re.search(r'data-label="([^"]+)" data-panel="(\d)"', s).groups(): s for s in lines}
    stroke = re.compile(r'stroke="([^"]+)"')
    assert stroke.search(color["1 replica", "0"])[1] == stroke.search(color["1 replica", "1"])[1]
    assert stroke.search(color["1 replica", "0"])[1] != stroke.search(color["8 replicas", "0"])[1]
    # Shared axis: the same loss is drawn at the same height in both panels.
    left, right = _points(html)[0], _points(html)[2]
    assert [p.split(",")[1] for p in left.split()] == [p.split(",")[1] for p in right.split()]
    # Tick labels only on the first panel when the axis is shared; on each when not.
    labelled = re.compile(r'class="mw-tick"[^>]*>[^<]+<')
    shared = len(labelled.findall(html))
    view.shared_y = False
    assert len(labelled.findall(view.snapshot_html())) > shared > 0
    assert "one loss axis each" in view.snapshot_html()


def test_runs_as_records_dicts_and_labels():
    view = LossCurves(
        [
            Run("same rate", (64, 128), (1.0, 0.9)),
            {"label": "scaled", "examples": np.array([64, 128]), "losses": [1.0, 0.6]},
        ],
        title="Two runs",
    )
    assert view.labels == ("same rate", "scaled")
    assert view.panels[0].heading == "" and view.panels[0].runs[1].examples == (64, 128)
    assert "<strong>Two runs</strong>" in view.snapshot_html()
    view.update([Run("other", (1,), (0.5,))])
    assert view.labels == ("other",) and '<circle class="mw-curve"' in view.snapshot_html()


def test_a_diverged_run_breaks_its_line_and_is_named():
    sweep = _sweep(True, _curve(1, (1.2, 0.8, 0.5)), _curve(8, (1.3, math.inf, math.nan)))
    html = LossCurves(sweep).snapshot_html()
    assert "loss not finite" in html and "8 replicas (learning rate 0.1 x replicas)" in html
    assert len(_polylines(html)) == 1  # the 8-replica run is a lone dot
    assert html.count('<circle class="mw-curve" data-label="8 replicas"') == 1


def test_the_html_is_the_same_bytes_every_time():
    assert LossCurves([SAME, SCALED]).snapshot_html() == LossCurves([SAME, SCALED]).snapshot_html()
    bundle = LossCurves(SAME)._repr_mimebundle_()
    assert '<svg class="mw-loss-curves"' in bundle["text/html"]


def test_a_real_sweep(devices):
    def model_fn():
        keras.utils.set_random_seed(0)
        return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])

    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 2)).astype("float32")
    sweep = run_scaling_sweep(
        devices, model_fn, (x, x.sum(axis=1, keepdims=True)), loss="mse", replica_counts=(1, 2)
    )
    view = LossCurves(sweep)
    assert view.labels == ("1 replica", "2 replicas")
    assert all(len(p.split()) == 4 for p in _points(view.snapshot_html()))  # 64 examples / 16


WRONG_RUNS = [
    pytest.param(
        lambda: LossCurves("same_rate"),
        TypeError,
        "runs",
        r"runs is str, not a sweep or a list\. Pass a ScalingSweep",
        id="a name instead of the sweep",
    ),
    pytest.param(
        lambda: LossCurves([]),
        ValueError,
        "runs",
        r"runs is empty: there is nothing to draw",
        id="no runs",
    ),
    pytest.param(
        lambda: LossCurves([SAME, SAME.curves[0]]),
        TypeError,
        "runs",
        r"mixes sweeps and single runs: pass a list of sweeps",
        id="a sweep and a curve",
    ),
    pytest.param(
        lambda: LossCurves([0.5, 0.4]),
        TypeError,
        "runs[0]",
        r"runs\[0\] is float 0\.5, not a run\. Pass a ScalingSweep",
        id="the final losses alone",
    ),
    pytest.param(
        lambda: LossCurves([{"label": "a", "losses": [0.5]}]),
        ValueError,
        "examples",
        r"has no 'examples'\. Pass a ScalingSweep",
        id="no examples",
    ),
    pytest.param(
        lambda: LossCurves([{"label": "a", "examples": [64, 128], "losses": [0.5]}]),
        ValueError,
        "losses",
        r"2 examples but 1 losses: give one loss per point",
        id="lengths differ",
    ),
    pytest.param(
        lambda: LossCurves([{"label": "a", "examples": [128, 64], "losses": [0.5, 0.4]}]),
        ValueError,
        "examples",
        r"increase from point to point, got \[128, 64\]",
        id="examples out of order",
    ),
    pytest.param(
        lambda: LossCurves([{"label": "a", "examples": [0.5, 1.0], "losses": [0.5, 0.4]}]),
        TypeError,
        "examples",
        r"must be whole numbers \(the examples seen at each point\)",
        id="epochs as fractions",
    ),
    pytest.param(
        lambda: LossCurves([{"label": "a", "examples": [64], "losses": ["0.5"]}]),
        TypeError,
        "losses",
        r"must be a flat list of numbers",
        id="losses as text",
    ),
    pytest.param(
        lambda: LossCurves([{"examples": [64], "losses": [0.5]}]),
        ValueError,
        "label",
        r"has no 'label' and no 'replicas'",
        id="no label",
    ),
    pytest.param(
        lambda: LossCurves([Run("a", (64,), (0.5,)), Run("a", (64,), (0.4,))]),
        ValueError,
        "labelled 'a'",
        r"give each run of a panel its own label",
        id="a label twice",
    ),
    pytest.param(
        lambda: LossCurves([Run("a", (64, 128), (math.nan, math.inf))]),
        ValueError,
        "runs",
        r"no loss in runs is finite \(every run diverged\)",
        id="nothing finite",
    ),
    pytest.param(
        lambda: LossCurves(SAME, panel_width=20),
        traitlets.TraitError,
        "panel_width",
        r">= 100 pixels \(room for the lines\), got 20",
        id="panel too narrow",
    ),
]


@pytest.mark.wrong_inputs("mirrorwidgets.LossCurves")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_RUNS)
def test_wrong_inputs_get_a_clear_message(refuses, call, error, argument, match):
    refuses(call, error, argument, match)
