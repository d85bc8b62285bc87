"""Checks of a learner's gradient accumulation and gradient clipping under a strategy.

Both compare a distributed step with what one device would do, the way
:func:`mirrorkit.check_step_equivalence` does for a loss: the same model built twice with
the same weights, the learner's code run inside ``strategy.run`` on the split the strategy
really makes, and plain SGD, whose update is ``-learning_rate * gradient``, so that the
gradient applied can be read back from the weights.

* :func:`check_accumulation`: ``K`` micro-batches accumulated, then one update, must move
  the weights as one step on the ``K`` micro-batches together would (twice in a row, so
  that accumulators left full are seen).
* :func:`check_clipping`: a clipping function called in the replica function, just before
  ``apply_gradients``, must give the update of single-device training with
  ``tf.clip_by_global_norm`` on the gradient of the whole global batch.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mirrorkit._validate import require_strategy
from mirrorkit.checks._steps import build_model, check_layers, flat_float64, gradient_ratio
from mirrorkit.checks.result import (
    NOT_ATTEMPTED,
    CheckResult,
    cannot_check_with_one_replica,
    raised,
)
from mirrorkit.report.values import error_lines, number

_LEARNING_RATE = 0.1


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
        data: ``(x, y)``: NumPy arrays holding two accumulated steps, ``2 * micro_steps``
            micro-batches of equal size.
        micro_steps: ``K``, the micro-batches per update, 2 or more.
        loss: The per-example loss meant to be minimised, e.g. ``"mse"``.

    Returns:
        A :class:`~mirrorkit.CheckResult`; on a difference, the message names the likely
        mistake (the loss scaled by the micro-batch, divided by ``K`` twice, the replicas
        counted twice, only the last micro-batch kept, accumulators never reset).

    Raises:
        TypeError: If ``strategy`` is not a ``tf.distribute.Strategy``.

    Example:
        >>> import mirrorkit as mk
        >>> from mirrorkit.checks.scaling import check_accumulation
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
    if isinstance(micro_steps, bool) or not isinstance(micro_steps, int) or micro_steps < 2:
        return CheckResult(
            False, f"micro_steps must be a whole number of 2 or more, got {micro_steps!r}."
        )
    if (refusal := cannot_check_with_one_replica(strategy, "gradient accumulation")) is not None:
        return refusal
    try:
        run = _accumulated_run(accumulate, apply, strategy, model_fn, data, micro_steps, loss)
    except _LearnerError as error:
        return CheckResult(False, str(error))
    return _accumulation_verdict(run, micro_steps, strategy.num_replicas_in_sync)


def check_clipping(
    clip: Callable, strategy, model_fn: Callable, batch, *, clip_norm: float, loss="mse"
) -> CheckResult:
    """Check a gradient-clipping function placed just before ``apply_gradients``.

    Inside ``strategy.run`` each replica computes its gradients of its share of the
    global mean loss, calls ``clip(gradients, clip_norm)`` and hands the result to plain
    SGD's ``apply_gradients``, which sums the replicas. The update must equal one SGD step
    on one device with ``tf.clip_by_global_norm(gradients, clip_norm)``, the same as
    Keras's ``global_clipnorm`` on one device. The check runs twice: with ``clip_norm``,
    which clips, and with a bound the gradient does not reach, where nothing may change.

    Args:
        clip: The learner's ``clip(gradients, clip_norm)``, returning the gradients to
            apply (``...``: not attempted).
        strategy: The strategy the loop runs under, with 2 or more replicas.
        model_fn: A function returning a new, built Keras model.
        batch: One global batch ``(x, y)`` of NumPy arrays.
        clip_norm: The bound on the global norm; it must be below the norm of the global
            batch's gradient, or the check cannot see clipping.
        loss: The per-example loss meant to be minimised, e.g. ``"mse"``.

    Returns:
        A :class:`~mirrorkit.CheckResult` naming the mistake if there is one (clipping each
        replica's gradient before the sum, clipping the sum and letting the optimizer sum
        it again, clipping weight by weight, not clipping).

    Raises:
        TypeError: If ``strategy`` is not a ``tf.distribute.Strategy``.

    Example:
        >>> import mirrorkit as mk
        >>> from mirrorkit.checks.scaling import check_clipping
        >>> check_clipping(..., mk.make_strategy(), None, None, clip_norm=1.0)
        NOT YET: not attempted yet: replace the ... with your answer and run the cell.
    """
    require_strategy(strategy, "check_clipping(clip, strategy, model_fn, batch, clip_norm=...)")
    if clip is Ellipsis:
        return NOT_ATTEMPTED
    if not callable(clip):
        return CheckResult(
            False,
            f"clip must be a function clip(gradients, clip_norm) returning the gradients to "
            f"apply, got {type(clip).__name__}.",
        )
    if isinstance(clip_norm, bool) or not isinstance(clip_norm, int | float) or clip_norm <= 0:
        return CheckResult(False, f"clip_norm must be a number above 0, got {clip_norm!r}.")
    if (refusal := cannot_check_with_one_replica(strategy, "gradient clipping")) is not None:
        return refusal
    try:
        clipped = _clipping_run(clip, strategy, model_fn, batch, float(clip_norm), loss)
        if clipped.norm <= clip_norm:
            return CheckResult(
                False,
                f"cannot check clipping with clip_norm={number(clip_norm)}: the gradient's "
                f"norm is only {number(clipped.norm)}, so nothing is clipped. Pass a smaller "
                "clip_norm.",
            )
        loose = _clipping_run(clip, strategy, model_fn, batch, 2.0 * clipped.norm, loss)
    except _LearnerError as error:
        return CheckResult(False, str(error))
    return _clipping_verdict(clipped, loose, strategy.num_replicas_in_sync)


# ------------------------------------------------------------------------- running


class _LearnerError(Exception):
    """A mistake in what the learner passed or wrote, as one sentence."""


@dataclass(frozen=True)
class _Accumulated:
    """Two accumulated updates, distributed and on one device, as flat float64 gradients."""

    applied: tuple[np.ndarray, np.ndarray]  # what SGD applied at each update
    reference: tuple[np.ndarray, np.ndarray]  # the big-batch gradient at the same weights
    last_micro: tuple[np.ndarray, np.ndarray]  # the last micro-batch's mean-loss gradient


@dataclass(frozen=True)
class _Clipped:
    """One clipped step: what SGD applied, what it should, and each replica's gradient."""

    norm: float  # global norm of the global batch's gradient, one device
    clip_norm: float
    applied: np.ndarray
    reference: np.ndarray  # one device: tf.clip_by_global_norm of the gradient
    replicas: tuple[tuple[np.ndarray, ...], ...]  # per replica, per weight, unclipped


