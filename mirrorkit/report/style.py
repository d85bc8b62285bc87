"""The one palette and stylesheet of every mirrorkit report and every mirrorwidgets drawing.

Colours are named by what they mean, so a check's verdict, a table cell and a chart line
that say the same thing look the same. Each has a light value (the constants below: text at
least 4.5:1 on white and on every tinted background, marks at least 3:1) and a dark one
(:data:`DARK`, the same ratios on JupyterLab's and the book's dark pages). :func:`themed`
writes every light value in a piece of HTML as ``var(--mw-<name>,<light value>)``, and
:data:`THEME_CSS` sets those variables where the page is dark, so a drawing follows the
theme it is shown in and keeps its light colours where no stylesheet comes with it.
tests/mirrorwidgets/test_palette.py measures the ratios, and how far apart the series stay
for each kind of colour blindness.

Example:
    >>> from mirrorkit.report import style
    >>> style.GOOD, style.SERIES[0]
    ('#17702f', '#0969da')
    >>> style.themed('<b style="color:#17702f">ok</b>')
    '<b style="color:var(--mw-good,#17702f)">ok</b>'
"""

import re

# What a value means.
GOOD = "#17702f"  # passed, in sync, yes
BAD = "#cf222e"  # failed, out of sync, overflow
WARN = "#8a5c00"  # partial, skipped, a warning
MUTED = "#57606a"  # secondary text

# Backgrounds with the same meanings, and neutral surfaces.
GOOD_BG = "#dafbe1"
BAD_BG = "#ffebe9"
WARN_BG = "#fff8c5"
INFO_BG = "#ddf4ff"
ORANGE_BG = "#fff1e5"
DONE_BG = "#aceebb"  # a stronger green: finished
SURFACE = "#f6f8fa"
WHITE = "#ffffff"

# Lines.
BORDER = "#d0d7de"
AXIS = "#6e7781"  # axes, ticks and grey marks: 4.5:1 on white, so its labels read too

# Text and marks with a colour of their own.
BLUE = "#0969da"
ORANGE = "#a94400"
PURPLE = "#7040c8"
YELLOW = "#875c03"  # a dark yellow: 3:1 and more on white
DARK_GREEN = "#116329"

#: Series in a chart, in the order they are given out: at least ΔE2000 14 apart for normal
#: vision and after simulated protanopia, deuteranopia and tritanopia, each at least 3:1
#: on white (and :data:`DARK`'s on a dark page). Charts also give each its own dash.
SERIES = (BLUE, "#e3761d", "#044e2e", "#cd2478", YELLOW)

#: Every colour by name: ``var(--mw-<name>)`` in :func:`themed` HTML.
LIGHT = {
    "good": GOOD,
    "bad": BAD,
    "warn": WARN,
    "muted": MUTED,
    "good-bg": GOOD_BG,
    "bad-bg": BAD_BG,
    "warn-bg": WARN_BG,
    "info-bg": INFO_BG,
    "orange-bg": ORANGE_BG,
    "done-bg": DONE_BG,
    "surface": SURFACE,
    "white": WHITE,
    "border": BORDER,
    "axis": AXIS,
    "blue": BLUE,
    "orange": ORANGE,
    "purple": PURPLE,
    "yellow": YELLOW,
    "dark-green": DARK_GREEN,
    "series1": SERIES[1],
    "series2": SERIES[2],
    "series3": SERIES[3],
}
#: The same names on a dark page (JupyterLab's dark theme, the book's dark mode).
DARK = {
    "good": "#3fb950",
    "bad": "#ff7b72",
    "warn": "#d29922",
    "muted": "#a3abb5",
    "good-bg": "#113a1e",
    "bad-bg": "#4c1a1d",
    "warn-bg": "#3b2d05",
    "info-bg": "#0f2d4a",
    "orange-bg": "#402106",
    "done-bg": "#1a4f2b",
    "surface": "#1f242c",
    "white": "#14181e",
    "border": "#3d444d",
    "axis": "#8b949e",
    "blue": "#58a6ff",
    "orange": "#f0883e",
    "purple": "#bc8cff",
    "yellow": "#edb128",
    "dark-green": "#56d364",
    "series1": "#ed4641",
    "series2": "#389478",
    "series3": "#a86397",
}
#: The series on a dark page, in SERIES' order.
DARK_SERIES = ("#58a6ff", "#ed4641", "#389478", "#a86397", "#edb128")
#: Where a page is dark: JupyterLab's dark theme, the book's dark mode, VS Code's dark themes.
DARK_PAGES = (
    'body[data-jp-theme-light="false"]',
    'html[data-theme="dark"]',
    "body.vscode-dark",
    "body.vscode-high-contrast:not(.vscode-high-contrast-light)",
)
#: The variables' dark values, for a page's stylesheet (the widgets' and the book's).
THEME_CSS = ",".join(DARK_PAGES) + "{" + "".join(f"--mw-{k}:{v};" for k, v in DARK.items()) + "}"
#: The keyboard focus of every control inside a widget: a 2 px ring in the theme's brand
#: colour (JupyterLab's), else the palette's blue; at least 3:1 on the page in both themes.
FOCUS_CSS = (
    ".mw-widget :focus-visible,.mw-snapshot :focus-visible,"
    ".mw-widget .jupyter-button:focus,.mw-widget select:focus,.mw-widget input:focus"
    "{outline:2px solid var(--mw-blue,#0969da) !important;outline-offset:1px}"
    ".mw-status{position:absolute;width:1px;height:1px;overflow:hidden;"
    "clip:rect(0 0 0 0);white-space:nowrap}"
)

_BY_HEX = {}
for _name, _hex in LIGHT.items():
    _BY_HEX.setdefault(_hex.lower(), _name)
_HEX = re.compile("|".join(re.escape(h) for h in sorted(_BY_HEX, key=len, reverse=True)), re.I)


def themed(html: str) -> str:
    """``html`` with each palette colour written as its theme variable, the light value kept.

    Example:
        >>> themed('<line stroke="#0969DA"/>')
        '<line stroke="var(--mw-blue,#0969da)"/>'
    """
    return _HEX.sub(lambda m: f"var(--mw-{_BY_HEX[m[0].lower()]},{m[0].lower()})", html)


#: Stops of the sequential colour scale (viridis), as RGB, from low to high.
SEQUENTIAL = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))

FONT_FAMILY = "ui-monospace,SFMono-Regular,Menlo,monospace"
FONT_SIZE_PX = 12

#: The stylesheet of every HTML report and widget table: CSS declarations per element and
#: per tone, written inline (``style="..."``) by :mod:`mirrorkit.report.render`, because
#: notebook viewers and sanitizers drop ``<style>`` elements but keep inline styles.
CSS = {
    "report": f"font-family:{FONT_FAMILY};font-size:{FONT_SIZE_PX}px;line-height:1.4",
    "table": "border-collapse:collapse;margin:4px 0",
    "th": f"padding:2px 10px;text-align:left;font-weight:600;border-bottom:1px solid {BORDER}",
    "td": "padding:2px 10px;text-align:left;vertical-align:top;white-space:nowrap",
    "p": "margin:4px 0;white-space:pre-wrap",
    "good": f"color:{GOOD}",
    "bad": f"color:{BAD};font-weight:bold",
    "warn": f"color:{WARN}",
    "muted": f"color:{MUTED}",
}
#: The tones a line or a table cell can have.
TONES = ("good", "bad", "warn", "muted")
