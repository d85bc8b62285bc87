"""The copies each all-reduce algorithm makes between replicas, as diagrams draw them."""

from __future__ import annotations


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

    Example:
        >>> hierarchical_groups(4)
        [[0, 1], [2, 3]]
    """
    half = max(n // 2, 1)
    return [list(range(0, half)), list(range(half, n))]
