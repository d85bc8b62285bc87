"""Keyboard-only walks through the live widgets, shared by the JupyterLab and Notebook 6 tests.

Each walk puts the focus at the start of one widget's output (as a reader arrives there with
Tab), then uses only Tab, Shift+Tab, Enter, Space and the arrow keys; after each press it
reads what has the focus (its name and its focus ring, measured from the computed style:
at least 2 px and 3:1 against the colour behind it) and what the widget's live region says.
Each walk returns its lines for the report (test-artifacts/browser/axe/keyboard-*.txt).
"""

from __future__ import annotations

from tests.browser import axe

STATUS = '.mw-status[role="status"][aria-live="polite"]'
PLAY_TO_THE_END = 30_000  # ms for the kernel to play every step of the stepper


def start(root) -> None:
    """Put the keyboard focus on the widget's own box, just before its first control."""
    root.evaluate("el => { el.tabIndex = -1; el.focus(); }")


def press(page, key: str, walk: list[str], ring: bool = True) -> dict:
    """Press ``key``; note what then has the focus; fail on a missing name or a weak ring."""
    page.keyboard.press(key)
    seen = axe.focused(page)
    walk.append(f"{key}: {seen['tag']} {seen['name']!r} ring {seen['width']}px {seen['colour']}")
    assert seen["name"], f"after {key}: the focused {seen['tag']} has no name"
    if ring:
        assert not axe.ring_problems(seen), axe.ring_problems(seen)
    return seen


def said(root, expect, text: str) -> None:
    """The widget's polite live region says ``text`` (waited for, within expect's timeout)."""
    expect(root.locator(STATUS)).to_contain_text(text)


def walk_stepper(page, root, expect, activate: str) -> list[str]:
    """Play, previous and next of AllReduceStepper, pressed with ``activate`` (Enter or Space)."""
    walk: list[str] = []
    start(root)
    assert press(page, "Tab", walk)["name"] == "play"
    assert press(page, "Tab", walk)["name"] == "next"  # previous is off at step 0
    page.keyboard.press(activate)
    said(root, expect, "step 1 of")
    assert press(page, "Shift+Tab", walk)["name"] == "previous"
    page.keyboard.press(activate)
    said(root, expect, "step 0 of")
    assert press(page, "Shift+Tab", walk)["name"] == "play"
    page.keyboard.press(activate)
    expect(root.locator(STATUS)).to_contain_text("(the result)", timeout=PLAY_TO_THE_END)
    walk.append(f"{activate} on play: the kernel played every step to the result")
    return walk


def walk_buttons(page, root, expect, names: list[str], activate: str, says: str) -> list[str]:
    """Tab through a widget's buttons, expecting ``names`` in order; press the last one."""
    walk: list[str] = []
    start(root)
    for name in names:
        assert press(page, "Tab", walk)["name"] == name
    page.keyboard.press(activate)
    said(root, expect, says)
    walk.append(f"{activate} on {names[-1]!r}: the live region says {says!r}")
    return walk
