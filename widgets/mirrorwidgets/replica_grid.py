"""ReplicaGrid: one cell per replica for any distributed value, optionally before/after.

Example:
    >>> import tensorflow as tf
    >>> import mirrorkit as mk
    >>> from mirrorwidgets import ReplicaGrid
    >>> strategy = mk.make_strategy()
    >>> ReplicaGrid(strategy.run(lambda: tf.constant(1.0))).num_replicas
    1
"""

from __future__ import annotations

import ipywidgets
import traitlets

from mirrorkit.report import style
from mirrorwidgets import _values
from mirrorwidgets._a11y import ThemedHTML, announce, text_of
from mirrorwidgets._render import FONT, GREY, container, esc, sync_html, value_html
from mirrorwidgets._snapshot import SnapshotMixin
from mirrorwidgets._traits import at_least


class ReplicaGrid(SnapshotMixin, ipywidgets.VBox):
    """Show a distributed value as one cell per replica: device, dtype, shape and value.

    Mirrored values get an "in sync" or "diverged" mark. Given ``after`` too (for example
    per-replica gradients and their all-reduced result), the grid shows both rows, so the
    all-reduce is visible: different values above, identical values below.

    Args:
        value: A ``PerReplica`` (what ``strategy.run`` returns), a ``MirroredVariable``, a
            Keras model built under ``strategy.scope()``, a plain tensor, or a list or dict
            of these (e.g. per-replica gradients).
        after: Optional: the same values after an all-reduce.
        title: Heading; by default a description of ``value``.
        **kwargs: Any trait below, or layout options of ``ipywidgets.VBox``.

    Raises:
        TypeError: If ``value`` or ``after`` does not hold TensorFlow or Keras values.
        ValueError: If ``value`` is empty or a model without weights, or ``after`` cannot
            be an all-reduce of ``value``.

    Example:
        >>> import tensorflow as tf
        >>> import mirrorkit as mk
        >>> from mirrorwidgets import ReplicaGrid
        >>> strategy = mk.make_strategy()
        >>> per_replica = strategy.run(lambda: tf.constant([1.0, 2.0]))
        >>> grid = ReplicaGrid(per_replica)
        >>> grid.num_replicas == strategy.num_replicas_in_sync
        True
        >>> "[1, 2]" in grid.snapshot_html()
        True
    """

    title = traitlets.Unicode(
        "", help="Heading shown above the cells; empty for the value's own title."
    )
    labels = traitlets.Tuple(
        traitlets.Unicode(),
        traitlets.Unicode(),
        default_value=("before all-reduce", "after all-reduce"),
        help="Row labels for a before/after pair.",
    )
    large_view = traitlets.Enum(
        ("heat", "histogram"),
        default_value="heat",
        help="How tensors with more than `small` elements are drawn.",
    )
    small = traitlets.Int(8, help="Tensors with at most this many elements are shown as numbers.")
    max_entries = traitlets.Int(
        6, help="Most values listed per cell (e.g. model weights); more are counted."
    )
    num_replicas = traitlets.Int(0, read_only=True, help="How many replicas the shown value spans.")
    in_sync = traitlets.Bool(
        None,
        allow_none=True,
        read_only=True,
        help="Whether mirrored copies (or all-reduced results) agree; None if not applicable.",
    )

    def __init__(self, value, after=None, *, title: str = "", **kwargs):
        super().__init__(**kwargs)
        self.title = title
        self._before = None
        self._after = None
        try:
            self.update(value, after)
        except Exception:
            self.close()  # no half-built widget left behind
            raise
        self.observe(self._redraw, names=["title", "labels", "large_view", "small", "max_entries"])

    _positive = at_least("small", "max_entries", minimum=1)

    def update(self, value, after=None) -> None:
        """Show a new value (and optionally its all-reduced result) in place.

        Args:
            value: The new value; same kinds as the constructor takes.
            after: Optional: the values after an all-reduce.

        Raises:
            TypeError, ValueError: As the constructor raises them.

        Example:
            >>> import tensorflow as tf
            >>> import mirrorkit as mk
            >>> from mirrorwidgets import ReplicaGrid
            >>> strategy = mk.make_strategy()
            >>> grid = ReplicaGrid(strategy.run(lambda: tf.constant(1.0)))
            >>> grid.update(strategy.run(lambda: tf.constant(7.0)))
            >>> "7" in grid.snapshot_html()
            True
        """
        before = _values.read(value)
        reduced = None
        if after is not None:
            reduced = _values.read(after, what="ReplicaGrid", argument="after")
            _values.check_pair(before, reduced)
        self._show(before, reduced)

    def _show(self, before: _values.Reading, reduced: _values.Reading | None = None) -> None:
        """Show values already read (and checked) in place."""
        self._before, self._after = before, reduced
        self.set_trait("num_replicas", len(before.cells))
        if reduced is not None:
            self.set_trait("in_sync", all(_values.agree(reduced)))
        else:
            self.set_trait("in_sync", before.in_sync)
        self._redraw()

    def snapshot_html(self) -> str:
        """The grid's current state as self-contained HTML (inline styles and SVG, no script).

        Returns:
            An HTML fragment.

        Example:
            >>> import tensorflow as tf
            >>> from mirrorwidgets import ReplicaGrid
            >>> ReplicaGrid(tf.constant(3.0)).snapshot_html().startswith("<div")
            True
        """
        parts = [self._header_html()]
        for label, cells in self._stages():
            inner = "".join(cells)
            parts.append(self._label_html(label))
            parts.append(f'<div style="display:flex;flex-wrap:wrap;gap:6px">{inner}</div>')
        return container("".join(parts), "mw-grid mw-snapshot")

    # ------------------------------------------------------------------ drawing

    def _redraw(self, change=None) -> None:
        self._lay_out()
        announce(self, text_of(self._header.value))

    def _lay_out(self) -> None:
        stages = self._stages()
        shape = tuple((label, len(cells)) for label, cells in stages)
        if shape == getattr(self, "_shape", None):
            # Same layout: change the HTML in place (no new widgets, so live updates are cheap).
            self._header.value = self._header_html()
            for row, (_, cells) in zip(self._rows, stages, strict=True):
                for box, cell in zip(row.children, cells, strict=True):
                    box.value = container(cell, "mw-grid")
            return
        for widget in self.children:
            if widget is getattr(self, "_mw_status", None):
                continue  # the live region stays
            for child in getattr(widget, "children", ()):
                child.close()
            widget.close()
        self._header = ThemedHTML(self._header_html())
        children, self._rows = [self._header], []
        for label, cells in stages:
            if label:
                children.append(ThemedHTML(self._label_html(label)))
            row = ipywidgets.HBox(
                [ThemedHTML(container(c, "mw-grid")) for c in cells],
                layout=ipywidgets.Layout(flex_flow="row wrap", grid_gap="6px"),
            )
            self._rows.append(row)
            children.append(row)
        self._shape = shape
        self.children = children

    def _header_html(self) -> str:
        heading = self.title or self._before.title
        mark = ""
        if self._after is not None:
            mark = sync_html(self.in_sync, "all replicas agree after the all-reduce", "mw-verdict")
        elif self.in_sync is not None:
            mark = sync_html(self.in_sync, "mirrored copies in sync", "mw-verdict")
        count = f"{self.num_replicas} replicas"
        extra = "" if count in heading else f' <span style="color:{GREY}">({count})</span>'
        return (
            f'<div class="mw-title" style="{FONT}"><strong>{esc(heading)}</strong>'
            f"{extra} {mark}</div>"
        )

    def _label_html(self, label: str) -> str:
        return (
            f'<div class="mw-stage" style="{FONT};color:{GREY};margin-top:4px">{esc(label)}</div>'
            if label
            else ""
        )

    def _stages(self) -> list[tuple[str, list[str]]]:
        readings = [self._before] + ([self._after] if self._after is not None else [])
        ranges = [_values.value_range(readings, i) for i in range(len(self._before.names))]
        if self._after is None:
            return [("", self._cells_html(self._before, ranges, None, "value"))]
        flags = _values.agree(self._after)
        return [
            (self.labels[0], self._cells_html(self._before, ranges, None, "before")),
            (self.labels[1], self._cells_html(self._after, ranges, flags, "after")),
        ]

    def _cells_html(self, reading, ranges, agree_flags, stage: str) -> list[str]:
        cells = []
        for cell in reading.cells:
            entries = []
            shown = cell.entries[: self.max_entries]
            for index, entry in enumerate(shown):
                lo, hi = ranges[index]
                picture = value_html(
                    entry.array, entry.summary, lo, hi, self.large_view, self.small
                )
                flag = entry.in_sync if agree_flags is None else agree_flags[index]
                name = f'<span class="mw-name">{esc(entry.name)}</span> ' if entry.name else ""
                entries.append(
                    f'<div class="mw-entry" data-name="{esc(entry.name)}">{name}'
                    f'<span class="mw-meta" style="color:{GREY}">{esc(entry.dtype)} '
                    f"{esc(entry.shape)}</span>"
                    f'<div class="mw-value">'
                    f"{picture}"
                    f"</div>{sync_html(flag)}</div>"
                )
            hidden = len(cell.entries) - len(shown)
            if hidden:
                entries.append(f'<div style="color:{GREY}">+ {hidden} more</div>')
            cells.append(
                f'<div class="mw-cell" data-replica="{cell.replica}" data-stage="{stage}" '
                f'style="border:1px solid {style.BORDER};border-radius:6px;padding:6px 8px;'
                'min-width:170px">'
                f'<div class="mw-head"><strong>replica {cell.replica}</strong> '
                f'<span class="mw-device">{esc(cell.device)}</span></div>'
                f"{''.join(entries)}</div>"
            )
        return cells
