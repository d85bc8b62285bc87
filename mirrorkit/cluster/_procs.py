"""Process plumbing for the local cluster: parent-death signals, free ports, the process table."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import queue
import signal
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

_PR_SET_PDEATHSIG = 1
#: The name (``comm``) the warm process gives itself; its forks rename themselves at once.
WARM_NAME = "mirrorkit-warm"


def die_with_parent(parent_pid: int, sig: int = signal.SIGKILL) -> bool:
    """Ask Linux to send ``sig`` to this process when its parent ends; exit if it already has.

    Returns whether the kernel accepted the request (False off Linux).
    """
    c = libc()
    try:
        accepted = c is not None and c.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except AttributeError:
        return False
    if os.getppid() != parent_pid:  # the parent ended before the request was made
        os._exit(70)
    return accepted


def dies_with_this_process(sig: int = signal.SIGKILL) -> Callable[[], bool]:
    """A ``preexec_fn`` for ``subprocess.Popen``: the child gets ``sig`` when this process ends.

    (Strictly, when the thread that starts the child ends: start it where it is waited for.)
    libc is found and loaded here, before the fork, so that between fork and exec the child
    only makes the ``prctl`` and ``getppid`` calls: no search for libc (which starts
    processes of its own), no import, in a child forked from a process with threads.

    Example:
        >>> import subprocess
        >>> subprocess.run(["true"], preexec_fn=dies_with_this_process()).returncode
        0
    """
    libc()
    return functools.partial(die_with_parent, os.getpid(), sig)


@functools.cache
def libc():
    """This process's C library (ctypes), found and loaded once, or None off Linux and where
    it cannot be loaded: for ``prctl`` here and in :mod:`mirrorkit.cluster._reaper`."""
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name, use_errno=True) if name else None
    except OSError:
        return None


_lasting: tuple[int, queue.Queue, threading.Thread] | None = None  # pid, requests, thread
_lasting_lock = threading.Lock()


def on_lasting_thread(function: Callable[[], Any]) -> Any:
    """Call ``function`` on a thread that lives as long as this process; its result.

    Linux sends a child's parent-death signal when the *thread* that forked it ends, not its
    process (prctl(2), PR_SET_PDEATHSIG). A child meant to live as long as this process (the
    warm process) is started here, so that a notebook thread that starts a run and ends does
    not take it along.
    """
    global _lasting
    with _lasting_lock:
        if _lasting is None or _lasting[0] != os.getpid():  # none yet, or a fork's copy
            requests: queue.Queue = queue.Queue()
            thread = threading.Thread(
                target=_serve_calls, args=(requests,), name="mirrorkit-lasting", daemon=True
            )
            thread.start()
            _lasting = (os.getpid(), requests, thread)
        requests = _lasting[1]
    answer: queue.Queue = queue.Queue(maxsize=1)
    requests.put((function, answer))
    failed, value = answer.get()
    if failed:
        raise value
    return value


def lasting_thread() -> threading.Thread | None:
    """This process's lasting thread, or None: a child started on it dies when it ends."""
    lasting = _lasting
    return lasting[2] if lasting is not None and lasting[0] == os.getpid() else None


def end_lasting_thread(timeout: float = 5.0) -> None:
    """End this process's lasting thread, if it has one (for a process about to finish).

    The grader's runner calls it at its end, where it requires that no thread of the
    submission's run is left; a later :func:`on_lasting_thread` starts a new one.

    Example:
        >>> from mirrorkit.cluster._procs import end_lasting_thread, on_lasting_thread
        >>> on_lasting_thread(lambda: 2 + 2)
        4
        >>> end_lasting_thread()
        >>> import threading
        >>> "mirrorkit-lasting" in [t.name for t in threading.enumerate()]
        False
    """
    global _lasting
    with _lasting_lock:
        lasting, _lasting = _lasting, None
    if lasting is not None and lasting[0] == os.getpid():
        lasting[1].put(None)
        lasting[2].join(timeout)


def _serve_calls(requests: queue.Queue) -> None:
    while True:
        request = requests.get()
        if request is None:
            return
        function, answer = request
        try:
            answer.put((False, function()))
        except BaseException as error:  # noqa: BLE001 - raised again in the caller's thread
            answer.put((True, error))


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct TCP ports that were free on ``host`` a moment ago."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _stat(pid: int | str) -> tuple[str, int] | None:
    """(state letter, parent pid) of a process from /proc, or None if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], int(fields[1])


def is_running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has)."""
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z"


def parent_of(pid: int) -> int | None:
    """The parent pid of ``pid``, or None if it is gone."""
    stat = _stat(pid)
    return None if stat is None else stat[1]


def pids() -> list[int]:
    """Every process id /proc lists (some may end while they are read)."""
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]


def process_table() -> dict[int, tuple[str, int]]:
    """(state letter, parent pid) of every process, from one pass over /proc."""
    return {pid: stat for pid in pids() if (stat := _stat(pid)) is not None}


def command_line(pid: int | str) -> str | None:
    """A process's command line, its arguments joined by spaces, or None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return raw.replace(b"\0", b" ").decode(errors="replace")


def processes_with(marker: str) -> list[int]:
    """Pids of live processes whose command line contains ``marker`` (reads /proc)."""
    return sorted(pid for pid in pids() if marker in (command_line(pid) or "") and is_running(pid))


def name_of(pid: int | str) -> str:
    """A process's short name (``comm``), or "" if it is gone."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def cluster_processes(marker: str) -> list[int]:
    """Pids of the live supervisors and workers whose command line contains ``marker``.

    Forked ones have the warm process's command line; the warm process itself, which
    outlives the runs, is not counted.
    """
    return [pid for pid in processes_with(marker) if name_of(pid) != WARM_NAME]


def listening_sockets(pid: int | str = "self") -> list[str]:
    """``address:port`` of every listening TCP socket in the network namespace of ``pid``."""
    found = []
    for name, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        try:
            lines = Path(f"/proc/{pid}/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 4 or fields[3] != "0A":  # 0A is TCP_LISTEN
                continue
            address_hex, port_hex = fields[1].split(":")
            raw = bytes.fromhex(address_hex)
            # /proc prints each 32-bit word in host (little-endian) order.
            raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            address = socket.inet_ntop(family, raw)
            found.append(
                f"[{address}]:{int(port_hex, 16)}"
                if ":" in address
                else f"{address}:{int(port_hex, 16)}"
            )
    return sorted(set(found))


def interfaces() -> list[str]:
    """Names of the network interfaces this process's network namespace has."""
    return sorted(name for _, name in socket.if_nameindex())


def describe_exit(returncode: int | None) -> str:
    """'exit status 1' or 'killed by SIGKILL' for a Popen return code."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"
