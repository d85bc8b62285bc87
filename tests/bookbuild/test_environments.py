"""bookbuild.environments: the supported Pythons, the locks and the virtual environments."""

import re
import tomllib
from pathlib import Path

import pytest

import mirrorkit as mk
import mirrorwidgets
from bookbuild import environments, system


def _pyproject(path):
    with open(path, "rb") as f:
        return tomllib.load(f)["project"]


def _floor_and_cap(requirement: str) -> tuple[str, str]:
    return (
        re.search(r">=\s*([\d.]+)", requirement).group(1),
        re.search(r"<\s*([\d.]+)", requirement).group(1),
    )


def _pins(lock: Path) -> dict[str, str]:
    return dict(re.findall(r"^([\w.-]+)==([^\s;]+)", lock.read_text(), re.M))


def test_supported_pythons_agree_with_both_distributions():
    for path in environments.PYPROJECTS:
        floor, cap = _floor_and_cap(_pyproject(path)["requires-python"])
        minors = range(int(floor.split(".")[1]), int(cap.split(".")[1]))
        assert tuple(f"3.{minor}" for minor in minors) == environments.PYTHONS, path
    assert environments.HOSTED_PYTHON in environments.PYTHONS


def test_widgets_require_exactly_this_mirrorkit():
    # A different project called "mirrorkit" is on PyPI: a bare requirement would install it.
    kit, widgets = (_pyproject(p) for p in environments.PYPROJECTS)
    assert f"mirrorkit=={kit['version']}" in widgets["dependencies"]
    assert kit["version"] == mk.__version__ == mirrorwidgets.__version__ == widgets["version"]


@pytest.mark.parametrize("name", ["tensorflow", "keras"])
def test_the_locks_pin_both_ends_of_the_supported_range(name):
    declared = next(
        d for d in _pyproject(environments.PYPROJECTS[0])["dependencies"] if d.startswith(name)
    )
    floor, cap = _floor_and_cap(declared)
    assert _pins(environments.HOSTED_LOCK)[name] == floor, "the hosted job tests the low end"
    newest = _pins(environments.LOCK)[name]
    as_tuple = lambda v: tuple(int(n) for n in v.split("."))  # noqa: E731
    assert as_tuple(floor) < as_tuple(newest) < as_tuple(cap), "lock.txt tests the high end"


def test_locks_pin_everything_but_this_tree():
    for lock in (environments.LOCK, environments.HOSTED_LOCK):
        text = lock.read_text()
        requirements = [line for line in text.splitlines() if line and line[0].isalpha()]
        assert all("==" in line for line in requirements), lock
        assert not any(line.startswith(environments.OUR_DISTRIBUTIONS) for line in requirements), (
            lock
        )
        assert "python3 dev.py lock" in text  # says how it is remade


def test_the_running_interpreter_is_found_and_a_missing_one_is_named():
    found, how = environments.find_python(system.this_python(), install=False)
    assert found is not None and system.interpreter_version(found) == system.this_python(), how
    missing, why = environments.find_python("3.99", install=False)
    assert missing is None
    assert "python3.99 on PATH" in why and "pyenv" in why


def test_environment_yml_is_conda_forge_only_and_installs_from_the_lock():
    text = (environments.ROOT / "environment.yml").read_text()
    assert re.search(r"channels:\n  - conda-forge\n(?!  -)", text)
    for needed in ("python=3.11", "graphviz", "pip", "-e .[book,labs,test]", "-e ./widgets[test]"):
        assert needed in text
    assert f"-c {environments.LOCK.relative_to(environments.ROOT).as_posix()}" in text
