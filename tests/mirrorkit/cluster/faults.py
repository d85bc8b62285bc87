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


def foreign_lease(folder, pid: int, run: str = "another notebook's run") -> dict:
    """Make ``folder`` held by process ``pid`` of this machine, as another owner's run holds it."""
    import json

    from mirrorkit.cluster import _lease

    lease = {
        **_lease.identity(),
        "pid": pid,
        "proc_pid": pid,
        "start": _lease._start_time(pid),
        "command": "sleep 300",
        "run": run,
        "since": time.time() - 90,
    }
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, _lease.LEASE_FILE), "w") as file:
        json.dump(lease, file)
    return lease


def busy(context, held: list, own: str, done: str, lines: int = 1000, steps: int = 6):
    """Print ``lines`` lines, ask for a folder another run holds, write one of its own, all-reduce
    ``steps`` steps, and meet a BackupAndRestore error; leave a file in ``done`` at the end.

    Returns tensors, a variable, and what the worker was told.
    """
    import keras
    import tensorflow as tf

    from mirrorkit.cluster import _lease, _worker_hints

    for i in range(lines):
        print(f"line {i} of worker {context.task_id}")
    try:
        context.write_dir(held[0])
        refused = ""
    except _lease.FolderInUseError as error:
        refused = str(error)
    mine = context.write_dir(own)
    strategy = context.strategy
    for step in range(1, steps + 1):
        strategy.reduce("SUM", strategy.run(lambda: 1.0), axis=None)
        context.report(step)
    # Keras's BackupAndRestore meeting what another worker left where its folder should be.
    backup = os.path.join(own, f"backup-{context.task_id}")
    open(backup, "w").close()
    callback = keras.callbacks.BackupAndRestore(backup)
    callback.set_model(keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)]))
    try:
        callback._save_model()
        hint = ""
    except Exception as error:  # noqa: BLE001 - what the worker's failure would say
        hint = _worker_hints.hint(error, context.num_workers) or f"no hint for {error!r}"
    open(os.path.join(done, str(context.task_id)), "w").close()
    return {
        "variable": tf.Variable([1.0, 2.0]),
        "tensor": tf.constant(3),
        "nested": (tf.constant([0.5]), {"deeper": [tf.constant(7)]}),
        "refused": refused,
        "backup_hint": hint,
        "own": mine,
    }


def unsendable(context):
    """Return the strategy's variable (kept as one: run with keep_tensors=True)."""
    import tensorflow as tf

    with context.strategy.scope():
        return {"weights": tf.Variable([1.0])}


def fill(folder) -> None:
    """Write into ``folder`` until its filesystem has no room left."""
    with open(os.path.join(folder, "filler"), "wb", buffering=0) as filler:
        try:
            while True:
                filler.write(b"\0" * 4096)
        except OSError:
            pass


def save_on_a_full_disk(context, folder: str, read_only: str, full: str):
    """Ask for a read-only and a full folder (the messages returned), then take ``folder``,
    fill its disk, and save a checkpoint there (which fails)."""
    import tensorflow as tf

    told = {}
    for name, path in (("read_only", read_only), ("full", full)):
        try:
            context.write_dir(path)
        except OSError as error:
            told[name] = str(error)
    print("told: " + repr(told), flush=True)
    mine = context.write_dir(folder)
    with context.strategy.scope():
        step = tf.Variable(1, dtype=tf.int64)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step), mine, 3)
    manager.save(checkpoint_number=1)  # one good checkpoint
    context.strategy.reduce("SUM", context.strategy.run(lambda: 1.0), axis=None)
    if context.is_chief:
        fill(folder)
    context.strategy.reduce("SUM", context.strategy.run(lambda: 1.0), axis=None)
    manager.save(checkpoint_number=2)
    return told
