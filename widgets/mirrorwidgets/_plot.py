"""The one chart engine of the widgets: inline SVG written as text, its axes, ticks and thinning.

Every chart (loss scale, all-reduce, step timeline, loss per worker or replica) is drawn
with these helpers, in the colours of :mod:`mirrorkit.report.style`. Coordinates are
written with fixed rounding, so the same data always gives the same bytes, in any process
and with any matplotlib (none is involved): what nbval compares in the book's saved
outputs. ``bench/chart_engine.py`` measured this against matplotlib's SVG and PNG.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

from mirrorkit.report import style
from mirrorwidgets._render import esc

T = TypeVar("T")

LEFT = 56  # room for the y axis' labels
FONT_SIZE = 10
#: One dash pattern per series beyond the palette's colours (solid for the first).
DASHES = ("", "6,3", "2,2", "8,3,2,3", "1,3", "10,4")


def stride(count: int, max_points: int) -> int:
    """Every how many of ``count`` points one is drawn, so that about ``max_points`` are."""
    return max(1, math.ceil(count / max_points))


def thin(items: Sequence[T], max_points: int, keep: Callable[[T], bool] | None = None) -> list[T]:
    """At most about ``max_points`` items: every k-th, the last, and each one ``keep`` marks.

    The one thinning rule of every chart; the step timeline merges the same runs of
    ``stride`` steps into one bar each instead of picking one of them.

    Example:
        >>> thin(range(10), 4)
        [0, 3, 6, 9]
        >>> thin(range(10), 3, keep=lambda i: i == 5)
        [0, 4, 5, 8, 9]
    """
    if len(items) <= max_points:
        return list(items)
    every, last = stride(len(items), max_points), len(items) - 1
    return [
        item
        for i, item in enumerate(items)
        if i % every == 0 or i == last or (keep is not None and keep(item))
    ]


def number(value: float) -> str:
    """A value as a tick label or tooltip writes it: four significant digits."""
    return f"{value:.4g}"


def nice_step(span: float, count: int = 5) -> float:
    """A round step (1, 2 or 5 times a power of ten) that cuts ``span`` in about ``count``."""
    raw = span / count if span > 0 else 1.0
    base = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if factor * base >= raw:
            return factor * base
    return 10 * base  # pragma: no cover


def ticks(lo: float, hi: float, step: float) -> list[float]:
    """The multiples of ``step`` from ``lo`` to ``hi``: the places of an axis' ticks.

    Example:
        >>> ticks(3, 17, 5), ticks(0.0, 0.01, 0.005)
        ([5, 10, 15], [0.0, 0.005, 0.01])
    """
    first, last = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
    return [k * step for k in range(first, last + 1)]


def linear_range(values) -> tuple[float, float]:
    """The smallest and largest of ``values``, widened when they are (almost) one value.

    Example:
        >>> linear_range([1.0, 3.0]), linear_range([2.0]), linear_range([])
        ((1.0, 3.0), (1.5, 2.5), (0.0, 1.0))
    """
    if not values:
        return 0.0, 1.0
    lo, hi = min(values), max(values)
    if hi - lo <= 1e-12 * max(abs(hi), 1.0):
        pad = max(abs(hi) * 0.1, 0.5)
        lo, hi = lo - pad, hi + pad
    return lo, hi


def log_range(values, base: float) -> tuple[int, int]:
    """Whole exponents of ``base`` around positive ``values``: at least one power apart."""
    exponents = [math.log(v, base) for v in values]
    # Snap float noise (log10(1000) == 2.9999999999999996) to the power it stands for.
    exponents = [round(e) if abs(e - round(e)) < 1e-9 else e for e in exponents]
    lo, hi = math.floor(min(exponents)), math.ceil(max(exponents))
    return (lo, hi) if hi > lo else (lo, lo + 1)


def log_ticks(lo: int, hi: int, most: int = 6) -> list[int]:
    """Exponents from ``lo`` to ``hi`` to label: every k-th one, at most about ``most``."""
    every = max(1, math.ceil((hi - lo) / most))
    return list(range(lo, hi + 1, every))


def svg(css_class: str, width: float, height: float, title: str, parts) -> str:
    """An ``<svg>`` element of the charts' font, with a ``<title>`` and its parts inside."""
    return (
        f'<svg class="{css_class}" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'font-family="{style.FONT_FAMILY}" font-size="{FONT_SIZE}">'
        f"<title>{esc(title)}</title>{''.join(parts)}</svg>"
    )


def frame(top: float, height: float, plot_w: float, label: str, *, left: float = LEFT) -> str:
    """A panel's thin outline, its label above its top-left corner."""
    return (
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{height}" fill="none" '
        f'stroke="{style.AXIS}" stroke-width="0.5"/>'
        f'<text x="{left}" y="{top - 5}" fill="{style.MUTED}">{esc(label)}</text>'
    )


