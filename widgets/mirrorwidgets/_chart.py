"""Inline-SVG charts drawn as text: the loss-scale chart, and helpers other charts share.

Drawn as text with fixed rounding, so the same records always give the same SVG (what
nbval compares in the book's saved outputs). The helpers (frames, grid lines, ticks, log
axes, the ``<svg>`` element) are shared with the all-reduce chart and the step timeline.
"""

from __future__ import annotations

import math

from mirrorwidgets import _render as r
from mirrorwidgets._records import ScaleRecord

BLUE = "#0969da"
LOSS = "#8250df"
AXIS = "#8c959f"
WIDTH = 520
LEFT, RIGHT, TOP = 56, 14, 18
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


def _number(value: float) -> str:
    return f"{value:.4g}"


def nice_step(span: float, count: int = 5) -> float:
    raw = span / count if span > 0 else 1.0
    base = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if factor * base >= raw:
            return factor * base
    return 10 * base  # pragma: no cover


def thin(records: tuple[ScaleRecord, ...], max_points: int) -> list[ScaleRecord]:
    """At most about ``max_points`` records, always keeping overflows and the last one."""
    if len(records) <= max_points:
        return list(records)
    stride = math.ceil(len(records) / max_points)
    last = len(records) - 1
    return [rec for i, rec in enumerate(records) if i % stride == 0 or rec.overflow or i == last]


def chart_svg(records: tuple[ScaleRecord, ...], *, show_loss: bool, max_points: int) -> str:
    """The loss scale as a step line on a log2 axis, overflow steps in red, the loss below."""
    points = thin(records, max_points)
    losses = [p for p in points if p.loss is not None]
    draw_loss = show_loss and bool(losses)
    plot_w = WIDTH - LEFT - RIGHT
    height = TOP + SCALE_HEIGHT + (GAP + LOSS_HEIGHT if draw_loss else 0) + BOTTOM
    first, last = records[0].step, records[-1].step
    span = last - first

    def x(step: int) -> float:
        return LEFT + (0.5 if span == 0 else (step - first) / span) * plot_w

    # --- loss scale panel, log2 y axis
    exponents = [math.log2(p.loss_scale) for p in points]
    lo, hi = math.floor(min(exponents)), math.ceil(max(exponents))
    if hi == lo:
        lo, hi = lo - 1, hi + 1
    top_e, bottom_e = hi + 0.25, lo - 0.25  # keep the line off the frame

    def y_scale(value: float) -> float:
        return TOP + (top_e - math.log2(value)) / (top_e - bottom_e) * SCALE_HEIGHT

    parts = [frame(TOP, SCALE_HEIGHT, plot_w, "loss scale (log2 axis)")]
    every = max(1, math.ceil((hi - lo) / 6))
    for exponent in range(lo, hi + 1, every):
        y = y_scale(2.0**exponent)
        parts.append(grid_line(y, plot_w, power_of_two(2.0**exponent)))
    bottom = TOP + SCALE_HEIGHT + (GAP + LOSS_HEIGHT if draw_loss else 0)
    for p in points:  # a faint red band across both panels at each overflow
        if p.overflow:
            parts.append(
                f'<line class="mw-overflow-line" data-step="{p.step}" x1="{x(p.step):.1f}" '
                f'y1="{TOP}" x2="{x(p.step):.1f}" y2="{bottom}" stroke="{r.RED}" '
                'stroke-opacity="0.35" stroke-dasharray="3,3"/>'
            )
    path = [f"M{x(points[0].step):.1f},{y_scale(points[0].loss_scale):.1f}"]
    for after in points[1:]:
        # The scale holds until the next step: horizontal, then a jump.
        path.append(f"H{x(after.step):.1f}V{y_scale(after.loss_scale):.1f}")
    parts.append(
        f'<path class="mw-scale" d="{"".join(path)}" fill="none" stroke="{BLUE}" '
        'stroke-width="1.5"/>'
    )
    dots = len(points) <= 60
    for p in points:
        if p.overflow:
            parts.append(
                f'<circle class="mw-overflow" data-step="{p.step}" cx="{x(p.step):.1f}" '
                f'cy="{y_scale(p.loss_scale):.1f}" r="4" fill="{r.RED}">'
                f"<title>step {p.step}: overflow, update skipped; loss scale "
                f"{_number(p.loss_scale)}</title></circle>"
            )
        elif dots:
            parts.append(
                f'<circle class="mw-point" data-step="{p.step}" cx="{x(p.step):.1f}" '
                f'cy="{y_scale(p.loss_scale):.1f}" r="2" fill="{BLUE}">'
                f"<title>step {p.step}: loss scale {_number(p.loss_scale)}</title></circle>"
            )

    # --- loss panel, linear y axis
    if draw_loss:
        parts.append(_loss_panel(losses, x, TOP + SCALE_HEIGHT + GAP, plot_w))

    # --- shared step axis
    axis_y = bottom
    step = max(1, int(nice_step(span)))
    tick = math.ceil(first / step) * step
    ticks = []
    while tick <= last:
        ticks.append(tick)
        tick += step
    for tick in ticks or [first]:
        parts.append(x_tick(x(tick), axis_y, str(tick)))
    parts.append(
        f'<text x="{LEFT - 12}" y="{axis_y + 15}" text-anchor="end" fill="{r.GREY}">step</text>'
    )
    overflows = sum(p.overflow for p in records)
    title = (
        f"loss scale over {len(records)} steps, from {_number(records[0].loss_scale)} to "
        f"{_number(records[-1].loss_scale)}; {overflows} overflow step(s) marked red"
    )
    return svg("mw-loss-scale", WIDTH, height, title, parts)