def _data(data, what: str):
    if not isinstance(data, tuple | list) or len(data) != 2:
        raise _LearnerError(f"{what} must be a pair (x, y) of NumPy arrays, e.g. (x, y).")
    x, y = (np.asarray(part) for part in data)
    if x.ndim == 0 or y.ndim == 0 or len(x) != len(y) or not len(x):
        raise _LearnerError(
            f"{what} must be (x, y) with the same examples in each, got shapes {x.shape} "
            f"and {y.shape}."
        )
    return x, y


def _models(tf, strategy, model_fn, x, learning_rate):
    """The one-device reference model and its copy in the strategy's scope, with SGD."""
    import keras

    if isinstance(model_fn, keras.Model) or not callable(model_fn):
        raise _LearnerError(
            "model_fn must be a function that returns a NEW Keras model, e.g. model_fn=make_model."
        )
    try:
        reference = build_model(tf, model_fn, x)
        check_layers(reference)
    except (TypeError, ValueError) as error:
        raise _LearnerError(str(error)) from None
    initial = reference.get_weights()
    with strategy.scope():
        model = build_model(tf, model_fn, x)
        model.set_weights(initial)
        optimizer = keras.optimizers.SGD(learning_rate)
        optimizer.build(model.trainable_variables)
    return reference, model, optimizer


def _mean_loss_gradient(tf, model, loss_fn, x, y) -> np.ndarray:
    with tf.GradientTape() as tape:
        values = loss_fn(tf.convert_to_tensor(y), model(x, training=True))
        mean = tf.reduce_mean(tf.cast(values, tf.float32))
    gradients = tape.gradient(mean, model.trainable_variables)
    return flat_float64([np.asarray(g, np.float64) for g in gradients])


def _weights(model) -> np.ndarray:
    return flat_float64([np.asarray(v, np.float64) for v in model.trainable_variables])


def _run_learner(step, *args):
    """Run a traced step of the learner's code; their exceptions become one sentence."""
    try:
        return step(*args)
    except Exception as error:  # noqa: BLE001 - any failure of the learner's code
        raise _LearnerError(_traced_why(error)) from None


