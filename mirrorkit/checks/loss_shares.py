"""What each replica divides its loss by, and what the SUM of the replicas' gradients becomes.

Under a strategy every replica computes a loss on its share of the global batch, and the
all-reduce in ``apply_gradients`` SUMS the replicas' gradients. One device follows the mean
over all ``B`` examples, each example weighing ``1/B``. A replica's loss is the sum of its
examples' losses divided by something (:data:`DIVISIONS`); this module says what each
example then weighs in the summed gradient, in units of ``1/B``, and adds up gradients and
losses as ``strategy.reduce`` does. Chapters 3 and 4 measure the same in TensorFlow. This module
imports no TensorFlow, so it runs where TensorFlow cannot.

Example:
    >>> from mirrorkit.checks.loss_shares import example_weights
    >>> example_weights([8, 8, 8, 8], "local mean")
    [4.0, 4.0, 4.0, 4.0]
"""

from __future__ import annotations

from collections.abc import Sequence

from mirrorkit._validate import require_choice, require_count, require_items, require_number

DIVISIONS = {
    "global batch": "tf.nn.compute_average_loss(per_example, global_batch_size=B)",
    "local mean": "tf.reduce_mean(per_example), the replica's own examples",
    "sum": "a loss with reduction='sum': divided by nothing",
    "keras default": "Keras 3's default reduction: the local mean / num_replicas_in_sync",
    "keras default / N": "Keras 3's default reduction, divided by num_replicas_in_sync again",
}
"""The divisions a replica's loss may use, each with the TensorFlow code that makes it."""

REDUCTIONS = ("SUM", "MEAN")
"""The ``tf.distribute.ReduceOp`` values :func:`reduce_values` knows."""


def divisor(division: str, replica_examples: int, global_batch: int, num_replicas: int) -> int:
    """What one replica divides the sum of its examples' losses by.

    Args:
        division: One of :data:`DIVISIONS`.
        replica_examples: The examples on this replica, 1 or more.
        global_batch: The examples on all replicas together, ``B``.
        num_replicas: The replica count, ``N``.

    Returns:
        The divisor: ``B``, the replica's own count ``b``, 1, ``b * N`` or ``b * N * N``.

    Raises:
        TypeError: If an argument is of the wrong kind.
        ValueError: If a count is below 1 or ``division`` is unknown.

    Example:
        >>> [divisor(d, 3, 10, 4) for d in DIVISIONS]
        [10, 3, 1, 12, 48]
    """
    require_choice("division", division, list(DIVISIONS), write="division='global batch'")
    b = require_count("replica_examples", replica_examples, write="replica_examples=8")
    big_b = require_count("global_batch", global_batch, write="global_batch=32")
    n = require_count("num_replicas", num_replicas, write="num_replicas=4")
    return {
        "global batch": big_b,
        "local mean": b,
        "sum": 1,
        "keras default": b * n,
        "keras default / N": b * n * n,
    }[division]


def example_weights(replica_batches: Sequence[int], division: str) -> list[float]:
    """Per replica, how much each of its examples weighs in the summed gradient, in ``1/B``.

    1 everywhere means the SUM all-reduce gives one device's gradient exactly. A replica
    with no examples adds nothing and is listed as 0.

    Args:
        replica_batches: The examples on each replica, e.g. ``[8, 8, 8, 8]`` or
            ``[3, 3, 3, 1]`` (:func:`mirrorkit.checks.batch_split.replica_batch_sizes`).
        division: One of :data:`DIVISIONS`.

    Returns:
        One weight per replica.

    Raises:
        TypeError: If an argument is of the wrong kind.
        ValueError: If a count is negative, all are 0, or ``division`` is unknown.

    Example:
        >>> example_weights([8, 8, 8, 8], "sum")
        [32.0, 32.0, 32.0, 32.0]
        >>> [round(w, 3) for w in example_weights([3, 3, 3, 1], "keras default")]
        [0.833, 0.833, 0.833, 2.5]
    """
    sizes = _batches(replica_batches)
    total, n = sum(sizes), len(sizes)
    return [total / divisor(division, b, total, n) if b else 0.0 for b in sizes]


def _batches(replica_batches) -> list[int]:
    sizes = require_items("replica_batches", replica_batches, write="replica_batches=[8, 8, 8, 8]")
    for r, size in enumerate(sizes):
        require_count(f"replica_batches[{r}]", size, minimum=0, write="replica_batches=[8, 8]")
    if not sum(sizes):
        require_count("sum(replica_batches)", 0, write="replica_batches=[8, 8, 8, 8]")
    return sizes


