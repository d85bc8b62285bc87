"""Checks of what the replicas hold: a mirrored variable, per-replica values, an all-reduce.

Example:
    >>> import mirrorkit as mk
    >>> mk.check_mirrored(..., mk.make_strategy())
    NOT YET: not attempted yet: replace the ... with your answer and run the cell.
"""

from __future__ import annotations

import numpy as np

from mirrorkit._validate import refuse, require_numbers, require_strategy
from mirrorkit.checks.result import NOT_ATTEMPTED, CheckResult, cannot_check_with_one_replica
from mirrorkit.inspection import MIRRORED, MIRRORED_VALUE, PER_REPLICA, SINGLE, inspect
from mirrorkit.report.values import summarize

# The ops that carry an all-reduce between replicas in a traced function: the collective ops
# (CollectiveAllReduce, MultiWorkerMirroredStrategy) and NCCL's. Other all-reduces (int32
# values, ReductionToOneDevice, HierarchicalCopyAllReduce) are ops with inputs from several
# devices.
_ALL_REDUCE_OPS = frozenset(
    {"CollectiveReduce", "CollectiveReduceV2", "CollectiveReduceV3", "NcclAllReduce"}
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
    import tensorflow as tf

    require_strategy(strategy, "mk.check_mirrored(variable, strategy)")
    wanted_dtype = None if dtype is None else _tf_dtype(dtype, "mk.check_mirrored")
    wanted_value = (
        None if expected is None else require_numbers("expected", expected, write=_EXPECTED)
    )
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
    if getattr(value, "distribute_strategy", strategy) is not strategy:
        return CheckResult(
            False,
            "it was created under another strategy's scope, not this strategy's: create it "
            "inside `with strategy.scope():` of the strategy you were given.",
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


def _tf_dtype(dtype, call: str):
    """``dtype`` as a ``tf.DType``; what is no dtype is refused, naming ``call``."""
    import tensorflow as tf

    try:
        return tf.dtypes.as_dtype(dtype)
    except TypeError:
        must = "a dtype such as tf.float32 or 'float32'"
        refuse("dtype", dtype, must=must, write=f"{call}(..., dtype=tf.float32)")


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
    if value is not Ellipsis and refusal is not None:
        return refusal
    lead = f"the values do not follow the replica number at {wanted} replicas: "
    return _compare(value, arrays, "every replica holds its expected value.", wanted_dtype, lead)


def _compare(
    value, expected: list[np.ndarray], passed: str, dtype=None, lead: str = ""
) -> CheckResult:
    """Compare the learner's per-replica ``value`` with one array per replica.

    ``lead`` starts the sentence that names a replica holding a wrong value.
    """
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
        if np.asarray(row.array).dtype.kind not in "biuf":
            return CheckResult(
                False,
                f"replica {row.replica} holds {row.summary} of dtype {row.dtype}, not a number: "
                "return a number, e.g. a tf.float32 tensor.",
            )
        if np.shape(row.array) != want.shape:
            return CheckResult(
                False,
                f"replica {row.replica} holds a value of shape {np.shape(row.array)}, "
                f"expected shape {want.shape}.",
            )
        if not np.allclose(row.array, want):
            return CheckResult(
                False,
                f"{lead}replica {row.replica} holds {row.summary}, expected {summarize(want)}.",
            )
    return CheckResult(True, passed)


def _local_dtypes(value) -> list:
    """The dtypes of ``value``'s per-replica tensors (one per replica)."""
    import tensorflow as tf

    values = getattr(value, "values", (value,))
    return [tf.convert_to_tensor(v).dtype for v in values]


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
    import tensorflow as tf

    require_strategy(strategy, "mk.check_all_reduced(replica_fn, strategy, expected=...)")
    wanted = strategy.num_replicas_in_sync
    total = require_numbers("expected", expected, write=_EXPECTED)
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
    try:
        value, feeds, inputs = _run_traced(strategy, replica_fn)
    except Exception as error:  # the learner's code: report, never raise
        return CheckResult(
            False,
            f"strategy.run(replica_fn) failed: {_cause(error)}. Run it yourself to see where.",
        )
    compared = _compare(value, [total] * wanted, "")
    if not compared:
        parts = getattr(value, "values", ())  # a dict's .values is a method, not the copies
        held = [np.asarray(v) for v in parts] if isinstance(parts, tuple | list) else []
        held = [h for h in held if h.dtype.kind in "biuf"]
        if held and all(np.allclose(h * wanted, total) for h in held):
            return CheckResult(
                False,
                f"{compared.message} Every replica holds {summarize(total)} / {wanted}: the "
                "mean of the replicas' values. All-reduce with tf.distribute.ReduceOp.SUM.",
            )
        return compared
    if not all(feeds):
        return CheckResult(
            False,
            "every replica holds the right value, but no all-reduce produced it: the value "
            "was computed on each replica alone (from a constant or num_replicas_in_sync). "
            "Return the result of ctx.all_reduce(...), with ctx = "
            "tf.distribute.get_replica_context(), so that the replicas combine their own "
            "values.",
        )
    varying = {key for key, arrays in inputs.items() if _differ(arrays)}
    if not all(groups & varying for groups in feeds):
        return CheckResult(
            False,
            "every replica holds the right value, but it is computed from an all-reduce of a "
            "constant: every replica gave the all-reduce the same input, and the number came "
            "from arithmetic after the all-reduce. All-reduce each replica's own value, "
            "computed from its replica_id_in_sync_group.",
        )
    return CheckResult(
        True, f"all {wanted} replicas hold the all-reduced value {summarize(total)}."
    )


def _cause(error: Exception) -> str:
    """The line of ``error`` that says what went wrong (TensorFlow's last line, not its header)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    cause = lines[-1] if lines else type(error).__name__
    if not cause.startswith(type(error).__name__) and ": " not in cause:
        cause = f"{type(error).__name__}: {cause}"
    return cause


def _run_traced(strategy, replica_fn):
    """Run ``strategy.run(replica_fn)`` in a ``tf.function``; what the graph says of its value.

    Returns the value, one set per replica of the all-reduces (keys) that feed that replica's
    value, and for every such key the arrays the replicas gave it.
    """
    import tensorflow as tf

    found: dict = {}

    def step():
        result = strategy.run(replica_fn)
        walk = tf.autograph.experimental.do_not_convert(_all_reduces_feeding)
        found["feeds"], groups = walk(strategy, result)
        found["keys"] = list(groups)
        return result, [list(groups[key]) for key in found["keys"]]

    value, arrays = tf.function(step)()
    inputs = {
        key: [np.asarray(a) for a in group]
        for key, group in zip(found["keys"], arrays, strict=True)
    }
    return value, found["feeds"], inputs


def _differ(arrays: list) -> bool:
    """Whether the replicas gave an all-reduce different inputs."""
    first = arrays[0]
    return any(a.shape != first.shape or not np.allclose(a, first) for a in arrays[1:])


def _all_reduces_feeding(strategy, result):
    """Per replica, the all-reduces its returned tensors come from; each one's input tensors.

    An all-reduce is a collective op (grouped across devices by its rank among the
    collectives of its device) or an op whose inputs come from several devices, such as the
    ``AddN`` that ``ReductionToOneDevice`` and int32 all-reduces are made of.
    """
    import tensorflow as tf

    graph = tf.compat.v1.get_default_graph()
    rank: dict = {}
    groups: dict = {}
    per_device: dict = {}
    for op in graph.get_operations():
        if op.type in _ALL_REDUCE_OPS:
            index = per_device.setdefault(op.device, 0)
            per_device[op.device] = index + 1
            rank[op.name] = ("collective", index)
            groups.setdefault(rank[op.name], []).append(op.inputs[0])
    locals_by_replica = [[] for _ in range(strategy.num_replicas_in_sync)]
    for item in tf.nest.flatten(result):
        for replica, local in enumerate(strategy.experimental_local_results(item)):
            if isinstance(local, tf.Tensor) and local.graph is graph:
                locals_by_replica[replica].append(local)
    feeds = []
    for tensors in locals_by_replica:
        keys: set = set()
        seen: set = set()
        pending = [tensor.op for tensor in tensors]
        while pending:
            op = pending.pop()
            if op.name in seen:
                continue
            seen.add(op.name)
            devices = {tensor.op.device for tensor in op.inputs} - {""}
            if op.name in rank:
                keys.add(rank[op.name])
            elif len(devices) > 1:
                keys.add(("gathered", op.name))
                groups[("gathered", op.name)] = list(op.inputs)
            else:
                pending.extend(tensor.op for tensor in op.inputs)
        feeds.append(keys if tensors else set())
    return feeds, groups


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
