from __future__ import annotations

import re
from html import unescape

import pytest
import traitlets

import mirrorkit as mk
from mirrorkit.report import style
from mirrorwidgets._cluster_view_render import worker_label
from mirrorwidgets._snapshot import displayed
from mirrorwidgets.cluster_view import STATE_COLORS, ClusterView
from tests.mirrorkit.test_devices import run_fresh
from tests.mirrorwidgets.test_a11y import assert_lines_twin
from tests.mirrorwidgets.test_palette import contrast


def _devices(task: int, count: int = 1) -> tuple[str, ...]:
    return tuple(f"/job:worker/replica:0/task:{task}/device:CPU:{k}" for k in range(count))


def _run(view: ClusterView, events) -> None:
    for event in events:
        view.update(event)


def _script(n: int = 3, steps: int = 5) -> list[mk.WorkerEvent]:
    """A run of ``n`` workers: start, form the cluster, train; the last one fails."""
    events = [mk.WorkerEvent(i, "starting", address=f"127.0.0.1:{2222 + i}") for i in range(n)]
    events += [mk.WorkerEvent(i, "ready", devices=_devices(i, 2 - min(i, 1))) for i in range(n)]
    for step in range(1, steps + 1):
        for i in range(n):
            loss = 1.0 / step + 0.1 * i
            events.append(mk.WorkerEvent(i, "step", step=step, metrics={"loss": loss}))
    events.append(mk.WorkerEvent(0, "output", text=f"epoch 1: loss {1.0 / steps:.3f}"))
    events.append(mk.WorkerEvent(n - 1, "failed", text="exit status -9 (killed by SIGKILL)"))
    return events


def _light(colour: str) -> str:
    """A themed colour's light value: ``var(--mw-bad,#cf222e)`` -> ``#cf222e``."""
    return re.sub(r"^var\(--mw-[\w-]+,(#\w+)\)$", r"\1", colour)


def _cluster_strokes(svg: str) -> dict[int, tuple[str, str]]:
    """Worker -> (fill, stroke) of its box in graphviz's SVG."""
    found = re.findall(
        r'<g id="clust\d+" class="cluster">\s*<title>cluster_w(\d+)</title>\s*'
        r'<path fill="([^"]+)" stroke="([^"]+)"',
        svg,
    )
    return {int(i): (_light(fill), _light(stroke)) for i, fill, stroke in found}


def _state_fills(svg: str) -> dict[int, str]:
    """Worker -> fill of its state node (the one that names its state and address)."""
    found = re.findall(
        r'<g id="node\d+" class="node">\s*<title>w(\d+)</title>\s*<path fill="([^"]+)"', svg
    )
    return {int(i): _light(fill) for i, fill in found}


def _ring(source: str) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in re.findall(r"\bw(\d+) -> w(\d+)\b", source)]


def _loss_lines(html: str) -> dict[str, tuple[str, list[tuple[float, float]], str]]:
    """Series label -> (stroke colour, points, tooltip) of the loss chart's lines."""
    found = re.findall(
        r'<polyline class="mw-series" data-series="([^"]+)"[^>]* points="([^"]+)" '
        r'fill="none" stroke="([^"]+)"[^>]*><title>([^<]*)</title>',
        html,
    )
    return {
        label: (stroke, [tuple(map(float, p.split(","))) for p in points.split()], tip)
        for label, points, stroke, tip in found
    }


def _table_rows(html: str) -> dict[int, str]:
    rows = re.findall(r'<tr class="mw-worker" data-worker="(\d+)"(.*?)</tr>', html)
    return {int(i): row for i, row in rows}


def test_states_and_colours_follow_the_events():
    view = ClusterView(3, min_interval=0.0, budget=1.0)
    assert view.states == ("starting",) * 3 and view.num_workers == 3
    _run(view, _script(3))
    view.update(mk.WorkerEvent(1, "stopped", text="stopped by the notebook"))
    view.update(mk.WorkerEvent(0, "finished"))
    assert view.states == ("finished", "stopped", "failed")
    assert view.steps == (5, 5, 5)
    assert view.num_events == len(_script(3)) + 2 == view.status.events
    svg = view._topology.value
    boxes = _cluster_strokes(svg)
    assert {i: stroke for i, (_, stroke) in boxes.items()} == {
        0: STATE_COLORS["finished"],
        1: STATE_COLORS["stopped"],
        2: STATE_COLORS["failed"],
    }
    assert _state_fills(svg) == {i: stroke for i, (_, stroke) in boxes.items()}
    assert boxes[2][0] != boxes[0][0]  # the box is tinted by state, too
    # Every state has its own colour, and a worker that has only started is grey.
    assert len(set(STATE_COLORS.values())) == len(mk.WORKER_STATES) == len(STATE_COLORS)
    fresh = ClusterView(2)
    fresh.update(mk.WorkerEvent(1, "ready", devices=_devices(1)))
    fresh.update(mk.WorkerEvent(0, "step", step=1))
    fills = _state_fills(fresh.snapshot_html())  # the last update may wait for a redraw
    assert fills == {0: STATE_COLORS["training"], 1: STATE_COLORS["ready"]}
    assert STATE_COLORS["starting"] == style.AXIS


