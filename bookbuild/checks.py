"""The commands of the checks ``dev.py test`` runs in an environment: lint, tests, nbval.

Each check is given as its list of commands, data that tests can read;
:mod:`bookbuild.tasks` runs them with the environment's Python.

Example:
    >>> list(SUITE_PARTS)
    ['unit tests', 'chapters', 'grading', 'browser']
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bookbuild import ROOT
from bookbuild.manifest import NBVAL_MODES

SANITIZE = ROOT / "tests" / "book" / "nbval_sanitize.cfg"
# The packages whose docstring examples run as doctests.
DOCTESTED = ("mirrorkit", "widgets/mirrorwidgets", "bookbuild")
# The test suite's parts, each run as a stage of its own (one pytest process, or one per
# shard): a marker expression each. Together they select every test exactly once.
SUITE_PARTS = {
    "unit tests": "not (book or grading or browser)",
    "chapters": "book and not (grading or browser)",
    "grading": "grading and not browser",
    "browser": "browser",
}
# Seconds each test file's unit tests took in one run (`python3 bench/ci_budget.py
# --write-durations` remakes it): they balance the unit-test shards; a file missing there
# counts as the median. Only the balance depends on them, never what runs.
DURATIONS = ROOT / "tests" / "durations.json"


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


def doctest_command(*extra: str) -> list[str]:
    """The doctests of :data:`DOCTESTED`, in a process of their own.

    Doctests see TensorFlow's default single device; the suite simulates several replicas
    (``tests/conftest.py``), and a process cannot have both. Their local clusters fork from one
    warm process, as the suite's do (``mirrorkit.cluster._warm.environment_key`` leaves out
    the variable pytest changes for every test).

    Args:
        *extra: More pytest arguments.

    Returns:
        The command.

    Example:
        >>> doctest_command("-q")[5:]
        ['--doctest-modules', 'mirrorkit', 'widgets/mirrorwidgets', 'bookbuild', '-q']
    """
    return pytest_command("--doctest-modules", *DOCTESTED, *extra)


def suite_command(part: str, *, files=("tests",), skip: str = "", extra=()) -> list[str]:
    """The pytest command of one part of the suite (:data:`SUITE_PARTS`), or of one shard.

    Args:
        part: A key of :data:`SUITE_PARTS`.
        files: The test files or folders to collect from (a shard's files).
        skip: A marker expression of tests this job leaves to another (e.g. ``grading``).
        extra: More pytest arguments (a JUnit report, a temporary folder).

    Returns:
        The command.

    Raises:
        ValueError: For a part that :data:`SUITE_PARTS` does not name.

    Example:
        >>> suite_command("chapters", skip="replica_counts")[5:]
        ['tests', '-m', '(book and not (grading or browser)) and not (replica_counts)']
        >>> suite_command("docs")
        Traceback (most recent call last):
        ...
        ValueError: part must be one of SUITE_PARTS. Received: part='docs'; write part='unit tests'.
    """
    if part not in SUITE_PARTS:
        raise ValueError(
            f"part must be one of SUITE_PARTS. Received: part={part!r}; write part='unit tests'."
        )
    selected = f"({SUITE_PARTS[part]}) and not ({skip})" if skip else SUITE_PARTS[part]
    return pytest_command(*files, "-m", selected, *extra)


def test_files() -> list[str]:
    """Every test file under ``tests/``, by path relative to the top folder, sorted.

    Returns:
        The paths, as text with ``/``.

    Example:
        >>> "tests/test_dev.py" in test_files()
        True
    """
    return sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py"))


def shards(count: int, durations: dict[str, float] | None = None) -> list[list[str]]:
    """Every test file under ``tests/``, cut into ``count`` shards of about equal time.

    The longest files go first, each to the shard with the least time so far; a file that
    ``durations`` (default: :data:`DURATIONS`) does not list counts as the median of those
    it lists with more than 0 seconds.

    Args:
        count: How many shards (at least 1).
        durations: Seconds per test file, by path relative to the top folder.

    Returns:
        ``count`` lists of paths relative to the top folder; together, every test file once.

    Example:
        >>> sorted(sum(shards(2), [])) == test_files()
        True
        >>> shards(2, {"tests/test_dev.py": 900.0, "tests/test_architecture.py": 1.0})[0][0]
        'tests/test_dev.py'
    """
    if durations is None:
        durations = json.loads(DURATIONS.read_text()) if DURATIONS.is_file() else {}
    files = test_files()
    known = sorted(v for v in durations.values() if v > 0)
    median = known[(len(known) - 1) // 2] if known else 1.0
    cut: list[list[str]] = [[] for _ in range(count)]
    load = [0.0] * count
    for file in sorted(files, key=lambda f: (-durations.get(f, median), f)):
        lightest = load.index(min(load))
        cut[lightest].append(file)
        load[lightest] += durations.get(file, median)
    return cut


def nbval_commands(manifest: dict, rounds: int = 1, extra=()) -> list[list[str]]:
    """Every chapter through nbval, ``rounds`` times in a row per mode.

    Once is the default: the chapters' copies that ``dev.py _nbval`` passes end with a second
    Run All and the solutions (:mod:`bookbuild.rerun`), so a second round would repeat that.

    Chapters are grouped by their ``nbval`` mode (:data:`~bookbuild.manifest.NBVAL_MODES`);
    a group's cell timeout is the longest of its chapters'. Outputs are compared after
    ``tests/book/nbval_sanitize.cfg`` has masked what cannot repeat.

    Args:
        manifest: What :func:`~bookbuild.manifest.load_manifest` returns.
        rounds: How many times each group runs.
        extra: More pytest arguments.

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
            *extra,
            *(c["path"] for c in chapters),
        )
        commands += [list(command) for _ in range(rounds)]
    return commands
