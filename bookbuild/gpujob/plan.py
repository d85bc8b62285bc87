"""What the gpu job checks on a machine with ``gpus`` physical GPUs, decided before it runs.

Every function here is pure: the number of GPUs (and the book's replica count) in, the cases
out. The TensorFlow side (:mod:`bookbuild.gpujob.probe`) carries them out.

Example:
    >>> [(case.replicas, case.kind) for case in replica_cases(1, book_replicas=4)]
    [(1, 'gpus'), (2, 'logical_gpus'), (4, 'logical_gpus')]
"""

from __future__ import annotations

from typing import NamedTuple

NCCL = "nccl"
# How a wrong count of GPUs is refused: the job runs only where nvidia-smi lists one or more.
GPUS = "gpus=1 (the physical GPUs nvidia-smi lists)"


class ReplicaCase(NamedTuple):
    """One device decision to carry out in a fresh process.

    Attributes:
        replicas: How many replicas ``mirrorkit.simulate_replicas`` is asked for.
        kind: What it must give (``mirrorkit.plan_replicas``'s kinds): ``"gpus"`` (a whole
            GPU each) or ``"logical_gpus"`` (GPUs split into logical GPUs).
    """

    replicas: int
    kind: str


def replica_cases(gpus: int, book_replicas: int) -> tuple[ReplicaCase, ...]:
    """The replica counts whose device decision the job checks: 2, the book's, and one per GPU.

    A count up to ``gpus`` must get whole GPUs (the others hidden); a larger one, the GPUs
    split into logical GPUs. So one GPU is split, and several GPUs are used whole.

    Args:
        gpus: Physical GPUs nvidia-smi lists, at least 1.
        book_replicas: The chapters' replica count (``replicas`` in jupyter_book.toml).

    Raises:
        TypeError: If ``gpus`` is not an int.
        ValueError: If ``gpus`` is not 1 or more.

    Example:
        >>> [(case.replicas, case.kind) for case in replica_cases(8, book_replicas=4)]
        [(2, 'gpus'), (4, 'gpus'), (8, 'gpus')]
        >>> [(case.replicas, case.kind) for case in replica_cases(3, book_replicas=4)]
        [(2, 'gpus'), (3, 'gpus'), (4, 'logical_gpus')]
    """
    from mirrorkit._validate import require_count  # in the environments that run the job

    gpus = require_count("gpus", gpus, write=GPUS)
    counts = sorted({2, book_replicas, gpus})
    return tuple(
        ReplicaCase(replicas=n, kind="gpus" if n <= gpus else "logical_gpus") for n in counts
    )


def all_reduce_replicas(gpus: int, book_replicas: int) -> int:
    """The replicas the all-reduce checks and the benchmark run on.

    Every GPU whole where there are two or more (NCCL can run), else the book's replica
    count on one GPU split (as a chapter gets it on Colab's one GPU).

    Example:
        >>> all_reduce_replicas(1, book_replicas=4), all_reduce_replicas(2, book_replicas=4)
        (4, 2)
    """
    from mirrorkit._validate import require_count  # in the environments that run the job

    return gpus if require_count("gpus", gpus, write=GPUS) >= 2 else book_replicas


def skip_reason(algorithm: str, gpus: int) -> str | None:
    """Why the job does not run ``algorithm`` on :func:`all_reduce_replicas`, or None.

    NCCL needs a physical GPU per replica; with one GPU the replicas share it, and
    ``mirrorkit`` must then refuse NCCL too (the job checks that it does).

    Example:
        >>> print(skip_reason("nccl", 1))
        NCCL needs two or more physical GPUs, one replica on each; this machine has 1, split into logical GPUs
        >>> skip_reason("nccl", 2) is None, skip_reason("collective", 1) is None
        (True, True)
    """  # noqa: E501
    from mirrorkit._validate import require_count  # in the environments that run the job

    if algorithm == NCCL and require_count("gpus", gpus, write=GPUS) < 2:
        return (
            "NCCL needs two or more physical GPUs, one replica on each; this machine has "
            f"{gpus}, split into logical GPUs"
        )
    return None


def expected_sum(replicas: int) -> float:
    """What a SUM all-reduce of ``replica_id + 1`` gives every replica: 1 + 2 + ... + n.

    Example:
        >>> expected_sum(4)
        10.0
    """
    return replicas * (replicas + 1) / 2


def benchmark_replicas(gpus: int, book_replicas: int) -> tuple[int, ...]:
    """The replica counts of the chapter 5 benchmark: 2 and :func:`all_reduce_replicas`.

    Example:
        >>> benchmark_replicas(1, book_replicas=4), benchmark_replicas(2, book_replicas=4)
        ((2, 4), (2,))
    """
    return tuple(sorted({2, all_reduce_replicas(gpus, book_replicas)}))