def test_text_on_a_state_colour_reads_in_both_themes():
    # One worker in each state; the text drawn on its colours, in the light and dark palette.
    view = ClusterView(6)
    kinds = ("ready", "step", "finished", "failed", "stopped")
    _run(view, [mk.WorkerEvent(i + 1, kind, step=1) for i, kind in enumerate(kinds)])
    html = view.snapshot_html()
    dark = {value: style.DARK[name] for name, value in style.LIGHT.items()}
    for worker, state in enumerate(view.states):
        label = re.search(
            rf"<title>cluster_w{worker}</title>\s*<path fill=\"([^\"]+)\".*?"
            rf"fill=\"([^\"]+)\">{re.escape(worker_label(worker))}<",
            html,
            re.S,
        )
        badge = re.search(
            rf'data-worker="{worker}".*?class="mw-state" style="color:([^;]+);background:([^;]+);',
            html,
        )
        node = re.search(
            rf"<title>w{worker}</title>\s*<path fill=\"([^\"]+)\".*?fill=\"([^\"]+)\">{state}<",
            html,
            re.S,
        )
        assert label and badge and node, (state, label, badge, node)  # each has a colour
        pairs = {  # where: (text, background)
            "box label": (label[2], label[1]),
            "table badge": (badge[1], badge[2]),
            "node": (node[2], node[1]),
        }
        for place, (text, back) in pairs.items():
            text, back = _light(text), _light(back)
            for theme, colour in (("light", lambda c: c), ("dark", dark.get)):
                ratio = contrast(colour(text), colour(back))
                assert ratio >= 4.5, (state, place, theme, text, back, ratio)


def test_labels_addresses_and_devices_are_drawn():
    view = ClusterView(2, addresses=["10.0.0.1:2222", "10.0.0.2:2222"])
    assert "devices: not known yet" in view.snapshot_html()
    view.update(mk.WorkerEvent(0, "ready", devices=_devices(0, 2)))
    view.update(mk.WorkerEvent(1, "starting", address="10.0.0.9:3333"))  # replaces the given one
    view.update(mk.WorkerEvent(1, "ready", devices=_devices(1)))
    svg = view.snapshot_html()
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert "worker 0 (chief)" in texts and "worker 1" in texts
    assert "worker 1 (chief)" not in texts
    assert "10.0.0.1:2222" in texts and "10.0.0.9:3333" in texts
    assert "10.0.0.2:2222" not in texts
    assert texts.count("CPU:0") == 2 and texts.count("CPU:1") == 1
    assert not any("/job:worker" in text for text in texts)  # short names only
    assert "devices: not known yet" not in svg


@pytest.mark.parametrize(
    ("n", "ring"),
    [(1, []), (2, [(0, 1), (1, 0)]), (3, [(0, 1), (1, 2), (2, 0)])],
)
def test_ring_all_reduce_edges(n, ring):
    view = ClusterView(n)
    assert list(view.edges) == ring
    from mirrorwidgets import _cluster_view_render as cr

    source = cr.graph(view.status).source
    assert _ring(source) == ring
    svg = view._topology.value
    assert svg.count('class="edge"') == len(ring)
    svg = unescape(svg)  # graphviz writes - as &#45;
    for a, b in ring:  # arrows end on the worker boxes, not inside them
        assert f"ltail=cluster_w{a}" in source.replace('"', "")
        assert f"lhead=cluster_w{b}" in source.replace('"', "")
    if n == 1:
        assert "nothing to all-reduce between workers" in svg
    else:
        assert f"ring all-reduce across {n} workers" in svg


def test_table_shows_step_loss_message_and_last_line():
    view = ClusterView(3)
    _run(view, _script(3, steps=4))
    rows = _table_rows(view.snapshot_html())
    assert sorted(rows) == [0, 1, 2]
    assert 'data-state="training"' in rows[0] and ">worker 0 (chief)<" in rows[0]
    assert 'class="mw-step">4<' in rows[0]
    assert 'class="mw-loss">0.25<' in rows[0]  # 1/4
    assert 'class="mw-loss">0.45<' in rows[2]  # 1/4 + 0.2
    assert "epoch 1: loss 0.250" in rows[0]
    assert 'data-state="failed"' in rows[2]
    assert "exit status -9 (killed by SIGKILL)" in rows[2]
    assert "SIGKILL" not in rows[0] + rows[1]
    assert "1 failed" in view._header.value and "2 training" in view._header.value


