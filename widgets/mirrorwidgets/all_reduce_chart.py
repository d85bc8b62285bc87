"""AllReduceChart: what mirrorkit.benchmark_all_reduce measured, against message size.

Example:
    >>> from mirrorkit.measure.benchmark import AllReduceBenchmark, record_from_times
    >>> from mirrorwidgets import AllReduceChart
    >>> one = record_from_times("collective", 2, 4096, [1e-4], 1e10)
    >>> AllReduceChart(AllReduceBenchmark((one,), copy_bandwidth=1e10)).sizes
    (4096,)
"""

from __future__ import annotations

import os

import ipywidgets
import traitlets

from mirrorkit._validate import refuse
from mirrorkit.report.units import format_rate, format_size
from mirrorwidgets._a11y import ThemedHTML, announce, text_of
from mirrorwidgets._all_reduce_chart_render import (
    chart_svg,
    check_records,
    skipped_html,
    table_html,
)
from mirrorwidgets._render import FONT, GREY, container, esc
from mirrorwidgets._snapshot import SnapshotMixin

_ALL = 0  # the replica menu's value for "every replica count"


class AllReduceChart(SnapshotMixin, ipywidgets.VBox):
    """Draw an all-reduce benchmark: time and busbw against message size, log-log.

    One line per algorithm and replica count (color: algorithm; dash: replica count), the
    time per all-reduce (median, with a min-max bar) above and the bus bandwidth below,
    where this machine's memory-copy bandwidth is drawn as a red dashed reference line.
    A table of the exact numbers and the algorithms that could not run (with the
    reasons) follow. A menu picks one replica count, a toggle hides the table. The
    drawing is inline SVG made on the Python side: the same benchmark always gives
    the same text.

    Args:
        benchmark: What ``mirrorkit.benchmark_all_reduce`` returns (an
            ``AllReduceBenchmark``), or its JSON (text, or the path of a file written by
            ``AllReduceBenchmark.to_json``).
        replicas: Draw only this replica count; ``None`` draws every count.
        title: Heading above the chart.
        show_table: Whether the table of exact numbers is shown below the chart.
        **kwargs: Any other trait below, or layout options of ``ipywidgets.VBox``.

    Raises:
        TypeError: If ``benchmark`` is neither an ``AllReduceBenchmark`` nor its JSON.
        ValueError: If ``benchmark`` is text that is neither benchmark JSON nor the path
            of a file, the benchmark holds no records (e.g. every algorithm was skipped),
            or a record cannot be drawn on a log axis (a time or busbw that is not positive).
        traitlets.TraitError: If ``replicas`` is not one of the measured counts.

    Example:
        >>> from mirrorkit.measure.benchmark import AllReduceBenchmark, record_from_times
        >>> from mirrorwidgets import AllReduceChart
        >>> records = tuple(
        ...     record_from_times(name, 2, size, [t * size / 4096], 1e10)
        ...     for name, t in (("collective", 1e-4), ("one_device", 2e-4))
        ...     for size in (4096, 65536)
        ... )
        >>> chart = AllReduceChart(AllReduceBenchmark(records, {"nccl": "no GPU"}, 1e10))
        >>> chart.algorithms, chart.replica_counts, chart.sizes
        (('collective', 'one_device'), (2,), (4096, 65536))
        >>> html = chart.snapshot_html()
        >>> html.count('<polyline class="mw-busbw"'), 'class="mw-copy-bw"' in html
        (2, True)
        >>> 'data-skipped="nccl"' in html
        True
    """

    title = traitlets.Unicode("All-reduce benchmark", help="Heading above the chart.")
    replicas = traitlets.Int(
        None, allow_none=True, help="The replica count drawn; None draws every measured count."
    )
    show_table = traitlets.Bool(True, help="Whether the table of exact numbers is shown.")
    algorithms = traitlets.Tuple(
        read_only=True, help="The measured algorithms, in the benchmark's order."
    )
    replica_counts = traitlets.Tuple(read_only=True, help="The measured replica counts, ascending.")
    sizes = traitlets.Tuple(read_only=True, help="The measured message sizes in bytes, ascending.")
    num_records = traitlets.Int(
        0, read_only=True, help="How many measurements the benchmark holds."
    )
    copy_bandwidth = traitlets.Float(
        0.0, read_only=True, help="The machine's memory-copy bandwidth, bytes/s (0: unknown)."
    )
    skipped = traitlets.Dict(
        read_only=True, help="{what: why} for each algorithm that could not run."
    )

    def __init__(
        self,
        benchmark,
        *,
        replicas: int | None = None,
        title: str = "All-reduce benchmark",
        show_table: bool = True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.title = title
        self.show_table = show_table
        self.benchmark = None
        self._quiet = False
        self._header = ThemedHTML()
        # Buttons, not a menu: each is named by its text in ipywidgets 7 and 8 alike (7 ties
        # no label to a <select>), and Tab and Space reach and press each.
        self._menu = ipywidgets.ToggleButtons(description="replicas")
        self._table_toggle = ipywidgets.ToggleButton(
            value=show_table, description="table", tooltip="show the measurements as a table"
        )
        self._chart = ThemedHTML()
        self._table = ThemedHTML()
        self._skipped = ThemedHTML()
        controls = ipywidgets.HBox([self._menu, self._table_toggle])
        self.children = [self._header, controls, self._chart, self._table, self._skipped]
        try:
            self.update(benchmark)
            ipywidgets.link((self, "show_table"), (self._table_toggle, "value"))
            self._menu.observe(self._menu_changed, names="value")
            self.observe(self._redraw, names=["title", "replicas", "show_table"])
            self.replicas = replicas  # checked against the measured counts, then drawn
        except Exception:
            self.close()  # no half-built widget left behind
            raise

    @classmethod
    def from_json(cls, source, **kwargs) -> AllReduceChart:
        """Chart a benchmark saved with ``AllReduceBenchmark.to_json``: JSON text or a path.

        Args:
            source: JSON text, or the path of a JSON file.
            **kwargs: Passed on to the constructor.

        Returns:
            A new :class:`AllReduceChart`.

        Raises:
            ValueError: If the JSON is not a mirrorkit all-reduce benchmark, or holds no
                records.

        Example:
            >>> from mirrorkit.measure.benchmark import AllReduceBenchmark, record_from_times
            >>> from mirrorwidgets import AllReduceChart
            >>> record = record_from_times("collective", 4, 1 << 20, [1e-3], 5e9)
            >>> text = AllReduceBenchmark((record,), copy_bandwidth=5e9).to_json()
            >>> AllReduceChart.from_json(text).num_records
            1
        """
        from mirrorkit.measure.benchmark import AllReduceBenchmark

        return cls(AllReduceBenchmark.from_json(source), **kwargs)

    @traitlets.validate("replicas")
    def _measured_count(self, proposal):
        value = proposal["value"]
        if value is not None and value not in self.replica_counts:
            counts = ", ".join(map(str, self.replica_counts))
            must = f"None (every count) or a measured replica count ({counts})"
            write = f"e.g. replicas={self.replica_counts[-1]}, or replicas=None"
            refuse("replicas", value, must=must, write=write, error=traitlets.TraitError)
        return value

    def update(self, benchmark) -> None:
        """Show another benchmark in place (the replica count resets if it was not measured).

        Args:
            benchmark: Same kinds as the constructor takes.

        Raises:
            TypeError, ValueError: As the constructor raises them.

        Example:
            >>> from mirrorkit.measure.benchmark import AllReduceBenchmark, record_from_times
            >>> from mirrorwidgets import AllReduceChart
            >>> one = record_from_times("collective", 2, 4096, [1e-4], 1e10)
            >>> chart = AllReduceChart(AllReduceBenchmark((one,), copy_bandwidth=1e10))
            >>> two = record_from_times("collective", 4, 4096, [2e-4], 1e10)
            >>> chart.update(AllReduceBenchmark((one, two), copy_bandwidth=1e10))
            >>> chart.replica_counts
            (2, 4)
        """
        benchmark = _read_benchmark(benchmark)
        records = benchmark.records
        self.benchmark = benchmark
        counts = tuple(sorted({rec.replicas for rec in records}))
        self.set_trait("algorithms", tuple(dict.fromkeys(rec.algorithm for rec in records)))
        self.set_trait("replica_counts", counts)
        self.set_trait("sizes", tuple(sorted({rec.bytes for rec in records})))
        self.set_trait("num_records", len(records))
        self.set_trait("copy_bandwidth", float(benchmark.copy_bandwidth or 0.0))
        self.set_trait("skipped", dict(benchmark.skipped))
        options = [("every replica count", _ALL)] + [(f"{n} replicas", n) for n in counts]
        if self.replicas is not None and self.replicas not in counts:
            self.replicas = None
        self._quiet = True  # the menu follows the data here; it must not set replicas
        try:
            self._menu.options = options
            self._menu.value = _ALL if self.replicas is None else self.replicas
        finally:
            self._quiet = False
        self._menu.disabled = len(counts) < 2
        self._redraw()

    def snapshot_html(self) -> str:
        """The chart's current state as self-contained HTML (inline SVG, no script).

        Returns:
            An HTML fragment: header, chart, table (if shown) and the skipped algorithms.

        Example:
            >>> from mirrorkit.measure.benchmark import AllReduceBenchmark, record_from_times
            >>> from mirrorwidgets import AllReduceChart
            >>> one = record_from_times("collective", 2, 4096, [1e-4], 1e10)
            >>> chart = AllReduceChart(AllReduceBenchmark((one,), copy_bandwidth=1e10))
            >>> "<script" in chart.snapshot_html(), 'class="mw-table"' in chart.snapshot_html()
            (False, True)
        """
        inner = self._header_html() + self._chart_html() + self._table_html()
        return container(inner + self._skipped_html(), "mw-all-reduce mw-snapshot")

    # ------------------------------------------------------------------ drawing

    def _menu_changed(self, change) -> None:
        if self._quiet:
            return
        self.replicas = None if change["new"] == _ALL else change["new"]

    def _redraw(self, change=None) -> None:
        if change is not None and change["name"] == "replicas":
            self._menu.value = _ALL if self.replicas is None else self.replicas
        self._header.value = self._header_html()
        self._chart.value = self._chart_html()
        self._table.value = self._table_html()
        self._skipped.value = self._skipped_html()
        shown = "table shown" if self.show_table else "table hidden"
        announce(self, f"{text_of(self._header.value)}; {shown}")

    def _counts(self) -> tuple[int, ...]:
        return self.replica_counts if self.replicas is None else (self.replicas,)

    def _shown(self) -> tuple:
        counts = self._counts()
        return tuple(rec for rec in self.benchmark.records if rec.replicas in counts)

    def _header_html(self) -> str:
        sizes = self.sizes
        span = format_size(sizes[0]) + (f" to {format_size(sizes[-1])}" if len(sizes) > 1 else "")
        n = len(self.algorithms)
        bits = [
            f"<strong>{esc(self.title)}</strong>",
            f"{n} algorithm{'' if n == 1 else 's'}",
            f"{'/'.join(map(str, self._counts()))} replicas",
            span,
        ]
        if self.copy_bandwidth > 0:
            bits.append(f"memory copy {format_rate(self.copy_bandwidth)}")
        else:
            bits.append("memory copy not measured")
        lines = [" &middot; ".join(bits)]
        machine = self.benchmark.machine or {}
        if machine.get("summary"):
            lines.append(f'<span style="color:{GREY}">on {esc(machine["summary"])}</span>')
        if machine.get("simulated_replicas"):
            lines.append(
                f'<span class="mw-simulated" style="color:{GREY}">The replicas are simulated '
                "on one CPU and share its memory: busbw here measures TensorFlow's overheads "
                "and the summing, not links between devices.</span>"
            )
        return f'<div class="mw-title" style="{FONT}">{"<br>".join(lines)}</div>'

    def _chart_html(self) -> str:
        svg = chart_svg(self._shown(), self._counts(), self.replica_counts, self.copy_bandwidth)
        return f"<div>{svg}</div>"

    def _table_html(self) -> str:
        if not self.show_table:
            return ""
        return f"<div>{table_html(self._shown(), self.copy_bandwidth)}</div>"

    def _skipped_html(self) -> str:
        return skipped_html(self.skipped)


_NO_FILE = "must be JSON text or the path of a JSON file, got no file: "


def _read_benchmark(benchmark):
    from mirrorkit.measure.benchmark import AllReduceBenchmark

    if isinstance(benchmark, str | os.PathLike):
        try:
            benchmark = AllReduceBenchmark.from_json(benchmark)
        except ValueError as error:  # from_json names its argument `source`; here it is this
            text = str(error)
            if not text.startswith("source "):
                raise
            # "source must be ..., got no file: 'x' is neither ...": name the text given
            text = text.removeprefix("source ").replace(_NO_FILE, "", 1)
            raise ValueError("benchmark " + text) from None
    if not isinstance(benchmark, AllReduceBenchmark):
        must = (
            "what mirrorkit.benchmark_all_reduce returns (an AllReduceBenchmark), or its JSON "
            "text or file (AllReduceBenchmark.to_json)"
        )
        write = (
            "AllReduceChart(mk.benchmark_all_reduce(['collective'])) "
            "or AllReduceChart('benchmark.json')"
        )
        refuse("benchmark", benchmark, must=must, got=_kind(benchmark), write=write)
    if not benchmark.records:
        why = "; ".join(f"{name}: {reason}" for name, reason in benchmark.skipped.items())
        raise ValueError(
            "the benchmark holds no records, so there is nothing to draw"
            + (f" (every algorithm was skipped: {why})" if why else "")
            + "; run benchmark_all_reduce with an algorithm that runs here, e.g. 'collective'."
        )
    check_records(benchmark.records)
    return benchmark


def _kind(value) -> str:
    """What a learner passed instead of a benchmark, in words."""
    if isinstance(value, dict):
        return "dict (JSON already parsed: pass the text or the file's path instead)"
    if callable(value) and getattr(value, "__name__", "") == "benchmark_all_reduce":
        return "the function benchmark_all_reduce itself (call it and pass its result)"
    return type(value).__name__
