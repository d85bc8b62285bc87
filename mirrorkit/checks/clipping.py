"""Check a learner's gradient clipping under a strategy against one device's global-norm clip.

Example:
    >>> import mirrorkit as mk
    >>> mk.check_clipping(..., mk.make_strategy(), None, None, clip_norm=1.0)
    NOT YET: not attempted yet: replace the ... with your answer and run the cell.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mirrorkit._validate import refuse, require_number, require_strategy
from mirrorkit.checks._learner_data import OneBatch, one_batch
from mirrorkit.checks._learner_runs import (
    LearnerError,
    flat_weights,
    mean_gradient,
    reference_and_copy,
    run_learner,
)
from mirrorkit.checks._splits import Precision
from mirrorkit.checks._steps import flat_float64, gradient_ratio, per_example_values
from mirrorkit.checks.result import NOT_ATTEMPTED, CheckResult, cannot_check_with_one_replica
from mirrorkit.report.values import number


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
        batch: One global batch ``(x, y)`` of NumPy arrays (or dicts or tuples of them,
            as the model takes its inputs and gives its outputs).
        clip_norm: The bound on the global norm; it must be below the norm of the global
            batch's gradient, or the check cannot see clipping.
        loss: The per-example loss meant to be minimised, e.g. ``"mse"``.

    Returns:
        A :class:`~mirrorkit.CheckResult`; a mistake in ``clip`` (not a function, it fails,
        returns the wrong thing or a wrong update) is a failed result naming the mistake
        (clipping each replica's gradient before the sum, clipping the sum and letting the
        optimizer sum it again, clipping weight by weight, not clipping).

    Raises:
        TypeError: If ``strategy`` is not a ``tf.distribute.Strategy``, ``clip_norm`` is not
            a number, ``model_fn`` is a model or not a function, ``batch`` is not a pair
            ``(x, y)`` or ``loss`` is not a loss.
        ValueError: If ``clip_norm`` is not above 0 or not below the gradient's norm (so
            nothing would be clipped), x and y differ in length, ``model_fn`` builds a model
            with ``BatchNormalization`` or ``Dropout``, or ``loss`` is not a Keras loss name.

    Example:
        >>> import mirrorkit as mk
        >>> from mirrorkit.checks.clipping import check_clipping
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
    write = "clip_norm=1.0 (any number above 0)"
    clip_norm = require_number("clip_norm", clip_norm, write=write, above=0)
    if (refusal := cannot_check_with_one_replica(strategy, "gradient clipping")) is not None:
        return refusal
    try:
        data = one_batch(strategy, batch, "batch")  # split once: every run below takes it
        clipped = _clipping_run(clip, strategy, model_fn, data, clip_norm, loss)
        if clipped.norm <= clip_norm:
            refuse(
                "clip_norm",
                must="below the norm of the batch's gradient, so that clipping shows",
                got=f"{number(clip_norm)}, but the gradient's norm is only "
                f"{number(clipped.norm)}, so nothing is clipped. Pass a smaller clip_norm",
                write=f"clip_norm={number(clipped.norm / 2)}",
                error=ValueError,
            )
        loose = None  # asked only of a right clipped step: a wrong one is judged without it
        if agree(clipped.applied, clipped.reference, clipped.rtol):
            loose = _clipping_run(clip, strategy, model_fn, data, 2.0 * clipped.norm, loss)
    except LearnerError as error:
        return CheckResult(False, str(error))
    n = strategy.num_replicas_in_sync
    verdict = _clipping_verdict(clipped, loose, n)
    if verdict.message.startswith(SUMMED_AGAIN):  # or the norm of the mean: one more bound
        between = clipped.norm * (1.0 + 1.0 / n) / 2.0  # above the mean's norm, below the sum's
        try:
            middle = _clipping_run(clip, strategy, model_fn, data, between, loss)
        except LearnerError as error:
            return CheckResult(False, str(error))
        if agree(middle.applied, flat_float64(_summed(middle.replicas)), middle.rtol):
            return CheckResult(False, _mean_norm_message(n, between, middle.norm))
    return verdict


SUMMED_AGAIN = "the sum is clipped, but apply_gradients then sums"


def _mean_norm_message(n: int, bound: float, norm: float) -> str:
    return (
        f"the norm is taken of the MEAN of the {n} replicas' gradients (ReduceOp.MEAN), which "
        f"is 1/{n} of the norm of the summed gradient that one device would clip, so the "
        f"bound acts {n}x too loosely: with clip_norm={number(bound)} and a summed gradient "
        f"of norm {number(norm)}, nothing was clipped. All-reduce with ReduceOp.SUM, clip "
        f"the global norm of the sum, and divide what you return by num_replicas_in_sync."
    )


@dataclass(frozen=True)
class _Clipped:
    """One clipped step: what SGD applied, what it should, and each replica's gradient."""

    norm: float  # global norm of the global batch's gradient, one device
    clip_norm: float
    applied: np.ndarray
    reference: np.ndarray  # one device: tf.clip_by_global_norm of the gradient
    replicas: tuple[tuple[np.ndarray, ...], ...]  # per replica, per weight, unclipped
    rtol: float  # of the gradient's norm: the precision the model computes at


