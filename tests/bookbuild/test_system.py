"""bookbuild.system: the programs and interpreters dev.py needs from the machine."""

import pytest

from bookbuild import system


def test_missing_dot_without_root_names_the_package(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot, no apt-get here
    monkeypatch.setattr(system.os, "geteuid", lambda: 1000)
    with pytest.raises(SystemExit) as error:
        system.ensure_system_tools(system.DOT, system.CHROMIUM)
    message = str(error.value)
    assert "`dot` is missing" in message and "`chromium` is missing" in message
    assert "sudo apt-get install graphviz chromium" in message


def test_missing_dot_as_root_uses_apt_get(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(
        system.shutil, "which", lambda name: None if name == "dot" else f"/x/{name}"
    )
    monkeypatch.setattr(system.os, "geteuid", lambda: 0)
    monkeypatch.setattr(system, "run", lambda *cmd, **kw: calls.append(cmd))
    system.ensure_system_tools(system.DOT, system.CHROMIUM)
    assert calls[-1][:2] == ("apt-get", "install")
    assert "graphviz" in calls[-1] and "chromium" not in calls[-1]  # chromium is "there"


def test_nothing_to_do_when_everything_is_there(monkeypatch):
    monkeypatch.setattr(system, "run", lambda *cmd, **kw: pytest.fail("should not install"))
    monkeypatch.setattr(system.shutil, "which", lambda name: f"/usr/bin/{name}")
    system.ensure_system_tools(system.DOT, system.CHROMIUM)


def test_pyenv_shims_that_refuse_are_skipped(tmp_path, monkeypatch):
    shim = tmp_path / "python3.12"
    shim.write_text("#!/bin/sh\necho 'pyenv: python3.12: command not found' >&2\nexit 127\n")
    shim.chmod(0o755)
    assert system.interpreter_version(shim) is None
