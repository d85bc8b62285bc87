"""axe-core, pinned and injected offline, in the pages the browser tests already opened.

The accessibility engine is the npm package axe-core, pinned with its sha512 in
``requirements/axe/package-lock.json``; :func:`axe_source` installs it once into
``.venvs/axe-core-<version>`` with ``npm ci`` (which checks that hash) and reads its
``axe.min.js``. :func:`audit` puts that script into a page as an inline ``<script>`` (no
request leaves the page) and runs it on the whole document. Each violation's node is *ours*
when it lies inside an element that ``ours`` selects (the widgets' and reports' own classes,
the book's article); the others belong to JupyterLab, Notebook, JupyterLite or the book's
theme, and each of their critical or serious rules must be named in ``docs/accessibility.md``
with its upstream issue. No rule is ever turned off.

Each audit's counts by rule are written to ``test-artifacts/browser/axe/<where>.json``.

Example (in a test that has a Playwright page)::

    findings = audit(page, WIDGETS, "jupyterlab-live")
    assert not problems(findings), problems(findings)
"""

from __future__ import annotations

import fcntl
import functools
import json
import re
import shutil
import subprocess
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AXE_VERSION = "4.14.1"
LOCK = ROOT / "requirements" / "axe"  # package.json and package-lock.json (the sha512)
INSTALLED = ROOT / ".venvs" / f"axe-core-{AXE_VERSION}"
SCRIPT = INSTALLED / "node_modules" / "axe-core" / "axe.min.js"
STATEMENT = ROOT / "docs" / "accessibility.md"  # names each upstream rule and its issue
ARTIFACTS = ROOT / "test-artifacts" / "browser" / "axe"
INSTALL_TIMEOUT = 300  # seconds for npm ci
BLOCKING = ("critical", "serious")
# WCAG 2.0-2.2 A and AA, axe's best practices, and its experimental rules (among them
# label-content-name-mismatch): every rule axe has for these, none left out.
TAGS = [
    "wcag2a",
    "wcag2aa",
    "wcag21a",
    "wcag21aa",
    "wcag22aa",
    "best-practice",
    "experimental",
]
# What the project draws: the widgets' classes (mw-, mws-, mwt-...) and mirrorkit's reports.
WIDGETS = '[class^="mw"], [class*=" mw"], .mirrorkit-report'
# In the HTML book, the article is made from our chapters and their outputs; the header,
# the sidebars and the search box around it are the theme's.
BOOK = f"article.bd-article, {WIDGETS}"

RUN = """async ([tags, ours]) => {
    const results = await axe.run(document, {runOnly: {type: 'tag', values: tags},
                                             resultTypes: ['violations']});
    const element = target => {
        let selector = target[target.length - 1];
        if (Array.isArray(selector)) selector = selector[selector.length - 1];
        try { return document.querySelector(selector); } catch (e) { return null; }
    };
    return results.violations.flatMap(v => v.nodes.map(n => {
        const el = element(n.target);
        return {rule: v.id, impact: n.impact || v.impact, target: JSON.stringify(n.target),
                html: n.html.slice(0, 300), ours: !!(el && el.closest(ours)),
                snapshot: !!(el && el.closest('.mw-snapshot')),
                summary: (n.failureSummary || '').slice(0, 300)};
    }));
}"""


@dataclass(frozen=True)
class Finding:
    """One node that breaks one axe rule."""

    rule: str
    impact: str
    target: str
    html: str
    ours: bool
    snapshot: bool  # inside a widget's static snapshot
    summary: str

    def __str__(self) -> str:
        owner = "ours" if self.ours else "upstream"
        return f"{self.rule} ({self.impact}, {owner}) at {self.target}: {self.html[:160]}"


