"""The two terms of an algorithm's schedule the cost model uses: its steps and busiest-link bytes.

Both come from :func:`mirrorkit.measure.schedules.schedule`, cached: a fit, a prediction
and a synthetic benchmark ask for the same few (algorithm, replica count) pairs many times.
"""

from __future__ import annotations

from functools import lru_cache

from mirrorkit.measure.schedules import Schedule, schedule

FLOAT32 = 4  # bytes of an element of the benchmark's tensors


@lru_cache(maxsize=512)
def cached_schedule(algorithm: str, replicas: int) -> Schedule:
    """:func:`~mirrorkit.measure.schedules.schedule`, computed once per pair.

    Example:
        >>> len(cached_schedule("collective", 4).steps)  # 3 reduce-scatter + 3 all-gather
        6
    """
    return schedule(algorithm, replicas)


def schedule_steps(algorithm: str, replicas: int) -> int:
    """How many steps ``algorithm`` takes on ``replicas`` replicas.

    Example:
        >>> schedule_steps("one_device", 8)
        2
    """
    return len(cached_schedule(algorithm, replicas).steps)


@lru_cache(maxsize=4096)
def link_bytes(algorithm: str, replicas: int, nbytes: int, itemsize: int = FLOAT32) -> int:
    """Bytes through the busiest link, the tensor cut in whole elements when it can be.

    Example:
        >>> link_bytes("collective", 2, 4096)  # the ring sends 2 (n - 1) / n of the tensor
        4096
    """
    if nbytes % itemsize:
        itemsize = 1
    return cached_schedule(algorithm, replicas).busiest_link_bytes(nbytes // itemsize, itemsize)
