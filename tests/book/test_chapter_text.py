"""The chapters' text, read from their JSON (no kernel): length, pitfalls page, private reads."""

import json
import re

# Words of markdown cells (admonitions, sidebars and dropdowns are markdown too); code cells and
# outputs do not count.
WORD_LIMITS = {"05_where_the_time_goes.ipynb": 3000, "06_multi_worker.ipynb": 3000}
PITFALLS = (  # the traps the one-page table must hold, each in bold in its row
    "Optimizer not built",
    "Loss-scale overflow",
    "`evaluate`'s phantom batch",
    "`fit` under MWMS",
    "Gradient accumulation",
    "BatchNorm statistics",
    "Clipping before the sum",
)
# A private module or attribute of TensorFlow or Keras; TensorFlow's own source read.
PRIVATE = re.compile(
    r"\b(?:tensorflow\.python|tensorflow\.tsl|keras\.src)\b|\.extended\._\w+|\._collective_keys"
)
GETSOURCE = re.compile(r"inspect\.getsource\((\w+)")
FROM_MIRRORKIT = re.compile(r"^from mirrorkit[\w.]* import ([\w, ]+)", re.M)


def cells(chapter) -> list[dict]:
    return json.loads(chapter["path"].read_text())["cells"]


def source(cell) -> str:
    return "".join(cell["source"])


def prose(chapter) -> list[str]:
    return [source(c) for c in cells(chapter) if c["cell_type"] == "markdown"]


def prose_words(chapter) -> int:
    return sum(len(text.split()) for text in prose(chapter))


def test_chapters_5_and_6_stay_within_their_word_limit(manifest):
    counts = {c["file"]: prose_words(c) for c in manifest["chapters"] if c["file"] in WORD_LIMITS}
    assert counts.keys() == WORD_LIMITS.keys()
    over = {f: n for f, n in counts.items() if n > WORD_LIMITS[f]}
    assert not over, f"words of prose over the limit ({WORD_LIMITS}): {over}"


def test_every_chapter_links_the_one_page_pitfalls_table(manifest):
    page = (manifest["source"] / "pitfalls.md").read_text()
    assert [name for name in PITFALLS if f"**{name}" not in page] == []
    rows = [line for line in page.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) >= len(PITFALLS) + 1  # a header, then one row per pitfall at least
    unlinked = [
        c["file"]
        for c in manifest["chapters"]
        if not any(
            "pitfalls.md" in source(cell) for cell in cells(c) if cell["cell_type"] == "markdown"
        )
    ]
    assert unlinked == []


def test_private_reads_are_claims_that_say_why(manifest):
    """Outside a claim, a public API or a behaviour shows it; inside one, a comment says why not."""
    wrong = []
    for chapter in manifest["chapters"]:
        code = [c for c in cells(chapter) if c["cell_type"] == "code"]
        ours = {
            n.strip()
            for c in code
            for names in FROM_MIRRORKIT.findall(source(c))
            for n in names.split(",")
        }
        for index, cell in enumerate(cells(chapter)):
            text = source(cell)
            if cell["cell_type"] != "code":
                continue
            read = PRIVATE.search(text) or any(n not in ours for n in GETSOURCE.findall(text))
            claim = "claim" in cell["metadata"].get("tags", [])
            if read and not (claim and "# private:" in text):
                wrong.append(f"{chapter['file']} cell {index}")
    assert wrong == [], "private reads outside a claim, or without '# private: <why>'"
