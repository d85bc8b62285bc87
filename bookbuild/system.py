"""What ``dev.py`` needs from the machine: system programs and Python interpreters.

Programs are found on PATH or installed with apt-get when run as root; otherwise the message
names the package to install. Interpreters are found on PATH, in pyenv's and uv's folders and
the usual places, and probed: one counts only if it runs and can make virtual environments.

Example:
    >>> interpreter_version(sys.executable) == this_python()
    True
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from bookbuild.shell import run, say

# Programs the project needs from the system: (program, Debian package, what it is for).
DOT = ("dot", "graphviz", "graphviz's `dot` draws the topology diagrams")
CHROMIUM = ("chromium", "chromium", "Chromium runs the widgets' browser tests")
# A real Slurm for tests/mirrorkit/cluster/test_slurm_job.py: a controller, nodes, munge.
SLURM = (
    ("slurmctld", "slurmctld", "Slurm's controller runs the tests' sbatch jobs"),
    ("slurmd", "slurmd", "Slurm's node daemon runs the tests' jobs on two nodes"),
    ("sbatch", "slurm-client", "sbatch submits the script slurm_script writes"),
    ("munged", "munge", "munge authenticates Slurm's daemons to each other"),
)


def can_apt_get() -> bool:
    """Whether this process may install Debian packages: root, with apt-get on PATH.

    Example:
        >>> can_apt_get() in (True, False)
        True
    """
    return os.name == "posix" and os.geteuid() == 0 and bool(shutil.which("apt-get"))


def ensure_system_tools(*tools: tuple[str, str, str]) -> None:
    """Install missing programs with apt-get when we can; otherwise say which package to get.

    Args:
        *tools: ``(program, Debian package, what it is for)``, like :data:`DOT`.

    Raises:
        SystemExit: If a program is missing and apt-get cannot install it; the message names
            the packages and how to install them.

    Example:
        >>> ensure_system_tools(("python3", "python3", "runs dev.py"))  # found: nothing to do
    """
    missing = [tool for tool in tools if not shutil.which(tool[0])]
    if not missing:
        return
    packages = [package for _, package, _ in missing]
    if can_apt_get():
        say(f"installing the Debian package(s) {', '.join(packages)} (apt-get)")
        run("apt-get", "update", "-q")
        run("apt-get", "install", "-y", "-q", "--no-install-recommends", *packages)
        return
    reasons = "; ".join(f"`{program}` is missing ({why})" for program, _, why in missing)
    names = " ".join(packages)
    raise SystemExit(
        f"[dev] {reasons}. Install the package(s) named {names} "
        f"(Debian/Ubuntu: sudo apt-get install {names}; macOS: brew install {names}; "
        f"conda: conda install -c conda-forge {names}), then run this command again."
    )


def this_python() -> str:
    """The running interpreter's version, ``"3.12"``.

    Example:
        >>> this_python() == "%d.%d" % sys.version_info[:2]
        True
    """
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def interpreter_version(executable: str | Path) -> str | None:
    """'3.12' for an interpreter that runs and can make virtual environments, else None.

    Args:
        executable: The interpreter (a pyenv shim that refuses to run counts as none).

    Example:
        >>> interpreter_version("/no/such/python") is None
        True
    """
    probe = "import sys, venv, ensurepip; print('%d.%d' % sys.version_info[:2])"
    try:
        out = subprocess.run(
            [str(executable), "-c", probe], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def interpreter_candidates(version: str) -> list[Path]:
    """Where a Python of this version may be: PATH, pyenv's and uv's folders, the usual places.

    Args:
        version: ``"3.12"``.

    Returns:
        Paths to try, most likely first, each once (they may not exist or not run).

    Example:
        >>> Path("/usr/bin/python3.99") in interpreter_candidates("3.99")
        True
    """
    found = [Path(sys.executable)] if this_python() == version else []
    if on_path := shutil.which(f"python{version}"):
        found.append(Path(on_path))  # may be a pyenv shim that refuses: each is tried
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    uv = Path(os.environ.get("UV_PYTHON_INSTALL_DIR", Path.home() / ".local/share/uv/python"))
    patterns = (
        f"{pyenv}/{version}.*/bin/python{version}",
        f"{uv}/cpython-{version}.*/bin/python{version}",
    )
    for pattern in patterns:
        by_patch = sorted(glob.glob(pattern), key=lambda p: [int(n) for n in re.findall(r"\d+", p)])
        found += [Path(p) for p in reversed(by_patch)]
    found += [Path(d) / f"python{version}" for d in ("/usr/local/bin", "/usr/bin")]
    return list(dict.fromkeys(found))


def install_python_with_apt(version: str) -> str:
    """Install Python ``version`` and its venv module with apt-get, if this process may.

    Args:
        version: ``"3.12"``.

    Returns:
        What was done or why not, for the message naming a missing interpreter.

    Example:
        >>> install_python_with_apt("3.99").startswith("apt-get")
        True
    """
    packages = [f"python{version}", f"python{version}-venv"]
    if not can_apt_get():
        return "apt-get: not available (needs root and apt-get)"
    known = subprocess.run(["apt-cache", "show", *packages], capture_output=True, timeout=120)
    if known.returncode:
        return f"apt-get: this system's package lists have no {packages[0]}"
    done = subprocess.run(
        ["apt-get", "install", "-y", "-q", *packages], capture_output=True, timeout=900
    )
    return "apt-get install " + " ".join(packages) + (" failed" if done.returncode else "")
