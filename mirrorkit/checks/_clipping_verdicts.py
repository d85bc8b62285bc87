"""The verdict of the clipping check, from what its ask recorded.

:func:`mirrorkit.checks.clipping.ask_clipping` runs the learner's ``clip`` in a distributed
SGD step at three bounds and records each update and each replica's gradient; this module
computes one device's clipped gradient on a model with the recorded initial weights and
names the mistake the update shows. Nothing of the learner's runs here: the reference model
is the chapter's ``model_fn`` in a check in the chapter, or, in the grader, the model
rebuilt from the configuration the ask sent (:mod:`mirrorkit.checks._model_configs`).

Example:
    >>> judge_clipping({"verdict": {"passed": False, "message": "not attempted yet"}})
    NOT YET: not attempted yet
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mirrorkit.checks._learner_runs import mean_gradient
from mirrorkit.checks._model_configs import reference_of
from mirrorkit.checks._splits import Precision
from mirrorkit.checks._steps import flat_float64, gradient_ratio, resolve_loss
from mirrorkit.checks.result import CheckResult, from_record
from mirrorkit.report.values import number


def judge_clipping(record: dict, *, model_fn=None, loss=None) -> CheckResult:
    """The verdict of ``check_clipping`` on what its ask recorded.

    ``model_fn`` and ``loss``: the check's (None: rebuilt from the record's configuration).
    """
    import tensorflow as tf

    if (given := from_record(record)) is not None:
        return given
    runs, n = record["runs"], int(record["replicas"])
    if "sentence" in runs["clipped"]:
        return CheckResult(False, str(runs["clipped"]["sentence"]))
    reference, loss = reference_of(tf, record, model_fn, loss)
    loss_fn = resolve_loss(loss)
    x, y = record["x"], record["y"]
    rtol = Precision.of(reference, None, None).rtol

    def judged(run: dict) -> _Clipped:
        reference.set_weights(run["weights"])
        gradient = mean_gradient(tf, reference, loss_fn, x, y)
        norm = float(np.linalg.norm(gradient))
        bound = float(run["clip_norm"])
        wanted = gradient * min(1.0, bound / norm) if norm else gradient
        replicas = tuple(tuple(np.asarray(g, np.float64) for g in each) for each in run["replicas"])
        applied = np.asarray(run["applied"], np.float64)
        return _Clipped(norm, bound, applied, wanted, replicas, rtol)

    clipped, loose = judged(runs["clipped"]), None
    if agree(clipped.applied, clipped.reference, clipped.rtol):  # then the looser bound
        if "sentence" in runs["loose"]:
            return CheckResult(False, str(runs["loose"]["sentence"]))
        loose = judged(runs["loose"])
    verdict = _clipping_verdict(clipped, loose, n)
    if verdict.message.startswith(SUMMED_AGAIN):  # or the norm of the mean: one more bound
        if "sentence" in runs["between"]:
            return CheckResult(False, str(runs["between"]["sentence"]))
        middle = judged(runs["between"])
        if agree(middle.applied, flat_float64(_summed(middle.replicas)), middle.rtol):
            return CheckResult(False, _mean_norm_message(n, middle.clip_norm, middle.norm))
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
