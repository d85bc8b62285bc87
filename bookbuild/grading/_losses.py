"""Per-replica losses that cross as traced graphs: the student's process traces, the executor runs.

Where an exercise's answer is ``compute_loss(model, x, y)`` (chapters 3 and 4), the
student's process (:func:`describe`) makes every call the check will make of it, on the
same data split the same ways, and writes what each gave: an error's text, a returned value
that is not a loss (its type's name, or its shape), or for a loss the graph of one
replica's work in the step (the loss and its gradient, with the model's weights and the
replica's share of the batch as the graph's inputs). The model's weights enter through
``keras.StatelessScope``, so the graph reads no variable. The executor (:func:`rebuild`) hands
the check a function that, for a call the student's process traced, imports that graph
into the check's own step with the check's model's weights and data as its inputs (every
operation, the function library's included, from :data:`ALLOWED_OPS`; all-reduces with
keys, order and a time limit of the executor's), and gives the loss the gradient that crossed
with it.

The executor's side is :mod:`._loss_calls`.

Example:
    >>> _number(32.0), _number(float("inf")), _number(2**2000)
    (32, None, None)
"""

from __future__ import annotations

import inspect

from bookbuild.grading import _loss_calls, _states, _traced_calls, _traced_graphs, _wire

MAX_CALLS = 64  # calls one export may record: a check makes a few per batch
_MARK = "mirrorbook_input"  # the identities that mark a traced replica's inputs


def describe(compute_loss, strategy, model_fn, batch) -> dict:
    """What every call the check makes of ``compute_loss`` gave (the student's process).

    Args:
        compute_loss: The answer.
        strategy: The chapter's strategy.
        model_fn: The function the check builds its model with.
        batch: The check's batch, or list of batches.

    Raises:
        _wire.ExportError: If a graph is larger than ``_wire.MAX_GRAPH_BYTES``.
    """
    import tensorflow as tf

    from mirrorkit.checks._learner_runs import literal_numbers
    from mirrorkit.checks._splits import distributed_batch, uneven_split
    from mirrorkit.checks._steps import build_model

    if compute_loss is Ellipsis or not callable(compute_loss):
        return {"kind": "state", "value": _states.describe(compute_loss, strategy)}
    record = {"kind": "loss", **_face(compute_loss)}
    record["numbers"] = [n for n in map(_number, literal_numbers(compute_loss)) if n is not None]
    calls: dict = {}
    batches = batch if isinstance(batch, list) else [batch]
    n = strategy.num_replicas_in_sync
    # As check_loss_step: one uneven split, of the first batch, when every batch is even.
    even = all(len(tf.nest.flatten(x)[0]) % n == 0 for x, _ in batches)
    for index, (x, y) in enumerate(batches):
        with strategy.scope():
            model = build_model(tf, model_fn, x)
        record.setdefault("weights", _weights(model))
        split = None
        for _ in range(2):  # the strategy's own split, then the check's uneven one
            dist_x, dist_y = distributed_batch(tf, strategy, (x, y), split)
            local = strategy.experimental_local_results
            _eager(calls, compute_loss, model, local(dist_x)[0], local(dist_y)[0])
            _traced(calls, compute_loss, strategy, model, dist_x, dist_y)
            sizes = tuple(int(tf.shape(tf.nest.flatten(p)[0])[0]) for p in local(dist_x))
            if index or not even or len(set(sizes)) != 1 or n < 2 or split is not None:
                break
            split = uneven_split(sizes)
    record["calls"] = list(calls.values())[:MAX_CALLS]
    return record


def _face(compute_loss) -> dict:
    """What the check reads of the function itself: its name and its signature."""
    name = getattr(compute_loss, "__name__", None)
    face: dict = {"name": name if isinstance(name, str) and name.isidentifier() else None}
    try:
        signature = inspect.signature(compute_loss)
    except (TypeError, ValueError):
        return face
    face["signature"] = [
        [p.name, p.kind.name, None if p.default is p.empty else repr(p.default)[:60]]
        for p in list(signature.parameters.values())[:16]
    ]
    return face


def _weights(model) -> list:
    return [[v.path, list(v.shape), v.dtype, bool(v.trainable)] for v in model.variables]


def _outcome(tf, value) -> dict:
    """What a call returned, as the check's ``loss_problem`` reads it."""
    if value is None or isinstance(value, tuple | list | dict):
        return {"returned": type(value).__name__}
    try:
        tensor = tf.convert_to_tensor(value)
    except (TypeError, ValueError):
        return {"returned": _wire.type_name(value)}
    return {"shape": [d for d in tensor.shape] if tensor.shape.rank is not None else None}


