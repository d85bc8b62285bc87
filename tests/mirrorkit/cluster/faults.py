"""Faults for the fault suite, injected by a worker into itself (no test imports here).

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


def scheduled(context, steps: int = 40):
    """A parameter-server run: one scheduled step at a time, reported, 0.2 s apart."""
    import tensorflow as tf

    strategy = context.strategy
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        counter = tf.Variable(0, dtype=tf.int64)

    @tf.function
    def step():
        counter.assign_add(1)
        return tf.constant(1.0)

    for i in range(1, steps + 1):
        coordinator.schedule(step)
        coordinator.join()
        context.report(i)
        time.sleep(0.2)
    return int(counter.numpy())
