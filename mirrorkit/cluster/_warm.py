"""The owner's side of warm starts: one warm process per kernel, which forks each run's supervisor.

Most of a local cluster's start is every worker importing TensorFlow. The warm process
(:mod:`mirrorkit.cluster._zygote`) imports it once, at the kernel's first run, and forks a
supervisor for each run, which forks the workers: they start with everything imported and
TensorFlow's runtime not yet started, so each configures its own collective ops as a new
process would.

The warm process belongs to this kernel and to the environment it was started with (the
variables every worker gets): a run that needs another environment gets a new warm process
and the old one ends. It ends with the kernel (parent-death signal, and end of file on its
socket), and by itself after :data:`IDLE_SECONDS` without a run, giving its memory back.
Where forking is not safe or not possible (not Linux; a thread left running by an import),
:func:`start_supervisor` says why and the launcher starts new processes instead.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from mirrorkit.cluster import _procs, protocol

#: Seconds the warm process waits for another run before it ends, freeing its memory.
IDLE_SECONDS = 600.0
#: Seconds the warm process gets to end its runs and sweep (at most 5 s) once told to end.
END_SECONDS = 10.0


class WarmUnavailable(Exception):
    """Forking is not possible or not safe here; the message says why."""


class SupervisorHandle:
    """A supervisor forked by the warm process, driven like a ``subprocess.Popen`` (text mode).

    This process is not its parent, so it learns of its end from the warm process, and
    asks the warm process to kill it (the only process that reaps it, so the pid is never
    one reused by another process).
    """

    def __init__(self, warm: WarmProcess, pid: int, stdin, stdout, stderr) -> None:
        self.warm = warm
        self.pid = pid
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr

    def poll(self) -> int | None:
        return self.warm.exit_code(self.pid)

    def wait(self, timeout: float | None = None) -> int:
        if not self.warm.ended(self.pid).wait(timeout):
            raise subprocess.TimeoutExpired(f"supervisor {self.pid}", timeout)
        return self.poll()

    def kill(self) -> None:
        self.warm.kill(self.pid)


class WarmProcess:
    """The warm process of this kernel for one environment."""

    def __init__(self, env: dict[str, str], key: str) -> None:
        self.key = key
        self.owner = os.getpid()
        self.thread = None  # the lasting thread that started it (its parent-death signal's)
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - its stderr: TensorFlow's import noise, a crash
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mirrorkit.cluster._zygote",
                str(os.getpid()),
                str(theirs.fileno()),
                str(IDLE_SECONDS),
                str(Path(tempfile.gettempdir()) / f"{protocol.RUN_PREFIX}{os.getpid()}-warm"),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
            pass_fds=(theirs.fileno(),),
            env=env,
        )
        theirs.close()
        self.channel = ours
        self.ready = threading.Event()
        self.import_seconds: float | None = None
        self.problem: str | None = None
        self.alive = True
        self.forks: queue.Queue = queue.Queue()  # (request, pid) answers; None: it ended
        self.requests = 0
        self.exits: dict[int, int] = {}
        self.exit_events: dict[int, threading.Event] = {}
        self.lock = threading.Lock()  # guards the exit tables
        self.requesting = threading.Lock()  # one fork request at a time
        threading.Thread(target=self._listen, daemon=True, name="mirrorkit-warm").start()

    def _listen(self) -> None:
        while True:
            try:
                data = self.channel.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            message = json.loads(data)
            if "ready" in message:
                self.import_seconds, self.problem = message["ready"], message["problem"]
                self.ready.set()
            elif "pid" in message:
                self.forks.put((message["id"], message["pid"]))
            elif "exit" in message:
                with self.lock:
                    self.exits[message["exit"]] = message["code"]
                    self.ended(message["exit"]).set()
        # Ended (idle, killed, or this kernel closed the socket): its supervisors ended too.
        self.alive = False
        self.ready.set()
        self.forks.put(None)
        with self.lock:
            for event in self.exit_events.values():
                event.set()

    def ended(self, pid: int) -> threading.Event:
        """Set when supervisor ``pid`` has ended (or the warm process, and so it, has)."""
        event = self.exit_events.setdefault(pid, threading.Event())
        if not self.alive:
            event.set()
        return event

    def exit_code(self, pid: int) -> int | None:
        if pid in self.exits:
            return self.exits[pid]
        return None if self.alive else -signal.SIGKILL

    def supervise(self, run_dir: str, timeout: float) -> SupervisorHandle:
        """Fork a supervisor for the run in ``run_dir``; wait at most ``timeout`` seconds."""
        if not self.ready.wait(timeout):
            raise TimeoutError(
                f"the warm process did not finish importing TensorFlow within {timeout:g} s"
            )
        if self.problem:
            raise WarmUnavailable(self.problem)
        pipes = [os.pipe() for _ in range(3)]  # the supervisor's stdin, stdout, stderr
        theirs = [pipes[0][0], pipes[1][1], pipes[2][1]]
        ours = [pipes[0][1], pipes[1][0], pipes[2][0]]
        pid = None
        try:
            with self.requesting:
                self.requests += 1
                request = {"op": "supervise", "run_dir": run_dir, "id": self.requests}
                try:
                    socket.send_fds(self.channel, [json.dumps(request).encode()], theirs)
                except OSError:
                    self.alive = False
                finally:
                    for fd in theirs:
                        os.close(fd)
                pid = self._forked(self.requests, timeout)
        finally:
            if pid is None:  # failed, or interrupted: a supervisor forked anyway ends when
                for fd in ours:  # it finds its stdin closed, its stdout without a reader
                    os.close(fd)
        if pid is None:
            raise ConnectionError(self.last_words() or "no last words")
        return SupervisorHandle(
            self,
            pid,
            open(ours[0], "w", encoding="utf-8"),  # noqa: SIM115 - the handle owns them
            open(ours[1], encoding="utf-8"),  # noqa: SIM115
            open(ours[2], encoding="utf-8"),  # noqa: SIM115
        )

    def _forked(self, request: int, timeout: float) -> int | None:
        """The pid the warm process answered ``request`` with; None if it ended or took too long.

        Answers to earlier requests whose sender was interrupted are skipped.
        """
        deadline = time.monotonic() + timeout
        while self.alive or not self.forks.empty():
            try:
                answer = self.forks.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return None
            if answer is None:
                return None
            if answer[0] == request:
                return answer[1]
        return None

    def kill(self, pid: int) -> None:
        with contextlib.suppress(OSError):  # one packet: never mixed with another request
            self.channel.send(json.dumps({"op": "kill", "pid": pid}).encode())

    def last_words(self) -> str:
        """The last lines the warm process wrote to its stderr, joined with " | " ("" if none)."""
        self.log.seek(0)
        lines = [line for line in self.log.read().decode(errors="replace").splitlines() if line]
        return " | ".join(lines[-4:])

    def stop(self) -> None:
        """End the warm process (its supervisors, their workers and what those started).

        It kills its supervisors and sweeps what they leave once its socket closes; a kill
        from here in the middle would leave the orphans to no one, so it gets
        :data:`END_SECONDS` first.
        """
        with contextlib.suppress(OSError):
            self.channel.close()
        if not self.ready.is_set():  # still importing: it has forked nothing to sweep
            self.process.kill()
        try:
            self.process.wait(END_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


_current: WarmProcess | None = None
_refused: dict[str, str] = {}  # environment key -> why the warm process could not fork
_lock = threading.Lock()


# Variables that change while no worker reads them: pytest sets PYTEST_CURRENT_TEST anew for
# every test, and with it in the key every test's first run started a warm process of its own
# (TensorFlow imported again, 5 to 9 CPU s) in a test suite, the learner's own included.
UNREAD = frozenset({"PYTEST_CURRENT_TEST"})


def environment_key(env: dict[str, str]) -> str:
    """A digest of the environment a warm process was started with, but :data:`UNREAD`.

    Example:
        >>> from mirrorkit.cluster._warm import environment_key
        >>> environment_key({"A": "1", "B": "2"}) == environment_key({"B": "2", "A": "1"})
        True
        >>> environment_key({"A": "1", "PYTEST_CURRENT_TEST": "t.py::x"}) == environment_key(
        ...     {"A": "1", "PYTEST_CURRENT_TEST": "t.py::y"})
        True
    """
    kept = sorted((name, value) for name, value in env.items() if name not in UNREAD)
    return hashlib.sha256(json.dumps(kept).encode()).hexdigest()


def start_supervisor(
    run_dir: str, env: dict[str, str], timeout: float
) -> tuple[SupervisorHandle, str]:
    """A supervisor for ``run_dir`` forked by this kernel's warm process, and how it started.

    Starts the warm process on the kernel's first run (or when ``env`` differs from the
    current one's) and waits for its imports, at most ``timeout`` seconds.

    Raises:
        WarmUnavailable: If forking is not possible or not safe here, or the warm process
            ended before it could fork (it says why; start new processes instead). The
            environment is then not tried warm again in this kernel.
        TimeoutError: If the warm process did not finish importing within ``timeout``.
    """
    global _current
    key = environment_key(env)
    if key in _refused:
        raise WarmUnavailable(_refused[key])
    for attempt in range(2):  # a second time if the warm process had ended (idle) meanwhile
        with _lock:
            if _current is not None and (
                _current.key != key
                or not _current.alive
                or _current.owner != os.getpid()
                or _current.thread is not _procs.lasting_thread()  # its parent thread ended
            ):
                if _current.owner == os.getpid():
                    _current.stop()
                _current = None
            fresh = _current is None
            if fresh:  # its parent-death signal must not follow this thread's end
                _current = _procs.on_lasting_thread(lambda: WarmProcess(env, key))
                _current.thread = _procs.lasting_thread()  # it dies with that thread
            warm = _current
        try:
            handle = warm.supervise(run_dir, timeout)
        except ConnectionError as ended:
            if not (fresh or attempt):
                continue  # it had ended by itself (idle) since the last run: start another
            why = WarmUnavailable(f"the warm process ended before it could fork ({ended})")
        except WarmUnavailable as refused:
            why = refused
        else:
            note = (
                "forked from a new warm process "
                f"(imported TensorFlow in {warm.import_seconds:.1f} s)"
                if fresh
                else "forked from the warm process"
            )
            return handle, note
        _refused[key] = str(why)  # the same environment would fail the same way
        with _lock:
            warm.stop()
            _current = None
        raise why
    raise AssertionError("unreachable: the second attempt returns or raises")


def stop() -> bool:
    """End this kernel's warm process, if it has one; return whether it had."""
    global _current
    with _lock:
        warm, _current = _current, None
    if warm is None or warm.owner != os.getpid():
        return False
    warm.stop()
    return True


atexit.register(stop)


def current_pid() -> int | None:
    """The process id of this kernel's warm process, if it is running."""
    warm = _current
    if warm is None or not warm.alive or warm.process.poll() is not None:
        return None
    return warm.process.pid
