"""Which chart engine should the widgets use? Size, render time and determinism, side by side.

Usage: python bench/chart_engine.py [--repeats 5] [--compare-with PYTHON]

Draws each chart of the widgets (loss scale, all-reduce, step timeline, the cluster's loss
per worker, the live loss per replica) from the same data, at the size a chapter draws and
at a long run's size, in every way the widgets could draw it:

* ``svg``: the widgets' own inline SVG, drawn by their chart modules (timed without the
  widget around them);
* ``mpl-svg-text`` / ``mpl-svg-path``: matplotlib to SVG with deterministic settings
  (``svg.hashsalt`` fixed, no date or creator), text as ``<text>`` or as glyph paths;
* ``mpl-png``: matplotlib to PNG, as the widgets drew the cluster and live plots before.

The matplotlib versions below draw the same marks as the widgets' charts (but cannot carry
the widgets' per-mark tooltips and ``data-*`` attributes). For each chart and way the table
gives the bytes, the median render time, whether two fresh processes give the same bytes,
and, with ``--compare-with`` (another environment's Python, e.g. the hosted one pinned to
Colab's matplotlib 3.10.0; it must import mirrorkit and mirrorwidgets), whether that one
gives the same bytes too. Last, the lines of drawing code each way needs.

The charts' data sizes are the chapters' (4, 5 and 6) and a long run's. An environment
made before the widgets used ``lazy_loader`` needs a folder holding it on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import io
import json
import math
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WAYS = ("svg", "mpl-svg-text", "mpl-svg-path", "mpl-png")

# ---------------------------------------------------------------- data (no randomness)


def loss_scale_records(steps: int) -> list[dict]:
    """Chapter 4's run (2^15, doubling after 2 good steps, an overflow at step 3) or a long one."""
    chapter = steps <= 20
    scale, good, records = 2.0**15, 0, []
    for i in range(steps):
        overflow = i == 3 if chapter else i % 200 == 37
        loss = 2.0 / (1 + 0.01 * i) + 0.05 * math.sin(i / 7)
        if overflow and i % 400 == 37:
            loss = math.inf
        records.append({"step": i, "loss_scale": scale, "overflow": overflow, "loss": loss})
        good = 0 if overflow else good + 1
        scale = scale / 2 if overflow else scale
        if good == (2 if chapter else 50):
            scale, good = scale * 2, 0
    return records


def all_reduce_benchmark(long: bool):
    """Chapter 5's sweep (3 algorithms, 2 and 4 replicas, 4 sizes) or a wide one."""
    from mirrorkit.measure.benchmark import AllReduceBenchmark, record_from_times

    algorithms = ["collective", "hierarchical_copy", "one_device"] + (["nccl"] if long else [])
    counts = [2, 4, 8] if long else [2, 4]
    sizes = [1024 << k for k in range(16)] if long else [4 << 10, 64 << 10, 1 << 20, 8 << 20]
    copy_bw = 8e9
    records = []
    for a, algorithm in enumerate(algorithms):
        for n in counts:
            for nbytes in sizes:
                base = 2e-5 * (a + 1) * n + nbytes * (n - 1) / n / (1e9 / (a + 1))
                times = [base * (1 + 0.05 * math.sin(k + nbytes)) for k in range(5)]
                records.append(record_from_times(algorithm, n, nbytes, times, copy_bw))
    return AllReduceBenchmark(tuple(records), copy_bandwidth=copy_bw)


def timeline_steps(steps: int) -> list[dict]:
    """Steps of a traced run: step 0 traces the tf.function, the others are alike."""
    out = []
    for i in range(steps):
        compute = 0.9 if i == 0 else 0.02 + 0.004 * math.sin(i / 5)
        reduce = 0.003 + 0.001 * math.cos(i / 3)
        out.append(
            {
                "step": i,
                "input_wait_s": 0.001 * (1 + i % 3),
                "step_s": compute + reduce,
                "all_reduce_s": reduce,
                "compute_s": compute,
            }
        )
    return out


