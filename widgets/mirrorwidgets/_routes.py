"""The copies each all-reduce algorithm makes between replicas, as diagrams draw them."""

from __future__ import annotations

import numbers

from mirrorkit._validate import refuse


def device_label(device: str) -> str:
    """A device as a diagram labels it: what follows ``device:`` (its host is drawn around it)."""
    return device.rsplit("device:", 1)[-1] if "device:" in device else device


def route(algorithm: str, n: int, hub: int) -> list[tuple[int, int, str]]:
    """(from replica, to replica, step) for each copy the all-reduce makes."""
    if n < 2:
        return []
    if algorithm in ("collective", "nccl"):
        return [(i, (i + 1) % n, "reduce") for i in range(n)]
    if algorithm == "one_device":
        others = [i for i in range(n) if i != hub]
        return [(i, hub, "reduce") for i in others] + [(hub, i, "broadcast") for i in others]
    # hierarchical_copy (tf's aggregate_gradients_using_hierarchical_copy): each half sums
    # into its leader, group 1's leader sends its sum to group 0's leader, which adds them
    # and sends the total back; each leader then broadcasts within its group.
    groups = hierarchical_groups(n)
    edges = [(i, group[0], "reduce") for group in groups if group for i in group[1:]]
    if groups[1]:
        edges += [
            (groups[1][0], groups[0][0], "exchange"),
            (groups[0][0], groups[1][0], "broadcast"),
        ]
    edges += [(group[0], i, "broadcast") for group in groups if group for i in group[1:]]
    return edges


def hierarchical_groups(n: int) -> list[list[int]]:
    """Replica groups HierarchicalCopyAllReduce reduces within (two halves).

    Args:
        n: Number of replicas.

    Returns:
        Two lists of replica indices (the second empty when ``n`` is 1).

    Raises:
        TypeError: If ``n`` is not a whole number (e.g. a strategy or a list of devices).
        ValueError: If ``n`` is below 1.

    Example:
        >>> hierarchical_groups(4)
        [[0, 1], [2, 3]]
    """
    n = _replica_count(n)
    half = max(n // 2, 1)
    return [list(range(0, half)), list(range(half, n))]


def _replica_count(n) -> int:
    """``n`` if it is a number of replicas (a whole number >= 1), else a clear error."""
    if isinstance(n, numbers.Integral) and not isinstance(n, bool):
        write = "e.g. hierarchical_groups(strategy.num_replicas_in_sync)"
        if n < 1:
            must = "a number of replicas >= 1"
            refuse("n", int(n), must=must, write=write, error=ValueError)  # int: NumPy's shows so
        return n
    if hasattr(n, "num_replicas_in_sync"):
        hint = "pass its replica count, n=strategy.num_replicas_in_sync"
    elif isinstance(n, list | tuple):
        hint = f"pass how many there are, n=len(...) (here {len(n)})"
    elif isinstance(n, str) and n.strip().isdigit():
        hint = f"write n={int(n)} without quotes"
    elif isinstance(n, float) and n.is_integer():
        hint = f"write n={int(n)}"
    else:
        hint = "write e.g. n=4, or n=strategy.num_replicas_in_sync"
    shown = f" {n!r}" if isinstance(n, str | float) else ""
    raise TypeError(f"n must be a whole number of replicas, got {type(n).__name__}{shown}: {hint}.")
