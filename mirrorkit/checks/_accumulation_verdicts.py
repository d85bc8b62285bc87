"""The verdict of the accumulation check, from what its ask recorded.

:func:`mirrorkit.checks.accumulation.ask_accumulation` runs the learner's ``accumulate`` and
``apply`` for two accumulated updates and records the weights they started from and what
each update applied; this module computes one device's big-batch gradient at those weights
(and the last micro-batch's, for one mistake) and names the mistake the updates show.
Nothing of the learner's runs here: the reference model is the chapter's ``model_fn`` in a
check in the chapter, or, in the grader, the model rebuilt from the configuration the ask
sent (:mod:`mirrorkit.checks._model_configs`).

Example:
    >>> judge_accumulation({"verdict": {"passed": False, "message": "not attempted yet"}})
    NOT YET: not attempted yet
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from mirrorkit.checks._clipping_verdicts import agree, precision_words
from mirrorkit.checks._learner_runs import mean_gradient
from mirrorkit.checks._model_configs import reference_of
from mirrorkit.checks._splits import Precision
from mirrorkit.checks._steps import gradient_ratio, resolve_loss
from mirrorkit.checks.result import CheckResult, from_record
from mirrorkit.report.values import number


def judge_accumulation(record: dict, *, model_fn=None, loss=None) -> CheckResult:
    """The verdict of ``check_accumulation`` on what its ask recorded.

    ``model_fn`` and ``loss``: the check's (None: rebuilt from the record's configuration).
    """
    import tensorflow as tf

    if (given := from_record(record)) is not None:
        return given
    if "sentence" in record:
        return CheckResult(False, str(record["sentence"]))
    k, n, micro = int(record["micro_steps"]), int(record["replicas"]), int(record["micro"])
    reference, loss = reference_of(tf, record, model_fn, loss)
    loss_fn = resolve_loss(loss)
    x, y = record["x"], record["y"]
    reference.set_weights(record["weights"])
    big = micro * k
    expected, last = [], []
    for step in range(2):
        if step:  # the second update starts where the learner's first left the weights
            reference.set_weights(record["after_first"])
        start = step * big
        expected.append(mean_gradient(tf, reference, loss_fn, *_cut((x, y), start, start + big)))
        tail = _cut((x, y), start + big - micro, start + big)
        last.append(mean_gradient(tf, reference, loss_fn, *tail))
    applied = tuple(np.asarray(a, np.float64) for a in record["applied"])
    rtol = Precision.of(reference, None, None).rtol
    run = _Accumulated(applied, tuple(expected), tuple(last), micro // n, rtol)
    return _accumulation_verdict(run, k, n)


def _cut(structure, start: int, stop: int):
    """The examples ``start:stop`` of every array of ``structure`` (dicts, lists, arrays)."""
    if isinstance(structure, dict):
        return {key: _cut(value, start, stop) for key, value in structure.items()}
    if isinstance(structure, list | tuple):
        return type(structure)(_cut(value, start, stop) for value in structure)
    return structure[start:stop]


@dataclass(frozen=True)
class _Accumulated:
    """Two accumulated updates, distributed and on one device, as flat float64 gradients."""

    applied: tuple[np.ndarray, np.ndarray]  # what SGD applied at each update
    reference: tuple[np.ndarray, np.ndarray]  # the big-batch gradient at the same weights
    last_micro: tuple[np.ndarray, np.ndarray]  # the last micro-batch's mean-loss gradient
    per_replica: int  # examples of one micro-batch on one replica
    rtol: float  # of the gradient's norm: the precision the model computes at


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
