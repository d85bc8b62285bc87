"""Server-side drawing: small inline SVGs and HTML fragments shared by widgets and snapshots.

No NumPy at the top: the widgets that run in the browser (where there is none) import this
module; the functions that draw arrays import it themselves.
"""

from __future__ import annotations

import html
import math
import re

from mirrorkit.report import style

# The sequential palette (viridis), interpolated between its stops.
_STOPS = tuple(tuple(float(c) for c in stop) for stop in style.SEQUENTIAL)

GREEN = style.GOOD
RED = style.BAD
GREY = style.MUTED
FONT = f"font-family:{style.FONT_FAMILY};font-size:{style.FONT_SIZE_PX}px"


def esc(text) -> str:
    return html.escape(str(text), quote=True)


def color(t: float) -> str:
    t = 0.0 if not math.isfinite(t) else min(max(float(t), 0.0), 1.0)
    pos = t * (len(_STOPS) - 1)
    i = min(int(pos), len(_STOPS) - 2)
    rgb = (a + (pos - i) * (b - a) for a, b in zip(_STOPS[i], _STOPS[i + 1], strict=True))
    red, green, blue = (int(round(c)) for c in rgb)
    return f"#{red:02x}{green:02x}{blue:02x}"


_BAR = color(0.25)  # the histogram's bars: the sequential palette's second stop


def _scale(value: float, lo: float, hi: float) -> float:
    return 0.5 if hi <= lo else (value - lo) / (hi - lo)


def heat_strip_svg(array, lo: float, hi: float, *, bins: int = 40) -> str:
    """A strip of colored cells: the flattened tensor averaged into at most ``bins`` chunks."""
    import numpy as np

    flat = np.asarray(array, dtype=float).ravel()
    chunks = [c.mean() for c in np.array_split(flat, min(bins, flat.size)) if c.size]
    width, height = 160, 14
    step = width / len(chunks)
    rects = "".join(
        f'<rect x="{i * step:.2f}" y="0" width="{step + 0.3:.2f}" height="{height}" '
        f'fill="{color(_scale(c, lo, hi))}"/>'
        for i, c in enumerate(chunks)
    )
    return (
        f'<svg class="mw-heat" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img">'
        f"<title>heat strip of {flat.size} values, scale {lo:.4g} to {hi:.4g}</title>"
        f"{rects}</svg>"
    )


def histogram_svg(array, lo: float, hi: float, *, bins: int = 24) -> str:
    """Bars counting the tensor's values in ``bins`` equal ranges between ``lo`` and ``hi``."""
    import numpy as np

    flat = np.asarray(array, dtype=float).ravel()
    flat = flat[np.isfinite(flat)]
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    counts, _ = np.histogram(flat, bins=bins, range=(lo, hi))
    width, height = 160, 32
    step = width / bins
    top = max(int(counts.max()), 1) if counts.size else 1
    bars = "".join(
        f'<rect x="{i * step:.2f}" y="{height - height * c / top:.2f}" '
        f'width="{step * 0.9:.2f}" height="{height * c / top:.2f}" fill="{_BAR}"/>'
        for i, c in enumerate(counts)
        if c
    )
    return (
        f'<svg class="mw-hist" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img">'
        f"<title>histogram of {flat.size} values from {lo:.4g} to {hi:.4g}</title>"
        f"{bars}</svg>"
    )


def value_html(array, summary: str, lo: float, hi: float, large_view: str, small: int) -> str:
    """A scalar or small vector as text; a large numeric tensor as a heat strip or histogram."""
    import numpy as np

    array = np.asarray(array)
    text = f'<span class="mw-summary">{esc(summary)}</span>'
    if array.size <= small or array.dtype.kind not in "biuf":
        if array.ndim == 0:
            style = "font-size:15px;font-weight:600"
            return f'<span class="mw-scalar" style="{style}">{esc(summary)}</span>'
        return text
    picture = (
        heat_strip_svg(array, lo, hi) if large_view == "heat" else histogram_svg(array, lo, hi)
    )
    return f"<div>{picture}</div><div style='color:{GREY}'>{text}</div>"


def sync_html(flag: bool | None, what: str = "in sync", css: str = "mw-sync") -> str:
    if flag is None:
        return ""
    if flag:
        return f'<span class="{css}" data-sync="yes" style="color:{GREEN}">&#10003; {what}</span>'
    return f'<span class="{css}" data-sync="no" style="color:{RED}">&#10007; diverged</span>'


def container(inner: str, css_class: str) -> str:
    return f'<div class="{css_class}" style="{FONT}">{inner}</div>'


def graphviz_svg(dot, what: str) -> str:
    """``dot`` (a graphviz graph) drawn as SVG text, or a RuntimeError saying how to get ``dot``.

    The page shows through (no white background), and text graphviz would draw black without
    a colour of its own takes the page's text colour: both themes read it.
    """
    import graphviz

    dot.attr(bgcolor="transparent")
    try:
        svg = dot.pipe(format="svg", encoding="utf-8")
    except graphviz.ExecutableNotFound as error:
        raise RuntimeError(
            f"graphviz's `dot` program is missing, so the {what} cannot be drawn. "
            "Install it (Debian/Ubuntu: apt-get install graphviz; macOS: brew install "
            "graphviz; conda: conda install -c conda-forge graphviz)."
        ) from error
    return re.sub(r"<text (?![^>]*\bfill=)", '<text fill="currentColor" ', svg)
