"""The gpu job's TensorFlow side: ``python -m bookbuild.gpujob.probe SECTION REPLICAS``.

Each section runs in a fresh process of the gpu environment's Python (TensorFlow fixes its
devices once per process) and prints one JSON line, which :mod:`bookbuild.gpujob.run` reads:

- ``devices N``: ``mirrorkit``'s decision for N replicas on the real GPU list (nvidia-smi's
  memory matched with TensorFlow's GPUs, then ``plan_replicas``), and what
  ``simulate_replicas(N)`` then gave;
- ``all-reduce N``: for each of ``mirrorkit.ALL_REDUCE_ALGORITHMS`` on N replicas, whether
  ``mirrorkit`` runs it there (or why not), and ``check_all_reduced`` of a SUM of replica_id + 1;
- ``precision N``: a few training steps under ``float32``, ``mixed_float16`` and
  ``mixed_bfloat16`` (``mirrorkit.run_loss_scale`` at a fixed loss scale), and a matrix
  product's speed in each dtype on the first replica's device;
- ``copy-bandwidth N``: the first GPU's copy bandwidth (bytes per second).

None has run on a GPU yet; TensorFlow and mirrorkit are imported inside the sections.

Example:
    >>> sorted(SECTIONS)
    ['all-reduce', 'copy-bandwidth', 'devices', 'precision']
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

from bookbuild.gpujob.plan import expected_sum

POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")
MATMUL_SIZE = 4096  # a product this large keeps a GPU busy for milliseconds, not microseconds
COPY_ELEMENTS = 64 << 20  # 256 MiB of float32: far larger than any GPU's cache


def _replicas(replicas: int):
    import mirrorkit as mk

    mk.make_reproducible(0)
    return mk, mk.simulate_replicas(replicas, report=False)


def _median_seconds(call, sync, repeats: int = 10) -> float:
    call()  # untimed: the first call traces and allocates
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def devices(replicas: int) -> dict:
    """The device decision for ``replicas`` on this machine's GPUs, and what it gave."""
    import tensorflow as tf

    from mirrorkit import devices as mk_devices

    physical = tf.config.list_physical_devices("GPU")
    # What simulate_replicas decides (plan_replicas on nvidia-smi's memory of these GPUs).
    plan = mk_devices._plan_here(tf, replicas, physical, True)
    mk, given = _replicas(replicas)
    return {
        "replicas": replicas,
        "physical_gpus": len(physical),
        "kind": plan.kind,
        "split": list(plan.split),
        "message": plan.message,
        "planned": list(plan.devices),
        "devices": list(given),
        "logical_gpus": [d.name for d in tf.config.list_logical_devices("GPU")],
    }


def all_reduce(replicas: int) -> dict:
    """Each algorithm's availability and its SUM checked on every replica."""
    import numpy as np
    import tensorflow as tf

    mk, given = _replicas(replicas)
    from mirrorkit.measure.allreduce import available_algorithms

    def replica_value():
        ctx = tf.distribute.get_replica_context()
        value = tf.fill([1024], tf.cast(ctx.replica_id_in_sync_group + 1, tf.float32))
        return ctx.all_reduce(tf.distribute.ReduceOp.SUM, value)

    found = {}
    for name, unavailable in available_algorithms(given).items():
        found[name] = {"unavailable": unavailable}
        if unavailable is None:
            strategy = mk.make_strategy(name, devices=given)
            result = mk.check_all_reduced(
                replica_value, strategy, np.full(1024, expected_sum(replicas), np.float32)
            )
            found[name].update(passed=bool(result.passed), message=str(result.message))
    return {"replicas": replicas, "devices": list(given), "algorithms": found}


def precision(replicas: int) -> dict:
    """Losses of a few steps and a matrix product's speed, per precision policy."""
    import tensorflow as tf

    mk, given = _replicas(replicas)
    strategy = mk.make_strategy(devices=given)
    found = {}
    for policy in POLICIES:
        # A fixed loss scale (no growth within the run, no forced overflow): the steps are
        # the same computation in each precision, so their losses can be compared.
        history = mk.run_loss_scale(
            strategy, policy=policy, steps=6, overflow_steps=(), initial_scale=256.0,
            dynamic_growth_steps=1000,
        )  # fmt: skip
        dtype = {"float32": tf.float32, "mixed_float16": tf.float16}.get(policy, tf.bfloat16)
        with tf.device(given[0]):
            a = tf.random.normal([MATMUL_SIZE, MATMUL_SIZE], dtype=tf.float32)
            a = tf.cast(a, dtype)
            product = tf.function(lambda a=a: tf.linalg.matmul(a, a))
            seconds = _median_seconds(product, tf.test.experimental.sync_devices)
        found[policy] = {
            "losses": [float(record.loss) for record in history.records],
            "skipped_steps": list(history.skipped_steps),
            "matmul_tflops": 2 * MATMUL_SIZE**3 / seconds / 1e12,
        }
    return {"replicas": replicas, "device": given[0], "policies": found}


def copy_bandwidth(replicas: int) -> dict:
    """The first replica's device's copy bandwidth: bytes per second a negation moves.

    A negation reads every byte once and writes it once, as a copy does; each byte counts
    once, as in ``mirrorkit.measure_copy_bandwidth`` (the CPU's yardstick).
    """
    import tensorflow as tf

    _, given = _replicas(replicas)
    with tf.device(given[0]):
        source = tf.ones([COPY_ELEMENTS], tf.float32)
        seconds = _median_seconds(lambda: tf.negative(source), tf.test.experimental.sync_devices)
    return {"device": given[0], "bytes_per_second": COPY_ELEMENTS * 4 / seconds}


SECTIONS = {
    "devices": devices,
    "all-reduce": all_reduce,
    "precision": precision,
    "copy-bandwidth": copy_bandwidth,
}


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    section, count = sys.argv[1], int(sys.argv[2])
    print(json.dumps(SECTIONS[section](count)))
