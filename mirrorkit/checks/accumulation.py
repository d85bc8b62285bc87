"""Check a learner's gradient accumulation: K micro-batches, then one update, under a strategy.

The check is an ask and a verdict: :func:`ask_accumulation` runs the learner's two
functions for two accumulated updates and records them;
:func:`mirrorkit.checks._accumulation_verdicts.judge_accumulation` computes one device's
big-batch gradient from that record and names the mistake. The grader asks in an executor
and judges in its own process; a check in the chapter does both here.

Example:
    >>> import mirrorkit as mk
    >>> mk.check_accumulation(..., ..., mk.make_strategy(), None, None, micro_steps=2)
    NOT YET: not attempted yet: replace the ... with your answer and run the cell.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from mirrorkit._validate import refuse, require_strategy, require_whole
from mirrorkit.checks._accumulation_verdicts import judge_accumulation
from mirrorkit.checks._learner_data import examples, learner_structures
from mirrorkit.checks._learner_runs import (
    LEARNING_RATE,
    LearnerError,
    copy_in_scope,
    flat_weights,
    run_learner,
)
from mirrorkit.checks._model_configs import config_of, sent_loss
from mirrorkit.checks._steps import resolve_loss
from mirrorkit.checks.result import (
    NOT_ATTEMPTED,
    CheckResult,
    as_record,
    cannot_check_with_one_replica,
)


def check_accumulation(
    accumulate: Callable,
    apply: Callable,
    strategy,
    model_fn: Callable,
    data,
    *,
    micro_steps: int,
    loss="mse",
) -> CheckResult:
    """Check a custom loop's gradient accumulation against the big-batch step.

    The check builds ``model_fn()`` in ``strategy.scope()`` with plain SGD and one
    accumulator per trainable weight: a ``tf.Variable`` of zeros with
    ``synchronization=ON_READ`` and ``aggregation=SUM``, so that each replica adds to its
    own copy. It splits ``data`` into ``2 * micro_steps`` global micro-batches and, inside
    ``strategy.run`` in a ``tf.function``, calls ``accumulate(model, accumulators, x, y)``
    on each; after every ``micro_steps`` of them it calls ``apply(model, optimizer,
    accumulators)``. Each of the two updates must equal one SGD step on one device on the
    mean loss of the ``micro_steps`` micro-batches together.

    Args:
        accumulate: The learner's ``accumulate(model, accumulators, x, y)`` for one
            micro-batch on one replica (``...``: not attempted).
        apply: ``apply(model, optimizer, accumulators)``: applies the accumulated
            gradients and resets the accumulators, on one replica.
        strategy: The strategy the loop runs under, with 2 or more replicas.
        model_fn: A function returning a new, built Keras model (no ``BatchNormalization``,
            no ``Dropout``).
        data: ``(x, y)``: NumPy arrays (or dicts or tuples of them, as the model takes and
            gives them) holding two accumulated steps, ``2 * micro_steps`` micro-batches of
            equal size.
        micro_steps: ``K``, the micro-batches per update, 2 or more.
        loss: The per-example loss meant to be minimised, e.g. ``"mse"``.

    Returns:
        A :class:`~mirrorkit.CheckResult`; a mistake in ``accumulate`` or ``apply`` (not a
        function, it fails inside ``strategy.run``, a wrong update) is a failed result whose
        message names the likely mistake (the loss scaled by the micro-batch, divided by
        ``K`` twice, the replicas counted twice, only the last micro-batch kept,
        accumulators never reset).

    Raises:
        TypeError: If ``strategy`` is not a ``tf.distribute.Strategy``, ``micro_steps`` is
            not a whole number, ``model_fn`` is a model or not a function, ``data`` is not
            a pair ``(x, y)`` or ``loss`` is not a loss.
        ValueError: If ``micro_steps`` is below 2, ``data`` does not split into
            ``2 * micro_steps`` equal micro-batches (or x and y differ in length),
            ``model_fn`` builds a model with ``BatchNormalization`` or ``Dropout``, or
            ``loss`` is not a Keras loss name.

    Example:
        >>> import mirrorkit as mk
        >>> from mirrorkit.checks.accumulation import check_accumulation
        >>> check_accumulation(..., None, mk.make_strategy(), None, None, micro_steps=2)
        NOT YET: not attempted yet: replace the ... with your answer and run the cell.
    """
    record = ask_accumulation(
        accumulate, apply, strategy, model_fn, data, micro_steps=micro_steps, loss=loss, send=False
    )
    return judge_accumulation(record, model_fn=model_fn, loss=loss)


def ask_accumulation(  # noqa: PLR0913 - the check's own arguments
    accumulate, apply, strategy, model_fn, data, *, micro_steps, loss="mse", send=True
) -> dict:
    """What :func:`check_accumulation` runs of ``accumulate`` and ``apply``, as a record.

    The weights the two updates started from and what each applied, or the sentence of
    the learner's error. With ``send``, the record carries the model's and the loss's
    configuration, for a verdict in another process. Raises as :func:`check_accumulation`
    does for arguments that are not the check's.

    Example:
        >>> import mirrorkit as mk
        >>> ask_accumulation(..., None, mk.make_strategy(), None, None, micro_steps=2)["verdict"]
        ... # doctest: +ELLIPSIS
        {'passed': False, 'message': 'not attempted yet: ...'}
    """
    require_strategy(
        strategy,
        "check_accumulation(accumulate, apply, strategy, model_fn, data, micro_steps=K)",
    )
    if accumulate is Ellipsis or apply is Ellipsis:
        return as_record(NOT_ATTEMPTED, check="accumulation")
    for name, fn, signature in (
        ("accumulate", accumulate, "accumulate(model, accumulators, x, y)"),
        ("apply", apply, "apply(model, optimizer, accumulators)"),
    ):
        if not callable(fn):
            return as_record(
                CheckResult(
                    False, f"{name} must be a function {signature}, got {type(fn).__name__}."
                ),
                check="accumulation",
            )
    micro_steps = require_whole("micro_steps", micro_steps, write="micro_steps=4", minimum=2)
    if (refusal := cannot_check_with_one_replica(strategy, "gradient accumulation")) is not None:
        return as_record(refusal, check="accumulation")
    record = {
        "check": "accumulation",
        "replicas": strategy.num_replicas_in_sync,
        "micro_steps": micro_steps,
        "loss": sent_loss(loss) if send else None,
    }
    try:
        ran = _accumulated_run(accumulate, apply, strategy, model_fn, data, micro_steps, loss)
    except LearnerError as error:
        return {**record, "sentence": str(error)}
    model = ran.pop("model")
    return {**record, **ran, "model": config_of(model) if send else None}


def _accumulated_run(accumulate, apply, strategy, model_fn, data, micro_steps, loss):
    """The two updates: the weights they started from, what each applied, the model."""
    import tensorflow as tf

    x, y = learner_structures(data, "data")
    size = examples(x)
    if size % (2 * micro_steps):
        even = size - size % (2 * micro_steps) or 2 * micro_steps
        refuse(
            "data",
            must=f"a multiple of 2 * micro_steps examples ({2 * micro_steps}), to split into "
            f"2 x {micro_steps} micro-batches of equal size",
            got=f"{size} examples",
            write=f"data=(x[:{even}], y[:{even}])"
            if isinstance(x, np.ndarray)
            else f"data=(x, y) with every array of x and y cut to its first {even} examples",
            error=ValueError,
        )
    micro = size // (2 * micro_steps)
    resolve_loss(loss)  # a loss the verdict cannot read is refused before anything runs
    model, optimizer = copy_in_scope(tf, strategy, model_fn, x, LEARNING_RATE, "data")
    accumulators = zero_accumulators(tf, strategy, model)

    def add(batch):
        return strategy.run(lambda x_r, y_r: accumulate(model, accumulators, x_r, y_r), args=batch)

    def update():
        return strategy.run(lambda: apply(model, optimizer, accumulators))

    add_step = tf.function(functools.partial(add))
    update_step = tf.function(functools.partial(update))
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(micro)
    batches = iter(strategy.experimental_distribute_dataset(dataset))
    initial = [np.asarray(w) for w in model.get_weights()]
    applied, after = [], []
    for _ in range(2):
        before = flat_weights(model)
        for _ in range(micro_steps):
            run_learner(add_step, next(batches))
        run_learner(update_step)
        applied.append((before - flat_weights(model)) / LEARNING_RATE)
        after.append([np.asarray(v) for v in model.trainable_variables])
    return {
        "x": x,
        "y": y,
        "micro": micro,
        "weights": initial,
        "after_first": after[0],
        "applied": applied,
        "model": model,
    }


def zero_accumulators(tf, strategy, model) -> list:
    """One zero ``ON_READ``, ``SUM`` variable per trainable weight, in ``strategy``'s scope.

    Example:
        >>> import keras, tensorflow as tf
        >>> import mirrorkit as mk
        >>> strategy = mk.make_strategy()
        >>> with strategy.scope():
        ...     model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        >>> [tuple(a.shape) for a in zero_accumulators(tf, strategy, model)]
        [(2, 1), (1,)]
    """
    with strategy.scope():
        return [
            tf.Variable(
                tf.zeros(v.shape, v.dtype),
                trainable=False,
                synchronization=tf.VariableSynchronization.ON_READ,
                aggregation=tf.VariableAggregation.SUM,
            )
            for v in model.trainable_variables
        ]
