"""The commands of the checks ``dev.py test`` runs in an environment: lint, tests, nbval.

Each check is given as its list of commands, data that tests can read;
:mod:`bookbuild.tasks` runs them with the environment's Python.
"""

from __future__ import annotations

import sys
from pathlib import Path

from bookbuild import ROOT
from bookbuild.manifest import NBVAL_MODES

SANITIZE = ROOT / "tests" / "book" / "nbval_sanitize.cfg"
# The packages whose docstring examples run as doctests.
DOCTESTED = ("mirrorkit", "widgets/mirrorwidgets", "bookbuild")


def pytest_command(*args: str | Path, python: str | Path = sys.executable) -> list[str]:
    """A pytest command line: pytest run by ``python``, writing no cache into the tree.

    Args:
        *args: pytest's arguments.
        python: The interpreter; this one by default.

    Returns:
        The command as a list of strings.

    Example:
        >>> pytest_command("tests", python="python3")
        ['python3', '-m', 'pytest', '-p', 'no:cacheprovider', 'tests']
    """
    return [str(c) for c in (python, "-m", "pytest", "-p", "no:cacheprovider", *args)]


def lint_commands() -> list[list[str]]:
    """Ruff's lint, then its format check, over the whole tree (settings: pyproject.toml).

    Returns:
        The two commands, run in the top folder.

    Example:
        >>> [command[1:] for command in lint_commands()]
        [['-m', 'ruff', 'check', '.'], ['-m', 'ruff', 'format', '--check', '.']]
    """
    ruff = [sys.executable, "-m", "ruff"]
    return [[*ruff, "check", "."], [*ruff, "format", "--check", "."]]


def unit_test_commands(*extra: str) -> list[list[str]]:
    """The doctests of :data:`DOCTESTED`, then the test suite, as two processes.

    Doctests see TensorFlow's default single device; the suite simulates several replicas
    (``tests/conftest.py``), and a process cannot have both.

    Args:
        *extra: More pytest arguments for both.

    Returns:
        The two commands.

    Example:
        >>> [command[5:] for command in unit_test_commands("-x")]
        [['--doctest-modules', 'mirrorkit', 'widgets/mirrorwidgets', 'bookbuild', '-x'], ['tests', '-x']]
    """  # noqa: E501
    return [
        pytest_command("--doctest-modules", *DOCTESTED, *extra),
        pytest_command("tests", *extra),
    ]


def nbval_commands(manifest: dict, rounds: int = 1) -> list[list[str]]:
    """Every chapter through nbval, ``rounds`` times in a row per mode.

    Once is the default: ``tests/book/test_rerun.py`` already runs every chapter twice in one
    kernel, in the chapter's own folder, so a second round here would test re-running again.

    Chapters are grouped by their ``nbval`` mode (:data:`~bookbuild.manifest.NBVAL_MODES`);
    a group's cell timeout is the longest of its chapters'. Outputs are compared after
    ``tests/book/nbval_sanitize.cfg`` has masked what cannot repeat.

    Args:
        manifest: What :func:`~bookbuild.manifest.load_manifest` returns.
        rounds: How many times each group runs.

    Returns:
        One pytest command per mode and round; none for a mode no chapter uses.

    Example:
        >>> manifest = {"chapters": [
        ...     {"path": Path("a.ipynb"), "nbval": "strict", "cell_timeout": 300},
        ...     {"path": Path("b.ipynb"), "nbval": "strict", "cell_timeout": 60},
        ... ]}
        >>> for command in nbval_commands(manifest, rounds=2):
        ...     print(command[5], command[-3], *command[-2:])
        --nbval --nbval-cell-timeout=300 a.ipynb b.ipynb
        --nbval --nbval-cell-timeout=300 a.ipynb b.ipynb
    """
    commands = []
    for mode, flag in NBVAL_MODES.items():
        chapters = [c for c in manifest["chapters"] if c["nbval"] == mode]
        if not chapters:
            continue
        timeout = max(c["cell_timeout"] for c in chapters)
        command = pytest_command(
            flag,
            "--nbval-current-env",
            "--nbval-sanitize-with",
            SANITIZE,
            f"--nbval-cell-timeout={timeout}",
            *(c["path"] for c in chapters),
        )
        commands += [list(command) for _ in range(rounds)]
    return commands
