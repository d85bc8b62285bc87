"""The verdict on an evaluation loop, from what its calls gave back: NumPy only.

:func:`judge_evaluation` reads one record per call of the learner's ``evaluate`` (the number
it returned, or why there is none; the model's weights after it; where the model was called)
and each call's per-example losses, and names the first mistake, as
:func:`~mirrorkit.checks.evaluation.check_evaluation` reports it. The records are data, so the
calls can be made in one process and judged in another.

Example:
    >>> import numpy as np
    >>> losses = [np.array([1.0, 3.0]), np.array([1.0, 3.0, 5.0])]
    >>> records = [{"value": 2.0, "weights": [], "calls": [0, 1]},
    ...            {"value": 3.0, "weights": [], "calls": [0, 1]}]
    >>> judge_evaluation(records, losses, [], replicas=2, global_batch=2).passed
    True
"""

from __future__ import annotations

import math

import numpy as np

from mirrorkit.checks.result import CheckResult

RTOL = 1e-5  # float32 sums of a few dozen values, in another order than float64's


def judge_evaluation(  # noqa: PLR0913 - what the check knows, each named
    records: list[dict],
    losses: list,
    before: list,
    *,
    replicas: int,
    global_batch: int,
    literals=(),
    rtol: float = RTOL,
) -> CheckResult:
    """The verdict on ``evaluate`` from one record per call: full batches, then a short one.

    Args:
        records: Per call, in order: ``{"failed": sentence}``, or ``{"returned": text}`` (not
            one number), or ``{"value": number}``; with ``"weights"`` (the model's weights
            after the call, as digests) and ``"calls"`` (where the model ran so far: the
            replica ids, ``"outside"``, ``"cross-replica"``...).
        losses: Each call's per-example losses (float64 arrays), in order.
        before: The model's weights before any call, as digests.
        replicas: The strategy's replica count.
        global_batch: The global batch the datasets were batched by.
        literals: The numbers written in ``evaluate``'s source.
        rtol: How close the mean must be (a mixed policy's precision, or :data:`RTOL`).

    Returns:
        A :class:`~mirrorkit.CheckResult`.
    """
    short = len(losses[1]) - global_batch if len(losses) > 1 else 0
    full = len(losses[0]) if losses else 2 * global_batch
    what = [
        f"on {full} examples in full batches",
        f"with a short last batch of {short} examples (some replicas get fewer, or none)",
    ]
    answers = []
    for index, (record, part) in enumerate(zip(records, losses, strict=False)):
        record = record if isinstance(record, dict) else {}
        if "value" not in record:
            return _no_number(record, what[index])
        got = record["value"]
        if record.get("weights") != before:
            return CheckResult(
                False,
                "evaluate changed the model's weights: evaluating computes the loss only "
                "(model(x, training=False)); no gradients, no optimizer, no fit.",
            )
        calls = record.get("calls")
        if (
            where := _where_problem(calls if isinstance(calls, list) else [], replicas)
        ) is not None:
            return CheckResult(False, where)
        answers.append((len(part), got, np.asarray(part, np.float64)))
        judge = _full_batches if index == 0 else _short_batch
        verdict = judge(answers, global_batch, replicas, what[index], rtol)
        if verdict is not None and index == 0:
            fixed = _fixed_number(got, answers[0][2].mean(), replicas, literals, rtol)
            return verdict if fixed is None else fixed
        if verdict is not None:
            return verdict
    if len(answers) < 2:
        return CheckResult(False, "evaluate's results did not all come back.")
    return CheckResult(
        True,
        f"evaluate gives the mean loss over every example, computed inside strategy.run on "
        f"all {replicas} replicas: {answers[0][2].mean():.6g} {what[0]}, and "
        f"{answers[1][2].mean():.6g} {what[1]}"
        + (
            "."
            if rtol == RTOL
            else f", to a relative {rtol:g}, the precision of the model's mixed policy."
        ),
    )


def _no_number(record: dict, what: str) -> CheckResult:
    if "failed" in record:
        return CheckResult(
            False,
            f"{what}, {record['failed']} Every replica must return a value of the same shape "
            "even when its share of the batch is empty: sum the per-example losses (a sum of "
            "nothing is 0) and count the examples.",
        )
    return CheckResult(
        False,
        f"evaluate returned {str(record.get('returned', 'nothing'))[:80]}, not one number: "
        "return the mean loss, e.g. float(total / count).",
    )


