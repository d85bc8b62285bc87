"""Checks of what the replicas hold: a mirrored variable, per-replica values, an all-reduce.

Each check is an ask and a verdict. The ask (``ask_mirrored``, ``ask_per_replica``,
``ask_all_reduced``) checks the check's own arguments, reads the learner's value or runs the
replica function, and records what it found as plain data; the verdict
(:mod:`mirrorkit.checks._replica_verdicts`) reads only that record. The grader asks in an
executor and judges in its own process; a check in the chapter does both here.

Example:
    >>> import mirrorkit as mk
    >>> mk.check_mirrored(..., mk.make_strategy())
    NOT YET: not attempted yet: replace the ... with your answer and run the cell.
"""

from __future__ import annotations

from mirrorkit._validate import refuse, require_numbers, require_strategy
from mirrorkit.checks import _replica_reading as reading
from mirrorkit.checks._arrays import as_data
from mirrorkit.checks._replica_verdicts import (
    MAKE,
    judge_all_reduced,
    judge_mirrored,
    judge_per_replica,
)
from mirrorkit.checks.result import (
    NOT_ATTEMPTED,
    CheckResult,
    as_record,
    cannot_check_with_one_replica,
)

_EXPECTED = "it as the value you expect, e.g. 3.0"


def check_mirrored(value, strategy, *, dtype=None, expected=None) -> CheckResult:
    """Check that ``value`` is a variable mirrored on every replica of ``strategy``, in sync.

    Args:
        value: The learner's variable (``...`` means "not attempted").
        strategy: The ``tf.distribute.Strategy`` it should belong to.
        dtype: If given, the dtype the variable must have, e.g. ``tf.float32`` or
            ``"float32"``.
        expected: If given, the value every copy must hold, e.g. ``0.0``.

    Returns:
        A :class:`CheckResult`.

    Raises:
        TypeError: If ``strategy`` is not a ``tf.distribute.Strategy``, ``dtype`` is not a
            dtype or ``expected`` is not a number (or an array of numbers).

    Example:
        >>> import tensorflow as tf
        >>> import mirrorkit as mk
        >>> strategy = mk.make_strategy()
        >>> mk.check_mirrored(tf.Variable(0.0), strategy).passed
        False
        >>> with strategy.scope():
        ...     counter = tf.Variable(0)
        >>> mk.check_mirrored(counter, strategy, dtype=tf.float32, expected=0.0).message[:47]
        "the variable's dtype is int32, expected float32"
    """
    return judge_mirrored(ask_mirrored(value, strategy, dtype=dtype, expected=expected))


def ask_mirrored(value, strategy, *, dtype=None, expected=None) -> dict:
    """What :func:`check_mirrored` reads of ``value``, as data its verdict judges.

    Raises as :func:`check_mirrored` does for arguments that are not the check's.

    Example:
        >>> import mirrorkit as mk
        >>> ask_mirrored(..., mk.make_strategy())["answer"]["verdict"]["passed"]
        False
    """
    require_strategy(strategy, "mk.check_mirrored(variable, strategy)")
    wanted_dtype = None if dtype is None else _tf_dtype(dtype, "mk.check_mirrored")
    wanted_value = (
        None if expected is None else require_numbers("expected", expected, write=_EXPECTED)
    )
    return {
        "check": "mirrored",
        "replicas": strategy.num_replicas_in_sync,
        "dtype": None if wanted_dtype is None else wanted_dtype.name,
        "expected": None if wanted_value is None else as_data(wanted_value),
        "answer": reading.facts(value, "a variable", MAKE + ".", strategy),
    }


def _tf_dtype(dtype, call: str):
    """``dtype`` as a ``tf.DType``; what is no dtype is refused, naming ``call``."""
    import tensorflow as tf

    try:
        return tf.dtypes.as_dtype(dtype)
    except TypeError:
        must = "a dtype such as tf.float32 or 'float32'"
        refuse("dtype", dtype, must=must, write=f"{call}(..., dtype=tf.float32)")


def check_per_replica(value, strategy, expected, *, dtype=None) -> CheckResult:
    """Check that ``value`` holds, replica by replica, the ``expected`` values.

    Args:
        value: The learner's result of ``strategy.run`` (``...``: not attempted).
        strategy: The strategy that ran it.
        expected: One expected value per replica, in replica order.
        dtype: If given, the dtype every replica's value must have, e.g. ``tf.float32``.

    Returns:
        A :class:`CheckResult`.

    Raises:
        TypeError: If ``strategy`` is not a ``tf.distribute.Strategy`` or ``expected`` is
            not a list of numbers (or arrays of numbers).
        ValueError: If ``expected`` does not hold one value per replica.

    Example:
        >>> import tensorflow as tf
        >>> import mirrorkit as mk
        >>> strategy = mk.make_strategy()
        >>> ids = strategy.run(lambda: tf.distribute.get_replica_context().replica_id_in_sync_group)
        >>> mk.check_per_replica(ids, strategy, expected=[0]).message[:46]
        'cannot check per-replica values with one repli'
    """
    return judge_per_replica(ask_per_replica(value, strategy, expected, dtype=dtype))


