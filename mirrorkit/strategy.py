"""A real ``tf.distribute.MirroredStrategy``, with its all-reduce chosen by name.

Example:
    >>> import mirrorkit as mk
    >>> mk.make_strategy("one_device").num_replicas_in_sync >= 1
    True
"""

from __future__ import annotations

from typing import NoReturn

from mirrorkit import _gpus
from mirrorkit._algorithms import ALL_REDUCE_ALGORITHMS
from mirrorkit._validate import refuse
from mirrorkit.errors import AllReduceUnavailableError

# Class name of a MirroredStrategy's cross-device ops -> its name in ALL_REDUCE_ALGORITHMS.
_BY_CLASS = {
    "CollectiveAllReduce": "collective",
    "ReductionToOneDevice": "one_device",
    "HierarchicalCopyAllReduce": "hierarchical_copy",
    "NcclAllReduce": "nccl",
}

# One strategy per (devices, algorithm) and process; see make_strategy's docstring.
_STRATEGIES: dict[tuple[tuple[str, ...], str], object] = {}
_KEY_RANGE = 100_000  # collective group keys reserved for each strategy made here


def make_strategy(all_reduce: str = "collective", devices=None):
    """Return a real ``tf.distribute.MirroredStrategy`` whose all-reduce is chosen by name.

    Re-running a notebook cell must not break training, and TensorFlow makes that
    hard: every new ``MirroredStrategy`` numbers its collective operations from
    the same starting key, so a second strategy in the same process can collide
    with the first ("Shape mismatch in the collective instance ...", or a group
    "has size 4" when it expected 2), and after such an error every collective op
    in the process fails until it restarts. So each strategy made here gets its
    own range of keys, and asking again for the same ``(devices, all_reduce)``
    returns the strategy already made.

    Args:
        all_reduce: One of ``ALL_REDUCE_ALGORITHMS``: ``"collective"`` (default),
            ``"one_device"``, ``"hierarchical_copy"`` or ``"nccl"``.
        devices: Device names for the replicas. ``None`` means every local GPU, or
            every logical CPU device when there is no GPU (see
            :func:`mirrorkit.simulate_replicas`).

    Returns:
        A ``tf.distribute.MirroredStrategy``.

    Raises:
        TypeError: If ``all_reduce`` is not a name (for example devices passed first, or a
            ``CrossDeviceOps`` object), or ``devices`` is a single string or holds
            something else than names.
        ValueError: If ``all_reduce`` is not a known name, or ``devices`` is empty, names
            a device this process does not have, or names one device twice; or
            ``"hierarchical_copy"`` on an odd number of devices, whose last device
            TensorFlow's ``HierarchicalCopyAllReduce`` silently leaves out of the sum.
        AllReduceUnavailableError: If ``"nccl"`` is asked for where it cannot run.

    Example:
        >>> import mirrorkit as mk
        >>> strategy = mk.make_strategy("one_device")
        >>> strategy is mk.make_strategy("one_device")
        True
        >>> type(strategy).__name__
        'MirroredStrategy'
    """
    if not isinstance(all_reduce, str) or all_reduce not in ALL_REDUCE_ALGORITHMS:
        _refuse_all_reduce(all_reduce)

    import tensorflow as tf

    if devices is None:
        gpus = tf.config.list_logical_devices("GPU")
        devices = [d.name for d in (gpus or tf.config.list_logical_devices("CPU"))]
    devices = _device_names(tf, devices)
    if all_reduce == "nccl" and (reason := _nccl_unavailable_reason(tf, devices)):
        raise AllReduceUnavailableError(
            f"NCCL all-reduce cannot run here: {reason}. Use all_reduce='collective' (the "
            "default) or 'one_device' instead."
        )
    if all_reduce == "hierarchical_copy" and len(devices) % 2 and len(devices) > 1:
        raise ValueError(  # two arguments together, and chapter 1 prints this message
            f"hierarchical_copy on {len(devices)} devices would leave {devices[-1]}'s values out "
            f"of every sum, without an error: TensorFlow's HierarchicalCopyAllReduce splits the "
            f"devices into two groups of {len(devices) // 2}, and the last one is in neither. "
            "Pass an even number of devices, or use all_reduce='collective'."
        )

    key = (devices, all_reduce)
    if key not in _STRATEGIES:
        _STRATEGIES[key] = _new_strategy(tf, devices, all_reduce, len(_STRATEGIES) + 1)
    return _STRATEGIES[key]


