"""Check a learner's gradient accumulation: K micro-batches, then one update, under a strategy.

Example:
    >>> import mirrorkit as mk
    >>> mk.check_accumulation(..., ..., mk.make_strategy(), None, None, micro_steps=2)
    NOT YET: not attempted yet: replace the ... with your answer and run the cell.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mirrorkit._validate import refuse, require_strategy, require_whole
from mirrorkit.checks._learner_data import examples, learner_structures
from mirrorkit.checks._learner_runs import (
    LEARNING_RATE,
    LearnerError,
    flat_weights,
    mean_gradient,
    reference_and_copy,
    run_learner,
)
from mirrorkit.checks._splits import Precision
from mirrorkit.checks._steps import gradient_ratio
from mirrorkit.checks.clipping import agree, precision_words
from mirrorkit.checks.result import NOT_ATTEMPTED, CheckResult, cannot_check_with_one_replica
from mirrorkit.report.values import number


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
    require_strategy(
        strategy,
        "check_accumulation(accumulate, apply, strategy, model_fn, data, micro_steps=K)",
    )
    if accumulate is Ellipsis or apply is Ellipsis:
        return NOT_ATTEMPTED
    for name, fn, signature in (
        ("accumulate", accumulate, "accumulate(model, accumulators, x, y)"),
        ("apply", apply, "apply(model, optimizer, accumulators)"),
    ):
        if not callable(fn):
            return CheckResult(
                False, f"{name} must be a function {signature}, got {type(fn).__name__}."
            )
    micro_steps = require_whole("micro_steps", micro_steps, write="micro_steps=4", minimum=2)
    if (refusal := cannot_check_with_one_replica(strategy, "gradient accumulation")) is not None:
        return refusal
    try:
        run = _accumulated_run(accumulate, apply, strategy, model_fn, data, micro_steps, loss)
    except LearnerError as error:
        return CheckResult(False, str(error))
    return _accumulation_verdict(run, micro_steps, strategy.num_replicas_in_sync)


@dataclass(frozen=True)
class _Accumulated:
    """Two accumulated updates, distributed and on one device, as flat float64 gradients."""

    applied: tuple[np.ndarray, np.ndarray]  # what SGD applied at each update
    reference: tuple[np.ndarray, np.ndarray]  # the big-batch gradient at the same weights
    last_micro: tuple[np.ndarray, np.ndarray]  # the last micro-batch's mean-loss gradient
    per_replica: int  # examples of one micro-batch on one replica
    rtol: float  # of the gradient's norm: the precision the model computes at


def _accumulated_run(accumulate, apply, strategy, model_fn, data, micro_steps, loss):
    import tensorflow as tf

    from mirrorkit.checks.equivalence import resolve_loss

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
    big = micro * micro_steps
    loss_fn = resolve_loss(loss)
    reference, model, optimizer = reference_and_copy(
        tf, strategy, model_fn, x, LEARNING_RATE, "data"
    )
    accumulators = zero_accumulators(tf, strategy, model)

    def add(batch):
        return strategy.run(lambda x_r, y_r: accumulate(model, accumulators, x_r, y_r), args=batch)

    def update():
        return strategy.run(lambda: apply(model, optimizer, accumulators))

    add_step = tf.function(functools.partial(add))
    update_step = tf.function(functools.partial(update))
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(micro)
    batches = iter(strategy.experimental_distribute_dataset(dataset))
    reference_sgd_rate = LEARNING_RATE
    applied, expected, last = [], [], []
    for step in range(2):
        start = step * big
        part = _cut(tf, (x, y), slice(start, start + big))
        expected.append(mean_gradient(tf, reference, loss_fn, *part))
        tail = _cut(tf, (x, y), slice(start + big - micro, start + big))
        last.append(mean_gradient(tf, reference, loss_fn, *tail))
        before = flat_weights(model)
        for _ in range(micro_steps):
            run_learner(add_step, next(batches))
        run_learner(update_step)
        applied.append((before - flat_weights(model)) / reference_sgd_rate)
        # The reference takes the right step, so that both start the next one alike.
        reference.set_weights([np.asarray(v) for v in model.trainable_variables])
    per_replica = micro // strategy.num_replicas_in_sync
    rtol = Precision.of(reference, None, None).rtol
    return _Accumulated(tuple(applied), tuple(expected), tuple(last), per_replica, rtol)


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


def _cut(tf, structure, part: slice):
    """The examples ``part`` of every array of ``structure``."""
    return tf.nest.map_structure(lambda a: a[part], structure)


def _accumulation_mistakes(k: int, n: int) -> list[tuple[float, str]]:
    """Factors a wrong update is off by (``k`` micro-batches, ``n`` replicas), with their cause."""
    return [
        (
            0.0,
            "the update applied nothing: the accumulators were zero when apply_gradients read "
            "them. Add every micro-batch's gradients (assign_add), and reset them only after "
            "applying.",
        ),
        (
            float(k),
            f"the update is {k}x the big-batch gradient: each micro-batch's loss was divided by "
            f"the micro-batch's global batch, not by the whole accumulated step's ({k} "
            "micro-batches). Divide by K times the global micro-batch.",
        ),
        (
            1.0 / k,
            f"the update is 1/{k} of the big-batch gradient: it is divided by the {k} "
            "micro-batches twice (the loss already divides by the whole step's examples).",
        ),
        (
            float(n),
            f"the update is {n}x the big-batch gradient: the {n} replicas are summed twice, or "
            "each replica divides by its own examples (a local mean). apply_gradients sums the "
            "replicas once; divide each replica's loss by the global number of examples.",
        ),
        (
            1.0 / n,
            f"the update is 1/{n} of the big-batch gradient: divided by the {n} replicas twice. "
            "A Keras loss with its default reduction already divides by num_replicas_in_sync "
            "under a strategy.",
        ),
        (
            float(k * n),
            f"the update is {k * n}x the big-batch gradient: each replica averages over its own "
            "micro-batch examples. Divide by the examples of the whole accumulated step, on "
            "all replicas.",
        ),
    ]


# Numbers an answer may have copied from a run with other settings: replica counts, and K;
# the book's own run (4 replicas, K = 3) first.
_REPLICA_LITERALS = (4, 2, 8)
_K_LITERALS = (3, 2, 4)


def _hard_coded(ratio: float, k: int, n: int, per_replica: int, *, book_only=False):
    """Which numbers written into the answer make the update ``ratio`` times the right one.

    With ``book_only``, only the numbers of the book's run are tried: the update's factor
    already has a cause of its own, and may also be what those numbers give.
    """
    replica_literals = _REPLICA_LITERALS[:1] if book_only else _REPLICA_LITERALS
    k_literals = _K_LITERALS[:1] if book_only else _K_LITERALS
    for m in (m for m in replica_literals if m != n):
        if _close(ratio, n / m):
            return (
                f"it is what a hard-coded {m} for the replica count gives, where this strategy "
                f"has {n} replicas: divide by strategy.num_replicas_in_sync (N), or let a Keras "
                "loss's default reduction divide by it, never by a number copied from a run "
                "with another REPLICAS."
            )
    pairs = ((j, m) for j in k_literals for m in replica_literals if j != k and m != n)
    for j, m in pairs:
        if _close(ratio, k * n / (j * m)):
            return (
                f"it is what a hard-coded {j * m * per_replica} examples gives, {j} micro-batches "
                f"on {m} replicas, where this step has {k} on {n} ({k * n * per_replica} "
                "examples): divide by K * the global micro-batch, written with K and N, not "
                "numbers."
            )
    for j in (j for j in k_literals if j != k):
        if _close(ratio, k / j):
            return (
                f"it is what a hard-coded {j} for K gives, where this check accumulates {k} "
                "micro-batches: divide by K (micro_steps), not by a number."
            )
    return None


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-4 * abs(b)


def _accumulation_verdict(run: _Accumulated, k: int, n: int) -> CheckResult:
    first, second = run.applied
    want_first, want_second = run.reference
    same = functools.partial(agree, rtol=run.rtol)
    if same(first, want_first):
        if same(second, want_second):
            return CheckResult(
                True,
                f"both accumulated updates equal one step on the {k} micro-batches together "
                "(checked twice in a row, so the accumulators are reset)"
                + precision_words(run.rtol),
            )
        if same(second, want_second + first):
            return CheckResult(
                False,
                "the first update is right, the second adds the first one's gradients again: "
                "the accumulators are never reset. After apply_gradients, set each to zero, "
                "e.g. accumulator.assign(tf.zeros_like(accumulator)).",
            )
        return CheckResult(
            False,
            f"the first update is right, the second is "
            f"{number(gradient_ratio(second, want_second))}x "
            "what it should be: reset the accumulators to zero after applying them, and only "
            "then.",
        )
    ratio = gradient_ratio(first, want_first)
    scaled = same(first, ratio * want_first)
    causes = [m for f, m in _accumulation_mistakes(k, n) if same(first, f * want_first)]
    literal = _hard_coded(ratio, k, n, run.per_replica, book_only=bool(causes))
    literal = literal if scaled else None
    if causes:  # with few replicas and micro-batches two causes can give the same factor
        return CheckResult(False, " Or: ".join([*causes, *([literal] if literal else [])]))
    for factor in (1.0 / k, 1.0):
        if same(first, factor * run.last_micro[0]):
            return CheckResult(
                False,
                "only the last micro-batch reached the update: each one replaced the "
                "accumulators (assign) instead of adding to them (assign_add).",
            )
    if literal:
        return CheckResult(
            False, f"the update is {number(ratio)}x the big-batch gradient: {literal}"
        )
    if scaled:
        return CheckResult(
            False,
            f"the update is {number(ratio)}x the big-batch gradient: each micro-batch's loss "
            "must be its share of the whole step's mean loss, its summed per-example losses "
            "divided by the examples of all K micro-batches on all replicas.",
        )
    return CheckResult(
        False,
        f"the update is {number(ratio)}x the big-batch gradient and not a rescaling of it: "
        "add each micro-batch's gradients of its share of the whole step's mean loss, apply "
        "them once, then reset.",
    )
