"""All-reduce benchmarks computed from known cost-model parameters, to try the fit on.

Example:
    >>> from mirrorkit.measure.synthetic import synthetic_benchmark
    >>> measured = synthetic_benchmark(1e-4, 1e-5, 1e9, replicas=[2], sizes=["1MiB"])
    >>> len(measured.records), measured.machine["synthetic"]
    (1, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mirrorkit._validate import parse_size
from mirrorkit.measure._schedule_terms import link_bytes, schedule_steps
from mirrorkit.measure.benchmark import AllReduceBenchmark, record_from_times
from mirrorkit.report.units import format_rate, format_seconds


def synthetic_benchmark(
    launch_s: float,
    alpha_s: float,
    bandwidth: float,
    *,
    algorithms: Sequence[str] = ("collective",),
    replicas: Sequence[int] = (2, 4),
    sizes: Sequence[int | str] = (4 << 10, 1 << 20, 16 << 20),
    noise: float = 0.0,
    repeats: int = 3,
    seed: int = 0,
) -> AllReduceBenchmark:
    """A benchmark computed from known parameters: to try the fit, or to see a model's data.

    Each record's times are ``launch + alpha * steps + busiest-link bytes / bandwidth``
    (steps and bytes from :mod:`mirrorkit.measure.schedules`, float32 elements), each
    repeat multiplied by ``exp(noise * z)`` with ``z`` drawn from a standard normal.

    Args:
        launch_s: Seconds of fixed cost per call.
        alpha_s: Seconds per step.
        bandwidth: Bytes per second through the busiest link.
        algorithms: Names from ``ALL_REDUCE_ALGORITHMS``.
        replicas: Replica counts, each at least 2.
        sizes: Bytes per replica (ints or text like ``"4KiB"``), multiples of 4.
        noise: Relative spread of each repeat (0 for exact times).
        repeats: Repeats per record (their median is the record's time).
        seed: Seed of the noise.

    Returns:
        An :class:`~mirrorkit.measure.benchmark.AllReduceBenchmark` whose ``machine``
        says it is synthetic.

    Example:
        >>> from mirrorkit.measure.synthetic import synthetic_benchmark
        >>> result = synthetic_benchmark(1e-4, 1e-5, 1e9, replicas=[2], sizes=["1MiB"])
        >>> round(result.records[0].median_s, 12)  # 100 us + 2 x 10 us + 1 MiB / 1 GB/s
        0.001168576
    """
    import numpy as np  # here, not at the top: the browser labs' code has no NumPy

    rng = np.random.default_rng(seed)
    records = []
    for algorithm in algorithms:
        for n in replicas:
            for size in sizes:
                nbytes = parse_size(size)
                steps = schedule_steps(algorithm, n)
                t = launch_s + alpha_s * steps + link_bytes(algorithm, n, nbytes) / bandwidth
                times = [t * math.exp(noise * rng.standard_normal()) for _ in range(repeats)]
                records.append(record_from_times(algorithm, n, nbytes, times, 0.0))
    return AllReduceBenchmark(
        records=tuple(records),
        machine={
            "summary": (
                f"synthetic data: launch {format_seconds(launch_s)}, alpha "
                f"{format_seconds(alpha_s)}, bandwidth {format_rate(bandwidth)}, noise {noise:g}"
            ),
            "synthetic": True,
        },
        settings={"repeats": repeats, "noise": noise, "seed": seed},
    )
