"""Checks a learner runs on their own answers: a clear verdict and a hint, never a traceback."""

from __future__ import annotations

import numpy as np

from mirrorkit._validate import require_strategy
from mirrorkit.checks.equivalence import check_step_equivalence
from mirrorkit.checks.input_preview import AUTO_SHARD_POLICIES, preview_input
from mirrorkit.checks.result import NOT_ATTEMPTED, CheckResult, cannot_check_with_one_replica
from mirrorkit.inspection import MIRRORED, MIRRORED_VALUE, PER_REPLICA, SINGLE, inspect
from mirrorkit.report.values import summarize

# The ops that carry an all-reduce between replicas in a traced function: the collective ops
# (CollectiveAllReduce, MultiWorkerMirroredStrategy) and NCCL's.
_ALL_REDUCE_OPS = frozenset(
    {"CollectiveReduce", "CollectiveReduceV2", "CollectiveReduceV3", "NcclAllReduce"}
)


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
    import tensorflow as tf

    require_strategy(strategy, "mk.check_mirrored(variable, strategy)")
    wanted_dtype = None if dtype is None else _dtype(dtype, "mk.check_mirrored")
    wanted_value = None if expected is None else _number_array(expected, "expected")
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
    if wanted_dtype is not None and value.dtype != wanted_dtype:
        return CheckResult(False, _dtype_mismatch("the variable", value.dtype, wanted_dtype))
    held = table.rows[0].array
    if wanted_value is not None and (
        np.shape(held) != wanted_value.shape or not np.allclose(held, wanted_value)
    ):
        return CheckResult(
            False,
            f"its copies hold {table.rows[0].summary}, expected {summarize(wanted_value)}: "
            "give tf.Variable that initial value.",
        )
    return CheckResult(True, f"a MirroredVariable with {wanted} identical copies.")


def _dtype(dtype, call: str):
    """``dtype`` as a ``tf.DType``, or a TypeError naming ``call``."""
    import tensorflow as tf

    try:
        return tf.dtypes.as_dtype(dtype)
    except TypeError:
        raise TypeError(
            f"{call}: dtype must be a dtype such as tf.float32 or 'float32', got "
            f"{type(dtype).__name__} {dtype!r}."
        ) from None


def _dtype_mismatch(what: str, got, wanted) -> str:
    """The sentence for a value of the wrong dtype, with the usual cause when there is one."""
    message = f"{what}'s dtype is {got.name}, expected {wanted.name}: "
    if wanted.is_floating and got.is_integer:
        return message + (
            f"an integer such as 0 makes an {got.name}; write 0.0, or convert with "
            f"tf.cast(..., tf.{wanted.name})."
        )
    return message + f"convert with tf.cast(..., tf.{wanted.name})."


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
    require_strategy(strategy, "mk.check_per_replica(value, strategy, expected=[...])")
    wanted_dtype = None if dtype is None else _dtype(dtype, "mk.check_per_replica")
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
    refusal = cannot_check_with_one_replica(strategy, "per-replica values")
    if value is not Ellipsis and refusal is not None:
        return refusal
    return _compare(value, arrays, "every replica holds its expected value.", wanted_dtype)


def _compare(value, expected: list[np.ndarray], passed: str, dtype=None) -> CheckResult:
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
    if dtype is not None:
        got = next(iter(_local_dtypes(value)), None)
        if got is not None and got != dtype:
            return CheckResult(False, _dtype_mismatch("the value", got, dtype))
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


def _local_dtypes(value) -> list:
    """The dtypes of ``value``'s per-replica tensors (one per replica)."""
    import tensorflow as tf

    values = getattr(value, "values", (value,))
    return [tf.convert_to_tensor(v).dtype for v in values]


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


