"""The one palette and stylesheet of every mirrorkit report and every mirrorwidgets drawing.

Colours are named by what they mean, so a check's verdict, a table cell and a chart line
that say the same thing look the same. They are GitHub's Primer colours, readable on a
white page and in JupyterLab's light theme.

Example:
    >>> from mirrorkit.report import style
    >>> style.GOOD, style.SERIES[0]
    ('#1a7f37', '#0969da')
"""

# What a value means.
GOOD = "#1a7f37"  # passed, in sync, yes
BAD = "#cf222e"  # failed, out of sync, overflow
WARN = "#9a6700"  # partial, skipped, a warning
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
AXIS = "#8c959f"

# Series in a chart, in the order they are given out.
BLUE = "#0969da"
ORANGE = "#bc4c00"
PURPLE = "#8250df"
YELLOW = "#bf8700"
DARK_GREEN = "#116329"
SERIES = (BLUE, ORANGE, GOOD, PURPLE, YELLOW)

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
