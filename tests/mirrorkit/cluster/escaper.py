"""An escaper for the tests of processes that must not outlive a run (no test imports here).

An escaper starts a session of its own, ignores SIGTERM and forks twice, so that its parent
is gone and no process group or command line ties it to the run that started it. Workers
import this module (their functions are pickled by reference), so it imports nothing of the
tests' set-up.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

ESCAPER = textwrap.dedent(
    """
    import os, signal, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.setsid()
    if os.fork():
        os._exit(0)
    if os.fork():
        os._exit(0)
    with open(sys.argv[1] + ".partial", "w") as out:
        out.write(str(os.getpid()))
    os.rename(sys.argv[1] + ".partial", sys.argv[1])
    time.sleep(600)
    """
)


def start_escaper(pid_file: str) -> int:
    """Start an escaper and return its pid once it has left its parents (at most 30 s)."""
    subprocess.Popen(
        [sys.executable, "-c", ESCAPER, pid_file],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    ).wait(timeout=30)
    path = Path(pid_file)
    deadline = time.monotonic() + 30
    while not path.exists():
        assert time.monotonic() < deadline, "the escaper never started"
        time.sleep(0.02)
    return int(path.read_text())


def escape_then_train(context, folder, steps=3, then="return"):
    """Start an escaper, then all-reduce and report ``steps`` steps, then ``then``."""
    start_escaper(f"{folder}/escaper-{context.task_id}")
    strategy = context.strategy
    for step in range(1, steps + 1):
        strategy.reduce("SUM", strategy.run(lambda: 1.0), axis=None)
        context.report(step)
    if then == "sleep":
        time.sleep(600)
    return context.task_id