def grid_line(y: float, plot_w: float, label: str, *, left: float = LEFT) -> str:
    """A faint horizontal line across a panel, labelled (class ``mw-tick``) on the left."""
    return (
        f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="{style.AXIS}" '
        'stroke-opacity="0.3"/>'
        f'<text class="mw-tick" x="{left - 4}" y="{y + 3:.1f}" text-anchor="end" '
        'fill="currentColor">'
        f"{esc(label)}</text>"
    )


def x_tick(x: float, axis_y: float, label: str) -> str:
    """A short tick below a panel at ``x``, its label centred under it."""
    return (
        f'<line x1="{x:.1f}" y1="{axis_y}" x2="{x:.1f}" y2="{axis_y + 4}" '
        f'stroke="{style.AXIS}"/><text x="{x:.1f}" y="{axis_y + 15}" '
        f'text-anchor="middle" fill="currentColor">{esc(label)}</text>'
    )


def step_axis(x, first: int, last: int, axis_y: float) -> str:
    """Ticks at round steps from ``first`` to ``last`` below a panel, named "step" on the left."""
    every = max(1, int(nice_step(last - first)))
    marks = [x_tick(x(tick), axis_y, str(tick)) for tick in ticks(first, last, every) or [first]]
    return "".join(marks) + x_label(LEFT - 12, axis_y + 15, "step")


def x_label(x: float, y: float, text: str) -> str:
    """The name of the x axis, right-aligned at ``x``, in the muted colour."""
    return f'<text x="{x}" y="{y}" text-anchor="end" fill="{style.MUTED}">{esc(text)}</text>'


def legend_entry(x: float, y: float, color: str, label: str, *, dash: str = "", css="mw-legend"):
    """A short line in a series' colour and dash, its label to the right; ``y``: the baseline."""
    dashed = f' stroke-dasharray="{dash}"' if dash else ""
    return (
        f'<line class="{css}" x1="{x}" y1="{y - 3}" x2="{x + 28}" y2="{y - 3}" '
        f'stroke="{color}" stroke-width="1.5"{dashed}/>'
        f'<text x="{x + 34}" y="{y}" fill="currentColor">{esc(label)}</text>'
    )


def series_look(index: int) -> tuple[str, str]:
    """The colour and dash of the ``index``-th series: each its own colour and its own dash,
    so that series are told apart without colour too (the palette's colours repeat after
    five, the dashes after six)."""
    colors = style.SERIES
    return colors[index % len(colors)], DASHES[index % len(DASHES)]


def line(
    xy,
    css: str,
    color: str,
    *,
    width: float = 1.5,
    dash: str = "",
    attrs: str = "",
    title: str = "",
    dot: bool = True,
) -> str:
    """A series through the points ``xy``: polylines, broken where a point is None (a gap).

    A point with no neighbour becomes a dot (unless ``dot`` is False); ``attrs`` (starting
    with a space) go right after the class, ``title`` becomes each mark's tooltip.

    Example:
        >>> line([(0, 0), (10, 5), None, (20, 5)], "mw-s", "#000")
        '<polyline class="mw-s" points="0.0,0.0 10.0,5.0" fill="none" stroke="#000" \
stroke-width="1.5"/><circle class="mw-s" cx="20.0" cy="5.0" r="2" fill="#000"/>'
    """
    runs, run = [], []
    for point in (*xy, None):
        if point is None:
            if run:
                runs.append(run)
            run = []
        else:
            run.append(f"{point[0]:.1f},{point[1]:.1f}")
    end = f"><title>{esc(title)}</title></{{}}>" if title else "/>"
    dashed = f' stroke-dasharray="{dash}"' if dash else ""
    marks = []
    for run in runs:
        if len(run) > 1:
            marks.append(
                f'<polyline class="{css}"{attrs} points="{" ".join(run)}" fill="none" '
                f'stroke="{color}" stroke-width="{width}"{dashed}' + end.format("polyline")
            )
        elif dot:
            cx, cy = run[0].split(",")
            marks.append(
                f'<circle class="{css}"{attrs} cx="{cx}" cy="{cy}" r="2" fill="{color}"'
                + end.format("circle")
            )
    return "".join(marks)


TWIN_ROWS = 60  # a twin table lists at most about this many rows (every k-th, and the last)
TWIN_FOLD = '<details class="mw-twin">'  # a twin's fold, closed (a live view opens it: _chart_twin)


def twin(summary: str, header: Sequence[str], rows: Sequence[Sequence]) -> str:
    """A chart's table twin: its numbers as an HTML table, folded under ``summary``.

    A screen reader reads it where it cannot read the picture; so does a text-only viewer.

    Example:
        >>> html = twin("the chart as a table", ["step", "loss"], [(0, "1.2"), (1, "0.9")])
        >>> html.count("<tr>"), html.startswith('<details class="mw-twin">')
        (3, True)
    """
    head = "".join(f'<th scope="col">{esc(cell)}</th>' for cell in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in row) + "</tr>"
        for row in thin(list(rows), TWIN_ROWS)
    )
    return (
        f"{TWIN_FOLD}<summary>{esc(summary)}</summary>"
        f'<table class="mw-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
        "</details>"
    )