def ask_per_replica(value, strategy, expected, *, dtype=None) -> dict:
    """What :func:`check_per_replica` reads of ``value``, as data its verdict judges.

    Raises as :func:`check_per_replica` does for arguments that are not the check's.

    Example:
        >>> import mirrorkit as mk
        >>> strategy = mk.make_strategy()
        >>> zeros = [0] * strategy.num_replicas_in_sync
        >>> ask_per_replica(..., strategy, zeros)["expected"][0]["shape"]
        []
    """
    require_strategy(strategy, "mk.check_per_replica(value, strategy, expected=[...])")
    wanted_dtype = None if dtype is None else _tf_dtype(dtype, "mk.check_per_replica")
    wanted = strategy.num_replicas_in_sync
    if isinstance(expected, str | bytes | dict) or not hasattr(expected, "__len__"):
        raise TypeError(
            f"expected must hold one value per replica, a list of {wanted}; got "
            f"{type(expected).__name__} {expected!r}. For one value every replica holds, "
            f"call mk.check_all_reduced(value, strategy, expected={expected!r})."
        )
    if len(expected) != wanted:
        raise ValueError(
            f"expected has {len(expected)} values for {wanted} replicas: give one per replica, "
            "in replica order (strategy.num_replicas_in_sync is the count)."
        )
    arrays = [
        require_numbers(f"expected[{i}]", want, write=_EXPECTED) for i, want in enumerate(expected)
    ]
    refusal = cannot_check_with_one_replica(strategy, "per-replica values")
    answer = (
        as_record(refusal)
        if value is not Ellipsis and refusal is not None
        else reading.run_facts(value)
    )
    return {
        "check": "per_replica",
        "replicas": wanted,
        "dtype": None if wanted_dtype is None else wanted_dtype.name,
        "expected": [as_data(a) for a in arrays],
        "answer": answer,
    }


def check_all_reduced(replica_fn, strategy, expected) -> CheckResult:
    """Check that ``strategy.run(replica_fn)`` all-reduces to ``expected`` on every replica.

    The check runs ``replica_fn`` itself, traced by ``tf.function`` as in a training step,
    and passes only when every replica returns ``expected`` **and** that value comes out of
    an all-reduce between the replicas whose inputs differ from replica to replica: in the
    traced graph a collective op, or an op that adds up values from several replicas' devices
    (TensorFlow's ``AddN`` for an int32 all-reduce), feeds every replica's value, and the
    values it combines depend on the replica. A function that computes the right number
    without communicating (from ``num_replicas_in_sync``), or from an all-reduce of a
    constant (counting the replicas, then arithmetic), does not pass. One replica cannot show
    the difference, so there the check refuses.

    Args:
        replica_fn: The learner's function for ``strategy.run``, taking no arguments
            (``...``: not attempted).
        strategy: The strategy to run it with.
        expected: The value every replica should hold after the all-reduce.

    Returns:
        A :class:`CheckResult`.

    Raises:
        TypeError: If ``strategy`` is not a ``tf.distribute.Strategy`` or ``expected`` is
            not a number (or an array of numbers).

    Example:
        >>> import tensorflow as tf
        >>> import mirrorkit as mk
        >>> def total():
        ...     ctx = tf.distribute.get_replica_context()
        ...     return ctx.all_reduce("sum", tf.constant(2.0))
        >>> mk.check_all_reduced(total, mk.make_strategy(), expected=2.0).passed
        False
    """
    return judge_all_reduced(ask_all_reduced(replica_fn, strategy, expected))


def ask_all_reduced(replica_fn, strategy, expected) -> dict:
    """What :func:`check_all_reduced` finds running ``replica_fn``, as data its verdict judges.

    Raises as :func:`check_all_reduced` does for arguments that are not the check's.

    Example:
        >>> import mirrorkit as mk
        >>> ask_all_reduced(..., mk.make_strategy(), 1.0)["answer"]["verdict"]["passed"]
        False
    """
    import tensorflow as tf

    require_strategy(strategy, "mk.check_all_reduced(replica_fn, strategy, expected=...)")
    total = require_numbers("expected", expected, write=_EXPECTED)
    record = {
        "check": "all_reduced",
        "replicas": strategy.num_replicas_in_sync,
        "expected": as_data(total),
    }
    if replica_fn is Ellipsis:
        return record | {"answer": as_record(NOT_ATTEMPTED)}
    if not callable(replica_fn) or isinstance(replica_fn, tf.Variable | tf.Tensor):
        return record | {
            "answer": as_record(
                CheckResult(
                    False,
                    f"got {type(replica_fn).__name__}, not a function: pass the function you "
                    "give strategy.run (replica_fn, not strategy.run(replica_fn)), so that the "
                    "check can run it and see the all-reduce.",
                )
            )
        }
    if (refusal := cannot_check_with_one_replica(strategy, "an all-reduce")) is not None:
        return record | {"answer": as_record(refusal)}
    return record | {"answer": reading.traced(strategy, replica_fn)}
