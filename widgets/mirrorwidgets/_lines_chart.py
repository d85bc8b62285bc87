"""Loss lines against the step: one per worker (ClusterView) or per replica (LiveTrainingView).

Drawn with the widgets' one chart engine, :mod:`mirrorwidgets._plot`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from mirrorwidgets import _plot
from mirrorwidgets._render import esc

WIDTH = 480
RIGHT, TOP, PANEL, BOTTOM = 14, 18, 130, 26
LEGEND_ROW, LEGEND_COLUMN = 14, 150


@dataclass(frozen=True)
class Series:
    """One line: its label, its ``(step, value)`` points, which colour and dash, how wide."""

    label: str
    points: Sequence[tuple[int, float]]
    look: int  # _plot.series_look(look): a worker keeps its colour as others join
    width: float = 1.5
    opacity: float = 1.0


def lines_svg(series: Sequence[Series], *, css_class: str, label: str) -> str:
    """The series as lines on a linear axis, labelled ``label``, a legend below.

    A value that is not finite breaks its line; a series of one point is a dot.

    Example:
        >>> svg = lines_svg([Series("a", [(1, 2.0), (2, 1.0)], 0)], css_class="c", label="loss")
        >>> svg.count('<polyline class="mw-series" data-series="a"'), 'class="mw-legend"' in svg
        (1, True)
    """
    lo, hi = _plot.linear_range([v for s in series for _, v in s.points if math.isfinite(v)])
    pad = (hi - lo) * 0.08  # keep the lines off the frame
    steps = [step for s in series for step, _ in s.points]
    first, last = min(steps), max(steps)
    span = last - first
    plot_w = WIDTH - _plot.LEFT - RIGHT
    axis_y = TOP + PANEL
    per_row = max(1, int(plot_w // LEGEND_COLUMN))
    height = axis_y + BOTTOM + LEGEND_ROW * math.ceil(len(series) / per_row) + 4

    def x(step: int) -> float:
        return _plot.LEFT + (0.5 if span == 0 else (step - first) / span) * plot_w

    def y(value: float) -> float:
        return TOP + (hi + pad - value) / (hi - lo + 2 * pad) * PANEL

    parts = [_plot.frame(TOP, PANEL, plot_w, label)]
    for value in _plot.ticks(lo, hi, _plot.nice_step(hi - lo)):
        parts.append(_plot.grid_line(y(value), plot_w, _plot.number(value)))
    for i, s in enumerate(series):
        color, dash = _plot.series_look(s.look)
        xy = [(x(step), y(v)) if math.isfinite(v) else None for step, v in s.points]
        step, value = s.points[-1]
        attrs = f' data-series="{esc(s.label)}"'
        attrs += f' opacity="{s.opacity}"' if s.opacity != 1 else ""
        tip = f"{s.label}: {_plot.number(value)} at step {step}"
        parts.append(
            _plot.line(xy, "mw-series", color, width=s.width, dash=dash, attrs=attrs, title=tip)
        )
        legend_x = _plot.LEFT + (i % per_row) * LEGEND_COLUMN
        legend_y = axis_y + BOTTOM + LEGEND_ROW * (i // per_row) + 8
        parts.append(_plot.legend_entry(legend_x, legend_y, color, s.label, dash=dash))
    parts.append(_plot.step_axis(x, first, last, axis_y))
    names = ", ".join(s.label for s in series)
    title = f"{label} from step {first} to {last}: {names}"
    return _plot.svg(css_class, WIDTH, height, title, parts)