def test_failed_worker_message_in_snapshot_and_widget():
    view = ClusterView(2)
    view.update(mk.WorkerEvent(1, "failed", text="ValueError: <bad> & worse"))
    for html in (view.snapshot_html(), view._table.value):
        assert "ValueError: &lt;bad&gt; &amp; worse" in html  # escaped
        assert "<bad>" not in html
    bundle = view._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/html"] == displayed(view.snapshot_html())
    assert view.snapshot_html().startswith('<div class="mw-cluster mw-snapshot"')
    assert "<svg" in bundle["text/html"] and "<?xml" not in bundle["text/html"]


def test_long_lines_are_cut_in_the_table_but_kept_in_a_tooltip():
    view = ClusterView(1)
    line = "x" * 500
    view.update(mk.WorkerEvent(0, "output", text=line))
    row = _table_rows(view.snapshot_html())[0]
    assert f'title="{line}"' in row and "x" * 200 + "<" not in row


def test_one_loss_line_per_worker_that_reported_a_loss():
    view = ClusterView(4)
    assert view.loss_figure() is None
    assert "mw-cluster-loss" not in view.snapshot_html()
    for step in (1, 2, 3):
        for worker in (0, 1, 3):
            view.update(
                mk.WorkerEvent(worker, "step", step=step, metrics={"loss": step * (worker + 1)})
            )
    view.update(mk.WorkerEvent(2, "step", step=1))  # no loss reported
    lines = view.loss_figure().axes[0].lines
    assert [line.get_label() for line in lines] == ["worker 0 (chief)", "worker 1", "worker 3"]
    assert list(lines[2].get_ydata()) == [4, 8, 12]
    html = view.snapshot_html()
    drawn = {
        line.get_label(): list(zip(line.get_xdata(), line.get_ydata(), strict=True))
        for line in lines
    }
    assert_lines_twin(html, drawn)  # the chart's points, as tables, in the snapshot
    view.flush()  # the live chart redraws at most every plot_interval seconds
    view._twin.shown = True  # and in the live view, behind its toggle button
    assert_lines_twin(view._twin.tables.value, drawn)
    assert html.count('<svg class="mw-cluster-loss"') == 1
    lines = _loss_lines(html)
    assert list(lines) == ["worker 0 (chief)", "worker 1", "worker 3"]
    # A worker keeps its palette colour whoever else reports: worker 3 has the 4th colour.
    assert [stroke for stroke, _, _ in lines.values()] == [style.SERIES[w] for w in (0, 1, 3)]
    assert [len(points) for _, points, _ in lines.values()] == [3, 3, 3]
    ys = [y for _, y in lines["worker 3"][1]]
    assert ys[0] > ys[1] > ys[2]  # losses 4, 8, 12: larger losses higher up
    assert lines["worker 3"][2] == "worker 3: 12 at step 3"
    assert html.count('class="mw-legend"') == 3


def test_long_loss_lines_are_thinned_but_keep_the_last_step():
    view = ClusterView(1, max_points=10)
    for step in range(1, 102):
        view.status.apply(mk.WorkerEvent(0, "step", step=step, metrics={"loss": 1.0 / step}))
    xs = list(view.loss_figure().axes[0].lines[0].get_xdata())
    assert len(xs) <= 12 and xs[0] == 1 and xs[-1] == 101
    html = view.snapshot_html()
    _, points, tip = _loss_lines(html)["worker 0 (chief)"]
    assert len(points) == len(xs)  # the chart draws the same thinned points
    ys = view.loss_figure().axes[0].lines[0].get_ydata()
    assert_lines_twin(html, {"worker 0 (chief)": list(zip(xs, ys, strict=True))})
    assert tip == "worker 0 (chief): 0.009901 at step 101"


def test_snapshot_is_deterministic_for_the_same_events():
    first = ClusterView(3, addresses=["a:1", "b:2", "c:3"])
    second = ClusterView(3, addresses=["a:1", "b:2", "c:3"], min_interval=0.0, budget=1.0)
    events = _script(3, steps=6)
    _run(first, events)
    _run(second, events)  # drawn at other moments; the snapshot must not care
    html = first.snapshot_html()
    assert html == second.snapshot_html() == first.snapshot_html()
    assert '<svg class="mw-cluster-loss"' in html
    for noise in ("Generated by", "<?xml", "graphviz version"):
        assert noise not in html


