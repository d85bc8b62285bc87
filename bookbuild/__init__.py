"""bookbuild: the logic behind ``dev.py``, which only dispatches its commands here.

Its modules, one concept each, and why they import only the standard library at the top:
docs/design/build.md.

Example:
    >>> from bookbuild import ROOT
    >>> (ROOT / "jupyter_book.toml").is_file()
    True
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the project's top folder, where dev.py is
