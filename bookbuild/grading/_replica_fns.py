"""Replica functions that cross as traced graphs: the student's process traces, the judge runs.

Where an exercise's answer is a function for ``strategy.run`` (chapter 1's exercise 3), the
student's process traces ``strategy.run(fn)`` in a ``tf.function`` and writes its graph
(:func:`describe`): the ``GraphDef``, which output tensor each replica returns, and the
values of the tensors the function captured. The judge (:func:`rebuild`) checks every
operation, the function library's included, against :data:`ALLOWED_OPS` (no Python
callbacks, no files, no variables), gives every all-reduce a fresh instance key and ordering
token of its own and a time limit, and hands the check a function that imports that graph
into the check's own traced step and returns replica *i*'s output to replica *i*. The check
then reads the graph it sees, all-reduces included, as it reads a learner's function.

Example:
    >>> sorted(ALLOWED_OPS - _wire.ELEMENT_OPS)
    ['AddN', 'CollectiveGatherV2', 'CollectiveReduceV2', 'Placeholder', 'Split', 'SplitV']
"""

from __future__ import annotations

import itertools

from bookbuild.grading import _states, _wire

COLLECTIVES = frozenset({"CollectiveReduceV2", "CollectiveGatherV2"})
ALLOWED_OPS = _wire.ELEMENT_OPS | COLLECTIVES | {"AddN", "Placeholder", "Split", "SplitV"}
INSTANCE_KEYS = 1 << 30  # the judge's all-reduces take keys from here, far above TensorFlow's
_REBUILT = itertools.count()  # each rebuilt function's keys are its own: 1024 per function
COLLECTIVE_SECONDS = 60.0  # an all-reduce waiting longer for its group fails, never hangs
_KEY, _TOKENS = 3, 4  # a collective's inputs: instance_key, then its ordering tokens


def describe(value, strategy) -> dict:
    """The traced graph that stands for ``value`` (the student's process).

    A value that is not a function crosses as state (:mod:`._states`): the check names its
    type. A function whose tracing raises crosses as that error.

    Raises:
        _wire.ExportError: If the graph is larger than ``_wire.MAX_GRAPH_BYTES``.
    """
    import tensorflow as tf

    if value is Ellipsis or not callable(value) or isinstance(value, tf.Variable | tf.Tensor):
        return {"kind": "state", "value": _states.describe(value, strategy)}
    try:
        traced = tf.function(lambda: strategy.run(value)).get_concrete_function()
    except Exception as error:  # noqa: BLE001 - the learner's function: its feedback
        return {"kind": "replica_fn", "error": f"{type(error).__name__}: {error}"[:2000]}
    graph = traced.graph.as_graph_def().SerializeToString()
    if len(graph) > _wire.MAX_GRAPH_BYTES:
        raise _wire.ExportError(f"its graph takes {len(graph)} bytes, over the limit")
    captures = {
        inner.name: _states.describe(outer, strategy, 1)
        for outer, inner in traced.graph.captures  # by value; call-time ones are all-reduce keys
        if outer.dtype != tf.resource
    }
    return {
        "kind": "replica_fn",
        "graph": _wire.encode(graph),
        "outputs": _outputs(traced, strategy),
        "captures": captures,
    }


def _outputs(traced, strategy) -> dict:
    """``{"shape": ..., "replicas": [[tensor name or number, ...], ...]}`` of the trace."""
    import tensorflow as tf

    returned = traced.structured_outputs
    shape = "none" if returned is None else type(returned).__name__
    items = [] if returned is None else list(returned) if shape in ("tuple", "list") else [returned]
    if shape not in ("none", "tuple", "list"):
        shape = "single"
    per_replica = [[] for _ in range(strategy.num_replicas_in_sync)]
    for item in items:
        local = strategy.experimental_local_results(item)
        if len(local) != len(per_replica):
            local = [item] * len(per_replica)
        for replica, part in enumerate(local):
            if isinstance(part, tf.Tensor):
                per_replica[replica].append(part.name)
            else:
                per_replica[replica].append(_states.describe(part, strategy, 1))
    return {"shape": shape, "replicas": per_replica}


def rebuild(record: dict, strategy):
    """The function the check is given (the judge): it imports the checked graph.

    Raises:
        _wire.ExportError: If the record is malformed or the graph uses a refused
            operation, reads a variable, or all-reduces inside a nested function.
    """
    import tensorflow as tf
    from tensorflow.core.framework import graph_pb2

    from mirrorkit.checks.result import recorded_error

    if record.get("kind") == "state":
        return _states.rebuild(record.get("value"), strategy)
    if isinstance(record.get("error"), str):
        error = recorded_error(record["error"])

        def fails():
            raise error

        return fails
    try:
        graph = graph_pb2.GraphDef()
        graph.ParseFromString(_wire.decode(record["graph"]))
        outputs, captures = record["outputs"], record["captures"]
        shape, replicas = outputs["shape"], outputs["replicas"]
    except Exception as error:  # noqa: BLE001 - malformed data from the student's side
        raise _wire.ExportError("the exported function is not one the grader reads") from error
    _refuse(graph)
    if shape not in ("none", "single", "tuple", "list") or not isinstance(replicas, list):
        raise _wire.ExportError("the exported function's outputs are not ones the grader reads")
    feeds = _rewired(graph, captures)
    return tf.autograph.experimental.do_not_convert(_Imported(graph, feeds, shape, replicas))