def _split(values: Sequence[Sequence[float]], name: str) -> list[list[float]]:
    parts = require_items(name, values, write=f"{name}=[[0.5, 1.5], [2.0, 0.25]]")
    out = []
    for r, part in enumerate(parts):
        items = require_items(f"{name}[{r}]", part, write="[0.5, 1.5]", allow_empty=True)
        out.append([require_number(f"{name}[{r}]", v, write="[0.5, 1.5]") for v in items])
    return out


def replica_losses(per_example: Sequence[Sequence[float]], division: str) -> list[float]:
    """Each replica's loss: the sum of its examples' values divided as ``division`` says.

    The same arithmetic gives each replica's gradient when the values are the examples'
    gradients of one weight.

    Args:
        per_example: Per replica, its examples' losses (or gradients), e.g.
            ``[[1.0, 3.0], [2.0, 2.0]]``.
        division: One of :data:`DIVISIONS`.

    Returns:
        One value per replica (0 for a replica with no examples).

    Raises:
        TypeError: If an argument is of the wrong kind.
        ValueError: If all replicas are empty or ``division`` is unknown.

    Example:
        >>> replica_losses([[1.0, 3.0], [2.0, 2.0]], "global batch")
        [1.0, 1.0]
        >>> replica_losses([[1.0, 3.0], [2.0, 2.0]], "local mean")
        [2.0, 2.0]
    """
    parts = _split(per_example, "per_example")
    sizes = _batches([len(p) for p in parts])
    total, n = sum(sizes), len(sizes)
    return [sum(p) / divisor(division, len(p), total, n) if p else 0.0 for p in parts]


def reduce_values(values: Sequence[float], op: str) -> float:
    """One value per replica combined as ``strategy.reduce(op, ..., axis=None)`` does.

    ``"SUM"`` adds them (what the all-reduce does to gradients in ``apply_gradients``);
    ``"MEAN"`` divides that sum by the replica count.

    Args:
        values: One number per replica.
        op: ``"SUM"`` or ``"MEAN"``.

    Returns:
        The combined value.

    Raises:
        TypeError: If an argument is of the wrong kind.
        ValueError: If ``values`` is empty or ``op`` is unknown.

    Example:
        >>> reduce_values([1.0, 2.0, 3.0, 2.0], "SUM"), reduce_values([1.0, 2.0, 3.0, 2.0], "MEAN")
        (8.0, 2.0)
    """
    items = require_items("values", values, write="values=[1.0, 2.0]")
    numbers = [
        require_number(f"values[{r}]", v, write="values=[1.0, 2.0]") for r, v in enumerate(items)
    ]
    require_choice("op", op, REDUCTIONS, write="op='SUM'")
    total = sum(numbers)
    return total if op == "SUM" else total / len(numbers)


def single_device(per_example: Sequence[Sequence[float]]) -> float:
    """One device's value: the mean over every example of every replica.

    Example:
        >>> single_device([[1.0, 3.0], [2.0, 2.0]])
        2.0
    """
    parts = _split(per_example, "per_example")
    flat = [v for p in parts for v in p]
    _batches([len(p) for p in parts])
    return sum(flat) / len(flat)


def squared_error_gradients(weight: float, xs: Sequence[float], ys: Sequence[float]) -> list[float]:
    """Each example's gradient of ``(weight * x - y) ** 2`` with respect to ``weight``.

    The model of one weight, ``prediction = weight * x``, whose gradient is
    ``2 * (weight * x - y) * x``: small enough to follow by hand.

    Args:
        weight: The model's one weight.
        xs: The examples' inputs.
        ys: The examples' targets, as many as ``xs``.

    Returns:
        One gradient per example.

    Raises:
        TypeError: If an argument is of the wrong kind.
        ValueError: If ``xs`` and ``ys`` differ in length.

    Example:
        >>> squared_error_gradients(0.5, [1.0, 2.0], [1.0, 0.0])
        [-1.0, 4.0]
    """
    w = require_number("weight", weight, write="weight=0.5")
    xs = [
        require_number("xs", x, write="xs=[1.0, 2.0]")
        for x in require_items("xs", xs, write="xs=[1.0, 2.0]")
    ]
    ys = [
        require_number("ys", y, write="ys=[1.0, 0.0]")
        for y in require_items("ys", ys, write="ys=[1.0, 0.0]")
    ]
    if len(xs) != len(ys):
        require_count(
            "len(ys)", len(ys), minimum=len(xs), maximum=len(xs), write=f"{len(xs)} targets"
        )
    return [2.0 * (w * x - y) * x for x, y in zip(xs, ys, strict=True)]