def _where_problem(calls: list, replicas: int) -> str | None:
    """Why the model's calls show the loss was not computed by every replica, or None."""
    fix = (
        "Compute each replica's loss inside strategy.run(on_replica, args=batch), on the "
        "batches of strategy.experimental_distribute_dataset(dataset), with the model "
        "evaluate is given."
    )
    if not calls:
        return f"evaluate never called the model it was given (its model argument). {fix}"
    if "outside" in calls:
        return (
            "evaluate computed the loss on one device, outside any strategy: the model was "
            f"called with no strategy.run, so the replicas never shared the work. {fix}"
        )
    ids = {call for call in calls if isinstance(call, int)}
    if "cross-replica" in calls or ("cross-replica traced" in calls and not ids):
        return (
            "evaluate called the model in the strategy's cross-replica context (under "
            "strategy.scope() but not inside strategy.run), so one device computed it. " + fix
        )
    missing = sorted(set(range(replicas)) - ids)
    if missing:
        return (
            f"evaluate ran the model on replicas {sorted(ids)} only, not on replica "
            f"{', '.join(map(str, missing))}: every replica must compute its share. {fix}"
        )
    return None


def _fixed_number(got: float, right: float, replicas: int, literals, rtol) -> CheckResult | None:
    """A failed result naming a number fixed for another replica count, if one explains it."""
    for literal in literals:
        c = float(literal)
        if c <= 0 or math.isclose(c, replicas):
            continue
        for factor, what in ((c / replicas, "multiplies by"), (replicas / c, "divides by")):
            if _close(got, right * factor, rtol):
                return CheckResult(
                    False,
                    f"evaluate gives {got:.6g}, {factor:.4g} times the mean {right:.6g}: it "
                    f"{what} a fixed {literal:g} where there are {replicas} replicas (e.g. "
                    f"strategy.reduce('MEAN', ...) times {literal:g} is a SUM only with "
                    f"{literal:g} replicas). Add the replicas' sums with "
                    "strategy.reduce('SUM', ...), or use strategy.num_replicas_in_sync.",
                )
    return None


def _close(a: float, b: float, rtol: float) -> bool:
    return math.isclose(a, b, rel_tol=rtol, abs_tol=1e-12)


def _full_batches(answers, global_batch: int, replicas: int, what: str, rtol) -> CheckResult | None:
    (_, got, _), right = answers[0], answers[0][2].mean()
    if _close(got, right, rtol):
        return None
    if _close(got, right * replicas, rtol):
        return CheckResult(
            False,
            f"{what}, the loss is {replicas} times too large ({got:.6g}, the mean is "
            f"{right:.6g}): each replica's own mean was summed over the replicas. Divide each "
            "replica's summed loss by the global batch (tf.nn.compute_average_loss("
            "per_example, global_batch_size=...)) before the SUM, or sum losses and count "
            "examples.",
        )
    if _close(got, right / replicas, rtol):
        return CheckResult(
            False,
            f"{what}, the loss is 1/{replicas} of the mean ({got:.6g}, the mean is {right:.6g}): "
            "it was divided by the replicas twice. A Keras loss object under the scope already "
            "divides by num_replicas_in_sync, and strategy.reduce('MEAN', ...) averages again.",
        )
    return CheckResult(
        False, f"{what}, evaluate gives {got:.6g}, but the mean loss is {right:.6g}."
    )


def _short_batch(answers, global_batch: int, replicas: int, what: str, rtol) -> CheckResult | None:
    (_, got, losses), right = answers[1], answers[1][2].mean()
    if _close(got, right, rtol):
        return None
    start = f"right with full batches, but {what} evaluate gives {got:.6g}, not {right:.6g}"
    if math.isnan(got):
        return CheckResult(
            False,
            f"{start}: a replica with no examples took the mean of nothing (0 / 0), so "
            "each replica's own mean cannot be combined. Sum the per-example losses and count "
            "the examples on every replica instead.",
        )
    short = losses[global_batch:]
    share = -(-len(short) // replicas)
    parts = [short[i * share : (i + 1) * share] for i in range(replicas)]
    means = [part.mean() for part in parts if len(part)]
    if _close(got, float(np.mean([losses[:global_batch].mean(), np.mean(means)])), rtol):
        return CheckResult(
            False,
            f"{start}: it averages each replica's own mean, so a replica holding fewer "
            f"examples of the short batch ({', '.join(str(len(p)) for p in parts)}) weighs "
            "as much as a full one. Sum the per-example losses and count the examples on "
            "every replica, add both up over the replicas, and divide at the end.",
        )
    batch_means = [losses[:global_batch].mean(), losses[global_batch:].mean()]
    if _close(got, float(np.mean(batch_means)), rtol):
        return CheckResult(
            False,
            f"{start}: it averages the batches' means, so the short batch weighs as much as a "
            "full one. Sum the per-example losses and count the examples over all batches, "
            "then divide once at the end.",
        )
    if _close(got, losses.sum() / (2 * global_batch), rtol):
        return CheckResult(
            False,
            f"{start}: every batch is divided by the global batch of {global_batch}, the short "
            "one too. Count the examples the batches really hold.",
        )
    return CheckResult(
        False,
        f"{start}. Weigh every example once: sum the per-example losses and count the "
        "examples on every replica, add both up over the replicas, and divide at the end.",
    )
