"""Checks a learner runs on their own answers: a clear verdict and a hint, never a traceback."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mirrorkit._validate import require_strategy
from mirrorkit.checks.equivalence import check_step_equivalence
from mirrorkit.checks.input_preview import AUTO_SHARD_POLICIES, preview_input
from mirrorkit.inspection import MIRRORED, MIRRORED_VALUE, PER_REPLICA, SINGLE, inspect
from mirrorkit.report.render import Line, Report, Reported
from mirrorkit.report.values import summarize


@dataclass(frozen=True, repr=False)
class CheckResult(Reported):
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

    def report(self) -> Report:
        """The verdict as a report: one line, ``PASS`` or ``NOT YET`` and the message.

        Example:
            >>> from mirrorkit import CheckResult
            >>> CheckResult(False, "not yet").report().lines[0].tone
            'warn'
        """
        label, tone = ("PASS", "good") if self.passed else ("NOT YET", "warn")
        return Report(lines=(Line(self.message, tone=tone, label=label),))


_TODO = CheckResult(False, "not attempted yet: replace the ... with your answer and run the cell.")


def check_mirrored(value, strategy) -> CheckResult:
    """Check that ``value`` is a variable mirrored on every replica of ``strategy``, in sync.

    Args:
        value: The learner's variable (``...`` means "not attempted").
        strategy: The ``tf.distribute.Strategy`` it should belong to.

    Returns:
        A :class:`CheckResult`.

    Raises:
        TypeError: If ``strategy`` is not a ``tf.distribute.Strategy``.

    Example:
        >>> import tensorflow as tf
        >>> import mirrorkit as mk
        >>> strategy = mk.make_strategy()
        >>> mk.check_mirrored(tf.Variable(0.0), strategy).passed
        False
    """
    import tensorflow as tf

    require_strategy(strategy, "mk.check_mirrored(variable, strategy)")
    make = "create it with tf.Variable(...) inside `with strategy.scope():`"
    table = _table_or_verdict(value, "a variable", make + ".")
    if isinstance(table, CheckResult):
        return table
    kind = table.rows[0].kind
    if kind == SINGLE and not isinstance(value, tf.Variable):
        return CheckResult(False, f"value has type {type(value).__name__}, not a variable: {make}.")
    if kind == SINGLE:
        return CheckResult(
            False,
            "value is a plain variable with one copy: create it inside "
            "`with strategy.scope():` so that every replica gets its own copy.",
        )
    if kind != MIRRORED:
        return CheckResult(
            False,
            f"value is a {kind}, not a MirroredVariable: create it with tf.Variable(...) "
            "and the default synchronization.",
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

    Raises:
        TypeError: If ``strategy`` is not a ``tf.distribute.Strategy`` or ``expected`` is
            not a list of numbers (or arrays of numbers).
        ValueError: If ``expected`` does not hold one value per replica.

    Example:
        >>> import tensorflow as tf
        >>> import mirrorkit as mk
        >>> strategy = mk.make_strategy()
        >>> ids = strategy.run(lambda: tf.distribute.get_replica_context().replica_id_in_sync_group)
        >>> mk.check_per_replica(ids, strategy, expected=[0])
        PASS: every replica holds its expected value.
    """
    require_strategy(strategy, "mk.check_per_replica(value, strategy, expected=[...])")
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
    arrays = [_number_array(want, f"expected[{i}]") for i, want in enumerate(expected)]
    return _compare(value, arrays, "every replica holds its expected value.")


