"""Drive a real JupyterLab in Chromium: ClusterView must draw a failing cluster live in the page."""

from __future__ import annotations

import contextlib
import functools
import math
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import pytest

from mirrorkit.cluster import _procs
from mirrorkit.report import style
from mirrorwidgets.cluster_view import STATE_COLORS
from tests.browser import test_jupyterlab as lab_test

# The JupyterLab server and the browser-tool check, shared with the widgets' browser test.
browser_tools = lab_test.browser_tools
jupyterlab = lab_test.jupyterlab

RUN_TIMEOUT = 120  # seconds for every cell; the cluster itself takes ~5-20 s
MARKER = "mirrorkit-cluster-"  # in every supervisor's and worker's command line
LIVE = ".jp-OutputArea-output > .jupyter-widgets.widget-vbox"  # a widget view, not text/html
STDOUT = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stdout"]'

FAILED = lab_test.ARTIFACTS / "cluster_view_failed"  # .png and .html of a failing run

CELLS = [
    "import tempfile\n"
    "\n"
    "import mirrorkit as mk\n"
    "from mirrorkit.training.recipes import checkpointed_training\n"
    "from mirrorwidgets import ClusterView",
    'view = ClusterView(2, title="lab")\ndisplay(view)',
    "with tempfile.TemporaryDirectory() as tmpdir:\n"
    "    try:\n"
    "        mk.LocalCluster(2, echo=False).run(\n"
    "            checkpointed_training,\n"
    "            args=(tmpdir,),\n"
    '            kwargs={"steps": 6},\n'
    "            on_event=view.update,\n"
    "            fault=mk.KillWorker(worker=1, at_step=4),\n"
    "        )\n"
    '        print("cluster run: no worker failed")\n'
    "    except mk.WorkerFailedError as error:\n"
    '        print(f"cluster run: worker {error.worker} failed")',
    'print("all cells ran")',
]

# Installed before the cells run: each distinct list of worker states that the live widget's
# table shows, in order ("starting,starting", ...).
RECORD_STATES = """live => {
    window.__clusterStates = [];
    const record = () => {
        const rows = document.querySelectorAll(`${live} .mw-cluster-table tr.mw-worker`);
        if (!rows.length) return;
        const now = Array.from(rows, row => row.dataset.state).join(',');
        const seen = window.__clusterStates;
        if (seen.at(-1) !== now) seen.push(now);
    };
    new MutationObserver(record).observe(document.body, {subtree: true, childList: true});
}"""


# The graphviz SVG, by the <title> graphviz gives each part: box border colours, node texts,
# edges.
READ_SVG = """svg => {
    const title = g => g.querySelector(':scope > title').textContent;
    const boxes = {}, nodes = {};
    for (const g of svg.querySelectorAll('g.cluster'))
        boxes[title(g)] = g.querySelector(':scope > path, :scope > polygon').getAttribute('stroke');
    for (const g of svg.querySelectorAll('g.node'))
        nodes[title(g)] = Array.from(g.querySelectorAll('text'), t => t.textContent);
    return {boxes, nodes, edges: Array.from(svg.querySelectorAll('g.edge'), title)};
}"""


