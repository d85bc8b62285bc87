"""dev.py, the runner behind the README's two commands."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import dev
import mirrorkit as mk
import mirrorwidgets


def test_missing_dot_without_root_names_the_package(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot, no apt-get here
    monkeypatch.setattr(dev.os, "geteuid", lambda: 1000)
    with pytest.raises(SystemExit) as error:
        dev.ensure_system_tools(dev.DOT, dev.CHROMIUM)
    message = str(error.value)
    assert "`dot` is missing" in message and "`chromium` is missing" in message
    assert "sudo apt-get install graphviz chromium" in message


def test_missing_dot_as_root_uses_apt_get(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(dev.shutil, "which", lambda name: None if name == "dot" else f"/x/{name}")
    monkeypatch.setattr(dev.os, "geteuid", lambda: 0)
    monkeypatch.setattr(dev, "run", lambda *cmd, **kw: calls.append(cmd))
    dev.ensure_system_tools(dev.DOT, dev.CHROMIUM)
    assert calls[-1][:2] == ("apt-get", "install")
    assert "graphviz" in calls[-1] and "chromium" not in calls[-1]  # chromium is "there"


def test_nothing_to_do_when_everything_is_there(monkeypatch):
    monkeypatch.setattr(dev, "run", lambda *cmd, **kw: pytest.fail("should not install"))
    monkeypatch.setattr(dev.shutil, "which", lambda name: f"/usr/bin/{name}")
    dev.ensure_system_tools(dev.DOT, dev.CHROMIUM)


def test_unknown_command_prints_usage_and_fails(capsys):
    with pytest.raises(SystemExit) as error:
        dev.main(["dev.py", "deploy"])
    assert error.value.code == 2
    assert "python3 dev.py test" in capsys.readouterr().out


def test_dev_py_starts_with_the_standard_library_alone():
    # -S: no site-packages, as on a fresh machine; bookbuild comes from the tree next to dev.py.
    done = subprocess.run(
        [sys.executable, "-S", "dev.py", "help"], cwd=dev.ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "python3 dev.py book" in done.stdout


def test_every_task_the_jobs_start_exists(monkeypatch):
    started = set()
    monkeypatch.setattr(dev.Env, "dev", lambda self, task, *args, **kw: started.add(task))
    monkeypatch.setattr(dev, "ensure_env", lambda env, **kw: None)
    monkeypatch.setattr(dev, "clone_of_this_tree", lambda target: "git+file:///x@0")
    monkeypatch.setattr(dev, "check_hosted_setup", lambda folder: None)
    monkeypatch.setattr(dev.Env, "pip", lambda self, *args, **kw: None)
    jobs = dev.test_jobs(dev.book_env())
    for stage in [s for job in jobs for s in job.stages or ()]:
        stage.action()
    assert {"_lint", "_doctests", "_suite", "_nbval", "_execute"} <= started <= set(dev.TASKS)
    assert "_versions" in dev.TASKS


def test_every_job_runs_every_part_of_the_suite_it_can_and_quick_only_the_unit_tests():
    jobs = {job.name: job for job in dev.test_jobs(dev.book_env())}
    kinds = {name: {s.kind for s in job.stages or ()} for name, job in jobs.items()}
    assert kinds["reference"] == {"set-up", "lint", "doctests", *dev.SUITE_PARTS, "nbval"}
    assert kinds["hosted"] == {"set-up", "hosted execution", "doctests", "unit tests", "chapters"}
    for name in set(jobs) - {"reference", "hosted"}:
        assert jobs[name].stages is None or kinds[name] == {
            "set-up",
            "doctests",
            "unit tests",
            "chapters",
        }
    (quick,) = dev.test_jobs(dev.book_env(), quick=True)
    assert {s.kind for s in quick.stages} == {"set-up", "lint", "doctests", "unit tests"}
    only = dev.test_jobs(dev.book_env(), {"hosted"})
    assert [job.name for job in only if job.stages] == ["hosted"]


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
    for path in dev.PYPROJECTS:
        floor, cap = _floor_and_cap(_pyproject(path)["requires-python"])
        minors = range(int(floor.split(".")[1]), int(cap.split(".")[1]))
        assert tuple(f"3.{minor}" for minor in minors) == dev.PYTHONS, path
    assert dev.HOSTED_PYTHON in dev.PYTHONS


def test_widgets_require_exactly_this_mirrorkit():
    # A different project called "mirrorkit" is on PyPI: a bare requirement would install it.
    kit, widgets = (_pyproject(p) for p in dev.PYPROJECTS)
    assert f"mirrorkit=={kit['version']}" in widgets["dependencies"]
    assert kit["version"] == mk.__version__ == mirrorwidgets.__version__ == widgets["version"]


@pytest.mark.parametrize("name", ["tensorflow", "keras"])
def test_the_locks_pin_both_ends_of_the_supported_range(name):
    declared = next(d for d in _pyproject(dev.PYPROJECTS[0])["dependencies"] if d.startswith(name))
    floor, cap = _floor_and_cap(declared)
    assert _pins(dev.HOSTED_LOCK)[name] == floor, "the hosted job tests the low end"
    newest = _pins(dev.LOCK)[name]
    as_tuple = lambda v: tuple(int(n) for n in v.split("."))  # noqa: E731
    assert as_tuple(floor) < as_tuple(newest) < as_tuple(cap), "lock.txt tests the high end"


def test_locks_pin_everything_but_this_tree():
    for lock in (dev.LOCK, dev.HOSTED_LOCK):
        text = lock.read_text()
        requirements = [line for line in text.splitlines() if line and line[0].isalpha()]
        assert all("==" in line for line in requirements), lock
        assert not any(line.startswith(dev.OUR_DISTRIBUTIONS) for line in requirements), lock
        assert "python3 dev.py lock" in text  # says how it is remade


def test_the_running_interpreter_is_found_and_a_missing_one_is_named():
    found, how = dev.find_python(dev.this_python(), install=False)
    assert found is not None and dev.interpreter_version(found) == dev.this_python(), how
    missing, why = dev.find_python("3.99", install=False)
    assert missing is None
    assert "python3.99 on PATH" in why and "pyenv" in why


def test_a_job_that_cannot_run_is_reported_by_name(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(dev, "TIMES", tmp_path / "times.json")
    monkeypatch.setattr(dev, "LOGS", tmp_path)
    jobs = [
        dev.Job("reference", "lint", [dev.Stage("reference", "lint", lambda: None)]),
        dev.Job("python3.13", "tests", None, detail="Python 3.13: no interpreter: looked at x"),
    ]
    dev.run_stages(jobs[0].stages, lanes=1, logs=tmp_path, echo=False)
    assert dev.summarize(jobs, wall=1.0) == 0
    out = capsys.readouterr().out
    assert "python3.13: NOT RUN: Python 3.13: no interpreter" in out
    assert "where the time went" in out and "the ten slowest tests" in out
    assert (tmp_path / "times.json").is_file()

    def boom():
        raise SystemExit("[dev] boom")

    failing = dev.Job("hosted", "x", [dev.Stage("hosted", "set-up", boom)])
    dev.run_stages(failing.stages, lanes=1, logs=tmp_path, echo=False)
    assert dev.summarize([failing], wall=1.0) == 1
    assert "hosted/set-up: FAILED: [dev] boom" in capsys.readouterr().out


def test_pyenv_shims_that_refuse_are_skipped(tmp_path, monkeypatch):
    shim = tmp_path / "python3.12"
    shim.write_text("#!/bin/sh\necho 'pyenv: python3.12: command not found' >&2\nexit 127\n")
    shim.chmod(0o755)
    assert dev.interpreter_version(shim) is None


def test_environment_yml_is_conda_forge_only_and_installs_from_the_lock():
    text = (dev.ROOT / "environment.yml").read_text()
    assert re.search(r"channels:\n  - conda-forge\n(?!  -)", text)
    for needed in ("python=3.11", "graphviz", "pip", "-e .[book,test]", "-e ./widgets[test]"):
        assert needed in text
    assert f"-c {dev.LOCK.relative_to(dev.ROOT).as_posix()}" in text


def test_test_latest_names_each_failure_from_pytests_report(tmp_path):
    report = tmp_path / "tests.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.a" name="test_ok"/>'
        '<testcase classname="tests.a" name="test_bad"><failure message="assert 1 == 2&#10;more"/>'
        "</testcase>"
        '<testcase classname="tests.b" name="test_setup"><error message="fixture broke"/>'
        "</testcase>"
        "</testsuite></testsuites>"
    )
    assert dev.failures_in(report, "tests") == [
        "tests: tests.a::test_bad: assert 1 == 2",
        "tests: tests.b::test_setup: fixture broke",
    ]
    assert dev.failures_in(tmp_path / "missing.xml", "doctests") == [
        "doctests: pytest wrote no report (it could not start; output above)"
    ]