def _compare(value, expected: list[np.ndarray], passed: str) -> CheckResult:
    """Compare the learner's per-replica ``value`` with one array per replica."""
    wanted = len(expected)
    if isinstance(value, list | tuple):
        return CheckResult(
            False,
            f"value has type {type(value).__name__}, not the result of strategy.run: pass what "
            "strategy.run(fn) returned itself, not strategy.experimental_local_results(...) "
            "of it.",
        )
    table = _table_or_verdict(
        value, "the result of strategy.run", "pass what strategy.run(fn) returned."
    )
    if isinstance(table, CheckResult):
        return table
    if wanted > 1 and table.rows[0].kind not in (PER_REPLICA, MIRRORED_VALUE):
        return CheckResult(
            False, "value is not a per-replica value: compute it with strategy.run(fn)."
        )
    if len(table.rows) != wanted:
        return CheckResult(
            False,
            f"value has {len(table.rows)} values for {wanted} replicas: return one tensor "
            "from the function strategy.run runs.",
        )
    for row, want in zip(table.rows, expected, strict=True):
        if np.shape(row.array) != want.shape:
            return CheckResult(
                False,
                f"replica {row.replica} holds a value of shape {np.shape(row.array)}, "
                f"expected shape {want.shape}.",
            )
        if not np.allclose(row.array, want):
            return CheckResult(
                False, f"replica {row.replica} holds {row.summary}, expected {summarize(want)}."
            )
    return CheckResult(True, passed)


def _number_array(value, argument: str) -> np.ndarray:
    """``value`` as a NumPy array of numbers, or a TypeError naming ``argument``."""
    try:
        array = np.asarray(value)
    except ValueError:  # ragged nesting
        array = np.asarray(None)
    if array.dtype.kind not in "biuf":
        raise TypeError(
            f"{argument} must be a number or an array of numbers, got "
            f"{type(value).__name__} {value!r}: write it as the value you expect, e.g. 3.0."
        )
    return array


