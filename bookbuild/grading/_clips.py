"""Gradient-clipping functions that cross as traced graphs: chapter 8's ``clip(gradients, c)``.

``check_clipping`` calls the learner's ``clip(gradients, clip_norm)`` on every replica
inside a traced step, with each bound it tries: the one the check is given, twice the
gradient's norm (nothing may change) and, for one mistake, a bound between the norms of the
mean and of the sum. The student's process (:func:`describe`) traces each replica's call at
each of those bounds with the replica's gradients as placeholders and writes, per call, an
error's text, a returned value that is not one gradient per weight (its type's name and
length), or that replica's graph cut to what it returns. The executor (:func:`rebuild`) hands
the check a function that imports the graph of the same bound and replica into the check's
own step, fed the check's gradients (every operation from
``_loss_calls.ALLOWED_OPS``; all-reduces keyed, ordered and timed by the executor).

Example:
    >>> _bounds(1.0, 8.0, 4)
    [1.0, 16.0, 5.0]
"""

from __future__ import annotations

import math

from bookbuild.grading import _loss_calls, _states, _traced_calls, _traced_graphs, _wire

MAX_CALLS = 64  # three bounds on at most 16 replicas, with room
_MARK = "mirrorbook_gradient"  # the identities that mark a replica's gradients
WORDS = _traced_graphs.Words("clip function", "clip_after_sum", "the gradients it is given")


def _bounds(given: float, norm: float, replicas: int) -> list[float]:
    """The clip norms the check may call with: given, loose (2x the norm), between."""
    return [given, 2.0 * norm, norm * (1.0 + 1.0 / replicas) / 2.0]


def describe(clip, strategy, model_fn, batch, clip_norm=None, loss="mse") -> dict:
    """Every call ``check_clipping`` may make of ``clip``, traced (the student's process).

    Args:
        clip: The answer.
        strategy: The chapter's strategy.
        model_fn: The function the check builds its model with.
        batch: The check's global batch.
        clip_norm: The bound the check is given.
        loss: The check's loss.

    Raises:
        _wire.ExportError: If a graph is larger than ``_wire.MAX_GRAPH_BYTES``.
    """
    import numpy as np
    import tensorflow as tf

    from mirrorkit.checks._learner_data import one_batch
    from mirrorkit.checks._learner_runs import mean_gradient, reference_and_copy
    from mirrorkit.checks.equivalence import resolve_loss

    if clip is Ellipsis or not callable(clip):
        return {"kind": "state", "value": _states.describe(clip, strategy)}
    if not _loss_calls.real(clip_norm) or clip_norm <= 0:
        return {"kind": "clip", "weights": [], "calls": []}  # the check refuses it first
    try:
        data = one_batch(strategy, batch, "batch")
        reference, model, _ = reference_and_copy(tf, strategy, model_fn, data.x, 1.0)
        gradient = mean_gradient(tf, reference, resolve_loss(loss), data.x, data.y)
    except Exception:  # noqa: BLE001 - the check refuses these arguments before any call
        return {"kind": "clip", "weights": [], "calls": []}
    norm = float(np.linalg.norm(gradient))
    variables = model.trainable_variables
    calls = []
    for bound in _bounds(float(clip_norm), norm, strategy.num_replicas_in_sync):
        calls += _traced(clip, strategy, variables, bound)
    weights = [[list(v.shape), v.dtype] for v in variables]
    return {"kind": "clip", "weights": weights, "calls": calls[:MAX_CALLS]}


def _traced(clip, strategy, variables, bound: float) -> list[dict]:
    """Each replica's call of ``clip`` at ``bound`` in a step traced as the check's.

    An error stops the trace, as it stops the check's: the replica that raised records the
    sentence the check would give, the replicas before it a ``stub`` (no graph is made).
    """
    import tensorflow as tf

    made: dict[int, dict] = {}

    def replica(*gradients):
        context = tf.distribute.get_replica_context()
        index = int(tf.get_static_value(context.replica_id_in_sync_group))
        marked = [tf.identity(g, name=f"{_MARK}_{index}_{k}") for k, g in enumerate(gradients)]
        entry = made[index] = {"where": index, "bound": bound, "stub": True}
        returned = clip(list(marked), bound)
        if not isinstance(returned, list | tuple) or len(returned) != len(marked):
            length = len(returned) if isinstance(returned, list | tuple) else None
            made[index] = {**entry, "stub": False, "returned": _wire.type_name(returned)}
            made[index]["length"] = length
            return tf.constant(0.0)
        items, outputs = [], []
        for item in returned:
            try:
                tensor = None if item is None else tf.convert_to_tensor(item)
            except (TypeError, ValueError):
                items.append(_wire.type_name(item))
                continue
            items.append(None if tensor is None else tensor.name)
            outputs += [] if tensor is None else [tensor]
        made[index] = {**entry, "stub": False, "items": items, "inputs": [t.name for t in marked]}
        return outputs or tf.constant(0.0)

    def step(*gradients):
        return strategy.run(replica, args=gradients)

    specs = [tf.TensorSpec(v.shape, v.dtype) for v in variables]
    graph, captures, failed = _traced_calls.traced_or_failed(
        tf.function(step), strategy, specs, made, {"bound": bound}
    )
    if failed is not None:
        return failed
    calls = []
    for _, entry in sorted(made.items()):
        wanted = [name for name in entry.get("items", []) if _is_tensor(name)]
        if wanted:
            graph_bytes = _traced_calls.alone_graph(graph, entry["inputs"], wanted)
            entry = {**entry, "graph": graph_bytes, "captures": captures}
        calls.append(entry)
    return calls


