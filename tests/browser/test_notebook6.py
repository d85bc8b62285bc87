"""Every widget live in the classic Jupyter Notebook 6 of Colab's generation, in Chromium.

Colab preinstalls ipywidgets 7.7.1 with widgetsnbextension 3.6.10 and Notebook 6.5.7
(``requirements/colab.txt``): the hosted job's environment. There, a real Notebook 6 server
(token on, 127.0.0.1) runs one notebook that builds every public widget from real values on
four simulated replicas; each must draw its live view (the widget manager's
``.jupyter-widgets-view`` output, not the ``text/html`` snapshot beside it in the bundle) and
react to one interaction: a click in the page where the widget has a control (the kernel must
then see the new value), else a change made from the kernel. The stepper is also walked by
keyboard alone, and axe-core checks the whole page (tests/browser/axe.py).
"""

from __future__ import annotations

import contextlib
import time
from importlib import metadata
from pathlib import Path

import pytest

from tests.browser import axe, keyboard, test_jupyterlab as lab_test
from tests.browser.test_book_pages import offline_page

pytestmark = pytest.mark.browser_classic

browser_tools = lab_test.browser_tools
# The front end and widget versions this test is about (Colab's): elsewhere it has no subject.
CLASSIC = {"notebook": "6.", "widgetsnbextension": "3.", "ipywidgets": "7."}
KEPT = lab_test.ARTIFACTS / "notebook6"  # .png, .html and .log: the page as the test ended
KERNEL_START = 60  # seconds for the page to load and its kernel to connect
CELL_TIMEOUT = 90  # seconds for one cell, TensorFlow's import or every widget's values
REACT = 20  # seconds for the page to show a change once its cause is done
# A live view: the widget manager's output, its root a widget box. A snapshot is text/html,
# drawn by the output area into .output_html (checked on a real snapshot below).
LIVE = ".output_subarea.jupyter-widgets-view > .jupyter-widgets.widget-vbox"
SNAPSHOT = ".output_subarea.output_html"
ERRORS = ".output_error"  # a traceback
# Notebook 6 scrolls the notebook inside #site, and a long output inside its own box: a
# full-page screenshot would cut both off.
UNSCROLL = """html, body, #site, .output_scroll {
    height: auto !important; max-height: none !important; overflow: visible !important; }"""

# Each widget gets a class of its own from the kernel (_dom_classes), to find its live view.
WIDGETS = {
    "grid": "ReplicaGrid",
    "topology": "TopologyView",  # TopologyDiagram(strategy).widget()
    "stepper": "AllReduceStepper",
    "chart": "AllReduceChart",
    "split": "BatchSplitView",
    "cluster": "ClusterView",
    "curves": "LossCurves",
    "scale": "LossScaleView",
    "timeline": "StepTimeline",
    "live": "LiveTrainingView",  # fed by a LiveTrainingHook
}

