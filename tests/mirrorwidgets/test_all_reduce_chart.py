from __future__ import annotations

import dataclasses
import json
import math
import re

import pytest
import tensorflow as tf
import traitlets

import mirrorkit as mk
from mirrorkit.measure.allreduce import benchmark_all_reduce
from mirrorkit.measure.benchmark import AllReduceBenchmark, record_from_times
from mirrorkit.report import style
from mirrorwidgets import AllReduceChart
from mirrorwidgets._all_reduce_chart_render import ALGORITHM_COLORS, DASHES
from mirrorwidgets._snapshot import displayed

ALGORITHMS = ("collective", "one_device")
COUNTS = (2, 4)
SIZES = (4 << 10, 64 << 10)


@pytest.fixture(scope="module")
def measured(devices):
    """A real, tiny benchmark on the session's simulated replicas, plus a skipped entry."""
    result = benchmark_all_reduce(
        list(ALGORITHMS),
        sizes=["4KiB", "64KiB"],
        replicas=list(COUNTS),
        devices=devices,
        repeats=2,
        warmup=1,
        copy_bytes=1 << 20,
    )
    assert len(result.records) == len(ALGORITHMS) * len(COUNTS) * len(SIZES), result.skipped
    skipped = {**result.skipped, "nccl": "NCCL all-reduce cannot run here: no GPU."}
    return dataclasses.replace(result, skipped=skipped)


def _points(svg: str, css: str) -> dict[tuple[str, int], list[tuple[float, float]]]:
    lines = {}
    pattern = (
        rf'<polyline class="{css}" data-algorithm="([^"]+)" data-replicas="(\d+)" points="([^"]+)"'
    )
    for algorithm, n, points in re.findall(pattern, svg):
        lines[(algorithm, int(n))] = [tuple(map(float, p.split(","))) for p in points.split()]
    return lines


def _ticks(svg: str, start: int, stop: int) -> dict[str, float]:
    """Grid-line labels -> y, for grid lines between y=start and y=stop."""
    pattern = r'<line x1="64" y1="([\d.]+)"[^>]*/><text class="mw-tick"[^>]*>([^<]*)</text>'
    return {label: float(y) for y, label in re.findall(pattern, svg) if start <= float(y) <= stop}


def test_state_of_a_real_benchmark(measured):
    chart = AllReduceChart(measured)
    assert chart.algorithms == ALGORITHMS
    assert chart.replica_counts == COUNTS
    assert chart.sizes == SIZES
    assert chart.num_records == 8
    assert chart.copy_bandwidth == measured.copy_bandwidth > 0
    assert chart.skipped["nccl"].startswith("NCCL")
    assert chart.replicas is None and chart.show_table
    assert chart.benchmark is measured


def test_one_line_per_algorithm_and_replica_count_in_each_panel(measured):
    svg = AllReduceChart(measured).snapshot_html()
    for css in ("mw-time", "mw-busbw"):
        lines = _points(svg, css)
        assert set(lines) == {(a, n) for a in ALGORITHMS for n in COUNTS}
        for points in lines.values():
            assert len(points) == 2 and points[0][0] < points[1][0]  # 4 KiB left of 64 KiB
    assert svg.count('class="mw-point"') == 2 * 8  # every record in both panels
    assert svg.count('class="mw-range"') == 8  # min-max bar per record
    for algorithm in ALGORITHMS:
        color = ALGORITHM_COLORS[algorithm]
        assert re.search(
            rf'data-algorithm="{algorithm}" data-replicas="2" [^>]*stroke="{color}"', svg
        )
    # Replica counts differ by dash pattern; the first is solid.
    assert f'stroke-dasharray="{DASHES[1]}"' in svg
    line = re.search(
        r'<polyline class="mw-busbw" data-algorithm="collective" data-replicas="2"[^>]*>', svg
    )
    assert "dasharray" not in line.group(0)
    assert svg.count('class="mw-legend"') == 4
    assert "collective, 4 replicas" in svg