def test_the_snapshot_is_the_same_bytes_in_a_fresh_process():
    # What nbval compares: the chart is text, drawn the same in any process.
    code = """
    import mirrorkit as mk
    from mirrorwidgets.cluster_view import ClusterView
    view = ClusterView(2, addresses=["a:1", "b:2"])
    for step in range(1, 40):
        for worker in (0, 1):
            loss = 1.0 / step + 0.01 * worker
            view.update(mk.WorkerEvent(worker, "step", step=step, metrics={"loss": loss}))
    print(view.snapshot_html())
    """
    result = run_fresh(code)
    assert result.returncode == 0, result.stderr
    view = ClusterView(2, addresses=["a:1", "b:2"])
    for step in range(1, 40):
        for worker in (0, 1):
            loss = 1.0 / step + 0.01 * worker
            view.update(mk.WorkerEvent(worker, "step", step=step, metrics={"loss": loss}))
    assert result.stdout.rstrip("\n") == view.snapshot_html()
    assert '<svg class="mw-cluster-loss"' in result.stdout


def test_a_changing_port_moves_nothing_in_the_drawing():
    # nbval rewrites 127.0.0.1:<port> to 127.0.0.1:PORT; the layout must not depend on it.
    def drawn(port: int) -> str:
        view = ClusterView(2, addresses=[f"127.0.0.1:{port}", f"127.0.0.1:{port + 1}"])
        return re.sub(r"127\.0\.0\.1:\d{2,5}", "127.0.0.1:PORT", view.snapshot_html())

    assert drawn(80) == drawn(54321)


def test_long_host_names_widen_every_node_but_ports_still_move_nothing():
    host = "worker-0.training-job.default.svc.cluster.local"

    def drawn(port: int) -> str:
        view = ClusterView(2, addresses=[f"{host}:{port}", f"localhost:{port}"])
        return re.sub(rf"(?<=[a-z]):{port}\b", ":PORT", view.snapshot_html())

    def width(html: str) -> float:
        return float(re.search(r'<svg width="([\d.]+)pt"', html)[1])

    assert drawn(1) == drawn(65535)
    assert width(drawn(1)) > width(ClusterView(2).snapshot_html()) + 150


WRONG_CLUSTER = [
    pytest.param(
        lambda: ClusterView(0),
        ValueError,
        "num_workers",
        r"int >= 1 .*got int 0: a cluster has at least one worker: write e\.g\. ClusterView\(2\)",
        id="no workers",
    ),
    pytest.param(
        lambda: ClusterView(-2),
        ValueError,
        "num_workers",
        r"got int -2: a cluster has at least one worker",
        id="a negative count",
    ),
    pytest.param(
        lambda: ClusterView(2.0),
        ValueError,
        "num_workers",
        r"got float 2\.0: write ClusterView\(2\)",
        id="a float",
    ),
    pytest.param(
        lambda: ClusterView("2"),
        ValueError,
        "num_workers",
        r"got str '2': write ClusterView\(2\) without quotes",
        id="a string",
    ),
    pytest.param(
        lambda: ClusterView(True),
        ValueError,
        "num_workers",
        r"got bool True: .*write e\.g\. ClusterView\(2\)",
        id="a bool",
    ),
    pytest.param(
        lambda: ClusterView(["localhost:2222", "localhost:2223"]),
        ValueError,
        "num_workers",
        r"write ClusterView\(2, addresses=\[\.\.\.\]\) with this list",
        id="the addresses in place of the count",
    ),
    pytest.param(
        lambda: ClusterView(2, addresses=["localhost:2222"]),
        ValueError,
        "addresses",
        r"holds 1 address.*num_workers is 2; give one per worker",
        id="too few addresses",
    ),
    pytest.param(
        lambda: ClusterView(1, addresses="localhost:2222"),
        TypeError,
        "addresses",
        r"sequence of 'host:port' strings.*write addresses=\['localhost:2222'\]",
        id="one address as a string",
    ),
    pytest.param(
        lambda: ClusterView(2, addresses=[2222, 2223]),
        TypeError,
        "addresses",
        r"write addresses=\['localhost:2222', 'localhost:2223'\]",
        id="ports without hosts",
    ),
    pytest.param(
        lambda: ClusterView(2, addresses=["localhost:2222", 2223]),
        TypeError,
        "addresses",
        r"sequence of 'host:port' strings.*write addresses=\[",
        id="a port among the addresses",
    ),
    pytest.param(
        lambda: ClusterView(2).update(mk.WorkerEvent(2, "step", step=1)),
        ValueError,
        "worker 2",
        r"this view has 2 workers \(0\.\.1\): make the view .*ClusterView\(cluster\.num_workers\)",
        id="an event for a worker the view lacks",
    ),
    pytest.param(
        lambda: ClusterView(2).update({"worker": 0, "kind": "ready"}),
        TypeError,
        "event",
        r"got dict: rebuild a JSON dict with view\.update\(mirrorkit\.WorkerEvent\.from_json",
        id="an event as a dict",
    ),
    pytest.param(
        lambda: setattr(ClusterView(2), "budget", 0),
        traitlets.TraitError,
        "budget",
        r"> 0 and <= 1, got 0\.0: write e\.g\. budget=0\.05",
        id="budget 0",
    ),
    pytest.param(
        lambda: ClusterView(2, budget=5),
        traitlets.TraitError,
        "budget",
        r"for 5% write budget=0\.05",
        id="budget in percent",
    ),
    pytest.param(
        lambda: setattr(ClusterView(2), "max_points", 1),
        traitlets.TraitError,
        "max_points",
        r">= 2 \(a line needs two points\)",
        id="max_points 1",
    ),
    pytest.param(
        lambda: ClusterView(2, min_interval="fast"),
        traitlets.TraitError,
        "'min_interval'",
        r"expected a float",
        id="min_interval as a word",
    ),
]


