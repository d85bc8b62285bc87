"""Play an all-reduce step by step on real per-replica values, and check it against TensorFlow's.

:func:`replay_all_reduce` takes what a real ``strategy.run`` returned on each replica
(a step's gradients, say), lays each replica's values end to end as one vector, and
plays an algorithm's :class:`~mirrorkit.measure.schedules.Schedule` on them in NumPy:
every transfer carries the actual numbers of its chunk, in the values' own dtype, and
the receiver adds or keeps them in the order the algorithm does. It then runs the
strategy's own all-reduce (``ReplicaContext.all_reduce(SUM, ...)`` inside
``strategy.run``, with that algorithm, on the same devices and the same vectors) and
compares the results.

Float addition is not associative: ``(a + b) + c`` and ``a + (b + c)`` can differ in the
last bits. The ring adds chunk ``c`` starting at replica ``c``; ``ReductionToOneDevice``
adds replica 0, 1, 2... in order; TensorFlow's own ring also cuts chunks into sub-chunks
with their own order. So two correct all-reduces can differ, by at most
about ``2 (n - 1) * eps * sum(|x_i|)`` per element (``eps`` the dtype's unit roundoff, ``n``
replicas; each order's error is within half of that of the exact sum; precisely
``2 gamma_(n-1) sum(|x_i|)``, ``gamma_k = k eps / (1 - k eps)``). A difference
beyond that bound is not rounding: something was summed that should not have been, or
left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from mirrorkit.measure.schedules import Schedule, schedule
from mirrorkit.report.render import Line, Report, Reported
from mirrorkit.report.units import format_size
from mirrorkit.report.values import number
from mirrorkit.strategy import ALL_REDUCE_ALGORITHMS, all_reduce_name

_DTYPES = ("float16", "float32", "float64")


@dataclass(frozen=True)
class Comparison:
    """The replay's result against the strategy's own all-reduce and the exact sum.

    Attributes:
        max_difference: Largest ``|replay - strategy|`` over elements and replicas.
        bound: The largest difference two summation orders may produce for that element.
        verdict: ``"identical"`` (bit for bit), ``"rounding"`` (differs within the bound),
            or ``"different"`` (beyond it somewhere).
        strategy_error: Largest ``|strategy - exact sum|`` divided by that element's
            own rounding bound; above 1 means the strategy's result is not the sum.
        replicas_agree: Whether every replica received the same result from the strategy.
    """

    max_difference: float
    bound: float
    verdict: str
    strategy_error: float
    replicas_agree: bool


@dataclass(frozen=True, repr=False)
class AllReduceReplay(Reported):
    """What :func:`replay_all_reduce` returns: the schedule, the values, the comparison.

    Attributes:
        schedule: The algorithm's steps (:class:`~mirrorkit.measure.schedules.Schedule`).
        devices: The replicas' devices.
        inputs: Each replica's values, as one flat vector (its tensors end to end).
        strategy_result: What the strategy's own all-reduce gave each replica (flat).

    Example:
        >>> import numpy as np
        >>> from mirrorkit.measure.replay import AllReduceReplay
        >>> from mirrorkit.measure.schedules import schedule
        >>> inputs = tuple(np.array([1.0, 2.0, 3.0], np.float32) * (r + 1) for r in range(3))
        >>> replay = AllReduceReplay(schedule("one_device", 3), ("a", "b", "c"), inputs,
        ...                          (inputs[0] * 6,) * 3)
        >>> print(replay)  # doctest: +NORMALIZE_WHITESPACE
        one_device all-reduce of 3 float32 values (12 B) on 3 replicas: 2 steps
        step  phase      sends         busiest link
        1     reduce     1→0+, 2→0+    24 B
        2     broadcast  0→1=, 0→2=    24 B
        a→b+: replica a sends its tensor to replica b, which adds it to its own; a→b=: b keeps it in place of its own.
        Each replica sent at most 24 B = 2 x its tensor; the busiest link carried 48 B in all (4 x).
        SAME: The replay equals the strategy's own all-reduce (one_device) bit for bit.
    """  # noqa: E501

    schedule: Schedule
    devices: tuple[str, ...]
    inputs: tuple[np.ndarray, ...]
    strategy_result: tuple[np.ndarray, ...]

    @property
    def replicas(self) -> int:
        """How many replicas took part."""
        return self.schedule.replicas

    @property
    def nbytes(self) -> int:
        """Bytes of one replica's values."""
        return int(self.inputs[0].nbytes)

    @property
    def chunk_bounds(self) -> list[tuple[int, int]]:
        """``(start, stop)`` of each chunk in the flat vector."""
        return self.schedule.chunk_bounds(self.inputs[0].size)

    @cached_property
    def comparison(self) -> Comparison:
        """The replay's result against the strategy's own and against the exact sum."""
        end = self.buffers(len(self.schedule.steps))
        return _compare(self.inputs, end, self.strategy_result)

    @cached_property
    def _changes(self) -> list:
        """Per step, the chunks it changed: ``(replica, chunk, values after the step)``."""
        return _play(self.schedule, self.inputs)

    def buffers(self, step: int) -> tuple[np.ndarray, ...]:
        """Each replica's vector after ``step`` steps (0: the inputs, ``len(steps)``: the end).

        Example:
            >>> import numpy as np
            >>> from mirrorkit.measure.replay import AllReduceReplay
            >>> from mirrorkit.measure.schedules import schedule
            >>> inputs = (np.array([1.0, 2.0], np.float32), np.array([10.0, 20.0], np.float32))
            >>> replay = AllReduceReplay(schedule("collective", 2), ("CPU:0", "CPU:1"), inputs,
            ...                          (inputs[0] + inputs[1],) * 2)
            >>> replay.buffers(1)  # replica 0 sent chunk 0 to replica 1, and 1 sent chunk 1 to 0
            (array([ 1., 22.], dtype=float32), array([11., 20.], dtype=float32))
            >>> replay.buffers(2)[0], replay.comparison.verdict
            (array([11., 22.], dtype=float32), 'identical')
        """
        step = self._step(step)
        bounds = self.chunk_bounds
        out = [x.copy() for x in self.inputs]
        for changes in self._changes[:step]:
            for replica, chunk, values in changes:
                out[replica][slice(*bounds[chunk])] = values
        return tuple(out)

    def holders(self, step: int) -> tuple[tuple[frozenset, ...], ...]:
        """After ``step`` steps, per replica and chunk: whose values that chunk sums so far.

        The schedule's :meth:`~mirrorkit.measure.schedules.Schedule.holders`, checked for range.

        Example:
            >>> import numpy as np
            >>> from mirrorkit.measure.replay import AllReduceReplay
            >>> from mirrorkit.measure.schedules import schedule
            >>> inputs = tuple(np.ones(3, np.float32) for _ in range(3))
            >>> replay = AllReduceReplay(schedule("collective", 3), ("a", "b", "c"), inputs, inputs)
            >>> sorted(replay.holders(1)[1][0])  # replica 1, chunk 0: 0's values plus its own
            [0, 1]
        """
        return self.schedule.holders()[self._step(step)]

    def step_bytes(self) -> list[int]:
        """Per step, the bytes the busiest replica's link carries in one direction."""
        return self.schedule.step_link_bytes(self.inputs[0].size, self.inputs[0].itemsize)

    def sent_bytes(self) -> list[int]:
        """Bytes each replica sends over the whole all-reduce."""
        return self.schedule.sent_bytes(self.inputs[0].size, self.inputs[0].itemsize)

    def _step(self, step: int) -> int:
        last = len(self.schedule.steps)
        if isinstance(step, bool) or not isinstance(step, int | np.integer):
            raise TypeError(f"step must be an int from 0 to {last}, got {step!r}.")
        if not 0 <= step <= last:
            raise ValueError(
                f"step must be from 0 (the inputs) to {last} (the result), got {step}."
            )
        return int(step)

    def report(self) -> Report:
        """One row per step: what moves, and the bytes on the busiest link."""
        s = self.schedule
        n = s.replicas
        moved = self.step_bytes()
        rows = [
            (
                str(i + 1),
                step.phase,
                _transfers(step.transfers, s.chunks),
                format_size(b),
            )
            for i, (step, b) in enumerate(zip(s.steps, moved, strict=True))
        ]
        columns = tuple(
            (head, tuple(r[k] for r in rows))
            for k, head in enumerate(("step", "phase", "sends", "busiest link"))
        )
        sent = max(self.sent_bytes())
        headline = (
            f"{s.algorithm} all-reduce of {self.inputs[0].size:,} {self.inputs[0].dtype} values "
            f"({format_size(self.nbytes)}) on {n} replicas: {len(s.steps)} steps",
        )
        lines = [
            Line(
                "a→b c2+: replica a sends chunk 2 to replica b, which adds it to its own; "
                "a→b c2=: b keeps it in place of its own."
                if s.chunks > 1
                else "a→b+: replica a sends its tensor to replica b, which adds it to its own; "
                "a→b=: b keeps it in place of its own."
            ),
            Line(
                f"Each replica sent at most {format_size(sent)} = "
                f"{sent / self.nbytes:.3g} x its tensor; the busiest link carried "
                f"{format_size(sum(moved))} in all ({sum(moved) / self.nbytes:.3g} x)."
                + _bus_note(s)
            ),
            *self._verdict_lines(),
        ]
        return Report(headline=headline, columns=columns, lines=tuple(lines), tone=self._tone())

    def _tone(self) -> str:
        c = self.comparison
        return "good" if c.verdict != "different" and c.strategy_error <= 1 else "warn"

    def _verdict_lines(self) -> list[Line]:
        c = self.comparison
        name = f"the strategy's own all-reduce ({self.schedule.algorithm})"
        out = []
        if c.verdict == "identical":
            out.append(Line(f"The replay equals {name} bit for bit.", "good", "SAME"))
        elif c.verdict == "rounding":
            out.append(
                Line(
                    f"The replay differs from {name} by at most {number(c.max_difference)}, "
                    f"within what summing in another order can change "
                    f"({number(c.bound)} here): float addition is not associative, and "
                    "the two add the replicas' values in different orders.",
                    "good",
                    "SAME SUM",
                )
            )
        else:
            out.append(
                Line(
                    f"The replay differs from {name} by {number(c.max_difference)}, more "
                    f"than rounding can explain ({number(c.bound)}).",
                    "bad",
                    "DIFFERENT",
                )
            )
        lost = self.schedule.left_out()
        if lost:
            out.append(
                Line(
                    f"Neither result is the sum: replica {', '.join(map(str, lost))}'s values "
                    f"were never sent. TensorFlow's HierarchicalCopyAllReduce splits the "
                    f"replicas into two groups of {self.replicas // 2}, so with an odd count the "
                    "last one is in neither; use an even replica count or another algorithm.",
                    "bad",
                    "WRONG SUM",
                )
            )
        elif c.strategy_error > 1:
            out.append(
                Line(
                    "The strategy's result is not the sum of the replicas' values.",
                    "bad",
                    "WRONG SUM",
                )
            )
        if not c.replicas_agree:
            out.append(
                Line("The strategy gave different replicas different results.", "bad", "WARNING")
            )
        return out


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
        An :class:`AllReduceReplay`; ``print`` it for the steps and the verdict, or draw it
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
        ValueError: this strategy has one replica, so an all-reduce sends nothing: run mk.simulate_replicas(4) before TensorFlow starts, then mk.make_strategy().
    """  # noqa: E501
    import tensorflow as tf

    call = "mk.replay_all_reduce(strategy, strategy.run(step_fn, ...))"
    if not isinstance(strategy, tf.distribute.MirroredStrategy):
        raise TypeError(
            f"strategy must be a tf.distribute.MirroredStrategy, got {type(strategy).__name__}: "
            f"pass the strategy whose run made the values, e.g. {call}."
        )
    devices = tuple(strategy.extended.worker_devices)
    n = len(devices)
    if n < 2:
        raise ValueError(
            "this strategy has one replica, so an all-reduce sends nothing: run "
            "mk.simulate_replicas(4) before TensorFlow starts, then mk.make_strategy()."
        )
    own = all_reduce_name(strategy)
    if algorithm is None:
        algorithm = own
        if algorithm is None:
            ops = type(strategy.extended._cross_device_ops).__name__
            raise ValueError(
                f"the strategy's all-reduce {ops} is not one the replay knows; pass algorithm= "
                f"one of {', '.join(map(repr, ALL_REDUCE_ALGORITHMS))}."
            )
    plan = schedule(algorithm, n)  # checks the name
    per_replica = _per_replica_tensors(tf, strategy, values, n, call)
    inputs = tuple(np.concatenate([t.reshape(-1) for t in tensors]) for tensors in per_replica)
    if inputs[0].size == 0:
        raise ValueError("values hold no numbers: pass tensors with at least one element.")
    if algorithm == own:
        other = strategy
    else:
        from mirrorkit.strategy import make_strategy

        other = make_strategy(algorithm, devices=list(devices))
    result = _strategy_all_reduce(tf, other, inputs)
    return AllReduceReplay(plan, devices, inputs, result)


def _per_replica_tensors(tf, strategy, values, n: int, call: str) -> list[list[np.ndarray]]:
    leaves = tf.nest.flatten(values)
    if not leaves:
        raise ValueError(f"values is empty: pass what strategy.run returned, e.g. {call}.")
    out: list[list[np.ndarray]] = [[] for _ in range(n)]
    dtypes = set()
    for leaf in leaves:
        local = strategy.experimental_local_results(leaf)
        if len(local) != n or not all(tf.is_tensor(t) for t in local):
            raise TypeError(
                f"values must be per-replica tensors from this strategy's run ({n} replicas); got "
                f"{type(leaf).__name__}: pass what strategy.run returned, e.g. {call}."
            )
        for r, tensor in enumerate(local):
            array = np.asarray(tensor.numpy())
            dtypes.add(str(array.dtype))
            out[r].append(array)
    if len(dtypes) != 1 or next(iter(dtypes)) not in _DTYPES:
        raise TypeError(
            f"values must all be one float dtype ({', '.join(_DTYPES)}), got "
            f"{', '.join(sorted(dtypes))}: cast them, e.g. tf.cast(x, tf.float32)."
        )
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


def _play(plan: Schedule, inputs: tuple[np.ndarray, ...]) -> list:
    """Run the schedule on the values: per step, the chunks it changed and their new values.

    Only changed chunks are kept (2 (n - 1) chunks per replica for the ring), not every
    replica's whole vector after every step.
    """
    bounds = plan.chunk_bounds(inputs[0].size)
    buffers = [x.copy() for x in inputs]
    changes = []
    for step in plan.steps:
        payload = [(t, buffers[t.source][slice(*bounds[t.chunk])].copy()) for t in step.transfers]
        changed = {}
        for t, chunk in payload:
            part = slice(*bounds[t.chunk])
            buffers[t.target][part] = (
                buffers[t.target][part] + chunk if t.combine == "add" else chunk
            )
            changed[t.target, t.chunk] = None
        changes.append([(r, c, buffers[r][slice(*bounds[c])].copy()) for r, c in changed])
    return changes


def _compare(inputs, replayed, result) -> Comparison:
    n = len(inputs)
    gamma = _gamma(n - 1, inputs[0].dtype)
    stacked = np.stack([x.astype(np.float64) for x in inputs])
    exact = stacked.sum(axis=0)
    scale = gamma * np.abs(stacked).sum(axis=0) + float(np.finfo(inputs[0].dtype).tiny)
    difference = np.max(
        [
            np.abs(a.astype(np.float64) - b.astype(np.float64))
            for a, b in zip(replayed, result, strict=True)
        ],
        axis=0,
    )
    identical = all(np.array_equal(a, b) for a, b in zip(replayed, result, strict=True))
    within = bool(np.all(difference <= 2 * scale))
    verdict = "identical" if identical else "rounding" if within else "different"
    error = np.abs(result[0].astype(np.float64) - exact) / scale
    agree = all(np.array_equal(result[0], r) for r in result[1:])
    return Comparison(
        float(difference.max()), float(2 * scale.max()), verdict, float(error.max()), agree
    )


def _gamma(k: int, dtype) -> float:
    """Higham's ``gamma_k = k u / (1 - k u)``, ``u`` the dtype's unit roundoff.

    ``k`` additions in any order drift from the exact sum by at most ``gamma_k`` times the
    sum of the absolute values.
    """
    u = float(np.finfo(dtype).eps) / 2
    return k * u / (1 - k * u)


def _transfers(transfers, chunks: int) -> str:
    def one(t):
        arrow = "+" if t.combine == "add" else "="
        part = f" c{t.chunk}" if chunks > 1 else ""
        return f"{t.source}→{t.target}{part}{arrow}"

    return ", ".join(one(t) for t in transfers)


def _bus_note(plan: Schedule) -> str:
    if plan.algorithm not in ("collective", "nccl"):
        return ""
    n = plan.replicas
    return (
        f" That is 2(n-1)/n = {2 * (n - 1) / n:.3g} for n = {n}: the time is bounded by those "
        "bytes over the link's bandwidth, which is why busbw = algbw x 2(n-1)/n."
    )
