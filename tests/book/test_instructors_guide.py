"""The instructor's guide points to chapter cells by their first line: each such cell exists.

Reads the guide and the chapters' JSON only (no kernel).
"""

import json
import re

from bookbuild import ROOT
from bookbuild.manifest import load_manifest

GUIDE = ROOT / "docs" / "instructors_guide.md"
ANCHOR = re.compile(r"cells? that begins?\s+`([^`]+)`")


def _flat(text: str) -> str:
    """Whitespace as one space; the guide writes a line break inside an anchor as \\n."""
    return re.sub(r"\s+", " ", text.replace("\\n", " ")).strip()


def _sections() -> dict[int, str]:
    """The guide's text under each "## Chapter N:" heading, up to the next "## " heading."""
    parts = re.split(r"^## ", GUIDE.read_text(), flags=re.M)
    found = {}
    for part in parts:
        heading = re.match(r"Chapter (\d+):", part)
        if heading:
            found[int(heading.group(1))] = part
    return found


def test_every_cell_the_guide_points_to_begins_as_it_says():
    chapters = load_manifest()["chapters"]
    missing = []
    for number, text in _sections().items():
        cells = json.loads(chapters[number - 1]["path"].read_text())["cells"]
        starts = [_flat("".join(c["source"])) for c in cells if c["cell_type"] == "code"]
        for anchor in map(_flat, ANCHOR.findall(text)):
            if not any(start.startswith(anchor) for start in starts):
                missing.append(f"chapter {number}: no cell begins {anchor!r}")
    assert missing == [], "\n".join(missing)
