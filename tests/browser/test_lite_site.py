"""The browser lab site, built beside the HTML book, in Chromium with the network refused.

Served from 127.0.0.1, every other host refused: each lab's kernel starts from the site's own
Pyodide and wheels, the lab runs top to bottom without an error, the chapter pages link to
their labs, and the ring all-reduce stepper shows the values of its next step. How fast the
page becomes usable is a benchmark (bench/lite_load.py), not a test.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from bookbuild.lite.contents import chapters_with_labs, lab_url
from bookbuild.lite.launcher import launch_url
from bookbuild.lite.links import LINK_CLASS
from bookbuild.manifest import load_manifest
from mirrorkit.checks.lab_settings import SETTINGS
from tests.book.test_browser_labs import CHARTED
from tests.browser import axe
from tests.browser.lite_page import (
    first_code_source,
    offline_browser,
    open_lab,
    run_again,
    run_all,
    serve,
)
from tests.browser.test_jupyterlab import ARTIFACTS, _require_browser_tools

pytestmark = [pytest.mark.browser, pytest.mark.book]

LABS = chapters_with_labs(load_manifest())
RING_VALUES = "05_ring_values.json"  # chapter 5's stored values, beside its lab
PHONE = {"width": 390, "height": 844}
LIVE = ".jp-OutputArea-output .jupyter-widgets.widget-vbox"  # a widget view, not text/html


@pytest.fixture(scope="module")
def site(book_html) -> Iterator[str]:
    """The book with its lab site, over http on 127.0.0.1."""
    from bookbuild import built
    from bookbuild.lite.site import build_lite

    if built.shared("html") is None:  # the shared build has its lab site already
        build_lite(book_html)
    with serve(book_html) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    """One offline Chromium context for the module; its refused requests are checked."""
    sync_playwright = _require_browser_tools()
    with sync_playwright() as playwright, offline_browser(playwright) as context:
        yield context
        assert not context.refused, f"the site asked for other hosts: {context.refused}"


@pytest.mark.parametrize("chapter", LABS, ids=lambda chapter: chapter["browser_lab"])
def test_each_lab_runs_top_to_bottom_in_the_browser(site, browser, chapter):
    page = browser.new_page()
    try:
        open_lab(page, f"{site}/{lab_url(chapter)}")
        cells = run_all(page)
        errors = [(k, cell["errorText"]) for k, cell in enumerate(cells) if cell["error"]]
        assert not errors, errors
        assert any(cell["text"] for cell in cells), "the lab showed nothing"
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"lite_{chapter['browser_lab_path'].stem}.png"))
        # Where the chapter shows a chart, the lab draws it as SVG in Pyodide (issue 51).
        charted = chapter["browser_lab_path"].stem in CHARTED
        assert page.locator(".mw-lab-chart svg").count() == charted, "the chapter's chart"
        if chapter["file"].startswith("05_"):  # the ring's lab: its stepper, stepped once
            _ring_stepper_steps_once(page, chapter)
        # axe on the lab as run: what the project draws in it breaks no serious rule. The
        # app's own findings (JupyterLab's, ipywidgets') are kept in the artifacts; the ones
        # docs/accessibility.md does not list yet are for it to name, not for this test.
        found = axe.audit(page, axe.WIDGETS, f"lite-{chapter['browser_lab_path'].stem}")
        ours = [p for p in axe.problems(found) if not p.startswith("upstream ")]
        assert not ours, ours
        _refuses_and_bounds(page, chapter["browser_lab_path"].stem)
    finally:
        page.close()


def _with(source: str, values: dict) -> str:
    for name, text in values.items():
        source = re.sub(rf"^{name} = [^#\n]*", f"{name} = {text} ", source, count=1, flags=re.M)
    return source


def _refuses_and_bounds(page, lab: str) -> None:
    """A sample of the lab's bad-input table in Pyodide (tests/book/test_browser_labs.py runs it
    all in CPython), then the lab at its largest accepted values: it runs to the end, but for
    a slider that refuses a value it cannot show. Its seconds go to the artifacts (the 5 s
    target is bench/lite_load.py's to time, not a test's)."""
    settings = SETTINGS[lab]
    source = first_code_source(page)
    first = settings[0]
    cells, _ = run_again(page, _with(source, {first.name: repr(str(first.example))}))
    assert cells[0]["error"], f"{first.name} as text was not refused: {cells[0]['text']}"
    refusal = cells[0]["errorText"][0]  # Pyodide's kernel names the class: <class 'TypeError'>
    assert "TypeError" in refusal and f": {first.name} must be " in refusal, refusal
    largest = {s.name: repr(s.maximum) for s in settings}
    cells, seconds = run_again(page, _with(source, largest), timeout=300)
    errors = [e for cell in cells for e in cell["errorText"] if "what the slider shows" not in e]
    assert not errors, errors
    record = ARTIFACTS / "lite_largest_values_seconds.json"
    times = json.loads(record.read_text()) if record.is_file() else {}
    record.write_text(json.dumps({**times, lab: round(seconds, 2)}, indent=1))


def test_each_chapter_page_opens_its_lab_in_a_new_tab(site, browser):
    page = browser.new_page()
    try:
        for chapter in LABS:
            page.set_viewport_size(PHONE)
            page.goto(f"{site}/{Path(chapter['file']).with_suffix('.html').name}")
            # On a phone the page does not scroll sideways (book/_static/phone.css).
            wide = page.evaluate("() => document.documentElement.scrollWidth")
            assert wide <= PHONE["width"], f"{chapter['file']}: {wide} px wide on a phone"
            link = page.locator(f"p.{LINK_CLASS} a")
            assert link.count() == 1, chapter["file"]
            with browser.expect_page() as opened:
                link.click()
            lab = opened.value
            try:
                # Through the launcher, which finds no saved copy and opens the book's version.
                lab.wait_for_url(f"{site}/{lab_url(chapter)}", timeout=60_000)
                # The lab's title, then its links cell: back to the chapter, and to Colab.
                title = lab.locator(".jp-MarkdownCell .jp-RenderedMarkdown h1").first
                assert title.inner_text(timeout=60_000).strip()
                # The links cell renders after the title, later on a slow machine: wait for it.
                colab = lab.locator('.jp-RenderedMarkdown a[href^="https://colab.research"]')
                colab.first.wait_for(timeout=60_000)
                hrefs = lab.locator(".jp-RenderedMarkdown a").evaluate_all(
                    "anchors => anchors.map(a => a.href)"
                )
                assert any(h.endswith(f"/book/{chapter['file']}") for h in hrefs), hrefs
                assert any(h.startswith("https://colab.research.google.com/") for h in hrefs)
                if chapter is LABS[0]:
                    _a_saved_copy_is_kept_and_the_book_opens_fresh(site, lab, chapter)
            finally:
                lab.close()
    finally:
        page.close()


FIRST_CODE = """() => window.jupyterapp.shell.currentWidget.content.widgets
    .filter(cell => cell.model.type === 'code')[0].model.sharedModel"""


def _first_code(lab) -> str:
    """The first code cell's source, once the notebook's content has arrived (the cell is
    drawn before its text: read too early, it is empty)."""
    lab.locator(".jp-CodeCell").first.wait_for(timeout=60_000)
    lab.wait_for_function(f"() => ({FIRST_CODE})().getSource().length > 0", timeout=60_000)
    return lab.evaluate(f"() => ({FIRST_CODE})().getSource()")


def _a_saved_copy_is_kept_and_the_book_opens_fresh(site, lab, chapter) -> None:
    """Save an edit, follow the book's link again: the book's version opens (the launcher
    offers it first, focused), and the copy, kept under its own name, still holds the edit."""
    name = chapter["browser_lab_path"].name
    book = _first_code(lab)
    lab.evaluate(
        f"""async () => {{
            ({FIRST_CODE})().setSource('# my edit\\n' + ({FIRST_CODE})().getSource());
            await window.jupyterapp.commands.execute('docmanager:save');
        }}"""
    )
    lab.goto(f"{site}/{launch_url(name)}")
    copies = lab.locator("#copies a")
    copies.first.wait_for(timeout=30_000)
    assert copies.count() == 1 and "(your copy, " in copies.first.inner_text()
    assert lab.evaluate("() => document.activeElement.id") == "book"
    copy = copies.first.get_attribute("href")
    lab.locator("#book").click()
    lab.wait_for_url(f"{site}/{lab_url(chapter)}", timeout=60_000)
    assert _first_code(lab) == book, "the book's link opened the book's version"
    lab.goto(f"{site}/lite/{copy}")
    assert _first_code(lab).startswith("# my edit"), "the saved copy is kept"


def _ring_stepper_steps_once(page, chapter) -> None:
    """The stepper, live in the lab just run, steps once: what it shows is read off the page.

    The expected numbers come from the stored values of chapter 5's TensorFlow run, added
    here in NumPy float32: the ring's first step sends chunk 0 from replica 0 to replica 1,
    which adds it to its own. (In the lab's own test: one page load, not two.)
    """
    import numpy as np
    from playwright.sync_api import expect

    from mirrorkit.report.values import number

    stored = json.loads((chapter["browser_lab_path"].parent / RING_VALUES).read_text())
    inputs = [np.array(x, np.float32) for x in stored["inputs"]]
    shown = 3  # the stepper's values_shown: the first three numbers of each chunk
    widget = page.locator(LIVE).filter(has=page.locator(".mws-view")).first
    view = widget.locator(".mws-view")
    view.locator('.mws-frame[data-step="0"]').wait_for(timeout=30_000)
    # JupyterLab skips laying out cells away from the viewport (content-visibility: auto),
    # and a skipped cell's innerText is empty until the next frame after it scrolls into
    # view: so the text is polled (expect) rather than read once.
    widget.scroll_into_view_if_needed()
    first_numbers = view.locator('tr[data-replica="1"] td').first.locator("div").first
    before = [number(x) for x in inputs[1][:shown].tolist()]
    expect(first_numbers).to_have_text(" ".join(before), timeout=30_000)
    widget.locator("button.mws-next").click()
    view.locator('.mws-frame[data-step="1"]').wait_for(timeout=30_000)
    after = [number(x) for x in (inputs[0][:shown] + inputs[1][:shown]).tolist()]
    assert after != before
    expect(first_numbers).to_have_text(" ".join(after), timeout=30_000)
    widget.screenshot(path=str(ARTIFACTS / "lite_stepper_step_1.png"))


def test_the_sites_own_address_lists_every_lab(site, browser):
    page = browser.new_page()
    try:
        page.goto(f"{site}/lite/")
        page.wait_for_url("**/lite/tree/**", timeout=60_000)
        names = page.locator(".jp-DirListing-itemText")
        names.first.wait_for(timeout=60_000)
        assert {c["browser_lab_path"].name for c in LABS} <= set(names.all_inner_texts())
    finally:
        page.close()


def test_a_chapter_cell_runs_in_its_own_page_by_keyboard(site, browser):
    """A ``browser-live`` cell's fold opens the site's console on it (issue 51, item 4): the
    console installs mirrorkit from the site and prints what the chapter's stored output says."""
    import nbformat
    from playwright.sync_api import expect

    from bookbuild.lite.live_cells import SUMMARY, TAG

    chapter = next(c for c in LABS if c["file"].startswith("02_"))
    notebook = nbformat.read(chapter["path"], as_version=4)
    cell = next(c for c in notebook.cells if TAG in c.metadata.get("tags", []))
    stored = "".join(o["text"] for o in cell.outputs if o.get("name") == "stdout")
    page = browser.new_page()
    try:
        page.goto(f"{site}/{chapter['file'].replace('.ipynb', '.html')}")
        summary = page.get_by_text(SUMMARY).first
        summary.focus()
        page.keyboard.press("Enter")  # a <summary> opens by keyboard; the console loads then
        console = page.frame_locator("details.mirrorbook-live[open] iframe").first
        printed = console.locator(".jp-OutputArea-output").filter(has_text=stored.split("\n")[0])
        expect(printed.first).to_have_text(" ".join(stored.split()), timeout=180_000)
        assert console.locator(".jp-OutputArea-output[data-mime-type*='stderr']").count() == 0
        page.screenshot(path=str(ARTIFACTS / "lite_live_cell.png"), full_page=False)
    finally:
        page.close()