def _until(predicate, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"{what} within {seconds:g}s"
        time.sleep(0.25)


@pytest.fixture
def cluster_tmp(monkeypatch):
    """TMPDIR of this test's processes: its clusters are found by their run dirs' path.

    Requested before ``jupyterlab``, so the server and its kernel start with it, and are
    shut down before the check that no cluster process outlived the test. Short, because
    Chromium puts a socket in it (at most 107 bytes of path).
    """
    path = Path(tempfile.mkdtemp(prefix="mbcv-"))
    monkeypatch.setenv("TMPDIR", str(path))
    try:
        yield path
        marker = f"{path}/{MARKER}"
        deadline = time.monotonic() + 15
        # The kernel's warm process (not counted) ends with the kernel.
        while _procs.cluster_processes(marker) and time.monotonic() < deadline:
            time.sleep(0.25)
        leftover = _procs.cluster_processes(marker)
        for pid in leftover:
            os.kill(pid, signal.SIGKILL)
        assert not leftover, f"cluster processes outlived the test: {leftover}"
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.mark.browser
def test_cluster_view_shows_a_killed_worker_live_in_jupyterlab(
    browser_tools, cluster_tmp, jupyterlab
):
    sync_playwright = browser_tools
    base, token = jupyterlab
    lab_test.put_notebook(base, token, "cluster.ipynb", CELLS)
    lab_test.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for stale in (f"{FAILED}.png", f"{FAILED}.html"):
        Path(stale).unlink(missing_ok=True)
    started = time.monotonic()
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=lab_test.CHROMIUM, args=lab_test.CHROMIUM_ARGS, timeout=60_000
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1200})
        try:
            page.set_default_timeout(30_000)
            page.goto(f"{base}/lab/tree/cluster.ipynb?token={token}", timeout=60_000)
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
            page.wait_for_function("() => window.jupyterapp !== undefined", timeout=60_000)
            idle = functools.partial(lab_test._kernels_idle, base, token)
            _until(idle, 60, "the kernel did not become idle")
            page.evaluate(RECORD_STATES, LIVE)
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")

            # The live widget view (not the text/html snapshot), drawn before the cluster runs.
            widget = page.locator(LIVE).filter(has=page.locator(".mw-cluster-table"))
            widget.wait_for(timeout=RUN_TIMEOUT * 1000)
            stdout = page.locator(STDOUT)
            stdout.filter(has_text="all cells ran").wait_for(timeout=RUN_TIMEOUT * 1000)
            _until(idle, 30, "the kernel did not become idle after the last cell")
            row0 = widget.locator('tr.mw-worker[data-worker="0"]')
            row1 = widget.locator('tr.mw-worker[data-worker="1"]')
            widget.locator('tr.mw-worker[data-worker="1"][data-state="failed"]').wait_for()
            widget.locator('tr.mw-worker[data-worker="0"][data-state="stopped"]').wait_for()
            chart = widget.locator("svg.mw-cluster-loss")
            chart.wait_for(state="visible")
            widget.scroll_into_view_if_needed()
            widget.screenshot(path=str(lab_test.ARTIFACTS / "cluster_view.png"))

            ran = stdout.filter(has_text="cluster run:").inner_text().strip()
            assert ran == "cluster run: worker 1 failed", ran
            errors = page.locator(
                ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
            )
            tracebacks = [t for t in errors.all_inner_texts() if "Traceback" in t or "Error" in t]
            assert not tracebacks, tracebacks
            assert widget.count() == 1
            assert page.locator(".mw-snapshot").count() == 0, "the static snapshot is shown"

            # The page followed the run: drawn before the failure, then worker 1 failed while
            # worker 0 still ran, then the launcher stopped worker 0.
            seen = page.evaluate("() => window.__clusterStates")
            assert "failed" not in seen[0], seen
            assert {"ready,failed", "training,failed"} & set(seen), seen
            assert seen[-1] == "stopped,failed", seen

            # Header: the title and one worker per final state.
            header = widget.locator(".mw-title").inner_text()
            assert "lab" in header and "2 workers" in header, header
            assert widget.locator('.mw-count[data-state="failed"]').inner_text() == "1 failed"
            assert widget.locator('.mw-count[data-state="stopped"]').inner_text() == "1 stopped"

            # Table: worker 1 died after step 4, killed; both show the last loss reported.
            assert row1.locator(".mw-state").inner_text() == "failed"
            assert row1.locator(".mw-step").inner_text() == "4"
            assert "killed by SIGKILL" in row1.inner_text()
            assert row0.locator(".mw-state").inner_text() == "stopped"
            assert "stopped by the launcher" in row0.inner_text()
            for row in (row0, row1):
                loss = float(row.locator(".mw-loss").inner_text())
                assert math.isfinite(loss) and loss > 0, loss

            # Topology: one box per worker, coloured by its state, and the ring between them.
            svg = widget.locator("svg").filter(has_text="ring all-reduce across 2 workers")
            assert svg.count() == 1
            drawn = svg.evaluate(READ_SVG)
            for worker, state in ((0, "stopped"), (1, "failed")):
                # The page's theme decides the colour; the light one is the fallback.
                themed = style.themed(STATE_COLORS[state])
                assert drawn["boxes"][f"cluster_w{worker}"] == themed, drawn
                assert state in drawn["nodes"][f"w{worker}"], drawn
            assert sorted(drawn["edges"]) == ["w0->w1", "w1->w0"], drawn

            # Loss chart: inline SVG, one line per worker, shown.
            assert chart.bounding_box()["width"] >= 200
            assert chart.bounding_box()["height"] > 50
            assert chart.locator(".mw-series").count() >= 2
        except Exception:  # keep what the page showed, for the failure's report
            with contextlib.suppress(Exception):
                page.screenshot(path=f"{FAILED}.png", full_page=True)
                FAILED.with_suffix(".html").write_text(page.content())
            raise
        finally:
            browser.close()
    elapsed = time.monotonic() - started
    assert elapsed < 180, f"browser test took {elapsed:.0f}s, longer than 3 minutes"
    marker = f"{cluster_tmp}/{MARKER}"
    _until(lambda: not _procs.cluster_processes(marker), 15, "the cluster's processes did not end")
