"""Checks a learner runs on their own answers: a clear verdict and a hint, never a traceback."""

from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np

from mirrorkit._format import summarize
from mirrorkit.inspection import MIRRORED, MIRRORED_VALUE, PER_REPLICA, SINGLE, inspect


@dataclass(frozen=True)
class CheckResult:
    """The verdict of a check: ``passed`` plus a sentence saying why (and what to try).

    Example:
        >>> from mirrorkit import CheckResult
        >>> CheckResult(True, "well done")
        PASS: well done
        >>> bool(CheckResult(False, "not yet"))
        False
    """

    passed: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return f"{'PASS' if self.passed else 'NOT YET'}: {self.message}"

    def _repr_html_(self) -> str:
        color = "#1a7f37" if self.passed else "#9a6700"
        label = "PASS" if self.passed else "NOT YET"
        return f'<p style="color:{color}"><strong>{label}</strong>: {html.escape(self.message)}</p>'


_TODO = CheckResult(False, "not attempted yet: replace the ... with your answer and run the cell.")


def check_mirrored(value, strategy) -> CheckResult:
    """Check that ``value`` is a variable mirrored on every replica of ``strategy``, in sync.

    Args:
        value: The learner's variable (``...`` means "not attempted").
        strategy: The ``tf.distribute.Strategy`` it should belong to.

    Returns:
        A :class:`CheckResult`.

    Example:
        >>> import tensorflow as tf
        >>> import mirrorkit as mk
        >>> strategy = mk.make_strategy()
        >>> mk.check_mirrored(tf.Variable(0.0), strategy).passed
        False
    """
    if value is Ellipsis:
        return _TODO
    table = _inspect_or_none(value)
    if table is None:
        return CheckResult(False, f"expected a tf.Variable, got {type(value).__name__}.")
    kind = table.rows[0].kind
    if kind == SINGLE:
        return CheckResult(
            False,
            "this is a plain variable with one copy: create it inside "
            "`with strategy.scope():` so that every replica gets its own copy.",
        )
    if kind != MIRRORED:
        return CheckResult(
            False, f"this is a {kind}, not a MirroredVariable: create it with tf.Variable(...)."
        )
    wanted = strategy.num_replicas_in_sync
    if table.num_replicas != wanted:
        return CheckResult(
            False,
            f"it has {table.num_replicas} copies but the strategy has {wanted} replicas: "
            "was it created under another strategy's scope?",
        )
    if not table.in_sync:
        return CheckResult(False, "its copies differ; assign to it in cross-replica context.")
    return CheckResult(True, f"a MirroredVariable with {wanted} identical copies.")


def check_per_replica(value, strategy, expected) -> CheckResult:
    """Check that ``value`` holds, replica by replica, the ``expected`` values.

    Args:
        value: The learner's result of ``strategy.run`` (``...``: not attempted).
        strategy: The strategy that ran it.
        expected: One expected value per replica, in replica order.

    Returns:
        A :class:`CheckResult`.

    Example:
        >>> import tensorflow as tf
        >>> import mirrorkit as mk
        >>> strategy = mk.make_strategy()
        >>> ids = strategy.run(lambda: tf.distribute.get_replica_context().replica_id_in_sync_group)
        >>> mk.check_per_replica(ids, strategy, expected=[0])
        PASS: every replica holds its expected value.
    """
    if value is Ellipsis:
        return _TODO
    wanted = strategy.num_replicas_in_sync
    if len(expected) != wanted:
        raise ValueError(f"expected has {len(expected)} values for {wanted} replicas.")
    table = _inspect_or_none(value)
    if table is None:
        got = type(value).__name__
        return CheckResult(False, f"expected the result of strategy.run, got {got}.")
    if wanted > 1 and table.rows[0].kind not in (PER_REPLICA, MIRRORED_VALUE):
        return CheckResult(
            False, "this is not a per-replica value: compute it with strategy.run(fn)."
        )
    if len(table.rows) != wanted:
        return CheckResult(False, f"it has {len(table.rows)} values for {wanted} replicas.")
    for row, want in zip(table.rows, expected, strict=True):
        if not np.allclose(row.array, want):
            want_text = summarize(np.asarray(want))
            return CheckResult(
                False, f"replica {row.replica} holds {row.summary}, expected {want_text}."
            )
    return CheckResult(True, "every replica holds its expected value.")


def check_all_reduced(value, strategy, expected) -> CheckResult:
    """Check that every replica holds the same all-reduced ``expected`` value.

    Args:
        value: The learner's result of ``strategy.run`` with an all-reduce inside.
        strategy: The strategy that ran it.
        expected: The value every replica should hold after the all-reduce.

    Returns:
        A :class:`CheckResult`.

    Example:
        >>> import tensorflow as tf
        >>> import mirrorkit as mk
        >>> strategy = mk.make_strategy()
        >>> def total():
        ...     ctx = tf.distribute.get_replica_context()
        ...     return ctx.all_reduce("sum", tf.constant(2.0))
        >>> mk.check_all_reduced(strategy.run(total), strategy, expected=2.0)
        PASS: all 1 replicas hold the all-reduced value 2.
    """
    wanted = strategy.num_replicas_in_sync
    result = check_per_replica(value, strategy, [expected] * wanted)
    if not result:
        return result
    total = summarize(np.asarray(expected))
    return CheckResult(True, f"all {wanted} replicas hold the all-reduced value {total}.")


def _inspect_or_none(value):
    try:
        return inspect(value)
    except (TypeError, ValueError):
        return None
