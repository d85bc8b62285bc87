"""dev.py, the runner behind the README's two commands."""

import subprocess
import sys

import pytest

import dev
from bookbuild import ROOT


def test_unknown_command_prints_usage_and_fails(capsys):
    with pytest.raises(SystemExit) as error:
        dev.main(["dev.py", "deploy"])
    assert error.value.code == 2
    assert "python3 dev.py test" in capsys.readouterr().out


def test_dev_py_starts_with_the_standard_library_alone():
    # -S: no site-packages, as on a fresh machine; bookbuild comes from the tree next to dev.py.
    done = subprocess.run(
        [sys.executable, "-S", "dev.py", "help"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "python3 dev.py book" in done.stdout
