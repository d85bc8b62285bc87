"""Forking a process that has imported TensorFlow: the child starts with every module loaded.

The warm process (:mod:`mirrorkit.cluster._zygote`) forks one supervisor per run, and that
supervisor forks its workers. A fork copies only the thread that calls it, so it is safe
only while the parent has one thread: a lock another thread held at that moment would stay
locked in the child forever. Importing TensorFlow starts no thread (its runtime, with its
thread pools, starts at the first op, which only the children run); NumPy's OpenBLAS starts
its thread pool when it loads, which the warm process prevents (``OPENBLAS_NUM_THREADS=1``
while it imports). :func:`fork_problem` checks, so nothing forks in a process where it is
not safe.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path


def threads() -> list[str]:
    """The names (``comm``) of this process's operating-system threads, from /proc."""
    names = []
    for task in sorted(Path("/proc/self/task").iterdir()):
        try:
            names.append((task / "comm").read_text().strip())
        except OSError:  # the thread ended meanwhile
            continue
    return names


def fork_problem() -> str | None:
    """Why this process cannot fork workers safely, or None if it can."""
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return f"warm starts fork processes, which is done on Linux only, not on {sys.platform}"
    running = threads()
    if len(running) > 1:
        return (
            f"this process runs {len(running)} threads ({', '.join(running)}), and a fork copies "
            "only one of them: whatever lock another held would stay locked in the child"
        )
    return None


def fork(
    child: Callable[[], object], name: str, stdio: Sequence[int], keep: Sequence[int] = ()
) -> int:
    """Fork; the child names itself ``name``, gets ``stdio`` as its descriptors 0, 1, 2, keeps
    ``keep`` and runs ``child``.

    Every other descriptor is closed in the child (another run's pipes must see their end of
    file when their own process ends), Python's standard streams are rebuilt on the new
    descriptors (line-buffered, as the workers' output is read line by line), and SIGTERM and
    SIGINT get Python's defaults back. The child never returns: it ends with ``os._exit``,
    status 0 if ``child`` returned and 70 if it raised.

    Returns:
        The child's process id (in the parent).
    """
    assert all(fd > 2 for fd in (*stdio, *keep)), "fork: pass fresh descriptors, not 0-2"
    for stream in (sys.stdout, sys.stderr):  # nothing buffered may be written twice
        stream.flush()
    pid = os.fork()
    if pid:
        return pid
    code = 70
    try:
        name_process(name)
        for target, fd in enumerate(stdio):
            os.dup2(fd, target)
        last = 3
        for fd in sorted(set(keep)):
            os.closerange(last, fd)
            last = fd + 1
        os.closerange(last, _max_fd())
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's own stream
        sys.stdout, sys.stderr = (
            open(fd, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
            for fd in (1, 2)
        )
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        child()
        code = 0
    except BaseException:  # noqa: BLE001 - the child reports, then ends, whatever happened
        traceback.print_exc()
        sys.stderr.flush()
    os._exit(code)


def _max_fd() -> int:
    try:
        return os.sysconf("SC_OPEN_MAX")
    except (ValueError, OSError):
        return 65536


def name_process(name: str) -> None:
    """Set this process's short name (``comm``, what ``top`` and ``ps -o comm`` show)."""
    with contextlib.suppress(OSError):
        Path("/proc/self/comm").write_text(name[:15])


class ForkedProcess:
    """A forked child of this process, with the part of ``subprocess.Popen``'s interface the
    supervisor uses: ``pid``, ``stdin``, ``stdout``, ``poll``, ``wait``, ``send_signal``,
    ``kill`` and ``returncode``. Reaping is guarded by a lock, so several threads may poll.
    """

    def __init__(self, pid: int, stdin=None, stdout=None) -> None:
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.returncode: int | None = None
        self._lock = threading.Lock()

    def poll(self) -> int | None:
        with self._lock:
            if self.returncode is None:
                try:
                    pid, status = os.waitpid(self.pid, os.WNOHANG)
                except ChildProcessError:  # reaped elsewhere: it has ended, how is unknown
                    pid, status = self.pid, 255 << 8
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
            return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"process {self.pid}", timeout)
            time.sleep(0.01)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        with self._lock:  # never signal a pid that was reaped (and might be reused)
            if self.returncode is None:
                os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)
