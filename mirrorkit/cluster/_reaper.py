"""Ending every process a run started, at any depth: a child subreaper and a sweep.

Design notes: docs/design/cluster.md ("Nothing outlives its run").

Example:
    >>> import os, signal, subprocess, time
    >>> from mirrorkit.cluster import _reaper
    >>> shell = subprocess.Popen(["sh", "-c", "sleep 60; echo never"])
    >>> for _ in range(200):  # the shell forks, then the child becomes `sleep` (under load: later)
    ...     below = [_reaper.describe(p).split(" (", 1)[1] for p in _reaper.descendants(shell.pid)]
    ...     if below == ["sleep 60)"]:
    ...         break
    ...     time.sleep(0.05)
    >>> below
    ['sleep 60)']
    >>> for pid in [shell.pid, *_reaper.descendants(shell.pid)]:  # the shell first: it cannot
    ...     os.kill(pid, signal.SIGKILL)  # go on to its echo between the two kills
    >>> shell.wait()
    -9
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Collection
from pathlib import Path

from mirrorkit.cluster import _procs

_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Adopt the orphans of this process's descendants; whether Linux agreed."""
    c = _procs.libc()
    try:
        return c is not None and c.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except AttributeError:
        return False


def descendants(
    root: int | None = None, keep: Collection[int] = (), table: dict | None = None
) -> list[int]:
    """The processes below ``root`` (this one by default), not entering those in ``keep``."""
    table = _procs.process_table() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, (_, parent) in table.items():
        children.setdefault(parent, []).append(pid)
    found, todo = [], [os.getpid() if root is None else root]
    while todo:
        for pid in children.get(todo.pop(), ()):
            if pid not in keep:
                found.append(pid)
                todo.append(pid)
    return sorted(found)


def describe(pid: int) -> str:
    """``"pid 123 (sleep 600)"``: a process and the start of its command line."""
    command = (_procs.command_line(pid) or "").strip() or "?"
    return f"pid {pid} ({command[:60] + '...' if len(command) > 60 else command})"


def reap(keep: Collection[int] = (), table: dict | None = None) -> None:
    """Collect the exit of this process's ended children, except those in ``keep``.

    The workers (in ``keep``) are waited for by their owners; the rest are orphans a
    subreaper adopted, which would otherwise stay as zombies.
    """
    table = _procs.process_table() if table is None else table
    me = os.getpid()
    for pid, (state, parent) in table.items():
        if parent == me and state == "Z" and pid not in keep:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)


def sweep(keep: Collection[int] = (), within: float = 5.0) -> list[str]:
    """End every process below this one (not entering ``keep``) with SIGKILL, and reap them.

    Repeats until none is left or ``within`` seconds have passed: a process killed between
    two passes cannot start another, and its children come to this process (a subreaper)
    or stay below a process that the next pass kills.

    Returns:
        What was still running when the sweep began (:func:`describe`).
    """
    ended: dict[int, str] = {}
    deadline = time.monotonic() + within
    while True:
        table = _procs.process_table()
        below = descendants(keep=keep, table=table)
        running = [pid for pid in below if table[pid][0] != "Z"]
        for pid in running:
            if pid not in ended:
                ended[pid] = describe(pid)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        reap(keep, table)
        if not running or time.monotonic() > deadline:
            return [ended[pid] for pid in sorted(ended)]
        time.sleep(0.01)


def marked(variable: str, value: str) -> list[int]:
    """This user's processes whose environment holds ``variable=value`` (read from /proc)."""
    wanted = f"{variable}={value}".encode()
    found = []
    for pid in _procs.pids():
        if pid != os.getpid():
            with contextlib.suppress(OSError):
                if wanted in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                    found.append(pid)
    return sorted(found)


def end_marked(variable: str, value: str) -> list[str]:
    """End with SIGKILL every process :func:`marked` finds; what was running (:func:`describe`)."""
    ended = []
    for pid in marked(variable, value):
        if _procs.is_running(pid):
            ended.append(describe(pid))
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    return ended
