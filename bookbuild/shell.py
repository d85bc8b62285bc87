"""Running a command the way every part of ``dev.py`` does: from the top folder, or stop."""

from __future__ import annotations

import os
import subprocess

from bookbuild import ROOT

# Kernels started from here use this environment's kernel spec, not a user-wide one.
CHILD_ENV = {"JUPYTER_PREFER_ENV_PATH": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}


def say(message: str) -> None:
    """Print one line of progress, marked as coming from ``dev.py``.

    Args:
        message: What to say.

    Example:
        >>> say("executed book/01_strategy_scope.ipynb in 41.2 s")
        [dev] executed book/01_strategy_scope.ipynb in 41.2 s
    """
    print(f"[dev] {message}", flush=True)


def run(*cmd, **kwargs) -> None:
    """Run a command in the top folder with :data:`CHILD_ENV` added; stop if it fails.

    Its output goes straight to this process's terminal.

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
    result = subprocess.run([str(c) for c in cmd], cwd=kwargs.pop("cwd", ROOT), env=env, **kwargs)
    if result.returncode:
        raise SystemExit(f"[dev] failed ({result.returncode}): {' '.join(map(str, cmd))}")