def _traced_why(error: BaseException) -> str:
    """One sentence from an error raised while tracing, without AutoGraph's "in user code"."""
    lines = [line for line in error_lines(error) if line != "in user code:"]
    ours = [line for line in lines if line.startswith("_LearnerError: ")]
    if ours:
        return ours[-1].removeprefix("_LearnerError: ")
    if isinstance(error, _LearnerError):
        return str(error)
    named = [line for line in lines if line.startswith(f"{type(error).__name__}: ")]
    what = named[-1] if named else raised(error)
    return f"your function failed inside strategy.run: {what.rstrip('.')}."


def _accumulated_run(accumulate, apply, strategy, model_fn, data, micro_steps, loss):
    import tensorflow as tf

    from mirrorkit._losses import per_example_loss

    x, y = _data(data, "data")
    if len(x) % (2 * micro_steps):
        raise _LearnerError(
            f"data holds {len(x)} examples, which do not split into 2 x {micro_steps} "
            "micro-batches of equal size: give a multiple of 2 * micro_steps examples."
        )
    micro = len(x) // (2 * micro_steps)
    big = micro * micro_steps
    loss_fn = per_example_loss(loss)
    reference, model, optimizer = _models(tf, strategy, model_fn, x, _LEARNING_RATE)
    with strategy.scope():
        accumulators = [
            tf.Variable(
                tf.zeros(v.shape, v.dtype),
                trainable=False,
                synchronization=tf.VariableSynchronization.ON_READ,
                aggregation=tf.VariableAggregation.SUM,
            )
            for v in model.trainable_variables
        ]

    def add(batch):
        return strategy.run(lambda x_r, y_r: accumulate(model, accumulators, x_r, y_r), args=batch)

    def update():
        return strategy.run(lambda: apply(model, optimizer, accumulators))

    add_step = tf.function(functools.partial(add))
    update_step = tf.function(functools.partial(update))
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(micro)
    batches = iter(strategy.experimental_distribute_dataset(dataset))
    reference_sgd_rate = _LEARNING_RATE
    applied, expected, last = [], [], []
    for step in range(2):
        start = step * big
        part = slice(start, start + big)
        expected.append(_mean_loss_gradient(tf, reference, loss_fn, x[part], y[part]))
        tail = slice(start + big - micro, start + big)
        last.append(_mean_loss_gradient(tf, reference, loss_fn, x[tail], y[tail]))
        before = _weights(model)
        for _ in range(micro_steps):
            _run_learner(add_step, next(batches))
        _run_learner(update_step)
        applied.append((before - _weights(model)) / reference_sgd_rate)
        # The reference takes the right step, so that both start the next one alike.
        reference.set_weights([np.asarray(v) for v in model.trainable_variables])
    return _Accumulated(tuple(applied), tuple(expected), tuple(last))


def _clipping_run(clip, strategy, model_fn, batch, clip_norm, loss):
    import tensorflow as tf

    from mirrorkit._losses import per_example_loss

    x, y = _data(batch, "batch")
    loss_fn = per_example_loss(loss)
    reference, model, optimizer = _models(tf, strategy, model_fn, x, 1.0)
    gradient = _mean_loss_gradient(tf, reference, loss_fn, x, y)
    norm = float(np.linalg.norm(gradient))
    wanted = gradient * min(1.0, clip_norm / norm) if norm else gradient
    global_batch = len(x)
    variables = model.trainable_variables

    def replica_step(x_r, y_r):
        with tf.GradientTape() as tape:
            per_example = loss_fn(y_r, model(x_r, training=True))
            value = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
        gradients = tape.gradient(value, variables)
        clipped = clip(list(gradients), clip_norm)
        if not isinstance(clipped, list | tuple) or len(clipped) != len(variables):
            raise _LearnerError(
                f"clip must return one gradient per weight, a list of {len(variables)}, got "
                f"{type(clipped).__name__}"
                + (f" of {len(clipped)}" if isinstance(clipped, list | tuple) else "")
                + ": tf.clip_by_global_norm returns a pair (gradients, norm), keep the first."
            )
        optimizer.apply_gradients(zip(clipped, variables, strict=True))
        return gradients

    def run(batch):
        return strategy.run(replica_step, args=batch)

    step = tf.function(functools.partial(run))
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(global_batch)
    before = _weights(model)
    local = _run_learner(step, next(iter(strategy.experimental_distribute_dataset(dataset))))
    applied = before - _weights(model)
    replicas = tuple(
        tuple(np.asarray(g, np.float64) for g in grads)
        for grads in zip(*(strategy.experimental_local_results(g) for g in local), strict=True)
    )
    return _Clipped(norm, clip_norm, applied, wanted, replicas)


