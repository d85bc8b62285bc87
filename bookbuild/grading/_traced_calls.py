"""A replica's part of a traced step, as the student's process writes it for the executor.

An answer that the check calls inside ``strategy.run`` (a loss, a clipping function, an
accumulation step) is traced in a step made as the check's, with the replica's inputs marked
by identities; :func:`alone_graph` cuts that replica's part out, the marks made placeholders,
and :func:`traced_or_failed` turns a trace the answer stopped into the records the check
would see: the replica that raised, with the check's sentence, and stubs before it.

Example:
    >>> failed_calls({0: {"stub": False}, 1: {"stub": True}}, "why", {"bound": 1.0})
    [{'bound': 1.0, 'where': 0, 'stub': True}, {'bound': 1.0, 'where': 1, 'error': 'why'}]
"""

from __future__ import annotations

from bookbuild.grading import _states, _traced_graphs, _wire


def traced_or_failed(step, strategy, args, made: dict, entry: dict) -> tuple:
    """``(graph, captures, None)`` of ``step`` traced on ``args``, or ``(None, None, calls)``.

    ``made``: what each replica's call recorded, ``{replica: {"stub": True, ...}}`` while it
    runs; an error stops the trace as it stops the check's, and ``calls`` holds
    :func:`failed_calls`. ``entry``: what every record of this trace holds (its key).
    """
    from mirrorkit.checks._learner_runs import LearnerError, run_learner

    try:
        graph, captures = run_learner(traced_step, step, strategy, *args)
    except LearnerError as error:  # the check's sentence for it, from the same trace
        return None, None, failed_calls(made, str(error)[:2000], entry)
    return graph, captures, None


def failed_calls(made: dict, why: str, entry: dict) -> list[dict]:
    """The records of a trace stopped by ``why``: the replica whose call was under way, and
    the replicas before it as stubs (the check never reads what they returned)."""
    failed = max((i for i, call in made.items() if call["stub"]), default=0)
    calls = [{**entry, "where": i, "stub": True} for i in sorted(made) if i != failed]
    return [*calls, {**entry, "where": failed, "error": why}]


def traced_step(step, strategy, *args) -> tuple:
    """``(GraphDef, captures)`` of ``step`` traced on ``args``: what it captured, by value."""
    import tensorflow as tf

    traced = step.get_concrete_function(*args)
    captures = {
        inner.name: _states.describe(outer, strategy, 1)
        for outer, inner in traced.graph.captures
        if outer.dtype != tf.resource
    }
    return traced.graph.as_graph_def(), captures


def alone_graph(graph, inputs: list[str], outputs: list[str]) -> str:
    """One replica's part of a step's graph, packed: ``outputs``' ancestors, ``inputs``
    (the identities that mark what the replica was given) as placeholders.

    Raises:
        _wire.ExportError: If it is larger than ``_wire.MAX_GRAPH_BYTES``.
    """
    marks = {name.split(":")[0] for name in inputs}
    alone = _traced_graphs.cut(graph, outputs, stop=marks)
    traced = {node.name: node for node in graph.node if node.name in marks}
    for node in alone.node:
        if node.name in traced and node.op != "Placeholder":  # a mark: the input it stands for
            node.op = "Placeholder"
            del node.input[:]
            node.attr.clear()
            node.attr["dtype"].CopyFrom(traced[node.name].attr["T"])
            shape = traced[node.name].attr.get("_output_shapes")
            if shape is not None and shape.list.shape:
                node.attr["shape"].shape.CopyFrom(shape.list.shape[0])
    made = alone.SerializeToString()
    if len(made) > _wire.MAX_GRAPH_BYTES:
        raise _wire.ExportError(f"its graph takes {len(made)} bytes, over the limit")
    return _wire.pack(made)
