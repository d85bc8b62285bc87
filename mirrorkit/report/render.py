"""The one renderer behind every report's text and HTML: a headline, a table, then lines.

A report describes itself once, as a :class:`Report`; :class:`Reported` gives it ``print``,
``repr`` and notebook HTML (design: docs/design/report.md).

Example:
    >>> from mirrorkit.report.render import Line, Report
    >>> report = Report(
    ...     headline=("two replicas",),
    ...     columns=(("replica", ("0", "1")), ("value", ("[1, 2]", "[3, 4]"))),
    ...     lines=(Line("values differ", tone="warn", label="WARNING"),),
    ... )
    >>> print(report.text())
    two replicas
    replica  value
    0        [1, 2]
    1        [3, 4]
    WARNING: values differ
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from mirrorkit.report.style import CSS, TONES

#: A table: (heading, one cell per row) for each column, left to right.
Columns = Sequence[tuple[str, Sequence[str]]]


@dataclass(frozen=True)
class Line:
    """A line after the table: a note, a warning or a verdict.

    Attributes:
        text: What it says.
        tone: ``None`` or one of :data:`mirrorkit.report.style.TONES` (its colour in HTML).
        label: A word put before it, in bold in HTML (``"PASS"``, ``"WARNING"``).

    Example:
        >>> from mirrorkit.report.render import Line
        >>> Line("well done", tone="good", label="PASS").plain()
        'PASS: well done'
    """

    text: str
    tone: str | None = None
    label: str = ""

    def __post_init__(self) -> None:
        if self.tone is not None and self.tone not in TONES:
            raise ValueError(f"tone must be None or one of {TONES}, got {self.tone!r}.")

    def plain(self) -> str:
        """The line as text."""
        return f"{self.label}: {self.text}" if self.label else self.text

    def html(self) -> str:
        """The line as an HTML paragraph."""
        label = f"<strong>{html.escape(self.label)}</strong>: " if self.label else ""
        return f"<p{_style('p', self.tone)}>{label}{html.escape(self.text)}</p>"


@dataclass(frozen=True)
class Report:
    """What a report shows, in the order it shows it.

    Attributes:
        headline: Lines in bold at the top.
        columns: The table, as (heading, cells) pairs; empty for none.
        lines: What follows the table.
        tone: The headline's tone (``"good"`` for a pass, ``"warn"`` for a problem).
        cell_tones: ``{heading: {cell text: tone}}``: cells coloured by what they say.

    Example:
        >>> from mirrorkit.report.render import Report
        >>> report = Report(headline=("in sync",), columns=(("ok", ("yes", "NO")),),
        ...                 cell_tones={"ok": {"yes": "good", "NO": "bad"}})
        >>> 'style="padding:2px 10px' in report.html(), report.text().splitlines()[1:]
        (True, ['ok', 'yes', 'NO'])
    """

    headline: tuple[str, ...] = ()
    columns: Columns = ()
    lines: tuple[Line, ...] = ()
    tone: str | None = None
    cell_tones: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def text(self) -> str:
        """Headline, table (columns two spaces apart) and lines, as plain text."""
        out = [*self.headline, *text_table(self.columns), *(line.plain() for line in self.lines)]
        return "\n".join(line.rstrip() for line in out)

    def html(self) -> str:
        """The same as one ``<div>``, styled inline from :data:`mirrorkit.report.style.CSS`."""
        parts = []
        if self.headline:
            head = "<br>".join(html.escape(line) for line in self.headline)
            parts.append(f"<p{_style('p', self.tone)}><strong>{head}</strong></p>")
        if self.columns:
            parts.append(html_table(self.columns, self.cell_tones))
        parts += [line.html() for line in self.lines]
        return f'<div class="mirrorkit-report"{_style("report")}>{"".join(parts)}</div>'


class Reported:
    """Mixin: ``print``, ``repr`` and a notebook's HTML, all from one :meth:`report`.

    Example:
        >>> from mirrorkit.report.render import Report, Reported
        >>> class Answer(Reported):
        ...     def report(self):
        ...         return Report(headline=("forty-two",))
        >>> Answer()
        forty-two
    """

    def report(self) -> Report:
        """What this object shows (each reporting class defines it)."""
        raise NotImplementedError

    def __str__(self) -> str:
        return self.report().text()

    def __repr__(self) -> str:
        return self.report().text()

    def _repr_html_(self) -> str:
        return self.report().html()


def text_table(columns: Columns) -> list[str]:
    """Left-aligned columns two spaces apart: the heading line, then one line per row.

    Example:
        >>> from mirrorkit.report.render import text_table
        >>> text_table([("name", ["a", "bb"]), ("n", ["1", "22"])])
        ['name  n', 'a     1', 'bb    22']
    """
    if not columns:
        return []
    widths = [max([len(head), *(len(c) for c in cells)]) for head, cells in columns]
    rows = zip(*(cells for _, cells in columns), strict=True)
    lines = ["  ".join(h.ljust(w) for (h, _), w in zip(columns, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return [line.rstrip() for line in lines]


class Html(str):
    """Text that is already HTML (a badge, a link): a table puts it in unescaped.

    Example:
        >>> from mirrorkit.report.render import Html, html_table
        >>> "<b>x</b>" in html_table([("a", [Html("<b>x</b>")])])
        True
    """


def html_table(
    columns: Columns,
    cell_tones: Mapping[str, Mapping[str, str]] | None = None,
    *,
    css_class: str = "",
    row_attributes: Sequence[Mapping[str, object]] | None = None,
) -> str:
    r"""The same columns as an HTML table with padded cells; some cells coloured by tone.

    Args:
        columns: (heading, cells) pairs; a cell that is :class:`Html` goes in unescaped.
        cell_tones: ``{heading: {cell text: tone}}``.
        css_class: The table's class, for a page's tests and scripts to find it.
        row_attributes: One dict per row of extra attributes (``data-...``) for its ``<tr>``.

    Example:
        >>> from mirrorkit.report.render import html_table
        >>> table = html_table([("ok", ["NO"])], {"ok": {"NO": "bad"}})
        >>> "<td style=\"padding:2px 10px" in table, "font-weight:bold\">NO</td>" in table
        (True, True)
    """
    tones = cell_tones or {}
    head = "".join(f"<th{_style('th')}>{html.escape(h)}</th>" for h, _ in columns)
    rows = list(zip(*(cells for _, cells in columns), strict=True))
    extras = list(row_attributes) if row_attributes is not None else [{}] * len(rows)
    if len(extras) != len(rows):
        raise ValueError(f"row_attributes has {len(extras)} entries for {len(rows)} rows.")
    body = []
    for row, extra in zip(rows, extras, strict=True):
        cells = "".join(
            f"<td{_style('td', tones.get(h, {}).get(cell))}>{_cell(cell)}</td>"
            for (h, _), cell in zip(columns, row, strict=True)
        )
        attributes = "".join(f' {k}="{html.escape(str(v))}"' for k, v in extra.items())
        body.append(f"<tr{attributes}>{cells}</tr>")
    css = f' class="{html.escape(css_class)}"' if css_class else ""
    return (
        f"<table{css}{_style('table')}><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _cell(cell: str) -> str:
    return cell if isinstance(cell, Html) else html.escape(str(cell))


def _style(element: str, tone: str | None = None) -> str:
    declarations = ";".join(filter(None, (CSS.get(element, ""), CSS.get(tone or "", ""))))
    return f' style="{declarations}"' if declarations else ""