def _clipping_run(clip, strategy, model_fn, data: OneBatch, clip_norm, loss):
    import tensorflow as tf

    from mirrorkit.checks.equivalence import resolve_loss

    x, y, global_batch = data.x, data.y, data.examples
    loss_fn = resolve_loss(loss)
    reference, model, optimizer = reference_and_copy(tf, strategy, model_fn, x, 1.0)
    gradient = mean_gradient(tf, reference, loss_fn, x, y)
    norm = float(np.linalg.norm(gradient))
    wanted = gradient * min(1.0, clip_norm / norm) if norm else gradient
    variables = model.trainable_variables

    def replica_step(x_r, y_r):
        with tf.GradientTape() as tape:
            per_example = per_example_values(tf, loss_fn, y_r, model(x_r, training=True))
            value = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
        gradients = tape.gradient(value, variables)
        clipped = clip(list(gradients), clip_norm)
        if not isinstance(clipped, list | tuple) or len(clipped) != len(variables):
            raise LearnerError(
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
    before = flat_weights(model)
    local = run_learner(step, data.per_replica)
    applied = before - flat_weights(model)
    replicas = tuple(
        tuple(np.asarray(g, np.float64) for g in grads)
        for grads in zip(*(strategy.experimental_local_results(g) for g in local), strict=True)
    )
    rtol = Precision.of(reference, None, None).rtol
    return _Clipped(norm, clip_norm, applied, wanted, replicas, rtol)


def precision_words(rtol: float) -> str:
    """How closely two updates were compared, as the end of a verdict's sentence.

    Example:
        >>> precision_words(1e-4), precision_words(0.03125)
        ('.', " (to 0.03125 of the gradient's norm, at the precision the model computes in).")
    """
    if rtol <= 1e-4:
        return "."
    return f" (to {number(rtol)} of the gradient's norm, at the precision the model computes in)."


def agree(a: np.ndarray, b: np.ndarray, rtol: float = 1e-4) -> bool:
    """Whether ``a`` is ``b`` to ``rtol`` of ``b``'s norm (4 epsilons under mixed precision).

    Example:
        >>> agree(np.array([1.0, 2.0]), np.array([1.01, 2.0])), agree(np.ones(2), np.ones(2))
        (False, True)
    """
    return float(np.linalg.norm(a - b)) <= rtol * float(np.linalg.norm(b)) + 1e-6


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
            "each replica clipped its own gradient before the sum, by its local norm, as "
            "Keras 3's clipnorm/global_clipnorm do under a strategy: the sum of clipped parts "
            "is not the clipped sum. Sum first (ReplicaContext.all_reduce), then clip.",
        ),
        (
            flat_float64([n * a for a in _clip_global(total, c)]),
            f"{SUMMED_AGAIN} the {n} replicas' copies again: "
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
            f"each replica clipped its own gradient to clip_norm / {n} before the sum, by its "
            f"local norm (or by {n} times it): that is not the clipped sum either. Sum first "
            "(ReplicaContext.all_reduce), then clip by the norm of the sum.",
        ),
    ]


