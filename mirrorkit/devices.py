"""Replicas on any machine: real GPUs where there are some, logical CPU devices otherwise."""

from __future__ import annotations

import contextlib

from mirrorkit.errors import ReplicaSetupError

_RESTART_HINT = (
    "Restart the kernel (Kernel > Restart Kernel... in JupyterLab, or start a new Python "
    "process) and call simulate_replicas({n}) before anything else uses TensorFlow."
)


def simulate_replicas(n: int, *, use_gpus: bool = True) -> tuple[str, ...]:
    """Give ``tf.distribute`` ``n`` replicas, simulating them on the CPU when there is no GPU.

    On a machine without GPUs (or with ``use_gpus=False``) the host CPU is split into
    ``n`` logical devices, ``/device:CPU:0`` ... ``/device:CPU:{n-1}``; a default
    ``tf.distribute.MirroredStrategy`` then has ``n`` replicas. On a machine with
    GPUs, the first ``n`` GPUs are used instead (all of them if there are fewer).

    TensorFlow fixes its devices when its runtime starts, so call this before
    creating tensors or strategies. Calling it again with the same ``n`` is harmless.

    Args:
        n: How many replicas, a positive ``int``.
        use_gpus: Use real GPUs when present. ``False`` forces CPU simulation.

    Returns:
        The device names the replicas run on, in replica order.

    Raises:
        TypeError: If ``n`` is not an ``int``.
        ValueError: If ``n`` is smaller than 1.
        ReplicaSetupError: If TensorFlow already started with a different split.

    Example:
        >>> import mirrorkit as mk
        >>> mk.simulate_replicas(2)  # doctest: +SKIP
        ('/device:CPU:0', '/device:CPU:1')
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(
            f"n must be an int number of replicas, got {type(n).__name__} {n!r}; "
            "for example simulate_replicas(4)."
        )
    if n < 1:
        raise ValueError(f"n must be at least 1 replica, got {n}.")

    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if gpus and use_gpus:
        return _use_gpus(tf, gpus, n)

    cpu = tf.config.list_physical_devices("CPU")[0]
    config = [tf.config.LogicalDeviceConfiguration() for _ in range(n)]
    try:
        tf.config.set_logical_device_configuration(cpu, config)
    except RuntimeError as error:
        have = len(tf.config.list_logical_devices("CPU"))
        if have != n:
            raise ReplicaSetupError(
                f"TensorFlow's runtime already started with {have} CPU device(s), so it "
                f"cannot be split into {n} now (devices are fixed once TensorFlow creates "
                f"its first tensor or strategy). " + _RESTART_HINT.format(n=n)
            ) from error
    return tuple(d.name for d in tf.config.list_logical_devices("CPU"))


def _use_gpus(tf, gpus, n: int) -> tuple[str, ...]:
    for gpu in gpus:
        # Once TensorFlow has started, memory growth stays whatever it was.
        with contextlib.suppress(RuntimeError):
            tf.config.experimental.set_memory_growth(gpu, True)
    return tuple(d.name for d in tf.config.list_logical_devices("GPU")[:n])


def replica_devices(strategy) -> tuple[str, ...]:
    """The device each replica of ``strategy`` runs on, in replica order.

    Args:
        strategy: A ``tf.distribute.Strategy``.

    Returns:
        Device names such as ``'/job:localhost/replica:0/task:0/device:CPU:0'``.

    Raises:
        TypeError: If ``strategy`` is not a ``tf.distribute.Strategy``.

    Example:
        >>> import tensorflow as tf
        >>> import mirrorkit as mk
        >>> mk.replica_devices(tf.distribute.get_strategy())
        ('/job:localhost/replica:0/task:0/device:CPU:0',)
    """
    import tensorflow as tf

    if not isinstance(strategy, tf.distribute.Strategy):
        raise TypeError(f"expected a tf.distribute.Strategy, got {type(strategy).__name__}.")
    if not tf.distribute.has_strategy() and strategy is tf.distribute.get_strategy():
        return (tf.constant(0).device,)  # the default strategy: one replica, default device
    return tuple(strategy.extended.worker_devices)
