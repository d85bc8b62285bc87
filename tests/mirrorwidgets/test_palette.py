"""The palette in both themes: contrast (WCAG 2), and series apart for colour-blind readers.

Colour blindness is simulated with the matrices of Machado, Oliveira and Fernandes (2009,
severity 1) in linear RGB; distance is CIEDE2000 in CIELAB (D65). Both are written here
from their published definitions and checked against the CIEDE2000 reference pairs of
Sharma, Wu and Dalal (2005).
"""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path

import pytest

from mirrorkit.report import style
from mirrorwidgets import _plot

ROOT = Path(__file__).resolve().parents[2]
BOOK_CSS = ROOT / "book" / "_static" / "mirrorbook.css"

MACHADO = {
    "protanopia": (
        (0.152286, 1.052583, -0.204868),
        (0.114503, 0.786281, 0.099216),
        (-0.003882, -0.048116, 1.051998),
    ),
    "deuteranopia": (
        (0.367322, 0.860646, -0.227968),
        (0.280085, 0.672501, 0.047413),
        (-0.011820, 0.042940, 0.968881),
    ),
    "tritanopia": (
        (1.255528, -0.076749, -0.178779),
        (-0.078411, 0.930809, 0.147602),
        (0.004733, 0.691367, 0.303900),
    ),
}
# The pages a drawing is shown on: white (JupyterLab light, the book), JupyterLab's dark
# layout colour, the book's dark background, and the palette's own dark surface.
LIGHT_PAGES = ("#ffffff",)
DARK_PAGES = ("#111111", "#14181e", style.DARK["surface"])
LIGHT_TEXT, DARK_TEXT = "#1f2328", "#e6edf3"  # the default text the tone backgrounds carry
TEXT = ("good", "bad", "warn", "muted", "blue", "orange", "purple", "axis")
MARKS = ("yellow", "dark-green", "series1", "series2", "series3")
TONES = ("good", "bad", "warn", "info", "orange", "done")
TEXT_RATIO, MARK_RATIO, MIN_DELTA_E = 4.5, 3.0, 10.0


def _rgb(hex_colour: str) -> tuple[float, ...]:
    return tuple(int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5))


def _linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def _encoded(c: float) -> float:
    c = min(max(c, 0.0), 1.0)
    return 12.92 * c if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055


