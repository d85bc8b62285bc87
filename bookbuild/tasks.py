"""The internal ``dev.py _...`` commands: the work that runs inside an environment.

``dev.py`` makes the environments; its jobs then start ``<that environment's python> dev.py
_name [arguments]``, so that the environment's own packages (nbclient, Jupyter Book, pytest,
ruff) do the work, with the versions that environment pins.

Example:
    >>> sorted(TASKS)[:3]
    ['_built', '_claims', '_doctests']
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from bookbuild import ROOT, built
from bookbuild.checks import (
    SUITE_PARTS,
    doctest_command,
    lint_commands,
    nbval_commands,
    shards,
    suite_command,
)
from bookbuild.claims import executed_claims
from bookbuild.execute import execute_chapters
from bookbuild.gpujob.run import gpu_checks
from bookbuild.grading.built_labs import lab_for
from bookbuild.grading.command import grade_command
from bookbuild.labs import chapters_with_exercises
from bookbuild.manifest import load_manifest
from bookbuild.release import release
from bookbuild.rerun import run_again
from bookbuild.shell import run, say


def run_task(command: str, args: Sequence[str] = ()) -> None:
    """Run one of :data:`TASKS` with its arguments.

    ``_execute [--into FOLDER] [--solutions] [CHAPTER ...]`` runs chapters (all by default;
    with ``--into``, as copies in FOLDER; with ``--solutions``, then their solutions and
    checks); ``_claims --into FOLDER [CHAPTER ...]`` runs copies with errors allowed and
    prints the claims that no longer hold (exit status 1 if any);
    ``_built [FOLDER]`` builds the HTML book, its browser lab site and the labs into build/
    (``dev.py book``) or FOLDER (once for a whole test run; :mod:`bookbuild.built`);
    ``_lint`` and ``_doctests`` run those checks; ``_suite
    PART [--skip EXPR] [--shard I/K] [PYTEST-ARGUMENT ...]`` runs one part of the test suite
    (or one of its K shards); ``_nbval [PYTEST-ARGUMENT ...]`` runs nbval on copies of the
    chapters in a temporary folder; ``_versions`` prints this environment's Python, TensorFlow
    and Keras versions for the test summary; ``_labs [CHAPTER ...]`` writes the student
    editions and autograders (build/labs/); ``_grade CHAPTER PATH ... [--timeout S] [--jobs N]
    [--seed N] [--out FOLDER]`` grades a class's notebooks side by side and writes grades.csv
    and a feedback file per student; ``_release VERSION`` sets the book's version everywhere;
    ``_gpu [--report PATH]`` runs the gpu job's checks (:mod:`bookbuild.gpujob.run`).

    Args:
        command: The task's name, with its leading underscore.
        args: Its command-line arguments.

    Raises:
        SystemExit: For an unknown task, or when the task fails.

    Example:
        >>> run_task("_versions")  # doctest: +ELLIPSIS
        3.1... 2... 3...
        >>> run_task("_deploy")
        Traceback (most recent call last):
        ...
        SystemExit: [dev] no task '_deploy'; the tasks are _execute, _claims, _built, _lint, _doctests, _suite, _nbval, _versions, _labs, _grade, _release, _gpu
    """  # noqa: E501
    if command not in TASKS:
        raise SystemExit(f"[dev] no task {command!r}; the tasks are {', '.join(TASKS)}")
    TASKS[command](list(args))


def _execute(args: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="dev.py _execute")
    parser.add_argument("--into", type=Path, default=None)
    parser.add_argument("--solutions", action="store_true", help="then the solutions' checks")
    parser.add_argument("chapters", nargs="*")
    options = parser.parse_args(args)
    execute_chapters(*options.chapters, into=options.into, solutions=options.solutions)


def _claims(args: list[str]) -> None:
    """Execute copies of the chapters into a folder, errors allowed; print the changed claims."""
    changes = [line for *_, found in executed_claims(Path(args[1]), *args[2:]) for line in found]
    print("\n".join(changes) if changes else "every claim holds")
    if changes:
        raise SystemExit(f"[dev] {len(changes)} claim(s) changed")


def _labs(args: list[str]) -> None:
    """Write the student edition and autograder of the chapters named (all by default).

    A lab built from the same chapter and code is kept; a new one takes the old one's place in
    one step, with its grades.csv and feedback/ (:func:`bookbuild.grading.built_labs.lab_for`).
    """
    for chapter in chapters_with_exercises(load_manifest(), args):
        lab = lab_for(chapter)
        print(f"{chapter['file']}: student edition {lab.student.relative_to(ROOT)}")
        print(f"{' ' * len(chapter['file'])}  answer key {lab.answer_key.relative_to(ROOT)}")
        print(f"{' ' * len(chapter['file'])}  autograder {lab.autograder.relative_to(ROOT)}")


def _grade(args: list[str]) -> None:
    """Grade a class's submissions of one chapter (``--help``): bookbuild/grading/command.py."""
    status = grade_command(args)
    if status:
        raise SystemExit(status)