def _eager(calls, compute_loss, model, x, y) -> None:
    import tensorflow as tf

    entry = {"where": "eager", "x": _loss_calls.shapes(tf, x), "y": _loss_calls.shapes(tf, y)}
    key = _loss_calls.key_of("eager", entry["x"], entry["y"])
    if key in calls:
        return
    try:
        made = _outcome(tf, compute_loss(model, x, y))
    except Exception as error:  # noqa: BLE001 - the learner's code: its feedback
        made = {"error": f"{type(error).__name__}: {error}"[:2000]}
    calls[key] = {**entry, **made}


def _traced(calls, compute_loss, strategy, model, dist_x, dist_y) -> None:
    """Trace the step's replica work as the check does; one record per replica."""
    import keras
    import tensorflow as tf

    variables = model.variables
    trainable = [i for i, v in enumerate(variables) if v.trainable]
    made: dict[int, dict] = {}

    def replica(x_r, y_r, *weights):
        context = tf.distribute.get_replica_context()
        index = int(tf.get_static_value(context.replica_id_in_sync_group))
        marked = [
            tf.identity(t, name=f"{_MARK}_{index}_{role}{k}")
            for role, part in (("x", x_r), ("y", y_r))
            for k, t in enumerate(tf.nest.flatten(part))
        ]
        count = len(tf.nest.flatten(x_r))
        x_m = tf.nest.pack_sequence_as(x_r, marked[:count])
        y_m = tf.nest.pack_sequence_as(y_r, marked[count:])
        w_m = [tf.identity(w, name=f"{_MARK}_{index}_w{k}") for k, w in enumerate(weights)]
        entry = {"where": index, "x": _loss_calls.shapes(tf, x_r), "y": _loss_calls.shapes(tf, y_r)}
        try:
            mapping = list(zip(variables, w_m, strict=True))
            with keras.StatelessScope(state_mapping=mapping), tf.GradientTape() as tape:
                tape.watch(w_m)
                value = compute_loss(model, x_m, y_m)
        except Exception as error:  # noqa: BLE001 - the learner's code: its feedback
            made[index] = {**entry, "error": f"{type(error).__name__}: {error}"[:2000]}
            return tf.constant(0.0)
        outcome = _outcome(tf, value)
        if outcome.get("shape") != []:
            made[index] = {**entry, **outcome}
            return tf.constant(0.0)
        value = tf.convert_to_tensor(value)
        gradients = tape.gradient(value, [w_m[i] for i in trainable])
        made[index] = {
            **entry,
            **outcome,
            "loss": value.name,
            "gradients": [None if g is None else tf.convert_to_tensor(g).name for g in gradients],
            "inputs": [t.name for t in marked] + [w.name for w in w_m],
        }
        return value

    def step(x_d, y_d, weights):
        return strategy.run(replica, args=(x_d, y_d, *weights))

    weights = [tf.convert_to_tensor(v) for v in variables]
    graph, captures = _traced_calls.traced_step(
        tf.function(step), strategy, dist_x, dist_y, weights
    )
    for index, entry in sorted(made.items()):
        key = _loss_calls.key_of(index, entry["x"], entry["y"])
        if "loss" in entry:
            wanted = [entry["loss"], *(g for g in entry["gradients"] if g)]
            alone = _traced_calls.alone_graph(graph, entry["inputs"], wanted)
            entry = {**entry, "graph": alone, "captures": captures}
        calls.setdefault(key, entry)


def _number(value) -> int | float | None:
    """A number written in the loss as JSON carries it, or None (not finite, too large)."""
    try:
        number = int(value) if float(value).is_integer() else float(value)
    except (OverflowError, ValueError, TypeError):
        return None
    return number if _loss_calls.real(number) else None


def rebuild(record: dict, strategy):
    """The ``compute_loss`` the check is given (the executor).

    Raises:
        _wire.ExportError: If the record is malformed, or a graph uses a refused operation
            or reads a variable.
    """

    def loss(record: dict):
        calls = {_loss_calls.call_key(c): _loss_calls.Call(c) for c in record["calls"][:MAX_CALLS]}
        weights = [_loss_calls.checked_weight(*w) for w in record["weights"]]
        written = record.get("numbers", [])[: _loss_calls.MAX_NUMBERS]
        numbers = tuple(n for n in written if _loss_calls.real(n))
        name, signature = _loss_calls.face_of(record.get("name"), record.get("signature"))
        tokens = _traced_graphs.ordering_tokens(strategy, [c.traced for c in calls.values()])
        return _loss_calls.Loss(calls, weights, numbers, name, signature, tokens)

    return _traced_graphs.rebuilt(record, strategy, "loss", loss)