def all_reduce_name(strategy) -> str | None:
    """The name in ``ALL_REDUCE_ALGORITHMS`` of a ``MirroredStrategy``'s all-reduce.

    Args:
        strategy: A ``tf.distribute.MirroredStrategy``.

    Returns:
        ``"collective"``, ``"one_device"``, ``"hierarchical_copy"`` or ``"nccl"``; ``None``
        for a ``cross_device_ops`` of another class.

    Example:
        >>> import mirrorkit as mk
        >>> from mirrorkit.strategy import all_reduce_name
        >>> all_reduce_name(mk.make_strategy("one_device"))
        'one_device'
    """
    return _BY_CLASS.get(type(strategy.extended._cross_device_ops).__name__)


def _refuse_all_reduce(all_reduce) -> NoReturn:
    """Refuse an ``all_reduce`` that is not one of the names, saying how to write it."""
    known = ", ".join(repr(name) for name in ALL_REDUCE_ALGORITHMS)
    if isinstance(all_reduce, str):
        close = all_reduce.strip().lower().replace("-", "_").replace(" ", "_")
        hint = f" (did you mean {close!r}?)" if close in ALL_REDUCE_ALGORITHMS else ""
        got = f"unknown all_reduce {all_reduce!r}{hint}; choose one of {known}"
        write = f"e.g. make_strategy({close if hint else 'collective'!r})"
        refuse(
            "all_reduce", must="the name of an all-reduce", got=got, write=write, error=ValueError
        )
    if (
        isinstance(all_reduce, list | tuple)
        and all_reduce
        and all(isinstance(d, str) for d in all_reduce)
    ):
        refuse(
            "all_reduce",
            must="the all-reduce's name (the first argument)",
            got=f"the list {list(all_reduce)!r}, which looks like devices",
            write=f"make_strategy(devices={list(all_reduce)!r}), passing devices by keyword",
        )
    cls = type(all_reduce).__name__
    if cls in _BY_CLASS:
        write = f"make_strategy(all_reduce={_BY_CLASS[cls]!r}), which builds it for you"
        refuse("all_reduce", must="a name", got=f"a {cls} object", write=write)
    must = f"the name of an all-reduce (choose one of {known})"
    refuse("all_reduce", all_reduce, must=must, write="e.g. make_strategy('collective')")


_EXAMPLE = "devices=['/cpu:0', '/cpu:1'], or devices=mk.simulate_replicas(2)"


def _device_names(tf, devices) -> tuple[str, ...]:
    """``devices`` as a tuple of names of distinct devices this process has, or why not."""
    if isinstance(devices, str):
        raise TypeError(
            f"devices must be a list of device names, not the string {devices!r}: write "
            f"devices=[{devices!r}] for one replica, or {_EXAMPLE}."
        )
    try:
        devices = tuple(devices)
    except TypeError:
        raise TypeError(
            f"devices must be a list of device names, got {type(devices).__name__}; "
            f"e.g. {_EXAMPLE}."
        ) from None
    if not devices:
        raise ValueError(f"devices is empty; pass device names ({_EXAMPLE}) or None for all.")
    here = {}
    for device in tf.config.list_logical_devices():
        spec = tf.DeviceSpec.from_string(device.name)
        here[(spec.device_type, spec.device_index)] = device.name.rsplit("device:", 1)[-1]
    seen = {}
    for name in devices:
        key = _device_key(tf, name, devices)
        if key not in here:
            refuse(
                "devices",
                must="names of devices this process has",
                got=f"{list(devices)!r}, but there is no device {name!r} in this process, "
                f"which has {', '.join(here.values())}",
                write="the names that mk.simulate_replicas(n) returns (call it before TensorFlow "
                "starts, since replicas need devices that exist)",
                error=ValueError,
            )
        if key in seen:
            refuse(
                "devices",
                must="a list of devices, one per replica",
                got=f"{list(devices)!r}, which names {here[key]} twice "
                f"({seen[key]!r} and {name!r})",
                write="each device once, since each replica needs a device of its own",
                error=ValueError,
            )
        seen[key] = name
    return devices


