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
# A line of `dev.py _claims` that names a changed claim (bookbuild.claims.claim_changes).
CLAIM_LINE = re.compile(r"^\S+\.ipynb cell \d+ ")


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
    env = fresh_env(VENVS / "latest", book.interpreter)
    env.pip("--upgrade", "pip", "setuptools", *dependency_names())
    install_ours(env)
    ensure_env(book)  # what the lock gives this Python, to compare with
    pinned = installed(book.python)
    newer = [
        f"{name} {pinned[name]} -> {version}"
        for name, version in installed(env.python).items()
        if name in pinned and pinned[name] != version
    ]
    with tempfile.TemporaryDirectory(prefix="mirrorbook-latest-") as tmp:
        tests = pytest_command("-q", "tests", python=env.python)
        suites = [("doctests", doctests_command(env)), ("tests", tests)]
        broke, _ = check_environment(env, Path(tmp), suites)
    python = interpreter_version(book.interpreter)
    say(f"newest releases against requirements/lock.txt (Python {python}):")
    print("\n".join(f"  {line}" for line in newer) or "  (nothing newer than the lock)")
    say("what broke:" if broke else "nothing broke")
    print("\n".join(f"  {line}" for line in broke))
    return 1 if broke else 0


test_latest.__test__ = False  # a command, not a test for pytest to collect


def fresh_env(path: Path, interpreter: Path) -> Env:
    """An empty virtual environment at ``path``, made again from nothing (no lock, no packages).

    Example:
        >>> fresh_env(VENVS / "latest", Path("/usr/bin/python3.12"))  # doctest: +SKIP
    """
    env = Env(path=path, interpreter=interpreter, lock=None, packages=())
    ensure_env(env, fresh=True)
    return env


def install_ours(env: Env, *options: str) -> None:
    """Install mirrorkit and mirrorbook-widgets from this tree, editable, without dependencies.

    Args:
        env: The environment, whose dependencies are already installed.
        *options: More pip options (``--ignore-requires-python``).

    Example:
        >>> install_ours(Env(VENVS / "latest", Path("python3"), None))  # doctest: +SKIP
    """
    env.pip("--no-deps", "--no-build-isolation", *options, "-e", ROOT, "-e", ROOT / "widgets")


def doctests_command(env: Env) -> list[str]:
    """The doctests of :data:`~bookbuild.checks.DOCTESTED`, run by ``env``'s Python.

    Example:
        >>> doctests_command(Env(VENVS / "latest", Path("python3"), None))[-4:]
        ['--doctest-modules', 'mirrorkit', 'widgets/mirrorwidgets', 'bookbuild']
    """
    return pytest_command("-q", "--doctest-modules", *DOCTESTED, python=env.python)


def check_environment(
    env: Env, folder: Path, suites: list[tuple[str, list]], extra_env: dict | None = None
) -> tuple[list[str], list[str]]:
    """Run pytest commands, then every chapter with errors allowed, in an environment.

    Args:
        env: The environment.
        folder: Where the JUnit reports and the executed chapters go.
        suites: ``(label, pytest command)`` pairs; each gets ``--junitxml`` added.
        extra_env: More environment variables for the pytest commands.

    Returns:
        What broke (one line per failed test, per changed claim, or per failed command) and
        the changed claims alone (:func:`bookbuild.claims.claim_changes`'s lines).

    Example:
        >>> broke, claims = check_environment(env, folder, [])  # doctest: +SKIP
    """
    broke = []
    for label, command in suites:
        report = folder / f"{label}.xml"
        subprocess.run(
            [*map(str, command), f"--junitxml={report}"],
            cwd=ROOT,
            env={**os.environ, **CHILD_ENV, **(extra_env or {})},
        )
        broke += failures_in(report, label)
    status, output = run_teed([env.python, ROOT / "dev.py", "_claims", "--into", folder])
    claims = [line for line in output.splitlines() if CLAIM_LINE.match(line)]
    broke += [f"claim: {line}" for line in claims]
    if status and not claims:
        broke.append(f"claims: dev.py _claims failed with status {status} (output above)")
    return broke, claims


def run_teed(command: list) -> tuple[int, str]:
    r"""Run a command from the top folder, printing its output as it comes; keep it too.

    Returns:
        Its exit status and what it printed (standard output and error, merged).

    Example:
        >>> import sys
        >>> run_teed([sys.executable, "-c", "print('hello')"])
        hello
        (0, 'hello\n')
    """
    lines = []
    with subprocess.Popen(
        [str(part) for part in command],
        cwd=ROOT,
        env={**os.environ, **CHILD_ENV},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as process:
        for line in process.stdout:
            print(line, end="", flush=True)
            lines.append(line)
    return process.returncode, "".join(lines)


def dependency_names() -> list[str]:
    """Every distribution both pyproject files require (with the book and test extras).

    Example:
        >>> "tensorflow" in dependency_names() and "mirrorkit" not in dependency_names()
        True
    """
    return sorted({requirement_name(r) for r in dependency_requirements()})


def dependency_requirements() -> list[str]:
    """Every requirement of both pyproject files (with the book, labs and test extras), as written.

    Example:
        >>> "jupyter-book==1.0.4" in dependency_requirements()
        True
    """
    return [
        requirement
        for pyproject in PYPROJECTS
        for requirement in [
            *tomllib.loads(pyproject.read_text())["project"]["dependencies"],
            *optional_requirements(pyproject, "book", "labs", "test"),
        ]
        if requirement_name(requirement) not in OUR_DISTRIBUTIONS
    ]


def requirement_name(requirement: str) -> str:
    """The distribution a requirement names.

    Example:
        >>> requirement_name("tensorflow>=2.20.0,<2.22")
        'tensorflow'
    """
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0]


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
