"""Drive a real JupyterLab in Chromium: the widgets must render their replicas in the page."""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "browser"
CHROMIUM = os.environ.get("MIRRORBOOK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SERVER_START_TIMEOUT = 90  # seconds
RUN_TIMEOUT = 120  # seconds for all cells, TensorFlow import included

CELLS = [
    "import mirrorkit as mk\n"
    "mk.simulate_replicas(4)\n"
    "import tensorflow as tf\n"
    "from mirrorwidgets import ReplicaGrid, TopologyDiagram\n"
    "strategy = mk.make_strategy()",
    "def step():\n"
    "    ctx = tf.distribute.get_replica_context()\n"
    "    value = tf.cast(ctx.replica_id_in_sync_group, tf.float32) * 10.0 + 1.0\n"
    "    return value, ctx.all_reduce('sum', value)\n"
    "\n"
    "before, after = strategy.run(step)\n"
    "ReplicaGrid(before, after)",
    "TopologyDiagram(strategy)",
    # The widgets with controls or a changing state, live; then every one's snapshot.
    "import mirrorwidgets as mw\n"
    "from mirrorkit.measure.benchmark import AllReduceBenchmark, record_from_times\n"
    "from mirrorwidgets._snapshot import displayed\n"
    "def grads():\n"
    "    r = tf.distribute.get_replica_context().replica_id_in_sync_group\n"
    "    return tf.range(12, dtype=tf.float32) * tf.cast(r + 1, tf.float32)\n"
    "records = [record_from_times(a, n, b, [1e-6 * n * b ** 0.5], 5e9)\n"
    "           for a in ('collective', 'one_device') for n in (2, 4) for b in (4096, 65536)]\n"
    "hook = mw.LiveTrainingHook(min_interval=0.0, budget=1.0)\n"
    "hook.step(strategy.run(lambda: tf.cast(\n"
    "    tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32) + 1.0))\n"
    "hook.finish()  # the loss chart and its table twins\n"
    "cluster = mw.ClusterView(2, addresses=['127.0.0.1:2222', '127.0.0.1:2223'])\n"
    "for worker in (0, 1):\n"
    "    cluster.update(mk.WorkerEvent(worker, 'step', step=1, metrics={'loss': 0.5}))\n"
    "cluster.flush()\n"
    "live = dict(\n"
    "    stepper=mw.AllReduceStepper(mk.replay_all_reduce(strategy, strategy.run(grads)),\n"
    "                                play_interval=100),\n"
    "    topology=mw.TopologyDiagram(strategy).widget(),\n"
    "    chart=mw.AllReduceChart(AllReduceBenchmark(tuple(records), copy_bandwidth=5e9)),\n"
    "    cluster=cluster,\n"
    "    live=hook.view,\n"
    ")\n"
    "for name, widget in live.items():\n"
    "    widget.add_class(f'mwt-{name}')\n"
    "    display(widget)\n"
    "for widget in live.values():\n"
    "    display({'text/html': displayed(widget.snapshot_html())}, raw=True)",
    "print('all cells ran')",
]


def _notebook() -> dict:
    return {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {},
                "outputs": [],
                "source": source,
            }
            for source in CELLS
        ],
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def put_notebook(base: str, token: str, name: str, cells: list[str]) -> None:
    """Save a notebook of these code cells through the server's contents API (at its root)."""
    notebook = {**_notebook(), "cells": [dict(_notebook()["cells"][0], source=c) for c in cells]}
    body = json.dumps({"type": "notebook", "format": "json", "content": notebook}).encode()
    request = urllib.request.Request(
        f"{base}/api/contents/{name}?token={token}",
        data=body,
        method="PUT",
        headers={"Content-Type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=10).close()  # noqa: S310 - localhost


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


TRANSIENT_WAIT = 30  # seconds a request may keep meeting the server's transient errors


def _get(url: str, timeout: float = 5.0, *, transient_wait: float = TRANSIENT_WAIT):
    """GET a JSON answer, waiting out the server's transient 5xx errors for a bounded time.

    jupyter_server 2.21 can answer 500 to GET /api/kernels while a kernel is starting (a
    TraitError on its still-unset last_activity); the next request succeeds.
    """
    deadline = time.monotonic() + transient_wait
    while True:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310
                return json.loads(response.read().decode())
        except urllib.error.HTTPError as error:
            if error.code < 500 or time.monotonic() > deadline:
                raise
        time.sleep(0.5)


def _require_browser_tools():
    """CI installs both; a missing one is a failure to report, not a reason to skip."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(
            "Python playwright is not installed: pip install playwright (the browser itself "
            "comes from the Debian package chromium, not from `playwright install`)."
        )
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        pytest.fail(
            f"Chromium not found at {CHROMIUM}: apt-get install chromium (Debian), or set "
            "MIRRORBOOK_CHROMIUM to a Chromium executable."
        )
    return sync_playwright


@pytest.fixture
def browser_tools():
    """Checked before JupyterLab starts, so a missing tool fails fast."""
    return _require_browser_tools()


@pytest.fixture
def jupyterlab(tmp_path):
    """A JupyterLab server on a free port with token auth, isolated dirs, killed afterwards."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "widgets.ipynb").write_text(json.dumps(_notebook()))
    with jupyter_server(tmp_path, "jupyterlab", "ServerApp", _lab_options) as server:
        yield server


def _lab_options(token: str, root: Path) -> list[str]:
    return [
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.expose_app_in_browser=True",
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]


@contextlib.contextmanager
def jupyter_server(
    tmp_path: Path, app: str, config: str, options: Callable[[str, Path], list[str]]
) -> Iterator[tuple[str, str]]:
    """A Jupyter server, ``python -m app``, with token auth and isolated dirs, killed afterwards.

    Args:
        tmp_path: Its folders and log go here; it serves ``tmp_path / "root"``.
        app: The module that runs it: ``jupyterlab``, or ``notebook`` (Notebook 6's own server).
        config: The class its address options belong to: ``ServerApp`` (jupyter_server), or
            ``NotebookApp`` (Notebook 6); they keep it on 127.0.0.1, at a free port.
        options: ``options(token, root)``: its other command-line options, which must turn
            the ``token`` on and serve ``root``.

    Yields:
        The server's base URL and its token.
    """
    token = secrets.token_hex(24)
    port = _free_port()
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
        "IPYTHONDIR": str(tmp_path / "ipython"),
        "JUPYTER_PLATFORM_DIRS": "1",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    log_path = tmp_path / f"{app}.log"
    log = log_path.open("w")
    command = [sys.executable, "-m", app, "--no-browser", "--allow-root"]
    command += [f"--{config}.ip=127.0.0.1", f"--{config}.port={port}"]
    command += [f"--{config}.port_retries=0", f"--{config}.shutdown_no_activity_timeout=600"]
    server = subprocess.Popen(
        [*command, *options(token, root)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while True:
            if server.poll() is not None:
                pytest.fail(f"{app} exited early:\n{log_path.read_text()}")
            with contextlib.suppress(OSError, ValueError):
                _get(f"{base}/api/status?token={token}", timeout=2)
                break
            if time.monotonic() > deadline:
                pytest.fail(f"{app} did not answer within {SERVER_START_TIMEOUT}s")
            time.sleep(0.5)
        yield base, token
    finally:
        with contextlib.suppress(OSError, ValueError):
            for kernel in _get(f"{base}/api/kernels?token={token}", timeout=2):
                request = urllib.request.Request(
                    f"{base}/api/kernels/{kernel['id']}?token={token}", method="DELETE"
                )
                urllib.request.urlopen(request, timeout=10).close()  # noqa: S310
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(server.pid, signal.SIGKILL)  # anything left in the server's group
        log.close()


def _kernels_idle(base: str, token: str) -> bool:
    kernels = _get(f"{base}/api/kernels?token={token}")
    return bool(kernels) and all(k["execution_state"] == "idle" for k in kernels)


@pytest.mark.browser
def test_widgets_render_four_replicas_in_jupyterlab(browser_tools, jupyterlab):
    sync_playwright = browser_tools
    base, token = jupyterlab
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=60_000)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1800})
            page.set_default_timeout(60_000)
            page.goto(f"{base}/lab/tree/widgets.ipynb?token={token}")
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
            page.wait_for_function("() => window.jupyterapp !== undefined", timeout=60_000)
            # Wait for the kernel to start, then run every cell.
            deadline = time.monotonic() + 60
            while not _kernels_idle(base, token):
                assert time.monotonic() < deadline, "kernel did not become idle within 60s"
                time.sleep(0.5)
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
            # In an output area: the cell's own source holds the same words.
            page.wait_for_selector(
                ".jp-OutputArea-output >> text=all cells ran", timeout=RUN_TIMEOUT * 1000
            )
            deadline = time.monotonic() + 30
            while not _kernels_idle(base, token):
                assert time.monotonic() < deadline, "kernel stayed busy after the last cell"
                time.sleep(0.5)
            page.wait_for_selector('.mw-cell[data-stage="after"]', timeout=30_000)
            page.wait_for_selector(".jp-OutputArea-output svg text", timeout=30_000)
            page.screenshot(path=str(ARTIFACTS / "jupyterlab_notebook.png"), full_page=True)

            errors = page.locator(
                ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
            )
            tracebacks = [
                text for text in errors.all_inner_texts() if "Traceback" in text or "Error" in text
            ]
            assert not tracebacks, tracebacks

            # ReplicaGrid: four cells before and after the all-reduce, with the values.
            before = page.locator('.jupyter-widgets .mw-cell[data-stage="before"]')
            after = page.locator('.jupyter-widgets .mw-cell[data-stage="after"]')
            assert before.count() == 4
            assert after.count() == 4
            for i in range(4):
                cell = before.nth(i)
                assert cell.get_attribute("data-replica") == str(i)
                assert cell.locator(".mw-device").inner_text() == f"CPU:{i}"
                assert cell.locator(".mw-scalar").inner_text() == str(10 * i + 1)
                reduced = after.nth(i)
                assert reduced.locator(".mw-scalar").inner_text() == "64"
                assert reduced.locator('.mw-sync[data-sync="yes"]').count() == 1
            grid = page.locator(".jupyter-widgets .mw-title").first
            assert "4 replicas" in grid.inner_text()
            before.first.locator(
                "xpath=ancestor::div[contains(@class,'widget-vbox')][1]"
            ).screenshot(path=str(ARTIFACTS / "replica_grid.png"))

            # TopologyDiagram: an SVG with the four replicas and the ring's four steps.
            svg = page.locator(".jp-OutputArea-output > .mw-topology svg").filter(
                has_text="all-reduce: collective"
            )
            assert svg.count() == 2  # the diagram, and the topology widget's snapshot
            texts = svg.first.locator("text").evaluate_all("els => els.map(e => e.textContent)")
            for i in range(4):
                assert f"replica {i}" in texts
                assert f"CPU:{i}" in texts
            assert texts.count("reduce") == 4  # ring: 0->1->2->3->0
            svg.first.screenshot(path=str(ARTIFACTS / "topology_diagram.png"))
            _check_accessibility(page)
        finally:
            browser.close()
    assert time.monotonic() - started < 180, "browser test took longer than 3 minutes"


def _check_accessibility(page) -> None:
    """Keyboard-only walks through the live widgets, then axe on the whole page (JupyterLab,
    the live widgets and their snapshots), in the page the test already has."""
    from playwright.sync_api import expect

    from tests.browser import axe, keyboard

    expect.set_options(timeout=20_000)
    try:
        root = {n: page.locator(f".mwt-{n}") for n in ("stepper", "topology", "chart")}
        # The stepper's live view shows the kernel's values: replica 1 holds 2 x [0, 1, 2]
        # at first; after the keyboard walk plays to the end, the sum of all four.
        row1 = root["stepper"].locator('.mws-view tr[data-replica="1"] td').first
        expect(row1.locator("div").first).to_have_text(re.compile(r"^\s*0\s+2\s+4\s*$"))
        walks = keyboard.walk_stepper(page, root["stepper"], expect, "Enter")
        expect(root["stepper"].locator(".mws-view .mws-frame")).to_have_attribute("data-step", "6")
        expect(row1.locator("div").first).to_have_text(re.compile(r"^\s*0\s+10\s+20\s*$"))
        expect(row1.locator(".mws-sum")).to_have_text("Σ all 4 · 4/4")
        walks += keyboard.walk_buttons(
            page,
            root["chart"],
            expect,
            ["every replica count", "2 replicas"],
            "Space",
            "2 replicas",
        )
        walks += keyboard.walk_buttons(
            page,
            root["topology"],
            expect,
            ["collective", "one_device", "hierarchical_copy"],
            "Enter",
            "all-reduce: hierarchical_copy",
        )
    finally:
        expect.set_options(timeout=None)
    axe.note("keyboard-jupyterlab", "\n".join(walks))
    _show_the_whole_notebook(page)
    found = axe.audit(page, axe.WIDGETS, "jupyterlab")
    assert not axe.problems(found), "\n".join(axe.problems(found))
    _check_the_dark_theme(page)


def _show_the_whole_notebook(page) -> None:
    """Let axe see every cell: JupyterLab 4.6.6's ``<body>`` is 0 px tall with ``overflow:
    hidden`` (its shell is positioned absolutely), and axe counts what such a box clips as
    not on screen, so its colour-contrast rule found nothing to check; the shell clips what
    lies below the window. A window as tall as the notebook, and a body as tall as the
    window, change nothing that is drawn."""
    page.add_style_tag(content="html, body { height: 100% }")
    tall = page.evaluate(
        "() => Math.ceil(document.querySelector('.jp-WindowedPanel-inner').scrollHeight)"
    )
    page.set_viewport_size({"width": 1400, "height": max(1800, tall + 400)})
    page.wait_for_function(
        "() => { document.querySelector('.jp-WindowedPanel-outer').scrollTop = 0;"
        " const cells = document.querySelectorAll('.jp-Notebook .jp-Cell');"
        " return cells[cells.length - 1].getBoundingClientRect().bottom <= innerHeight; }",
        timeout=30_000,
    )


# A themed colour of the live training view: its chart's axis labels (var(--mw-muted,...)).
AXIS_TEXT = ".mwt-live svg.mw-live-loss text"
FILL = "el => getComputedStyle(el).fill"


def _rgb(hex_colour: str) -> str:
    """``#a3abb5`` as a computed style writes it: ``rgb(163, 171, 181)``."""
    return "rgb({}, {}, {})".format(*(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)))


