"""Drive the browser lab site in Chromium with every host but 127.0.0.1 refused.

Used by tests/browser/test_lite_site.py and bench/lite_load.py: a static server for the built
book (test_book_pages.py serves it too), a Chromium that cannot reach the network, and the steps
of opening a lab and running it.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from tests.browser.test_jupyterlab import CHROMIUM, CHROMIUM_ARGS

# Any host name but 127.0.0.1 fails to resolve, and a request route refuses other addresses:
# the site must load everything from itself.
OFFLINE_ARGS = [*CHROMIUM_ARGS, "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"]
KERNEL_IDLE = """() => {
    const widget = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const session = widget && widget.sessionContext && widget.sessionContext.session;
    return !!(session && session.kernel && session.kernel.status === 'idle'
              && !widget.sessionContext.isRestarting);
}"""
ALL_RAN = """() => {
    const widget = window.jupyterapp.shell.currentWidget;
    const code = widget.content.widgets.filter(cell => cell.model.type === 'code');
    return code.every(cell => cell.model.executionCount)
        && widget.sessionContext.session.kernel.status === 'idle';
}"""
# Per code cell: its outputs' text, and whether one is an error (a traceback).
OUTPUTS = """() => window.jupyterapp.shell.currentWidget.content.widgets
    .filter(cell => cell.model.type === 'code')
    .map(cell => ({
        text: [...cell.node.querySelectorAll('.jp-OutputArea-output')].map(o => o.innerText),
        error: cell.model.outputs.toJSON().some(o => o.output_type === 'error'),
        errorText: cell.model.outputs.toJSON().filter(o => o.output_type === 'error')
            .map(o => o.ename + ': ' + o.evalue),
    }))"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@contextlib.contextmanager
def serve(folder: Path) -> Iterator[str]:
    """A folder over http on 127.0.0.1 (a free port); its address, stopped afterwards."""
    handler = functools.partial(_Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="lite-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@contextlib.contextmanager
def offline_browser(playwright) -> Iterator:
    """A Chromium context that reaches only 127.0.0.1; ``context.refused`` lists the rest."""
    browser = playwright.chromium.launch(
        executable_path=CHROMIUM, args=OFFLINE_ARGS, timeout=60_000
    )
    try:
        context = browser.new_context(viewport={"width": 1280, "height": 1000})
        context.refused = []

        def route(route):
            url = route.request.url
            if url.startswith(("http://127.0.0.1:", "data:", "blob:")):
                return route.continue_()
            context.refused.append(url)
            return route.abort()

        context.route("**/*", route)
        yield context
    finally:
        browser.close()


def open_lab(page, url: str, *, timeout: float = 120) -> float:
    """Open a lab's page and wait until its kernel is idle; the seconds that took."""
    started = time.monotonic()
    page.goto(url)
    page.wait_for_function(KERNEL_IDLE, timeout=timeout * 1000, polling=100)
    return time.monotonic() - started


def run_all(page, *, timeout: float = 120) -> list[dict]:
    """Run every cell of the open lab; each code cell's outputs (see :data:`OUTPUTS`)."""
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(ALL_RAN, timeout=timeout * 1000, polling=200)
    return page.evaluate(OUTPUTS)


# Put new text in the lab's first code cell (its settings) and run every cell again; done when
# the kernel is idle and every code cell ran again, or one ran into an error (Run All stops
# there). Each code cell's outputs, as OUTPUTS gives them.
RERUN = """async ([source]) => {
    const widget = window.jupyterapp.shell.currentWidget;
    const code = widget.content.widgets.filter(cell => cell.model.type === 'code');
    const before = Math.max(0, ...code.map(cell => cell.model.executionCount || 0));
    if (source !== null) code[0].model.sharedModel.setSource(source);
    await window.jupyterapp.commands.execute('notebook:run-all-cells');
    return before;
}"""
RERAN = """([before]) => {
    const widget = window.jupyterapp.shell.currentWidget;
    const code = widget.content.widgets.filter(cell => cell.model.type === 'code');
    const again = cell => (cell.model.executionCount || 0) > before;
    const failed = cell => again(cell)
        && cell.model.outputs.toJSON().some(o => o.output_type === 'error');
    return widget.sessionContext.session.kernel.status === 'idle'
        && (code.every(again) || code.some(failed));
}"""


def first_code_source(page) -> str:
    """The text of the open lab's first code cell."""
    return page.evaluate(
        """() => window.jupyterapp.shell.currentWidget.content.widgets
            .filter(cell => cell.model.type === 'code')[0].model.sharedModel.getSource()"""
    )


def run_again(page, source: str | None = None, *, timeout: float = 120) -> tuple[list, float]:
    """Run the open lab again, its first code cell's text replaced by ``source`` if given;
    each code cell's outputs (see :data:`OUTPUTS`) and the seconds the run took."""
    started = time.monotonic()
    before = page.evaluate(RERUN, [source])
    page.wait_for_function(RERAN, arg=[before], timeout=timeout * 1000, polling=100)
    return page.evaluate(OUTPUTS), time.monotonic() - started
