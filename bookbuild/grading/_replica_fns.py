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

from bookbuild.grading import _states, _traced_graphs, _wire

ALLOWED_OPS = (
    _wire.ELEMENT_OPS | _traced_graphs.COLLECTIVES | {"AddN", "Placeholder", "Split", "SplitV"}
)
WORDS = _traced_graphs.Words(
    "function", "the function you give strategy.run", "the replica context"
)


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
        "graph": _wire.pack(graph),
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

    from mirrorkit.checks.result import recorded_error

    if isinstance(record, dict) and isinstance(record.get("error"), str):
        error = recorded_error(record["error"])

        def fails():
            raise error

        return fails

    def function(record: dict):
        shape, replicas = record["outputs"]["shape"], record["outputs"]["replicas"]
        if shape not in ("none", "single", "tuple", "list") or not isinstance(replicas, list):
            raise _wire.ExportError("the exported function's outputs are not ones the grader reads")
        names = sorted({p for parts in replicas for p in parts if isinstance(p, str)})
        traced = _traced_graphs.Traced({**record, "inputs": []}, names, WORDS, ALLOWED_OPS)
        tokens = _traced_graphs.ordering_tokens(strategy, [traced])
        imported = _Imported(traced, tokens, names, shape, replicas)
        return tf.autograph.experimental.do_not_convert(imported)

    return _traced_graphs.rebuilt(record, strategy, "function", function)


class _Imported:
    """Imports the graph once into the traced step that calls it; replica i gets output i."""

    def __init__(self, traced, tokens: dict, names: list, shape: str, replicas: list) -> None:  # noqa: PLR0913
        self.traced, self.tokens, self.names = traced, tokens, names
        self.shape, self.replicas = shape, replicas
        self.made: dict[int, dict] = {}
        self.keys: dict = {}

    def __call__(self):
        import tensorflow as tf

        context = tf.distribute.get_replica_context()
        replica = tf.get_static_value(context.replica_id_in_sync_group)
        if replica is None or not 0 <= int(replica) < len(self.replicas):
            raise ValueError(f"the exported function has no output for replica {replica}")
        here = tf.compat.v1.get_default_graph()
        if id(here) not in self.made:
            base = _traced_graphs.step_keys(self.keys, tf)
            made = self.traced.imported(tf, [], self.tokens, base)
            self.made[id(here)] = dict(zip(self.names, made, strict=True))
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