def _check_the_dark_theme(page) -> None:
    """Switch JupyterLab to its dark theme; the widgets' colours must follow, and axe (colour
    contrast included) must find nothing of ours, in the page the test already has."""
    from mirrorkit.report import style
    from tests.browser import axe

    started = time.monotonic()
    axis = page.locator(AXIS_TEXT).first
    assert axis.evaluate(FILL) == _rgb(style.MUTED)  # the light theme's grey
    page.evaluate(
        "() => window.jupyterapp.commands.execute("
        "'apputils:change-theme', {theme: 'JupyterLab Dark'})"
    )
    page.wait_for_function(
        "() => document.body.dataset.jpThemeLight === 'false'"
        " && document.body.dataset.jpThemeName === 'JupyterLab Dark'",
        timeout=30_000,
    )
    dark = _rgb(style.DARK["muted"])
    page.wait_for_function(
        "([sel, want]) => getComputedStyle(document.querySelector(sel)).fill === want",
        arg=[AXIS_TEXT, dark],
        timeout=30_000,
    )
    # The live view and its snapshot (text/html) both follow the theme.
    fills = page.locator("svg.mw-live-loss").evaluate_all(
        "svgs => svgs.map(svg => getComputedStyle(svg.querySelector('text')).fill)"
    )
    assert fills == [dark, dark], fills
    background = axe.focused(page, ring=".mwt-live")["background"]  # behind the live view
    assert axe.contrast(background, "rgb(255, 255, 255)") > 10, background  # a dark page
    assert axe.contrast(dark, background) >= 4.5, (dark, background)
    # axe sees what is on screen: from the live widgets' cell down (every live widget and
    # every snapshot). Above it, TopologyDiagram's own _repr_html_ (the third cell) keeps
    # light hex colours; docs/accessibility.md lists it as known not to work.
    page.locator(".mwt-stepper").evaluate("el => el.scrollIntoView({block: 'start'})")
    found = axe.audit(page, axe.WIDGETS, "jupyterlab-dark")
    assert not axe.problems(found), "\n".join(axe.problems(found))
    seconds = time.monotonic() - started
    axe.note("jupyterlab-dark", f"axis text {dark} on {background}; {seconds:.1f} s")


@contextlib.contextmanager
def _flaky_server(failures: int):
    """A local HTTP server that answers 500 `failures` times, then a JSON list."""
    import http.server
    import threading

    answers = {"left": failures}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the stdlib's name
            failing = answers["left"] != 0
            answers["left"] -= 1
            self.send_response(500 if failing else 200)
            self.end_headers()
            self.wfile.write(b"TraitError" if failing else b"[]")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api/kernels"
    finally:
        server.shutdown()
        server.server_close()


def test_transient_server_errors_are_waited_out():
    with _flaky_server(failures=3) as url:
        assert _get(url, transient_wait=10) == []


def test_a_server_that_keeps_failing_fails_within_the_bound():
    with _flaky_server(failures=-1) as url:  # never recovers
        started = time.monotonic()
        with pytest.raises(urllib.error.HTTPError):
            _get(url, transient_wait=1.5)
        assert time.monotonic() - started < 10