def test_log_log_axes_place_the_points_where_the_numbers_say(measured):
    svg = AllReduceChart(measured).snapshot_html()
    # x: one power of 2 per tick, evenly spaced, 4 KiB to 64 KiB.
    tick = r'<text x="([\d.]+)" y="\d+" text-anchor="middle" fill="currentColor">([^<]+)</text>'
    xs = re.findall(tick, svg)
    labels = [label for _, label in xs]
    assert labels == ["4 KiB", "8 KiB", "16 KiB", "32 KiB", "64 KiB"]
    gaps = [float(b) - float(a) for (a, _), (b, _) in zip(xs, xs[1:], strict=False)]
    assert max(gaps) - min(gaps) < 0.2
    busbw = _points(svg, "mw-busbw")
    times = _points(svg, "mw-time")
    panels = (
        (busbw, "busbw", _ticks(svg, TOP + PANEL + GAP, TOP + 2 * PANEL + GAP), _rate),
        (times, "median_s", _ticks(svg, TOP, TOP + PANEL), _seconds),
    )
    for lines, field, ticks, parse in panels:
        grid = sorted((y, parse(label)) for label, y in ticks.items())
        # Larger values higher, a line per decade (or per k decades when a measured range
        # spans more than six: _plot.log_ticks), the same step everywhere.
        steps = [math.log10(a / b) for (_, a), (_, b) in zip(grid, grid[1:], strict=False)]
        assert round(steps[0]) >= 1
        assert steps == pytest.approx([round(steps[0])] * len(steps))
        (y0, v0), (y_end, v_end) = grid[0], grid[-1]
        y1 = y0 + (y_end - y0) / math.log10(v0 / v_end)  # one decade lower
        for rec in measured.records:
            x, y = lines[(rec.algorithm, rec.replicas)][SIZES.index(rec.bytes)]
            assert x == pytest.approx(float(xs[0 if rec.bytes == SIZES[0] else -1][0]), abs=0.1)
            expected = y0 + (math.log10(v0) - math.log10(getattr(rec, field))) * (y1 - y0)
            assert y == pytest.approx(expected, abs=0.25)


TOP, PANEL, GAP = 18, 150, 24


