"""ClusterView: a multi-worker cluster while it runs: who is up, who trains, who failed.

Example:
    >>> import mirrorkit as mk
    >>> from mirrorwidgets import ClusterView
    >>> view = ClusterView(2)
    >>> view.update(mk.WorkerEvent(1, "failed", text="exit status -9"))
    True
    >>> view.states
    ('starting', 'failed')
"""

from __future__ import annotations

import threading
import time

import ipywidgets
import traitlets

import mirrorkit as mk
from mirrorkit._validate import refuse
from mirrorwidgets import _cluster_view_render
from mirrorwidgets._a11y import ThemedHTML, announce, text_of
from mirrorwidgets._chart_twin import ChartTwin
from mirrorwidgets._cluster_view_render import STATE_COLORS
from mirrorwidgets._render import container
from mirrorwidgets._snapshot import SnapshotMixin
from mirrorwidgets._throttle import Throttle
from mirrorwidgets._traits import at_least, budget_fraction

__all__ = ["STATE_COLORS", "ClusterView"]

_FINAL_KINDS = ("finished", "failed", "stopped")


class ClusterView(SnapshotMixin, ipywidgets.VBox):
    """Draw a multi-worker cluster live: its topology, each worker's state, and the losses.

    The view holds a ``mirrorkit.ClusterStatus`` and folds each ``mirrorkit.WorkerEvent``
    into it with :meth:`update`, so it can be the launcher's callback:
    ``cluster.run(fn, on_event=view.update)``. It draws (a) a graphviz diagram with one box
    per worker (task 0 is the chief), its address and devices, coloured by state
    (``STATE_COLORS``: starting grey, ready blue, training green, finished dark green,
    failed red, stopped orange) and the ring all-reduce between workers; (b) a table of
    each worker's state, last step, last loss, why it failed or stopped, and the last line
    it printed; (c) once a worker reports a loss, one loss line per worker (inline SVG),
    and the same points as tables (each line in brief, and step by step) below it.

    Redraws are throttled: at most every ``min_interval`` seconds and within ``budget`` of
    the wall time (the loss plot at most every ``plot_interval`` seconds); an event that
    ends a worker (``finished``, ``failed``, ``stopped``) always redraws everything, and
    :meth:`flush` does so on demand. The static snapshot (``text/html``) is always drawn
    from every event applied, and the same events give the same HTML.

    Args:
        num_workers: How many workers the cluster has (an int >= 1).
        addresses: Optional ``host:port`` of each worker, known before they start (a
            ``"starting"`` event with an address replaces it).
        title: Heading above the view.
        **kwargs: Any trait below, or layout options of ``ipywidgets.VBox``.

    Raises:
        ValueError: If ``num_workers`` is not an int >= 1, or ``addresses`` does not hold
            one address per worker.
        TypeError: If ``addresses`` is not a sequence of strings.

    Example:
        >>> import mirrorkit as mk
        >>> from mirrorwidgets.cluster_view import ClusterView
        >>> view = ClusterView(2, addresses=["localhost:2222", "localhost:2223"])
        >>> view.update(mk.WorkerEvent(0, "step", step=1, metrics={"loss": 0.5}))
        True
        >>> view.update(mk.WorkerEvent(1, "failed", text="exit status -9"))
        True
        >>> view.states, view.edges
        (('training', 'failed'), ((0, 1), (1, 0)))
        >>> "exit status -9" in view.snapshot_html()
        True
    """

    title = traitlets.Unicode("Multi-worker cluster", help="Heading above the view.")
    min_interval = traitlets.Float(0.08, help="Fewest seconds between redraws while events arrive.")
    budget = traitlets.Float(0.05, help="Largest fraction of wall time that redraws may take.")
    plot_interval = traitlets.Float(
        2.0, help="Fewest seconds between redraws of the loss plot while workers run."
    )
    max_points = traitlets.Int(
        500, help="Most points in each worker's loss line (beyond: every k-th, and the last)."
    )
    num_workers = traitlets.Int(0, read_only=True, help="How many workers the cluster has.")
    states = traitlets.Tuple(
        read_only=True, help="Each worker's state, one of mirrorkit.WORKER_STATES."
    )
    steps = traitlets.Tuple(
        read_only=True, help="Each worker's last finished step (None before its first)."
    )
    num_events = traitlets.Int(0, read_only=True, help="How many events the view has applied.")

    def __init__(
        self,
        num_workers: int,
        *,
        addresses=None,
        title: str = "Multi-worker cluster",
        **kwargs,
    ):
        num_workers = _worker_count(num_workers)
        status = mk.ClusterStatus(num_workers)
        for worker, address in zip(status.workers, _addresses(addresses, num_workers), strict=True):
            worker.address = address
        super().__init__(**kwargs)
        self.title = title
        self._status = status
        self._lock = threading.RLock()  # a launcher may call update() from its own thread
        self._throttle = Throttle(self.min_interval, self.budget)
        self._plotted_at = -float("inf")
        self._svg_cache: tuple[str, str] = ("", "")
        self._plot_cache: tuple[tuple | None, tuple[str, str]] = (None, ("", ""))
        self._header = ThemedHTML()
        self._topology = ThemedHTML()
        self._plot = ThemedHTML(layout=ipywidgets.Layout(display="none"))
        self._twin = ChartTwin()  # the loss chart's tables, shown or not across redraws
        self._table = ThemedHTML()
        charts = ipywidgets.VBox([self._plot, self._twin])
        self.children = [self._header, ipywidgets.HBox([self._topology, charts]), self._table]
        try:
            self._set_traits()
            self._draw(plot=True)
        except Exception:
            self.close()  # no half-built widget left behind
            raise
        self.observe(self._redraw, names=["title", "max_points"])
        self.observe(self._retime, names=["min_interval", "budget"])

    _budget = budget_fraction()
    _intervals = at_least("min_interval", "plot_interval", minimum=0, unit="seconds")
    _points = at_least("max_points", minimum=2, why="a line needs two points")

    @property
    def status(self) -> mk.ClusterStatus:
        """The ``mirrorkit.ClusterStatus`` the view draws (every event applied so far).

        Example:
            >>> import mirrorkit as mk
            >>> from mirrorwidgets.cluster_view import ClusterView
            >>> view = ClusterView(1)
            >>> _ = view.update(mk.WorkerEvent(0, "output", text="epoch 1"))
            >>> view.status.workers[0].last_output
            ['epoch 1']
        """
        return self._status

    @property
    def edges(self) -> tuple[tuple[int, int], ...]:
        """The ring all-reduce drawn between workers: ``(i, i + 1 mod n)``; none for one worker.

        Example:
            >>> from mirrorwidgets.cluster_view import ClusterView
            >>> ClusterView(3).edges, ClusterView(1).edges
            (((0, 1), (1, 2), (2, 0)), ())
        """
        return _cluster_view_render.ring_edges(self._status.num_workers)

    def update(self, event: mk.WorkerEvent) -> bool:
        """Apply one event from the cluster; redraw if a redraw is due.

        Args:
            event: A ``mirrorkit.WorkerEvent`` for one of this cluster's workers.

        Returns:
            Whether the view was redrawn (else it is at most ``min_interval`` seconds
            behind; an event that ends a worker, or :meth:`flush`, redraws it).

        Raises:
            TypeError: If ``event`` is not a ``mirrorkit.WorkerEvent``.
            ValueError: If the event names a worker this cluster does not have.

        Example:
            >>> import mirrorkit as mk
            >>> from mirrorwidgets.cluster_view import ClusterView
            >>> view = ClusterView(2, min_interval=3600)
            >>> cpu = "/job:worker/replica:0/task:0/device:CPU:0"
            >>> view.update(mk.WorkerEvent(0, "ready", devices=(cpu,)))
            True
            >>> view.update(mk.WorkerEvent(0, "step", step=1))  # throttled
            False
            >>> view.update(mk.WorkerEvent(0, "finished"))  # ends a worker: always drawn
            True
            >>> view.update(mk.WorkerEvent(5, "step", step=1))  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            ValueError: event is for worker 5, but this view has 2 workers (0..1): make the ...
        """
        if not isinstance(event, mk.WorkerEvent):
            raise TypeError(
                f"event must be a mirrorkit.WorkerEvent, got {type(event).__name__}: rebuild a "
                "JSON dict with view.update(mirrorkit.WorkerEvent.from_json(data)), or pass "
                "on_event=view.update to LocalCluster.run."
            )
        n = self._status.num_workers
        if not 0 <= event.worker < n:
            raise ValueError(
                f"event is for worker {event.worker}, but this view has {n} workers "
                f"(0..{n - 1}): make the view for every worker of the cluster, "
                "ClusterView(cluster.num_workers)."
            )
        with self._lock:
            self._status.apply(event)
            self._set_traits()
            final = event.kind in _FINAL_KINDS

            def draw() -> None:
                plot_due = time.perf_counter() - self._plotted_at >= self.plot_interval
                self._draw(plot=final or plot_due)

            return self._throttle.update_if_due(draw, force=final)

    def flush(self) -> None:
        """Redraw everything now, the loss plot included (e.g. after the cluster ran).

        Example:
            >>> import mirrorkit as mk
            >>> from mirrorwidgets.cluster_view import ClusterView
            >>> view = ClusterView(1, min_interval=3600)
            >>> _ = view.update(mk.WorkerEvent(0, "ready"))
            >>> view.update(mk.WorkerEvent(0, "step", step=7, metrics={"loss": 0.25}))
            False
            >>> view.flush()
            >>> 'class="mw-step">7<' in view._table.value
            True
        """
        with self._lock:
            self._draw(plot=True)

    def loss_figure(self):
        """The loss chart's lines as a matplotlib Figure, to save or restyle.

        The view itself draws them as inline SVG; this gives the same points (thinned to
        ``max_points``) and colours as a ``matplotlib.figure.Figure``.

        Returns:
            A new ``matplotlib.figure.Figure``, or ``None`` while no worker reported a loss.

        Example:
            >>> import mirrorkit as mk
            >>> from mirrorwidgets.cluster_view import ClusterView
            >>> view = ClusterView(3)
            >>> view.loss_figure() is None
            True
            >>> for worker in (0, 2):
            ...     _ = view.update(mk.WorkerEvent(worker, "step", step=1, metrics={"loss": 1.0}))
            >>> [line.get_label() for line in view.loss_figure().axes[0].lines]
            ['worker 0 (chief)', 'worker 2']
        """
        with self._lock:
            return _cluster_view_render.loss_figure(self._status, self.max_points)

    def snapshot_html(self) -> str:
        """Every event applied so far, drawn as HTML: topology, table, loss chart and its twins.

        Returns:
            An HTML fragment, no script; the same events always give the same HTML.

        Example:
            >>> from mirrorwidgets.cluster_view import ClusterView
            >>> html = ClusterView(2).snapshot_html()
            >>> "<svg" in html, html.count('class="mw-worker"'), "mw-cluster-loss" in html
            (True, 2, False)
        """
        with self._lock:
            header, topology, table, chart = self._render(plot=True)
        picture = (
            '<div style="display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start">'
            f"<div>{topology}</div>{chart}</div>"
        )
        return container(header + picture + table, "mw-cluster mw-snapshot")

    # ------------------------------------------------------------------ drawing

    def _retime(self, change) -> None:
        setattr(self._throttle, change["name"], change["new"])

    def _redraw(self, change=None) -> None:
        self.flush()

    def _set_traits(self) -> None:
        workers = self._status.workers
        self.set_trait("num_workers", len(workers))
        self.set_trait("states", tuple(worker.state for worker in workers))
        self.set_trait("steps", tuple(worker.step for worker in workers))
        self.set_trait("num_events", self._status.events)

    def _render(self, *, plot: bool) -> tuple[str, str, str, str]:
        """Header, topology SVG, table and (if ``plot``) the loss chart, as HTML."""
        status = self._status
        dot = _cluster_view_render.graph(status)
        if self._svg_cache[0] != dot.source:  # dot runs only when the drawing changes
            self._svg_cache = (dot.source, _cluster_view_render.svg(dot))
        svg, twin = self._loss_chart() if plot else ("", "")
        chart = f"<div>{svg}{twin}</div>" if svg else ""
        return (
            _cluster_view_render.header_html(status, self.title),
            self._svg_cache[1],
            _cluster_view_render.table_html(status),
            chart,
        )

    def _loss_chart(self) -> tuple[str, str]:
        key = _cluster_view_render.loss_key(self._status, self.max_points)
        if self._plot_cache[0] != key:
            self._plot_cache = (key, _cluster_view_render.loss_chart(self._status, self.max_points))
        return self._plot_cache[1]

    def _draw(self, *, plot: bool) -> None:
        header, topology, table, _ = self._render(plot=False)
        self._header.value = header
        self._topology.value = topology
        self._table.value = table
        announce(self, text_of(header))
        if plot:
            self._plotted_at = time.perf_counter()
            chart, twin = self._loss_chart()
            if chart and self._plot.value != chart:
                self._plot.value = chart
            self._plot.layout.display = None if chart else "none"
            self._twin.update(twin)