def _suite(args: list[str]) -> None:
    """One part of the test suite, or one shard of it, with pytest's other arguments."""
    parser = argparse.ArgumentParser(prog="dev.py _suite")
    parser.add_argument("part", choices=SUITE_PARTS)
    parser.add_argument("--skip", default="")
    parser.add_argument("--shard", default="1/1", help="I/K: the I-th of K shards")
    known, extra = parser.parse_known_args(args)
    index, count = (int(n) for n in known.shard.split("/"))
    files = shards(count)[index - 1] if count > 1 else ["tests"]
    run(*suite_command(known.part, files=files, skip=known.skip, extra=extra))


def _nbval(args: list[str]) -> None:
    """Run nbval over copies of the chapters, so what they write stays out of book/.

    Each copy ends with :func:`bookbuild.rerun.run_again`'s cells: after nbval has compared
    every stored output, the same kernel runs the chapter again, then its solutions and checks.
    """
    import nbformat

    manifest = load_manifest()
    with tempfile.TemporaryDirectory(prefix="mirrorbook-nbval-") as folder:
        copy = Path(folder) / manifest["source"].name
        shutil.copytree(manifest["source"], copy, ignore=shutil.ignore_patterns("_build"))
        chapters = [dict(c, path=copy / c["path"].name) for c in manifest["chapters"]]
        for chapter in chapters:
            nb = nbformat.read(chapter["path"], as_version=4)
            nb.cells.extend(run_again(nb, times=1))
            nbformat.write(nb, chapter["path"])
        _run_all(nbval_commands({**manifest, "chapters": chapters}, extra=args))


def _run_all(commands: list[list[str]]) -> None:
    for command in commands:
        run(*command)


def _versions(args: list[str]) -> None:
    print(sys.version.split()[0], version("tensorflow"), _keras_version())


def _keras_version() -> str:
    """The installed Keras: the ``keras`` release, else ``keras-nightly`` (TensorFlow's own)."""
    for distribution in ("keras", "keras-nightly"):
        with contextlib.suppress(PackageNotFoundError):
            return version(distribution)
    return "none"


def _release(args: list[str]) -> None:
    """Set the book's version everywhere (``dev.py release VERSION``): bookbuild/release.py."""
    if len(args) != 1:
        raise SystemExit("[dev] release: give one version, e.g. python3 dev.py release 0.2.0")
    for path in release(args[0]):
        say(f"release: wrote {path}")
    ref = load_manifest()["book"]["ref"]
    say(f"release: version {args[0]}; the chapters install from and open at {ref}")


TASKS = {  # name -> function of the command-line arguments
    "_execute": _execute,
    "_claims": _claims,
    "_built": lambda args: built.build(Path(args[0]) if args else None),
    "_lint": lambda args: _run_all(lint_commands()),
    "_doctests": lambda args: run(*doctest_command(*args)),
    "_suite": _suite,
    "_nbval": _nbval,
    "_versions": _versions,
    "_labs": _labs,
    "_grade": _grade,
    "_release": _release,
    "_gpu": gpu_checks,
}
