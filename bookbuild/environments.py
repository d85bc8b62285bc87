"""The virtual environments ``dev.py`` makes, each pinned by a lock file and reused.

``.venv`` is the book's environment; ``.venvs/`` holds the other test jobs' and the tools'
(uv). An environment is remade only when its lock, a ``pyproject.toml`` or its interpreter
changes (:func:`ensure_env`).

Example:
    >>> env = Env(path=VENVS / "tools", interpreter=Path(sys.executable), lock=None, packages=(UV,))
    >>> env.python.relative_to(ROOT).as_posix()
    '.venvs/tools/bin/python'
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import threading
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from bookbuild import ROOT
from bookbuild.shell import run, say
from bookbuild.system import (
    ensure_system_tools,
    install_python_with_apt,
    interpreter_candidates,
    interpreter_version,
    this_python,
)

VENV = ROOT / ".venv"
VENVS = ROOT / ".venvs"
TOOLS = VENVS / "tools"
_tools_lock = threading.Lock()
PYPROJECTS = (ROOT / "pyproject.toml", ROOT / "widgets" / "pyproject.toml")

# The Pythons both distributions support (their requires-python says the same; a test checks).
PYTHONS = ("3.11", "3.12", "3.13")
# Every environment but the hosted one installs from LOCK: the newest supported TensorFlow and
# Keras, for all of PYTHONS. The hosted job installs from HOSTED_LOCK: what Colab preinstalls
# (the oldest supported TensorFlow/Keras), on HOSTED_PYTHON. `python3 dev.py lock` remakes both.
REQUIREMENTS = ROOT / "requirements"
LOCK = REQUIREMENTS / "lock.txt"
HOSTED_LOCK = REQUIREMENTS / "colab.txt"
HOSTED_PYTHON = "3.13"
# Makes the lock files and installs every environment (.venvs/tools, made with pip).
UV = "uv==0.13.9"
OUR_DISTRIBUTIONS = ("mirrorkit", "mirrorbook-widgets")  # installed from this tree, not locked


@dataclass(frozen=True)
class Env:
    """A virtual environment: where, made by which interpreter, pinned by which lock.

    Attributes:
        path: Its folder.
        interpreter: The Python that makes it.
        lock: The constraints file its installs follow, or None.
        packages: What it installs (both distributions of this tree, editable, by default).
    """

    path: Path
    interpreter: Path
    lock: Path | None
    packages: tuple[str, ...] = field(
        default=("-e", f"{ROOT}[book,labs,test]", "-e", f"{ROOT / 'widgets'}[test]")
    )

    def bin(self, name: str) -> Path:
        """A program of the environment, ``bin/name`` (``Scripts/name`` on Windows)."""
        return self.path / ("Scripts" if os.name == "nt" else "bin") / name

    @property
    def python(self) -> Path:
        """The environment's Python."""
        return self.bin("python.exe" if os.name == "nt" else "python")

    def pip(self, *args, constrained: bool = True) -> None:
        """``pip install`` into the environment, following its lock unless told not to."""
        lock = ["-c", self.lock] if constrained and self.lock else []
        run(self.python, "-m", "pip", "install", "--disable-pip-version-check", "-q", *lock, *args)

    def install(self, *args) -> None:
        """Install into the environment as :meth:`pip` does, following its lock, with uv.

        The environment ends as pip leaves it, every module compiled to bytecode included (a
        grader's unprivileged process cannot write it later), in about a sixth of pip's CPU
        seconds: 21 against 124 for the lock on Python 3.12, measured side by side on
        2026-11-29, downloads included.
        """
        lock = ["-c", self.lock] if self.lock else []
        uv = tool("uv")
        run(uv, "pip", "install", "-q", "--python", self.python, "--compile-bytecode", *lock, *args)

    def dev(self, *args, env: dict | None = None) -> None:
        """Run one of dev.py's tasks with this environment's Python."""
        run(self.python, ROOT / "dev.py", *args, env=env or {})


def ensure_env(env: Env, *, fresh: bool = False) -> None:
    """Create ``env`` and install its packages as the lock pins them, unless already so.

    A stamp in the environment holds a digest of the lock, the ``pyproject.toml`` files, the
    interpreter's version and the packages; the installs run again only when it differs.

    Args:
        env: The environment.
        fresh: Remove it and make it again whatever the stamp says.

    Example:
        >>> ensure_env(book_env())  # doctest: +SKIP
    """
    version = interpreter_version(env.interpreter)
    inputs = [env.lock.read_bytes() if env.lock else b"", *(p.read_bytes() for p in PYPROJECTS)]
    digest = hashlib.sha256(b"".join(inputs) + repr((version, env.packages)).encode()).hexdigest()
    stamp = env.path / ".mirrorbook-installed"
    if not fresh and stamp.exists() and stamp.read_text() == digest:
        return
    if fresh or (env.python.exists() and interpreter_version(env.python) != version):
        shutil.rmtree(env.path, ignore_errors=True)
    if not env.python.exists():
        say(f"creating {env.path.relative_to(ROOT)} with Python {version} ({env.interpreter})")
        run(env.interpreter, "-m", "venv", env.path)
    say(f"installing into {env.path.relative_to(ROOT)} (first run: a few minutes)")
    install = env.pip if env.path == TOOLS else env.install  # uv itself comes with pip
    if env.lock:
        install("pip", "setuptools")  # the lock's own versions of the installers first
    if env.packages:
        install("--no-build-isolation", *env.packages)
    stamp.write_text(digest)