@pytest.mark.wrong_inputs("mirrorwidgets.ClusterView")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_CLUSTER)
def test_wrong_inputs_get_a_clear_message(refuses, call, error, argument, match):
    refuses(call, error, argument, match)


def test_a_refused_event_changes_nothing():
    view = ClusterView(2)
    with pytest.raises(ValueError, match="worker 2"):
        view.update(mk.WorkerEvent(2, "step", step=1))
    with pytest.raises(TypeError, match="WorkerEvent.from_json"):
        view.update({"worker": 0, "kind": "ready"})
    assert view.num_events == 0 and view.states == ("starting", "starting")


def test_throttled_updates_never_lose_the_final_state():
    view = ClusterView(2, min_interval=3600)
    view.update(mk.WorkerEvent(0, "ready", devices=_devices(0)))  # drawn: the first update
    redrawn = [
        view.update(mk.WorkerEvent(0, "step", step=step, metrics={"loss": 1.0 / step}))
        for step in range(1, 201)
    ]
    assert not any(redrawn)  # all throttled ...
    assert 'data-state="ready"' in view._table.value  # ... so the widget is behind
    assert view.steps == (200, None)  # while the status is not
    assert view.update(mk.WorkerEvent(0, "finished"))
    rows = _table_rows(view._table.value)
    assert 'data-state="finished"' in rows[0] and 'class="mw-step">200<' in rows[0]
    assert _state_fills(view._topology.value)[0] == STATE_COLORS["finished"]
    assert view._plot.value.startswith('<svg class="mw-cluster-loss"')  # the final chart, too
    assert view._plot.layout.display is None
    final = [(step, 1.0 / step) for step in range(1, 201)]
    view._twin.shown = True
    assert_lines_twin(view._twin.tables.value, {"worker 0 (chief)": final})  # and its tables


def test_default_throttle_skips_most_of_a_fast_burst():
    view = ClusterView(1)
    for step in range(1, 201):
        view.update(mk.WorkerEvent(0, "step", step=step, metrics={"loss": 1.0}))
    view.update(mk.WorkerEvent(0, "finished"))
    assert view._throttle.updates < 50
    assert 'class="mw-step">200<' in view._table.value
    assert 'data-state="finished"' in view._table.value


def test_flush_and_setting_changes_redraw():
    view = ClusterView(1, min_interval=3600)
    view.update(mk.WorkerEvent(0, "ready"))
    view.update(mk.WorkerEvent(0, "step", step=3, metrics={"loss": 0.5}))
    assert 'class="mw-step">-<' in view._table.value and view._plot.value == ""
    view.flush()
    assert 'class="mw-step">3<' in view._table.value
    assert view._plot.value.startswith('<svg class="mw-cluster-loss"')
    view.title = "Two & more"
    assert "Two &amp; more" in view._header.value
    view.min_interval = 0.0
    assert view._throttle.min_interval == 0.0


def test_events_from_json_and_the_launcher_callback_shape():
    view = ClusterView(2)
    on_event = view.update  # what cluster.run(fn, on_event=view.update) calls
    for event in _script(2, steps=2):
        on_event(mk.WorkerEvent.from_json(event.to_json()))
    assert view.states == ("training", "failed")