CELLS = [
    # 0: four replicas, as every chapter has them.
    "import ipywidgets\n"
    "import keras\n"
    "import numpy as np\n"
    "import mirrorkit as mk\n"
    "mk.simulate_replicas(4)\n"
    "import tensorflow as tf\n"
    "import mirrorwidgets as mw\n"
    "strategy = mk.make_strategy()",
    # 1: every widget from real values, shown live.
    "def values(scale):\n"
    "    ctx = tf.distribute.get_replica_context()\n"
    "    value = tf.cast(ctx.replica_id_in_sync_group, tf.float32) * scale + 1.0\n"
    "    return value, ctx.all_reduce('sum', value)\n"
    "\n"
    "def grads():\n"
    "    r = tf.distribute.get_replica_context().replica_id_in_sync_group\n"
    "    return tf.range(12, dtype=tf.float32) * tf.cast(r + 1, tf.float32)\n"
    "\n"
    "def model_fn():\n"
    "    keras.utils.set_random_seed(0)\n"
    "    return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])\n"
    "\n"
    "@tf.function\n"
    "def reduce_step():\n"
    "    ctx = tf.distribute.get_replica_context\n"
    "    return strategy.run(lambda: ctx().all_reduce('sum', tf.ones([1024])))\n"
    "\n"
    "timeline = mw.StepTimeline()\n"
    "tracer = mk.StepTracer(strategy, profile_every=1, profile_from=1, on_step=timeline.append)\n"
    "def traced_steps(count):\n"
    "    for _ in range(count):\n"
    "        with tracer.step():\n"
    "            reduce_step()\n"
    "    timeline.flush()\n"
    "\n"
    "def losses(scale):\n"
    "    r = tf.distribute.get_replica_context().replica_id_in_sync_group\n"
    "    return (tf.cast(r, tf.float32) + 1.0) * scale\n"
    "\n"
    "x = np.random.default_rng(0).normal(size=(32, 2)).astype('float32')\n"
    "sweep = mk.run_scaling_sweep(mk.replica_devices(strategy), model_fn,\n"
    "                             (x, x.sum(axis=1, keepdims=True)), loss='mse',\n"
    "                             replica_counts=(1, 2))\n"
    "benchmark = mk.benchmark_all_reduce(['collective'], sizes=['4KiB'], replicas=[2, 4],\n"
    "                                    repeats=1, warmup=1, copy_bytes=1 << 20)\n"
    "history = mk.run_loss_scale(strategy, steps=3, overflow_steps=[1])\n"
    "traced_steps(3)\n"
    "hook = mw.LiveTrainingHook(min_interval=0.0, budget=1.0)\n"
    "hook.step(strategy.run(losses, args=(1.0,)))\n"
    "widgets = dict(\n"
    "    grid=mw.ReplicaGrid(*strategy.run(values, args=(10.0,))),\n"
    "    topology=mw.TopologyDiagram(strategy).widget(),\n"
    "    stepper=mw.AllReduceStepper(mk.replay_all_reduce(strategy, strategy.run(grads))),\n"
    "    chart=mw.AllReduceChart(benchmark),\n"
    "    split=mw.BatchSplitView(\n"
    "        mk.preview_input(strategy, tf.data.Dataset.range(50).batch(16), steps=2)),\n"
    "    cluster=mw.ClusterView(2, addresses=['127.0.0.1:2222', '127.0.0.1:2223']),\n"
    "    curves=mw.LossCurves(sweep),\n"
    "    scale=mw.LossScaleView(history),\n"
    "    timeline=timeline,\n"
    "    live=hook.view,\n"
    ")\n"
    "for name, widget in widgets.items():\n"
    "    widget.add_class(f'mwt-{name}')\n"
    "    display(widget)\n"
    'print(f"the kernel\'s ipywidgets: {ipywidgets.__version__}")',
    # 2: the widgets without a control change from the kernel.
    "widgets['grid'].update(*strategy.run(values, args=(100.0,)))\n"
    "widgets['split'].update(mk.preview_input(strategy, tf.data.Dataset.range(64).batch(16)))\n"
    "widgets['cluster'].update(mk.WorkerEvent(0, 'ready', devices=('CPU:0',)))\n"
    "widgets['cluster'].update(mk.WorkerEvent(1, 'failed', text='exit status -9'))\n"
    "widgets['curves'].update([sweep, sweep])\n"
    "last = history.records[-1]\n"
    "widgets['scale'].append({'step': last.step + 1, 'loss_scale': last.next_scale,\n"
    "                         'overflow': True, 'loss': last.loss})\n"
    "traced_steps(2)\n"
    "hook.step(strategy.run(losses, args=(0.5,)))\n"
    "print('kernel changes made')",
    # 3: what the kernel saw of the clicks and menus; and one snapshot shown as text/html.
    "print('kernel sees', widgets['stepper'].step, widgets['topology'].all_reduce,\n"
    "      widgets['chart'].replicas, widgets['chart'].show_table)\n"
    "display({'text/html': widgets['grid'].snapshot_html()}, raw=True)",
]

# The kernel is connected, and widgetsnbextension (which loads after the page) has made the
# widget manager that takes in the widgets the kernel makes.
KERNEL_READY = """() => window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel
    && Jupyter.notebook.kernel.is_connected() && Jupyter.notebook.kernel.widget_manager"""
# Cells are done once each has its execution count (a fresh notebook runs each cell once).
CELLS_DONE = """cells => cells.every(
    i => typeof Jupyter.notebook.get_cell(i).input_prompt_number === 'number')"""


def _classic_versions() -> dict[str, str]:
    """The installed versions of CLASSIC's packages; skips where they are not Colab's."""
    found = {}
    for name in CLASSIC:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    if not all(found[name].startswith(major) for name, major in CLASSIC.items()):
        pytest.skip(
            "needs Colab's classic front end (notebook 6, widgetsnbextension 3, ipywidgets 7: "
            f"requirements/colab.txt, the hosted job's environment); found {found}"
        )
    return found