def _luminance(hex_colour: str) -> float:
    r, g, b = (_linear(c) for c in _rgb(hex_colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG 2's contrast ratio of two colours."""
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def simulate(hex_colour: str, kind: str | None) -> tuple[float, ...]:
    """The colour (sRGB, 0-1) as a person with ``kind`` of colour blindness sees it."""
    rgb = _rgb(hex_colour)
    if kind is None:
        return rgb
    linear = [_linear(c) for c in rgb]
    mixed = (sum(m * c for m, c in zip(row, linear, strict=True)) for row in MACHADO[kind])
    return tuple(_encoded(c) for c in mixed)


def lab(rgb: tuple[float, ...]) -> tuple[float, float, float]:
    """CIELAB (D65) of an sRGB colour."""
    r, g, b = (_linear(c) for c in rgb)
    x = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047
    y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b
    z = (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883

    def f(t):
        return t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116

    fx, fy, fz = f(x), f(y), f(z)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def delta_e2000(lab1, lab2) -> float:
    """CIEDE2000 colour difference (kL = kC = kH = 1)."""
    (l1, a1, b1), (l2, a2, b2) = lab1, lab2
    c_mean = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(c_mean**7 / (c_mean**7 + 25**7)))
    a1, a2 = (1 + g) * a1, (1 + g) * a2
    c1, c2 = math.hypot(a1, b1), math.hypot(a2, b2)
    h1 = math.degrees(math.atan2(b1, a1)) % 360 if c1 else 0.0
    h2 = math.degrees(math.atan2(b2, a2)) % 360 if c2 else 0.0
    dh = 0.0 if c1 * c2 == 0 else ((h2 - h1 + 180) % 360) - 180
    d_big_h = 2 * math.sqrt(c1 * c2) * math.sin(math.radians(dh) / 2)
    l_mean, c_mean = (l1 + l2) / 2, (c1 + c2) / 2
    if c1 * c2 == 0:
        h_mean = h1 + h2
    elif abs(h1 - h2) <= 180:
        h_mean = (h1 + h2) / 2
    else:
        h_mean = (h1 + h2 + 360) / 2 if h1 + h2 < 360 else (h1 + h2 - 360) / 2
    t = (
        1
        - 0.17 * math.cos(math.radians(h_mean - 30))
        + 0.24 * math.cos(math.radians(2 * h_mean))
        + 0.32 * math.cos(math.radians(3 * h_mean + 6))
        - 0.20 * math.cos(math.radians(4 * h_mean - 63))
    )
    s_l = 1 + 0.015 * (l_mean - 50) ** 2 / math.sqrt(20 + (l_mean - 50) ** 2)
    s_c, s_h = 1 + 0.045 * c_mean, 1 + 0.015 * c_mean * t
    rotation = 30 * math.exp(-(((h_mean - 275) / 25) ** 2))
    r_c = 2 * math.sqrt(c_mean**7 / (c_mean**7 + 25**7))
    r_t = -math.sin(math.radians(2 * rotation)) * r_c
    dl, dc, dh_ = (l2 - l1) / s_l, (c2 - c1) / s_c, d_big_h / s_h
    return math.sqrt(dl**2 + dc**2 + dh_**2 + r_t * dc * dh_)


def closest_pair(series, kind) -> tuple[float, str, str]:
    """The smallest CIEDE2000 between two series colours as ``kind`` sees them."""
    return min(
        (delta_e2000(lab(simulate(a, kind)), lab(simulate(b, kind))), a, b)
        for a, b in itertools.combinations(series, 2)
    )


@pytest.mark.parametrize(
    ("lab1", "lab2", "expected"),
    [  # Sharma, Wu and Dalal (2005), pairs 1, 7, 17 and 25
        ((50, 2.6772, -79.7751), (50, 0, -82.7485), 2.0425),
        ((50, 0, 0), (50, -1, 2), 2.3669),
        ((50, 2.5, 0), (73, 25, -18), 27.1492),
        ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644),
    ],
)
def test_delta_e2000_matches_the_reference_pairs(lab1, lab2, expected):
    assert delta_e2000(lab1, lab2) == pytest.approx(expected, abs=1e-4)


def test_simulation_keeps_grey_and_folds_red_onto_green():
    for kind in MACHADO:
        assert simulate("#808080", kind) == pytest.approx(_rgb("#808080"), abs=2e-3)
    red, green = lab(simulate("#d62728", "deuteranopia")), lab(simulate("#2ca02c", "deuteranopia"))
    assert delta_e2000(red, green) < delta_e2000(lab(_rgb("#d62728")), lab(_rgb("#2ca02c"))) / 3


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_text_and_marks_have_contrast(theme):
    colours = style.LIGHT if theme == "light" else style.DARK
    pages = LIGHT_PAGES if theme == "light" else DARK_PAGES
    series = style.SERIES if theme == "light" else style.DARK_SERIES
    text = LIGHT_TEXT if theme == "light" else DARK_TEXT
    low = [
        f"{name} {colours[name]} on {page}: {contrast(colours[name], page):.2f}"
        for names, need in ((TEXT, TEXT_RATIO), (MARKS, MARK_RATIO))
        for name in names
        for page in pages
        if contrast(colours[name], page) < need
    ]
    low += [f"series {c} on {p}" for c in series for p in pages if contrast(c, p) < MARK_RATIO]
    for tone in TONES:  # a tinted cell: its text, and any coloured text in it (the stepper's)
        background = colours[f"{tone}-bg"]
        # "done" tints only a finished worker's box, whose text is dark green.
        names = ("dark-green",) if tone == "done" else [n for n in TEXT if n != "axis"]
        for ink in (text, *(colours[name] for name in names)):
            if contrast(ink, background) < TEXT_RATIO:
                low.append(f"{ink} on {tone}-bg {background}: {contrast(ink, background):.2f}")
    assert not low, low


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("kind", [None, *MACHADO])
def test_series_stay_apart_for_colour_blind_readers(theme, kind):
    series = style.SERIES if theme == "light" else style.DARK_SERIES
    distance, a, b = closest_pair(series, kind)
    assert distance >= MIN_DELTA_E, f"{a} and {b}: ΔE2000 {distance:.1f} ({kind or 'normal'})"


def test_every_colour_has_a_dark_value_and_the_book_has_them_all():
    assert set(style.DARK) == set(style.LIGHT)
    dark_of = {light.lower(): style.DARK[name] for name, light in style.LIGHT.items()}
    assert tuple(dark_of[c] for c in style.SERIES) == style.DARK_SERIES
    css = dict(re.findall(r"--mw-([\w-]+):\s*(#[0-9a-f]{6})", BOOK_CSS.read_text()))
    assert css == style.DARK


def test_themed_html_keeps_the_light_value_as_fallback():
    html = f'<rect fill="{style.SERIES[1]}"/><b style="color:{style.BAD.upper()}">x</b>'
    assert style.themed(html) == (
        f'<rect fill="var(--mw-series1,{style.SERIES[1]})"/>'
        f'<b style="color:var(--mw-bad,{style.BAD})">x</b>'
    )


def test_series_differ_by_dash_too_not_by_colour_alone():
    looks = [_plot.series_look(i) for i in range(len(_plot.DASHES))]
    assert len({dash for _, dash in looks}) == len(looks)


def test_every_chart_text_names_its_colour():
    # SVG text without a fill is black whatever the page: unreadable on a dark theme. The
    # parts every chart is drawn from give each text a colour, the page's own where not muted.
    parts = (
        _plot.frame(10, 50, 200, "loss"),
        _plot.grid_line(20, 200, "0.5"),
        _plot.step_axis(lambda step: 40 + step, 0, 30, 60),
        _plot.legend_entry(10, 10, style.BLUE, "replica 0"),
    )
    texts = re.findall(r"<text\b[^>]*>", "".join(parts))
    assert len(texts) >= 5 and [t for t in texts if "fill=" not in t] == []
    assert sum('fill="currentColor"' in t for t in texts) >= 3
