"""How long until a browser lab is usable, and how big is the site? Offline, in Chromium.

Usage: python bench/lite_load.py [--repeats 5] [--lab 05_ring_all_reduce.ipynb] [--site FOLDER]

Serves the built book (``build/_build/html``, with its ``lite/`` site; ``dev.py book`` makes
both) from 127.0.0.1 and opens a lab in headless Chromium with every other host refused, each
time in a new browser profile (nothing cached, as on a reader's first visit), and measures:

* **notebook shown**: the page is opened until the lab's cells are on screen (readable, not
  yet runnable);
* **kernel idle**: until Pyodide has started and its kernel waits for work: from here the
  reader can run cells (the page is interactive);
* **first run**: the lab run top to bottom once the kernel is idle (installing the book's
  TensorFlow-free code from the site is its first cell);
* **largest values**: the lab run again with every value its first cell sets at the largest
  it accepts (``mirrorkit.checks.lab_settings``): the most work a reader can ask of it
  (issue 51's target: 5 s; a slider that refuses a value it cannot show stops nothing else).

Each is the median of the repeats, with the lowest and highest. Then the site's size, in
all and its largest parts.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mirrorkit.checks.lab_settings import SETTINGS  # noqa: E402
from tests.browser.lite_page import (  # noqa: E402
    KERNEL_IDLE,
    first_code_source,
    offline_browser,
    run_again,
    run_all,
    serve,
)


def measure(base: str, lab: str, repeats: int) -> dict[str, list[float]]:
    """Seconds to each milestone, per repeat, each in a fresh browser."""
    from playwright.sync_api import sync_playwright

    times: dict[str, list[float]] = {
        "notebook shown": [],
        "kernel idle": [],
        "first run": [],
        "largest values": [],
    }
    url = f"{base}/lite/notebooks/index.html?path={lab}"
    for _ in range(repeats):
        with sync_playwright() as playwright, offline_browser(playwright) as context:
            page = context.new_page()
            started = time.monotonic()
            page.goto(url)
            page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=120_000)
            times["notebook shown"].append(time.monotonic() - started)
            page.wait_for_function(KERNEL_IDLE, timeout=300_000, polling=100)
            times["kernel idle"].append(time.monotonic() - started)
            ran = time.monotonic()
            cells = run_all(page, timeout=300)
            times["first run"].append(time.monotonic() - ran)
            assert not any(cell["error"] for cell in cells), cells
            cells, seconds = run_again(page, largest(first_code_source(page), lab), timeout=300)
            times["largest values"].append(seconds)
            failed = [e for c in cells for e in c["errorText"] if "what the slider shows" not in e]
            assert not failed, failed
            assert not context.refused, context.refused
    return times


def largest(source: str, lab: str) -> str:
    """The lab's first code cell with each of its settings at the largest value accepted."""
    for setting in SETTINGS[Path(lab).stem]:
        line = f"{setting.name} = {setting.maximum!r} "
        source = re.sub(rf"^{setting.name} = [^#\n]*", line, source, count=1, flags=re.M)
    return source


def sizes(site: Path) -> list[tuple[str, float]]:
    """Megabytes of the site and of each of its top folders, largest first."""
    parts = [
        (p.name, sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) / 1e6)
        for p in site.iterdir()
        if p.is_dir()
    ]
    total = sum(f.stat().st_size for f in site.rglob("*") if f.is_file()) / 1e6
    return [("the whole site", total), *sorted(parts, key=lambda part: -part[1])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--lab", default="05_ring_all_reduce.ipynb")
    parser.add_argument("--site", type=Path, default=ROOT / "build" / "_build" / "html")
    options = parser.parse_args()
    if not (options.site / "lite" / "index.html").is_file():
        raise SystemExit(f"no lab site in {options.site}/lite: run python3 dev.py book first")
    with serve(options.site) as base:
        times = measure(base, options.lab, options.repeats)
    print(f"{options.lab}, {options.repeats} loads, each in a new browser profile (seconds):")
    for name, values in times.items():
        print(
            f"  {name:15} median {statistics.median(values):5.1f}   "
            f"lowest {min(values):5.1f}   highest {max(values):5.1f}"
        )
    print("size (MB):")
    for name, megabytes in sizes(options.site / "lite")[:6]:
        print(f"  {name:15} {megabytes:6.1f}")


if __name__ == "__main__":
    main()
