"""The words of a local run's record: last lines, steps reached, why a worker did not join.

Example:
    >>> from mirrorkit.cluster._session_text import LAST_LINES
    >>> LAST_LINES
    8
"""

from __future__ import annotations

LAST_LINES = 8


class SessionText:
    """What :class:`mirrorkit.cluster._session.Session` says about its processes."""

    def _not_joined(self, worker: int) -> str:
        """Why ``worker`` had not joined when the start timeout ran out."""
        address = self.record.addresses[worker] if self.record.addresses else "?"
        name = self.names[worker]
        if worker in self.absent:
            return f"{name} ({address}) was never started (absent={self.absent})"
        if self.record.output.get(worker):
            return f"{name} ({address}) did not join.{self._last_lines(worker)}"
        strategy = "ParameterServer" if self.cluster.num_ps else "MultiWorkerMirrored"
        return (
            f"{name} ({address}) started and printed nothing: it was waiting "
            f"for the others in {strategy}Strategy()"
        )

    def _steps(self) -> str:
        return ", ".join(
            f"{self.names[w.worker]}: {w.step if w.step is not None else 'none'}"
            for w in self.record.status.workers
        )

    def _last_lines(self, worker: int, who: str = "") -> str:
        lines = [line for line in self.record.output.get(worker, []) if line.strip()]
        if not lines:
            return f" {who or 'It'} printed nothing."
        tail = "\n".join(f"    {line}" for line in lines[-LAST_LINES:])
        whose = f"{who}'s" if who else "Its"
        return f" {whose} last output:\n{tail}"

    def _keep_output(self) -> None:
        """The run's record gets the kept lines as lists, the counts dropped, the log paths."""
        self.keeper.close()
        self.record.output = {i: list(lines) for i, lines in self.keeper.lines.items()}
        self.record.output_dropped = dict(self.keeper.dropped)
        self.record.logs = dict(self.keeper.logs)
