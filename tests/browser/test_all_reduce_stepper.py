"""AllReduceStepper's static snapshot in a real Chromium: it steps without a kernel (and without
JavaScript or network), by mouse and by keyboard alone, and axe finds nothing critical or
serious in it. The live widget steps in JupyterLab's one session (test_jupyterlab.py)."""

from __future__ import annotations

import contextlib

import pytest
import tensorflow as tf

import mirrorkit as mk
from mirrorwidgets import AllReduceStepper
from mirrorwidgets._all_reduce_stepper_render import cell_number
from tests.browser import axe, test_jupyterlab as lab_test

browser_tools = lab_test.browser_tools

STATIC_SHOT = lab_test.ARTIFACTS / "stepper_static.png"
FAILED = lab_test.ARTIFACTS / "stepper_failed"  # .png and .html of a failing run

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
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>stepper</title></head>'
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
            context.close()
            # The keyboard walk reads the focus and axe runs in the page: both need
            # JavaScript, so the same file once more, in a page that runs it.
            context = browser.new_context(viewport={"width": 1100, "height": 900})
            context.route("**/*", only_the_file)
            page = context.new_page()
            page.goto(page_file.as_uri())
            one, other = page.locator(".mw-stepper.mw-snapshot").all()
            _walk_by_keyboard(page, one, other, shown, last)
            found = axe.audit(page, axe.WIDGETS, "snapshot-stepper")
            assert not axe.problems(found), axe.problems(found)
        finally:
            browser.close()
    assert set(requested) == {page_file.as_uri()}, requested  # nothing fetched but the page


def _walk_by_keyboard(page, one, other, shown, last: int) -> None:
    """Tab reaches the first stepper's step group (its checked step), the arrow keys step it
    and name the step, with a 2 px focus ring at 3:1; Tab moves on to the second stepper."""
    page.keyboard.press("Tab")
    seen = axe.focused(page, ".mw-stepper.mw-snapshot .mws-nav")
    assert seen["name"] == f"step 0 of {last}: inputs: nothing sent yet", seen
    assert not axe.ring_problems(seen), axe.ring_problems(seen)
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert shown(one) == 2
    assert axe.focused(page)["name"].startswith(f"step 2 of {last}: reduce-scatter: ")
    page.keyboard.press("Tab")
    assert axe.focused(page)["name"].startswith(f"step 0 of {last}"), "the second stepper next"
    page.keyboard.press("ArrowLeft")  # from the first step, round to the last
    assert shown(other) == last and shown(one) == 2
    axe.note("keyboard-snapshot-stepper", f"Tab -> {seen['name']!r}; ring {seen}")
