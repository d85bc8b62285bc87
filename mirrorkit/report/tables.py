"""Short, stable text for devices and array values (shared by tables and checks)."""

from __future__ import annotations

import html
from collections.abc import Callable

import numpy as np

SMALL = 8  # arrays with at most this many elements are shown in full


def short_device(name: str) -> str:
    """'/job:localhost/replica:0/task:0/device:CPU:1' -> 'CPU:1'; keeps job/task elsewhere."""
    if not name:
        return "?"
    parts = dict(p.split(":", 1) for p in name.strip("/").split("/") if ":" in p)
    device = name.rsplit("device:", 1)[-1] if "device:" in name else name
    job = parts.get("job")
    if job and job != "localhost":
        return f"{job}:{parts.get('task', '0')}/{device}"
    return device


def number(x) -> str:
    """A scalar as short text: booleans and whole numbers exactly, others to 4 digits.

    Example:
        >>> from mirrorkit.report.tables import number
        >>> number(3.0), number(2 / 3), number(True)
        ('3', '0.6667', 'True')
    """
    if isinstance(x, np.bool_ | bool):
        return str(bool(x))
    if isinstance(x, np.integer | int):
        return str(int(x))
    x = float(x)
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.4g}"


def summarize(array: np.ndarray) -> str:
    """The values themselves when few, else mean / min / max."""
    array = np.asarray(array)
    if array.size == 0:
        return "empty"
    if array.ndim == 0:
        return number(array[()])
    if array.size <= SMALL:
        return _nested(array)
    if array.dtype.kind in "biuf":
        return f"mean {number(array.mean())}, min {number(array.min())}, max {number(array.max())}"
    return f"{array.size} values"


def _nested(array: np.ndarray) -> str:
    if array.ndim == 1:
        return "[" + ", ".join(number(x) for x in array) + "]"
    return "[" + ", ".join(_nested(sub) for sub in array) + "]"


Columns = list[tuple[str, list[str]]]  # (heading, one cell per row)


def text_table(columns: Columns) -> list[str]:
    """Left-aligned columns two spaces apart: the heading line, then one line per row."""
    widths = [max([len(head), *(len(c) for c in cells)]) for head, cells in columns]
    rows = zip(*(cells for _, cells in columns), strict=True)
    lines = ["  ".join(h.ljust(w) for (h, _), w in zip(columns, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return [line.rstrip() for line in lines]


def html_table(columns: Columns, style: Callable[[str, str], str] = lambda head, cell: "") -> str:
    """The same columns as an HTML table; ``style(heading, cell)`` gives a cell's CSS."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h, _ in columns)
    body = []
    for row in zip(*(cells for _, cells in columns), strict=True):
        cells = []
        for (h, _), cell in zip(columns, row, strict=True):
            css = style(h, cell)
            attribute = f' style="{css}"' if css else ""
            cells.append(f"<td{attribute}>{html.escape(cell)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
