"""Which examples each worker trains on under tf.data's auto-shard policies, in plain Python.

``MultiWorkerMirroredStrategy.experimental_distribute_dataset`` runs the whole input pipeline
on every worker and cuts it down as the dataset's ``auto_shard_policy`` says (:data:`POLICIES`;
:func:`worker_batches` says how each cuts). Under ``FILE`` and ``OFF`` a worker's batches are
split into the pieces of TensorFlow's rebatching (:func:`rebatch_sizes`). This module models
one replica per worker (a worker without GPUs, as in chapter 6) and imports no TensorFlow, so it
runs where TensorFlow cannot.

Example:
    >>> from mirrorkit.checks.auto_shard import worker_batches
    >>> worker_batches(list(range(16)), 4, num_workers=2, worker=1, policy="DATA")
    [[2, 3], [6, 7], [10, 11], [14, 15]]
"""

from __future__ import annotations

from collections.abc import Sequence

from mirrorkit._validate import refuse, require_choice, require_count, require_items
from mirrorkit.checks.batch_split import replica_batch_sizes

POLICIES = ("AUTO", "FILE", "DATA", "OFF")
"""The values of ``tf.data.experimental.AutoShardPolicy`` this module models."""


def rebatch_sizes(global_batch: int, num_workers: int, worker: int) -> list[int]:
    """The piece sizes one worker cuts its batches into under ``FILE`` and ``OFF``.

    TensorFlow's ``batch_sizes_for_worker``: the global batch split into ``num_workers`` sizes
    that differ by at most one, larger first, rotated left by the worker's index. A worker
    takes them in a cycle, a piece never reaching into the next batch.

    Args:
        global_batch: The batch size given to ``.batch()``, 1 or more.
        num_workers: The workers in the cluster (one replica each), 1 or more.
        worker: This worker's index, from 0.

    Returns:
        ``num_workers`` sizes adding up to ``global_batch``.

    Raises:
        TypeError: If an argument is not an int.
        ValueError: If an argument is out of range.

    Example:
        >>> rebatch_sizes(5, 2, 0), rebatch_sizes(5, 2, 1), rebatch_sizes(6, 4, 3)
        ([3, 2], [2, 3], [1, 2, 2, 1])
    """
    batch = require_count("global_batch", global_batch, write="global_batch=4")
    workers = require_count("num_workers", num_workers, write="num_workers=2")
    index = require_count(
        "worker", worker, minimum=0, maximum=workers - 1, write=f"worker={workers - 1}"
    )
    whole, extra = divmod(batch, workers)
    sizes = [whole + 1] * extra + [whole] * (workers - extra)
    return sizes[index:] + sizes[:index]


def _batches(examples: list, global_batch: int) -> list[list]:
    return [
        examples[start : start + global_batch] for start in range(0, len(examples), global_batch)
    ]


def _rebatch(batches: list[list], sizes: list[int]) -> list[list]:
    """Cut each batch into pieces of ``sizes``, taken in a cycle that runs on across batches.

    A piece takes what is left of its batch if that is less than its size; a piece of size 0
    is an empty batch; when a batch is used up, the next piece of size 1 or more starts on
    the next batch.
    """
    pieces, position = [], 0
    for batch in batches:
        left = batch
        while True:
            size = sizes[position]
            if size and not left:
                break
            pieces.append(left[:size])
            left = left[size:]
            position = (position + 1) % len(sizes)
    return pieces


def worker_batches(
    examples: Sequence | None = None,
    global_batch: int = 4,
    *,
    num_workers: int,
    worker: int,
    policy: str = "AUTO",
    files: Sequence[Sequence] | None = None,
) -> list[list]:
    """The local batches ``worker`` trains on, in order, for one pass over the data.

    Give either ``examples`` (a dataset not read from files, such as ``Dataset.range(16)``)
    or ``files`` (one list of examples per file, in the order the files are listed and read
    one after the other). The policies:

    * ``FILE``: file ``i`` goes to worker ``i % num_workers``; each worker reads only its
      files, batches them by the global batch and cuts each batch into :func:`rebatch_sizes`.
    * ``DATA``: every worker reads everything; each global batch is cut into ``num_workers``
      pieces as one worker cuts a batch for its replicas
      (:func:`~mirrorkit.checks.batch_split.replica_batch_sizes`), and worker ``w`` keeps piece
      ``w``: the last workers may get fewer examples, or none (4 on 3 workers: 2, 2, 0).
    * ``OFF``: nothing is cut away: every worker trains on every example, in the pieces of
      :func:`rebatch_sizes`.
    * ``AUTO`` (the default): ``FILE`` for a dataset read from files, ``DATA`` otherwise.

    Args:
        examples: The dataset's examples, in order.
        global_batch: The batch size given to ``.batch()``, 1 or more.
        num_workers: The workers in the cluster (one replica each), 1 or more.
        worker: This worker's index, from 0.
        policy: One of :data:`POLICIES`.
        files: The examples of each file, for a dataset read from files.

    Returns:
        This worker's local batches, in the order its pipeline yields them (some may be empty).

    Raises:
        TypeError: If an argument is of the wrong kind.
        ValueError: If an argument is out of range, both or neither of ``examples`` and
            ``files`` are given, ``FILE`` is asked of a dataset not read from files, or there
            are fewer files than workers under ``FILE`` (TensorFlow then fails with "Could
            not apply FILE based sharding").

    Example:
        >>> worker_batches(list(range(16)), 4, num_workers=2, worker=0, policy="OFF")[:3]
        [[0, 1], [2, 3], [4, 5]]
        >>> worker_batches(files=[[0, 1, 2], [10, 11], [20]], global_batch=2, num_workers=2,
        ...                worker=0, policy="FILE")
        [[0], [1], [2], [20]]
    """
    sizes = rebatch_sizes(global_batch, num_workers, worker)
    require_choice("policy", policy, POLICIES, write="policy='DATA'")
    if (examples is None) == (files is None):
        refuse(
            "examples",
            must="given, or files instead (not both)",
            got="both" if examples is not None else "neither",
            write="worker_batches(list(range(16)), 4, ...) or worker_batches(files=[[0, 1]], ...)",
            error=ValueError,
        )
    if files is None:
        data = require_items("examples", examples, write="examples=list(range(16))")
        if policy == "FILE":
            refuse(
                "policy",
                policy,
                must="'AUTO', 'DATA' or 'OFF' for a dataset not read from files",
                write="policy='DATA'",
                error=ValueError,
            )
        policy = "DATA" if policy == "AUTO" else policy
        parts = [data]
    else:
        parts = [
            require_items(f"files[{i}]", part, write="files=[[0, 1], [2, 3]]", allow_empty=True)
            for i, part in enumerate(require_items("files", files, write="files=[[0, 1], [2]]"))
        ]
        policy = "FILE" if policy == "AUTO" else policy
        if policy == "FILE" and len(parts) < num_workers:
            refuse(
                "files",
                must=f"at least one per worker under FILE sharding ({num_workers} workers)",
                got=f"{len(parts)} files",
                write="policy='DATA', or more files",
                error=ValueError,
            )
    if policy == "FILE":
        mine = [example for part in parts[worker::num_workers] for example in part]
        return _rebatch(_batches(mine, global_batch), sizes)
    everything = [example for part in parts for example in part]
    if policy == "OFF":
        return _rebatch(_batches(everything, global_batch), sizes)
    local = []
    for batch in _batches(everything, global_batch):  # cut as one worker cuts for its replicas
        pieces = replica_batch_sizes(len(batch), num_workers)
        start = sum(pieces[:worker])
        local.append(batch[start : start + pieces[worker]])
    return local
