"""Time-based throttling that also caps the share of wall time spent on updates."""

from __future__ import annotations

import contextlib
import numbers
import statistics
import time
from collections import deque

from mirrorkit._validate import refuse, require_number


class Throttle:
    """Say when an update is due: at most every ``min_interval`` seconds, within ``budget``.

    ``budget`` is the largest fraction of wall time (since :meth:`start_clock` or the first
    call) that updates may use in total; an expensive update therefore pushes the next ones
    back instead of slowing training. Callers time their update between ``begin()`` and
    ``end()``, and :meth:`charge` whatever else their updates cost (setting up, drawing the
    last state, a training step slowed down by the update before it): the budget counts it.
    """

    def __init__(self, min_interval: float, budget: float, clock=time.perf_counter):
        self.min_interval = min_interval
        self.budget = budget
        self.clock = clock
        self.start: float | None = None
        self.last = -float("inf")
        self.spent = 0.0
        self.last_cost = 0.0
        self.updates = 0
        self._began = 0.0
        self._after_update = False
        self._typical: deque[float] = deque(maxlen=32)  # recent steps no update preceded

    def start_clock(self) -> None:
        """Start counting wall time now, if not yet (before a cost that precedes any update)."""
        if self.start is None:
            self.start = self.clock()

    def charge(self, seconds: float) -> None:
        """Count ``seconds`` of work caused by the updates, outside ``begin()``/``end()``."""
        self.start_clock()
        self.spent += max(0.0, seconds)

    def due(self) -> bool:
        now = self.clock()
        if self.start is None:
            self.start = now
        if now - self.last < self.min_interval:
            return False
        if self.budget >= 1:
            return True  # a budget of all the time is no budget
        # Count the coming update as costing what the last one did, so that one expensive
        # update (a plot redraw) cannot carry the total over the budget.
        return self.spent + self.last_cost <= self.budget * (now - self.start)

    def begin(self) -> None:
        self._began = self.clock()

    def end(self) -> None:
        now = self.clock()
        self.last_cost = now - self._began
        self.spent += self.last_cost
        self.last = now
        self.updates += 1
        self._after_update = True

    def update_if_due(self, update, *, force: bool = False) -> bool:
        """Run ``update()`` if an update is due (or ``force``), timed as one; whether it ran.

        Example:
            >>> throttle = Throttle(min_interval=3600, budget=1.0)
            >>> throttle.update_if_due(lambda: None), throttle.update_if_due(lambda: None)
            (True, False)
            >>> throttle.update_if_due(lambda: None, force=True), throttle.updates
            (True, 2)
        """
        if not force and not self.due():
            return False
        self.begin()
        update()
        self.end()
        return True

    @contextlib.contextmanager
    def charged(self):
        """Charge the time the ``with`` block takes to the budget (see :meth:`charge`).

        Example:
            >>> throttle = Throttle(min_interval=0.05, budget=0.05)
            >>> with throttle.charged():
            ...     pass
            >>> throttle.spent >= 0
            True
        """
        started = self.clock()
        try:
            yield
        finally:
            self.charge(self.clock() - started)

    def step_ended(self, seconds: float) -> None:
        """Say how long a training step took (for callers that see the steps).

        The first step after an update is charged what it took beyond a typical step (the
        median of the last 32 steps no update preceded): the update slowed it down (the
        threads it woke, the caches it filled), so that time is the update's too.
        """
        if not self._after_update:
            self._typical.append(seconds)
            return
        self._after_update = False
        if self._typical:  # at most what the update itself cost: a step that took longer
            # (the first of an epoch, a machine that stalled) was slowed by something else
            excess = seconds - statistics.median(self._typical)
            self.charge(min(excess, self.last_cost))

    @property
    def overhead(self) -> float:
        """Fraction of wall time spent in updates so far."""
        if self.start is None:
            return 0.0
        elapsed = self.clock() - self.start
        return self.spent / elapsed if elapsed > 0 else 0.0


def budget_message(budget) -> str:
    """What to say about a ``budget`` outside (0, 1]."""
    if isinstance(budget, numbers.Real) and 1 < budget <= 100:
        todo = f"for {budget:g}% write budget={budget / 100:g}"
    else:
        todo = "write e.g. budget=0.05 (5%)"
    return f"budget must be a fraction of wall time > 0 and <= 1, got {budget!r}: {todo}."


def check_settings(min_interval, budget) -> None:
    """Check a throttle's settings given as plain arguments (widgets check theirs as traits).

    Raises:
        TypeError: If either is not a number.
        ValueError: If either is not finite, ``min_interval`` is negative or ``budget`` is not
            in (0, 1].
    """
    write = "e.g. min_interval=0.05 (0 updates at every step)"
    require_number("min_interval", min_interval, write=write)  # finite too
    require_number("budget", budget, write="e.g. budget=0.05")
    if min_interval < 0:
        must = ">= 0 seconds"
        refuse("min_interval", min_interval, must=must, write=write, error=ValueError)
    if not 0 < budget <= 1:
        raise ValueError(budget_message(budget))
