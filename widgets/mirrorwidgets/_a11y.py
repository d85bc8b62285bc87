"""What every widget shares for keyboard and screen-reader users: its stylesheet, live region.

Stock ipywidgets (7.7.1 to 8) give a control a name only through its ``description`` (a
``<label>`` tied to the input in 8, beside it in 7) or its ``tooltip`` (a button's title),
and an HTML widget any markup, ``role`` and ``aria-live`` included, but no attribute on a
control itself. So every widget here is a box of stock controls, each with a description,
and one :class:`Status`: an HTML widget holding a polite live region whose text says what
the last change of state was. :data:`STYLE` rides along in it: the palette's dark values
(:data:`mirrorkit.report.style.THEME_CSS`) and a 2 px focus ring. A line chart's picture
has its numbers beside it as tables (:func:`lines_twin`), drawn by the charts' one table
twin, :func:`mirrorwidgets._plot.twin`.

Example:
    >>> import ipywidgets
    >>> box = ipywidgets.VBox()
    >>> announce(box, "step 1 of 6")
    >>> box.children[-1].text, "mw-widget" in box._dom_classes
    ('step 1 of 6', True)
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence

import ipywidgets
import traitlets

from mirrorkit.report import style
from mirrorwidgets import _plot
from mirrorwidgets._lines_chart import Series

STYLE = f"<style>{style.THEME_CSS}{style.FOCUS_CSS}</style>"
SHORT = 240  # characters: an announcement is a summary, not the whole drawing
_TAGS = re.compile(r"<(style|script|title)\b.*?</\1>|<[^>]+>", re.S | re.I)


class Status(ipywidgets.HTML):
    """A polite live region (``role="status"``), visually hidden, and the widgets' stylesheet.

    Example:
        >>> status = Status("ready")
        >>> 'aria-live="polite"' in status.value, status.text
        (True, 'ready')
    """

    text = traitlets.Unicode("", help="What the region says now.")

    def __init__(self, text: str = "", **kwargs):
        super().__init__(**kwargs)
        self.add_class("mw-status-box")
        self.text = text
        self._draw()
        self.observe(self._draw, names="text")

    def _draw(self, change=None) -> None:
        self.value = (
            f'{STYLE}<div class="mw-status" role="status" aria-live="polite" '
            f'aria-atomic="true">{html.escape(self.text)}</div>'
        )


class ThemedHTML(ipywidgets.HTML):
    """An HTML widget whose palette colours follow the page's theme (``style.themed``).

    Example:
        >>> ThemedHTML('<b style="color:#cf222e">x</b>').value
        '<b style="color:var(--mw-bad,#cf222e)">x</b>'
    """

    @traitlets.validate("value")
    def _themed(self, proposal) -> str:
        return style.themed(proposal["value"])


def text_of(markup: str) -> str:
    """The words of an HTML fragment, one line, at most :data:`SHORT` characters.

    Example:
        >>> text_of("<style>b{}</style><b>step 2</b>:  <i>reduce</i>")
        'step 2: reduce'
    """
    words = " ".join(html.unescape(_TAGS.sub(" ", markup)).split()).replace(" :", ":")
    return words if len(words) <= SHORT else words[: SHORT - 1] + "…"


def announce(widget: ipywidgets.Box, text: str) -> None:
    """Say ``text`` in the widget's live region (made, and kept last among its children).

    Example:
        >>> box = ipywidgets.VBox()
        >>> announce(box, "a"); announce(box, "b")
        >>> len(box.children), box.children[0].text
        (1, 'b')
    """
    status = getattr(widget, "_mw_status", None)
    if status is None or status.comm is None:  # none yet, or closed with its box's children
        kept = tuple(child for child in widget.children if child is not status)
        status = widget._mw_status = Status()
        widget.add_class("mw-widget")
        widget.children = (*kept, status)
    elif status not in widget.children:
        widget.children = (*widget.children, status)
    status.text = text


def lines_twin(series: Sequence[Series], value: str = "loss") -> str:
    """What a line chart (:func:`mirrorwidgets._lines_chart.lines_svg`) draws, as two tables.

    "the chart in brief": one row per line, its number of points, its first and last point
    and its lowest finite value. "the chart as a table": one row per step, one column per
    line, each cell a point the chart draws (empty where a line has none), thinned as every
    twin is (:data:`mirrorwidgets._plot.TWIN_ROWS`). Numbers are written as the chart's
    tooltips write them (:func:`mirrorwidgets._plot.number`).

    Args:
        series: The lines, as given to ``lines_svg``.
        value: What the lines measure (the tables' column names).

    Returns:
        HTML: two ``<details class="mw-twin">`` tables, 8 px apart; "" for no lines.

    Example:
        >>> a = Series("replica 0", [(1, 2.0), (2, 0.5), (3, 0.75)], 0)
        >>> html = lines_twin([a, Series("replica 1", [(3, 1.0)], 1)])
        >>> "<td>replica 0</td><td>3</td><td>1</td><td>2</td><td>3</td><td>0.75</td>" in html
        True
        >>> "<td>3</td><td>0.75</td><td>1</td></tr>" in html  # step 3: both lines
        True
    """
    if not series:
        return ""
    brief = []
    for s in series:
        (first, start), (last, end) = s.points[0], s.points[-1]
        finite = [(v, step) for step, v in s.points if math.isfinite(v)]
        low, at = min(finite, key=lambda pair: pair[0]) if finite else (None, "-")
        number = "-" if low is None else _plot.number(low)
        row = (s.label, len(s.points), first, _plot.number(start), last, _plot.number(end))
        brief.append((*row, number, at))
    heads = ["line", "points", "first step", f"first {value}", "last step", f"last {value}"]
    heads += [f"lowest {value}", "at step"]
    brief_table = _plot.twin("the chart in brief", heads, brief)
    columns = ["step", *(s.label for s in series)]
    table = _plot.twin("the chart as a table", columns, _by_step(series))
    # 8 px apart: each summary is a target at least 24 px from the next (WCAG 2.5.8).
    return f'<div style="display:grid;gap:8px;margin-top:4px">{brief_table}{table}</div>'


def _by_step(series: Sequence[Series]) -> list[tuple]:
    """One row per step and a column per line; a step a line drew twice takes two rows."""
    at: list[dict[int, list[float]]] = []
    for s in series:
        points: dict[int, list[float]] = {}
        for step, v in s.points:
            points.setdefault(step, []).append(v)
        at.append(points)
    rows = []
    for step in sorted({step for points in at for step in points}):
        for k in range(max(len(points.get(step, ())) for points in at)):
            cells = [points.get(step, [])[k : k + 1] for points in at]
            rows.append((step, *(_plot.number(c[0]) if c else "" for c in cells)))
    return rows
