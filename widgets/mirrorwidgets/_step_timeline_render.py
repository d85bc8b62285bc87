"""Inline-SVG stacked bars for StepTimeline: input wait, compute and all-reduce per step.

Drawn with the widgets' one chart engine, :mod:`mirrorwidgets._plot`. Each bar's segment
edges are rounded before the heights are taken, so the segments of a bar add up exactly to
the bar's rounded total.
"""

from __future__ import annotations

import math

from mirrorkit.report import style
from mirrorkit.report.units import format_seconds
from mirrorwidgets import _plot
from mirrorwidgets._phases import PHASES, Phases
from mirrorwidgets._render import esc

WIDTH = 520
RIGHT, TOP, HEIGHT, BOTTOM = 14, 22, 160, 28
LEFT = _plot.LEFT
COLORS = {"input_wait_s": style.YELLOW, "compute_s": style.BLUE, "all_reduce_s": style.PURPLE}
NAMES = {"input_wait_s": "input wait", "compute_s": "compute", "all_reduce_s": "all-reduce"}
OUTLIER = 3.0  # a bar this many times the 90th percentile is an outlier the axis leaves out


def axis_top(totals: list[float], y_max: float | None) -> float:
    """The time at the top of the axis: ``y_max``, else the tallest bar but outliers."""
    if y_max is not None:
        return y_max
    top = max(totals)
    if len(totals) >= 5:
        usual = lower_percentile(totals, 90)  # not pulled up by one outlier
        if usual > 0 and top > OUTLIER * usual:
            top = 1.5 * usual  # e.g. step 0, which traces the tf.function: cut, not flattened
    return top if top > 0 else 1e-3


def lower_percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile of ``values`` that is one of them, the one below where it falls
    (NumPy's ``percentile(values, q, method="lower")``, the same arithmetic, without NumPy:
    the labs draw this chart in the browser).

    Example:
        >>> lower_percentile([5.0, 1.0, 4.0, 2.0, 3.0, 100.0], 90)
        5.0
    """
    return float(sorted(values)[math.floor((len(values) - 1) * (q / 100))])


def bars(steps: tuple[Phases, ...], max_points: int) -> list[tuple[int, int, dict[str, float]]]:
    """At most ``max_points`` bars: ``(first step, last step, mean phase times)`` each.

    A longer run is cut into the runs of consecutive steps that :func:`_plot.thin` would
    pick one step of (the last may be shorter); each is drawn as the mean of its steps, so
    that the bars still add up to the run.
    """
    size = _plot.stride(len(steps), max_points)
    out = []
    for start in range(0, len(steps), size):
        chunk = steps[start : start + size]
        means = {p: sum(getattr(s, p) for s in chunk) / len(chunk) for p in PHASES}
        out.append((chunk[0].step, chunk[-1].step, means))
    return out


def _round(value: float) -> float:
    return float(f"{value:.1f}")


def timeline_svg(steps: tuple[Phases, ...], *, max_points: int, y_max: float | None):
    """The stacked bars and the steps whose bars go beyond the axis (``(step, total)``)."""
    drawn = bars(steps, max_points)
    totals = [sum(means.values()) for _, _, means in drawn]
    top = axis_top(totals, y_max)
    tick = _plot.nice_step(top, 4)
    top = math.ceil(top / tick - 1e-9) * tick
    plot_w = WIDTH - LEFT - RIGHT
    axis_y = TOP + HEIGHT
    slot = plot_w / len(drawn)
    width = max(slot * 0.8, 0.5)
    merged = any(first != last for first, last, _ in drawn)

    def y(seconds: float) -> float:
        return axis_y - min(seconds, top) / top * HEIGHT

    label = "seconds per step" + (" (each bar: the mean of consecutive steps)" if merged else "")
    parts = [_plot.frame(TOP, HEIGHT, plot_w, label)]
    for value in _plot.ticks(0.0, top, tick):
        parts.append(_plot.grid_line(y(value), plot_w, format_seconds(value) if value else "0"))
    clipped = []
    for i, ((first, last, means), total) in enumerate(zip(drawn, totals, strict=True)):
        x = LEFT + i * slot + (slot - width) / 2
        steps_text = f"step {first}" if first == last else f"steps {first}-{last} (mean)"
        shares = " + ".join(f"{NAMES[p]} {format_seconds(means[p])}" for p in PHASES)
        title = f"{steps_text}: {format_seconds(total)} = {shares}"
        segments, below = [], 0.0
        for phase in PHASES:
            y0, y1 = _round(y(below)), _round(y(below + means[phase]))
            below += means[phase]
            segments.append(
                f'<rect class="mw-seg" data-phase="{phase}" x="{x:.1f}" y="{y1:.1f}" '
                f'width="{width:.1f}" height="{_round(y0 - y1):.1f}" fill="{COLORS[phase]}">'
                f"<title>{esc(steps_text)}: {NAMES[phase]} "
                f"{format_seconds(means[phase])}</title></rect>"
            )
        over = total > top * (1 + 1e-9)
        data = f'data-step="{first}" data-last="{last}" data-total="{total:.6g}"'
        parts.append(
            f'<g class="mw-bar{" mw-clipped" if over else ""}" {data}>'
            f"<title>{esc(title)}</title>{''.join(segments)}</g>"
        )
        if over:
            clipped.append((first, total))
            parts.append(
                f'<text class="mw-over" data-step="{first}" x="{x + width / 2:.1f}" '
                f'y="{TOP - 2}" text-anchor="middle" fill="{style.BAD}">&#9650;'
                f"<title>{esc(title)} (beyond the axis)</title></text>"
            )
    for i in _plot.ticks(0, len(drawn) - 1, max(1, math.ceil(len(drawn) / 8))):
        parts.append(_plot.x_tick(LEFT + (i + 0.5) * slot, axis_y, str(drawn[i][0])))
    parts.append(_plot.x_label(LEFT - 12, axis_y + 15, "step"))
    height = axis_y + BOTTOM
    title = (
        f"time per training step, {len(steps)} step{'' if len(steps) == 1 else 's'} as "
        f"{len(drawn)} bar{'' if len(drawn) == 1 else 's'}, stacked: input wait, compute, "
        f"all-reduce; axis up to {format_seconds(top)}"
    )
    return _plot.svg("mw-step-timeline", WIDTH, height, title, parts), clipped, top


def legend_html() -> str:
    """The three phases' colors."""
    return " ".join(f'<span style="color:{COLORS[p]}">&#9632;</span> {NAMES[p]}' for p in PHASES)
