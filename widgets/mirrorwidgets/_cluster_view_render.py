"""Drawing a ClusterStatus: the graphviz topology, the per-worker table, the loss chart.

The loss chart comes with its table twins (:func:`mirrorwidgets._a11y.lines_twin`): the
same points, for a screen reader and for a viewer that drops the SVG.

Everything here is a pure function of the status, so the same events always give the
same HTML (what nbval compares in the book's saved outputs). The topology's nodes have a
fixed size: a worker's address (its port changes between runs; nbval's sanitizer
rewrites it in the text) can never move anything else in the drawing.
"""

from __future__ import annotations

from mirrorkit.report import style
from mirrorkit.report.render import Html, html_table
from mirrorwidgets import _plot
from mirrorwidgets._a11y import lines_twin
from mirrorwidgets._lines_chart import Series, lines_svg
from mirrorwidgets._render import FONT, esc, graphviz_svg
from mirrorwidgets._routes import device_label, route

# Border / badge colour of each state (mirrorkit.WORKER_STATES), and the box's light fill.
STATE_COLORS = {
    "starting": style.AXIS,  # grey
    "ready": style.BLUE,
    "training": style.GOOD,
    "finished": style.DARK_GREEN,
    "failed": style.BAD,
    "stopped": style.ORANGE,
}
TINTS = {
    "starting": style.SURFACE,
    "ready": style.INFO_BG,
    "training": style.GOOD_BG,
    "finished": style.DONE_BG,
    "failed": style.BAD_BG,
    "stopped": style.ORANGE_BG,
}
RING = style.BLUE
# Text on a state's colour: white, and dark where the page is (each state's dark colour is
# light): at least 4.5:1 on every state colour in both themes.
ON_STATE = style.WHITE
# A worker box's label, on the state's tint: at least 4.5:1 in both themes (the axis grey is
# 4.3:1 on its light surface, so a starting worker's label is the muted grey).
ON_TINT = {**STATE_COLORS, "starting": style.MUTED}
LOSS_CLASS, LOSS_LABEL = "mw-cluster-loss", "loss per worker"  # the loss chart's
_CLIP = 160  # characters of a message or printed line shown in the table


def worker_label(worker: int) -> str:
    return f"worker {worker} (chief)" if worker == 0 else f"worker {worker}"


def ring_edges(n: int) -> tuple[tuple[int, int], ...]:
    """(from worker, to worker) of the ring all-reduce: i -> i + 1 mod n; none for one worker."""
    return tuple((a, b) for a, b, _ in route("collective", n, 0))


def node_width(status) -> float:
    """Inches wide every node is: room for the longest host name and any port (5 digits)."""
    hosts = [worker.address.rpartition(":")[0] or worker.address for worker in status.workers]
    longest = max(len(host) + 6 for host in hosts)  # ":65535"
    return max(1.9, 0.2 + 0.08 * longest)


def graph(status):
    """The cluster as a graphviz Digraph: one box per worker, the ring between them."""
    import graphviz

    n = status.num_workers
    dot = graphviz.Digraph("cluster", engine="dot")
    dot.attr(
        rankdir="LR",
        compound="true",
        fontname="Helvetica",
        fontsize="11",
        labeljust="l",
        nodesep="0.15",
        ranksep="0.6",
    )
    if n < 2:
        about = "one worker: nothing to all-reduce between workers"
    else:
        about = f"ring all-reduce across {n} workers (each sends to the next)"
    dot.attr(label=about, labelloc="t")
    # fixedsize: text never changes the layout (an address's port differs between runs).
    dot.attr(
        "node",
        shape="box",
        style="rounded,filled",
        fillcolor="white",
        fontname="Helvetica",
        fontsize="10",
        fixedsize="true",
        width=f"{node_width(status):.2f}",
        height="0.3",
    )
    dot.attr("edge", color=RING, penwidth="1.5", arrowsize="0.7")
    for status_ in status.workers:
        i, state = status_.worker, status_.state
        with dot.subgraph(name=f"cluster_w{i}") as box:
            box.attr(
                label=worker_label(i),
                fontcolor=ON_TINT[state],
                style="rounded,filled",
                color=STATE_COLORS[state],
                fillcolor=TINTS[state],
                penwidth="2",
            )
            address = status_.address or "address not known yet"
            box.node(
                f"w{i}",
                f"{state}\n{address}",
                fillcolor=STATE_COLORS[state],
                fontcolor=ON_STATE,
                height="0.5",
            )
            for k, device in enumerate(status_.devices):
                box.node(f"w{i}d{k}", device_label(device))
            if not status_.devices:
                box.node(f"w{i}d", "devices: not known yet", style="rounded,dashed")
    for a, b in ring_edges(n):
        dot.edge(f"w{a}", f"w{b}", ltail=f"cluster_w{a}", lhead=f"cluster_w{b}")
    return dot


