"""bookbuild.checks: what lint, the doctests and tests, and nbval run."""

import sys
from itertools import combinations
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression

from bookbuild import ROOT
from bookbuild.checks import (
    DOCTESTED,
    SANITIZE,
    SUITE_PARTS,
    doctest_command,
    lint_commands,
    nbval_commands,
    pytest_command,
    shards,
    suite_command,
)


def _chapter(name, nbval, timeout):
    return {"path": Path(name), "nbval": nbval, "cell_timeout": timeout}


def test_every_package_with_examples_is_doctested_in_its_own_process():
    doctests = doctest_command()
    assert doctests[:5] == pytest_command()
    # Not the suite's conftest, nor its tests: the doctests see one device.
    assert doctests[5:] == ["--doctest-modules", *DOCTESTED]
    assert "tests" not in doctests and "tests/conftest.py" not in doctests
    for package in DOCTESTED:
        assert (ROOT / package / "__init__.py").is_file(), package
    assert "bookbuild" in DOCTESTED


def test_pytest_runs_in_the_given_python_without_a_cache():
    assert pytest_command("x") == [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "x"]
    assert pytest_command(python=Path("/venv/bin/python"))[0] == "/venv/bin/python"


def test_lint_checks_the_whole_tree_with_this_environments_ruff():
    assert lint_commands() == [
        [sys.executable, "-m", "ruff", "check", "."],
        [sys.executable, "-m", "ruff", "format", "--check", "."],
    ]


def test_nbval_runs_each_mode_once_with_its_longest_timeout():
    manifest = {
        "chapters": [
            _chapter("a.ipynb", "strict", 300),
            _chapter("b.ipynb", "lax", 60),
            _chapter("c.ipynb", "strict", 900),
        ]
    }
    commands = nbval_commands(manifest)
    assert [c[5] for c in commands] == ["--nbval", "--nbval-lax"]
    strict, lax = commands
    assert [c[5] for c in nbval_commands(manifest, rounds=2)] == ["--nbval"] * 2 + [
        "--nbval-lax"
    ] * 2
    assert strict[-3:] == ["--nbval-cell-timeout=900", "a.ipynb", "c.ipynb"]
    assert lax[-2:] == ["--nbval-cell-timeout=60", "b.ipynb"]
    assert strict[6:9] == ["--nbval-current-env", "--nbval-sanitize-with", str(SANITIZE)]
    assert SANITIZE.is_file()
    assert len(nbval_commands(manifest, rounds=1)) == 2


def test_nbval_covers_every_chapter_of_the_book(manifest):
    paths = {arg for command in nbval_commands(manifest) for arg in command[10:]}
    assert paths == {str(chapter["path"]) for chapter in manifest["chapters"]}


MARKERS = ("book", "grading", "browser", "replica_counts")


@pytest.mark.parametrize("marks", [set(c) for n in range(5) for c in combinations(MARKERS, n)])
def test_the_suite_parts_select_every_test_exactly_once(marks):
    # pytest's own marker expressions, evaluated for a test with these markers.
    chosen = [
        part
        for part in SUITE_PARTS
        if Expression.compile(suite_command(part)[-1]).evaluate(lambda name, **_: name in marks)
    ]
    assert len(chosen) == 1, (marks, chosen)


def test_shards_balance_by_duration_and_unknown_files_count_as_the_median():
    files = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py"))
    durations = {files[0]: 1000.0, files[1]: 10.0, files[2]: 20.0}
    first, second = shards(2, durations)
    assert first[0] == files[0] and files[0] not in second
    assert sorted(first + second) == files
    assert shards(1, {})[0] == sorted(files, key=lambda f: f)  # one shard: every file
