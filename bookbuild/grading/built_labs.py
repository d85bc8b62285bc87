"""The built labs that grading reads: reused while their inputs are unchanged, swapped in whole.

Example:
    >>> from bookbuild.labs import chapters_with_exercises
    >>> from bookbuild.manifest import load_manifest
    >>> (chapter,) = chapters_with_exercises(load_manifest(), ["3"])
    >>> len(build_digest(chapter))
    64
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import fields, replace
from pathlib import Path

from bookbuild import ROOT
from bookbuild.labs import LABS, Lab, build_lab, chapters_with_exercises  # noqa: F401 (doctests)
from bookbuild.manifest import load_manifest  # noqa: F401 (doctests)

# What a lab is built from: a change to any of them (or to the chapter) builds it again.
BUILD_INPUTS = [ROOT / "bookbuild" / n for n in ("labs.py", "cells.py", "grading/program.py")]
STAMP = ".built-from"  # in build/labs/<stem>/: the digest of the inputs it was built from
KEPT = ("grades.csv", "feedback")  # what a rebuild carries over from the old lab folder


def build_digest(chapter: dict) -> str:
    """A digest of what a chapter's lab is built from: the chapter file and the build's code.

    Example:
        >>> (chapter,) = chapters_with_exercises(load_manifest(), ["3"])
        >>> build_digest(chapter) == build_digest(dict(chapter))
        True
    """
    digest = hashlib.sha256(Path(chapter["path"]).read_bytes())
    for path in BUILD_INPUTS:
        digest.update(path.read_bytes() if path.is_file() else b"")
    settings = {k: v for k, v in chapter.items() if isinstance(v, str | int | float | list)}
    digest.update(json.dumps(settings, sort_keys=True, default=str).encode())
    return digest.hexdigest()


@contextmanager
def locked(path: Path):
    """Hold an exclusive lock on ``path`` (made if missing) for the ``with`` block.

    Example:
        >>> with locked(Path(tempfile.mkdtemp()) / ".lock"):
        ...     pass
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def lab_for(chapter: dict, into: Path = LABS, build: Callable[..., Lab] = build_lab) -> Lab:
    """The chapter's built lab: reused if built from the same inputs, else built anew.

    A new build goes to a temporary folder beside ``into/<stem>`` and then takes its place in
    one rename (an exchange where Linux offers it), so a grading that reads the lab never sees
    the folder missing; grades.csv and feedback/ are carried over.

    Args:
        chapter: One of :func:`~bookbuild.manifest.load_manifest`'s chapters.
        into: The labs' folder.
        build: Builds a lab: ``build(chapter, into=folder)``.

    Returns:
        The :class:`~bookbuild.labs.Lab`, with its paths in ``into/<stem>``.

    Example:
        >>> (chapter,) = chapters_with_exercises(load_manifest(), ["3"])
        >>> lab_for(chapter).student.name  # doctest: +SKIP
        '03_custom_training_loops.ipynb'
    """
    stem = Path(chapter["path"]).stem
    final, digest = Path(into) / stem, build_digest(chapter)
    with locked(Path(into) / f".{stem}.lock"):
        stamp = _read_stamp(final / STAMP)
        if stamp.get("digest") == digest:
            return Lab(**{name: final / path for name, path in stamp["lab"].items()})
        staging = Path(tempfile.mkdtemp(prefix=f".{stem}.building-", dir=into))
        try:
            lab = _moved(build(chapter, into=staging), staging / stem, final)
            for name in KEPT:
                old = final / name
                if old.is_dir():
                    shutil.copytree(old, staging / stem / name)
                elif old.is_file():
                    shutil.copy2(old, staging / stem / name)
            paths = {f.name: str(getattr(lab, f.name).relative_to(final)) for f in fields(lab)}
            stamp = json.dumps({"digest": digest, "lab": paths}, indent=1)
            (staging / stem / STAMP).write_text(stamp)
            swap(staging / stem, final)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return lab


def _read_stamp(path: Path) -> dict:
    """What a lab's stamp says it was built from, ``{}`` if it has none (or an unreadable one)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _moved(lab: Lab, old: Path, new: Path) -> Lab:
    """``lab`` with each of its paths under ``old`` moved under ``new``."""
    changes = {}
    for field in fields(lab):
        value = getattr(lab, field.name)
        if isinstance(value, Path) and value.is_relative_to(old):
            changes[field.name] = new / value.relative_to(old)
    return replace(lab, **changes)


def swap(new: Path, final: Path) -> None:
    """Put the folder ``new`` at ``final`` in one step; what was at ``final`` ends up at ``new``.

    Linux's ``renameat2(RENAME_EXCHANGE)`` exchanges the two names atomically; elsewhere (or
    when ``final`` does not exist) two renames do it, with a moment where ``final`` is missing.

    Example:
        >>> base = Path(tempfile.mkdtemp())
        >>> (base / "a").mkdir(); (base / "b").mkdir(); _ = (base / "b" / "x").write_text("1")
        >>> swap(base / "b", base / "a"); sorted(p.name for p in (base / "a").iterdir())
        ['x']
    """
    if final.exists() and _exchange(new, final):
        return
    if final.exists():
        final.rename(f"{new}.old")
        new.rename(final)
        Path(f"{new}.old").rename(new)
    else:
        new.rename(final)


def _exchange(a: Path, b: Path) -> bool:
    """Exchange two paths' names with ``renameat2``; ``False`` where it is not available."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_cwd, rename_exchange = -100, 2
    return renameat2(at_cwd, os.fsencode(a), at_cwd, os.fsencode(b), rename_exchange) == 0
