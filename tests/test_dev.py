"""dev.py, the runner behind the README's two commands."""

import pytest

import dev


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
