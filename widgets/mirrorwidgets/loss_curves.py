"""LossCurves: the loss of several training runs against the examples seen, side by side.

Example:
    >>> from mirrorwidgets import LossCurves
    >>> LossCurves([{"replicas": 2, "examples": [64, 128], "losses": [1.2, 0.7]}]).labels
    ('2 replicas',)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NoReturn

import ipywidgets
import numpy as np
import traitlets

from mirrorwidgets import _plot
from mirrorwidgets._a11y import ThemedHTML, announce, text_of
from mirrorwidgets._loss_curves_render import Panel, Run, curves_svg
from mirrorwidgets._records import field, is_record, refuse_field
from mirrorwidgets._render import FONT, RED, container, esc
from mirrorwidgets._snapshot import SnapshotMixin
from mirrorwidgets._traits import at_least

_HINT = (
    "Pass a ScalingSweep from mirrorkit (mk.run_scaling_sweep), a list of them (one panel "
    "each), or a list of runs, each with 'examples', 'losses' and a 'label' (or 'replicas'), "
    "as attributes or dict keys."
)


class LossCurves(SnapshotMixin, ipywidgets.VBox):
    """Draw the loss of several runs against the examples seen: one line per run.

    Made for :func:`mirrorkit.run_scaling_sweep`, which trains the same task at several
    replica counts and records the mean loss per window of examples, so every run has a
    point at the same examples whatever its global batch. Pass one sweep for one panel,
    or several (say the same learning rate, then the scaled one) for panels side by side
    that share the loss axis; a replica count keeps its colour in every panel. A loss that
    is not finite (a diverged run) breaks its line. The drawing is inline SVG made on
    the Python side.

    Args:
        runs: A ``ScalingSweep`` (any object with ``.curves``), a sequence of them (one
            panel each), or a sequence of runs, each with ``examples`` (increasing whole
            numbers), ``losses`` (one number per point) and ``label`` or ``replicas``, as
            attributes or dict keys (a ``ScalingCurve`` is one).
        title: Heading above the chart.
        **kwargs: Any trait below, or layout options of ``ipywidgets.VBox``.

    Raises:
        TypeError: If ``runs`` is not one of the kinds above, or a field is not numbers.
        ValueError: If ``runs`` or a run is empty, a field is missing, the examples do not
            increase, the lengths differ, a label repeats in a panel, or no loss is finite.

    Example:
        >>> from mirrorwidgets import LossCurves
        >>> view = LossCurves([
        ...     {"replicas": 1, "examples": [64, 128], "losses": [1.2, 0.7]},
        ...     {"replicas": 8, "examples": [64, 128], "losses": [1.3, 1.1]},
        ... ])
        >>> view.labels, view.num_panels
        (('1 replica', '8 replicas'), 1)
        >>> view.snapshot_html().count('<polyline class="mw-curve"')
        2
    """

    title = traitlets.Unicode(
        "Training loss against examples seen", help="Heading above the chart."
    )
    shared_y = traitlets.Bool(
        True, help="Whether every panel uses one loss axis (False: each panel its own)."
    )
    panel_width = traitlets.Int(230, help="Width of one panel in pixels (100 or more).")
    num_panels = traitlets.Int(0, read_only=True, help="How many panels: one per sweep passed.")
    labels = traitlets.Tuple(read_only=True, help="Each line's label, panel by panel.")

    def __init__(self, runs, *, title: str = "Training loss against examples seen", **kwargs):
        super().__init__(**kwargs)
        self.title = title
        self._panels: tuple[Panel, ...] = ()
        self._header = ThemedHTML()
        self._chart = ThemedHTML()
        self._notes = ThemedHTML()
        self.children = [self._header, self._chart, self._notes]
        try:
            self.update(runs)
        except Exception:
            self.close()  # no half-built widget left behind
            raise
        self.observe(self._redraw, names=["title", "shared_y", "panel_width"])

    _wide_enough = at_least("panel_width", minimum=100, unit="pixels", why="room for the lines")

    @property
    def panels(self) -> tuple:
        """The panels drawn, checked: each a ``heading`` and its ``runs`` (label, examples, losses).

        Example:
            >>> from mirrorwidgets import LossCurves
            >>> view = LossCurves([{"label": "a", "examples": [8], "losses": [0.5]}])
            >>> view.panels[0].runs[0]
            Run(label='a', examples=(8,), losses=(0.5,))
        """
        return self._panels

    def update(self, runs) -> None:
        """Replace every run and redraw.

        Args:
            runs: Same kinds as the constructor takes.

        Raises:
            TypeError, ValueError: As the constructor raises them.

        Example:
            >>> from mirrorwidgets import LossCurves
            >>> view = LossCurves([{"label": "a", "examples": [8], "losses": [0.5]}])
            >>> view.update([{"label": "b", "examples": [8, 16], "losses": [0.5, 0.4]}])
            >>> view.labels
            ('b',)
        """
        panels = read_panels(runs)
        self._panels = panels
        self.set_trait("num_panels", len(panels))
        self.set_trait("labels", tuple(run.label for panel in panels for run in panel.runs))
        self._redraw()

    def snapshot_html(self) -> str:
        """The view's current state as self-contained HTML (inline SVG, no script).

        Returns:
            An HTML fragment.

        Example:
            >>> from mirrorwidgets import LossCurves
            >>> view = LossCurves([{"label": "a", "examples": [8, 16], "losses": [1.0, 0.5]}])
            >>> '<svg class="mw-loss-curves"' in view.snapshot_html()
            True
        """
        inner = self._header_html() + self._chart_html() + self._notes_html()
        return container(inner, "mw-loss-curves mw-snapshot")

    # ------------------------------------------------------------------ drawing

    def _redraw(self, change=None) -> None:
        self._header.value = self._header_html()
        self._chart.value = self._chart_html()
        self._notes.value = self._notes_html()
        announce(self, text_of(self._header.value))

    def _header_html(self) -> str:
        runs = len(self.labels)
        bits = [f"<strong>{esc(self.title)}</strong>", f"{runs} run{'' if runs == 1 else 's'}"]
        if self.num_panels > 1:
            axis = "one loss axis" if self.shared_y else "one loss axis each"
            bits.append(f"{self.num_panels} panels, {axis}")
        return f'<div class="mw-title" style="{FONT}">{" &middot; ".join(bits)}</div>'

    def _chart_html(self) -> str:
        svg = curves_svg(
            self._panels,
            shared_y=self.shared_y,
            css_class="mw-loss-curves",
            panel_width=self.panel_width,
        )
        rows = [
            (panel.heading, run.label, n, _plot.number(loss))
            for panel in self._panels
            for run in panel.runs
            for n, loss in zip(run.examples, run.losses, strict=True)
        ]
        header = ["panel", "run", "examples seen", "loss"]
        return f"<div>{svg}</div>{_plot.twin('the chart as a table', header, rows)}"

    def _notes_html(self) -> str:
        broken = [
            run.label + (f" ({panel.heading})" if panel.heading else "")
            for panel in self._panels
            for run in panel.runs
            if not all(math.isfinite(v) for v in run.losses)
        ]
        if not broken:
            return ""
        return (
            f'<div class="mw-notes" style="{FONT};color:{RED};max-width:520px">'
            f"loss not finite (the run diverged; its line stops there): {esc(', '.join(broken))}."
            "</div>"
        )


# ---------------------------------------------------------------------- reading input


def read_panels(runs) -> tuple[Panel, ...]:
    """Check ``runs`` (the constructor's argument) and return its panels."""
    if _is_sweep(runs):
        return (_sweep_panel(runs, "runs", 0),)
    if isinstance(runs, str | bytes | Mapping) or not isinstance(runs, Sequence):
        _refuse_runs(TypeError, f"runs is {type(runs).__name__}, not a sweep or a list. {_HINT}")
    if len(runs) == 0:
        _refuse_runs(ValueError, f"runs is empty: there is nothing to draw. {_HINT}")
    sweeps = [_is_sweep(item) for item in runs]
    if all(sweeps):
        return tuple(_sweep_panel(s, f"runs[{i}]", i) for i, s in enumerate(runs))
    if any(sweeps):
        _refuse_runs(
            TypeError,
            "runs mixes sweeps and single runs: pass a list of sweeps (one panel "
            "each) or a list of runs (one panel), e.g. LossCurves([same_rate, scaled_rate]).",
        )
    return (Panel("", _read_runs(runs, "runs")),)


_EXAMPLES = "examples=[64, 128, 256]"
_LOSSES = "losses=[0.9, 0.7, 0.6]"


def _refuse_runs(error: type[Exception], text: str) -> NoReturn:
    """Refuse what LossCurves was given: every message starts by naming the widget."""
    raise error(f"LossCurves: {text}")


def _is_sweep(item) -> bool:
    return not isinstance(item, Mapping) and hasattr(item, "curves")


def _sweep_panel(sweep, where: str, index: int) -> Panel:
    curves = sweep.curves
    if isinstance(curves, str | bytes) or not isinstance(curves, Sequence) or not curves:
        _refuse_runs(ValueError, f"{where}.curves holds no runs. {_HINT}")
    rate = getattr(sweep, "base_learning_rate", None)
    scaled = getattr(sweep, "scale_learning_rate", None)
    if isinstance(rate, int | float) and isinstance(scaled, bool):
        heading = f"learning rate {rate:g} x replicas" if scaled else f"same learning rate {rate:g}"
    else:
        heading = f"sweep {index + 1}"
    return Panel(heading, _read_runs(curves, f"{where}.curves"))


def _read_runs(items, where: str) -> tuple[Run, ...]:
    runs = tuple(_read_run(item, f"{where}[{i}]") for i, item in enumerate(items))
    labels = [run.label for run in runs]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        _refuse_runs(
            ValueError,
            f"{where} has two runs labelled {twice[0]!r}: give each run of a panel "
            "its own label (or replica count).",
        )
    if not any(math.isfinite(v) for run in runs for v in run.losses):
        _refuse_runs(
            ValueError,
            f"no loss in {where} is finite (every run diverged): there is no line to draw.",
        )
    return runs


def _read_run(item, where: str) -> Run:
    if not is_record(item, ("examples", "losses")):
        _refuse_runs(TypeError, f"{where} is {type(item).__name__} {item!r}, not a run. {_HINT}")
    examples = _numbers(field(item, "examples", where, _HINT), "examples", where)
    losses = _numbers(field(item, "losses", where, _HINT), "losses", where)
    if examples.dtype.kind not in "iu":
        must = "whole numbers (the examples seen at each point)"
        got = f"{examples.dtype} values such as {examples.flat[0].item()!r}"
        refuse_field(
            f"LossCurves: {where}", "examples", examples, must=must, write=_EXAMPLES, got=got
        )
    if np.any(examples < 0) or np.any(np.diff(examples) <= 0):
        must = "0 or more and increase from point to point"
        shown = examples.tolist()
        refuse_field(
            f"LossCurves: {where}", "examples", shown, must=must, write=_EXAMPLES, error=ValueError
        )
    if len(losses) != len(examples):
        _refuse_runs(
            ValueError,
            f"{where} has {len(examples)} examples but {len(losses)} losses: give "
            "one loss per point.",
        )
    label = field(item, "label", where, _HINT, required=False)
    if label is None:
        replicas = field(item, "replicas", where, _HINT, required=False)
        if replicas is None:
            _refuse_runs(ValueError, f"{where} has no 'label' and no 'replicas'. {_HINT}")
        label = f"{replicas} replica{'' if replicas == 1 else 's'}"
    if not isinstance(label, str) or not label:
        write = "label='4 replicas'"
        refuse_field(f"LossCurves: {where}", "label", label, must="a non-empty str", write=write)
    return Run(label, tuple(int(n) for n in examples), tuple(float(v) for v in losses))


def _numbers(values, name: str, where: str) -> np.ndarray:
    record, write = f"LossCurves: {where}", _EXAMPLES if name == "examples" else _LOSSES
    if isinstance(values, str | bytes | Mapping):
        got = type(values).__name__
        refuse_field(record, name, values, must="a list of numbers", write=write, got=got)
    array = np.asarray(values)
    if array.ndim != 1 or array.dtype.kind not in "iuf" or array.dtype.kind == "b":
        got = f"{type(values).__name__} of shape {array.shape} and dtype {array.dtype}"
        refuse_field(record, name, values, must="a flat list of numbers", write=write, got=got)
    if len(array) == 0:
        _refuse_runs(ValueError, f"{where}: {name} is empty: a run needs at least one point.")
    return array
