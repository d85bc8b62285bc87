"""Gradient-accumulation steps that cross as traced graphs: chapter 8's ``accumulate``.

``check_accumulation`` builds a model and one ``ON_READ`` accumulator per weight in the
strategy's scope and calls the learner's ``accumulate(model, accumulators, x, y)`` on every
replica in a traced step, once per micro-batch. The student's process (:func:`describe`)
builds the same model, accumulators and micro-batches and traces that step: each replica's
call is recorded as the check's sentence for its error, or as the graph of every operation
the call made, whose inputs are the replica's share of the micro-batch (marked) and the
variables it read or wrote, each named by what it is (which of the model's weights, which
accumulator). The executor (:func:`rebuild`) hands the check a function that imports the graph
of the same replica into the check's own step, those variables mapped to the check's own
model's and accumulators' copies on that replica: the assignments then run there, as the
learner's would. A variable that is neither (a global of the chapter's, one made in the
answer) is refused, as are operations outside ``ALLOWED_OPS``.

Example:
    >>> sorted(ALLOWED_OPS - _loss_calls.ALLOWED_OPS)
    ['AssignAddVariableOp', 'AssignSubVariableOp', 'AssignVariableOp', 'ReadVariableOp']
"""

from __future__ import annotations

from bookbuild.grading import _loss_calls, _states, _traced_calls, _traced_graphs, _wire

ALLOWED_OPS = _loss_calls.ALLOWED_OPS | {
    "AssignAddVariableOp", "AssignSubVariableOp", "AssignVariableOp", "ReadVariableOp",
}  # fmt: skip
MAX_CALLS = 64
_MARK = "mirrorbook_micro"  # the identities that mark a replica's share of the micro-batch
WORDS = _traced_graphs.Words("accumulation step", "accumulate", "the model, accumulators and data")
_ROLES = ("model", "accumulator")


def describe(accumulate, apply, strategy, model_fn, data, micro_steps=None, loss="mse") -> dict:
    """The step ``check_accumulation`` traces of ``accumulate``, per replica (student's side).

    Args:
        accumulate: The answer.
        apply: The check's ``apply`` (the chapter's; not traced here).
        strategy: The chapter's strategy.
        model_fn: The function the check builds its model with.
        data: The check's ``(x, y)``.
        micro_steps: The check's ``K``.
        loss: The check's loss (not read: the learner's step computes its own).

    Raises:
        _wire.ExportError: If a graph is larger than ``_wire.MAX_GRAPH_BYTES``.
    """
    import tensorflow as tf

    from mirrorkit.checks._learner_data import examples, learner_structures
    from mirrorkit.checks._learner_runs import LEARNING_RATE, reference_and_copy
    from mirrorkit.checks.accumulation import zero_accumulators

    del apply, loss
    if accumulate is Ellipsis or not callable(accumulate):
        return {"kind": "state", "value": _states.describe(accumulate, strategy)}
    empty = {"kind": "accumulate", "variables": [], "weights": 0, "calls": []}  # refused first
    if type(micro_steps) is not int or micro_steps < 2:
        return empty
    try:
        x, y = learner_structures(data, "data")
        micro = examples(x) // (2 * micro_steps)
        if not micro or examples(x) % (2 * micro_steps):
            return empty
        _, model, _ = reference_and_copy(tf, strategy, model_fn, x, LEARNING_RATE, "data")
    except Exception:  # noqa: BLE001 - the check refuses these arguments before any call
        return empty
    accumulators = zero_accumulators(tf, strategy, model)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(micro)
    batch = next(iter(strategy.experimental_distribute_dataset(dataset)))
    return {
        "kind": "accumulate",
        "variables": [_variable(v) for v in [*model.variables, *accumulators]],
        "weights": len(model.variables),
        "calls": _traced(accumulate, strategy, model, accumulators, batch)[:MAX_CALLS],
    }


def _variable(v) -> list:
    return [list(v.shape), v.dtype if isinstance(v.dtype, str) else v.dtype.name]


def _copies(variable) -> tuple:
    """A distributed variable's per-replica copies (a Keras variable's through its value)."""
    inner = getattr(variable, "value", variable)
    return tuple(getattr(inner, "values", None) or getattr(variable, "values", ()))


