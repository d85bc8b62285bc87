"""What ``dev.py book`` builds, and one ``dev.py test`` run builds once for every stage.

The HTML book with its browser lab site, and the classroom labs (student editions and
autograders), depend on the tree and the lock's pins of Jupyter Book, JupyterLite and
otter-grader, not on the Python or TensorFlow that reads them: the reference job's ``build``
stage makes them once in the book's environment (``dev.py _built FOLDER``, :func:`build`),
and the stages that test them find the folder in :data:`VARIABLE`. A test run alone, with
the variable unset, builds what it needs itself (:func:`shared`).

Example:
    >>> import os
    >>> os.environ.pop(VARIABLE, None) and None
    >>> shared("html") is None
    True
"""

from __future__ import annotations

import os
from pathlib import Path

VARIABLE = "MIRRORBOOK_BUILT"  # the folder :func:`build` wrote, for the stages that read it
PARTS = {"html": "_build/html", "labs": "labs"}  # what it holds, by name (build/'s layout)
_DONE = ".complete"  # written last: a folder without it was not built whole


def build(into: Path | None = None) -> Path:
    """Build the HTML book, its lab site and every chapter's lab into ``into``.

    The labs are stamped with what they were built from, as ``dev.py labs`` writes them, so
    :func:`bookbuild.grading.built_labs.lab_for` given the same folder reads them back.

    Args:
        into: A folder; the manifest's ``output`` (``build/``, ``dev.py book``'s) by default,
            where labs built from the same inputs are kept with their grades.

    Returns:
        ``into``, holding :data:`PARTS` and a mark that the build finished.

    Example:
        >>> build(Path("/tmp/mirrorbook-built"))  # doctest: +SKIP
        PosixPath('/tmp/mirrorbook-built')
    """
    from bookbuild.grading.built_labs import lab_for
    from bookbuild.jupyterbook import build_html
    from bookbuild.labs import chapters_with_exercises
    from bookbuild.lite.site import build_lite
    from bookbuild.manifest import load_manifest
    from bookbuild.shell import say

    manifest = load_manifest()
    into = Path(into or manifest["output"])
    html = build_html(into, manifest)
    build_lite(html, manifest)
    for chapter in chapters_with_exercises(manifest, []):
        lab = lab_for(chapter, into / PARTS["labs"])  # as `dev.py labs` writes them, stamped
        say(f"lab of {chapter['file']}: {lab.student.parent.parent}")
    (into / _DONE).write_text("built whole\n")
    return into


def shared(part: str) -> Path | None:
    """The part of this run's shared build named ``part``; None where no stage built one.

    Args:
        part: A key of :data:`PARTS`.

    Returns:
        Its folder, or None when :data:`VARIABLE` is unset (a test run alone).

    Raises:
        ValueError: For an unknown part.
        FileNotFoundError: If the variable names a folder that was not built whole.

    Example:
        >>> shared("pdf")
        Traceback (most recent call last):
        ...
        ValueError: part must be one of PARTS. Received: part='pdf'; write part='html'.
    """
    if part not in PARTS:
        raise ValueError(f"part must be one of PARTS. Received: part={part!r}; write part='html'.")
    folder = os.environ.get(VARIABLE)
    if not folder:
        return None
    if not (Path(folder) / _DONE).is_file():
        raise FileNotFoundError(
            f"{VARIABLE}={folder} was not built whole: run `dev.py _built {folder}` first, or "
            f"unset {VARIABLE} so that the tests build what they read."
        )
    return Path(folder) / PARTS[part]
