"""Inline-SVG drawing and checks for AllReduceChart: time and busbw vs message size, log-log.

Drawn with the widgets' one chart engine, :mod:`mirrorwidgets._plot`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mirrorkit.report import style
from mirrorkit.report.render import html_table
from mirrorkit.report.units import format_percent, format_rate, format_seconds, format_size
from mirrorwidgets import _plot
from mirrorwidgets._render import FONT, color as hue_color, esc

WIDTH = 560
LEFT, RIGHT, TOP = 64, 14, 18
PANEL, GAP, BOTTOM, LEGEND_ROW = 150, 24, 30, 14
INSET = 12  # keeps the first and last size off the panel's sides

# Fixed colors for the algorithms of mirrorkit.make_strategy; others get palette colors.
ALGORITHM_COLORS = {
    "collective": style.BLUE,
    "one_device": style.ORANGE,
    "hierarchical_copy": style.GOOD,
    "nccl": style.PURPLE,
}
# One dash pattern per replica count when several are drawn (solid for the first).
DASHES = _plot.DASHES
AMBER = style.WARN


def check_records(records: Sequence) -> None:
    """Every value a log axis needs must be positive and finite."""
    for i, rec in enumerate(records):
        where = f"record {i} ({rec.algorithm}, {rec.replicas} replicas, {rec.bytes} bytes)"
        if not (isinstance(rec.bytes, int) and rec.bytes > 0):
            raise ValueError(f"{where}: bytes must be a positive int, got {rec.bytes!r}.")
        for name in ("median_s", "busbw"):
            value = getattr(rec, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ValueError(
                    f"{where}: {name} must be a positive finite number to be drawn on a log "
                    f"axis, got {value!r}."
                )


def algorithm_colors(algorithms: Sequence[str]) -> dict[str, str]:
    """A color per algorithm: fixed for the known names, palette colors for the others."""
    others = [a for a in algorithms if a not in ALGORITHM_COLORS]
    colors = {a: ALGORITHM_COLORS[a] for a in algorithms if a in ALGORITHM_COLORS}
    for i, name in enumerate(others):
        colors[name] = hue_color(i / max(len(others), 1))
    return colors


def series(records: Sequence, counts: Sequence[int]) -> list[tuple[str, int, list]]:
    """``(algorithm, replicas, records by size)`` per line, algorithms in first-seen order."""
    algorithms = list(dict.fromkeys(rec.algorithm for rec in records))
    lines = []
    for algorithm in algorithms:
        for n in counts:
            points = sorted(
                (rec for rec in records if rec.algorithm == algorithm and rec.replicas == n),
                key=lambda rec: rec.bytes,
            )
            if points:
                lines.append((algorithm, n, points))
    return lines


def _point_title(rec, copy_bandwidth: float) -> str:
    share = (
        f" = {format_percent(rec.fraction_of_copy_bw)} of memory copy"
        if copy_bandwidth > 0 and math.isfinite(rec.fraction_of_copy_bw)
        else ""
    )
    return (
        f"{rec.algorithm}, {rec.replicas} replicas, {format_size(rec.bytes)}: median "
        f"{format_seconds(rec.median_s)} (IQR {format_seconds(rec.iqr_s)}, min "
        f"{format_seconds(rec.min_s)}, max {format_seconds(rec.max_s)}, {rec.repeats} "
        f"repeats); algbw {format_rate(rec.algbw)}, busbw {format_rate(rec.busbw)}{share}"
    )


def chart_svg(records: Sequence, counts: Sequence[int], all_counts: Sequence[int], copy_bw: float):
    """Time (top) and busbw (bottom) against size, log-log, one line per (algorithm, replicas).

    ``counts`` are the replica counts drawn; ``all_counts`` fixes each count's dash pattern,
    so a line keeps its look when another count is selected.
    """
    lines = series(records, counts)
    shown = [rec for _, _, points in lines for rec in points]
    colors = algorithm_colors(list(dict.fromkeys(rec.algorithm for rec in records)))
    dashes = {n: DASHES[i % len(DASHES)] for i, n in enumerate(all_counts)}
    several = len(counts) > 1
    plot_w = WIDTH - LEFT - RIGHT
    busbw_top = TOP + PANEL + GAP
    axis_y = busbw_top + PANEL
    height = axis_y + BOTTOM + LEGEND_ROW * len(lines) + 4

    lo2, hi2 = _plot.log_range([rec.bytes for rec in shown], 2)

    def x(nbytes: int) -> float:
        return LEFT + INSET + (math.log2(nbytes) - lo2) / (hi2 - lo2) * (plot_w - 2 * INSET)

    def y_axis(top: float, values: list[float]):
        lo, hi = _plot.log_range(values, 10)
        low, high = lo - 0.1, hi + 0.1  # keep points off the frame

        def y(value: float) -> float:
            return top + (high - math.log10(value)) / (high - low) * PANEL

        return lo, hi, y

    parts = []
    # --- time panel
    times = [v for rec in shown for v in (rec.median_s, rec.min_s, rec.max_s) if v > 0]
    lo, hi, y_time = y_axis(TOP, times)
    parts.append(
        _plot.frame(TOP, PANEL, plot_w, "time per all-reduce (median; min-max)", left=LEFT)
    )
    for e in _plot.log_ticks(lo, hi):
        parts.append(_plot.grid_line(y_time(10.0**e), plot_w, format_seconds(10.0**e), left=LEFT))
    # --- busbw panel, with the memory-copy bandwidth as the reference
    rates = [rec.busbw for rec in shown] + ([copy_bw] if copy_bw > 0 else [])
    lo, hi, y_bw = y_axis(busbw_top, rates)
    parts.append(_plot.frame(busbw_top, PANEL, plot_w, "busbw (bus bandwidth)", left=LEFT))
    for e in _plot.log_ticks(lo, hi):
        parts.append(_plot.grid_line(y_bw(10.0**e), plot_w, format_rate(10.0**e), left=LEFT))
    if copy_bw > 0:
        y = y_bw(copy_bw)
        parts.append(
            f'<line class="mw-copy-bw" x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" '
            f'y2="{y:.1f}" stroke="{style.BAD}" stroke-width="1" stroke-dasharray="5,3">'
            f"<title>memory copy on this machine: {format_rate(copy_bw)}</title></line>"
            f'<text class="mw-copy-bw-label" x="{LEFT + plot_w - 4}" y="{y - 4:.1f}" '
            f'text-anchor="end" fill="{style.BAD}">memory copy {format_rate(copy_bw)}</text>'
        )
    # --- one line per (algorithm, replicas) in each panel
    for algorithm, n, points in lines:
        color, dash = colors[algorithm], dashes[n] if several else ""
        data = f'data-algorithm="{esc(algorithm)}" data-replicas="{n}"'
        for css, y, field in (("mw-time", y_time, "median_s"), ("mw-busbw", y_bw, "busbw")):
            xy = [(x(p.bytes), y(getattr(p, field))) for p in points]
            parts.append(_plot.line(xy, css, color, dash=dash, attrs=f" {data}", dot=False))
        for p in points:
            px = f"{x(p.bytes):.1f}"
            if p.min_s > 0 and p.max_s > 0:
                parts.append(
                    f'<line class="mw-range" {data} x1="{px}" y1="{y_time(p.min_s):.1f}" '
                    f'x2="{px}" y2="{y_time(p.max_s):.1f}" stroke="{color}" '
                    'stroke-opacity="0.5"/>'
                )
            title = esc(_point_title(p, copy_bw))
            for panel, y, value in (("time", y_time, p.median_s), ("busbw", y_bw, p.busbw)):
                parts.append(
                    f'<circle class="mw-point" data-panel="{panel}" {data} '
                    f'data-bytes="{p.bytes}" cx="{px}" cy="{y(value):.1f}" r="2.5" '
                    f'fill="{color}"><title>{title}</title></circle>'
                )
    # --- shared size axis
    for e in _plot.log_ticks(lo2, hi2):
        parts.append(_plot.x_tick(x(2**e), axis_y, format_size(2**e)))
    parts.append(
        _plot.x_label(LEFT + plot_w, axis_y + 27, "message size per replica (float32), log2 axis")
    )
    # --- legend
    for i, (algorithm, n, _) in enumerate(lines):
        y = axis_y + BOTTOM + LEGEND_ROW * i + 8
        dash = dashes[n] if several else ""
        parts.append(
            _plot.legend_entry(LEFT, y, colors[algorithm], f"{algorithm}, {n} replicas", dash=dash)
        )
    names = ", ".join(dict.fromkeys(algorithm for algorithm, _, _ in lines))
    title = (
        f"all-reduce time and busbw against message size (log-log): {names} on "
        f"{'/'.join(map(str, counts))} replicas"
        + (f"; memory copy {format_rate(copy_bw)}" if copy_bw > 0 else "")
    )
    return _plot.svg("mw-all-reduce-chart", WIDTH, height, title, parts)


def table_html(records: Sequence, copy_bw: float) -> str:
    """The exact numbers, one row per record (mirrorkit's one table renderer)."""

    def share(rec) -> str:
        if copy_bw > 0 and math.isfinite(rec.fraction_of_copy_bw):
            return format_percent(rec.fraction_of_copy_bw)
        return "n/a"

    columns = [
        ("algorithm", [rec.algorithm for rec in records]),
        ("replicas", [str(rec.replicas) for rec in records]),
        ("size", [format_size(rec.bytes) for rec in records]),
        ("time (median)", [format_seconds(rec.median_s) for rec in records]),
        ("spread (IQR)", [format_seconds(rec.iqr_s) for rec in records]),
        ("min", [format_seconds(rec.min_s) for rec in records]),
        ("max", [format_seconds(rec.max_s) for rec in records]),
        ("repeats", [str(rec.repeats) for rec in records]),
        ("algbw", [format_rate(rec.algbw) for rec in records]),
        ("busbw", [format_rate(rec.busbw) for rec in records]),
        ("busbw/copy", [share(rec) for rec in records]),
    ]
    rows = [
        {
            "class": "mw-row",
            "data-algorithm": rec.algorithm,
            "data-replicas": rec.replicas,
            "data-bytes": rec.bytes,
        }
        for rec in records
    ]
    return html_table(columns, css_class="mw-table", row_attributes=rows)


def skipped_html(skipped: dict[str, str]) -> str:
    """Each algorithm that could not run, with the reason."""
    if not skipped:
        return ""
    items = "".join(
        f'<li data-skipped="{esc(name)}"><strong>{esc(name)}</strong>: {esc(why)}</li>'
        for name, why in skipped.items()
    )
    return (
        f'<div class="mw-skipped" style="{FONT};color:{AMBER};max-width:{WIDTH}px">'
        f"Skipped (could not run here):<ul style='margin:2px 0'>{items}</ul></div>"
    )