def _rate(label: str) -> float:
    number, unit = label.split()
    return float(number) * {"B/s": 1, "KB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9}[unit]


def _seconds(label: str) -> float:
    number, unit = label.split()
    return float(number) * {"s": 1, "ms": 1e-3, "us": 1e-6}[unit]


def test_copy_bandwidth_is_the_reference_line_on_the_busbw_panel(measured):
    svg = AllReduceChart(measured).snapshot_html()
    assert svg.count('<line class="mw-copy-bw"') == 1
    y = float(re.search(r'<line class="mw-copy-bw" x1="64" y1="([\d.]+)"', svg).group(1))
    assert 18 + 150 + 24 <= y <= 18 + 150 + 24 + 150  # in the busbw panel, not the time panel
    from mirrorkit.report.units import format_rate

    assert f"memory copy {format_rate(measured.copy_bandwidth)}" in svg
    # Every simulated-CPU busbw is far below a memory copy: every point is under the line.
    cys = [float(v) for v in re.findall(r'data-panel="busbw"[^>]*cy="([\d.]+)"', svg)]
    assert len(cys) == 8 and all(cy > y for cy in cys)
    unknown = AllReduceChart(dataclasses.replace(measured, copy_bandwidth=0.0))
    assert "mw-copy-bw" not in unknown.snapshot_html()
    assert "memory copy not measured" in unknown.snapshot_html()


def test_table_and_skipped_listing(measured):
    chart = AllReduceChart(measured)
    html = chart.snapshot_html()
    rows = re.findall(
        r'<tr class="mw-row" data-algorithm="(\w+)" data-replicas="(\d)" data-bytes="(\d+)"', html
    )
    assert rows == [(r.algorithm, str(r.replicas), str(r.bytes)) for r in measured.records]
    assert "busbw/copy" in html and "%" in html
    assert html.count("<li data-skipped=") == len(measured.skipped)
    assert '<li data-skipped="nccl"><strong>nccl</strong>: NCCL all-reduce cannot run here' in html
    assert "simulated on one CPU" in html  # the machine says the replicas are simulated
    assert "<script" not in html
    bundle = chart._repr_mimebundle_()
    assert bundle["text/html"] == displayed(html)
    assert "application/vnd.jupyter.widget-view+json" in bundle
    chart.show_table = False
    assert 'class="mw-table"' not in chart.snapshot_html()
    assert chart._table.value == "" and not chart._table_toggle.value
    chart._table_toggle.value = True  # the toggle button drives the trait
    assert chart.show_table and 'class="mw-table"' in chart._table.value


def test_replica_count_selection(measured):
    chart = AllReduceChart(measured, replicas=4)
    svg = chart.snapshot_html()
    assert set(_points(svg, "mw-time")) == {("collective", 4), ("one_device", 4)}
    assert 'stroke-dasharray="6,3"' not in svg.split('class="mw-copy-bw"')[0]  # one count: solid
    assert svg.count('<tr class="mw-row"') == 4
    assert chart._menu.value == 4
    shown = style.themed(svg)  # the widget shows it too
    assert chart._chart.value in shown and chart._table.value in shown
    chart._menu.value = 0  # "every replica count"
    assert chart.replicas is None
    assert len(_points(chart._chart.value, "mw-time")) == 4
    chart.replicas = 2
    assert chart._menu.value == 2
    with pytest.raises(traitlets.TraitError, match=r"measured replica count \(2, 4\), got 3"):
        chart.replicas = 3
    assert chart.replicas == 2  # a refused count changes nothing


def test_json_round_trip_and_update(measured, tmp_path):
    html = AllReduceChart(measured).snapshot_html()
    assert AllReduceChart(measured).snapshot_html() == html  # deterministic text
    assert AllReduceChart(measured.to_json()).snapshot_html() == html
    path = tmp_path / "bench.json"
    measured.to_json(path)
    assert AllReduceChart.from_json(path).snapshot_html() == html
    assert AllReduceChart(str(path)).snapshot_html() == html

    chart = AllReduceChart(measured, replicas=4)
    header, controls, plot, table, skipped, status = chart.children
    only_two = dataclasses.replace(
        measured, records=tuple(r for r in measured.records if r.replicas == 2), skipped={}
    )
    chart.update(only_two)
    assert chart.children == (header, controls, plot, table, skipped, status)
    assert chart.replicas is None and chart.replica_counts == (2,)  # 4 was not measured
    assert chart._menu.disabled and skipped.value == ""
    assert chart.num_records == 4


def test_single_size_draws_points_without_lines():
    record = record_from_times("collective", 2, 1 << 20, [1e-3, 2e-3], 1e10)
    svg = AllReduceChart(AllReduceBenchmark((record,), copy_bandwidth=1e10)).snapshot_html()
    assert "<polyline" not in svg
    assert svg.count('class="mw-point"') == 2
    assert "1 MiB" in svg


def _one_record() -> AllReduceBenchmark:
    record = record_from_times("collective", 2, 4096, [1e-4], 1e10)
    return AllReduceBenchmark((record,), copy_bandwidth=1e10)


WRONG_BENCHMARKS = [
    pytest.param(
        lambda: AllReduceChart(None),
        TypeError,
        "benchmark",
        r"got NoneType: write AllReduceChart\(mk\.benchmark_all_reduce",
        id="None",
    ),
    pytest.param(
        lambda: AllReduceChart(mk.inspect(tf.constant(1.0))),
        TypeError,
        "benchmark",
        r"got ReplicaTable: write AllReduceChart\(mk\.benchmark_all_reduce",
        id="a ReplicaTable from mk.inspect",
    ),
    pytest.param(
        lambda: AllReduceChart(mk.make_strategy()),
        TypeError,
        "benchmark",
        r"got MirroredStrategy: write AllReduceChart\(mk\.benchmark_all_reduce",
        id="the strategy",
    ),
    pytest.param(
        lambda: AllReduceChart([1e-4, 2e-4]),
        TypeError,
        "benchmark",
        r"AllReduceBenchmark.*got list: write",
        id="a list of times",
    ),
    pytest.param(
        lambda: AllReduceChart(json.loads(_one_record().to_json())),
        TypeError,
        "benchmark",
        r"got dict \(JSON already parsed: pass the text or the file's path instead\)",
        id="the JSON already parsed",
    ),
    pytest.param(
        lambda: AllReduceChart(benchmark_all_reduce),
        TypeError,
        "benchmark",
        r"the function benchmark_all_reduce itself \(call it and pass its result\)",
        id="the function, not called",
    ),
    pytest.param(
        lambda: AllReduceChart("collective"),
        ValueError,
        "benchmark 'collective'",
        r"'collective' is an algorithm's name: benchmark it with "
        r"mk\.benchmark_all_reduce\(\['collective'\]\)",
        id="an algorithm's name",
    ),
    pytest.param(
        lambda: AllReduceChart("results.json"),
        ValueError,
        "benchmark 'results.json'",
        r"no such file\)\. Pass what AllReduceBenchmark\.to_json wrote",
        id="a missing file",
    ),
    pytest.param(
        lambda: AllReduceChart('{"format": "other"}'),
        ValueError,
        "benchmark",
        r"not a mirrorkit all-reduce benchmark.*AllReduceBenchmark\.to_json",
        id="other JSON",
    ),
    pytest.param(
        lambda: AllReduceChart("{not json"),
        ValueError,
        "benchmark",
        r"the text is not JSON.*pass the file AllReduceBenchmark\.to_json",
        id="broken JSON",
    ),
    pytest.param(
        lambda: AllReduceChart(AllReduceBenchmark((), {"nccl": "no GPU"})),
        ValueError,
        "benchmark",
        r"no records.*nccl: no GPU.*run benchmark_all_reduce with an algorithm that runs here",
        id="every algorithm skipped",
    ),
    pytest.param(
        lambda: AllReduceChart(AllReduceBenchmark(())),
        ValueError,
        "benchmark",
        r"holds no records.*run benchmark_all_reduce with an algorithm that runs here",
        id="no records",
    ),
    pytest.param(
        lambda: AllReduceChart(_one_record(), replicas=8),
        traitlets.TraitError,
        "replicas",
        r"None \(every count\) or a measured replica count \(2\), got 8",
        id="replicas not measured",
    ),
    pytest.param(
        lambda: setattr(AllReduceChart(_one_record()), "replicas", 3),
        traitlets.TraitError,
        "replicas",
        r"None \(every count\) or a measured replica count \(2\), got 3",
        id="replicas set to a count not measured",
    ),
    pytest.param(
        lambda: AllReduceChart(_one_record(), replicas="2"),
        traitlets.TraitError,
        "'replicas'",
        r"expected an int",
        id="replicas as a string",
    ),
]


@pytest.mark.wrong_inputs("mirrorwidgets.AllReduceChart")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_BENCHMARKS)
def test_wrong_inputs_get_a_clear_message(refuses, call, error, argument, match):
    refuses(call, error, argument, match)


def test_records_that_cannot_be_drawn_on_a_log_axis():
    good = record_from_times("collective", 2, 4096, [1e-4], 1e10)
    bad = dataclasses.replace(good, median_s=0.0)
    with pytest.raises(
        ValueError, match=r"record 1 \(collective, 2 replicas, 4096 bytes\): median_s"
    ):
        AllReduceChart(AllReduceBenchmark((good, bad)))
    with pytest.raises(ValueError, match="busbw must be a positive finite"):
        AllReduceChart(AllReduceBenchmark((dataclasses.replace(good, busbw=float("nan")),)))