def _device_key(tf, name, devices: tuple) -> tuple[str, int]:
    """(type, index) of a local device name such as '/cpu:0' or '/device:GPU:1', or why not."""
    if not isinstance(name, str):
        refuse("each device", must="a name such as '/cpu:0'", got=repr(name), write=_EXAMPLE)
    try:
        spec = tf.DeviceSpec.from_string(name)
    except ValueError:
        spec = None
    if spec is None or spec.device_type is None or spec.device_index is None:
        refuse(
            "devices",
            must="a list of device names",
            got=f"{list(devices)!r}, where {name!r} is not a device name",
            write=f"the type and the index, like '/cpu:0' or '/gpu:1'; {_EXAMPLE}",
            error=ValueError,
        )
    if spec.job not in (None, "localhost"):
        refuse(
            "devices",
            must="devices of this machine (make_strategy builds a one-machine MirroredStrategy)",
            got=f"{list(devices)!r}, where {name!r} is on job {spec.job!r}",
            write="devices of this machine; for several machines use "
            "MultiWorkerMirroredStrategy (mk.LocalCluster runs one on this machine)",
            error=ValueError,
        )
    return spec.device_type.upper(), spec.device_index


def _new_strategy(tf, devices: tuple[str, ...], all_reduce: str, number: int):
    # MirroredStrategy starts its collective group keys at 1 + _collective_key_base,
    # a class attribute TensorFlow's own tests use to keep strategies apart. Giving
    # each strategy made here its own range keeps it clear of every other strategy in
    # the process, including a plain tf.distribute.MirroredStrategy() (base 0). It is private,
    # but no public API sets the keys: the constructor and CommunicationOptions take none.
    cls = tf.distribute.MirroredStrategy
    saved = cls.__dict__.get("_collective_key_base", 0)
    cls._collective_key_base = _KEY_RANGE * number
    try:
        return cls(devices=list(devices), cross_device_ops=_cross_device_ops(tf, all_reduce))
    finally:
        cls._collective_key_base = saved


def _cross_device_ops(tf, all_reduce: str):
    if all_reduce == "collective":
        return None  # MirroredStrategy's own default
    if all_reduce == "one_device":
        return tf.distribute.ReductionToOneDevice()
    if all_reduce == "hierarchical_copy":
        return tf.distribute.HierarchicalCopyAllReduce()
    return tf.distribute.NcclAllReduce()


def _nccl_unavailable_reason(tf, devices: tuple[str, ...]) -> str | None:
    """Why NCCL cannot run on ``devices`` here, or None when it can."""
    not_gpu = [d for d in devices if "GPU" not in d.upper()]
    cpu_reason = (
        "NCCL is NVIDIA's GPU-to-GPU library and TensorFlow has no NcclAllReduce kernel for "
        "CPUs, so training would fail at its first step"
    )
    physical = tf.config.list_physical_devices("GPU")
    if not physical:
        reason = f"this machine has no GPU. {cpu_reason}"
    elif not_gpu:
        reason = f"these replicas are not on GPUs: {', '.join(not_gpu)}. {cpu_reason}"
    elif shared := _gpus.shared_physical_gpus(devices, _logical_per_physical(tf, physical)):
        reason = _shared_gpu_reason(shared)
    elif not tf.test.is_built_with_cuda():
        reason = f"this TensorFlow build has no CUDA support. {cpu_reason}"
    else:
        return None
    return reason


def _logical_per_physical(tf, physical) -> list[int]:
    """How many logical GPUs each physical GPU holds in this process (0 when hidden)."""
    visible = tf.config.get_visible_devices("GPU")
    return [
        len(tf.config.get_logical_device_configuration(gpu) or [None]) if gpu in visible else 0
        for gpu in physical
    ]


def _shared_gpu_reason(shared: dict[int, tuple[str, ...]]) -> str:
    groups = []
    for index, names in shared.items():
        short = [name.rsplit("device:", 1)[-1] for name in names]
        listed = ", ".join(short[:-1]) + f" and {short[-1]}"
        groups.append(f"{listed} are logical GPUs on the same physical GPU {index}")
    return (
        f"replicas {'; '.join(groups)}, and NCCL needs each replica on a physical GPU of its "
        'own (two on one GPU stop it with "Duplicate GPU detected")'
    )
