"""The book's version: kept in ``pyproject.toml``, copied where Python needs it, and released.

The version of mirrorkit in the top ``pyproject.toml`` is the book's. Its copies (the widgets'
version and their pin of mirrorkit, the two packages' ``__version__``) are written by
:func:`set_version` and checked by the tests. A development version (``0.2.0.dev0``) makes
every chapter's set-up cell and "Open in Colab" link use the manifest's branch; a release
(``0.2.0``) makes them use its tag, ``v0.2.0``, so a course that opens the chapters from a
release's links gets that release's notebooks and packages for the whole term.

Example:
    >>> source_ref("0.2.0.dev0", branch="main"), source_ref("0.2.0", branch="main")
    ('main', 'v0.2.0')
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from bookbuild import ROOT

# Each copy of the version: the file and a pattern whose one group is the version.
COPIES = {
    "widgets/pyproject.toml": r'^version = "([^"]+)"$',
    "widgets/pyproject.toml pin": r'^    "mirrorkit==([^"]+)",$',
    "mirrorkit/__init__.py": r'^__version__ = "([^"]+)"$',
    "widgets/mirrorwidgets/__init__.py": r'^__version__ = "([^"]+)"$',
}
_SOURCE = r'^version = "([^"]+)"$'  # in the top pyproject.toml, the one place
_RELEASE = re.compile(r"\d+\.\d+\.\d+")
_DEVELOPMENT = re.compile(r"\d+\.\d+\.\d+\.dev\d+")


def book_version(root: Path = ROOT) -> str:
    r"""The book's version, from the top ``pyproject.toml``.

    Example:
        >>> bool(re.fullmatch(r"\d+\.\d+\.\d+(\.dev\d+)?", book_version()))
        True
    """
    with open(root / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["version"]


def source_ref(version: str, *, branch: str) -> str:
    """Where hosted notebooks install from and open at: ``branch`` for a development version.

    Args:
        version: The book's version.
        branch: The manifest's branch, for development versions.

    Example:
        >>> source_ref("1.4.0", branch="main")
        'v1.4.0'
    """
    return branch if _DEVELOPMENT.fullmatch(version) else f"v{version}"


def version_copies(root: Path = ROOT) -> dict[str, str]:
    """Each copy of the version and what it holds (``"?"`` where its line is missing).

    Example:
        >>> set(version_copies().values()) == {book_version()}
        True
    """
    found = {}
    for copy, pattern in COPIES.items():
        text = (root / copy.split()[0]).read_text()
        match = re.search(pattern, text, flags=re.MULTILINE)
        found[copy] = match.group(1) if match else "?"
    return found


def set_version(version: str, root: Path = ROOT) -> list[str]:
    """Write ``version`` into ``pyproject.toml`` and every copy; return the files changed.

    Args:
        version: ``X.Y.Z`` (a release) or ``X.Y.Z.devN`` (main between releases).
        root: The project's top folder.

    Raises:
        SystemExit: If ``version`` is neither, with what to write instead.

    Example:
        >>> set_version("0.2")
        Traceback (most recent call last):
        ...
        SystemExit: [dev] release: the version must be X.Y.Z (a release, e.g. 0.2.0) or X.Y.Z.devN (between releases, e.g. 0.3.0.dev0), got '0.2'
    """  # noqa: E501
    if not (_RELEASE.fullmatch(version) or _DEVELOPMENT.fullmatch(version)):
        raise SystemExit(
            "[dev] release: the version must be X.Y.Z (a release, e.g. 0.2.0) or X.Y.Z.devN "
            f"(between releases, e.g. 0.3.0.dev0), got {version!r}"
        )
    changed = []
    for name, pattern in [("pyproject.toml", _SOURCE), *COPIES.items()]:
        path = root / name.split()[0]
        text = path.read_text()
        new = re.sub(pattern, lambda m: m.group(0).replace(m.group(1), version), text, count=1,
                     flags=re.MULTILINE)  # fmt: skip
        if new != text:
            path.write_text(new)
            changed.append(path.relative_to(root).as_posix())
    return sorted(set(changed))


def release(version: str, root: Path = ROOT, today: str | None = None) -> list[str]:
    """Set the version, rewrite every chapter's hosted links, date the CHANGELOG's entry.

    The chapters' set-up cells and Colab links, and the README's link to chapter 1, follow the
    new version's ref (:func:`source_ref`).

    For a release, the CHANGELOG's "Unreleased" section becomes ``version``'s, dated, under a
    new empty "Unreleased"; for a development version it is left alone.

    Args:
        version: What :func:`set_version` takes.
        root: The project's top folder.
        today: The release's date (``YYYY-MM-DD``); today's by default.

    Returns:
        The files changed.

    Example:
        >>> release("0.2.0")  # doctest: +SKIP
        ['CHANGELOG.md', 'book/01_strategy_scope.ipynb', ..., 'pyproject.toml', ...]
    """
    import datetime

    import nbformat

    from bookbuild.cells import colab_url, write_generated_cells
    from bookbuild.manifest import load_manifest

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
    if _RELEASE.fullmatch(version):
        date = today or datetime.date.today().isoformat()
        text = changelog.read_text()
        if "\n## Unreleased\n" not in text:
            raise SystemExit(f"[dev] release: {changelog} has no '## Unreleased' section to date")
        changelog.write_text(
            text.replace("\n## Unreleased\n", f"\n## Unreleased\n\n## {version} ({date})\n", 1)
        )
        changed.append("CHANGELOG.md")
    return sorted(set(changed))
