"""Open every page of the built book in Chromium, offline: no errors, output lines wrap, and
axe-core finds no critical or serious violation in the book's own markup on any page."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser import axe, test_jupyterlab as lab_test
from tests.browser.lite_page import serve

pytestmark = [pytest.mark.browser, pytest.mark.book]

VIEWPORT = {"width": 1280, "height": 900}  # a laptop: the sidebar and the content side by side
SEARCH_QUERY = "MirroredStrategy"  # search.html also runs a search, as a reader would
# The stored text outputs: print() streams, repr()s (text/plain) and tracebacks.
OUTPUT_PRE = "div.cell_output div.output pre"
CLUSTER_START_CHAPTER = "06_multi_worker.html"
CLUSTER_START_CELL = "except mk.ClusterStartError"  # in the source of the cell that prints it
STYLESHEET = "_static/mirrorbook.css"  # book/_static/mirrorbook.css: output lines wrap
REDIRECT = re.compile(r'<meta http-equiv="Refresh" content="0; url=([^"]+)"', re.IGNORECASE)

# Each stored output <pre>: its text, its widths and how many lines its text takes.
MEASURE_ALL = """pres => pres.map(pre => {
    const style = getComputedStyle(pre);
    const padding = parseFloat(style.paddingTop) + parseFloat(style.paddingBottom);
    const height = pre.clientHeight - padding;
    return {
        text: pre.textContent.trim(),
        scrollWidth: pre.scrollWidth,
        clientWidth: pre.clientWidth,
        lines: Math.round(height / parseFloat(style.lineHeight)),
    };
})"""
MEASURE = f"selector => ({MEASURE_ALL})(Array.from(document.querySelectorAll(selector)))"


@pytest.fixture(scope="module")
def book_server(book_html: Path) -> Iterator[str]:
    """The built book over http on 127.0.0.1 (a free port), stopped afterwards."""
    with serve(book_html) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module: the Debian one, as in the JupyterLab tests."""
    sync_playwright = lab_test._require_browser_tools()
    with sync_playwright() as p:
        chromium = p.chromium.launch(
            executable_path=lab_test.CHROMIUM, args=lab_test.CHROMIUM_ARGS, timeout=60_000
        )
        try:
            yield chromium
        finally:
            chromium.close()


@contextlib.contextmanager
def offline_page(browser, base: str) -> Iterator[tuple]:
    """A page in a fresh context (a first visit: empty localStorage) that may reach only `base`.

    Yields the page and the list of problems seen on it so far: console errors and warnings,
    uncaught exceptions, failed requests, error responses and requests that left 127.0.0.1.
    """
    problems: list[str] = []
    context = browser.new_context(viewport=VIEWPORT)
    try:

        def only_the_book(route):
            if route.request.url.startswith(f"{base}/"):
                route.continue_()
            else:
                problems.append(f"off-host request (aborted): {route.request.url}")
                route.abort()

        def on_console(message):
            if message.type in ("error", "warning"):
                problems.append(f"console {message.type}: {message.text} ({message.location})")

        def on_request_failed(request):
            if request.url.startswith(f"{base}/"):  # off-host ones are reported above
                problems.append(f"failed request: {request.url} ({request.failure})")

        def on_response(response):
            if response.status >= 400:
                problems.append(f"HTTP {response.status}: {response.url}")

        context.route("**/*", only_the_book)
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.on("console", on_console)
        page.on("pageerror", lambda error: problems.append(f"uncaught exception: {error}"))
        page.on("requestfailed", on_request_failed)
        page.on("response", on_response)
        yield page, problems
    finally:
        context.close()


def _open(page, base: str, html: Path, name: str, query: str = "") -> None:
    """Load a page of the book and everything it starts, following a redirect page to its end."""
    page.goto(f"{base}/{name}{query}", wait_until="load")
    redirect = REDIRECT.search((html / name).read_text())  # index.html -> the landing page
    if redirect:
        page.wait_for_url(f"{base}/{redirect.group(1)}")
    page.wait_for_load_state("networkidle")


def test_every_page_works_offline_without_errors(book_html, book_server, browser):
    pages = sorted(path.name for path in book_html.glob("*.html"))
    assert {"index.html", "search.html", "genindex.html", CLUSTER_START_CHAPTER} <= set(pages)
    report = []
    for name in pages:
        with offline_page(browser, book_server) as (page, problems):
            if name == "search.html":
                _open(page, book_server, book_html, name, f"?q={SEARCH_QUERY}")
                hits = page.locator("#search-results ul.search li")
                hits.first.wait_for()  # the search ran, on the local index
                assert hits.count() > 0, f"search.html found nothing for {SEARCH_QUERY}"
            else:
                _open(page, book_server, book_html, name)
            # The theme's script ran and settled on a valid mode at this first visit.
            mode = page.evaluate("() => ({...document.documentElement.dataset})")
            if mode.get("mode") != "auto" or mode.get("theme") not in ("light", "dark"):
                problems.append(f"colour mode not set: <html> data {mode}")
            # Accessibility, in the page already open: axe on the whole document.
            problems += axe.problems(axe.audit(page, axe.BOOK, f"book-{Path(name).stem}"))
            report += [f"{name}: {problem}" for problem in problems]
    assert not report, "\n".join(report)