def _clipping_verdict(clipped: _Clipped, loose: _Clipped | None, n: int) -> CheckResult:
    if loose is not None:  # the clipped step is right
        if agree(loose.applied, loose.reference, loose.rtol):
            return CheckResult(
                True,
                f"the update equals one-device training with tf.clip_by_global_norm: "
                f"clipped to {number(clipped.clip_norm)} when the norm is "
                f"{number(clipped.norm)}, and left alone under a looser bound"
                + precision_words(clipped.rtol),
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
        if agree(clipped.applied, predicted, clipped.rtol):
            return CheckResult(False, message)
    factors = _replica_factors(clipped)
    if factors is not None:
        return CheckResult(False, _factors_message(clipped, factors, n))
    return CheckResult(
        False,
        f"the update is {number(gradient_ratio(clipped.applied, clipped.reference))}x the clipped "
        "single-device gradient and not a rescaling of it: every replica must apply its share "
        "of the clipped global gradient.",
    )


def _replica_factors(run: _Clipped) -> np.ndarray | None:
    """The factor each replica scaled its own gradient by, if the update is such a sum."""
    columns = np.stack([flat_float64(grads) for grads in run.replicas], axis=1)
    factors, *_ = np.linalg.lstsq(columns, run.applied, rcond=None)
    return factors if agree(columns @ factors, run.applied, run.rtol) else None


def _factors_message(run: _Clipped, factors: np.ndarray, n: int) -> str:
    """What scaling each replica's gradient by ``factors`` says about how the clip was made."""
    shown = ", ".join(number(f) for f in factors)
    if np.ptp(factors) > 1e-4 * np.max(np.abs(factors)):
        return (
            f"each replica scaled its gradient by a factor of its own ({shown}): each took the "
            "local norm of its own gradients, not the norm of the all-reduced gradients. "
            "The factor min(1, clip_norm / norm) must come from "
            "tf.linalg.global_norm(context.all_reduce('SUM', gradients)), the same on every "
            "replica."
        )
    factor, want = float(np.mean(factors)), min(1.0, run.clip_norm / run.norm)
    local = [math.sqrt(sum(float(np.sum(g * g)) for g in grads)) for grads in run.replicas]
    for norm, how in (
        (sum(local), "the sum of the replicas' local norms"),
        (math.sqrt(sum(v * v for v in local)), "the root of the replicas' summed squared norms"),
    ):
        if math.isclose(factor, min(1.0, run.clip_norm / norm), rel_tol=1e-4):
            return (
                f"every replica scaled its gradient by {number(factor)}, computed from {how}: "
                "that is not the norm of the summed gradient (the norm of a sum is not the sum "
                "of norms). All-reduce the gradients themselves, then take their global norm."
            )
    for literal in range(2, 9):
        if literal != n and math.isclose(factor, want * n / literal, rel_tol=1e-4):
            return (
                f"the update is {number(n / literal)}x the clipped single-device gradient: it "
                f"is what a hard-coded {literal} for the replica count gives, where this "
                f"strategy has {n} replicas. Use context.num_replicas_in_sync, never a number "
                "copied from a run with another REPLICAS."
            )
    return (
        f"every replica scaled its gradient by {number(factor)}, but clipping the global norm "
        f"{number(run.norm)} to {number(run.clip_norm)} takes a factor of {number(want)}: "
        "min(1, clip_norm / the norm of the all-reduced gradients)."
    )