def check_all_reduced(value, strategy, expected) -> CheckResult:
    """Check that every replica holds the same all-reduced ``expected`` value.

    Args:
        value: The learner's result of ``strategy.run`` with an all-reduce inside.
        strategy: The strategy that ran it.
        expected: The value every replica should hold after the all-reduce.

    Returns:
        A :class:`CheckResult`.

    Raises:
        TypeError: If ``strategy`` is not a ``tf.distribute.Strategy`` or ``expected`` is
            not a number (or an array of numbers).

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
    require_strategy(strategy, "mk.check_all_reduced(value, strategy, expected=...)")
    wanted = strategy.num_replicas_in_sync
    total = _number_array(expected, "expected")
    passed = f"all {wanted} replicas hold the all-reduced value {summarize(total)}."
    return _compare(value, [total] * wanted, passed)


def check_input_pipeline(
    source, strategy, *, per_replica_batch: int | None = None, auto_shard: str | None = None
) -> CheckResult:
    """Check that ``source`` feeds every replica full, equal batches at every step.

    The real strategy distributes ``source`` (see :func:`mirrorkit.preview_input`); the
    check passes when the preview has no warning: the global batch divides by the
    replicas and no step brings a partial or empty batch.

    Args:
        source: The learner's batched ``tf.data.Dataset`` with example ids, or a dataset
            function of a ``tf.distribute.InputContext`` (``...``: not attempted).
        strategy: The strategy that distributes it.
        per_replica_batch: If given, the number of examples each replica must receive.
        auto_shard: If given, the ``AutoShardPolicy`` name the dataset must carry,
            e.g. ``"DATA"``.

    Returns:
        A :class:`CheckResult`.

    Raises:
        TypeError: If ``strategy`` is not a ``tf.distribute.Strategy`` or
            ``per_replica_batch`` is not an int.
        ValueError: If ``per_replica_batch`` is below 1 or ``auto_shard`` is not one of
            :data:`mirrorkit.AUTO_SHARD_POLICIES`.

    Example:
        >>> import tensorflow as tf
        >>> import mirrorkit as mk
        >>> strategy = mk.make_strategy()
        >>> mk.check_input_pipeline(tf.data.Dataset.range(8).batch(4), strategy)
        PASS: every replica gets 4 examples at every step (global batch 4).
        >>> mk.check_input_pipeline(tf.data.Dataset.range(7).batch(4), strategy).passed
        False
    """
    require_strategy(strategy, "mk.check_input_pipeline(dataset, strategy)")
    if per_replica_batch is not None:
        if isinstance(per_replica_batch, bool) or not isinstance(per_replica_batch, int):
            raise TypeError(
                f"per_replica_batch must be an int, got {type(per_replica_batch).__name__} "
                f"{per_replica_batch!r}: write the count, e.g. per_replica_batch=8."
            )
        if per_replica_batch < 1:
            raise ValueError(
                f"per_replica_batch must be at least 1, got {per_replica_batch}: write the "
                "number of examples each replica should get per step."
            )
    auto_shard = getattr(auto_shard, "name", auto_shard)  # an AutoShardPolicy member too
    if auto_shard is not None and auto_shard not in AUTO_SHARD_POLICIES:
        raise ValueError(
            f"auto_shard must be the name of an AutoShardPolicy, one of "
            f"{', '.join(map(repr, AUTO_SHARD_POLICIES))}; got {auto_shard!r}."
        )
    if source is Ellipsis:
        return _TODO
    try:
        preview = preview_input(strategy, source)
    except (TypeError, ValueError) as error:
        return CheckResult(False, str(error))
    if preview.warnings:
        return CheckResult(False, preview.warnings[0])
    if per_replica_batch is not None and preview.per_replica_batch != per_replica_batch:
        return CheckResult(
            False,
            f"each replica gets {preview.per_replica_batch} examples per step, expected "
            f"{per_replica_batch}.",
        )
    if auto_shard is not None and preview.auto_shard_policy != auto_shard:
        return CheckResult(
            False,
            f"the dataset's auto-shard policy is {preview.auto_shard_policy}, expected "
            f"{auto_shard}: set options.experimental_distribute.auto_shard_policy and apply "
            "the options with dataset.with_options(options).",
        )
    return CheckResult(
        True,
        f"every replica gets {preview.per_replica_batch} examples at every step "
        f"(global batch {preview.global_batch}).",
    )


def check_loss_step(compute_loss, strategy, model_fn, batch, *, loss="mse") -> CheckResult:
    """Check that a custom loop's per-replica loss gives the single-device gradient.

    Runs :func:`mirrorkit.check_step_equivalence` and turns its verdict into a
    :class:`CheckResult`; on a difference, the message names the likely cause.

    Args:
        compute_loss: The learner's ``compute_loss(model, x, y)`` (``...``: not attempted).
        strategy: The strategy the loop runs under.
        model_fn: A function returning a new, built Keras model.
        batch: One global batch ``(x, y)`` of NumPy arrays.
        loss: The per-example loss meant to be minimised, e.g. ``"mse"``.

    Returns:
        A :class:`CheckResult`; a mistake in ``compute_loss``, ``model_fn``, ``batch`` or
        ``loss`` is a failed result whose message says what to change.

    Raises:
        TypeError: If ``strategy`` is not a ``tf.distribute.Strategy``.

    Example:
        >>> import numpy as np, keras, tensorflow as tf
        >>> import mirrorkit as mk
        >>> def model_fn():
        ...     return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        >>> def compute_loss(model, x, y):
        ...     per_example = keras.losses.mean_squared_error(y, model(x, training=True))
        ...     return tf.nn.compute_average_loss(per_example, global_batch_size=4)
        >>> batch = (np.ones((4, 2), "float32"), np.zeros((4, 1), "float32"))
        >>> mk.check_loss_step(compute_loss, mk.make_strategy(), model_fn, batch).passed
        True
    """
    require_strategy(strategy, "mk.check_loss_step(compute_loss, strategy, model_fn, batch)")
    if compute_loss is Ellipsis:
        return _TODO
    try:
        report = check_step_equivalence(strategy, model_fn, compute_loss, batch, loss=loss)
    except (TypeError, ValueError) as error:
        return CheckResult(False, str(error))
    return CheckResult(report.equivalent, report.message)


def _table_or_verdict(value, wanted: str, fix: str):
    """The learner's value as a ReplicaTable, or the CheckResult saying why there is none."""
    import keras

    if value is Ellipsis:
        return _TODO
    if isinstance(value, keras.layers.Layer):
        return CheckResult(
            False,
            f"value is a Keras model or layer ({type(value).__name__}), not {wanted}: pass "
            "one of its variables, e.g. model.trainable_variables[0], or " + fix,
        )
    if isinstance(value, list | tuple | dict):
        return CheckResult(
            False, f"value has type {type(value).__name__}, not {wanted}: pass one value; {fix}"
        )
    try:
        return inspect(value)
    except (TypeError, ValueError):
        return CheckResult(False, f"value has type {type(value).__name__}, not {wanted}: {fix}")
