"""BatchSplitView: which examples each replica received, step by step.

Example:
    >>> import tensorflow as tf
    >>> import mirrorkit as mk
    >>> from mirrorwidgets import BatchSplitView
    >>> preview = mk.preview_input(mk.make_strategy(), tf.data.Dataset.range(4).batch(2))
    >>> BatchSplitView(preview).steps
    (0, 1)
"""

from __future__ import annotations

import ipywidgets
import traitlets

from mirrorkit.report import style
from mirrorwidgets._a11y import ThemedHTML, announce, text_of
from mirrorwidgets._render import FONT, GREEN, GREY, RED, container, esc
from mirrorwidgets._snapshot import SnapshotMixin
from mirrorwidgets._traits import at_least

AMBER = style.WARN
AMBER_BG = style.WARN_BG
RED_BG = style.BAD_BG
_BORDER = style.BORDER
# status -> (text color, background, border) of a cell
_STATUS_STYLE = {
    "full": (GREY, style.WHITE, _BORDER),
    "partial": (AMBER, AMBER_BG, AMBER),
    "EMPTY": (RED, RED_BG, RED),
}


class BatchSplitView(SnapshotMixin, ipywidgets.VBox):
    """Show which examples went to which replica: one row per step, one column per replica.

    Each cell lists the ids of the examples that replica received at that step, as small
    boxes. Partial batches (fewer examples than a full per-replica batch) are amber, EMPTY
    batches (no example at all) are red, and the preview's warnings are shown below.

    Args:
        preview: What ``mirrorkit.preview_input(strategy, dataset)`` returns, or, worked
            out without TensorFlow, ``mirrorkit.checks.input_preview.preview_split``.
        title: Heading; by default the distribution method.
        **kwargs: Any trait below, or layout options of ``ipywidgets.VBox``.

    Raises:
        TypeError: If ``preview`` is not a ``mirrorkit.InputPreview``.
        ValueError: If the preview holds no batches.

    Example:
        >>> import tensorflow as tf
        >>> import mirrorkit as mk
        >>> from mirrorwidgets import BatchSplitView
        >>> preview = mk.preview_input(mk.make_strategy(), tf.data.Dataset.range(5).batch(2))
        >>> view = BatchSplitView(preview)
        >>> view.num_replicas, view.steps, view.num_partial
        (1, (0, 1, 2), 1)
        >>> 'data-status="partial"' in view.snapshot_html()
        True
    """

    title = traitlets.Unicode("", help="Heading above the grid; empty for the distribution method.")
    max_ids = traitlets.Int(
        12, help="Most ids drawn per cell; beyond that the first ones, '...' and the last one."
    )
    show_warnings = traitlets.Bool(
        True, help="Whether the preview's warnings are listed below the grid."
    )
    num_replicas = traitlets.Int(0, read_only=True, help="Replicas (columns) in the shown preview.")
    steps = traitlets.Tuple(read_only=True, help="The previewed steps (rows), in order.")
    num_partial = traitlets.Int(0, read_only=True, help="How many per-replica batches are partial.")
    num_empty = traitlets.Int(0, read_only=True, help="How many per-replica batches are EMPTY.")

    def __init__(self, preview, *, title: str = "", **kwargs):
        super().__init__(**kwargs)
        self.title = title
        self.preview = None
        self._header = ThemedHTML()
        self._grid = ThemedHTML()
        self._warnings = ThemedHTML()
        self.children = [self._header, self._grid, self._warnings]
        try:
            self.update(preview)
        except Exception:
            self.close()  # no half-built widget left behind
            raise
        self.observe(self._redraw, names=["title", "max_ids", "show_warnings"])

    @classmethod
    def from_dataset(
        cls, strategy, dataset_or_fn, *, steps: int = 3, input_options=None, **kwargs
    ) -> BatchSplitView:
        """Preview how ``strategy`` distributes a dataset, and show it.

        Calls ``mirrorkit.preview_input(strategy, dataset_or_fn, steps=steps,
        input_options=input_options)``; the dataset's examples need integer ids (e.g.
        ``dataset.enumerate()`` before ``.batch(...)``).

        Args:
            strategy: A ``tf.distribute.Strategy``.
            dataset_or_fn: A batched ``tf.data.Dataset``, or a function of a
                ``tf.distribute.InputContext`` that returns one.
            steps: How many steps to show from the start (the last step of a short finite
                dataset is shown too).
            input_options: A ``tf.distribute.InputOptions`` passed on to the strategy.
            **kwargs: Passed on to the constructor (``title`` or any trait).

        Returns:
            A new :class:`BatchSplitView`.

        Raises:
            TypeError, ValueError: As ``mirrorkit.preview_input`` raises them.

        Example:
            >>> import tensorflow as tf
            >>> import mirrorkit as mk
            >>> from mirrorwidgets import BatchSplitView
            >>> dataset = tf.data.Dataset.range(8).batch(4)
            >>> view = BatchSplitView.from_dataset(mk.make_strategy(), dataset, steps=1)
            >>> view.preview.ids_by_step()
            {0: [(0, 1, 2, 3)], 1: [(4, 5, 6, 7)]}
        """
        import mirrorkit as mk

        preview = mk.preview_input(
            strategy, dataset_or_fn, steps=steps, input_options=input_options
        )
        return cls(preview, **kwargs)

    _ids = at_least(
        "max_ids", minimum=2, why="the first ids, '...' and the last", example="max_ids=12"
    )

    def update(self, preview) -> None:
        """Show another preview in place.

        Args:
            preview: What ``mirrorkit.preview_input`` returns.

        Raises:
            TypeError: If ``preview`` is not a ``mirrorkit.InputPreview``.
            ValueError: If the preview holds no batches.

        Example:
            >>> import tensorflow as tf
            >>> import mirrorkit as mk
            >>> from mirrorwidgets import BatchSplitView
            >>> strategy = mk.make_strategy()
            >>> view = BatchSplitView(mk.preview_input(strategy, tf.data.Dataset.range(4).batch(2)))
            >>> view.update(mk.preview_input(strategy, tf.data.Dataset.range(4).batch(4)))
            >>> view.steps
            (0,)
        """
        preview = _shown_preview(preview)
        self.preview = preview
        self.set_trait("num_replicas", preview.num_replicas)
        self.set_trait("steps", tuple(sorted({b.step for b in preview.batches})))
        self.set_trait("num_partial", len(preview.partial))
        self.set_trait("num_empty", len(preview.empty))
        self._redraw()

    def snapshot_html(self) -> str:
        """The view's current state as self-contained HTML (inline styles, no script).

        Returns:
            An HTML fragment.

        Example:
            >>> import tensorflow as tf
            >>> import mirrorkit as mk
            >>> from mirrorwidgets import BatchSplitView
            >>> dataset = tf.data.Dataset.range(2).batch(2)
            >>> view = BatchSplitView.from_dataset(mk.make_strategy(), dataset)
            >>> view.snapshot_html().startswith('<div class="mw-batches mw-snapshot"')
            True
        """
        inner = self._header_html() + self._grid_html() + self._warnings_html()
        return container(inner, "mw-batches mw-snapshot")

    # ------------------------------------------------------------------ drawing

    def _redraw(self, change=None) -> None:
        self._header.value = self._header_html()
        self._grid.value = container(self._grid_html(), "mw-batches")
        self._warnings.value = self._warnings_html()
        announce(self, text_of(self._header.value))

    def _header_html(self) -> str:
        p = self.preview
        n = p.num_replicas
        heading = self.title or p.method
        bits = [f"{n} replica{'' if n == 1 else 's'}"]
        if p.global_batch is not None:
            bits.append(f"global batch {p.global_batch}")
        if p.per_replica_batch is not None:
            bits.append(f"{p.per_replica_batch} per replica")
        total = "unknown" if p.total_steps is None else str(p.total_steps)
        bits.append(f"steps in the dataset: {total}")
        legend = (
            f'<span style="background:{AMBER_BG};color:{AMBER};border:1px solid {AMBER};'
            'padding:0 4px;border-radius:3px">partial</span> '
            f'<span style="background:{RED_BG};color:{RED};border:1px solid {RED};'
            'padding:0 4px;border-radius:3px">EMPTY</span>'
        )
        return (
            f'<div class="mw-title" style="{FONT}"><strong>{esc(heading)}</strong> '
            f'<span style="color:{GREY}">({esc(", ".join(bits))})</span> {legend}</div>'
        )

    def _grid_html(self) -> str:
        p = self.preview
        devices: dict[int, str] = {}
        for b in p.batches:
            devices.setdefault(b.replica, b.device)
        head = "".join(
            f'<th data-replica="{i}" style="padding:2px 6px;text-align:left">replica {i} '
            f'<span class="mw-device" style="color:{GREY};font-weight:normal">'
            f"{esc(devices.get(i, '?'))}</span></th>"
            for i in range(p.num_replicas)
        )
        rows, previous = [], None
        by_step: dict[int, dict[int, object]] = {}
        for b in p.batches:
            by_step.setdefault(b.step, {})[b.replica] = b
        for step in sorted(by_step):
            if previous is not None and step > previous + 1:
                hidden = (
                    f"step {step - 1}"
                    if step - previous == 2
                    else f"steps {previous + 1} to {step - 1}"
                )
                rows.append(
                    f'<tr class="mw-gap"><td colspan="{p.num_replicas + 1}" '
                    f'style="color:{GREY};padding:0 6px">&#8942; {hidden} not shown</td></tr>'
                )
            previous = step
            cells = by_step[step]
            got = sum(b.size for b in cells.values())
            of = "" if p.global_batch is None else f" of {p.global_batch}"
            row_head = (
                f'<th style="padding:2px 6px;text-align:left;white-space:nowrap">step {step}'
                f'<div style="color:{GREY};font-weight:normal">{got}{of} examples</div></th>'
            )
            tds = "".join(
                self._cell_html(cells[i]) if i in cells else "<td></td>"
                for i in range(p.num_replicas)
            )
            rows.append(f'<tr class="mw-step" data-step="{step}">{row_head}{tds}</tr>')
        return (
            '<table class="mw-split" style="border-collapse:separate;border-spacing:4px">'
            f'<thead><tr><th style="padding:2px 6px">step</th>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>"
        )

    def _cell_html(self, batch) -> str:
        color, background, border = _STATUS_STYLE.get(batch.status, _STATUS_STYLE["full"])
        ids = list(batch.ids)
        if len(ids) > self.max_ids:
            shown = [*map(str, ids[: self.max_ids - 1]), "...", str(ids[-1])]
        else:
            shown = [str(i) for i in ids]
        chips = "".join(
            f'<span class="mw-id" style="display:inline-block;min-width:1.6em;text-align:center;'
            f'border:1px solid {_BORDER};border-radius:3px;margin:1px;background:{style.SURFACE}">'
            f"{esc(s)}</span>"
            if s != "..."
            else f'<span class="mw-more" style="color:{GREY}">&#8230;</span>'
            for s in shown
        )
        if batch.status == "EMPTY":
            label = "EMPTY: no examples"
        else:
            count = f"{batch.size} example{'' if batch.size == 1 else 's'}"
            label = count if batch.status == "full" else f"{count} (partial)"
        return (
            f'<td class="mw-cell" data-step="{batch.step}" data-replica="{batch.replica}" '
            f'data-status="{esc(batch.status)}" style="vertical-align:top;'
            f"border:1px solid {border};border-radius:6px;padding:4px 6px;"
            f'background:{background};min-width:120px">'
            f'<div class="mw-ids">{chips}</div>'
            f'<div class="mw-status" style="color:{color}">'
            f"{label}</div></td>"
        )

    def _warnings_html(self) -> str:
        if not self.show_warnings:
            return ""
        if not self.preview.warnings:
            return (
                f'<div class="mw-ok" style="{FONT};color:{GREEN}">'
                "&#10003; no warnings: every replica got a full batch at every previewed step</div>"
            )
        return "".join(
            f'<div class="mw-warning" style="{FONT};color:{AMBER};margin-top:4px">'
            f"<strong>Warning</strong>: {esc(text)}</div>"
            for text in self.preview.warnings
        )


def _shown_preview(preview):
    """``preview`` if it is an InputPreview that holds batches, else a clear error."""
    import mirrorkit as mk

    if not isinstance(preview, mk.InputPreview):
        got = type(preview).__name__
        if callable(preview) and getattr(preview, "__name__", "") == "preview_input":
            got = "the function preview_input itself (call it and pass its result)"
        raise TypeError(
            f"preview must be a mirrorkit.InputPreview, got {got}: pass "
            "mk.preview_input(strategy, dataset) (ids come from dataset.enumerate() "
            "before .batch(...)), or use BatchSplitView.from_dataset(strategy, dataset)."
        )
    if not preview.batches:
        raise ValueError(
            "preview holds no batches, so there is nothing to show: the dataset yielded "
            "no step at all. Check that it is not empty (e.g. a take(0) or a filter that "
            "drops everything) before distributing it."
        )
    return preview
