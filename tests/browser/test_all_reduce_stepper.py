"""AllReduceStepper in a real Chromium: the static snapshot steps without a kernel (and without
JavaScript or network), and the live widget steps in JupyterLab."""

from __future__ import annotations

import contextlib
import functools
import time

import pytest
import tensorflow as tf

import mirrorkit as mk
from mirrorwidgets import AllReduceStepper
from mirrorwidgets._all_reduce_stepper_render import cell_number
from tests.browser import test_jupyterlab as lab_test

# The JupyterLab server and the browser-tool check, shared with the widgets' browser test.
browser_tools = lab_test.browser_tools
jupyterlab = lab_test.jupyterlab

STATIC_SHOT = lab_test.ARTIFACTS / "stepper_static.png"
LAB_SHOT = lab_test.ARTIFACTS / "stepper_jupyterlab.png"
FAILED = lab_test.ARTIFACTS / "stepper_failed"  # .png and .html of a failing run
RUN_TIMEOUT = 120  # seconds for every cell, TensorFlow's import included
LIVE = ".jp-OutputArea-output .jupyter-widgets.widget-vbox"  # a widget view, not text/html

# Every cell's text, one frame: the cell's first <div> holds its numbers, one per line.
READ_GRID = """frame => Array.from(frame.querySelectorAll('tr[data-replica]'), row =>
    Array.from(row.querySelectorAll('td'), cell => cell.querySelector('div').innerText.trim()))"""


def _expected_grid(replay, step: int, shown: int = 3) -> list[list[str]]:
    buffers = replay.buffers(step)
    return [
        [
            "\n".join(cell_number(x) for x in buffer[lo : min(lo + shown, hi)].tolist())
            for lo, hi in replay.chunk_bounds
        ]
        for buffer in buffers
    ]


@contextlib.contextmanager
def _kept_on_failure(page):
    """On a failure, keep what the page showed for the report."""
    try:
        yield
    except Exception:
        with contextlib.suppress(Exception):
            page.screenshot(path=f"{FAILED}.png", full_page=True)
            FAILED.with_suffix(".html").write_text(page.content())
        raise


@pytest.mark.browser
def test_static_snapshot_steps_without_a_kernel(browser_tools, strategy, tmp_path):
    sync_playwright = browser_tools
    mk.make_reproducible(0)
    replay = mk.replay_all_reduce(strategy, strategy.run(lambda: tf.random.normal([10])))
    last = len(replay.schedule.steps)
    # Two steppers on one page: stepping one must leave the other alone.
    first, second = (
        AllReduceStepper(replay).snapshot_html(),
        AllReduceStepper(replay).snapshot_html(),
    )
    page_file = tmp_path / "stepper.html"
    page_file.write_text(
        '<!doctype html><html><head><meta charset="utf-8"><title>stepper</title></head>'
        f"<body>{first}<hr>{second}</body></html>"
    )
    lab_test.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    requested = []

    def only_the_file(route):
        requested.append(route.request.url)
        if route.request.url == page_file.as_uri():
            route.continue_()
        else:
            route.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=lab_test.CHROMIUM, args=lab_test.CHROMIUM_ARGS, timeout=60_000
        )
        try:
            # No JavaScript in the page at all: stepping is HTML and CSS alone.
            context = browser.new_context(
                viewport={"width": 1100, "height": 900}, java_script_enabled=False
            )
            context.route("**/*", only_the_file)
            page = context.new_page()
            page.set_default_timeout(30_000)
            with _kept_on_failure(page):
                page.goto(page_file.as_uri())
                one, other = page.locator(".mw-stepper.mw-snapshot").all()

                def shown(stepper) -> int:
                    visible = stepper.locator(".mws-frame:visible")
                    assert visible.count() == 1, "exactly one frame is visible"
                    return int(visible.get_attribute("data-step"))

                assert shown(one) == 0 and shown(other) == 0
                for _ in range(3):
                    one.locator(".mws-frame:visible .mws-next").click()
                assert shown(one) == 3
                frame = one.locator(".mws-frame:visible")
                assert frame.evaluate(READ_GRID) == _expected_grid(replay, 3)
                assert "step 3 of 6" in frame.locator(".mws-what").inner_text()
                assert shown(other) == 0  # the other stepper did not move
                one.screenshot(path=str(STATIC_SHOT))

                one.locator(".mws-frame:visible .mws-prev").click()
                assert shown(one) == 2
                assert one.locator(".mws-frame:visible").evaluate(READ_GRID) == _expected_grid(
                    replay, 2
                )
                # A step number jumps there; the last frame shows the replay's verdict.
                one.locator(".mws-frame:visible .mws-nav label", has_text=str(last)).click()
                assert shown(one) == last
                verdict = one.locator(".mws-frame:visible .mws-verdict").inner_text()
                assert verdict.startswith(("SAME:", "SAME SUM:")), verdict
                assert one.locator(".mws-frame:visible .mws-next.mws-off").count() == 1
                other.locator(".mws-frame:visible .mws-next").click()
                assert shown(other) == 1 and shown(one) == last
        finally:
            browser.close()
    assert requested == [page_file.as_uri()], requested  # nothing fetched but the page