def svg(css_class: str, width: float, height: float, title: str, parts) -> str:
    """An ``<svg>`` element of the charts' font, with a ``<title>`` and its parts inside."""
    return (
        f'<svg class="{css_class}" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        'font-family="ui-monospace,SFMono-Regular,Menlo,monospace" font-size="10">'
        f"<title>{r.esc(title)}</title>{''.join(parts)}</svg>"
    )


def frame(top: float, height: float, plot_w: float, label: str, *, left: float = LEFT) -> str:
    """A panel's thin outline, its label above its top-left corner."""
    return (
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{height}" fill="none" '
        f'stroke="{AXIS}" stroke-width="0.5"/>'
        f'<text x="{left}" y="{top - 5}" fill="{r.GREY}">{r.esc(label)}</text>'
    )


def grid_line(y: float, plot_w: float, label: str, *, left: float = LEFT) -> str:
    """A faint horizontal line across a panel, labelled (class ``mw-tick``) on the left."""
    return (
        f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="{AXIS}" '
        'stroke-opacity="0.3"/>'
        f'<text class="mw-tick" x="{left - 4}" y="{y + 3:.1f}" text-anchor="end">'
        f"{r.esc(label)}</text>"
    )


def x_tick(x: float, axis_y: float, label: str) -> str:
    """A short tick below a panel at ``x``, its label centred under it."""
    return (
        f'<line x1="{x:.1f}" y1="{axis_y}" x2="{x:.1f}" y2="{axis_y + 4}" '
        f'stroke="{AXIS}"/><text x="{x:.1f}" y="{axis_y + 15}" '
        f'text-anchor="middle">{r.esc(label)}</text>'
    )


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


def _loss_panel(losses: list[ScaleRecord], x, top: float, plot_w: float) -> str:
    finite = [p for p in losses if math.isfinite(p.loss)]
    # The loss of an overflowing step (inf, or huge when an overflow is forced) would
    # flatten every other step: the axis fits the other steps, such losses get a red mark.
    basis = [p.loss for p in finite if not p.overflow] or [p.loss for p in finite]
    parts = [frame(top, LOSS_HEIGHT, plot_w, "loss")]
    if basis:
        lo, hi = min(basis), max(basis)
        if hi - lo <= 1e-12 * max(abs(hi), 1.0):
            pad = max(abs(hi) * 0.1, 0.5)
            lo, hi = lo - pad, hi + pad
    else:
        lo, hi = 0.0, 1.0
    pad = (hi - lo) * 0.08  # keep the line off the frame

    def y(value: float) -> float:
        return top + (hi + pad - value) / (hi - lo + 2 * pad) * LOSS_HEIGHT

    for value in (lo, (lo + hi) / 2, hi):
        parts.append(grid_line(y(value), plot_w, _number(value)))
    segments, current = [], []
    for p in losses:
        if math.isfinite(p.loss) and lo <= p.loss <= hi:
            current.append(f"{x(p.step):.1f},{y(p.loss):.1f}")
        else:  # a gap in the line, and the value in red at the top
            if current:
                segments.append(current)
            current = []
            parts.append(
                f'<text class="mw-loss-off" data-step="{p.step}" x="{x(p.step):.1f}" '
                f'y="{top + 10}" text-anchor="middle" fill="{r.RED}">{_number(p.loss)}'
                f"<title>step {p.step}: loss {_number(p.loss)}</title></text>"
            )
    if current:
        segments.append(current)
    for segment in segments:
        if len(segment) == 1:
            cx, cy = segment[0].split(",")
            parts.append(f'<circle class="mw-loss" cx="{cx}" cy="{cy}" r="2" fill="{LOSS}"/>')
        else:
            parts.append(
                f'<polyline class="mw-loss" points="{" ".join(segment)}" fill="none" '
                f'stroke="{LOSS}" stroke-width="1.2"/>'
            )
    return "".join(parts)
