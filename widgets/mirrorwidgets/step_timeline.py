"""StepTimeline: where each training step's time went, as stacked bars that grow live.

Example:
    >>> from mirrorwidgets import StepTimeline
    >>> step = {"step": 0, "input_wait_s": 0.25, "step_s": 1.0, "all_reduce_s": 0.25,
    ...         "compute_s": 0.75}
    >>> StepTimeline([step]).last_total_s
    1.25
"""

from __future__ import annotations

import statistics

import ipywidgets
import traitlets

from mirrorkit._validate import refuse
from mirrorkit.report.units import format_percent, format_seconds
from mirrorwidgets import _plot
from mirrorwidgets._a11y import ThemedHTML, announce, text_of
from mirrorwidgets._phases import PHASES, Phases, check_order, read_phases, read_steps
from mirrorwidgets._render import FONT, GREY, RED, container, esc
from mirrorwidgets._snapshot import SnapshotMixin
from mirrorwidgets._step_timeline_render import COLORS, NAMES, legend_html, timeline_svg
from mirrorwidgets._throttle import Throttle
from mirrorwidgets._traits import at_least, budget_fraction

_SHOWN_OVER = 12


class StepTimeline(SnapshotMixin, ipywidgets.VBox):
    """One stacked bar per training step: input wait, compute and all-reduce.

    Takes what ``mirrorkit.StepTracer`` measures: a ``StepTrace`` (its ``.steps``)
    or ``StepPhases`` records, one per step. :meth:`append` adds a step while training
    runs and redraws at most every ``min_interval`` seconds, within ``budget`` of the
    wall time (:meth:`flush` draws what is left); :meth:`update` replaces every step
    and redraws at once. A long run is drawn as at most ``max_points`` bars, each the
    mean of consecutive steps. A rare very slow step (the first one, which traces the
    ``tf.function``) would flatten every other bar: the axis leaves it out, cuts its bar
    and marks it with a red triangle. The drawing is inline SVG made on the Python side.

    Args:
        steps: A ``StepTrace``, or a sequence of steps, each with ``step``,
            ``input_wait_s``, ``step_s``, ``all_reduce_s`` and ``compute_s`` (seconds) as
            attributes or dict keys; ``None`` starts an empty timeline for :meth:`append`.
        title: Heading above the chart.
        **kwargs: Any trait below, or layout options of ``ipywidgets.VBox``.

    Raises:
        TypeError: If ``steps`` is not a trace or a sequence of steps, or a field is not a
            number.
        ValueError: If there are no steps, a step lacks a field, a time is negative or
            not finite, ``compute_s + all_reduce_s`` is not ``step_s``, or the steps do
            not increase.

    Example:
        >>> from mirrorkit import StepPhases
        >>> from mirrorwidgets import StepTimeline
        >>> timeline = StepTimeline([
        ...     StepPhases(0, input_wait_s=0.25, step_s=1.0, all_reduce_s=0.25, compute_s=0.75),
        ...     StepPhases(1, input_wait_s=0.125, step_s=0.5, all_reduce_s=0.25, compute_s=0.25),
        ... ])
        >>> timeline.num_steps, timeline.step, timeline.last_total_s
        (2, 1, 0.625)
        >>> timeline.snapshot_html().count('class="mw-seg"')  # 3 phases x 2 bars
        6
    """

    title = traitlets.Unicode("Step timeline", help="Heading above the chart.")
    max_points = traitlets.Int(
        200, help="Most bars drawn; a longer run is drawn as means of consecutive steps."
    )
    y_max = traitlets.Float(
        None,
        allow_none=True,
        help="Seconds at the top of the axis; None fits the steps but rare outliers.",
    )
    min_interval = traitlets.Float(0.08, help="Fewest seconds between redraws while appending.")
    budget = traitlets.Float(0.05, help="Largest fraction of wall time that redraws may take.")
    num_steps = traitlets.Int(0, read_only=True, help="How many steps the timeline holds.")
    step = traitlets.Int(None, allow_none=True, read_only=True, help="The last step's index.")
    last_total_s = traitlets.Float(
        None, allow_none=True, read_only=True, help="The last step's time, all phases, seconds."
    )
    clipped_steps = traitlets.Tuple(
        read_only=True, help="First steps of the bars cut at the top of the axis (outliers)."
    )

    def __init__(self, steps=None, *, title: str = "Step timeline", **kwargs):
        super().__init__(**kwargs)
        self.title = title
        self._steps: tuple[Phases, ...] = ()
        self._replicas = None
        self._throttle = Throttle(self.min_interval, self.budget)
        self._stale = False
        self._header = ThemedHTML()
        self._chart = ThemedHTML()
        self._notes = ThemedHTML()
        self.children = [self._header, self._chart, self._notes]
        try:
            if steps is None:
                self._redraw()
            else:
                self.update(steps)
        except Exception:
            self.close()  # no half-built widget left behind
            raise
        self.observe(self._redraw, names=["title", "max_points", "y_max"])
        self.observe(self._retime, names=["min_interval", "budget"])

    _points = at_least("max_points", minimum=1)
    _budget = budget_fraction()
    _interval = at_least("min_interval", minimum=0, unit="seconds")

    @traitlets.validate("y_max")
    def _positive(self, proposal):
        value = proposal["value"]
        if value is not None and not value > 0:
            must, write = "None or > 0 seconds", "e.g. y_max=None (to fit the longest step)"
            refuse("y_max", value, must=must, write=write, error=traitlets.TraitError)
        return value

    @property
    def steps(self) -> tuple:
        """The steps shown, checked, each with ``step`` and the four times in seconds.

        Example:
            >>> from mirrorwidgets import StepTimeline
            >>> timeline = StepTimeline([{"step": 3, "input_wait_s": 0, "step_s": 0.5,
            ...                           "all_reduce_s": 0.25, "compute_s": 0.25}])
            >>> timeline.steps[0].total_s
            0.5
        """
        return self._steps

    def update(self, steps) -> None:
        """Replace every step and redraw now.

        Args:
            steps: A ``StepTrace`` or a sequence of steps (not ``None``).

        Raises:
            TypeError, ValueError: As the constructor raises them.

        Example:
            >>> from mirrorwidgets import StepTimeline
            >>> timeline = StepTimeline()
            >>> timeline.update([{"step": 0, "input_wait_s": 0.25, "step_s": 0.5,
            ...                   "all_reduce_s": 0.125, "compute_s": 0.375}])
            >>> timeline.num_steps, timeline.last_total_s
            (1, 0.75)
        """
        steps_read = read_steps(steps, "StepTimeline")
        self._replicas = getattr(steps, "replicas", None)
        self._set(steps_read)
        self._draw()

    def append(self, phases) -> bool:
        """Add one step (live use: call once per training step); redraw if one is due.

        Args:
            phases: A ``StepPhases``, or a dict with its fields; its step must come after
                the last one.

        Returns:
            Whether the chart was redrawn (else it is at most ``min_interval`` seconds
            behind; :meth:`flush` draws it now).

        Raises:
            TypeError, ValueError: As for one step of the constructor.

        Example:
            >>> from mirrorkit import StepPhases
            >>> from mirrorwidgets import StepTimeline
            >>> timeline = StepTimeline(min_interval=3600)
            >>> timeline.append(StepPhases(0, 0.001, 0.01, 0.002, 0.008))
            True
            >>> timeline.append(StepPhases(1, 0.001, 0.01, 0.002, 0.008))  # throttled
            False
            >>> timeline.num_steps, timeline.flush()
            (2, True)
        """
        new = read_phases(phases, "phases")
        steps = (*self._steps, new)
        check_order(steps[-2:])
        self._set(steps)
        if not self._throttle.update_if_due(self._draw):
            self._stale = True
            return False
        return True

    def flush(self) -> bool:
        """Draw the steps appended since the last redraw (call it after training).

        Returns:
            Whether there was anything to draw.

        Example:
            >>> from mirrorwidgets import StepTimeline
            >>> StepTimeline().flush()
            False
        """
        if not self._stale:
            return False
        self._draw()
        return True

    def snapshot_html(self) -> str:
        """The timeline's current state (every step, drawn or not yet) as HTML, no script.

        Returns:
            An HTML fragment (inline SVG).

        Example:
            >>> from mirrorwidgets import StepTimeline
            >>> "no steps yet" in StepTimeline().snapshot_html()
            True
        """
        header, chart, notes = self._render()
        return container(header + chart + notes, "mw-step-timeline mw-snapshot")

    # ------------------------------------------------------------------ drawing

    def _retime(self, change) -> None:
        setattr(self._throttle, change["name"], change["new"])

    def _set(self, steps: tuple[Phases, ...]) -> None:
        self._steps = steps
        self.set_trait("num_steps", len(steps))
        self.set_trait("step", steps[-1].step)
        self.set_trait("last_total_s", steps[-1].total_s)

    def _redraw(self, change=None) -> None:
        self._draw()

    def _draw(self) -> None:
        self._header.value, self._chart.value, self._notes.value = self._render()
        self._stale = False
        announce(self, text_of(self._header.value))

    def _render(self) -> tuple[str, str, str]:
        if not self._steps:
            self.set_trait("clipped_steps", ())
            empty = f'<div style="{FONT};color:{GREY}">no steps yet</div>'
            return self._header_html(), empty, ""
        svg, clipped, top = timeline_svg(self._steps, max_points=self.max_points, y_max=self.y_max)
        self.set_trait("clipped_steps", tuple(step for step, _ in clipped))
        rows = [
            (s.step, *(format_seconds(getattr(s, phase)) for phase in NAMES)) for s in self._steps
        ]
        table = _plot.twin("the chart as a table", ["step", *NAMES.values()], rows)
        return self._header_html(), f"<div>{svg}</div>{table}", self._notes_html(clipped, top)

    def _header_html(self) -> str:
        bits = [f"<strong>{esc(self.title)}</strong>"]
        steps = self._steps
        if steps:
            n = len(steps)
            bits.append(f"{n} step{'' if n == 1 else 's'}")
            if isinstance(self._replicas, int):
                bits.append(f"{self._replicas} replicas")
            median = statistics.median(s.total_s for s in steps)
            bits.append(f"median {format_seconds(median)}")
            total = sum(s.total_s for s in steps)
            for phase in PHASES:
                share = sum(getattr(s, phase) for s in steps) / total if total else 0.0
                bits.append(
                    f'<span class="mw-share" data-phase="{phase}">'
                    f'<span style="color:{COLORS[phase]}">&#9632;</span> '
                    f"{NAMES[phase]} {format_percent(share)}</span>"
                )
        else:
            bits.append(legend_html())
        return f'<div class="mw-title" style="{FONT}">{" &middot; ".join(bits)}</div>'

    def _notes_html(self, clipped: list[tuple[int, float]], top: float) -> str:
        if not clipped:
            return ""
        shown = ", ".join(
            f"{step} ({format_seconds(total)})" for step, total in clipped[:_SHOWN_OVER]
        )
        more = f" and {len(clipped) - _SHOWN_OVER} more" if len(clipped) > _SHOWN_OVER else ""
        return (
            f'<div class="mw-notes" style="{FONT};color:{GREY};max-width:520px">'
            f'<span style="color:{RED}">&#9650;</span> beyond the axis '
            f"({format_seconds(top)}), cut at the top: step{'' if len(clipped) == 1 else 's'} "
            f"{shown}{more}. The first step usually traces and compiles the tf.function; "
            "set y_max to choose the axis.</div>"
        )
