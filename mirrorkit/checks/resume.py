"""Chapter 6's check: does a training function resume where it stopped when a worker dies?

The learner writes ``checkpointing(context, checkpoint_dir, model, optimizer, step, seen)``;
:func:`resumable_training` is the rest of the training function, and :func:`check_resume`
runs it on a real cluster, with a worker killed (see docs/design/checks-lessons.md).

Example:
    >>> import mirrorkit as mk
    >>> mk.check_resume(...)
    NOT YET: not attempted yet: replace the ... with your answer and run the cell.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from mirrorkit._validate import require_count, require_int, require_seconds
from mirrorkit.checks._resume_verdict import (
    SAVE_EVERY,
    SAVING,
    SETTING_UP,
    STEPS,
    failure,
    plan,
    run_problem,
    signature_problem,
    verdict,
)
from mirrorkit.checks.result import NOT_ATTEMPTED, CheckResult
from mirrorkit.report.values import error_lines
from mirrorkit.training.recipes import TRUE_WEIGHTS, step_batches


def resumable_training(
    context: Any,
    checkpoint_dir: str,
    checkpointing: Callable,
    *,
    steps: int = STEPS,
    save_every: int = SAVE_EVERY,
    per_replica_batch: int = 16,
    learning_rate: float = 0.1,
    momentum: float = 0.5,
) -> dict:
    """The chapter's custom loop with the checkpoint-and-resume part left to ``checkpointing``.

    Every worker builds the model, the optimizer (SGD with momentum, built before the
    first step) and two counters under the strategy's scope: ``step``, the last step
    trained, and ``seen``, the examples trained on, which each replica counts for
    itself and reading sums (a variable synchronized on read, as a metric's total is).
    Then it calls ``checkpointing(context, checkpoint_dir, model, optimizer, step,
    seen)``, which restores what it can and returns ``save``, and trains from step
    ``step + 1`` to ``steps``, calling ``save(number)`` after every ``save_every``
    steps. The data of a step depends only on its number (as in ``checkpointed_training``).

    Before training, the workers compare what they restored; if they differ, every
    worker returns at once instead of training out of step with the others.

    Args:
        context: The worker's :class:`mirrorkit.WorkerContext`.
        checkpoint_dir: The folder the chief's checkpoints go in; reuse it to resume.
        checkpointing: The function under test (see above).
        steps: Total training steps.
        save_every: Call ``save`` after every this many steps.
        per_replica_batch: Examples per replica per step.
        learning_rate: SGD's learning rate.
        momentum: SGD's momentum (not 0, so the optimizer has state to restore).

    Returns:
        A dict: ``problem`` (what went wrong before training, else ``""``), ``found`` (the
        latest checkpoint in ``checkpoint_dir`` at the start, or ``None``), ``start`` (the
        step training started after), ``fresh`` and ``restored`` (the state before and after
        ``checkpointing``), ``workers`` (each worker's start step), ``saved`` (the state
        after each save, by step), ``losses``, ``weights``, ``seen`` and ``latest`` (the
        latest checkpoint in ``checkpoint_dir`` at the end). A state is a dict of ``step``,
        ``seen``, ``weights`` and ``optimizer`` (arrays).

    Raises:
        RuntimeError: If ``checkpointing`` or ``save`` raises; the message starts with
            ``in checkpointing(...)`` or ``in save(N)`` and names the error.

    Example:
        >>> import tempfile
        >>> import mirrorkit as mk
        >>> from mirrorkit.checks.resume import resumable_training
        >>> def no_checkpoints(context, checkpoint_dir, model, optimizer, step, seen):
        ...     return lambda number: None
        >>> run = mk.LocalCluster(2, echo=False).run(
        ...     resumable_training, args=(tempfile.mkdtemp(), no_checkpoints), kwargs={"steps": 2})
        >>> run.result["start"], sorted(run.result["losses"]), run.result["seen"]
        (0, [1, 2], 64)
    """
    import tensorflow as tf

    strategy = context.strategy
    global_batch = per_replica_batch * strategy.num_replicas_in_sync
    model, optimizer, step, seen = _model_and_counters(strategy, learning_rate, momentum)

    def state() -> dict:  # reading `seen` all-reduces it: every worker calls this together
        return _state(model, optimizer, step, seen)

    result = {"problem": "", "found": tf.train.latest_checkpoint(checkpoint_dir)}
    result["fresh"] = state()
    try:
        save = checkpointing(context, checkpoint_dir, model, optimizer, step, seen)
    except Exception as error:
        raise RuntimeError(f"{SETTING_UP}...) raised {_one_line(error)}") from None
    result["restored"] = state()
    result["start"] = start = result["restored"]["step"]
    rows = _every_workers(context, [start, *_flat(result["restored"])])
    result["workers"] = [int(row[0]) for row in rows]
    if not callable(save):
        got = "None" if save is None else f"a {type(save).__name__}"
        result["problem"] = (
            f"checkpointing returned {got}, not a function: return save, a function of the "
            "step number that saves a checkpoint (def save(number): ...; return save)"
        )
    elif not 0 <= start <= steps:
        result["problem"] = f"step is {start} after checkpointing, outside 0..{steps}"
    elif any(not np.array_equal(row, rows[0]) for row in rows):
        result["problem"] = "the workers restored different states"
    if result["problem"]:
        return result

    @tf.function
    def train_step(iterator):
        def replica_step(x, y):
            with tf.GradientTape() as tape:
                per_example = tf.square(model(x, training=True) - y)[:, 0]
                loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
            gradients = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
            seen.assign_add(tf.shape(x, out_type=tf.int64)[0])
            return loss

        return strategy.reduce("SUM", strategy.run(replica_step, args=next(iterator)), None)

    batches = step_batches(
        context, first_step=start + 1, last_step=steps, per_replica_batch=per_replica_batch
    )
    iterator = iter(batches)
    result["losses"], result["saved"] = {}, {}
    for number in range(start + 1, steps + 1):
        loss = float(train_step(iterator))
        step.assign(number)
        if number % save_every == 0:
            try:
                save(number)
            except Exception as error:
                raise RuntimeError(f"{SAVING}{number}) raised {_one_line(error)}") from None
            result["saved"][number] = state()
        result["losses"][number] = loss
        context.report(number, loss=loss)
    final = state()
    result["weights"], result["seen"] = final["weights"], final["seen"]
    result["latest"] = tf.train.latest_checkpoint(checkpoint_dir)
    return result


def _model_and_counters(strategy, learning_rate: float, momentum: float):
    """The model, its optimizer, and the counters ``step`` and ``seen``, under ``strategy``."""
    import keras
    import tensorflow as tf

    with strategy.scope():
        model = keras.Sequential([keras.Input((len(TRUE_WEIGHTS),)), keras.layers.Dense(1)])
        optimizer = keras.optimizers.SGD(learning_rate, momentum=momentum)
        optimizer.build(model.trainable_variables)
        step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        seen = tf.Variable(
            0,
            dtype=tf.int64,
            trainable=False,
            name="seen",
            synchronization=tf.VariableSynchronization.ON_READ,
            aggregation=tf.VariableAggregation.SUM,
        )
    return model, optimizer, step, seen


def _state(model, optimizer, step, seen) -> dict:
    """What a checkpoint should hold, as NumPy values (reading ``seen`` all-reduces it)."""
    return {
        "step": int(step.numpy()),
        "seen": int(seen.read_value().numpy()),
        "weights": [np.array(w) for w in model.get_weights()],
        "optimizer": [np.array(v) for v in optimizer.variables],
    }


def check_resume(
    checkpointing, *, num_workers: int = 2, seed: int = 0, timeout: float = 90.0
) -> CheckResult:
    """Check that ``checkpointing`` makes a killed cluster resume exactly where it stopped.

    Three runs of :func:`resumable_training` on a fresh :class:`mirrorkit.LocalCluster`:
    one without a fault, one in which the last worker is killed (SIGKILL) a few steps after
    a save, and a relaunch in the killed run's folder, after deleting every folder inside it
    (the workers' private folders: a replacement machine does not have them). ``seed`` picks
    how often ``save`` is called and when the worker dies (for seeds 0 and 42: a save every
    4 steps, killed after step 6), so that no step number written into an answer fits every
    seed. It passes only if the relaunch started after the last save before the kill on
    every worker, with the model, the optimizer, ``step`` and ``seen`` of that step, and
    ended with the weights of the run without a fault, bit for bit. Each worker but the
    chief is given its own copy of the shared folder as ``checkpoint_dir``, so that what it
    saves there is seen as its own. Each run takes some seconds; every process ends with it.

    Args:
        checkpointing: The learner's function ``(context, checkpoint_dir, model, optimizer,
            step, seen)`` returning ``save(number)`` (``...``: not attempted).
        num_workers: Workers in the cluster (2-16).
        seed: Seed every worker applies with :func:`mirrorkit.make_reproducible`; it also
            picks the steps of the saves and of the kill.
        timeout: Seconds each of the three runs may take.

    Returns:
        A :class:`mirrorkit.CheckResult`; when it did not pass, its message names the mistake.

    Raises:
        TypeError: If ``num_workers`` or ``seed`` is not an int or ``timeout`` not a number.
        ValueError: If ``num_workers`` is outside 2-16 or ``timeout`` is not above 0.

    Example:
        >>> import mirrorkit as mk
        >>> mk.check_resume(...)
        NOT YET: not attempted yet: replace the ... with your answer and run the cell.
    """
    write = (
        "num_workers=2 (the check kills the last worker while the others go on, so it needs two)"
    )
    require_count("num_workers", num_workers, minimum=2, maximum=16, write=write)
    require_int("seed", seed, must="an int", write="seed=SEED or seed=0")
    timeout = require_seconds("timeout", timeout, write="timeout=90 (seconds per run)")
    if checkpointing is ...:
        return NOT_ATTEMPTED
    problem = signature_problem(checkpointing)
    if problem:
        return CheckResult(False, problem)
    folder = Path(tempfile.mkdtemp(prefix="mirrorkit-resume-"))
    try:
        return _three_runs(checkpointing, folder, num_workers, seed, timeout)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _three_runs(checkpointing, folder: Path, num_workers: int, seed: int, timeout: float):
    import mirrorkit as mk

    cluster = mk.LocalCluster(num_workers, seed=seed, echo=False, collective_timeout=timeout)
    last = num_workers - 1
    save_every, kill_after, _ = plan(seed)

    def run(shared: Path, fault=None):
        views = _views(shared, num_workers)

        def train(context):
            return resumable_training(
                context, views[context.task_id], checkpointing, save_every=save_every
            )

        return cluster.run(train, timeout=timeout, fault=fault)

    # 1. Without a fault: the reference, and the first test of the function.
    whole = folder / "uninterrupted"
    try:
        reference = run(whole).result
    except mk.ClusterError as error:
        return CheckResult(False, failure("in a run without any fault", error, save_every))
    except TypeError as error:  # the function cannot be sent to the workers
        return CheckResult(False, f"checkpointing cannot run on the workers: {error}")
    if reference["problem"]:
        return CheckResult(False, run_problem(reference, "in a run without any fault"))
    if reference["start"] != 0:
        return CheckResult(
            False,
            f"in a new, empty checkpoint_dir the run started after step {reference['start']}, "
            "not 0: restore only from tf.train.latest_checkpoint(checkpoint_dir), the folder "
            "the function is given, never from a folder of your own.",
        )
    if reference["latest"] is None:
        return CheckResult(
            False,
            f"the function never saved a checkpoint in checkpoint_dir: after a run of {STEPS} "
            "steps it holds none, so a killed cluster has nothing to resume from. save(number) "
            "must write one on every worker: the chief into checkpoint_dir itself, the others "
            "into context.write_dir(checkpoint_dir).",
        )
    crowded = [k for k, view in enumerate(_views(whole, num_workers)) if k and _files_in(view)]
    if crowded:
        return CheckResult(
            False,
            f"worker {_names(crowded)} saved into checkpoint_dir itself, where the chief's "
            "checkpoints go: workers that save the same files into one folder collide (one "
            "deletes the temporary files the other is still merging) and the run fails at "
            "random. Every worker saves, each into its own folder: the chief into "
            "checkpoint_dir, the others into context.write_dir(checkpoint_dir).",
        )

    # 2. The last worker is killed after step 6; the checkpoint of step 4 should remain.
    lab = folder / "killed"
    try:
        killed = run(lab, mk.KillWorker(worker=last, at_step=kill_after))
    except mk.WorkerFailedError as error:
        if not error.run.exits.get(last, "").startswith("killed"):
            return CheckResult(
                False, failure("in the run in which a worker is killed", error, save_every)
            )
    except mk.ClusterError as error:
        return CheckResult(
            False, failure("in the run in which a worker is killed", error, save_every)
        )
    else:
        return CheckResult(
            False,
            f"worker {last} was to be killed after step {kill_after}, but the run finished "
            f"(it started after step {killed.result['start']}), so nothing was tested: restore "
            "only from checkpoint_dir.",
        )
    _replace_machines(lab, num_workers)

    # 3. Relaunched in the same folder: it must resume after step 4 and end as the reference.
    try:
        resumed = run(lab)
    except mk.ClusterError as error:
        return CheckResult(False, failure("in the relaunched run", error, save_every))
    return verdict(reference, resumed.results, last, seed)


def _views(shared: Path, num_workers: int) -> list[str]:
    """The folder each worker is given as checkpoint_dir: the chief the shared one itself.

    The other workers get a folder of their own that holds what the shared one did when the
    run started (:func:`_replace_machines` copies it), as a shared file system would show it;
    so what a worker writes into checkpoint_dir itself stays visible as its own.
    """
    views = [shared] + [
        shared.with_name(f"{shared.name}-as-worker-{k}") for k in range(1, num_workers)
    ]
    for view in views:
        view.mkdir(parents=True, exist_ok=True)
    return [str(view) for view in views]


def _replace_machines(shared: Path, num_workers: int) -> None:
    """After a fault: private folders gone (replacement machines), the shared one as it was."""
    for private in shared.iterdir():
        if private.is_dir():
            shutil.rmtree(private, ignore_errors=True)
    for view in _views(shared, num_workers)[1:]:
        shutil.rmtree(view, ignore_errors=True)
        Path(view).mkdir()
        for file in _files_in(shared):
            shutil.copy2(file, Path(view) / file.name)


def _files_in(folder: str | Path) -> list[Path]:
    return sorted(path for path in Path(folder).iterdir() if path.is_file())


def _every_workers(context: Any, vector: list) -> np.ndarray:
    """Each worker's ``vector`` (all the same length), as rows in worker order, on every worker."""
    import tensorflow as tf

    strategy = context.strategy
    rows = np.zeros((context.num_workers, len(vector)))
    rows[context.task_id] = vector
    local = strategy.num_replicas_in_sync // context.num_workers

    @tf.function(autograph=False)
    def share(matrix):
        return strategy.run(tf.identity, args=(matrix,))

    total = strategy.reduce("SUM", share(tf.constant(rows)), axis=None)
    return np.asarray(total) / local  # each local replica added the worker's row once


def _flat(state: dict) -> np.ndarray:
    parts = [np.asarray(state["seen"], float).ravel()]
    parts += [np.asarray(a, float).ravel() for a in (*state["weights"], *state["optimizer"])]
    return np.concatenate(parts)


def _one_line(error: BaseException) -> str:
    lines = error_lines(error)
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def _names(items: list) -> str:
    return ", ".join(str(i) for i in items)
