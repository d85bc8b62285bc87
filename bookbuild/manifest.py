"""The book's single manifest, ``jupyter_book.toml``: read, completed and checked.

Example:
    >>> load_manifest()["chapters"][0]["file"]
    '01_strategy_scope.ipynb'
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from bookbuild import ROOT
from bookbuild.version import book_version, source_ref

MANIFEST = ROOT / "jupyter_book.toml"
# A chapter's `nbval` setting -> the pytest flag that compares its outputs that way.
NBVAL_MODES = {"strict": "--nbval", "lax": "--nbval-lax"}


#: A chapter's default ``grade_replicas``: the first three other than its ``replicas`` (the
#: tests grade at the first).
GRADE_REPLICAS = (2, 8, 5, 16)


def load_manifest(path: Path = MANIFEST) -> dict:
    """Read a manifest; each chapter gets ``[defaults]`` merged under its own keys.

    Paths in the manifest are relative to its folder (the project's top folder).

    Args:
        path: The manifest file; ``jupyter_book.toml`` at the top of the project by default.

    Returns:
        ``{"book": the [book] table, branch defaulted to "main" and "ref" added (the branch,
        or a release's tag: :func:`~bookbuild.version.source_ref`); "source": the chapters'
        folder; "chapters": one dict per chapter, in reading order, with its "path" added;
        "output": where the HTML is built; "folder": the manifest's own folder}``. A chapter's
        ``grade_replicas`` (the second grading run's replica counts) defaults to the first
        three of :data:`GRADE_REPLICAS` other than its ``replicas``;
        one with a ``browser_lab`` (its browser lab, inside ``source``) gets its path as
        ``browser_lab_path``.

    Raises:
        SystemExit: If no chapter is listed, a chapter's ``nbval`` is not one of
            :data:`NBVAL_MODES`, or ``[book] repository`` is not a GitHub address (Colab
            opens notebooks from GitHub). The message names the file and the setting.

    Example:
        >>> manifest = load_manifest()
        >>> manifest["chapters"][0]["file"], manifest["chapters"][0]["nbval"]
        ('01_strategy_scope.ipynb', 'strict')
        >>> manifest["chapters"][0]["path"].relative_to(ROOT).as_posix()
        'book/01_strategy_scope.ipynb'
    """
    with open(path, "rb") as f:
        data = tomllib.load(f)
    folder = Path(path).resolve().parent
    book = data["book"]
    source = folder / book.get("source", "book")
    chapters = _chapters(path, data, source)
    repository = book.get("repository", "")
    if not re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", repository):
        raise SystemExit(
            f"{path}: [book] repository must be the book's GitHub address, "
            f"https://github.com/OWNER/NAME (Colab opens notebooks from GitHub), got {repository!r}"
        )
    book.setdefault("branch", "main")
    project = folder if (folder / "pyproject.toml").is_file() else ROOT
    book["ref"] = source_ref(book_version(project), branch=book["branch"])
    return {
        "book": book,
        "source": source,
        "chapters": chapters,
        "output": folder / book.get("output", "build"),
        "folder": folder,
    }


def _grade_counts(path: Path, chapter: dict) -> list[int]:
    """The chapter's ``grade_replicas`` (a parse error if a table for a few counts could pass)."""
    mine = chapter.get("replicas")
    counts = chapter.setdefault("grade_replicas", [n for n in GRADE_REPLICAS if n != mine][:3])
    where = f"{path}: chapter {chapter['file']}: grade_replicas must be"
    if not (isinstance(counts, list) and all(type(n) is int and n >= 1 for n in counts)):
        raise SystemExit(
            f"{where} a list of replica counts (whole numbers >= 1), e.g. [2, 8, 5] or [], "
            f"got {counts!r}"
        )
    few = len(set(counts)) < 3 and not isinstance(chapter.get("grade_replicas_why"), str)
    if counts and (few or mine in counts):
        raise SystemExit(
            f"{where} at least three counts other than the chapter's replicas ({mine}), or [] "
            f"for one grading run, got {counts!r}: write e.g. grade_replicas = [2, 8, 5], "
            "counts that divide the chapter's global batch (an answer written for one count "
            "then fails most draws), or say why there are fewer in grade_replicas_why."
        )
    return counts


def _chapters(path: Path, data: dict, source: Path) -> list[dict]:
    defaults = data.get("defaults", {})
    chapters = []
    for entry in data.get("chapters", []):
        chapter = {**defaults, **entry}
        chapter["path"] = source / chapter["file"]
        if chapter["nbval"] not in NBVAL_MODES:
            raise SystemExit(
                f"{path}: chapter {chapter['file']}: nbval must be one of {list(NBVAL_MODES)}"
            )
        chapter["grade_replicas"] = _grade_counts(path, chapter)
        if "browser_lab" in chapter:  # its idea in the reader's browser: bookbuild/lite/
            chapter["browser_lab_path"] = lab = source / chapter["browser_lab"]
            if not lab.is_file():
                raise SystemExit(
                    f"{path}: chapter {chapter['file']}: browser_lab names no file ({lab}); "
                    "write the lab's path inside the book's folder, e.g. \"browser/02_x.ipynb\""
                )
        chapters.append(chapter)
    if not chapters:
        raise SystemExit(f"{path}: no [[chapters]] listed")
    return chapters
