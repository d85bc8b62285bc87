"""Replicas on any machine: whole GPUs, GPUs split into logical GPUs, or logical CPU devices.

Example:
    >>> import mirrorkit as mk
    >>> mk.plan_replicas(2, [("Tesla T4", 15360)]).kind
    'logical_gpus'
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from mirrorkit import _gpus
from mirrorkit._validate import refuse, require_count, require_flag, require_strategy
from mirrorkit.errors import ReplicaSetupError

#: Smallest memory a logical GPU gets when a physical GPU is split into several replicas.
MIN_REPLICA_MEMORY_MIB = 1024
#: Share of a GPU's memory given to its logical GPUs; the rest stays free for the CUDA
#: context and the cuDNN/cuBLAS workspaces, which live outside TensorFlow's allocator.
USABLE_MEMORY_PERCENT = 90
#: The three ways :func:`plan_replicas` can give the replicas.
KINDS = ("gpus", "logical_gpus", "cpus")
#: The most replicas :func:`simulate_replicas` and :func:`plan_replicas` make.
MAX_REPLICAS = 64

_RESTART_HINT = (
    "Restart the kernel (Kernel > Restart Kernel... in JupyterLab, or start a new Python "
    "process) and call simulate_replicas({n}) before anything else uses TensorFlow."
)
_TARGETS = {"gpus": "GPUs", "logical_gpus": "logical GPUs", "cpus": "logical CPU devices"}

# (n, use_gpus) -> the plan simulate_replicas carried out in this process, so that a
# re-run gives the same devices and the same line without asking nvidia-smi again.
_CARRIED_OUT: dict[tuple[int, bool], ReplicaPlan] = {}


@dataclass(frozen=True)
class ReplicaPlan:
    """How :func:`simulate_replicas` gives ``replicas`` replicas, as :func:`plan_replicas` decides.

    Attributes:
        replicas: How many replicas.
        kind: ``"gpus"`` (a whole physical GPU per replica), ``"logical_gpus"`` (physical
            GPUs split into logical GPUs) or ``"cpus"`` (the CPU split into logical devices).
        split: How many replicas each physical GPU holds, in TensorFlow's order; ``0``
            means the GPU is hidden from TensorFlow in this process. Empty without GPUs.
        memory_limit_mib: Memory of each logical GPU (``"logical_gpus"`` only, else ``None``).
        message: The one line :func:`simulate_replicas` prints about it.

    Example:
        >>> import mirrorkit as mk
        >>> plan = mk.plan_replicas(4, [("Tesla T4", 15360)])
        >>> plan.kind, plan.split, plan.memory_limit_mib
        ('logical_gpus', (4,), 3456)
        >>> plan.devices
        ('/device:GPU:0', '/device:GPU:1', '/device:GPU:2', '/device:GPU:3')
    """

    replicas: int
    kind: str
    split: tuple[int, ...]
    memory_limit_mib: int | None
    message: str

    @property
    def devices(self) -> tuple[str, ...]:
        """The logical device names TensorFlow gives the replicas, in replica order."""
        device = "CPU" if self.kind == "cpus" else "GPU"
        return tuple(f"/device:{device}:{i}" for i in range(self.replicas))


def _replica_count(n, call: str = "simulate_replicas") -> int:
    """``n`` if it is a replica count from 1 to ``MAX_REPLICAS``, or a refusal naming ``call``."""
    if isinstance(n, bool) or not isinstance(n, int):
        refuse("n", n, must="an int number of replicas", write=f"e.g. {call}(4)")
    if n < 1:
        raise ValueError(
            f"n must be at least 1 replica, got {n}: ask for 1 or more, e.g. {call}(4)."
        )
    if n > MAX_REPLICAS:
        raise ValueError(
            f"n={n} replicas is more than mirrorkit simulates ({MAX_REPLICAS}): each one is a "
            "device with its own memory and threads, and every lesson shows the same with "
            f"2 to 8. Ask for at most {MAX_REPLICAS}."
        )
    return n


def _gpu_list(gpus) -> list[tuple[str | None, int | None]]:
    """``gpus`` as a list of (name, MiB) pairs, or a sentence saying how to write it."""
    example = "gpus=[('Tesla T4', 15360)], one (name, memory in MiB) pair per GPU"
    if isinstance(gpus, str | bytes | Mapping) or not isinstance(gpus, Iterable):
        refuse("gpus", must="a list of pairs", got=type(gpus).__name__, write=example)
    pairs = list(gpus)
    if pairs and len(pairs) == 2 and isinstance(pairs[0], str) and not isinstance(pairs[1], str):
        got = f"the single pair {tuple(pairs)!r}"
        refuse(
            "gpus", must="a list of pairs", got=got, write=f"gpus=[{tuple(pairs)!r}] for one GPU"
        )
    result = []
    for pair in pairs:
        if isinstance(pair, str) or not isinstance(pair, Sequence) or len(pair) != 2:
            got = f"a list that holds {pair!r}, not a (name, memory) pair"
            refuse("gpus", must="a list of (name, memory) pairs", got=got, write=example)
        name, memory = pair
        if memory is not None and (isinstance(memory, bool) or not isinstance(memory, int)):
            refuse(
                "gpus",
                must="a list of (name, memory) pairs, the memory an int number of MiB or None "
                "when unknown",
                got=f"a list that holds {pair!r}, whose memory is {type(memory).__name__} "
                f"{memory!r}",
                write=f"e.g. ({name!r}, 15360)",
            )
        result.append((name, memory))
    return result


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _gpu(index: int, name: str | None, memory: int | None) -> str:
    details = [str(d) for d in (name, None if memory is None else f"{memory} MiB") if d]
    return f"GPU {index} ({', '.join(details)})" if details else f"GPU {index}"


def _gpu_runs(names: Sequence[str | None]) -> str:
    """'GPUs 0-3 (Tesla T4)' for consecutive GPUs of the same model."""
    parts, start = [], 0
    for end in range(1, len(names) + 1):
        if end < len(names) and names[end] == names[start]:
            continue
        label = _gpu(start, names[start], None)
        if end - start > 1:
            label = label.replace(f"GPU {start}", f"GPUs {start}-{end - 1}", 1)
        parts.append(label)
        start = end
    return ", ".join(parts)


def _hidden(indices: Sequence[int], why: str = "") -> str:
    """'; GPUs 4-7 are hidden ...' for the GPUs no replica uses."""
    indices = list(indices)
    if not indices:
        return ""
    runs: list[list[int]] = []
    for i in indices:
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    listed = ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)
    gpus = f"GPU {listed} is" if len(indices) == 1 else f"GPUs {listed} are"
    return f"; {gpus} hidden from TensorFlow in this process{why}"


def _spread(n: int, usable: Sequence[int], min_mib: int) -> tuple[int, ...] | None:
    """Replicas per GPU, as even as memory allows; None if the GPUs cannot hold n."""
    capacity = [mib // min_mib for mib in usable]
    if sum(capacity) < n:
        return None
    counts = [0] * len(usable)
    for _ in range(n):
        # The least loaded GPU with room; among equals, the one whose replicas would get
        # the most memory, then the first.
        i = min(
            (i for i in range(len(usable)) if counts[i] < capacity[i]),
            key=lambda i: (counts[i], -(usable[i] // (counts[i] + 1)), i),
        )
        counts[i] += 1
    return tuple(counts)


def plan_replicas(
    n: int,
    gpus: Sequence[tuple[str | None, int | None]] = (),
    *,
    use_gpus: bool = True,
    min_memory_mib: int = MIN_REPLICA_MEMORY_MIB,
    memory_note: str | None = None,
) -> ReplicaPlan:
    """Decide how to give ``n`` replicas on a machine with ``gpus``; pure, TensorFlow untouched.

    * ``n`` or more GPUs: one whole GPU per replica, the first ``n``; the others are
      hidden so that a default ``MirroredStrategy`` has exactly ``n`` replicas.
    * Fewer GPUs: each is split into logical GPUs, replicas spread as evenly as memory
      allows, every logical GPU getting the same memory (at least ``min_memory_mib``, out
      of ``USABLE_MEMORY_PERCENT`` percent of each GPU's memory): replicas hold the same
      variables and do the same work, so the smallest one decides what fits anyway.
    * No GPU, ``use_gpus=False``, memory unknown, or too little: ``n`` logical CPU
      devices, with every GPU hidden so that strategies really use them.

    Args:
        n: How many replicas, a positive ``int``.
        gpus: ``(model name or None, memory in MiB or None)`` for each physical GPU, in
            TensorFlow's order.
        use_gpus: ``False`` always simulates the replicas on the CPU.
        min_memory_mib: The least memory a logical GPU may have.
        memory_note: Why memory is unknown, quoted in the message.

    Returns:
        A :class:`ReplicaPlan`; its ``message`` names the numbers and the reason.

    Raises:
        TypeError: If ``n`` or ``min_memory_mib`` is not an ``int``, ``use_gpus`` is not a
            bool, or ``gpus`` is not a list of ``(name, memory)`` pairs.
        ValueError: If ``n`` or ``min_memory_mib`` is smaller than 1, or ``n`` is more
            than ``MAX_REPLICAS``.

    Example:
        >>> import mirrorkit as mk
        >>> print(mk.plan_replicas(4).message)
        4 replicas on 4 logical CPU devices (this machine has no GPU)
        >>> print(mk.plan_replicas(4, [("Tesla T4", 15360)]).message)
        4 replicas on 4 logical GPUs: GPU 0 (Tesla T4, 15360 MiB) split into 4 of 3456 MiB
        >>> plan = mk.plan_replicas(4, [("T4", 15360)] * 3)
        >>> plan.split, plan.memory_limit_mib
        ((2, 1, 1), 6912)
        >>> print(mk.plan_replicas(4, [("MX150", 2048)]).message)  # doctest: +NORMALIZE_WHITESPACE
        4 replicas on 4 logical CPU devices: GPU 0 (MX150, 2048 MiB) cannot hold 4 replicas
        of at least 1024 MiB each (90% of its memory is usable); the GPU is hidden from
        TensorFlow in this process
    """
    _replica_count(n, "plan_replicas")
    write = f"a number of MiB, e.g. min_memory_mib={MIN_REPLICA_MEMORY_MIB}"
    require_count("min_memory_mib", min_memory_mib, write=write)
    require_flag("use_gpus", use_gpus, effect="to simulate the replicas on the CPU")
    gpus = _gpu_list(gpus)
    count = len(gpus)
    replicas = _plural(n, "replica")
    on_cpus = f"{replicas} on {_plural(n, 'logical CPU device')}"
    if not gpus:
        message = f"{on_cpus} (this machine has no GPU)"
        return ReplicaPlan(
            replicas=n, kind="cpus", split=(), memory_limit_mib=None, message=message
        )

    every_gpu = "the GPU is" if count == 1 else f"the {count} GPUs are"

    def on_the_cpu(why: str) -> ReplicaPlan:
        message = f"{on_cpus}{why}; {every_gpu} hidden from TensorFlow in this process"
        return ReplicaPlan(
            replicas=n, kind="cpus", split=(0,) * count, memory_limit_mib=None, message=message
        )

    if not use_gpus:
        return on_the_cpu(" (use_gpus=False)")
    if n <= count:
        where = _plural(n, "GPU") if n == count else f"{n} of the {count} GPUs"
        message = f"{replicas} on {where}: {_gpu_runs([name for name, _ in gpus[:n]])}"
        message += _hidden(range(n, count))
        split = (1,) * n + (0,) * (count - n)
        return ReplicaPlan(
            replicas=n, kind="gpus", split=split, memory_limit_mib=None, message=message
        )

    labels = [_gpu(i, name, memory) for i, (name, memory) in enumerate(gpus)]
    described = " and ".join([", ".join(labels[:-1]), labels[-1]] if count > 1 else labels)
    its = "its" if count == 1 else "their"
    if any(memory is None for _, memory in gpus):
        note = f" ({memory_note})" if memory_note else ""
        return on_the_cpu(
            f": {described} would have to be split into {n} logical GPUs, but {its} "
            f"memory is unknown{note}"
        )
    usable = [memory * USABLE_MEMORY_PERCENT // 100 for _, memory in gpus]
    split = _spread(n, usable, min_memory_mib)
    if split is None:
        return on_the_cpu(
            f": {described} cannot hold {n} replicas of at least {min_memory_mib} MiB each "
            f"({USABLE_MEMORY_PERCENT}% of {its} memory is usable)"
        )
    limit = min(mib // k for mib, k in zip(usable, split, strict=True) if k)
    used = [i for i, k in enumerate(split) if k]
    if len(used) == 1:
        (i,) = used
        where = f"{_gpu(i, *gpus[i])} split into {n} of {limit} MiB"
    else:
        where = f"of {limit} MiB each: " + ", ".join(
            f"{split[i]} on {_gpu(i, *gpus[i])}" for i in used
        )
    message = f"{replicas} on {n} logical GPUs{':' if len(used) == 1 else ''} {where}"
    too_small = f" (less than {min_memory_mib} MiB usable)"
    message += _hidden([i for i, k in enumerate(split) if not k], too_small)
    return ReplicaPlan(
        replicas=n, kind="logical_gpus", split=split, memory_limit_mib=limit, message=message
    )


def simulate_replicas(n: int, *, use_gpus: bool = True, report: bool = True) -> tuple[str, ...]:
    """Give ``tf.distribute`` exactly ``n`` replicas on any machine, and say how in one line.

    With ``n`` or more GPUs the replicas run on the first ``n`` (with memory growth;
    the others are hidden from TensorFlow in this process). With fewer GPUs each one is
    split into logical GPUs of at least ``MIN_REPLICA_MEMORY_MIB`` (their memory is read
    with ``nvidia-smi``). Otherwise (no GPU, ``use_gpus=False``, memory unknown or too
    small) the host CPU is split into ``n`` logical devices and any GPU is hidden, so a
    default ``tf.distribute.MirroredStrategy()`` and :func:`mirrorkit.make_strategy`
    have ``n`` replicas in every case. :func:`plan_replicas` makes the decision.

    TensorFlow fixes its devices when its runtime starts, so call this before
    creating tensors or strategies. Calling it again with the same ``n`` is harmless:
    the same devices, the same line.

    Args:
        n: How many replicas, a positive ``int``.
        use_gpus: Use GPUs when present. ``False`` forces CPU simulation.
        report: Print the line saying where the replicas run and why.

    Returns:
        The device names the replicas run on, in replica order.

    Raises:
        TypeError: If ``n`` is not an ``int``, or ``use_gpus`` or ``report`` not a bool.
        ValueError: If ``n`` is smaller than 1 or more than ``MAX_REPLICAS``.
        ReplicaSetupError: If TensorFlow already started with other devices, or could
            not create the logical GPUs.

    Example:
        >>> import mirrorkit as mk
        >>> mk.simulate_replicas(1)  # on a machine without a GPU
        1 replica on 1 logical CPU device (this machine has no GPU)
        ('/device:CPU:0',)
    """
    _replica_count(n)
    require_flag("use_gpus", use_gpus, effect="to simulate the replicas on the CPU")
    require_flag("report", report, effect="to print nothing")

    import tensorflow as tf

    physical = tf.config.list_physical_devices("GPU")
    plan = _CARRIED_OUT.get((n, use_gpus))
    if plan is None or len(plan.split) != len(physical):
        plan = _plan_here(tf, n, physical, use_gpus)
    devices = _carry_out(tf, plan, physical)
    _CARRIED_OUT[(n, use_gpus)] = plan
    message = plan.message
    if len(devices) < n:
        message = f"only {len(devices)} replica(s), fewer than the {n} asked for: {message}"
    if report:
        print(message)
    return devices


def _plan_here(tf, n: int, physical, use_gpus: bool) -> ReplicaPlan:
    names = [_model_name(tf, gpu) for gpu in physical]
    if not use_gpus or n <= len(physical):
        return plan_replicas(n, [(name, None) for name in names], use_gpus=use_gpus)
    # Splitting needs each GPU's memory, which TensorFlow only knows once it has started.
    smi, note = _gpus.read_smi()
    gpus, why = _gpus.match_gpus(
        names,
        smi,
        os.environ.get("CUDA_VISIBLE_DEVICES"),
        os.environ.get("CUDA_DEVICE_ORDER"),
        ordinals=[int(gpu.name.rsplit(":", 1)[-1]) for gpu in physical],
    )
    return plan_replicas(n, gpus, use_gpus=use_gpus, memory_note=note or why)


def _model_name(tf, gpu) -> str | None:
    try:  # reads the driver's description; does not start the runtime
        return tf.config.experimental.get_device_details(gpu).get("device_name")
    except (ValueError, RuntimeError):
        return None


def _carry_out(tf, plan: ReplicaPlan, physical) -> tuple[str, ...]:
    kind = "CPU" if plan.kind == "cpus" else "GPU"
    used = [gpu for gpu, k in zip(physical, plan.split, strict=True) if k]
    try:
        # Each call below is a no-op when the setting is already this one, and raises
        # RuntimeError when TensorFlow has started with another.
        if physical:
            tf.config.set_visible_devices(used, "GPU")
        if plan.kind == "cpus":
            cpu = tf.config.list_physical_devices("CPU")[0]
            config = [tf.config.LogicalDeviceConfiguration() for _ in range(plan.replicas)]
            tf.config.set_logical_device_configuration(cpu, config)
        elif plan.kind == "gpus":
            for gpu in used:
                tf.config.experimental.set_memory_growth(gpu, True)
        else:
            for gpu, k in zip(physical, plan.split, strict=True):
                if k:
                    limit = plan.memory_limit_mib
                    config = [tf.config.LogicalDeviceConfiguration(memory_limit=limit)] * k
                    tf.config.set_logical_device_configuration(gpu, config)
    except RuntimeError as error:
        return _already_started(tf, plan, kind, error)
    try:
        return tuple(d.name for d in tf.config.list_logical_devices(kind))
    except (RuntimeError, ValueError, tf.errors.OpError) as error:  # pragma: no cover - GPU
        raise ReplicaSetupError(
            f"TensorFlow could not create the devices planned ({plan.message}): {error}. "
            "Another process may be holding the GPU's memory. "
            + _RESTART_HINT.format(n=f"{plan.replicas}, use_gpus=False")
        ) from error


def _already_started(tf, plan: ReplicaPlan, kind: str, error: RuntimeError) -> tuple[str, ...]:
    gpus = tf.config.list_logical_devices("GPU")
    have = gpus if kind == "GPU" else tf.config.list_logical_devices("CPU")
    if len(have) == plan.replicas and (kind == "GPU" or not gpus):
        return tuple(d.name for d in have)  # started with these very devices
    started = f"{len(gpus)} GPU device(s)" if gpus else f"{len(have)} CPU device(s)"
    raise ReplicaSetupError(
        f"TensorFlow's runtime already started with {started}, so it cannot give "
        f"{plan.replicas} replicas on {_TARGETS[plan.kind]} now (devices are fixed once "
        "TensorFlow creates its first tensor or strategy). " + _RESTART_HINT.format(n=plan.replicas)
    ) from error


def replica_devices(strategy) -> tuple[str, ...]:
    """The device each replica of ``strategy`` runs on, in replica order.

    Args:
        strategy: A ``tf.distribute.Strategy``.

    Returns:
        Device names such as ``'/job:localhost/replica:0/task:0/device:CPU:0'``.

    Raises:
        TypeError: If ``strategy`` is not a ``tf.distribute.Strategy`` object.

    Example:
        >>> import tensorflow as tf
        >>> import mirrorkit as mk
        >>> mk.replica_devices(tf.distribute.get_strategy())
        ('/job:localhost/replica:0/task:0/device:CPU:0',)
    """
    import tensorflow as tf

    require_strategy(strategy, "mk.replica_devices(strategy)")
    if not tf.distribute.has_strategy() and strategy is tf.distribute.get_strategy():
        return (tf.constant(0).device,)  # the default strategy: one replica, default device
    return tuple(strategy.extended.worker_devices)