def check_all_reduced(replica_fn, strategy, expected) -> CheckResult:
    """Check that ``strategy.run(replica_fn)`` all-reduces to ``expected`` on every replica.

    The check runs ``replica_fn`` itself, traced by ``tf.function`` as in a training step,
    and passes only when every replica returns ``expected`` **and** that value comes out of
    an all-reduce between the replicas (a collective or NCCL op in the traced graph feeds
    it). A function that computes the right number without communicating, for example from
    ``num_replicas_in_sync``, is not an all-reduce and does not pass. One replica cannot show
    the difference, so there the check refuses.

    Args:
        replica_fn: The learner's function for ``strategy.run``, taking no arguments
            (``...``: not attempted).
        strategy: The strategy to run it with, made with the default ``cross_device_ops``
            (with ``ReductionToOneDevice`` or ``HierarchicalCopyAllReduce`` an all-reduce
            leaves no op of its own to recognise, and the check says so).
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
    import tensorflow as tf

    require_strategy(strategy, "mk.check_all_reduced(replica_fn, strategy, expected=...)")
    wanted = strategy.num_replicas_in_sync
    total = _number_array(expected, "expected")
    if replica_fn is Ellipsis:
        return NOT_ATTEMPTED
    if not callable(replica_fn) or isinstance(replica_fn, tf.Variable | tf.Tensor):
        return CheckResult(
            False,
            f"got {type(replica_fn).__name__}, not a function: pass the function you give "
            "strategy.run (replica_fn, not strategy.run(replica_fn)), so that the check can "
            "run it and see the all-reduce.",
        )
    if (refusal := cannot_check_with_one_replica(strategy, "an all-reduce")) is not None:
        return refusal
    cross_device_ops = getattr(strategy.extended, "_cross_device_ops", None)
    if isinstance(
        cross_device_ops,
        tf.distribute.ReductionToOneDevice | tf.distribute.HierarchicalCopyAllReduce,
    ):
        return CheckResult(
            False,
            f"cannot check an all-reduce made by {type(cross_device_ops).__name__}: it "
            "leaves no op of its own in the graph. Make the strategy with the default "
            "cross_device_ops (mk.make_strategy()) for this check.",
        )
    traced = tf.function(lambda: strategy.run(replica_fn))
    try:
        concrete = traced.get_concrete_function()
        value = traced()
    except Exception as error:  # the learner's code: report, never raise
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        cause = lines[-1] if lines else type(error).__name__
        if not cause.startswith(type(error).__name__) and ": " not in cause:
            cause = f"{type(error).__name__}: {cause}"
        return CheckResult(
            False,
            f"strategy.run(replica_fn) failed: {cause}. Run it yourself to see where.",
        )
    compared = _compare(value, [total] * wanted, "")
    if not compared:
        held = [np.asarray(v) for v in getattr(value, "values", ())]
        if held and all(np.allclose(h * wanted, total) for h in held):
            return CheckResult(
                False,
                f"{compared.message} Every replica holds {summarize(total)} / {wanted}: the "
                "mean of the replicas' values. All-reduce with tf.distribute.ReduceOp.SUM.",
            )
        return compared
    if not _fed_by_all_reduce(concrete.outputs):
        return CheckResult(
            False,
            "every replica holds the right value, but no all-reduce produced it: the value "
            "was computed on each replica alone (from a constant or num_replicas_in_sync). "
            "Return the result of ctx.all_reduce(...), with ctx = "
            "tf.distribute.get_replica_context(), so that the replicas combine their own "
            "values.",
        )
    return CheckResult(
        True, f"all {wanted} replicas hold the all-reduced value {summarize(total)}."
    )


def _fed_by_all_reduce(outputs) -> bool:
    """Whether an all-reduce op is among the data inputs (not control inputs) of ``outputs``."""
    seen: set = set()
    pending = [tensor.op for tensor in outputs]
    while pending:
        op = pending.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        if op.type in _ALL_REDUCE_OPS:
            return True
        pending.extend(tensor.op for tensor in op.inputs)
    return False


def check_input_pipeline(
    source,
    strategy,
    *,
    per_replica_batch: int | None = None,
    global_batch: int | None = None,
    auto_shard: str | None = None,
    repeats: bool = False,
) -> CheckResult:
    """Check that ``source`` feeds every replica full, equal batches at every step.

    The real strategy distributes ``source`` (see :func:`mirrorkit.preview_input`); the
    check passes when the preview has no warning: the global batch divides by the
    replicas and no step brings a partial or empty batch. It also refuses what would only
    work for this data: a finite pipeline must batch with ``drop_remainder=True`` (a
    batch dimension of ``None`` in ``element_spec`` means nothing keeps the last batch
    full when the examples do not divide evenly). A dataset function is also called, as
    the strategy would on other machines, with ``tf.distribute.InputContext`` objects for
    other replica counts (1, 2 and the strategy's, where they divide ``global_batch``)
    and for two input pipelines: it must batch ``get_per_replica_batch_size(global_batch)``
    each time and give the two pipelines different examples. With one replica there is
    nothing to split, so the check refuses.

    Args:
        source: The learner's batched ``tf.data.Dataset`` with example ids, or a dataset
            function of a ``tf.distribute.InputContext`` (``...``: not attempted).
        strategy: The strategy that distributes it.
        per_replica_batch: If given, the number of examples each replica must receive.
        global_batch: If given, the number of examples one step must bring across all
            replicas; required for a dataset function.
        auto_shard: If given, the ``AutoShardPolicy`` name the dataset must carry,
            e.g. ``"DATA"``.
        repeats: If True, the dataset must repeat forever (``dataset.repeat()``).

    Returns:
        A :class:`CheckResult`.

    Raises:
        TypeError: If ``strategy`` is not a ``tf.distribute.Strategy``, or a batch size is
            not an int, or ``repeats`` is not a bool.
        ValueError: If a batch size is below 1, ``auto_shard`` is not one of
            :data:`mirrorkit.AUTO_SHARD_POLICIES`, or a dataset function is checked
            without ``global_batch``.

    Example:
        >>> import tensorflow as tf
        >>> import mirrorkit as mk
        >>> strategy = mk.make_strategy()
        >>> mk.check_input_pipeline(tf.data.Dataset.range(8).batch(4), strategy).passed
        False
    """
    require_strategy(strategy, "mk.check_input_pipeline(dataset, strategy)")
    for name, size in (("per_replica_batch", per_replica_batch), ("global_batch", global_batch)):
        _require_count(size, name)
    if not isinstance(repeats, bool):
        raise TypeError(f"repeats must be True or False, got {type(repeats).__name__} {repeats!r}.")
    auto_shard = getattr(auto_shard, "name", auto_shard)  # an AutoShardPolicy member too
    if auto_shard is not None and auto_shard not in AUTO_SHARD_POLICIES:
        raise ValueError(
            f"auto_shard must be the name of an AutoShardPolicy, one of "
            f"{', '.join(map(repr, AUTO_SHARD_POLICIES))}; got {auto_shard!r}."
        )
    if source is Ellipsis:
        return NOT_ATTEMPTED
    import tensorflow as tf

    is_function = callable(source) and not isinstance(source, tf.data.Dataset)
    if is_function and global_batch is None:
        raise ValueError(
            "checking a dataset function needs global_batch=...: the global batch the "
            "function is meant to split, e.g. global_batch=32."
        )
    if (refusal := cannot_check_with_one_replica(strategy, "how input is split")) is not None:
        return refusal
    try:
        preview = preview_input(strategy, source)
    except (TypeError, ValueError) as error:
        return CheckResult(False, str(error))
    if preview.warnings:
        return CheckResult(False, preview.warnings[0])
    if repeats and preview.total_steps is not None:
        return CheckResult(
            False,
            f"the dataset ends after {preview.total_steps} steps, but it should repeat "
            "forever: call .repeat() on it (before .batch, so that no batch is partial).",
        )
    if is_function:
        verdict = _probe_dataset_fn(source, global_batch, preview.num_replicas)
        if verdict is not None:
            return verdict
    else:
        if (verdict := _finite_needs_drop_remainder(source, "the dataset")) is not None:
            return verdict
        if global_batch is not None and preview.global_batch != global_batch:
            return CheckResult(
                False,
                f"each step brings {preview.global_batch} examples, expected a global batch "
                f"of {global_batch}: batch by the global batch (all replicas together), "
                "not by one replica's share.",
            )
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


def _require_count(value, name: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"{name} must be an int, got {type(value).__name__} {value!r}: write the "
            f"count, e.g. {name}=8."
        )
    if value < 1:
        raise ValueError(
            f"{name} must be at least 1, got {value}: write the number of examples, e.g. {name}=8."
        )


def _batch_dimension(dataset):
    """The static batch dimension of ``dataset``'s first component (None if not fixed)."""
    import tensorflow as tf

    specs = tf.nest.flatten(dataset.element_spec)
    shape = specs[0].shape if specs else None
    return shape[0] if shape is not None and shape.rank else None


def _finite_needs_drop_remainder(dataset, what: str) -> CheckResult | None:
    import tensorflow as tf

    if dataset.cardinality() == tf.data.INFINITE_CARDINALITY:
        return None  # repeated before batching: every batch is full
    if _batch_dimension(dataset) is None:
        return CheckResult(
            False,
            f"{what}'s batch size is not fixed (its element_spec has None as the batch "
            "dimension), so nothing keeps the last batch full when the number of examples "
            "does not divide by the batch: here it happens to divide, elsewhere it will "
            "not. Batch with drop_remainder=True.",
        )
    return None


def _probe_dataset_fn(fn, global_batch: int, num_replicas: int) -> CheckResult | None:
    """Call ``fn`` as other machines would; the verdict on the first thing that goes wrong."""
    try:
        return _probe(fn, global_batch, num_replicas)
    except Exception as error:  # the learner's function: report, never raise
        return CheckResult(
            False,
            f"the dataset function failed when called with another InputContext: "
            f"{type(error).__name__}: {error}. It must work for any context: use "
            "context.get_per_replica_batch_size, context.num_input_pipelines and "
            "context.input_pipeline_id rather than fixed numbers.",
        )


def _probe(fn, global_batch: int, num_replicas: int) -> CheckResult | None:
    import tensorflow as tf

    counts = sorted({k for k in (1, 2, num_replicas) if global_batch % k == 0})
    for k in counts:
        context = tf.distribute.InputContext(1, 0, k)
        dataset = fn(context)
        if (verdict := _finite_needs_drop_remainder(dataset, "the function's dataset")) is not None:
            return verdict
        size, wanted = _batch_dimension(dataset), global_batch // k
        if size != wanted:
            return CheckResult(
                False,
                f"with {k} replica{'s' if k > 1 else ''} in sync the function batches {size} "
                f"examples, but each "
                f"replica's share of the global batch {global_batch} is {wanted}: batch by "
                f"context.get_per_replica_batch_size({global_batch}), not by a fixed number.",
            )
    shards = []
    for pipeline in (0, 1):
        dataset = fn(tf.distribute.InputContext(2, pipeline, num_replicas))
        ids = set()
        for element in dataset.take(1000):
            first = tf.nest.flatten(element)[0]
            if not first.dtype.is_integer:
                return None  # no example ids to tell the pipelines apart (preview needs them)
            ids.update(first.numpy().ravel().tolist())
        shards.append(ids)
    if shards[0] & shards[1]:
        return CheckResult(
            False,
            "with two input pipelines (two workers) both read the same examples: shard the "
            "dataset with dataset.shard(context.num_input_pipelines, "
            "context.input_pipeline_id) so that each pipeline reads its own part.",
        )
    return None


def check_loss_step(compute_loss, strategy, model_fn, batch, *, loss="mse") -> CheckResult:
    """Check that a custom loop's per-replica loss gives the single-device gradient.

    Runs :func:`mirrorkit.check_step_equivalence` on each batch and turns its verdict into
    a :class:`CheckResult`; on a difference, the message names the likely cause. Give
    several batches of different sizes when the loss must be right for any batch: a loss
    that divides by a fixed number passes one size only. With one replica, a loss that
    ignores the replicas is right by accident, so there the check refuses.

    Args:
        compute_loss: The learner's ``compute_loss(model, x, y)`` (``...``: not attempted).
        strategy: The strategy the loop runs under.
        model_fn: A function returning a new, built Keras model.
        batch: One global batch ``(x, y)`` of NumPy arrays, or a list of such batches.
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
        >>> mk.check_loss_step(compute_loss, mk.make_strategy(), model_fn, batch).message[:40]
        'cannot check a loss with one replica: wi'
    """
    require_strategy(strategy, "mk.check_loss_step(compute_loss, strategy, model_fn, batch)")
    if compute_loss is Ellipsis:
        return NOT_ATTEMPTED
    if (refusal := cannot_check_with_one_replica(strategy, "a loss")) is not None:
        return refusal
    batches = batch if isinstance(batch, list) else [batch]
    if not batches:
        return CheckResult(False, "batch is an empty list: give one (x, y) batch or several.")
    for each in batches:
        try:
            report = check_step_equivalence(strategy, model_fn, compute_loss, each, loss=loss)
        except (TypeError, ValueError) as error:
            return CheckResult(False, str(error))
        if not report.equivalent:
            size = f"with a global batch of {len(each[0])} examples: " if len(batches) > 1 else ""
            return CheckResult(False, size + report.message)
    if len(batches) == 1:
        return CheckResult(True, report.message)
    sizes = " and ".join(str(len(each[0])) for each in batches)
    return CheckResult(True, f"{report.message} (checked with global batches of {sizes}).")


def _table_or_verdict(value, wanted: str, fix: str):
    """The learner's value as a ReplicaTable, or the CheckResult saying why there is none."""
    import keras

    if value is Ellipsis:
        return NOT_ATTEMPTED
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