def test_long_output_lines_wrap(book_html, book_server, browser, manifest):
    chapters = [f"{chapter['path'].stem}.html" for chapter in manifest["chapters"]]
    assert CLUSTER_START_CHAPTER in chapters
    report = []
    for name in chapters:
        with offline_page(browser, book_server) as (page, _):
            _open(page, book_server, book_html, name)
            sheets = page.evaluate("() => Array.from(document.styleSheets, s => s.href || '')")
            if not any(href.split("?")[0].endswith(f"/{STYLESHEET}") for href in sheets):
                report.append(f"{name}: does not load {STYLESHEET}")
            outputs = page.evaluate(MEASURE, OUTPUT_PRE)
            assert outputs, f"{name} shows no stored outputs"
            report += [
                f"{name}: output wider than its box ({pre['scrollWidth']} > "
                f"{pre['clientWidth']} px): {pre['text'][:80]!r}"
                for pre in outputs
                if pre["scrollWidth"] > pre["clientWidth"]
            ]
            if name != CLUSTER_START_CHAPTER:
                continue
            # The ClusterStartError explanation: one line of ~360 characters, which must wrap.
            cell = page.locator("div.cell").filter(
                has=page.locator("div.cell_input", has_text=CLUSTER_START_CELL)
            )
            measured = cell.locator(OUTPUT_PRE).evaluate_all(MEASURE_ALL)
            assert len(measured) == 1, f"{name}: {len(measured)} outputs after {CLUSTER_START_CELL}"
            error = measured[0]
            assert "the cluster did not form" in error["text"], error["text"]
            if error["scrollWidth"] > error["clientWidth"] or error["lines"] < 2:
                report.append(f"{name}: the ClusterStartError explanation does not wrap: {error}")
            lab_test.ARTIFACTS.mkdir(parents=True, exist_ok=True)
            cell.screenshot(path=str(lab_test.ARTIFACTS / "book_cluster_start_error.png"))
    assert not report, "\n".join(report)


STEPPER_CHAPTER = "05_where_the_time_goes.html"
STEPPER = ".mw-stepper.mw-snapshot"  # AllReduceStepper's stored text/html snapshot


def test_the_all_reduce_stepper_steps_in_the_built_book(book_html, book_server, browser):
    """No kernel in a built book: the stepper's frames switch by HTML and CSS alone."""
    with offline_page(browser, book_server) as (page, problems):
        _open(page, book_server, book_html, STEPPER_CHAPTER)
        stepper = page.locator(STEPPER)
        assert stepper.count() == 1, f"{STEPPER_CHAPTER} should hold one stepper snapshot"

        def shown() -> int:
            visible = stepper.locator(".mws-frame:visible")
            assert visible.count() == 1, "exactly one frame is visible"
            return int(visible.get_attribute("data-step"))

        assert shown() == 0
        for expected in (1, 2, 3):
            stepper.locator(".mws-frame:visible .mws-next").click()
            assert shown() == expected
        assert "reduce-scatter" in stepper.locator(".mws-frame:visible .mws-what").inner_text()
        stepper.locator(".mws-frame:visible .mws-prev").click()
        assert shown() == 2
        _walk_the_stepper_by_keyboard(page, shown)
        lab_test.ARTIFACTS.mkdir(parents=True, exist_ok=True)
        stepper.screenshot(path=str(lab_test.ARTIFACTS / "stepper_book.png"))
        assert not problems, "\n".join(problems)


TAB_LIMIT = 400  # presses of Tab from the top of the page: the stepper must come before


def _walk_the_stepper_by_keyboard(page, shown) -> None:
    """From the top of the page, Tab alone reaches the stepper's step group; the arrow keys
    step it, and the shown step's navigation bar carries a focus ring of 2 px at 3:1."""
    # The walk starts where a reader's does: the top of the document.
    page.evaluate("() => { const b = document.body; b.tabIndex = -1; b.focus(); }")
    presses = 0
    while not page.evaluate("() => document.activeElement.classList.contains('mws-radio')"):
        presses += 1
        assert presses <= TAB_LIMIT, f"{TAB_LIMIT} presses of Tab never reached the stepper"
        page.keyboard.press("Tab")
    seen = axe.focused(page, f"{STEPPER} .mws-nav")
    assert seen["name"].startswith("step 2"), seen  # the checked step: the group's stop
    assert not axe.ring_problems(seen), axe.ring_problems(seen)
    page.keyboard.press("ArrowRight")
    assert shown() == 3
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    assert shown() == 1
    assert axe.focused(page)["name"].startswith("step 1")
    page.keyboard.press("Tab")  # and out again: the group is one stop
    assert not page.evaluate("() => document.activeElement.classList.contains('mws-radio')")
    axe.note(
        "keyboard-book-stepper",
        f"{presses} presses of Tab reach the step group; "
        "ArrowRight 2->3, ArrowLeft twice 3->1, Tab leaves the group; ring " + str(seen),
    )
