"""Replay the all-reduce of what a strategy's run returned, and run the strategy's own to compare.

Example:
    >>> from mirrorkit.measure.strategy_replay import replay_all_reduce
    >>> replay_all_reduce("mirrored", [])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: strategy must be a tf.distribute.MirroredStrategy (pass the strategy whose run ...
"""

from __future__ import annotations

import numpy as np

from mirrorkit._algorithms import ALL_REDUCE_ALGORITHMS
from mirrorkit._validate import refuse
from mirrorkit.measure.replay import AllReduceReplay
from mirrorkit.measure.schedules import schedule
from mirrorkit.strategy import all_reduce_name, make_strategy

_DTYPES = ("float16", "float32", "float64")
_CALL = "mk.replay_all_reduce(strategy, strategy.run(step_fn, ...))"


def replay_all_reduce(strategy, values, algorithm: str | None = None) -> AllReduceReplay:
    """Play an all-reduce on real per-replica values, and compare with the strategy's own.

    Args:
        strategy: The ``tf.distribute.MirroredStrategy`` that made ``values``.
        values: What ``strategy.run`` returned: a ``PerReplica`` value, or a list or dict
            of them (a step's gradients). Each replica's tensors, flattened and laid end to
            end in ``tf.nest`` order, make the vector the replay reduces. Float16, float32 or
            float64, one dtype for all.
        algorithm: Which all-reduce to play, a name from ``ALL_REDUCE_ALGORITHMS``;
            ``None`` plays the strategy's own, and the comparison runs the strategy's own
            all-reduce; another name is compared with ``mk.make_strategy(algorithm,
            devices=<the strategy's devices>)``.

    Returns:
        An :class:`~mirrorkit.measure.replay.AllReduceReplay`; ``print`` it for the steps and the verdict, or draw it
        with ``mirrorwidgets.AllReduceStepper``.

    Raises:
        TypeError: If ``strategy`` is not a MirroredStrategy, or ``values`` holds something
            that is not a per-replica float tensor.
        ValueError: If the strategy has one replica, values are empty, or the algorithm is
            unknown.
        AllReduceUnavailableError: If ``algorithm`` cannot run on these devices (NCCL without
            GPUs).

    Example:
        On several replicas (``mk.simulate_replicas(4)`` first, as every chapter does) this
        plays the ring on 8 numbers per replica; here, where TensorFlow has one device, it
        says why it cannot:

        >>> import mirrorkit as mk, tensorflow as tf
        >>> strategy = mk.make_strategy()
        >>> def grads():
        ...     r = tf.distribute.get_replica_context().replica_id_in_sync_group
        ...     return tf.range(8, dtype=tf.float32) * tf.cast(r + 1, tf.float32)
        >>> if strategy.num_replicas_in_sync > 1:
        ...     replay = mk.replay_all_reduce(strategy, strategy.run(grads))
        ...     assert replay.comparison.verdict in ("identical", "rounding")
        ... else:
        ...     mk.replay_all_reduce(strategy, strategy.run(grads))
        Traceback (most recent call last):
        ...
        ValueError: strategy must be a strategy of 2 replicas or more (one replica sends nothing), got a strategy of one replica: write mk.simulate_replicas(4) before TensorFlow starts, then mk.make_strategy().
    """  # noqa: E501
    import tensorflow as tf

    if not isinstance(strategy, tf.distribute.MirroredStrategy):
        must = "a tf.distribute.MirroredStrategy (pass the strategy whose run made the values)"
        refuse("strategy", strategy, must=must, got=type(strategy).__name__, write=_CALL)
    devices = tuple(strategy.extended.worker_devices)
    if len(devices) < 2:
        refuse(
            "strategy",
            must="a strategy of 2 replicas or more (one replica sends nothing)",
            got="a strategy of one replica",
            write="mk.simulate_replicas(4) before TensorFlow starts, then mk.make_strategy()",
            error=ValueError,
        )
    own = all_reduce_name(strategy)
    if algorithm is None and own is None:
        ops = type(strategy.extended._cross_device_ops).__name__
        known = ", ".join(map(repr, ALL_REDUCE_ALGORITHMS))
        must = f"one of {known} (the strategy's all-reduce {ops} is not one the replay knows)"
        refuse("algorithm", None, must=must, write="algorithm='collective'", error=ValueError)
    algorithm = own if algorithm is None else algorithm
    plan = schedule(algorithm, len(devices))  # checks the name
    per_replica = _per_replica_tensors(tf, strategy, values, len(devices))
    inputs = tuple(np.concatenate([t.reshape(-1) for t in tensors]) for tensors in per_replica)
    if inputs[0].size == 0:
        must = "tensors with at least one element"
        refuse("values", must=must, got="tensors of no numbers", write=_CALL, error=ValueError)
    other = strategy if algorithm == own else make_strategy(algorithm, devices=list(devices))
    result = _strategy_all_reduce(tf, other, inputs)
    return AllReduceReplay(schedule=plan, devices=devices, inputs=inputs, strategy_result=result)


def _per_replica_tensors(tf, strategy, values, n: int) -> list[list[np.ndarray]]:
    """Each replica's tensors of ``values`` (what ``strategy.run`` returned), as arrays."""
    must = f"per-replica tensors of this strategy's run ({n} replicas)"
    must += ", so pass what strategy.run returned"
    leaves = tf.nest.flatten(values)
    if not leaves:
        refuse("values", values, must=must, write=_CALL, error=ValueError)
    out: list[list[np.ndarray]] = [[] for _ in range(n)]
    dtypes = set()
    for leaf in leaves:
        local = strategy.experimental_local_results(leaf)
        if len(local) != n or not all(tf.is_tensor(t) for t in local):
            refuse("values", must=must, got=type(leaf).__name__, write=_CALL)
        for r, tensor in enumerate(local):
            array = np.asarray(tensor.numpy())
            dtypes.add(str(array.dtype))
            out[r].append(array)
    if len(dtypes) != 1 or next(iter(dtypes)) not in _DTYPES:
        must = f"of one float dtype ({', '.join(_DTYPES)})"
        write = "tf.cast(x, tf.float32) to cast them"
        refuse("values", must=must, got=", ".join(sorted(dtypes)), write=write)
    return out


def _strategy_all_reduce(tf, strategy, inputs) -> tuple[np.ndarray, ...]:
    """``strategy``'s own all-reduce (SUM) of each replica's flat vector, as each replica got it.

    One shape-generic ``tf.function`` per strategy, kept with it, so replaying again does not
    retrace.
    """
    kept = _REDUCERS.get(id(strategy))
    if kept is None or kept[0] is not strategy:

        def on_replica(vector):
            context = tf.distribute.get_replica_context()
            return context.all_reduce(tf.distribute.ReduceOp.SUM, vector)

        function = tf.function(
            lambda values: strategy.run(on_replica, args=(values,)), reduce_retracing=True
        )
        kept = _REDUCERS[id(strategy)] = (strategy, function)
    distributed = strategy.experimental_distribute_values_from_function(
        lambda ctx: tf.constant(inputs[ctx.replica_id_in_sync_group])
    )
    reduced = kept[1](distributed)
    return tuple(np.asarray(t.numpy()) for t in strategy.experimental_local_results(reduced))


# id(strategy) -> (strategy, its all-reduce function); the strategy is kept so ids stay unique.
_REDUCERS: dict[int, tuple[object, object]] = {}