def worker_losses(workers: int, steps: int) -> list[list[tuple[int, float]]]:
    """(step, loss) per worker: in sync, as data-parallel workers are."""
    return [
        [(s, 1.0 / (1 + 0.05 * s) + 0.01 * math.sin(s + w)) for s in range(1, steps + 1)]
        for w in range(workers)
    ]


CASES = {  # chart -> {data name: (build, parameters)}
    "loss-scale": {"chapter 4 (8 steps)": 8, "long (2000 steps)": 2000},
    "all-reduce": {"chapter 5 (24 records)": False, "wide (192 records)": True},
    "step timeline": {"chapter 5 (8 steps)": 8, "long (2000 steps)": 2000},
    "cluster loss": {"chapter 6 (2 x 12 steps)": (2, 12), "long (4 x 2000 steps)": (4, 2000)},
    "live loss": {"4 replicas x 500 steps": (4, 500)},
}

# ---------------------------------------------------------------- the widgets' own drawing


def widget_drawer(chart: str, data):
    """A function drawing the chart's SVG as the widget does (its chart module, no widget)."""
    import mirrorkit as mk
    import mirrorwidgets as mw
    from mirrorwidgets import (
        _all_reduce_chart_render,
        _cluster_view_render,
        _loss_scale_render,
        _step_timeline_render,
    )

    if chart == "loss-scale":
        records = mw.LossScaleView(data).records
        return lambda: _loss_scale_render.chart_svg(records, show_loss=True, max_points=1000)
    if chart == "all-reduce":
        counts = sorted({r.replicas for r in data.records})
        return lambda: _all_reduce_chart_render.chart_svg(
            data.records, counts, counts, data.copy_bandwidth
        )
    if chart == "step timeline":
        steps = mw.StepTimeline(data).steps
        return lambda: _step_timeline_render.timeline_svg(steps, max_points=200, y_max=None)[0]
    if chart == "cluster loss":
        status = mk.ClusterStatus(len(data))
        for worker, losses in enumerate(data):
            for step, loss in losses:
                status.apply(mk.WorkerEvent(worker, "step", step=step, metrics={"loss": loss}))
        return lambda: _cluster_view_render.loss_svg(status, 500)
    import tensorflow as tf

    view = mw.LiveTrainingView()
    view.record(0, tf.constant(0.0))  # the history below replaces this step
    view.history = {"step": [], "loss": [], "grad_norm": [], "step_time": []}
    for step, row in enumerate(zip(*data, strict=True)):
        view.history["step"].append(step)
        view.history["loss"].append([loss for _, loss in row])

    def draw() -> str:
        view.refresh_plot()
        return view._plot.value

    return draw


# ---------------------------------------------------------------- matplotlib, the same marks

MPL_RC = {
    "svg.hashsalt": "mirrorbook",  # fixed clip-path and other ids
    "font.family": "monospace",
    "font.size": 7.5,
    "axes.linewidth": 0.5,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": True,
    "legend.frameon": False,
}


def _mpl_style() -> dict:
    from mirrorkit.report import style

    return MPL_RC | {
        "axes.edgecolor": style.AXIS,
        "grid.color": style.AXIS,
        "xtick.color": style.AXIS,
        "ytick.color": style.AXIS,
        "xtick.labelcolor": style.MUTED,
        "ytick.labelcolor": style.MUTED,
        "axes.labelcolor": style.MUTED,
        "axes.titlecolor": style.MUTED,
        "axes.prop_cycle": __import__("cycler").cycler(color=list(style.SERIES)),
    }


def _every_kth(points: list, max_points: int, keep=lambda p: False) -> list:
    if len(points) <= max_points:
        return list(points)
    stride = math.ceil(len(points) / max_points)
    return [p for i, p in enumerate(points) if i % stride == 0 or keep(p) or i == len(points) - 1]


