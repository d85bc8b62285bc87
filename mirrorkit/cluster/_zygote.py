"""The warm process: imports TensorFlow once per notebook kernel, then forks one supervisor per run.

Started by :mod:`mirrorkit.cluster._warm` as
``python -m mirrorkit.cluster._zygote OWNER_PID SOCKET_FD IDLE_SECONDS MARKER``; it answers
``supervise`` and ``kill`` requests on its socket and ends with its owner or when idle. Its
requests, replies and lifetime: docs/design/cluster.md.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
import socket
import sys
import time
import traceback
from functools import partial


class _OwnerGone(Exception):
    """A message to the owner could not be sent: it is gone."""


_serving = False  # set once this process may fork: from then on, only _end may leave
_told_to_end = False  # the owner's parent-death SIGTERM came


def _owner_gone(*_) -> None:
    """SIGTERM's handler. Before any fork there is nothing to sweep: leave at once. After,
    only note it: the serving loop sees it within its poll and leaves through _end. (A
    handler that raised could land anywhere, the sweep included, and cut it short.)"""
    global _told_to_end
    if not _serving:
        os._exit(0)
    _told_to_end = True


def main(owner_pid: str, socket_fd: str, idle_seconds: str) -> None:
    from mirrorkit.cluster import _forked, _procs, _reaper

    _forked.name_process(_procs.WARM_NAME)
    # The owner's end is a SIGTERM, never a SIGKILL: this process may be between killing a
    # supervisor and sweeping what it left (the owner's closed socket says so first), and
    # only the sweep ends those orphans. Once it may fork, every way out goes through _end,
    # which nothing interrupts (the handler only notes the signal).
    signal.signal(signal.SIGTERM, _owner_gone)
    _procs.die_with_parent(int(owner_pid), signal.SIGTERM)
    _reaper.become_subreaper()  # a killed supervisor's workers, and theirs, come here
    global _serving
    children: set[int] = set()
    try:
        channel = socket.socket(fileno=int(socket_fd))
        started = time.perf_counter()
        _import_everything()
        problem = _forked.fork_problem()
        _serving = not problem
        _send(channel, {"ready": round(time.perf_counter() - started, 3), "problem": problem})
        if not problem:
            _serve(channel, float(idle_seconds), children)
    except _OwnerGone:
        pass
    except BaseException:  # noqa: BLE001 - into the log (the owner reads its tail), then out
        traceback.print_exc()
    _end(children)


def _import_everything() -> None:
    """Import what every supervisor and worker imports, leaving no thread behind."""
    added = "OPENBLAS_NUM_THREADS" not in os.environ
    if added:  # NumPy's OpenBLAS would start its thread pool as it loads
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
    import cloudpickle  # noqa: F401
    import keras  # noqa: F401
    import numpy  # noqa: F401
    import tensorflow  # noqa: F401

    import mirrorkit  # noqa: F401
    from mirrorkit.cluster import _supervisor, _worker_main, targets, worker  # noqa: F401
    from mirrorkit.report import values  # noqa: F401

    if added:  # the workers' environment is the owner's, as without a warm process
        del os.environ["OPENBLAS_NUM_THREADS"]
    # Objects that exist now are never collected in the children: the collector does not
    # touch (and so copy) the pages they share with this process.
    gc.collect()
    gc.freeze()


def _serve(channel: socket.socket, idle_seconds: float, children: set[int]) -> None:
    from mirrorkit.cluster import _forked, _reaper

    last_request = time.monotonic()
    while not _told_to_end:
        readable, _, _ = select.select([channel], [], [], 0.2)
        ended = _reap(children)
        if ended:  # what a killed supervisor left: its workers and what they started
            _reaper.sweep(keep=children)
        for pid, code in ended:
            _send(channel, {"exit": pid, "code": code})
        if readable:
            message, fds, _, _ = socket.recv_fds(channel, 65536, 3)
            if not message:  # the owner closed its end: it is done with us
                break
            last_request = time.monotonic()
            request = json.loads(message)
            if request["op"] == "supervise":
                supervise = partial(_supervise, request["run_dir"], os.getpid())
                pid = _forked.fork(supervise, "mirrorkit-sup", stdio=fds)
                for fd in fds:
                    os.close(fd)
                children.add(pid)
                _send(channel, {"pid": pid, "id": request["id"]})
            elif request["op"] == "kill" and request["pid"] in children:
                os.kill(request["pid"], signal.SIGKILL)
        elif not children and time.monotonic() - last_request > idle_seconds:
            break


def _end(children: set[int]) -> None:
    """Kill the supervisors, then sweep what they leave (their workers come here), and exit."""
    from mirrorkit.cluster import _reaper

    for pid in children:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    _reaper.sweep()
    os._exit(0)


def _reap(children: set[int]) -> list[tuple[int, int]]:
    ended = []
    for pid in list(children):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            children.discard(pid)
            ended.append((pid, os.waitstatus_to_exitcode(status)))
    return ended


def _supervise(run_dir: str, warm_pid: int) -> None:
    from mirrorkit.cluster import _supervisor

    _supervisor.main(run_dir, str(warm_pid), fork_workers=True)


def _send(channel: socket.socket, message: dict) -> None:
    try:
        channel.send(json.dumps(message).encode())
    except OSError:  # the owner is gone
        raise _OwnerGone from None


if __name__ == "__main__":
    main(*sys.argv[1:4])  # the fifth, MARKER, only labels the command line
