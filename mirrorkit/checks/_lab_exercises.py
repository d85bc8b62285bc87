"""The browser labs' exercises as data: the right arithmetic, the usual mistakes, the inputs.

Each row of :data:`EXERCISE_TABLE` is one :class:`~mirrorkit.checks.lab_answers.Exercise`;
the right results come from the same TensorFlow-free code the labs run, so an exercise and
its lab cannot disagree.
"""

from __future__ import annotations

import math
import random

from mirrorkit.checks.batch_split import replica_batch_sizes
from mirrorkit.checks.loss_shares import example_weights
from mirrorkit.training.float16 import scaled_in_float16
from mirrorkit.training.learning_rate_rules import scaled_learning_rate, warmup_learning_rate


def _even_split(examples: int, parts: int) -> list[int]:
    """Examples spread as evenly as possible, the extras first: not how TensorFlow cuts."""
    size, extra = divmod(examples, parts)
    return [size + (part < extra) for part in range(parts)]


def _last_step(examples: int, global_batch: int, replicas: int) -> list[int]:
    return replica_batch_sizes(examples % global_batch or global_batch, replicas)


def _overflows(gradient: float, scale: float) -> bool:
    return math.isinf(scaled_in_float16(gradient, scale)[0])


def _safe_scale(gradient: float) -> float:
    scale = 2.0**40
    while _overflows(gradient, scale):
        scale /= 2
    return scale


def _warmup(step: int, base: float, replicas: int, warmup: int) -> float:
    target = scaled_learning_rate(base, replicas)
    return warmup_learning_rate(step, base, target, warmup_steps=warmup)


def _mean_of_means(parts: list[list[float]]) -> float:
    means = [sum(part) / len(part) for part in parts if part]
    return sum(means) / len(means)


def _sum_over_count(parts: list[list[float]]) -> float:
    return sum(map(sum, parts)) / sum(map(len, parts))


def _losses(rng: random.Random, replicas: int) -> list[list[float]]:
    sizes = replica_batch_sizes(rng.randint(replicas, 6 * replicas), replicas)
    return [[round(rng.uniform(0.1, 3.0), 3) for _ in range(size)] for size in sizes]


def _batches(rng: random.Random) -> list[list[list[float]]]:
    replicas, batch = rng.randint(2, 4), rng.randint(4, 10)
    examples = rng.randint(batch + 1, 4 * batch)
    losses = [round(rng.uniform(0.1, 3.0), 3) for _ in range(examples)]
    out = []
    for start in range(0, examples, batch):
        part = losses[start : start + batch]
        sizes = replica_batch_sizes(len(part), replicas)
        out.append([part[sum(sizes[:r]) : sum(sizes[: r + 1])] for r in range(replicas)])
    return out