def _install() -> None:
    """``npm ci`` the pinned axe-core into INSTALLED, once, even with several pytest processes."""
    INSTALLED.mkdir(parents=True, exist_ok=True)
    with (INSTALLED / ".lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if SCRIPT.is_file():
            return
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("npm not found: apt-get install npm (it installs the pinned axe-core)")
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(LOCK / name, INSTALLED / name)
        command = [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline"]
        done = subprocess.run(
            command, cwd=INSTALLED, capture_output=True, text=True, timeout=INSTALL_TIMEOUT
        )
        if done.returncode or not SCRIPT.is_file():
            pytest.fail(f"npm ci of {LOCK / 'package-lock.json'} failed:\n{done.stderr[-2000:]}")


@functools.cache
def axe_source() -> str:
    """The text of the pinned ``axe.min.js`` (installed on first use)."""
    if not SCRIPT.is_file():
        _install()
    source = SCRIPT.read_text()
    header = f"/*! axe v{AXE_VERSION}"
    assert source.startswith(header), f"{SCRIPT} is not axe-core {AXE_VERSION}: {source[:40]!r}"
    return source


def inject(page) -> None:
    """Put axe-core into the page as an inline script (no request), once per document."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(content=axe_source())
    version = page.evaluate("() => window.axe.version")
    assert version == AXE_VERSION, f"the page runs axe {version}, not {AXE_VERSION}"


def audit(page, ours: str, where: str) -> list[Finding]:
    """Run every axe rule of :data:`TAGS` on the page; keep the counts under ``where``.

    Args:
        page: A Playwright page, loaded.
        ours: A CSS selector: a node inside an element it selects is the project's.
        where: A short name for the kind of page (``book-05_where_the_time_goes``).

    Returns:
        Every violating node, ours or upstream, every impact.
    """
    inject(page)
    found = [Finding(**node) for node in page.evaluate(RUN, [TAGS, ours])]
    record(where, found)
    return found


def record(where: str, found: list[Finding]) -> None:
    """Write the counts by rule (ours and upstream apart) and the nodes to ARTIFACTS."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    counts = Counter(f"{f.rule} {f.impact} {_owner(f)}" for f in found)
    summary = {"axe": AXE_VERSION, "counts": dict(sorted(counts.items()))}
    summary["nodes"] = [asdict(f) for f in found]
    name = re.sub(r"[^\w.-]+", "_", where)
    (ARTIFACTS / f"{name}.json").write_text(json.dumps(summary, indent=1))


def note(where: str, text: str) -> None:
    """Keep a line about a keyboard walk in ARTIFACTS (``<where>.txt``), for the report."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"{where}.txt").write_text(text + "\n")


def _owner(finding: Finding) -> str:
    if not finding.ours:
        return "upstream"
    return "ours (snapshot)" if finding.snapshot else "ours"


def documented_rules() -> set[str]:
    """The axe rules docs/accessibility.md lists as upstream (its table's first column)."""
    text = STATEMENT.read_text() if STATEMENT.is_file() else ""
    upstream = text.partition("## Upstream violations")[2].partition("\n## ")[0]
    return set(re.findall(r"^\| `([a-z0-9-]+)`", upstream, re.M))


def problems(found: list[Finding]) -> list[str]:
    """What fails a test: a critical or serious node of ours, or an upstream one whose rule
    docs/accessibility.md does not list."""
    listed = documented_rules()
    blocking = [f for f in found if f.impact in BLOCKING]
    ours = [str(f) for f in blocking if f.ours]
    unlisted = sorted({f.rule for f in blocking if not f.ours and f.rule not in listed})
    return ours + [f"upstream {rule}: not listed in {STATEMENT.name}" for rule in unlisted]


# The element that has the keyboard focus: its name as a screen reader gets it (roughly:
# aria-label, its <label>, its text, its title), and its focus ring, where ``ring`` (a CSS
# selector, for a control drawn by another element) or else the element itself draws it,
# with the colour behind it (the first ancestor with an opaque background; white if none).
FOCUSED = """ring => {
    const el = document.activeElement;
    const label = el.labels && el.labels.length ? el.labels[0].textContent : '';
    const name = el.getAttribute('aria-label') || label || el.textContent || el.title || '';
    const drawn = ring ? [...document.querySelectorAll(ring)].find(e => e.offsetParent) : el;
    const css = getComputedStyle(drawn);
    let node = drawn.parentElement, background = 'rgb(255, 255, 255)';
    for (; node; node = node.parentElement) {
        const colour = getComputedStyle(node).backgroundColor;
        if (!/^rgba\\(.*, 0\\)$|^transparent$/.test(colour)) { background = colour; break; }
    }
    return {tag: el.tagName.toLowerCase(), name: name.replace(/\\s+/g, ' ').trim(),
            width: parseFloat(css.outlineWidth) || 0, style: css.outlineStyle,
            colour: css.outlineColor, background};
}"""


def focused(page, ring: str | None = None) -> dict:
    """What has the keyboard focus, its name and its focus ring (see FOCUSED)."""
    return page.evaluate(FOCUSED, ring)


def _channels(css_colour: str) -> tuple[float, ...]:
    return tuple(float(v) for v in re.findall(r"[\d.]+", css_colour)[:3])


def contrast(css_a: str, css_b: str) -> float:
    """WCAG 2's contrast ratio of two computed CSS colours (``rgb(r, g, b)``)."""

    def luminance(css: str) -> float:
        linear = [
            c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
            for c in (v / 255 for v in _channels(css))
        ]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    high, low = sorted((luminance(css_a), luminance(css_b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def ring_problems(seen: dict) -> list[str]:
    """What is wrong with a focus ring: under 2 px, none, or under 3:1 against its page."""
    if seen["style"] == "none" or seen["width"] < 2:
        return [f"{seen['tag']} {seen['name']!r}: focus ring {seen['width']} px {seen['style']}"]
    ratio = contrast(seen["colour"], seen["background"])
    if ratio < 3:
        return [
            f"{seen['tag']} {seen['name']!r}: focus ring {seen['colour']} on "
            f"{seen['background']}: {ratio:.2f}:1"
        ]
    return []