def svg(dot) -> str:
    """``dot`` drawn as SVG markup (from ``<svg``: no XML prolog, no version comment)."""
    text = graphviz_svg(dot, "cluster")
    return text[text.find("<svg") :]


def header_html(status, title: str) -> str:
    n = status.num_workers
    bits = [f"<strong>{esc(title)}</strong>", f"{n} worker{'' if n == 1 else 's'}"]
    counts: dict[str, int] = {}
    for worker in status.workers:
        counts[worker.state] = counts.get(worker.state, 0) + 1
    for state, color in STATE_COLORS.items():
        if counts.get(state):
            bits.append(
                f'<span class="mw-count" data-state="{state}" style="color:{color}">'
                f"{counts[state]} {state}</span>"
            )
    return f'<div class="mw-title" style="{FONT}">{" &middot; ".join(bits)}</div>'


def _clip(text: str) -> str:
    """Escaped text, cut to _CLIP characters (the whole text in a tooltip)."""
    if len(text) <= _CLIP:
        return esc(text)
    return f'<span title="{esc(text)}">{esc(text[: _CLIP - 1])}&hellip;</span>'


def table_html(status) -> str:
    """One row per worker: its state, last step and loss, message and last line."""
    rows = [_row(worker) for worker in status.workers]
    heads = ("worker", "state", "step", "loss", "message", "last line")
    columns = [(head, [row[i] for row in rows]) for i, head in enumerate(heads)]
    attributes = [
        {"class": "mw-worker", "data-worker": w.worker, "data-state": w.state}
        for w in status.workers
    ]
    return html_table(columns, css_class="mw-cluster-table", row_attributes=attributes)


def _row(worker) -> tuple[str, ...]:
    color = STATE_COLORS[worker.state]
    step = "-" if worker.step is None else str(worker.step)
    loss = f"{worker.losses[-1][1]:.4g}" if worker.losses else "-"
    line = _clip(worker.last_output[-1]) if worker.last_output else ""
    return (
        worker_label(worker.worker),
        Html(
            f'<span class="mw-state" style="color:{ON_STATE};background:{color};'
            f'border-radius:3px;padding:0 4px">{worker.state}</span>'
        ),
        Html(f'<span class="mw-step">{step}</span>'),
        Html(f'<span class="mw-loss">{loss}</span>'),
        Html(f'<span style="color:{color}">{_clip(worker.message)}</span>'),
        Html(f'<code style="white-space:pre-wrap">{line}</code>'),
    )


def loss_key(status, max_points: int) -> tuple:
    """Changes whenever the chart would: losses are only ever appended."""
    return (max_points, tuple(len(worker.losses) for worker in status.workers))


def loss_series(status, max_points: int) -> list[Series]:
    """One line per worker that reported a loss, thinned to about ``max_points`` points."""
    reporting = [worker for worker in status.workers if worker.losses]
    return [
        Series(
            worker_label(worker.worker),
            _plot.thin(worker.losses, max_points),
            look=worker.worker,  # a worker keeps its colour as others join
            # Workers in sync report the same loss: wider, paler lines for lower task
            # indices keep every worker's line visible where they overlap.
            width=round(1.2 + 2.0 * (len(reporting) - 1 - i) / len(reporting), 2),
            opacity=round(0.85 - 0.35 * (len(reporting) - 1 - i) / len(reporting), 2),
        )
        for i, worker in enumerate(reporting)
    ]


def loss_svg(status, max_points: int) -> str:
    """The loss chart as inline SVG; "" while no worker reported a loss."""
    series = loss_series(status, max_points)
    if not series:
        return ""
    return lines_svg(series, css_class=LOSS_CLASS, label=LOSS_LABEL)


def loss_chart(status, max_points: int) -> tuple[str, str]:
    """The loss chart (:func:`loss_svg`) and its table twins; "" and "" while no loss came."""
    series = loss_series(status, max_points)
    if not series:
        return "", ""
    return lines_svg(series, css_class=LOSS_CLASS, label=LOSS_LABEL), lines_twin(series)


def loss_figure(status, max_points: int):
    """The same lines as a matplotlib Figure (for saving or restyling); None if none reported."""
    series = loss_series(status, max_points)
    if not series:
        return None
    from matplotlib.figure import Figure

    figure = Figure(figsize=(5.0, 2.2), dpi=96, layout="constrained")
    axes = figure.add_subplot(xlabel="step", ylabel=LOSS_LABEL)
    for s in series:
        steps, losses = zip(*s.points, strict=True)
        color, _ = _plot.series_look(s.look)
        axes.plot(steps, losses, lw=s.width, alpha=s.opacity, color=color, label=s.label)
    axes.legend(fontsize=8, loc="upper right")
    return figure
