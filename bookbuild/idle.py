"""How many of the machine's cores stood idle lately, read from Linux's ``/proc/stat``.

The test stages wait a good part of their time (cluster bounds, TensorFlow's threads,
kernels): :func:`bookbuild.lanes.run_stages` opens a spare lane while the cores have stood
idle for a while, and not while they are busy.

Example:
    >>> meter = IdleMeter(window=10.0)
    >>> meter.idle_cores() is None or meter.idle_cores() >= 0.0
    True
"""

from __future__ import annotations

import os
import time
from collections import deque
from pathlib import Path

STAT = Path("/proc/stat")


def cpu_jiffies() -> tuple[int, int] | None:
    """(idle, total) clock ticks of every core since boot; None where ``/proc/stat`` is not.

    Example:
        >>> ticks = cpu_jiffies()
        >>> ticks is None or ticks[0] <= ticks[1]
        True
    """
    try:
        fields = [int(n) for n in STAT.read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle and waiting for the disk
    return idle, sum(fields[:8])  # guest time is counted in user time already


class IdleMeter:
    """The cores idle on average over the last ``window`` seconds, from samples it takes.

    Args:
        window: Seconds the average covers; a reading needs samples that far apart.
        read: What samples the ticks (:func:`cpu_jiffies`); a test can give its own.
        cores: The machine's cores.

    Example:
        >>> ticks = iter([(0, 0), (150, 200)])
        >>> meter = IdleMeter(window=0.0, read=lambda: next(ticks), cores=2)
        >>> meter.idle_cores(), meter.idle_cores()
        (None, 1.5)
    """

    def __init__(self, window: float, read=cpu_jiffies, cores: int | None = None) -> None:
        self.window, self.read = window, read
        self.cores = cores or os.cpu_count() or 1
        self.samples: deque[tuple[float, int, int]] = deque()

    def idle_cores(self) -> float | None:
        """Take a sample; the idle cores over the last ``window`` s, None until it spans it."""
        ticks, now = self.read(), time.monotonic()
        if ticks is None:
            return None
        self.samples.append((now, *ticks))
        while len(self.samples) > 2 and now - self.samples[1][0] >= self.window:
            self.samples.popleft()  # keep one sample at least `window` old
        start, idle, total = self.samples[0]
        if now - start < self.window or ticks[1] == total:
            return None
        return self.cores * (ticks[0] - idle) / (ticks[1] - total)