def _is_tensor(name) -> bool:
    return isinstance(name, str) and ":" in name


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6)


class _Call:
    """One recorded call, checked: an error, a wrong return, or the items it returned."""

    def __init__(self, record: dict) -> None:
        self.where, self.bound = record["where"], record["bound"]
        if type(self.where) is not int or not _loss_calls.real(self.bound):
            raise ValueError("not a call")
        self.error = record.get("error")
        self.returned = record.get("returned")
        self.stub, self.traced = record.get("stub") is True, None
        if self.stub:
            self.error = None
            return
        if self.error is not None:
            self.error = str(self.error)[:2000]
            return
        if self.returned is not None:
            self.returned = _wire.type_name(_wire.stand_in(self.returned))
            length = record.get("length")
            self.length = length if type(length) is int and 0 <= length < 4096 else None
            return
        self.items = [None if i is None else str(i)[:200] for i in record["items"][:4096]]
        wanted = [i for i in self.items if _is_tensor(i)]
        if wanted:
            self.traced = _traced_graphs.Traced(record, wanted, WORDS, _loss_calls.ALLOWED_OPS)


class Clip:
    """Stands for the learner's ``clip(gradients, clip_norm)``: each call as it was traced."""

    def __init__(self, calls: list[_Call], weights: list, tokens: dict) -> None:
        self.calls, self.weights, self.tokens, self.made = calls, weights, tokens, {}
        self.__name__ = self.__qualname__ = "clip"
        self.autograph_info__ = frozenset()  # AutoGraph calls it as it is

    def __call__(self, gradients, clip_norm):
        import tensorflow as tf

        from mirrorkit.checks._learner_runs import LearnerError

        context = tf.distribute.get_replica_context()
        where = None
        if not tf.executing_eagerly() and context is not None:
            where = tf.get_static_value(context.replica_id_in_sync_group)
        found = [None if g is None else (tuple(g.shape), g.dtype.name) for g in gradients]
        if found != self.weights:
            raise _wire.ExportError(
                "the model your clip function was traced with is not the one the check "
                "builds: run the chapter's cells as they are, with its model_fn"
            )
        call = next(
            (
                c
                for c in self.calls
                if where is not None and c.where == int(where) and _close(c.bound, clip_norm)
            ),
            None,
        )
        if call is None:
            raise _wire.ExportError(
                f"the grader has no record of your clip function called with clip_norm="
                f"{clip_norm!r} on this replica: grade the submission again"
            )
        if call.error is not None:  # the check's own sentence for it
            raise LearnerError(call.error)
        if call.stub:  # a later replica raised: what this one returns is never read
            return list(gradients)
        if call.returned is not None:
            return _loss_calls.returned(call.returned, call.length)
        made = iter([])
        if call.traced is not None:
            base = _traced_graphs.step_keys(self.made, tf)
            made = iter(call.traced.imported(tf, list(gradients), self.tokens, base))
        return [
            None if item is None else next(made) if _is_tensor(item) else _wire.stand_in(item)
            for item in call.items
        ]


def rebuild(record: dict, strategy):
    """The ``clip`` the check is given (the executor).

    Raises:
        _wire.ExportError: If the record is malformed, or a graph uses a refused operation
            or reads a variable.
    """

    def clip(record: dict):
        calls = [_Call(c) for c in record["calls"][:MAX_CALLS]]
        weights = [
            (tuple(_loss_calls.checked_shape(shape)), str(dtype)[:20])
            for shape, dtype in record["weights"][:4096]
        ]
        tokens = _traced_graphs.ordering_tokens(strategy, [c.traced for c in calls])
        return Clip(calls, weights, tokens)

    return _traced_graphs.rebuilt(record, strategy, "clip function", clip)
