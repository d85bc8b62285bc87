"""LossScaleView: the dynamic loss scale of mixed-precision training, and its overflow steps.

Example:
    >>> from mirrorwidgets import LossScaleView
    >>> LossScaleView([{"step": 0, "loss_scale": 32768.0, "overflow": True}]).overflow_steps
    (0,)
"""

from __future__ import annotations

import ipywidgets
import traitlets

from mirrorwidgets import _plot
from mirrorwidgets._a11y import ThemedHTML, announce, text_of
from mirrorwidgets._loss_scale_render import chart_svg, power_of_two
from mirrorwidgets._records import ScaleRecord, check_order, read_record, read_records
from mirrorwidgets._render import FONT, GREEN, GREY, RED, container, esc
from mirrorwidgets._snapshot import SnapshotMixin
from mirrorwidgets._traits import at_least

_SHOWN_OVERFLOWS = 12


class LossScaleView(SnapshotMixin, ipywidgets.VBox):
    """Draw the dynamic loss scale over training steps, overflow (skipped) steps, and the loss.

    Under a ``mixed_float16`` policy, ``keras.optimizers.LossScaleOptimizer`` multiplies
    the loss by a scale so that small float16 gradients do not round to zero. When the
    scaled gradients overflow (inf or NaN) it skips that update and halves the scale;
    after ``dynamic_growth_steps`` good steps it doubles it. The view draws the scale on
    a log2 axis, marks overflow steps in red and, when the records carry it, the loss
    below. The drawing is inline SVG made on the Python side.

    Args:
        records: A sequence of records, each with ``step``, ``loss_scale``, ``overflow``
            (a bool) and optionally ``loss``, as attributes or dict keys; or any object
            with a ``.records`` attribute holding them. ``None`` starts an empty view for
            :meth:`append`.
        title: Heading above the chart.
        **kwargs: Any trait below, or layout options of ``ipywidgets.VBox``.

    Raises:
        TypeError: If ``records`` is not a sequence of records, or a field is not a number
            (``overflow``: not a bool).
        ValueError: If ``records`` is empty, a record lacks a field, a loss scale is not
            positive and finite, or the steps do not increase.

    Example:
        >>> from mirrorwidgets import LossScaleView
        >>> view = LossScaleView([
        ...     {"step": 0, "loss_scale": 32768.0, "overflow": False, "loss": 0.9},
        ...     {"step": 1, "loss_scale": 32768.0, "overflow": True, "loss": 0.9},
        ...     {"step": 2, "loss_scale": 16384.0, "overflow": False, "loss": 0.7},
        ... ])
        >>> view.loss_scale, view.overflow_steps
        (16384.0, (1,))
        >>> 'class="mw-overflow" data-step="1"' in view.snapshot_html()
        True
    """

    title = traitlets.Unicode("Dynamic loss scale", help="Heading above the chart.")
    show_loss = traitlets.Bool(
        True, help="Whether the loss is drawn below the scale (if recorded)."
    )
    max_points = traitlets.Int(
        1000, help="Most steps drawn; beyond that every k-th step, plus every overflow step."
    )
    num_steps = traitlets.Int(0, read_only=True, help="How many records (steps) the view holds.")
    step = traitlets.Int(None, allow_none=True, read_only=True, help="The last recorded step.")
    loss_scale = traitlets.Float(
        None,
        allow_none=True,
        read_only=True,
        help="The loss scale now: the last record's next_scale if it has one, else the scale "
        "its step used.",
    )
    overflow_steps = traitlets.Tuple(
        read_only=True, help="Steps whose gradients overflowed (skipped)."
    )

    def __init__(self, records=None, *, title: str = "Dynamic loss scale", **kwargs):
        super().__init__(**kwargs)
        self.title = title
        self._records: tuple[ScaleRecord, ...] = ()
        self._header = ThemedHTML()
        self._chart = ThemedHTML()
        self._notes = ThemedHTML()
        self.children = [self._header, self._chart, self._notes]
        try:
            if records is None:
                self._redraw()
            else:
                self.update(records)
        except Exception:
            self.close()  # no half-built widget left behind
            raise
        self.observe(self._redraw, names=["title", "show_loss", "max_points"])

    _points = at_least("max_points", minimum=2, why="a line needs two points")

    @property
    def records(self) -> tuple:
        """The records shown, checked: each has ``step``, ``loss_scale``, ``overflow``, ``loss``.

        Example:
            >>> from mirrorwidgets import LossScaleView
            >>> view = LossScaleView([{"step": 5, "loss_scale": 8, "overflow": 0}])
            >>> view.records[0].loss_scale, view.records[0].overflow, view.records[0].loss
            (8.0, False, None)
        """
        return self._records

    def update(self, records) -> None:
        """Replace every record and redraw.

        Args:
            records: Same kinds as the constructor takes (not ``None``).

        Raises:
            TypeError, ValueError: As the constructor raises them.

        Example:
            >>> from mirrorwidgets import LossScaleView
            >>> view = LossScaleView([{"step": 0, "loss_scale": 4.0, "overflow": False}])
            >>> view.update([{"step": 0, "loss_scale": 2.0, "overflow": True}])
            >>> view.num_steps, view.overflow_steps
            (1, (0,))
        """
        self._set(read_records(records, "LossScaleView"))

    def append(self, record) -> None:
        """Add one step's record (live use: call once per training step) and redraw.

        Args:
            record: An object with ``step``, ``loss_scale``, ``overflow`` (and optionally
                ``loss``) attributes, or a dict with those keys; its step must come after
                the last one.

        Raises:
            TypeError, ValueError: As for one record of the constructor.

        Example:
            >>> from mirrorwidgets import LossScaleView
            >>> view = LossScaleView()
            >>> view.append({"step": 0, "loss_scale": 1024.0, "overflow": False, "loss": 1.0})
            >>> view.append({"step": 1, "loss_scale": 1024.0, "overflow": True, "loss": 1e9})
            >>> view.step, view.overflow_steps
            (1, (1,))
        """
        new = read_record(record, "record")
        records = (*self._records, new)
        check_order(records[-2:])
        self._set(records)

    def snapshot_html(self) -> str:
        """The view's current state as self-contained HTML (inline SVG, no script).

        Returns:
            An HTML fragment.

        Example:
            >>> from mirrorwidgets import LossScaleView
            >>> "no steps yet" in LossScaleView().snapshot_html()
            True
        """
        inner = self._header_html() + self._chart_html() + self._notes_html()
        return container(inner, "mw-loss-scale mw-snapshot")

    # ------------------------------------------------------------------ drawing

    def _set(self, records: tuple[ScaleRecord, ...]) -> None:
        self._records = records
        self.set_trait("num_steps", len(records))
        self.set_trait("step", records[-1].step)
        last = records[-1]
        now = last.loss_scale if last.next_scale is None else last.next_scale
        self.set_trait("loss_scale", now)
        self.set_trait("overflow_steps", tuple(p.step for p in records if p.overflow))
        self._redraw()

    def _redraw(self, change=None) -> None:
        self._header.value = self._header_html()
        self._chart.value = self._chart_html()
        self._notes.value = self._notes_html()
        announce(self, text_of(self._header.value))

    def _header_html(self) -> str:
        bits = [f"<strong>{esc(self.title)}</strong>"]
        if self._records:
            n = len(self._records)
            bits.append(f"{n} step{'' if n == 1 else 's'}")
            scale = self.loss_scale
            now = "now" if self._records[-1].next_scale is not None else "at the last step"
            bits.append(f"loss scale {now} {esc(power_of_two(scale))} = {scale:.6g}")
            count = len(self.overflow_steps)
            color = RED if count else GREEN
            bits.append(
                f'<span class="mw-overflows" data-count="{count}" style="color:{color}">'
                f"{count} overflow{'' if count == 1 else 's'}</span>"
            )
            last = self._records[-1]
            if last.loss is not None:
                bits.append(f"loss {last.loss:.4g}")
        return f'<div class="mw-title" style="{FONT}">{" &middot; ".join(bits)}</div>'

    def _chart_html(self) -> str:
        if not self._records:
            return f'<div style="{FONT};color:{GREY}">no steps yet</div>'
        svg = chart_svg(self._records, show_loss=self.show_loss, max_points=self.max_points)
        rows = [
            (
                r.step,
                _plot.number(r.loss_scale),
                "yes" if r.overflow else "no",
                "" if r.loss is None else _plot.number(r.loss),
            )
            for r in self._records
        ]
        header = ["step", "loss scale", "overflow", "loss"]
        return f"<div>{svg}</div>{_plot.twin('the chart as a table', header, rows)}"

    def _notes_html(self) -> str:
        steps = self.overflow_steps
        if not steps:
            return ""
        shown = ", ".join(map(str, steps[:_SHOWN_OVERFLOWS]))
        more = f" and {len(steps) - _SHOWN_OVERFLOWS} more" if len(steps) > _SHOWN_OVERFLOWS else ""
        return (
            f'<div class="mw-notes" style="{FONT};color:{GREY};max-width:520px">'
            f'<span style="color:{RED}">&#9679;</span> overflow (skipped) '
            f"step{'' if len(steps) == 1 else 's'}: {shown}{more}. The scaled gradients held "
            "inf or NaN, so LossScaleOptimizer applied no update at those steps and halved "
            "the loss scale.</div>"
        )