def _refuse(graph) -> None:
    """Raise ExportError if an operation is not allowed, or an all-reduce is nested."""
    nested = {node.op for f in graph.library.function for node in f.node_def}
    refusals = _wire.refused(_wire.graph_ops(graph), ALLOWED_OPS)
    if refusals:
        raise _wire.ExportError(
            f"your function uses operations the grader does not run: {', '.join(refusals[:5])} "
            "(a Python function, a variable, or reading or writing files): compute the value "
            "from the replica context and TensorFlow operations alone"
        )
    if nested & COLLECTIVES:
        raise _wire.ExportError(
            "your function all-reduces inside a tf.function of its own: call "
            "ctx.all_reduce(...) in the function you give strategy.run"
        )


def _rewired(graph, captures: dict) -> dict:
    """Fresh keys, tokens and time limits for the all-reduces; what each placeholder gets.

    Each collective's instance key becomes a constant numbered by its rank among its
    device's collectives (the replicas of one all-reduce share it); its ordering tokens come
    from variables made here, one per device. A placeholder that fed neither is a captured
    value and gets the student's value for it; any other is refused.
    """
    import tensorflow as tf

    base = INSTANCE_KEYS + 1024 * next(_REBUILT)
    ranks: dict[str, int] = {}
    roles: dict[str, str] = {}
    for node in list(graph.node):
        if node.op not in COLLECTIVES or len(node.input) <= _KEY:
            continue
        rank = ranks.setdefault(node.device, 0)
        if rank >= 1024:
            raise _wire.ExportError("your function all-reduces more than 1024 times")
        ranks[node.device] = rank + 1
        key = graph.node.add(name=f"mirrorbook_key/{node.name}", op="Const", device=node.device)
        key.attr["dtype"].type = tf.int32.as_datatype_enum
        key.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(base + rank, tf.int32))
        roles[node.input[_KEY].split(":")[0]] = "key"
        node.input[_KEY] = key.name
        for token in node.input[_TOKENS:]:
            roles[token.lstrip("^").split(":")[0]] = node.device
        node.attr["timeout_seconds"].f = COLLECTIVE_SECONDS
    feeds: dict[str, object] = {}
    for node in graph.node:
        if node.op != "Placeholder":
            continue
        role = roles.get(node.name)
        if role == "key":
            feeds[f"{node.name}:0"] = 0
        elif role is not None:
            with tf.device(role):
                feeds[f"{node.name}:0"] = tf.Variable(0.0, name="ordering_token")
        elif f"{node.name}:0" in captures:
            feeds[f"{node.name}:0"] = _states.rebuild(captures[f"{node.name}:0"], None)
        else:
            raise _wire.ExportError(
                "your function reads a variable or a tensor made outside it: compute the "
                "value inside the function, from the replica context"
            )
    return feeds


class _Imported:
    """Imports the graph once into the traced step that calls it; replica i gets output i."""

    def __init__(self, graph, feeds: dict, shape: str, replicas: list) -> None:
        self.graph, self.feeds, self.shape, self.replicas = graph, feeds, shape, replicas
        self.made: dict[int, dict] = {}

    def __call__(self):
        import tensorflow as tf

        context = tf.distribute.get_replica_context()
        replica = tf.get_static_value(context.replica_id_in_sync_group)
        if replica is None or not 0 <= int(replica) < len(self.replicas):
            raise ValueError(f"the exported function has no output for replica {replica}")
        here = tf.compat.v1.get_default_graph()
        if id(here) not in self.made:
            self.made[id(here)] = self._imported(here)
        tensors = self.made[id(here)]
        parts = [
            tensors[part] if isinstance(part, str) else _states.rebuild(part, None)
            for part in self.replicas[int(replica)]
        ]
        if self.shape == "none":
            return None
        if self.shape == "single":
            return parts[0]
        return tuple(parts) if self.shape == "tuple" else parts

    def _imported(self, here) -> dict:
        import tensorflow as tf

        names = sorted({p for parts in self.replicas for p in parts if isinstance(p, str)})
        with here.device(None):  # each node keeps the device it was traced on
            feeds = {
                name: here.capture(value.handle)
                if isinstance(value, tf.Variable)
                else tf.constant(value)
                for name, value in self.feeds.items()
            }
            made = tf.graph_util.import_graph_def(
                self.graph, input_map=feeds, return_elements=names, name="answer"
            )
        return dict(zip(names, made, strict=True))
