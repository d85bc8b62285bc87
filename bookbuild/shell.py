"""Running a command the way every part of ``dev.py`` does: from the top folder, or stop.

Example:
    >>> say("installing into .venv")
    [dev] installing into .venv
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from bookbuild import ROOT

# Kernels started from here use this environment's kernel spec, not a user-wide one.
CHILD_ENV = {"JUPYTER_PREFER_ENV_PATH": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
# Where this thread's say() and run() write: a stage's log while it runs (see output_to).
_OUTPUT = threading.local()


@contextlib.contextmanager
def output_to(log: Path) -> Iterator[None]:
    """Send what :func:`say` and :func:`run` print in this thread to ``log`` (appended).

    Stages that run side by side (:mod:`bookbuild.lanes`) each keep their own log this way.

    Args:
        log: The log file.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     log = Path(folder) / "stage.log"
        ...     with output_to(log):
        ...         say("into the log")
        ...     print(log.read_text(), end="")
        [dev] into the log
    """
    with open(log, "a") as file:
        _OUTPUT.file = file
        try:
            yield
        finally:
            _OUTPUT.file = None


def say(message: str) -> None:
    """Print one line of progress, marked as coming from ``dev.py``.

    Args:
        message: What to say.

    Example:
        >>> say("executed book/01_strategy_scope.ipynb in 41.2 s")
        [dev] executed book/01_strategy_scope.ipynb in 41.2 s
    """
    print(f"[dev] {message}", file=getattr(_OUTPUT, "file", None) or sys.stdout, flush=True)


def run(*cmd, **kwargs) -> None:
    """Run a command in the top folder with :data:`CHILD_ENV` added; stop if it fails.

    Its output goes straight to this process's terminal, or to the log of the stage that
    runs it (:func:`output_to`).

    Args:
        *cmd: The program and its arguments (paths are turned into text).
        **kwargs: ``env`` adds variables to the environment, ``cwd`` replaces the top
            folder; the rest go to :func:`subprocess.run`.

    Raises:
        SystemExit: If the command ends with a non-zero status; the message names it.

    Example:
        >>> import sys
        >>> run(sys.executable, "-c", "pass")
        >>> run(sys.executable, "-c", "raise SystemExit(3)")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        SystemExit: [dev] failed (3): ... -c raise SystemExit(3)
    """
    env = {**os.environ, **CHILD_ENV, **kwargs.pop("env", {})}
    if log := getattr(_OUTPUT, "file", None):
        kwargs.setdefault("stdout", log)
        kwargs.setdefault("stderr", subprocess.STDOUT)
    result = subprocess.run([str(c) for c in cmd], cwd=kwargs.pop("cwd", ROOT), env=env, **kwargs)
    if result.returncode:
        raise SystemExit(f"[dev] failed ({result.returncode}): {' '.join(map(str, cmd))}")