def _worker_count(num_workers) -> int:
    """``num_workers`` if it is a whole number >= 1; else say what to write."""
    if isinstance(num_workers, int) and not isinstance(num_workers, bool) and num_workers >= 1:
        return num_workers
    got = f"{type(num_workers).__name__} {num_workers!r}"
    if isinstance(num_workers, list | tuple) and all(isinstance(a, str) for a in num_workers):
        write = f"ClusterView({len(num_workers)}, addresses=[...]) with this list"
    elif isinstance(num_workers, str) and num_workers.strip().isdigit():
        write = f"ClusterView({int(num_workers)}) without quotes"
    elif isinstance(num_workers, float) and num_workers.is_integer() and num_workers >= 1:
        write = f"ClusterView({int(num_workers)})"
    elif hasattr(num_workers, "num_workers"):  # a LocalCluster
        got, write = type(num_workers).__name__, "ClusterView(cluster.num_workers)"
    else:
        got, write = f"{got}: a cluster has at least one worker", "e.g. ClusterView(2)"
    must = "an int >= 1 (how many workers)"
    refuse("num_workers", num_workers, must=must, got=got, write=write, error=ValueError)


def _addresses(addresses, num_workers: int) -> list[str]:
    """``addresses`` as one string per worker (empty strings if None), or a clear error."""
    if addresses is None:
        return [""] * num_workers
    try:
        given = None if isinstance(addresses, str) else list(addresses)
    except TypeError:
        given = None
    if given is None or not all(isinstance(a, str) for a in given):
        if isinstance(addresses, str):
            example = f"[{addresses!r}]"
        elif given and all(isinstance(a, int) and not isinstance(a, bool) for a in given):
            example = repr([f"localhost:{port}" for port in given])
        else:
            example = "['localhost:2222', 'localhost:2223']"
        must = "a sequence of 'host:port' strings, one per worker"
        refuse("addresses", addresses, must=must, write=f"addresses={example}")
    addresses = given
    if len(addresses) != num_workers:
        raise ValueError(
            f"addresses holds {len(addresses)} address(es) but num_workers is {num_workers}; "
            "give one per worker (worker 0, the chief, first)."
        )
    return addresses