# ----------------------------------------------------------------------- diagnosis


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return float(np.linalg.norm(a - b)) <= 1e-4 * float(np.linalg.norm(b)) + 1e-6


def _accumulation_verdict(run: _Accumulated, k: int, n: int) -> CheckResult:
    first, second = run.applied
    want_first, want_second = run.reference
    if _same(first, want_first):
        if _same(second, want_second):
            return CheckResult(
                True,
                f"both accumulated updates equal one step on the {k} micro-batches together "
                "(checked twice in a row, so the accumulators are reset).",
            )
        if _same(second, want_second + first):
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
    known = [
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
    for factor, message in known:
        if _same(first, factor * want_first):
            return CheckResult(False, message)
    for factor in (1.0 / k, 1.0):
        if _same(first, factor * run.last_micro[0]):
            return CheckResult(
                False,
                "only the last micro-batch reached the update: each one replaced the "
                "accumulators (assign) instead of adding to them (assign_add).",
            )
    if _same(first, ratio * want_first):
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


def _clip_global(arrays, bound):
    norm = math.sqrt(sum(float(np.sum(a * a)) for a in arrays))
    factor = min(1.0, bound / norm) if norm else 1.0
    return [a * factor for a in arrays]


def _clip_each(arrays, bound):
    out = []
    for a in arrays:
        norm = float(np.linalg.norm(a))
        out.append(a * min(1.0, bound / norm) if norm else a)
    return out


def _summed(per_replica):
    return [np.sum(parts, axis=0) for parts in zip(*per_replica, strict=True)]


def _clipping_mistakes(run: _Clipped, n: int) -> list[tuple[np.ndarray, str]]:
    c = run.clip_norm
    total = _summed(run.replicas)
    return [
        (
            flat_float64(_summed([_clip_global(g, c) for g in run.replicas])),
            "each replica clipped its own gradient before the sum, as Keras 3's "
            "clipnorm/global_clipnorm do under a strategy: the sum of clipped parts is not the "
            "clipped sum. Sum first (ReplicaContext.all_reduce), then clip.",
        ),
        (
            flat_float64([n * a for a in _clip_global(total, c)]),
            f"the sum is clipped, but apply_gradients then sums the {n} replicas' copies again: "
            f"{n}x too big. Divide the clipped sum by num_replicas_in_sync, or scale each "
            "replica's own gradient by the clipping factor.",
        ),
        (
            flat_float64(_clip_each(total, c)),
            "each weight's gradient is clipped to the bound on its own (tf.clip_by_norm): clip "
            "the global norm of all of them together, tf.clip_by_global_norm.",
        ),
        (
            flat_float64(_summed([_clip_each(g, c) for g in run.replicas])),
            "each replica clipped each of its own gradients before the sum: sum first "
            "(ReplicaContext.all_reduce), then clip their global norm.",
        ),
        (
            flat_float64(total),
            "nothing was clipped: the update is the unclipped gradient.",
        ),
        (
            flat_float64(_summed([_clip_global(g, c / n) for g in run.replicas])),
            f"each replica clipped its own gradient to clip_norm / {n} before the sum: that is "
            "not the clipped sum either. Sum first (ReplicaContext.all_reduce), then clip.",
        ),
    ]


def _clipping_verdict(clipped: _Clipped, loose: _Clipped, n: int) -> CheckResult:
    if _same(clipped.applied, clipped.reference):
        if _same(loose.applied, loose.reference):
            return CheckResult(
                True,
                f"the update equals one-device training with tf.clip_by_global_norm: "
                f"clipped to {number(clipped.clip_norm)} when the norm is "
                f"{number(clipped.norm)}, and left alone under a looser bound.",
            )
        return CheckResult(
            False,
            f"with a bound of {number(loose.clip_norm)}, above the gradient's norm "
            f"{number(loose.norm)}, the update still changed "
            f"({number(gradient_ratio(loose.applied, loose.reference))}x the gradient): "
            "clipping must "
            "leave gradients whose norm is under the bound as they are.",
        )
    for predicted, message in _clipping_mistakes(clipped, n):
        if _same(clipped.applied, predicted):
            return CheckResult(False, message)
    return CheckResult(
        False,
        f"the update is {number(gradient_ratio(clipped.applied, clipped.reference))}x the clipped "
        "single-device gradient and not a rescaling of it: every replica must apply its share "
        "of the clipped global gradient.",
    )
