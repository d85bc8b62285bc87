"""The book's version: kept in ``pyproject.toml``, copied where Python needs it.

The version of mirrorkit in the top ``pyproject.toml`` is the book's. Its copies (the widgets'
version and their pin of mirrorkit, the two packages' ``__version__``) are written by
:func:`set_version` and checked by the tests. A development version (``0.2.0.dev0``) makes
every chapter's set-up cell and "Open in Colab" link use the manifest's branch; a release
(``0.2.0``) makes them use its tag, ``v0.2.0`` (:func:`source_ref`). ``dev.py release``
(:mod:`bookbuild.release`) sets it and rewrites those links.

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


def is_release(version: str) -> bool:
    """Whether ``version`` is a release (``X.Y.Z``), not a development version.

    Example:
        >>> is_release("0.2.0"), is_release("0.3.0.dev0")
        (True, False)
    """
    return _RELEASE.fullmatch(version) is not None