_SHORT = "you counted only the full batches: the short last batch is a step too."
_TAIL = "the last replicas get what is left of ceil(batch / replicas) each, in replica order."
EXERCISE_TABLE = (
    (
        "02_batch_split/ex1",
        "steps_per_epoch",
        lambda examples, batch: -(-examples // batch),
        ((lambda e, b: e // b, _SHORT), (lambda e, b: e / b, "a step count is a whole number.")),
        lambda rng: (rng.randint(1, 500), rng.randint(1, 64)),
        ((50, 16), (64, 16), (10, 4), (3, 8)),
    ),
    (
        "02_batch_split/ex2",
        "last_step_sizes",
        _last_step,
        (
            (
                lambda e, b, r: _even_split(e % b or b, r),
                "you spread the examples evenly: " + _TAIL,
            ),
            (
                lambda e, b, r: replica_batch_sizes(b, r),
                "that is a full batch's split, not the last.",
            ),
            (
                lambda e, b, r: replica_batch_sizes(e % b, r),
                "with no short batch the last is full.",
            ),
        ),
        lambda rng: (rng.randint(1, 300), rng.randint(1, 40), rng.randint(1, 8)),
        ((50, 16, 4), (10, 10, 4), (64, 16, 4), (21, 8, 4), (7, 16, 3)),
    ),
    (
        "03_sum_and_mean/ex1",
        "replica_loss",
        lambda losses, batch: sum(losses) / batch,
        (
            (lambda ls, b: sum(ls) / len(ls), "a local mean: divide by the global batch instead."),
            (lambda ls, b: sum(ls), "the sum, undivided: the SUM of replicas is then B times."),
        ),
        lambda rng: (_losses(rng, 1)[0], rng.randint(6, 64)),
        (([0.5, 1.5, 1.0], 12), ([2.0, 0.25], 8), ([0.75], 4)),
    ),
    (
        "03_sum_and_mean/ex2",
        "keras_default_weights",
        lambda sizes: example_weights(sizes, "keras default"),
        (
            (lambda s: [1.0 if b else 0.0 for b in s], "that is the global batch's division."),
            (
                lambda s: [sum(s) / b if b else 0.0 for b in s],
                "B / b each, a local mean's weight: Keras's default also divides by N.",
            ),
            (lambda s: [1.0] * len(s), "a replica with no examples weighs nothing: 0."),
        ),
        lambda rng: (replica_batch_sizes(rng.randint(2, 40), rng.randint(2, 6)),),
        (([2, 2, 2, 0],), ([8, 8, 8, 8],), ([3, 3, 3, 1],), ([5, 4],)),
    ),
    (
        "04_loss_scaling/ex1",
        "overflows",
        _overflows,
        (
            (lambda g, s: math.isinf(scaled_in_float16(g, 1)[0]), "the scale multiplies first."),
            (lambda g, s: g * s > 65504, "float16 rounds: up to 65519.99 rounds to 65504."),
        ),
        lambda rng: (rng.choice([1.0, 1.5, 3.0, 10.0, 0.01]), 2.0 ** rng.randint(0, 24)),
        ((1.5, 2.0**15), (1.5, 2.0**16), (1.0, 65519.0), (10.0, 4096.0), (10.0, 8192.0)),
    ),
    (
        "04_loss_scaling/ex2",
        "safe_scale",
        _safe_scale,
        (
            (lambda g: 2 * _safe_scale(g), "that scale overflows: halve it."),
            (lambda g: _safe_scale(g) / 2, "twice that still fits: the largest one is wanted."),
            (lambda g: 65504 / g, "the scale is a power of two, as the optimizer halves it."),
        ),
        lambda rng: (rng.choice([0.01, 0.3, 1.5, 3.0, 10.0, 100.0, 1000.0]),),
        ((1.5,), (10.0,), (0.01,), (1.0,)),
    ),
    (
        "05_ring_all_reduce/ex1",
        "ring_steps",
        lambda n: 2 * (n - 1),
        (
            (
                lambda n: n - 1,
                "you counted only the reduce-scatter half; the ring hands the finished sums "
                "round in as many steps again.",
            ),
            (lambda n: 2 * n, "a replica needs no step to send to itself: n - 1 per half."),
        ),
        lambda rng: (rng.randint(2, 64),),
        ((2,), (4,), (8,), (3,)),
    ),
    (
        "05_ring_all_reduce/ex2",
        "ring_bytes_sent",
        lambda size, n: 2 * (n - 1) * size // n,  # size a multiple of n: equal chunks
        (
            (lambda s, n: (n - 1) * s // n, "that is half: the sums go round again."),
            (lambda s, n: 2 * (n - 1) * s, "each step sends one chunk, 1/n of the tensor."),
            (lambda s, n: 2 * s, "2 (n - 1) chunks of size / n: not quite twice."),
        ),
        lambda rng: (rng.randint(1, 4096) * 64, rng.choice([2, 4, 8, 16])),
        ((1024, 4), (4096, 8), (64, 2)),
    ),
    (
        "06_auto_shard/ex1",
        "data_examples",
        lambda batch, workers, worker: replica_batch_sizes(batch, workers)[worker],
        ((lambda b, w, k: _even_split(b, w)[k], "you cut evenly: " + _TAIL),),
        lambda rng: (lambda w: (rng.randint(1, 40), w, rng.randrange(w)))(rng.randint(1, 6)),
        ((4, 2, 0), (5, 2, 1), (4, 3, 2), (10, 4, 3)),
    ),
    (
        "06_auto_shard/ex2",
        "times_trained",
        lambda policy, workers: workers if policy == "OFF" else 1,
        (
            (lambda p, w: 1, "under OFF every worker trains on every example."),
            (lambda p, w: w, "under DATA each example goes to one worker only."),
        ),
        lambda rng: (rng.choice(["DATA", "OFF"]), rng.randint(2, 8)),
        (("DATA", 2), ("OFF", 2), ("OFF", 3), ("DATA", 4)),
    ),
    (
        "07_evaluation_loss/ex1",
        "evaluation_mean",
        lambda batches: _sum_over_count([part for batch in batches for part in batch]),
        (
            (
                lambda bs: sum(_sum_over_count(b) for b in bs) / len(bs),
                "the mean of the batches' means weighs a short last batch like a full one.",
            ),
            (
                lambda bs: _mean_of_means([part for batch in bs for part in batch]),
                "the mean of the replicas' means weighs a replica's few examples like many.",
            ),
        ),
        lambda rng: (_batches(rng),),
        (([[[1.0, 2.0], [3.0, 4.0]], [[5.0], []]],), ([[[0.5], [1.5]], [[2.5], [0.5]]],)),
    ),
    (
        "07_evaluation_loss/ex2",
        "metric_result",
        lambda totals, counts: sum(totals) / sum(counts),
        (
            (
                lambda t, c: _mean_of_means([[x / n] * n for x, n in zip(t, c, strict=True) if n]),
                "averaging the replicas' ratios ('MEAN'): sum totals and counts, divide once.",
            ),
            (lambda t, c: sum(t) / len(t), "divide by the examples counted, not the replicas."),
        ),
        lambda rng: (lambda c: ([round(rng.uniform(0, 2) * n, 3) for n in c], c))(
            [rng.randint(1, 20) for _ in range(rng.randint(2, 5))]
        ),
        (([10.0, 6.0], [8, 2]), ([4.0, 4.0, 1.0], [4, 4, 1])),
    ),
    (
        "08_scaling_rule/ex1",
        "scaled_rate",
        lambda base, replicas, rule: scaled_learning_rate(base, replicas, rule=rule),
        (
            (lambda b, k, r: b, "the rate must grow with the replicas."),
            (
                lambda b, k, r: scaled_learning_rate(
                    b, k, rule="sqrt" if r == "linear" else "linear"
                ),
                "you swapped the rules: linear multiplies by k, sqrt by sqrt(k).",
            ),
            (lambda b, k, r: b / k, "the batch grew: the rate grows too, it does not shrink."),
        ),
        lambda rng: (
            rng.choice([0.01, 0.1, 0.5]),
            rng.randint(2, 64),
            rng.choice(["linear", "sqrt"]),
        ),
        ((0.1, 8, "linear"), (0.1, 4, "sqrt"), (0.5, 2, "linear")),
    ),
    (
        "08_scaling_rule/ex2",
        "warmup_rate",
        _warmup,
        (
            (lambda s, b, k, w: b * k * min(s, w) / w, "warm-up starts at BASE, not at 0."),
            (lambda s, b, k, w: _warmup(s + 1, b, k, w), "step 0 is at BASE: count from 0."),
            (lambda s, b, k, w: b * k, "during warm-up the rate climbs; only then is it b k."),
        ),
        lambda rng: (
            rng.randint(0, 12),
            rng.choice([0.1, 0.05]),
            rng.randint(2, 16),
            rng.randint(1, 10),
        ),
        ((0, 0.1, 8, 8), (3, 0.1, 8, 8), (8, 0.1, 8, 8), (20, 0.1, 4, 5)),
    ),
)
