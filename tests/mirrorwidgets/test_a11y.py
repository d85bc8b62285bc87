"""What every widget shares for keyboard and screen-reader users (mirrorwidgets/_a11y.py)."""

from __future__ import annotations

import html
import math
import re

import ipywidgets

from mirrorkit import StepPhases
from mirrorkit.report import style
from mirrorwidgets import ClusterView, LossScaleView, StepTimeline
from mirrorwidgets._a11y import (
    SHORT,
    STYLE,
    Status,
    ThemedHTML,
    announce,
    lines_twin,
    text_of,
)
from mirrorwidgets._lines_chart import Series

RECORDS = [
    {"step": 0, "loss_scale": 32768.0, "overflow": False, "loss": 2.0},
    {"step": 1, "loss_scale": 32768.0, "overflow": True, "loss": float("inf")},
    {"step": 2, "loss_scale": 16384.0, "overflow": False, "loss": 1.2},
]
STEPS = [StepPhases(i, 0.001, 0.01, 0.002, 0.008) for i in range(3)]


def test_the_live_region_is_polite_atomic_and_says_only_the_text():
    status = Status("<b>step 1</b>")
    region = '<div class="mw-status" role="status" aria-live="polite" aria-atomic="true">'
    assert region in status.value
    assert "&lt;b&gt;step 1&lt;/b&gt;" in status.value  # text, never markup
    assert status.value.startswith(STYLE) and style.THEME_CSS in STYLE and style.FOCUS_CSS in STYLE
    assert "outline:2px solid" in style.FOCUS_CSS


def test_announce_keeps_one_region_last_even_when_the_children_are_replaced():
    box = ipywidgets.VBox([ipywidgets.HTML("a")])
    announce(box, "first")
    region = box.children[-1]
    box.children = [ipywidgets.HTML("b")]  # a widget that lays itself out again
    announce(box, "second")
    assert box.children[-1] is region and region.text == "second"
    region.close()  # closed with the old children: a new one takes its place
    announce(box, "third")
    assert box.children[-1] is not region and box.children[-1].text == "third"


def test_text_of_reads_words_not_markup_and_stays_short():
    assert text_of("<style>.a{}</style><strong>Loss</strong> &middot; 3 steps") == "Loss · 3 steps"
    assert len(text_of("<p>" + "word " * 200 + "</p>")) == SHORT


def test_themed_html_follows_the_page_theme():
    assert ThemedHTML(f'<i style="color:{style.GOOD}">').value == (
        f'<i style="color:var(--mw-good,{style.GOOD})">'
    )


def test_each_change_of_state_is_announced():
    scale = LossScaleView(RECORDS[:2])
    assert scale.children[-1].text.startswith("Dynamic loss scale")
    scale.append(RECORDS[2])
    assert "3 steps" in scale.children[-1].text
    cluster = ClusterView(2)
    first = cluster.children[-1].text
    import mirrorkit as mk

    cluster.update(mk.WorkerEvent(1, "failed", text="exit status -9"))
    cluster.flush()
    assert cluster.children[-1].text != first and "failed" in cluster.children[-1].text


def test_charts_have_a_table_twin():
    html = LossScaleView(RECORDS).snapshot_html()
    twin = html[html.index('<details class="mw-twin">') :]
    assert '<th scope="col">loss scale</th>' in twin
    assert twin.count("<tr>") == 1 + len(RECORDS)
    assert twin.count("<td>yes</td>") == 1  # the one overflow step
    timeline = StepTimeline(STEPS).snapshot_html()
    assert '<th scope="col">all-reduce</th>' in timeline and timeline.count("<tr>") >= 4


_TWIN = re.compile(
    r'<details class="mw-twin"(?: open)?><summary>([^<]*)</summary><table class="mw-table">'
    r"<thead><tr>(.*?)</tr></thead><tbody>(.*?)</tbody></table></details>",
    re.S,
)


def _cells(row: str, tag: str) -> list[str]:
    return [html.unescape(c) for c in re.findall(rf"<{tag}[^>]*>(.*?)</{tag}>", row, re.S)]


def twin_tables(markup: str) -> dict[str, list[dict[str, str]]]:
    """Each table twin in ``markup``, by its summary: its rows as {column: cell text}."""
    tables = {}
    for summary, head, body in _TWIN.findall(markup):
        heads = _cells(head, "th")
        rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
        tables[html.unescape(summary)] = [
            dict(zip(heads, _cells(row, "td"), strict=True)) for row in rows
        ]
    return tables


def assert_lines_twin(markup: str, lines: dict[str, list[tuple[int, float]]]) -> None:
    """The twins in ``markup`` hold exactly ``lines`` (label -> the points the chart draws):
    each line's count, first, last and lowest point in brief, and step by step every point
    (or, in a thinned table, only drawn points; the first and the last step always)."""
    tables = twin_tables(markup)
    brief = {row["line"]: row for row in tables["the chart in brief"]}
    assert list(brief) == list(lines)
    for label, points in lines.items():
        finite = [(v, step) for step, v in points if math.isfinite(v)]
        low, at = min(finite, key=lambda pair: pair[0])
        assert brief[label] == {
            "line": label,
            "points": str(len(points)),
            "first step": str(points[0][0]),
            "first loss": f"{points[0][1]:.4g}",
            "last step": str(points[-1][0]),
            "last loss": f"{points[-1][1]:.4g}",
            "lowest loss": f"{low:.4g}",
            "at step": str(at),
        }
    rows = tables["the chart as a table"]
    steps = sorted({step for points in lines.values() for step, _ in points})
    assert [row["step"] for row in rows[:1] + rows[-1:]] == [str(steps[0]), str(steps[-1])]
    # Unthinned, a step has as many rows as the line with most points there.
    whole = len(rows) == sum(
        max(sum(s == step for s, _ in points) for points in lines.values()) for step in steps
    )
    for label, points in lines.items():
        shown = [(int(row["step"]), row[label]) for row in rows if row[label]]
        drawn = [(step, f"{v:.4g}") for step, v in points]
        if whole:
            assert shown == drawn, label
        else:
            assert shown and all(point in drawn for point in shown), (label, shown, drawn)


def test_a_line_charts_twins_hold_its_points():
    lines = {
        "replica 0": [(1, 2.0), (2, float("nan")), (3, 0.5), (3, 0.25)],  # step 3 twice
        "replica 1": [(2, 1.5), (3, 1.0), (4, 3.0)],
    }
    series = [Series(label, points, look) for look, (label, points) in enumerate(lines.items())]
    markup = lines_twin(series)
    assert_lines_twin(markup, lines)
    steps = [(row["step"], row["replica 0"]) for row in twin_tables(markup)["the chart as a table"]]
    assert steps == [("1", "2"), ("2", "nan"), ("3", "0.5"), ("3", "0.25"), ("4", "")]
    assert lines_twin([]) == ""
    # A long line: the table keeps every k-th step and the last; the brief, all of it.
    long = [(step, 1.0 / step) for step in range(1, 501)]
    markup = lines_twin([Series("worker 0", long, 0)])
    assert_lines_twin(markup, {"worker 0": long})
    assert len(twin_tables(markup)["the chart as a table"]) <= 70
