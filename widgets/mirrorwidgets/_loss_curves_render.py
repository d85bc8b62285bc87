"""Loss curves side by side: one panel per group of runs, one line per run, x = examples seen.

Drawn with the widgets' one chart engine, :mod:`mirrorwidgets._plot`, like
:mod:`mirrorwidgets._lines_chart`; this one puts several panels in a row, can give them
one loss axis, and keeps a label's colour the same in every panel.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from mirrorwidgets import _plot
from mirrorwidgets._render import esc

PANEL_W, PANEL_H = 230, 150  # defaults
TOP, BOTTOM, GAP = 20, 40, 14
LEGEND_ROW, LEGEND_COLUMN = 14, 110


@dataclass(frozen=True)
class Run:
    """One line: its label, the examples seen at each point, the loss there."""

    label: str
    examples: tuple[int, ...]
    losses: tuple[float, ...]


@dataclass(frozen=True)
class Panel:
    """One panel: its heading and its runs."""

    heading: str
    runs: tuple[Run, ...]


def _finite(runs) -> list[float]:
    return [v for run in runs for v in run.losses if math.isfinite(v)]


def curves_svg(
    panels: Sequence[Panel], *, shared_y: bool, css_class: str, panel_width: int = PANEL_W
) -> str:
    """The panels in a row, a legend of every label below them.

    Example:
        >>> run = Run("1 replica", (64, 128), (1.2, 0.8))
        >>> svg = curves_svg([Panel("a", (run,)), Panel("b", (run,))], shared_y=True, css_class="c")
        >>> svg.count('<polyline class="mw-curve" data-label="1 replica"'), svg.count("<rect")
        (2, 2)
    """
    labels = list(dict.fromkeys(run.label for panel in panels for run in panel.runs))
    examples = [n for panel in panels for run in panel.runs for n in run.examples]
    first, last = min(examples), max(examples)
    span = last - first
    gap = GAP if shared_y else _plot.LEFT
    every_y = _plot.linear_range(_finite(run for panel in panels for run in panel.runs))
    width = _plot.LEFT + len(panels) * panel_width + (len(panels) - 1) * gap + 10
    per_row = max(1, int((width - _plot.LEFT) // LEGEND_COLUMN))
    axis_y = TOP + PANEL_H
    height = axis_y + BOTTOM + LEGEND_ROW * math.ceil(len(labels) / per_row) + 4
    parts = []
    for index, panel in enumerate(panels):
        left = _plot.LEFT + index * (panel_width + gap)
        lo, hi = every_y if shared_y else _plot.linear_range(_finite(panel.runs))
        pad = (hi - lo) * 0.08  # keep the lines off the frame

        def x(n: float, left: float = left) -> float:
            return left + (0.5 if span == 0 else (n - first) / span) * panel_width

        def y(value: float, lo: float = lo, hi: float = hi, pad: float = pad) -> float:
            return TOP + (hi + pad - value) / (hi - lo + 2 * pad) * PANEL_H

        parts.append(_plot.frame(TOP, PANEL_H, panel_width, panel.heading, left=left))
        labelled = index == 0 or not shared_y
        for value in _plot.ticks(lo, hi, _plot.nice_step(hi - lo)):
            name = _plot.number(value) if labelled else ""
            parts.append(_plot.grid_line(y(value), panel_width, name, left=left))
        for run in panel.runs:
            color, dash = _plot.series_look(labels.index(run.label))
            xy = [
                (x(n), y(v)) if math.isfinite(v) else None
                for n, v in zip(run.examples, run.losses, strict=True)
            ]
            final_loss = _plot.number(run.losses[-1])
            tip = f"{run.label}: loss {final_loss} after {run.examples[-1]} examples"
            attrs = f' data-label="{esc(run.label)}" data-panel="{index}"'
            parts.append(_plot.line(xy, "mw-curve", color, dash=dash, attrs=attrs, title=tip))
        step = max(1, int(_plot.nice_step(span, 4)))
        for tick in _plot.ticks(first, last, step) or [first]:
            parts.append(_plot.x_tick(x(tick), axis_y, str(int(tick))))
    parts.append(_plot.x_label(width - 10, axis_y + 28, "examples seen"))
    for i, label in enumerate(labels):
        color, dash = _plot.series_look(i)
        legend_x = _plot.LEFT + (i % per_row) * LEGEND_COLUMN
        legend_y = axis_y + BOTTOM + LEGEND_ROW * (i // per_row) + 8
        parts.append(_plot.legend_entry(legend_x, legend_y, color, label, dash=dash))
    headings = "; ".join(f"{p.heading}: {', '.join(run.label for run in p.runs)}" for p in panels)
    title = f"loss against examples seen, {first} to {last}. {headings}"
    return _plot.svg(css_class, width, height, title, parts)
