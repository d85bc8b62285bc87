"""LossCurves: the loss of several training runs against the examples seen, side by side."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import ipywidgets as w
import numpy as np
import traitlets as t

from mirrorwidgets import _curves_chart as cc, _records as rec, _render as r
from mirrorwidgets._snapshot import SnapshotMixin

_HINT = (
    "Pass a ScalingSweep from mirrorkit (mk.run_scaling_sweep), a list of them (one panel "
    "each), or a list of runs, each with 'examples', 'losses' and a 'label' (or 'replicas'), "
    "as attributes or dict keys."
)


class LossCurves(SnapshotMixin, w.VBox):
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

    title = t.Unicode("Training loss against examples seen", help="Heading above the chart.")
    shared_y = t.Bool(
        True, help="Whether every panel uses one loss axis (False: each panel its own)."
    )
    panel_width = t.Int(230, help="Width of one panel in pixels (100 or more).")
    num_panels = t.Int(0, read_only=True, help="How many panels: one per sweep passed.")
    labels = t.Tuple(read_only=True, help="Each line's label, panel by panel.")

    def __init__(self, runs, *, title: str = "Training loss against examples seen", **kwargs):
        super().__init__(**kwargs)
        self.title = title
        self._panels: tuple[cc.Panel, ...] = ()
        self._header = w.HTML()
        self._chart = w.HTML()
        self._notes = w.HTML()
        self.children = [self._header, self._chart, self._notes]
        try:
            self.update(runs)
        except Exception:
            self.close()  # no half-built widget left behind
            raise
        self.observe(self._redraw, names=["title", "shared_y", "panel_width"])

    @t.validate("panel_width")
    def _wide_enough(self, proposal):
        if proposal["value"] < 100:
            raise t.TraitError(
                f"panel_width must be >= 100 pixels (room for the lines), got {proposal['value']}."
            )
        return proposal["value"]

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
        return r.container(inner, "mw-loss-curves mw-snapshot")

    # ------------------------------------------------------------------ drawing

    def _redraw(self, change=None) -> None:
        self._header.value = self._header_html()
        self._chart.value = self._chart_html()
        self._notes.value = self._notes_html()

    def _header_html(self) -> str:
        runs = len(self.labels)
        bits = [f"<strong>{r.esc(self.title)}</strong>", f"{runs} run{'' if runs == 1 else 's'}"]
        if self.num_panels > 1:
            axis = "one loss axis" if self.shared_y else "one loss axis each"
            bits.append(f"{self.num_panels} panels, {axis}")
        return f'<div class="mw-title" style="{r.FONT}">{" &middot; ".join(bits)}</div>'

    def _chart_html(self) -> str:
        svg = cc.curves_svg(
            self._panels,
            shared_y=self.shared_y,
            css_class="mw-loss-curves",
            panel_width=self.panel_width,
        )
        return f"<div>{svg}</div>"

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
            f'<div class="mw-notes" style="{r.FONT};color:{r.RED};max-width:520px">'
            f"loss not finite (the run diverged; its line stops there): {r.esc(', '.join(broken))}."
            "</div>"
        )


# ---------------------------------------------------------------------- reading input


def read_panels(runs) -> tuple[cc.Panel, ...]:
    """Check ``runs`` (the constructor's argument) and return its panels."""
    if _is_sweep(runs):
        return (_sweep_panel(runs, "runs", 0),)
    if isinstance(runs, str | bytes | Mapping) or not isinstance(runs, Sequence):
        raise TypeError(
            f"LossCurves: runs is {type(runs).__name__}, not a sweep or a list. {_HINT}"
        )
    if len(runs) == 0:
        raise ValueError(f"LossCurves: runs is empty: there is nothing to draw. {_HINT}")
    sweeps = [_is_sweep(item) for item in runs]
    if all(sweeps):
        return tuple(_sweep_panel(s, f"runs[{i}]", i) for i, s in enumerate(runs))
    if any(sweeps):
        raise TypeError(
            "LossCurves: runs mixes sweeps and single runs: pass a list of sweeps (one panel "
            "each) or a list of runs (one panel), e.g. LossCurves([same_rate, scaled_rate])."
        )
    return (cc.Panel("", _read_runs(runs, "runs")),)


def _is_sweep(item) -> bool:
    return not isinstance(item, Mapping) and hasattr(item, "curves")


def _sweep_panel(sweep, where: str, index: int) -> cc.Panel:
    curves = sweep.curves
    if isinstance(curves, str | bytes) or not isinstance(curves, Sequence) or not curves:
        raise ValueError(f"LossCurves: {where}.curves holds no runs. {_HINT}")
    rate = getattr(sweep, "base_learning_rate", None)
    scaled = getattr(sweep, "scale_learning_rate", None)
    if isinstance(rate, int | float) and isinstance(scaled, bool):
        heading = f"learning rate {rate:g} x replicas" if scaled else f"same learning rate {rate:g}"
    else:
        heading = f"sweep {index + 1}"
    return cc.Panel(heading, _read_runs(curves, f"{where}.curves"))


def _read_runs(items, where: str) -> tuple[cc.Run, ...]:
    runs = tuple(_read_run(item, f"{where}[{i}]") for i, item in enumerate(items))
    labels = [run.label for run in runs]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise ValueError(
            f"LossCurves: {where} has two runs labelled {twice[0]!r}: give each run of a panel "
            "its own label (or replica count)."
        )
    if not any(math.isfinite(v) for run in runs for v in run.losses):
        raise ValueError(
            f"LossCurves: no loss in {where} is finite (every run diverged): there is no line "
            "to draw."
        )
    return runs


def _read_run(item, where: str) -> cc.Run:
    if not rec.is_record(item, ("examples", "losses")):
        raise TypeError(
            f"LossCurves: {where} is {type(item).__name__} {item!r}, not a run. {_HINT}"
        )
    examples = _numbers(rec.field(item, "examples", where, _HINT), "examples", where)
    losses = _numbers(rec.field(item, "losses", where, _HINT), "losses", where)
    if examples.dtype.kind not in "iu":
        raise TypeError(
            f"LossCurves: {where}: examples must be whole numbers (the examples seen at each "
            f"point), got {examples.dtype} values such as {examples.flat[0]!r}."
        )
    if np.any(examples < 0) or np.any(np.diff(examples) <= 0):
        raise ValueError(
            f"LossCurves: {where}: examples must be 0 or more and increase from point to "
            f"point, got {examples.tolist()}."
        )
    if len(losses) != len(examples):
        raise ValueError(
            f"LossCurves: {where} has {len(examples)} examples but {len(losses)} losses: give "
            "one loss per point."
        )
    label = rec.field(item, "label", where, _HINT, required=False)
    if label is None:
        replicas = rec.field(item, "replicas", where, _HINT, required=False)
        if replicas is None:
            raise ValueError(f"LossCurves: {where} has no 'label' and no 'replicas'. {_HINT}")
        label = f"{replicas} replica{'' if replicas == 1 else 's'}"
    if not isinstance(label, str) or not label:
        raise TypeError(
            f"LossCurves: {where}: label must be a non-empty str, got {type(label).__name__} "
            f"{label!r}."
        )
    return cc.Run(label, tuple(int(n) for n in examples), tuple(float(v) for v in losses))


def _numbers(values, name: str, where: str) -> np.ndarray:
    if isinstance(values, str | bytes | Mapping):
        raise TypeError(
            f"LossCurves: {where}: {name} must be a list of numbers, got {type(values).__name__}."
        )
    array = np.asarray(values)
    if array.ndim != 1 or array.dtype.kind not in "iuf" or array.dtype.kind == "b":
        raise TypeError(
            f"LossCurves: {where}: {name} must be a flat list of numbers, got "
            f"{type(values).__name__} of shape {array.shape} and dtype {array.dtype}."
        )
    if len(array) == 0:
        raise ValueError(f"LossCurves: {where}: {name} is empty: a run needs at least one point.")
    return array