def mpl_loss_scale(figure, records: list[dict]) -> None:
    from matplotlib.ticker import FuncFormatter

    from mirrorkit.report import style

    points = _every_kth(records, 1000, keep=lambda p: p["overflow"])
    scale_ax, loss_ax = figure.subplots(2, 1, sharex=True, height_ratios=[130, 70])
    steps = [p["step"] for p in points]
    scale_ax.step(steps, [p["loss_scale"] for p in points], where="post", color=style.BLUE)
    scale_ax.set_yscale("log", base=2)
    scale_ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"2^{math.log2(v):.0f}"))
    scale_ax.set_title("loss scale (log2 axis)", loc="left")
    over = [p for p in points if p["overflow"]]
    for ax in (scale_ax, loss_ax):
        for p in over:
            ax.axvline(p["step"], color=style.BAD, alpha=0.35, ls=(0, (3, 3)), lw=1)
    scale_ax.scatter([p["step"] for p in over], [p["loss_scale"] for p in over], color=style.BAD)
    if len(points) <= 60:
        rest = [p for p in points if not p["overflow"]]
        scale_ax.plot([p["step"] for p in rest], [p["loss_scale"] for p in rest], "o", ms=2)
    finite = [p["loss"] for p in points if math.isfinite(p["loss"]) and not p["overflow"]]
    lo, hi = min(finite), max(finite)
    shown = [p["loss"] if lo <= p["loss"] <= hi else math.nan for p in points]
    loss_ax.plot(steps, shown, color=style.PURPLE, lw=1.2)
    for p in points:
        if not lo <= p["loss"] <= hi:
            loss_ax.annotate(f"{p['loss']:.4g}", (p["step"], hi), color=style.BAD, ha="center")
    loss_ax.set_title("loss", loc="left")
    loss_ax.set_xlabel("step")


