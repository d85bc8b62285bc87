"""What the cluster tests' workers run: faults they inject into themselves, a parameter-server run.

Workers import this module (their function is pickled by reference), so it imports nothing
of the tests' set-up.
"""

from __future__ import annotations

import os
import time


def faulty(context, fault: str, culprit: int, at_step: int, steps: int = 8):
    """All-reduce and report ``steps`` steps; before step ``at_step`` worker ``culprit``
    misbehaves as ``fault`` says: ``"quiet exit"``, ``"error"`` or ``"late"``.
    """
    strategy = context.strategy
    for step in range(1, steps + 1):
        if context.task_id == culprit and step == at_step:
            if fault == "quiet exit":
                os._exit(0)
            if fault == "error":
                raise ValueError(f"worker {culprit} cannot go on at step {step}")
            if fault == "late":
                time.sleep(600)
        strategy.reduce("SUM", strategy.run(lambda: 1.0), axis=None)
        context.report(step)
    return context.task_id


def schedule_steps(context, steps: int = 6, join_every: int = 3, pause: float = 0.0):
    """Schedule steps on the workers of a ParameterServerStrategy; count them on the ps.

    Every ``join_every`` steps the chief waits for them and reports the step, then pauses
    ``pause`` seconds (the fault suite's time to kill a server between steps).
    """
    import tensorflow as tf

    strategy = context.strategy
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        counter = tf.Variable(0, dtype=tf.int64)

    @tf.function
    def step():
        counter.assign_add(1)
        return tf.constant(2.0)

    results = []
    for i in range(1, steps + 1):
        results.append(coordinator.schedule(step))
        if i % join_every == 0:
            coordinator.join()
            context.report(i, loss=1.0 / i)
            time.sleep(pause)
    coordinator.join()
    print(f"{type(strategy).__name__} counted {int(counter.numpy())}")
    return {
        "strategy": type(strategy).__name__,
        "device": counter.device,
        "fetched": [float(r.fetch()) for r in results],
        "count": int(counter.numpy()),
        "chief": context.is_chief,
        "workers": context.num_workers,
    }
