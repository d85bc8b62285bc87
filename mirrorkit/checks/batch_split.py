"""How a batch is split across replicas: the arithmetic of TensorFlow's distributed datasets.

This module imports no TensorFlow, so that it runs where TensorFlow cannot.

Example:
    >>> from mirrorkit.checks.batch_split import replica_batch_sizes
    >>> replica_batch_sizes(10, 4)
    [3, 3, 3, 1]
"""

from __future__ import annotations

from mirrorkit._validate import require_count


def replica_batch_sizes(examples: int, num_replicas: int) -> list[int]:
    """Each replica's examples when ``experimental_distribute_dataset`` splits one batch.

    TensorFlow cuts a batch of ``examples`` along its first dimension into pieces of
    ``ceil(examples / num_replicas)``, in replica order, so the last replicas get what is
    left: fewer examples, or none at all. A short last batch is split the same way, by its
    own size. (Measured with a ``MirroredStrategy`` of 4 replicas: 10 examples give
    ``[3, 3, 3, 1]``, 6 give ``[2, 2, 2, 0]``, a last batch of 5 gives ``[2, 2, 1, 0]``.)

    Args:
        examples: The examples in the batch (the global batch, or a short last batch).
        num_replicas: The strategy's ``num_replicas_in_sync``, at least 1.

    Returns:
        One count per replica, in replica order; they add up to ``examples``.

    Raises:
        TypeError: If either argument is not an int.
        ValueError: If ``examples`` is negative or ``num_replicas`` below 1.

    Example:
        >>> replica_batch_sizes(8, 4)
        [2, 2, 2, 2]
        >>> replica_batch_sizes(6, 4)
        [2, 2, 2, 0]
        >>> replica_batch_sizes(1, 2)
        [1, 0]
    """
    require_count("examples", examples, minimum=0, write="examples=32")
    require_count("num_replicas", num_replicas, write="num_replicas=4")
    size = -(-examples // num_replicas)
    return [min(size, max(0, examples - replica * size)) for replica in range(num_replicas)]


def per_replica_batch(global_batch: int, num_replicas: int) -> int:
    """The examples a replica's full batch holds: the largest piece of a global batch.

    Example:
        >>> per_replica_batch(10, 4)
        3
    """
    return replica_batch_sizes(global_batch, num_replicas)[0]


def distributed_steps(batches: int, num_replicas: int, *, per_replica_input: bool) -> int:
    """The steps a dataset of ``batches`` batches gives once distributed.

    ``experimental_distribute_dataset`` splits each (global) batch into one step;
    ``distribute_datasets_from_function`` hands each (per-replica) batch whole to one
    replica in turn, so a step takes ``num_replicas`` of them and a last step may take fewer.

    Example:
        >>> distributed_steps(5, 4, per_replica_input=False)
        5
        >>> distributed_steps(5, 4, per_replica_input=True)
        2
    """
    require_count("batches", batches, minimum=0, write="batches=10")
    require_count("num_replicas", num_replicas, write="num_replicas=4")
    return -(-batches // num_replicas) if per_replica_input else batches


def even_global_batch(global_batch: int, num_replicas: int) -> int:
    """The next global batch above ``global_batch`` that divides evenly by the replicas.

    Example:
        >>> even_global_batch(10, 4)
        12
    """
    return (global_batch // num_replicas + 1) * num_replicas