def mpl_all_reduce(figure, benchmark) -> None:
    from matplotlib.ticker import FixedLocator, FuncFormatter

    from mirrorkit.report import style
    from mirrorkit.report.units import format_rate, format_seconds, format_size

    names = ["collective", "one_device", "hierarchical_copy", "nccl"]
    colors = dict(zip(names, style.SERIES, strict=False))
    counts = sorted({r.replicas for r in benchmark.records})
    dashes = dict(zip(counts, ["-", "--", ":", "-."], strict=False))
    time_ax, bw_ax = figure.subplots(2, 1, sharex=True)
    for algorithm in dict.fromkeys(r.algorithm for r in benchmark.records):
        for n in counts:
            rows = sorted(
                (r for r in benchmark.records if (r.algorithm, r.replicas) == (algorithm, n)),
                key=lambda r: r.bytes,
            )
            sizes = [r.bytes for r in rows]
            kw = {"color": colors[algorithm], "ls": dashes[n], "marker": "o", "ms": 3}
            time_ax.plot(sizes, [r.median_s for r in rows], label=f"{algorithm}, {n}", **kw)
            time_ax.vlines(sizes, [r.min_s for r in rows], [r.max_s for r in rows], alpha=0.5)
            bw_ax.plot(sizes, [r.busbw for r in rows], **kw)
    bw_ax.axhline(benchmark.copy_bandwidth, color=style.BAD, ls="--", lw=1)
    bw_ax.annotate(f"memory copy {format_rate(benchmark.copy_bandwidth)}", (0.99, 0.9),
                   xycoords="axes fraction", ha="right", color=style.BAD)  # fmt: skip
    for ax, unit in ((time_ax, format_seconds), (bw_ax, format_rate)):
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _, f=unit: f(v)))
    bw_ax.set_xscale("log", base=2)
    sizes = sorted({r.bytes for r in benchmark.records})
    bw_ax.xaxis.set_major_locator(FixedLocator(sizes[:: max(1, len(sizes) // 6)]))
    bw_ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_size(int(v))))
    time_ax.set_title("time per all-reduce (median; min-max)", loc="left")
    bw_ax.set_title("busbw (bus bandwidth)", loc="left")
    bw_ax.set_xlabel("message size per replica (float32), log2 axis")
    figure.legend(loc="lower left", ncols=3, fontsize=6)


def mpl_timeline(figure, steps: list[dict]) -> None:
    from mirrorkit.report import style

    size = max(1, math.ceil(len(steps) / 200))
    phases = (
        ("input_wait_s", style.YELLOW),
        ("compute_s", style.BLUE),
        ("all_reduce_s", style.PURPLE),
    )
    bars = [steps[i : i + size] for i in range(0, len(steps), size)]
    means = {p: [sum(s[p] for s in b) / len(b) for b in bars] for p, _ in phases}
    totals = [sum(means[p][i] for p, _ in phases) for i in range(len(bars))]
    usual = sorted(totals)[int(0.9 * (len(totals) - 1))]
    top = 1.5 * usual if max(totals) > 3 * usual else max(totals)
    ax = figure.subplots()
    x = [b[0]["step"] for b in bars]
    below = [0.0] * len(bars)
    for phase, color in phases:
        ax.bar(x, means[phase], bottom=below, width=0.8 * size, color=color, align="edge")
        below = [b + m for b, m in zip(below, means[phase], strict=True)]
    ax.set_ylim(0, top)
    for xi, total in zip(x, totals, strict=True):
        if total > top:
            ax.annotate("\u25b2", (xi, top), color=style.BAD, ha="left", va="top")
    ax.set_title("seconds per step", loc="left")
    ax.set_xlabel("step")


def mpl_cluster_loss(figure, losses: list[list[tuple[int, float]]]) -> None:
    """The widgets' matplotlib loss plot before this bench (one line per worker)."""
    from matplotlib.ticker import MaxNLocator

    figure.subplots_adjust(left=0.13, right=0.98, top=0.95, bottom=0.2)
    axes = figure.add_subplot()
    axes.set_xlabel("step")
    axes.set_ylabel("loss per worker")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    for worker, points in enumerate(losses):
        steps, values = zip(*_every_kth(points, 500), strict=True)
        width = 1.2 + 2.0 * (len(losses) - 1 - worker) / len(losses)
        axes.plot(steps, values, lw=width, alpha=0.85, color=f"C{worker % 10}", label=f"w{worker}")
    axes.legend(fontsize=8, loc="upper right")


def mpl_live_loss(figure, losses: list[list[tuple[int, float]]]) -> None:
    """The live view's matplotlib plot before this bench (one line per replica)."""
    figure.subplots_adjust(left=0.12, right=0.98, top=0.95, bottom=0.22)
    axes = figure.add_subplot()
    axes.set_xlabel("step")
    axes.set_ylabel("loss per replica")
    for replica, points in enumerate(losses):
        steps, values = zip(*points, strict=True)
        axes.plot(steps, values, lw=1, label=f"replica {replica}")
    axes.legend(fontsize=7, loc="upper right")


MPL = {  # chart -> (draw, width px, height px, dpi of the PNG the widgets drew)
    "loss-scale": (mpl_loss_scale, 520, 290, 96),
    "all-reduce": (mpl_all_reduce, 560, 430, 96),
    "step timeline": (mpl_timeline, 520, 210, 96),
    "cluster loss": (mpl_cluster_loss, 480, 211, 96),
    "live loss": (mpl_live_loss, 360, 144, 72),
}


def mpl_render(chart: str, data, way: str) -> bytes:
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    draw, width, height, dpi = MPL[chart]
    fonttype = "path" if way == "mpl-svg-path" else "none"
    with matplotlib.rc_context(_mpl_style() | {"svg.fonttype": fonttype}):
        figure = Figure(figsize=(width / dpi, height / dpi), dpi=dpi, layout=None)
        FigureCanvasAgg(figure)
        draw(figure, data)
        buffer = io.BytesIO()
        if way == "mpl-png":  # as the widgets drew it: print_png, default metadata
            figure.canvas.print_png(buffer)
        else:
            figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    return buffer.getvalue()


# ---------------------------------------------------------------- measuring


def build(chart: str, parameter):
    if chart == "loss-scale":
        return loss_scale_records(parameter)
    if chart == "all-reduce":
        return all_reduce_benchmark(parameter)
    if chart == "step timeline":
        return timeline_steps(parameter)
    return worker_losses(*parameter)


def drawer(chart: str, data, way: str):
    """A function that draws the chart one way, to the bytes a notebook stores (what is timed)."""
    if way == "svg":
        draw = widget_drawer(chart, data)
        return lambda: draw().encode()
    return lambda: mpl_render(chart, data, way)


def digests() -> dict[str, str]:
    """sha256 of every chart drawn every way (what a fresh process prints with --digests)."""
    out = {}
    for chart, cases in CASES.items():
        for name, parameter in cases.items():
            data = build(chart, parameter)
            for way in WAYS:
                drawn = drawer(chart, data, way)()
                out[f"{chart}|{name}|{way}"] = hashlib.sha256(drawn).hexdigest()
    return out


def fresh(python: str) -> dict[str, str]:
    done = subprocess.run(
        [python, __file__, "--digests"], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def code_lines(*objects) -> int:
    """Lines of code of functions or modules: no blank lines, comments or docstrings."""
    import ast

    total = 0
    for obj in objects:
        source = textwrap.dedent(inspect.getsource(obj))
        skip = set()
        for node in ast.walk(ast.parse(source)):
            body = getattr(node, "body", None)
            first = body[0] if isinstance(body, list) and body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip |= set(range(first.lineno, first.end_lineno + 1))
        total += sum(
            1
            for number, line in enumerate(source.splitlines(), 1)
            if line.strip() and not line.strip().startswith("#") and number not in skip
        )
    return total


def svg_code_lines() -> int:
    """The widgets' chart modules (the engine and one module per chart), tables left out."""
    from mirrorwidgets import (
        _all_reduce_chart_render as bench,
        _lines_chart as lines,
        _loss_scale_render as scale,
        _plot as plot,
        _step_timeline_render as timeline,
    )

    tables = (bench.table_html, bench.skipped_html, bench.check_records)
    return code_lines(plot, scale, bench, timeline, lines) - code_lines(*tables)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--compare-with", metavar="PYTHON", help="another environment's Python")
    parser.add_argument("--digests", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.digests:
        print(json.dumps(digests()))
        return

    import matplotlib

    first, second = fresh(sys.executable), fresh(sys.executable)
    other = fresh(args.compare_with) if args.compare_with else None
    other_version = (
        subprocess.run(
            [args.compare_with, "-c", "import matplotlib; print(matplotlib.__version__)"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()  # fmt: skip
        if args.compare_with
        else None
    )
    print(f"matplotlib {matplotlib.__version__}; median of {args.repeats} renders each")
    across = f"same in {other_version}" if other else "other version"
    header = f"{'chart':14} {'data':24} {'way':13} {'bytes':>8} {'ms':>7}  2 processes  {across}"
    print(header)
    print("-" * len(header))
    for chart, cases in CASES.items():
        for name, parameter in cases.items():
            data = build(chart, parameter)
            for way in WAYS:
                draw = drawer(chart, data, way)
                drawn, times = b"", []
                for _ in range(args.repeats):
                    began = time.perf_counter()
                    drawn = draw()
                    times.append(time.perf_counter() - began)
                key = f"{chart}|{name}|{way}"
                same = (
                    "yes"
                    if first[key] == second[key] == hashlib.sha256(drawn).hexdigest()
                    else "NO"
                )
                versions = "-" if other is None else ("yes" if other[key] == first[key] else "NO")
                ms = 1000 * statistics.median(times)
                print(
                    f"{chart:14} {name:24} {way:13} {len(drawn):8} {ms:7.1f}  {same:11}  {versions}"
                )
    mpl = [mpl_loss_scale, mpl_all_reduce, mpl_timeline, mpl_cluster_loss, mpl_live_loss]
    print(
        "\nlines of drawing code (no blanks, comments or docstrings): the widgets' SVG charts "
        f"{svg_code_lines()}; the matplotlib versions above "
        f"{code_lines(*mpl, mpl_render, _mpl_style, _every_kth) + len(MPL_RC) + 2} "
        "(without tooltips, data attributes, outlier cuts or checks)"
    )


if __name__ == "__main__":
    main()
