"""What a run keeps of its workers' output: the last lines in memory, every line on disk.

A worker that prints a million lines must not grow the notebook by a gigabyte, nor take it
minutes to echo them. The owner keeps the last :data:`KEEP_LINES` lines of each worker
(``ClusterRun.output``) and counts the ones it dropped (``ClusterRun.output_dropped``); every
line goes to a log file per worker (``ClusterRun.logs``) in the temporary folder, kept for
the owner's last :data:`KEEP_RUN_LOGS` runs and deleted with the owner's other run files
once the owner has ended. The echo (and the ``"output"`` events) let :data:`ECHO_BURST`
lines through at once, then :data:`ECHO_PER_SECOND` a second per worker; a note says how
many were not shown, and where they are.

Example:
    >>> from mirrorkit.cluster._output import OutputKeeper
    >>> keeper = OutputKeeper(["worker 0"], echo=False, log_dir=None)
    >>> [keeper.add(0, f"line {i}") for i in range(2)]
    [True, True]
    >>> keeper.lines[0][-1], keeper.dropped[0]
    ('line 1', 0)
"""

from __future__ import annotations

import collections
import contextlib
import os
import shutil
import tempfile
import time
from pathlib import Path

from mirrorkit.cluster import protocol

#: Lines of each worker's output a run keeps in memory (``ClusterRun.output``).
KEEP_LINES = 200
#: Lines per worker echoed (and sent as events) at once, before the rate applies.
ECHO_BURST = 100
#: Lines per second per worker echoed after the burst.
ECHO_PER_SECOND = 20.0
#: Runs whose full logs are kept on disk, per owner process.
KEEP_RUN_LOGS = 10


def new_log_dir() -> Path | None:
    """A fresh folder for one run's logs (older runs' beyond the last few are deleted)."""
    base = Path(tempfile.gettempdir()) / f"{protocol.RUN_PREFIX}{os.getpid()}-logs"
    try:
        base.mkdir(exist_ok=True)
        runs = sorted(base.iterdir(), key=lambda p: p.stat().st_mtime)
        for old in runs[: max(0, len(runs) - KEEP_RUN_LOGS + 1)]:
            shutil.rmtree(old, ignore_errors=True)
        return Path(tempfile.mkdtemp(prefix=time.strftime("run-%H%M%S-"), dir=base))
    except OSError:  # no room for logs: the run goes on, keeping what memory holds
        return None


class OutputKeeper:
    """The output of one run's processes: bounded in memory, whole on disk, echo rate-limited."""

    def __init__(self, names: list[str], echo: bool, log_dir: Path | None) -> None:
        self.names = names
        self.echo = echo
        self.lines = {i: collections.deque(maxlen=KEEP_LINES) for i in range(len(names))}
        self.dropped = dict.fromkeys(range(len(names)), 0)
        self.log_dir = log_dir
        self.logs: dict[int, str] = {}
        self._files: dict[int, object] = {}
        self._tokens = dict.fromkeys(range(len(names)), float(ECHO_BURST))
        self._last = dict.fromkeys(range(len(names)), time.monotonic())
        self._unshown = dict.fromkeys(range(len(names)), 0)

    def add(self, worker: int, text: str) -> bool:
        """Keep one line; whether it is echoed and sent as an event (the rate allows it)."""
        if len(self.lines[worker]) == KEEP_LINES:
            self.dropped[worker] += 1
        self.lines[worker].append(text)
        self._log(worker, text)
        now = time.monotonic()
        tokens = self._tokens[worker] + (now - self._last[worker]) * ECHO_PER_SECOND
        self._last[worker] = now
        if tokens < 1.0:
            self._tokens[worker] = tokens
            self._unshown[worker] += 1
            return False
        self._tokens[worker] = min(float(ECHO_BURST), tokens) - 1.0
        self._note_unshown(worker)
        if self.echo:
            print(f"[{self.names[worker]}] {text}", flush=True)
        return True

    def _log(self, worker: int, text: str) -> None:
        if self.log_dir is None:
            return
        try:
            if worker not in self._files:
                path = self.log_dir / f"{self.names[worker].replace(' ', '-')}.log"
                self._files[worker] = open(path, "a", encoding="utf-8")  # noqa: SIM115
                self.logs[worker] = str(path)
            self._files[worker].write(text + "\n")
        except OSError:  # the disk is full: keep the lines in memory only
            self.close()
            self.log_dir = None

    def _note_unshown(self, worker: int) -> None:
        count, self._unshown[worker] = self._unshown[worker], 0
        if count and self.echo:
            where = f" (every line is in {self.logs[worker]})" if worker in self.logs else ""
            print(
                f"[{self.names[worker]}] ... {count} lines not shown: it printed faster than "
                f"{ECHO_PER_SECOND:g} lines a second{where}",
                flush=True,
            )

    def close(self) -> None:
        """Close the log files and tell what the echo left out."""
        for worker in self._unshown:
            self._note_unshown(worker)
        for handle in self._files.values():
            with contextlib.suppress(OSError):
                handle.close()
        self._files = {}
