"""What the checks of replica values read of the learner's value, written as plain data.

Each check of :mod:`mirrorkit.checks.replica_values` is an ask and a verdict. The ask reads
the value, or runs the replica function traced and walks its graph, and writes what it found
here as JSON-ready data: a verdict it could already give
(:func:`~mirrorkit.checks.result.as_record`), or the value's :func:`facts` (:func:`run_facts`
for what ``strategy.run`` returned), or a traced run's (:func:`traced`). The verdict
(:mod:`mirrorkit.checks._replica_verdicts`) reads nothing else. The grader asks in an executor
and judges in its own process.

Example:
    >>> facts(..., "a variable", "make one.")
    {'verdict': {'passed': False, 'message': 'not attempted yet: replace the ... with your answer and run the cell.'}}
"""  # noqa: E501 - a doctest's output

from __future__ import annotations

import numpy as np

from mirrorkit.checks._arrays import as_data
from mirrorkit.checks.result import NOT_ATTEMPTED, CheckResult, as_record
from mirrorkit.inspection import inspect

# The ops that carry an all-reduce between replicas in a traced function: the collective ops
# (CollectiveAllReduce, MultiWorkerMirroredStrategy) and NCCL's. Other all-reduces (int32
# values, ReductionToOneDevice, HierarchicalCopyAllReduce) are ops with inputs from several
# devices.
_ALL_REDUCE_OPS = frozenset(
    {"CollectiveReduce", "CollectiveReduceV2", "CollectiveReduceV3", "NcclAllReduce"}
)


def facts(value, wanted: str, fix: str, strategy=None) -> dict:
    """What the checks read of ``value``: an early verdict, or its copies and their marks.

    Args:
        value: The learner's value.
        wanted: What it should be, for the verdict on what it is not ("a variable").
        fix: What to do instead.
        strategy: The strategy it should belong to.
    """
    import tensorflow as tf

    table = _table_or_verdict(value, wanted, fix)
    if isinstance(table, CheckResult):
        return as_record(table)
    parts = getattr(value, "values", ())  # a dict's .values is a method, not the copies
    return {
        "type": type(value).__name__,
        "variable": isinstance(value, tf.Variable),
        "same_strategy": getattr(value, "distribute_strategy", strategy) is strategy,
        "copies": table.num_replicas,
        "in_sync": table.in_sync,
        "dtype": _dtype_name(getattr(value, "dtype", None)),
        "local_dtype": _first_local_dtype(value),
        "parts": isinstance(parts, tuple | list),
        "rows": [
            {"replica": row.replica, "kind": row.kind, "dtype": row.dtype}
            | {"summary": row.summary, "array": as_data(row.array)}
            for row in table.rows
        ],
    }


def run_facts(value, strategy=None) -> dict:
    """:func:`facts` of what ``strategy.run`` returned; a list or tuple of its copies refused."""
    if isinstance(value, list | tuple):
        return as_record(
            CheckResult(
                False,
                f"value has type {type(value).__name__}, not the result of strategy.run: pass "
                "what strategy.run(fn) returned itself, not "
                "strategy.experimental_local_results(...) of it.",
            )
        )
    return facts(value, "the result of strategy.run", "pass what strategy.run(fn) returned.")


def traced(strategy, replica_fn) -> dict:
    """Run ``strategy.run(replica_fn)`` traced; its value's facts and where they came from.

    ``fed``: per replica, whether an all-reduce feeds its value; ``varied``: whether one of
    those all-reduces combined inputs that differ from replica to replica.
    """
    try:
        value, feeds, inputs = _run_traced(strategy, replica_fn)
    except Exception as error:  # the learner's code: report, never raise
        return as_record(
            CheckResult(
                False,
                f"strategy.run(replica_fn) failed: {_cause(error)}. Run it yourself to see where.",
            )
        )
    varying = {key for key, arrays in inputs.items() if _differ(arrays)}
    return {
        "value": run_facts(value),
        "fed": [bool(groups) for groups in feeds],
        "varied": [bool(groups & varying) for groups in feeds],
    }


def _dtype_name(dtype) -> str | None:
    """TensorFlow's name of ``dtype`` (a ``tf.DType``, or Keras's string), or None."""
    import tensorflow as tf

    try:
        return None if dtype is None else tf.dtypes.as_dtype(dtype).name
    except TypeError:
        return str(dtype)


def _first_local_dtype(value) -> str | None:
    """The dtype of ``value``'s first per-replica tensor, or None."""
    import tensorflow as tf

    values = getattr(value, "values", (value,))
    if not isinstance(values, tuple | list) or not values:
        return None
    try:
        return tf.convert_to_tensor(values[0]).dtype.name
    except (TypeError, ValueError):
        return None


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