def tool(name: str) -> Path:
    """A command-line tool from the pinned tools environment (.venvs/tools), made on first use.

    Args:
        name: The tool's program (``uv``).

    Example:
        >>> tool("uv").name  # doctest: +SKIP
        'uv'
    """
    env = Env(path=TOOLS, interpreter=Path(sys.executable), lock=None, packages=(UV,))
    with _tools_lock:  # the test jobs' set-ups run side by side, each asking for uv
        ensure_env(env)
    return env.bin(name)


def install_python_with_uv(version: str) -> str:
    """Install Python ``version`` with the tools environment's uv.

    Args:
        version: ``"3.12"``.

    Returns:
        What was done or why it failed, for the message naming a missing interpreter.

    Example:
        >>> install_python_with_uv("3.12")  # doctest: +SKIP
        'uv python install 3.12'
    """
    try:
        uv = tool("uv")
        done = subprocess.run(
            [uv, "python", "install", version], capture_output=True, text=True, timeout=300
        )
    except (OSError, subprocess.SubprocessError, SystemExit) as error:
        return f"uv python install {version}: {error}"
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["failed"])[-1]
        return f"uv python install {version}: {last.strip()}"
    return f"uv python install {version}"


def find_python(version: str, *, install: bool = True) -> tuple[Path | None, str]:
    """A Python ``version`` interpreter, installing one if none is found; else (None, why).

    Args:
        version: ``"3.12"``.
        install: Try apt-get, then uv, when none is found.

    Returns:
        The interpreter and how it was found, or None and where it was looked for.

    Example:
        >>> find_python("3.99", install=False)[0] is None
        True
    """
    for candidate in interpreter_candidates(version):
        if interpreter_version(candidate) == version:
            return candidate, f"found {candidate}"
    tried = [f"python{version} on PATH, pyenv's and uv's folders, /usr/local/bin, /usr/bin"]
    if install:
        for installer in (install_python_with_apt, install_python_with_uv):
            outcome = installer(version)
            tried.append(outcome)
            for candidate in interpreter_candidates(version):
                if interpreter_version(candidate) == version:
                    return candidate, f"installed: {outcome}"
    return None, "no interpreter: looked at " + "; ".join(tried)


def book_env() -> Env:
    """.venv: the book's environment, made by this Python if supported, else another one.

    Raises:
        SystemExit: If neither this Python nor any of :data:`PYTHONS` found is supported.

    Example:
        >>> book_env().path == VENV
        True
    """
    interpreter = Path(sys.executable)
    if this_python() not in PYTHONS:
        found = [find_python(v, install=False)[0] for v in PYTHONS]
        usable = [p for p in found if p]
        if not usable:
            raise SystemExit(
                f"[dev] mirrorbook supports Python {', '.join(PYTHONS)}; this is "
                f"{sys.version.split()[0]} and none of them was found. Install one "
                "(python.org, your system's packages, pyenv or uv) and run this command with it."
            )
        interpreter = usable[0]
        say(f"Python {this_python()} is not supported; using {interpreter}")
    return Env(path=VENV, interpreter=interpreter, lock=LOCK)


def setup(*tools: tuple[str, str, str]) -> Env:
    """The system programs ``tools`` and the book's environment, installed if missing.

    Args:
        *tools: Programs like :data:`bookbuild.system.DOT`.

    Returns:
        The book's environment, ready.

    Example:
        >>> setup().python.is_file()  # doctest: +SKIP
        True
    """
    ensure_system_tools(*tools)
    env = book_env()
    ensure_env(env)
    return env


def optional_requirements(pyproject: Path, *extras: str) -> list[str]:
    """The requirements of some extras of a ``pyproject.toml``.

    Args:
        pyproject: The file.
        *extras: The extras' names.

    Example:
        >>> any(r.startswith("pytest") for r in optional_requirements(PYPROJECTS[0], "test"))
        True
    """
    with open(pyproject, "rb") as f:
        optional = tomllib.load(f)["project"].get("optional-dependencies", {})
    return [requirement for extra in extras for requirement in optional.get(extra, [])]
