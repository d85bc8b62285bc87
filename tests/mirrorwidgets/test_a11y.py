"""What every widget shares for keyboard and screen-reader users (mirrorwidgets/_a11y.py)."""

from __future__ import annotations

import ipywidgets

from mirrorkit import StepPhases
from mirrorkit.report import style
from mirrorwidgets import ClusterView, LossScaleView, StepTimeline
from mirrorwidgets._a11y import SHORT, STYLE, Status, ThemedHTML, announce, text_of

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