def _traced(accumulate, strategy, model, accumulators, batch) -> list[dict]:
    """Each replica's call of ``accumulate`` in a step traced as the check's."""
    import tensorflow as tf

    made: dict[int, dict] = {}
    roles = {
        id(copy.handle): [role, k]
        for role, group in zip(_ROLES, (model.variables, accumulators), strict=True)
        for k, variable in enumerate(group)
        for copy in _copies(variable)
    }

    def replica(x_r, y_r):
        context = tf.distribute.get_replica_context()
        index = int(tf.get_static_value(context.replica_id_in_sync_group))
        leaves = tf.nest.flatten((x_r, y_r))
        marked = [tf.identity(t, name=f"{_MARK}_{index}_{k}") for k, t in enumerate(leaves)]
        x_m, y_m = tf.nest.pack_sequence_as((x_r, y_r), marked)
        graph = tf.compat.v1.get_default_graph()
        first = len(graph.get_operations())
        shapes = {"x": _loss_calls.shapes(tf, x_r), "y": _loss_calls.shapes(tf, y_r)}
        entry = made[index] = {"where": index, **shapes, "stub": True}
        accumulate(model, accumulators, x_m, y_m)
        here = marked[0].device  # the replicas' ops interleave where they all-reduce
        made_here = [op for op in graph.get_operations()[first:] if op.device == here]
        ops = [op.name for op in made_here if op.type != "Placeholder"]  # an all-reduce's key
        made[index] = {**entry, "stub": False, "ops": ops, "inputs": [t.name for t in marked]}

    def step(batch):
        return strategy.run(replica, args=batch)

    traced = tf.function(step)
    graph, captures, failed = _traced_calls.traced_or_failed(traced, strategy, [batch], made, {})
    if failed is not None:
        return failed
    variables = {  # each variable the step captured, by what it is: a weight, an accumulator
        inner.name: roles[id(outer)]
        for outer, inner in traced.get_concrete_function(batch).graph.captures
        if outer.dtype == tf.resource and id(outer) in roles
    }
    calls = []
    for _, entry in sorted(made.items()):
        if entry["ops"]:
            entry["graph"] = _traced_calls.alone_graph(graph, entry["inputs"], entry["ops"])
            entry |= {"variables": variables, "captures": captures}
        calls.append(entry)
    return calls


class _Call:
    """One replica's recorded call, checked: an error, or its graph and the variables it uses."""

    def __init__(self, record: dict, count: dict) -> None:
        self.where = record["where"]
        if type(self.where) is not int:
            raise ValueError("not a call")
        self.x = _loss_calls.shape_list(record.get("x", []))
        self.y = _loss_calls.shape_list(record.get("y", []))
        self.error = record.get("error")
        self.error = None if self.error is None else str(self.error)[:2000]
        self.stub, self.traced = record.get("stub") is True, None
        if self.error is not None or self.stub or "graph" not in record:
            return
        self.variables = []
        for name, (role, k) in dict(record["variables"]).items():
            if role not in _ROLES or type(k) is not int or not 0 <= k < count[role]:
                raise ValueError("not a variable")
            self.variables.append((str(name), role, k))
        inputs = [*map(str, record["inputs"]), *(name for name, _, _ in self.variables)]
        ops = [str(op) for op in record["ops"][:100_000]]
        self.traced = _traced_graphs.Traced({**record, "inputs": inputs}, ops, WORDS, ALLOWED_OPS)


class Accumulate:
    """Stands for the learner's ``accumulate``: each replica's call as it was traced."""

    def __init__(self, calls: dict, variables: list, tokens: dict) -> None:
        self.calls, self.variables, self.tokens, self.made = calls, variables, tokens, {}
        self.__name__ = self.__qualname__ = "accumulate"
        self.autograph_info__ = frozenset()  # AutoGraph calls it as it is

    def __call__(self, model, accumulators, x, y):
        import tensorflow as tf

        from mirrorkit.checks._learner_runs import LearnerError

        groups = {"model": list(model.variables), "accumulator": list(accumulators)}
        found = [_variable(v) for v in [*groups["model"], *groups["accumulator"]]]
        if found != self.variables:
            raise _wire.ExportError(
                "the model or accumulators your accumulate was traced with are not the ones "
                "the check builds: run the chapter's cells as they are, with its model_fn"
            )
        context = tf.distribute.get_replica_context()
        where = None if context is None else tf.get_static_value(context.replica_id_in_sync_group)
        call = None if where is None else self.calls.get(int(where))
        shapes = (_loss_calls.shapes(tf, x), _loss_calls.shapes(tf, y))
        if call is None or (call.traced is not None and (call.x, call.y) != shapes):
            raise _wire.ExportError(
                "the grader has no record of your accumulate called on this share of the "
                "micro-batch: grade the submission again"
            )
        if call.error is not None:  # the check's own sentence for it
            raise LearnerError(call.error)
        if call.traced is None:  # a stub (a later replica raised), or a call that made nothing
            return None
        here = tf.compat.v1.get_default_graph()
        handles = [
            here.capture(_copies(groups[role][k])[int(where)].handle)
            for _, role, k in call.variables
        ]
        values = [*tf.nest.flatten((x, y)), *handles]
        call.traced.imported(tf, values, self.tokens, _traced_graphs.step_keys(self.made, tf))
        return None


def rebuild(record: dict, strategy):
    """The ``accumulate`` the check is given (the executor).

    Raises:
        _wire.ExportError: If the record is malformed, or a graph uses a refused operation
            or a variable that is neither the model's nor an accumulator.
    """

    def accumulate(record: dict):
        variables = [
            [_loss_calls.checked_shape(shape), str(dtype)[:20]]
            for shape, dtype in record["variables"][:4096]
        ]
        weights = record["weights"]
        if type(weights) is not int or not 0 <= weights <= len(variables):
            raise ValueError("not a count")
        count = {"model": weights, "accumulator": len(variables) - weights}
        calls = {c.where: c for c in (_Call(r, count) for r in record["calls"][:MAX_CALLS])}
        tokens = _traced_graphs.ordering_tokens(strategy, [c.traced for c in calls.values()])
        return Accumulate(calls, variables, tokens)

    return _traced_graphs.rebuilt(record, strategy, "accumulation step", accumulate)