CELLS = [
    "import mirrorkit as mk\n"
    "mk.simulate_replicas(4)\n"
    "import tensorflow as tf\n"
    "from mirrorwidgets import AllReduceStepper\n"
    "strategy = mk.make_strategy()",
    "def grads():\n"
    "    r = tf.distribute.get_replica_context().replica_id_in_sync_group\n"
    "    return tf.range(12, dtype=tf.float32) * tf.cast(r + 1, tf.float32)\n"
    "\n"
    "stepper = AllReduceStepper(mk.replay_all_reduce(strategy, strategy.run(grads)))\n"
    "stepper",
    'print("all cells ran")',
]


def _until(predicate, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"{what} within {seconds:g}s"
        time.sleep(0.25)


@pytest.mark.browser
def test_next_button_steps_the_live_widget_in_jupyterlab(browser_tools, jupyterlab):
    sync_playwright = browser_tools
    base, token = jupyterlab
    lab_test.put_notebook(base, token, "stepper.ipynb", CELLS)
    lab_test.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=lab_test.CHROMIUM, args=lab_test.CHROMIUM_ARGS, timeout=60_000
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1200})
        try:
            page.set_default_timeout(30_000)
            with _kept_on_failure(page):
                page.goto(f"{base}/lab/tree/stepper.ipynb?token={token}", timeout=60_000)
                page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
                page.wait_for_function("() => window.jupyterapp !== undefined", timeout=60_000)
                idle = functools.partial(lab_test._kernels_idle, base, token)
                _until(idle, 60, "the kernel did not become idle")
                page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
                page.locator(".jp-OutputArea-output", has_text="all cells ran").wait_for(
                    timeout=RUN_TIMEOUT * 1000
                )
                _until(idle, 30, "the kernel did not become idle after the last cell")
                errors = page.locator(
                    ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
                )
                tracebacks = [
                    t for t in errors.all_inner_texts() if "Traceback" in t or "Error" in t
                ]
                assert not tracebacks, tracebacks

                # The live widget view, not the text/html snapshot.
                widget = page.locator(LIVE).filter(has=page.locator(".mws-view"))
                widget.wait_for()
                assert widget.count() == 1
                assert page.locator(".mw-snapshot").count() == 0, "the snapshot is shown"
                view = widget.locator(".mws-view")
                view.locator('.mws-frame[data-step="0"]').wait_for()
                row1 = view.locator('tr[data-replica="1"] td').first
                assert row1.locator("div").first.inner_text().split() == ["0", "2", "4"]

                widget.locator("button.mws-next").click()
                # Ring step 1: replica 0 sends chunk 0 to replica 1, which adds it to its own:
                # 1 x [0, 1, 2] + 2 x [0, 1, 2].
                view.locator('.mws-frame[data-step="1"]').wait_for()
                assert row1.locator("div").first.inner_text().split() == ["0", "3", "6"]
                assert row1.locator(".mws-sum").inner_text() == "Σ 0,1 · 2/4"
                assert "mws-to" in (row1.get_attribute("class") or "")
                assert widget.locator(".widget-readout").inner_text().strip() == "1"
                widget.locator("button.mws-next").click()
                view.locator('.mws-frame[data-step="2"]').wait_for()
                # JupyterLab asks about its news in a toast that may cover the widget.
                with contextlib.suppress(Exception):
                    page.get_by_role("button", name="No", exact=True).click(timeout=2_000)
                    page.locator(".Toastify__toast").first.wait_for(state="detached", timeout=5_000)
                widget.scroll_into_view_if_needed()
                widget.screenshot(path=str(LAB_SHOT))
                widget.locator("button.mws-previous").click()
                view.locator('.mws-frame[data-step="1"]').wait_for()
        finally:
            browser.close()
    elapsed = time.monotonic() - started
    assert elapsed < 180, f"browser test took {elapsed:.0f}s, longer than 3 minutes"
