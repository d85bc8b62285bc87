"""Training functions for :class:`mirrorkit.LocalCluster` that survive a killed worker.

Each takes a :class:`mirrorkit.WorkerContext` first and saves its progress as it goes,
so a relaunched cluster resumes where the last save left off: the data of every step is
a pure function of the step number, so a resumed run sees the batches an uninterrupted
run would have seen.

Example:
    >>> from mirrorkit.training.recipes import compare_weights
    >>> compare_weights([[1.0, 2.0]], [[1.0, 2.0]]).equal
    True
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from mirrorkit.errors import CheckpointSkippedWarning
from mirrorkit.report.render import Report, Reported
from mirrorkit.training.checkpoints import restore_latest

# The linear function the examples learn: y = x . TRUE_WEIGHTS + TRUE_BIAS.
TRUE_WEIGHTS = (1.0, -2.0, 3.0, 0.5)
TRUE_BIAS = 1.0


def step_batches(context: Any, *, first_step: int, last_step: int, per_replica_batch: int):
    """A distributed dataset whose element for step ``s`` depends only on ``s`` and the replica.

    Args:
        context: The worker's :class:`mirrorkit.WorkerContext`.
        first_step: First step to produce (1-based).
        last_step: Last step to produce.
        per_replica_batch: Examples per replica per step.

    Returns:
        A ``tf.distribute.DistributedDataset`` of ``(x, y)`` per-replica batches.

    Example:
        >>> from mirrorkit.training.recipes import step_batches
        >>> step_batches.__name__
        'step_batches'
    """
    import tensorflow as tf

    weights = tf.constant([[w] for w in TRUE_WEIGHTS])

    def dataset_fn(input_context):
        # One pipeline per worker feeds its local replicas in turn: element e is step
        # e // local of local replica e % local.
        local = input_context.num_replicas_in_sync // input_context.num_input_pipelines
        pipeline = tf.constant(input_context.input_pipeline_id, tf.int64)

        def make(element):
            seed = tf.stack([element, pipeline])
            x = tf.random.stateless_normal((per_replica_batch, len(TRUE_WEIGHTS)), seed=seed)
            return x, tf.matmul(x, weights) + TRUE_BIAS

        return tf.data.Dataset.range((first_step - 1) * local, last_step * local).map(make)

    return context.strategy.distribute_datasets_from_function(dataset_fn)


def checkpointed_training(
    context: Any,
    checkpoint_dir: str,
    *,
    steps: int = 12,
    save_every: int = 4,
    per_replica_batch: int = 16,
    learning_rate: float = 0.1,
    momentum: float = 0.5,
) -> dict:
    """A custom training loop that checkpoints every ``save_every`` steps and resumes.

    Every worker restores the chief's newest readable checkpoint (if any) with
    :func:`mirrorkit.restore_latest`, which refuses one of another model or optimizer and
    passes over a damaged one (printing which it used); then it trains the remaining
    steps, saves (every worker must: saving is collective; the chief's copy is the one
    kept) and reports each step's loss.

    Args:
        context: The worker's :class:`mirrorkit.WorkerContext`.
        checkpoint_dir: Where the chief keeps checkpoints; reuse it to resume.
        steps: Total training steps.
        save_every: Checkpoint after every this many steps.
        per_replica_batch: Examples per replica per step.
        learning_rate: SGD's learning rate.
        momentum: SGD's momentum (not 0, so the optimizer has state a resume must restore).

    Returns:
        ``{"resumed_from": step or 0, "weights": [arrays], "losses": {step: loss},
        "restored": checkpoint file name or None, "skipped": [unreadable newer files]}``.

    Example:
        >>> import tempfile
        >>> import mirrorkit as mk
        >>> from mirrorkit.training.recipes import checkpointed_training
        >>> run = mk.LocalCluster(2, echo=False).run(
        ...     checkpointed_training, args=(tempfile.mkdtemp(),), kwargs={"steps": 2})
        >>> run.result["resumed_from"], sorted(run.result["losses"])
        (0, [1, 2])
    """
    import keras
    import tensorflow as tf

    strategy = context.strategy
    global_batch = per_replica_batch * strategy.num_replicas_in_sync
    with strategy.scope():
        model = keras.Sequential([keras.Input((len(TRUE_WEIGHTS),)), keras.layers.Dense(1)])
        optimizer = keras.optimizers.SGD(learning_rate, momentum=momentum)
        optimizer.build(model.trainable_variables)
        step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=step)
    with warnings.catch_warnings():  # printed below instead, on the worker's output
        warnings.simplefilter("ignore", CheckpointSkippedWarning)
        restored = restore_latest(checkpoint, checkpoint_dir)  # refuses a foreign checkpoint
    if restored.skipped:
        print(restored, flush=True)  # the newest could not be read: say which one was used
    resumed_from = int(step.numpy())
    manager = tf.train.CheckpointManager(checkpoint, context.write_dir(checkpoint_dir), 3)

    @tf.function
    def train_step(iterator):
        def replica_step(x, y):
            with tf.GradientTape() as tape:
                per_example = tf.square(model(x, training=True) - y)[:, 0]
                loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
            gradients = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
            return loss

        return strategy.reduce("SUM", strategy.run(replica_step, args=next(iterator)), None)

    batches = step_batches(
        context, first_step=resumed_from + 1, last_step=steps, per_replica_batch=per_replica_batch
    )
    iterator = iter(batches)
    losses = {}
    for number in range(resumed_from + 1, steps + 1):
        loss = float(train_step(iterator))
        step.assign(number)
        if number % save_every == 0 or number == steps:
            manager.save(checkpoint_number=number)
        losses[number] = loss
        context.report(number, loss=loss)
    return {
        "resumed_from": resumed_from,
        "weights": [np.array(w) for w in model.get_weights()],
        "losses": losses,
        "restored": restored.path and os.path.basename(restored.path),
        "skipped": [name for name, _ in restored.skipped],
    }


def fit_training(
    context: Any,
    backup_dir: str,
    *,
    epochs: int = 3,
    examples: int = 128,
    per_replica_batch: int = 16,
    learning_rate: float = 0.1,
    momentum: float = 0.5,
    plain_fit: bool = False,
) -> dict:
    """Keras ``fit`` on every worker, with ``BackupAndRestore`` so a relaunch resumes.

    The model is built in the strategy's scope and wrapped with
    :func:`mirrorkit.fit_ready`, the path on which ``fit`` works under
    ``MultiWorkerMirroredStrategy`` in Keras 3 (``plain_fit=True`` skips the wrapper, to
    see the failure). ``BackupAndRestore`` saves weights and optimizer state at the end
    of every epoch, each worker in its own folder (a shared one fails: every worker
    writes the same HDF5 file). The data is the same every epoch, in the same order.

    Args:
        context: The worker's :class:`mirrorkit.WorkerContext`.
        backup_dir: Parent folder of the per-worker backups; reuse it to resume.
        epochs: Epochs to train.
        examples: Examples per epoch.
        per_replica_batch: Examples per replica per step.
        learning_rate: SGD's learning rate.
        momentum: SGD's momentum.
        plain_fit: Call ``fit`` on the model itself, without :func:`mirrorkit.fit_ready`.

    Returns:
        ``{"epochs_run": [...], "losses": [...], "weights": [arrays]}``.

    Example:
        >>> import tempfile
        >>> import mirrorkit as mk
        >>> from mirrorkit.training.recipes import fit_training
        >>> run = mk.LocalCluster(2, echo=False).run(
        ...     fit_training, args=(tempfile.mkdtemp(),), kwargs={"epochs": 2})
        >>> run.result["epochs_run"]
        [0, 1]
    """
    import keras
    import tensorflow as tf

    from mirrorkit.training.keras_fit import fit_ready

    strategy = context.strategy
    global_batch = per_replica_batch * strategy.num_replicas_in_sync
    rng = np.random.default_rng(0)
    x = rng.normal(size=(examples, len(TRUE_WEIGHTS))).astype("float32")
    y = (x @ np.array(TRUE_WEIGHTS, dtype="float32")[:, None] + TRUE_BIAS).astype("float32")
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(global_batch)
    with strategy.scope():
        model = keras.Sequential([keras.Input((len(TRUE_WEIGHTS),)), keras.layers.Dense(1)])
    trainable = model if plain_fit else fit_ready(model)
    backup = keras.callbacks.BackupAndRestore(f"{backup_dir}/worker-{context.task_id}")
    with strategy.scope():
        trainable.compile(
            optimizer=keras.optimizers.SGD(learning_rate, momentum=momentum), loss="mse"
        )
        history = trainable.fit(
            dataset,
            epochs=epochs,
            shuffle=False,  # the same order every epoch, so a resumed epoch repeats exactly
            callbacks=[backup, context.keras_callback()],
            verbose=0,
        )
    return {
        "epochs_run": list(history.epoch),
        "losses": [float(np.ravel(v)[0]) for v in history.history["loss"]],
        "weights": [np.array(w) for w in model.get_weights()],
    }


@dataclass(frozen=True, repr=False)
class WeightComparison(Reported):
    """How two sets of weights differ.

    Attributes:
        equal: Every array is bitwise identical.
        max_abs_difference: Largest absolute difference over all arrays.
        arrays: How many arrays were compared.

    Example:
        >>> from mirrorkit.training.recipes import compare_weights
        >>> compare_weights([[1.0, 2.0]], [[1.0, 2.0]]).equal
        True
    """

    equal: bool
    max_abs_difference: float
    arrays: int

    def report(self) -> Report:
        """The comparison as a one-line report.

        Example:
            >>> from mirrorkit.training.recipes import compare_weights
            >>> print(compare_weights([[1.0, 2.0]], [[1.0, 2.5]]))
            1 weight arrays: different (largest difference 0.5)
        """
        verdict = "identical, bit for bit" if self.equal else "different"
        difference = f"largest difference {self.max_abs_difference:.3g}"
        line = f"{self.arrays} weight arrays: {verdict} ({difference})"
        return Report(headline=(line,), tone="good" if self.equal else "warn")


def compare_weights(first: list, second: list) -> WeightComparison:
    """Compare two lists of weight arrays (for instance a resumed run and an uninterrupted one).

    Args:
        first: Weight arrays.
        second: Weight arrays of the same shapes.

    Returns:
        A :class:`WeightComparison`.

    Raises:
        ValueError: If the lists differ in length or shapes.

    Example:
        >>> from mirrorkit.training.recipes import compare_weights
        >>> print(compare_weights([[1.0, 2.0]], [[1.0, 2.5]]))
        1 weight arrays: different (largest difference 0.5)
    """
    if len(first) != len(second):
        raise ValueError(f"{len(first)} arrays against {len(second)}: compare the same model.")
    largest = 0.0
    equal = True
    for a, b in zip(first, second, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            raise ValueError(f"shapes {a.shape} and {b.shape} differ: compare the same model.")
        equal = equal and bool(np.array_equal(a, b))
        if a.size:
            largest = max(largest, float(np.max(np.abs(a.astype(float) - b.astype(float)))))
    return WeightComparison(equal=equal, max_abs_difference=largest, arrays=len(first))
