"""``dev.py release VERSION``: set the version, point the chapters' links at it, date the CHANGELOG.

A release (``0.2.0``) points every chapter's set-up cell and "Open in Colab" link at its tag,
``v0.2.0``, so a course that opens the chapters from a release's links gets that release's
notebooks and packages for the whole term; a development version (``0.3.0.dev0``) points them
back at the manifest's branch. The version and its copies: :mod:`bookbuild.version`.

Example:
    >>> release("0.2")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    SystemExit: [dev] release: the version must be X.Y.Z (a release, e.g. 0.2.0) or ...
"""

from __future__ import annotations

import datetime
from pathlib import Path

from bookbuild import ROOT
from bookbuild.cells import colab_url, write_generated_cells
from bookbuild.manifest import load_manifest
from bookbuild.version import is_release, set_version


def release(version: str, root: Path = ROOT, today: str | None = None) -> list[str]:
    """Set the version, rewrite every chapter's hosted links, date the CHANGELOG's entry.

    The chapters' set-up cells and Colab links, and the README's link to chapter 1, follow the
    new version's ref (:func:`~bookbuild.version.source_ref`).

    For a release, the CHANGELOG's "Unreleased" section becomes ``version``'s, dated, under a
    new empty "Unreleased"; for a development version it is left alone.

    Args:
        version: What :func:`~bookbuild.version.set_version` takes.
        root: The project's top folder.
        today: The release's date (``YYYY-MM-DD``); today's by default.

    Returns:
        The files changed.

    Example:
        >>> release("0.2.0")  # doctest: +SKIP
        ['CHANGELOG.md', 'book/01_strategy_scope.ipynb', ..., 'pyproject.toml', ...]
    """
    import nbformat

    before = load_manifest(root / "jupyter_book.toml")
    old_link = colab_url(before, before["chapters"][0])
    changed = set_version(version, root)
    manifest = load_manifest(root / "jupyter_book.toml")
    readme = root / "README.md"  # its "open chapter 1 in Colab" link
    if readme.is_file() and old_link in (text := readme.read_text()):
        new_link = colab_url(manifest, manifest["chapters"][0])
        if new_link != old_link:
            readme.write_text(text.replace(old_link, new_link))
            changed.append("README.md")
    for chapter in manifest["chapters"]:
        nb = nbformat.read(chapter["path"], as_version=4)
        before = nbformat.writes(nb)
        write_generated_cells(nb, manifest, chapter)
        if nbformat.writes(nb) != before:
            nbformat.write(nb, chapter["path"])
            changed.append(chapter["path"].relative_to(root).as_posix())
    changelog = root / "CHANGELOG.md"
    if is_release(version):
        date = today or datetime.date.today().isoformat()
        text = changelog.read_text()
        if "\n## Unreleased\n" not in text:
            raise SystemExit(f"[dev] release: {changelog} has no '## Unreleased' section to date")
        changelog.write_text(
            text.replace("\n## Unreleased\n", f"\n## Unreleased\n\n## {version} ({date})\n", 1)
        )
        changed.append("CHANGELOG.md")
    return sorted(set(changed))
