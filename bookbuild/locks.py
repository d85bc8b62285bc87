"""The lock files: remaking them, and trying the newest releases beside them (neither is CI).

``dev.py lock`` re-resolves ``requirements/*.txt`` (:func:`lock`); ``dev.py test-latest``
installs the newest release of every dependency, runs the tests and lists what broke
(:func:`test_latest`).

Example:
    >>> [target.name for _, target, _, _ in LOCKS]
    ['lock.txt', 'colab.txt']
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import tomllib
from pathlib import Path

from bookbuild import ROOT
from bookbuild.checks import DOCTESTED, pytest_command
from bookbuild.environments import (
    HOSTED_LOCK,
    HOSTED_PYTHON,
    LOCK,
    OUR_DISTRIBUTIONS,
    PYPROJECTS,
    PYTHONS,
    REQUIREMENTS,
    VENVS,
    Env,
    ensure_env,
    optional_requirements,
    tool,
)
from bookbuild.junit import failures_in
from bookbuild.shell import CHILD_ENV, run, say
from bookbuild.system import interpreter_version

LOCKS = (  # (input, output, Python, universal: one lock for every Python in PYTHONS)
    (REQUIREMENTS / "lock.in", LOCK, PYTHONS[0], True),
    (REQUIREMENTS / "colab.in", HOSTED_LOCK, HOSTED_PYTHON, False),
)


def lock() -> None:
    """Re-resolve requirements/*.txt to the newest releases their inputs allow.

    Example:
        >>> lock()  # doctest: +SKIP
        [dev] wrote requirements/lock.txt
        [dev] wrote requirements/colab.txt
    """
    uv = tool("uv")
    for source, target, python, universal in LOCKS:
        run(
            uv,
            "pip",
            "compile",
            "--quiet",
            "--upgrade",
            source.relative_to(ROOT),
            "-o",
            target.relative_to(ROOT),
            "--python-version",
            python,
            *(["--universal"] if universal else []),
            *(arg for name in OUR_DISTRIBUTIONS for arg in ("--no-emit-package", name)),
            "--custom-compile-command",
            "python3 dev.py lock",
        )
        say(f"wrote {target.relative_to(ROOT)}")


def test_latest(book: Env) -> int:
    """Install the newest release of every dependency (our caps ignored), test, report.

    Args:
        book: The book's environment, whose versions the report compares with.

    Returns:
        1 if anything broke.

    Example:
        >>> from bookbuild.environments import book_env
        >>> test_latest(book_env())  # doctest: +SKIP
        [dev] newest releases against requirements/lock.txt (Python 3.11):
        ...
    """
    env = Env(path=VENVS / "latest", interpreter=book.interpreter, lock=None, packages=())
    ensure_env(env, fresh=True)
    env.pip("--upgrade", "pip", "setuptools", *dependency_names())
    env.pip("--no-deps", "--no-build-isolation", "-e", ROOT, "-e", ROOT / "widgets")
    ensure_env(book)  # what the lock gives this Python, to compare with
    pinned = installed(book.python)
    newer = [
        f"{name} {pinned[name]} -> {version}"
        for name, version in installed(env.python).items()
        if name in pinned and pinned[name] != version
    ]
    broke = []
    with tempfile.TemporaryDirectory(prefix="mirrorbook-latest-") as tmp:
        for label, args in (("doctests", ["--doctest-modules", *DOCTESTED]), ("tests", ["tests"])):
            report = Path(tmp) / f"{label}.xml"
            subprocess.run(
                pytest_command("-q", *args, f"--junitxml={report}", python=env.python),
                cwd=ROOT,
                env={**os.environ, **CHILD_ENV},
            )
            broke += failures_in(report, label)
        try:  # every chapter, errors allowed: prints each claim that changed
            env.dev("_claims", "--into", tmp)
        except SystemExit:
            broke.append("claims: some no longer hold, or a chapter failed (listed above)")
    python = interpreter_version(book.interpreter)
    say(f"newest releases against requirements/lock.txt (Python {python}):")
    print("\n".join(f"  {line}" for line in newer) or "  (nothing newer than the lock)")
    say("what broke:" if broke else "nothing broke")
    print("\n".join(f"  {line}" for line in broke))
    return 1 if broke else 0


test_latest.__test__ = False  # a command, not a test for pytest to collect


def dependency_names() -> list[str]:
    """Every distribution both pyproject files require (with the book and test extras).

    Example:
        >>> "tensorflow" in dependency_names() and "mirrorkit" not in dependency_names()
        True
    """
    return sorted(
        {
            re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0]
            for pyproject in PYPROJECTS
            for requirement in [
                *tomllib.loads(pyproject.read_text())["project"]["dependencies"],
                *optional_requirements(pyproject, "book", "labs", "test"),
            ]
        }
        - set(OUR_DISTRIBUTIONS)
    )


def installed(python: Path) -> dict[str, str]:
    """The distributions installed for ``python``: normalized name -> version.

    Example:
        >>> import sys
        >>> "pip" in installed(Path(sys.executable))
        True
    """
    listed = subprocess.run(
        [python, "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True
    ).stdout
    found = re.findall(r"^([\w.-]+)==(\S+)", listed, re.M)
    return {re.sub(r"[-_.]+", "-", name).lower(): version for name, version in found}
