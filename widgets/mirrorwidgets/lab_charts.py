"""The browser labs' charts: a chapter's chart drawn from plain Python values, as SVG.

The same renderer as the widgets (:mod:`mirrorwidgets._plot`), without ipywidgets, NumPy or
matplotlib: a lab in the reader's browser shows the chart as HTML, and its table twin below.

Example:
    >>> from mirrorwidgets.lab_charts import loss_scale_chart
    >>> chart = loss_scale_chart([32768.0, 65536.0], [False, True])
    >>> chart.rows[1], chart.html().count("<svg")
    ((1, '6.554e+04', 'yes', ''), 1)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from mirrorkit._validate import refuse, require_count, require_number
from mirrorkit.report.units import format_seconds, format_size
from mirrorwidgets import _plot
from mirrorwidgets._loss_scale_render import chart_svg
from mirrorwidgets._records import read_records
from mirrorwidgets._render import container, esc

WIDTH, RIGHT, TOP, HEIGHT, BOTTOM, LEGEND = 520, 14, 18, 150, 26, 16
COLUMN = 230  # the width of a legend entry: two to a row


@dataclass(frozen=True)
class LabChart:
    """A chart as SVG and the numbers it draws, shown as HTML in Jupyter.

    Attributes:
        heading: The line shown above the chart.
        title: What the chart shows, in words (the SVG's ``<title>``).
        svg: The ``<svg>`` element.
        header: The twin table's column names.
        rows: The twin table's rows: the numbers drawn, as the table writes them.
    """

    heading: str
    title: str
    svg: str
    header: tuple[str, ...]
    rows: tuple[tuple, ...]

    def html(self) -> str:
        """The chart, then its table twin folded under it (what a screen reader reads)."""
        twin = _plot.twin("the chart as a table", self.header, self.rows)
        head = f'<div class="mw-title"><strong>{esc(self.heading)}</strong></div>'
        # On a narrow screen (a phone) the picture shrinks to fit and the table scrolls in
        # its own box: the page never scrolls sideways.
        svg = self.svg.replace("<svg ", '<svg style="max-width:100%;height:auto" ', 1)
        inner = f'{head}<div>{svg}</div><div style="overflow-x:auto">{twin}</div>'
        return container(inner, "mw-lab-chart mw-snapshot")

    def _repr_html_(self) -> str:
        return self.html()

    def __repr__(self) -> str:
        return f"<chart: {self.title}>"


def loss_scale_chart(scales: Sequence[float], overflows: Sequence[bool]) -> LabChart:
    """The loss scale of each step on a log2 axis, overflow steps in red: LossScaleView's chart.

    Args:
        scales: The loss scale each step used, from step 0.
        overflows: Whether each step's gradients overflowed (the update skipped).

    Returns:
        A :class:`LabChart`; its rows are ``(step, scale, "yes" or "no", "")``.

    Raises:
        TypeError, ValueError: If a list is empty or not a list, a scale is not a positive
            number, or the flags are not one True or False per scale.

    Example:
        >>> chart = loss_scale_chart([8.0, 16.0, 8.0], [False, True, False])
        >>> 'class="mw-overflow" data-step="1"' in chart.svg
        True
    """
    scales = _numbers("scales", scales, above=0, write="scales=[32768.0, 65536.0]")
    flags = _list("overflows", overflows, write="overflows=[False, True]")
    if len(flags) != len(scales) or not all(isinstance(flag, bool) for flag in flags):
        got = f"{flags!r} for {len(scales)} scales"
        must, write = "one True or False per scale", "overflows=[False] * len(scales)"
        refuse("overflows", flags, must=must, write=write, error=ValueError, got=got)
    given = [
        {"step": step, "loss_scale": scale, "overflow": flag}
        for step, (scale, flag) in enumerate(zip(scales, flags, strict=True))
    ]
    records = read_records(given, "loss_scale_chart")
    svg = chart_svg(records, show_loss=False, max_points=1000)
    rows = tuple(
        (r.step, _plot.number(r.loss_scale), "yes" if r.overflow else "no", "") for r in records
    )
    title = svg.split("<title>", 1)[1].split("</title>", 1)[0]
    header = ("step", "loss scale", "overflow", "loss")
    return LabChart("Dynamic loss scale", title, svg, header, rows)


def rates_chart(
    series: dict[str, Sequence[float]], *, heading: str = "", what: str = "learning rate"
) -> LabChart:
    """Each series' value at every step, one line each: a learning-rate schedule, say.

    Args:
        series: A label for each line, and its value at step 0, 1, 2, ...
        heading: The line above the chart (``what``, capitalised, if empty).
        what: The name of the values (the y axis' label).

    Returns:
        A :class:`LabChart`; its rows are a step and each series' value at it.

    Raises:
        TypeError, ValueError: If there is no series, or a series is not a list of numbers.

    Example:
        >>> chart = rates_chart({"warm-up": [0.1, 0.2, 0.3], "none": [0.3, 0.3, 0.3]})
        >>> chart.rows[0], chart.svg.count("<polyline")
        ((0, '0.1', '0.3'), 2)
    """
    series = _series(series, write='series={"warm-up": [0.1, 0.2]}')
    steps = max(len(values) for values in series.values())
    plot_w = WIDTH - _plot.LEFT - RIGHT
    lo, hi = _plot.linear_range([0.0, *(v for values in series.values() for v in values)])
    hi += (hi - lo) * 0.06  # keep the highest line off the frame

    def x(step: int) -> float:
        return _plot.LEFT + (0.5 if steps == 1 else step / (steps - 1)) * plot_w

    def y(value: float) -> float:
        return TOP + (hi - value) / (hi - lo) * HEIGHT

    parts = [_plot.frame(TOP, HEIGHT, plot_w, what)]
    for tick in _plot.ticks(lo, hi, _plot.nice_step(hi - lo, 4)):
        parts.append(_plot.grid_line(y(tick), plot_w, _plot.number(tick)))
    for k, (label, values) in enumerate(series.items()):
        color, dash = _plot.series_look(k)
        points = [(x(step), y(value)) for step, value in enumerate(values)]
        tip = f"{label}: {what} {_plot.number(values[0])} at step 0, {_plot.number(values[-1])}"
        parts.append(_plot.line(points, "mw-rate", color, dash=dash, title=tip + " at the end"))
    parts.append(_legend(list(series)))
    parts.append(_plot.step_axis(x, 0, steps - 1, TOP + HEIGHT))
    title = f"{what} at each of {steps} steps: " + "; ".join(
        f"{label} from {_plot.number(v[0])} to {_plot.number(v[-1])}" for label, v in series.items()
    )
    height = TOP + HEIGHT + BOTTOM + LEGEND * math.ceil(len(series) / 2)
    rows = tuple(
        (step, *(_plot.number(v[step]) if step < len(v) else "" for v in series.values()))
        for step in range(steps)
    )
    svg = _plot.svg("mw-lab-rates", WIDTH, height, title, parts)
    return LabChart(heading or what.capitalize(), title, svg, ("step", *series), rows)


def times_chart(
    sizes: Sequence[int], series: dict[str, Sequence[float]], *, heading: str
) -> LabChart:
    """Seconds against message size on log axes, a line per series: AllReduceChart's panel.

    For times a lab computes (a cost model's, say) rather than measures.

    Args:
        sizes: Bytes per replica, increasing.
        series: A label for each line, and its seconds at each size.
        heading: The line above the chart.

    Returns:
        A :class:`LabChart`; its rows are a size and each series' time at it.

    Raises:
        TypeError, ValueError: If the sizes are not increasing whole numbers, or a series'
            times are not one positive number per size.

    Example:
        >>> chart = times_chart([1024, 4096], {"ring": [1e-3, 2e-3]}, heading="model")
        >>> chart.rows
        (('1 KiB', '1 ms'), ('4 KiB', '2 ms'))
    """
    sizes = [
        require_count(f"sizes[{k}]", size, write="sizes=[4096, 65536]")
        for k, size in enumerate(_list("sizes", sizes, write="sizes=[4096, 65536]"))
    ]
    if any(b <= a for a, b in zip(sizes, sizes[1:], strict=False)):
        refuse("sizes", sizes, must="increasing", write="sizes=[4096, 65536]", error=ValueError)
    write = 'series={"ring": [0.001, 0.002]}'
    series = _series(series, write=write, above=0)
    for label, values in series.items():
        if len(values) != len(sizes):
            must, got = f"one time per size ({len(sizes)})", f"{len(values)} times"
            refuse(f"series[{label!r}]", values, must=must, write=write, error=ValueError, got=got)
    plot_w = WIDTH - _plot.LEFT - RIGHT
    x_lo, x_hi = _plot.log_range(sizes, 2)
    y_lo, y_hi = _plot.log_range([v for values in series.values() for v in values], 10)

    def x(size: float) -> float:
        return _plot.LEFT + (math.log2(size) - x_lo) / (x_hi - x_lo) * plot_w

    def y(seconds: float) -> float:
        return TOP + (y_hi - math.log10(seconds)) / (y_hi - y_lo) * HEIGHT

    parts = [_plot.frame(TOP, HEIGHT, plot_w, "time per all-reduce (log axis)")]
    for exponent in _plot.log_ticks(y_lo, y_hi):
        parts.append(_plot.grid_line(y(10.0**exponent), plot_w, format_seconds(10.0**exponent)))
    for exponent in _plot.log_ticks(x_lo, x_hi):
        parts.append(_plot.x_tick(x(2**exponent), TOP + HEIGHT, format_size(2**exponent)))
    parts.append(_plot.x_label(_plot.LEFT - 24, TOP + HEIGHT + 15, "size"))
    for k, (label, values) in enumerate(series.items()):
        color, dash = _plot.series_look(k)
        points = [(x(size), y(value)) for size, value in zip(sizes, values, strict=True)]
        tip = f"{label}: {format_seconds(values[0])} to {format_seconds(values[-1])}"
        parts.append(_plot.line(points, "mw-time", color, dash=dash, title=tip))
    parts.append(_legend(list(series)))
    title = (
        f"time per all-reduce against size per replica, {format_size(sizes[0])} to "
        f"{format_size(sizes[-1])} (log-log): {', '.join(series)}"
    )
    height = TOP + HEIGHT + BOTTOM + LEGEND * math.ceil(len(series) / 2)
    rows = tuple(
        (format_size(size), *(format_seconds(values[i]) for values in series.values()))
        for i, size in enumerate(sizes)
    )
    svg = _plot.svg("mw-lab-times", WIDTH, height, title, parts)
    return LabChart(heading, title, svg, ("size per replica", *series), rows)


def _legend(labels: list[str]) -> str:
    """Each series' line and label under the panel, two to a row."""
    parts = []
    for k, label in enumerate(labels):
        color, dash = _plot.series_look(k)
        x, y = _plot.LEFT + COLUMN * (k % 2), TOP + HEIGHT + BOTTOM + LEGEND * (k // 2 + 1) - 4
        parts.append(_plot.legend_entry(x, y, color, label, dash=dash))
    return "".join(parts)


def _list(name: str, values, *, write: str) -> list:
    """``values`` as a list (from any sequence but text); refused if it is none, or empty."""
    if isinstance(values, str | bytes | dict) or not isinstance(values, Sequence):
        refuse(name, values, must="a list", write=write)
    if not values:
        refuse(name, values, must="a list of at least one value", write=write, error=ValueError)
    return list(values)


def _numbers(name: str, values, *, write: str, above: float | None = None) -> list[float]:
    """Each of ``values`` as a finite float (above ``above`` if given), or the refusal."""
    numbers = []
    for k, value in enumerate(_list(name, values, write=write)):
        number = require_number(f"{name}[{k}]", value, write=write, above=above)
        if math.isinf(number):
            refuse(f"{name}[{k}]", value, must="a finite number", write=write, error=ValueError)
        numbers.append(number)
    return numbers


def _series(series, *, write: str, above: float | None = None) -> dict[str, list[float]]:
    """A dict of labels and their numbers, each checked; or the refusal."""
    if not isinstance(series, dict):
        refuse("series", series, must="a dict of labels and their values", write=write)
    if not series:
        must = "a dict of at least one label and its values"
        refuse("series", series, must=must, write=write, error=ValueError)
    return {
        str(label): _numbers(f"series[{label!r}]", values, write=write, above=above)
        for label, values in series.items()
    }
