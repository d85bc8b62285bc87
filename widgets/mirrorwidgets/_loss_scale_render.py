"""The loss-scale chart of LossScaleView: the scale on a log2 axis, overflow steps, the loss.

Drawn with the widgets' one chart engine, :mod:`mirrorwidgets._plot`.
"""

from __future__ import annotations

import math

from mirrorkit.report import style
from mirrorwidgets import _plot
from mirrorwidgets._records import ScaleRecord

WIDTH = 520
RIGHT, TOP = 14, 18
SCALE_HEIGHT, LOSS_HEIGHT, GAP, BOTTOM = 130, 70, 22, 26
_SUPERSCRIPT = str.maketrans(
    "-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079"
)


def power_of_two(value: float) -> str:
    """'2¹⁵' for 32768; a scale that is not a power of two, e.g. '2^14.5'."""
    exponent = math.log2(value)
    if exponent == round(exponent):
        return "2" + str(int(round(exponent))).translate(_SUPERSCRIPT)
    return f"2^{exponent:.1f}"


def chart_svg(records: tuple[ScaleRecord, ...], *, show_loss: bool, max_points: int) -> str:
    """The loss scale as a step line on a log2 axis, overflow steps in red, the loss below."""
    points = _plot.thin(records, max_points, keep=lambda p: p.overflow)
    losses = [p for p in points if p.loss is not None]
    draw_loss = show_loss and bool(losses)
    plot_w = WIDTH - _plot.LEFT - RIGHT
    height = TOP + SCALE_HEIGHT + (GAP + LOSS_HEIGHT if draw_loss else 0) + BOTTOM
    first, last = records[0].step, records[-1].step
    span = last - first

    def x(step: int) -> float:
        return _plot.LEFT + (0.5 if span == 0 else (step - first) / span) * plot_w

    # --- loss scale panel, log2 y axis
    exponents = [math.log2(p.loss_scale) for p in points]
    lo, hi = math.floor(min(exponents)), math.ceil(max(exponents))
    if hi == lo:
        lo, hi = lo - 1, hi + 1
    top_e, bottom_e = hi + 0.25, lo - 0.25  # keep the line off the frame

    def y_scale(value: float) -> float:
        return TOP + (top_e - math.log2(value)) / (top_e - bottom_e) * SCALE_HEIGHT

    parts = [_plot.frame(TOP, SCALE_HEIGHT, plot_w, "loss scale (log2 axis)")]
    for exponent in _plot.log_ticks(lo, hi):
        y = y_scale(2.0**exponent)
        parts.append(_plot.grid_line(y, plot_w, power_of_two(2.0**exponent)))
    bottom = TOP + SCALE_HEIGHT + (GAP + LOSS_HEIGHT if draw_loss else 0)
    for p in points:  # a faint red band across both panels at each overflow
        if p.overflow:
            parts.append(
                f'<line class="mw-overflow-line" data-step="{p.step}" x1="{x(p.step):.1f}" '
                f'y1="{TOP}" x2="{x(p.step):.1f}" y2="{bottom}" stroke="{style.BAD}" '
                'stroke-opacity="0.35" stroke-dasharray="3,3"/>'
            )
    path = [f"M{x(points[0].step):.1f},{y_scale(points[0].loss_scale):.1f}"]
    for after in points[1:]:
        # The scale holds until the next step: horizontal, then a jump.
        path.append(f"H{x(after.step):.1f}V{y_scale(after.loss_scale):.1f}")
    parts.append(
        f'<path class="mw-scale" d="{"".join(path)}" fill="none" stroke="{style.BLUE}" '
        'stroke-width="1.5"/>'
    )
    dots = len(points) <= 60
    for p in points:
        if p.overflow:
            parts.append(
                f'<circle class="mw-overflow" data-step="{p.step}" cx="{x(p.step):.1f}" '
                f'cy="{y_scale(p.loss_scale):.1f}" r="4" fill="{style.BAD}">'
                f"<title>step {p.step}: overflow, update skipped; loss scale "
                f"{_plot.number(p.loss_scale)}</title></circle>"
            )
        elif dots:
            parts.append(
                f'<circle class="mw-point" data-step="{p.step}" cx="{x(p.step):.1f}" '
                f'cy="{y_scale(p.loss_scale):.1f}" r="2" fill="{style.BLUE}">'
                f"<title>step {p.step}: loss scale {_plot.number(p.loss_scale)}</title></circle>"
            )

    # --- loss panel, linear y axis
    if draw_loss:
        parts.append(_loss_panel(losses, x, TOP + SCALE_HEIGHT + GAP, plot_w))

    # --- shared step axis
    axis_y = bottom
    parts.append(_plot.step_axis(x, first, last, axis_y))
    overflows = sum(p.overflow for p in records)
    title = (
        f"loss scale over {len(records)} steps, from {_plot.number(records[0].loss_scale)} to "
        f"{_plot.number(records[-1].loss_scale)}; {overflows} overflow step(s) marked red"
    )
    return _plot.svg("mw-loss-scale", WIDTH, height, title, parts)


def _loss_panel(losses: list[ScaleRecord], x, top: float, plot_w: float) -> str:
    finite = [p for p in losses if math.isfinite(p.loss)]
    # The loss of an overflowing step (inf, or huge when an overflow is forced) would
    # flatten every other step: the axis fits the other steps, such losses get a red mark.
    basis = [p.loss for p in finite if not p.overflow] or [p.loss for p in finite]
    parts = [_plot.frame(top, LOSS_HEIGHT, plot_w, "loss")]
    lo, hi = _plot.linear_range(basis)
    pad = (hi - lo) * 0.08  # keep the line off the frame

    def y(value: float) -> float:
        return top + (hi + pad - value) / (hi - lo + 2 * pad) * LOSS_HEIGHT

    for value in (lo, (lo + hi) / 2, hi):
        parts.append(_plot.grid_line(y(value), plot_w, _plot.number(value)))
    points = []
    for p in losses:
        if math.isfinite(p.loss) and lo <= p.loss <= hi:
            points.append((x(p.step), y(p.loss)))
        else:  # a gap in the line, and the value in red at the top
            points.append(None)
            parts.append(
                f'<text class="mw-loss-off" data-step="{p.step}" x="{x(p.step):.1f}" '
                f'y="{top + 10}" text-anchor="middle" fill="{style.BAD}">{_plot.number(p.loss)}'
                f"<title>step {p.step}: loss {_plot.number(p.loss)}</title></text>"
            )
    parts.append(_plot.line(points, "mw-loss", style.PURPLE, width=1.2))
    return "".join(parts)