def _notebook_options(token: str, root: Path) -> list[str]:
    return [f"--NotebookApp.token={token}", f"--NotebookApp.notebook_dir={root}"]


def _keep(page, problems: list[str]) -> None:
    """Keep the page as it ended, its HTML and what its console said, passed or failed."""
    KEPT.with_suffix(".log").write_text("\n".join(problems))
    with contextlib.suppress(Exception):  # a page that broke must not hide the failure
        KEPT.with_suffix(".html").write_text(page.content())
        page.add_style_tag(content=UNSCROLL)  # the whole notebook in one picture
        page.screenshot(path=f"{KEPT}.png", full_page=True)


def _run(page, *cells: int) -> None:
    """Run these cells in the page, as Shift-Enter does, and wait until each has finished."""
    page.evaluate("cells => Jupyter.notebook.execute_cells(cells)", list(cells))
    page.wait_for_function(CELLS_DONE, arg=list(cells), timeout=CELL_TIMEOUT * 1000)
    errors = page.locator(ERRORS).all_inner_texts()
    assert not errors, errors


def _processes_naming(marker: str) -> list[str]:
    """The command lines of this machine's processes that hold ``marker``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if marker in text:
                found.append(text)
    return found


def _left_behind(marker: str, within: float = 15.0) -> list[str]:
    """The processes naming ``marker`` that still run ``within`` seconds from now."""
    deadline = time.monotonic() + within
    while (left := _processes_naming(marker)) and time.monotonic() < deadline:
        time.sleep(0.25)
    return left


def test_every_widget_draws_live_and_reacts_in_notebook6(browser_tools, tmp_path):
    versions = _classic_versions()
    sync_playwright = browser_tools
    started = time.monotonic()
    # The kernel's command line names its connection file, in the server's runtime folder.
    kernel_marker = str(tmp_path / "runtime")
    lab_test.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    server = lab_test.jupyter_server(tmp_path, "notebook", "NotebookApp", _notebook_options)
    with server as (base, token), sync_playwright() as p:
        lab_test.put_notebook(base, token, "widgets.ipynb", CELLS)
        browser = p.chromium.launch(
            executable_path=lab_test.CHROMIUM, args=lab_test.CHROMIUM_ARGS, timeout=60_000
        )
        try:
            with offline_page(browser, base) as (page, problems):
                try:
                    page.goto(f"{base}/notebooks/widgets.ipynb?token={token}")
                    page.wait_for_function(KERNEL_READY, timeout=KERNEL_START * 1000)
                    assert _processes_naming(kernel_marker), "no process names the kernel's file"
                    _check(page, versions)
                finally:
                    _keep(page, problems)
                # Warnings are Notebook 6's own (an action bound before it exists) and
                # ipywidgets 7.7.1's (a fresh kernel has no widget control channel yet).
                errors = [text for text in problems if not text.startswith("console warning")]
                assert not errors, problems
        finally:
            browser.close()
    assert not _left_behind(kernel_marker), "the kernel outlived the server"
    elapsed = time.monotonic() - started
    # 3 minutes for the widgets, one more for the keyboard walk and axe on the whole page
    # (about 10 s and 20 s on a loaded 2-core machine).
    assert elapsed < 240, f"the test took {elapsed:.0f}s, more than 4 minutes"


def _check(page, versions: dict[str, str]) -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=REACT * 1000)
    try:
        _check_widgets(page, versions, expect)
    finally:
        expect.set_options(timeout=None)  # Playwright's default again


def _check_widgets(page, versions: dict[str, str], expect) -> None:
    # One cell, then the next, as a learner runs them. Not both at once: widgetsnbextension's
    # manager asks the kernel for its widgets once it connects (a request that waits behind
    # every cell already queued), then draws again every output holding a widget view, and
    # the views drawn meanwhile vanish; after the first cell its request has been answered.
    _run(page, 0)
    _run(page, 1)
    # Every widget drew its live view, once, and no snapshot stands in for any of them.
    views = {name: page.locator(f"{LIVE}.mwt-{name}") for name in WIDGETS}
    for name, view in views.items():
        expect(view, f"{WIDGETS[name]} has no live view").to_have_count(1)
    widgets_cell = page.locator(".cell").nth(1)
    assert widgets_cell.locator(SNAPSHOT).count() == 0, "a widget fell back to its snapshot"
    assert page.locator(".mw-snapshot").count() == 0
    kernel_ipywidgets = f"the kernel's ipywidgets: {versions['ipywidgets']}"
    expect(widgets_cell.locator(".output_stdout").last).to_contain_text(kernel_ipywidgets)

    grid, topology, stepper, chart = (views[n] for n in ("grid", "topology", "stepper", "chart"))
    split, cluster, curves, scale = (views[n] for n in ("split", "cluster", "curves", "scale"))
    timeline, live = views["timeline"], views["live"]

    # What each drew first, from the kernel's real values.
    before = grid.locator('.mw-cell[data-stage="before"] .mw-scalar')
    after = grid.locator('.mw-cell[data-stage="after"] .mw-scalar')
    expect(before).to_have_text(["1", "11", "21", "31"])
    expect(after).to_have_text(["64"] * 4)
    title = topology.locator("svg g.graph > text").first
    expect(title).to_have_text("all-reduce: collective")
    expect(stepper.locator(".mws-view .mws-frame")).to_have_attribute("data-step", "0")
    expect(chart.locator('svg [data-replicas="4"]').first).to_be_attached()
    expect(chart.locator("table.mw-table")).to_have_count(1)
    steps = split.locator("tr.mw-step")
    expect(steps).to_have_count(3)  # steps 0, 1 and 3 (the partial and EMPTY one)
    workers = cluster.locator("tr.mw-worker")
    expect(workers).to_have_count(2)
    expect(workers.first).to_have_attribute("data-state", "starting")
    expect(curves.locator("polyline.mw-curve")).to_have_count(2)
    expect(scale.locator("circle.mw-overflow")).to_have_count(1)
    expect(timeline.locator("g.mw-bar")).to_have_count(2)
    expect(live.locator(".mw-live")).to_contain_text("step 1")

    # The stepper by keyboard alone (it plays to the last step), then the controls by mouse.
    walk = keyboard.walk_stepper(page, stepper, expect, "Space")
    axe.note("keyboard-notebook6", "\n".join(walk))
    expect(stepper.locator(".mws-view .mws-frame")).to_have_attribute("data-step", "6")
    stepper.locator("button.mws-previous").click()
    expect(stepper.locator(".mws-view .mws-frame")).to_have_attribute("data-step", "5")
    expect(stepper.locator(keyboard.STATUS)).to_contain_text("step 5 of 6")
    topology.locator("button", has_text="one_device").click()
    expect(title).to_have_text("all-reduce: one_device (this strategy uses collective)")
    chart.locator("button", has_text="2 replicas").click()
    expect(chart.locator('svg [data-replicas="4"]')).to_have_count(0)
    expect(chart.locator('svg [data-replicas="2"]').first).to_be_attached()
    chart.locator("button", has_text="table").click()
    expect(chart.locator("table.mw-table")).to_have_count(0)

    # The kernel's changes, in the page.
    _run(page, 2)
    expect(before).to_have_text(["1", "101", "201", "301"])
    expect(after).to_have_text(["604"] * 4)
    expect(steps).to_have_count(4)  # 64 examples: four full steps
    expect(split.locator('td.mw-cell[data-status="EMPTY"]')).to_have_count(0)
    expect(workers.nth(0)).to_have_attribute("data-state", "ready")
    expect(workers.nth(1)).to_have_attribute("data-state", "failed")
    expect(curves.locator('polyline.mw-curve[data-panel="1"]')).to_have_count(2)
    expect(scale.locator("circle.mw-overflow")).to_have_count(2)
    expect(timeline.locator("g.mw-bar")).to_have_count(4)
    expect(live.locator(".mw-live")).to_contain_text("step 2")

    # The kernel saw the clicks and menus; a snapshot, where one is drawn, is text/html.
    _run(page, 3)
    last = page.locator(".cell").nth(3)
    expect(last.locator(".output_stdout")).to_have_text("kernel sees 5 one_device 2 False\n")
    expect(last.locator(f"{SNAPSHOT} .mw-snapshot")).to_have_count(1)
    assert last.locator(".jupyter-widgets-view").count() == 0

    # axe on the whole page: Notebook 6, every live widget, and the snapshot.
    found = axe.audit(page, axe.WIDGETS, "notebook6")
    assert not axe.problems(found), "\n".join(axe.problems(found))
