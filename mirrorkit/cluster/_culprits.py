"""Naming the cause of a failed run, not its victims: who ended first, who held the others up.

A worker whose peer is gone or late fails too, with an error that names no one (TensorFlow's
UnavailableError, DeadlineExceededError); the launcher ranks what it heard and, when the first
failure is such a symptom, looks for a parameter server that ended first or a worker that never
reached the collectives the others wait in (:func:`mirrorkit.cluster._flight.holdups`).

Example:
    >>> from mirrorkit.cluster import _culprits
    >>> failures = [(0, "UnavailableError: Socket closed", False), (1, "exit status 0", False)]
    >>> _culprits.first_cause(failures)
    (1, 'exit status 0', False)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

#: Words of the errors a worker gets when a peer is gone or late: it is the victim.
PEER_SYMPTOMS = (
    "UnavailableError",
    "DeadlineExceededError",
    "AbortedError",
    "CancelledError",
    "Collective ops is aborted",
    "failed to connect",
    "Connection reset",
    "Connection refused",
    "stopped sending heartbeats",
    "Socket closed",
)


def rank(failure: tuple[int, str, bool]) -> int:
    """0 killed by a signal, 1 ended without a word, 2 its own error, 3 a peer's symptom."""
    _, why, signalled = failure
    if signalled:
        return 0
    if why.startswith(("exit status", "killed by")):
        return 1
    return 3 if any(symptom in why for symptom in PEER_SYMPTOMS) else 2


def first_cause(failures: Sequence[tuple[int, str, bool]]) -> tuple[int, str, bool]:
    """The failure most likely the cause (:func:`rank`); the earliest among equals."""
    return min(failures, key=rank)


def blame(
    failure: tuple[int, str],
    *,
    names: Sequence[str],
    addresses: Sequence[str],
    server_losses: Sequence[tuple[int, str, float]],
    holdups: Callable[[], tuple[list[int], str]],
    evidence: Sequence[str] = (),
) -> tuple[int, str]:
    """The culprit of ``failure`` (a worker and its error) and the words that open the report.

    A failure that is not a peer's symptom is its own culprit. Otherwise the first server of
    a parameter-server cluster that ended is, then a task TensorFlow found silent (in ``why``
    or the ``evidence``, the failed worker's output), and else the first worker the flight
    records show holding up the others; the words end with "then " or "Then ", before the
    failure.
    """
    worker, why = failure
    if rank((worker, why, False)) != 3:
        return worker, ""
    silent = silent_task(why, *evidence)
    if silent in names and names.index(silent) != worker:
        return names.index(silent), f"{silent} went silent (no heartbeats); then "
    if server_losses:
        culprit, how, when = server_losses[0]
        role = (
            ", a parameter server: no step runs without the variables it holds"
            if names[culprit].startswith("ps ")
            else ""
        )
        address = f" at {addresses[culprit]}" if addresses else ""
        return culprit, (
            f"{names[culprit]}{address} ended first ({how}, {when:.1f} s into the run{role}); then "
        )
    late, text = holdups()
    if late:
        return late[0], f"{text} Then "
    return worker, ""


def silent_task(*texts: str) -> str | None:
    """``"worker 1"`` if TensorFlow's coordination service found that task silent, else None.

    Example:
        >>> silent_task("... (stopped sending heartbeats): /job:worker/replica:0/task:1 ...")
        'worker 1'
    """
    why = "\n".join(texts)
    match = re.search(r"stopped sending heartbeats\)?:?\s*/job:(\w+)/replica:\d+/task:(\d+)", why)
    return f"{match.group(1)} {match.group(2)}" if match else None


def heartbeat_hint(*texts: str) -> str:
    """Name the worker TensorFlow's coordination service found silent, if it did."""
    task = silent_task(*texts)
    if task is None:
        return ""
    return (
        f" TensorFlow reports that {task} stopped sending heartbeats: it was "
        "frozen, overloaded or cut off, and the others could not go on without it."
    )
