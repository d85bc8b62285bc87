"""The all-reduce algorithms ``mk.make_strategy`` offers, by name: no TensorFlow needed.

Example:
    >>> from mirrorkit._algorithms import ALL_REDUCE_ALGORITHMS
    >>> list(ALL_REDUCE_ALGORITHMS)
    ['collective', 'one_device', 'hierarchical_copy', 'nccl']
"""

from __future__ import annotations

#: Readable all-reduce names -> what each one does.
ALL_REDUCE_ALGORITHMS: dict[str, str] = {
    "collective": (
        "TensorFlow's default for MirroredStrategy: collective all-reduce ops "
        "(a ring on CPUs, and on GPUs when logical GPUs outnumber physical ones because "
        "a GPU is split; NCCL when every replica is a whole physical GPU)."
    ),
    "one_device": (
        "tf.distribute.ReductionToOneDevice: copy every replica's value to one device, "
        "reduce there, copy the result back."
    ),
    "hierarchical_copy": (
        "tf.distribute.HierarchicalCopyAllReduce: reduce within groups of devices, then "
        "across groups (designed for 8-GPU machines)."
    ),
    "nccl": "tf.distribute.NcclAllReduce: NVIDIA's NCCL library; GPUs only.",
}
