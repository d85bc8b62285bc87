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
from dataclasses import dataclass
from pathlib import Path

from bookbuild import ROOT

# Kernels started from here use this environment's kernel spec, not a user-wide one.
CHILD_ENV = {"JUPYTER_PREFER_ENV_PATH": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
# Where this thread's say() and run() write: a stage's log while it runs (see output_to).
_OUTPUT = threading.local()
# The CPU counts open in this thread (see cpu_counted): run() adds its command's to each.
_CPU = threading.local()


@dataclass(eq=False)  # each count is itself: nested ones with equal seconds are not one
class CpuCount:
    """CPU seconds (user + system) of the commands :func:`run` ran while it was open.

    Attributes:
        seconds: The seconds so far.
    """

    seconds: float = 0.0


@contextlib.contextmanager
def cpu_counted() -> Iterator[CpuCount]:
    """Count the CPU seconds of the commands that :func:`run` runs in this thread.

    A command's seconds are its own and those of every process below it that it waited for
    (a pytest run's kernels and cluster workers), so they hardly change with the load on the
    machine, unlike wall seconds. Counts may be nested: each open one grows.

    Yields:
        The count, which grows as each command ends.

    Example:
        >>> import sys
        >>> with cpu_counted() as cpu:
        ...     run(sys.executable, "-c", "sum(range(10_000_000))")
        >>> 0.1 < cpu.seconds < 30
        True
    """
    count = CpuCount()
    counts = _CPU.counts = getattr(_CPU, "counts", [])
    counts.append(count)
    try:
        yield count
    finally:
        counts.remove(count)


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
    runs it (:func:`output_to`); its CPU seconds go to the open :func:`cpu_counted` counts.

    Args:
        *cmd: The program and its arguments (paths are turned into text).
        **kwargs: ``env`` adds variables to the environment, ``cwd`` replaces the top
            folder; the rest go to :class:`subprocess.Popen`.

    Raises:
        SystemExit: If the command ends with a non-zero status; the message names it.
        KeyboardInterrupt: On ^C, once the command is killed.

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
    process = subprocess.Popen(
        [str(c) for c in cmd], cwd=kwargs.pop("cwd", ROOT), env=env, **kwargs
    )
    try:
        seconds = _wait(process)
    except BaseException:  # ^C: as subprocess.run, a moment to end on its own, then kill
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=0.25)
        process.kill()
        process.wait()
        raise
    for count in getattr(_CPU, "counts", ()):
        count.seconds += seconds
    if process.returncode:
        raise SystemExit(f"[dev] failed ({process.returncode}): {' '.join(map(str, cmd))}")


def _wait(process: subprocess.Popen) -> float:
    """Wait for ``process`` to end; return the CPU seconds of it and what it waited for."""
    if not hasattr(os, "wait4"):  # Windows: no resource usage of ended processes
        process.wait()
        return 0.0
    # wait4, not wait: its resource usage covers the descendants the command waited for.
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime
