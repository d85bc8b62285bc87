"""A checkpoint's values and a restore's result as data: what ``check_restore`` judges.

Both sides of a restore are written down before anything is judged: what a checkpoint holds
(:func:`saved_record`: each weight and optimizer variable as its shape, dtype and a digest of
its bytes, and the step count) and what one call of the learner's ``restore(path)`` gave back
(:func:`restored_record`: the same digests, where its variables live, or why there is no
model). :func:`drawn_checkpoint` writes a checkpoint of the saved model's structure whose
values are moved by a seeded draw, so a restore that does not read its path gives other
values back. The records are plain data: a grader draws the checkpoints in one process,
restores them in the learner's and compares the records in a third.

Example:
    >>> sorted(NAMES)
    ['model', 'optimizer']
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

import numpy as np

from mirrorkit.checks._digests import digest
from mirrorkit.checks._learner_runs import learner_error

NAMES = frozenset({"model", "optimizer"})  # the checkpoint names a drawn copy can write


def saved_record(model) -> dict:
    """What a checkpoint of ``model`` (with ``model.optimizer``) holds, as digests."""
    optimizer = model.optimizer
    return {
        "weights": [digest(w) for w in model.weights],
        "steps": int(optimizer.iterations.numpy()),
        "optimizer": [digest(v) for v in optimizer.variables],
    }


def restored_record(restore, path, reference, strategy) -> dict:
    """What one call ``restore(path)`` gave back, as data (see :func:`judge_record`'s reader).

    ``{"failed": sentence}`` when there is no model to judge; else the model's weights as
    digests, whether they are ``reference``'s own variables, where they live (the variable's
    class, whether it is distributed, whether ``strategy`` made it) and its optimizer
    (``None``, or its step count and variables as digests, built first when it was not).
    """
    import keras
    import tensorflow as tf

    if not callable(restore):
        return {
            "failed": f"restore is a {type(restore).__name__}, not a function: define "
            "def restore(path): ... returning the restored model."
        }
    try:
        model = restore(str(path))
    except Exception as error:  # noqa: BLE001 - the learner's code: a verdict, not a traceback
        return {
            "failed": f"{learner_error(error, 'restore')} A checkpoint written by "
            "tf.train.Checkpoint.save is read by tf.train.Checkpoint(...).restore(path); "
            "model.load_weights and keras.models.load_model read Keras's own files."
        }
    if not isinstance(model, keras.Model):
        return {
            "failed": f"restore returned {type(model).__name__}, not a Keras model: return the "
            "model you restored into."
        }
    saved = {id(v) for v in reference.weights}
    record = {
        "same": model is reference or any(id(v) in saved for v in model.weights),
        "weights": [digest(w) for w in model.weights],
    }
    if not model.weights:
        return record | {"optimizer": None}
    variable = model.weights[0].value
    distributed = isinstance(variable, tf.distribute.DistributedValues)
    record["placement"] = {
        "kind": type(variable).__name__,
        "distributed": distributed,
        "in_scope": strategy is not None
        and bool(strategy.extended.variable_created_in_scope(variable)),
    }
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None:
        return record | {"optimizer": None}
    steps = int(optimizer.iterations.numpy())
    if not optimizer.built:
        # Slot variables restore when they are created: the first step builds them, in the
        # scope of the strategy that made the model's variables (if one did).
        owner = getattr(variable, "distribute_strategy", None) if distributed else None
        with owner.scope() if owner is not None else contextlib.nullcontext():
            optimizer.build(model.trainable_variables)
    variables = [digest(v) for v in optimizer.variables]
    return record | {"optimizer": {"steps": steps, "variables": variables}}


def checkpoint_names(tf, path) -> frozenset:
    """The names the checkpoint at ``path`` was saved under (``model``, ``optimizer``...)."""
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(
        tf.train.load_checkpoint(str(path)).get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH")
    )
    return frozenset(child.local_name for child in graph.nodes[0].children) - {"save_counter"}


def drawn_checkpoint(reference, path, folder, seed: int):
    """``(path, saved record)`` of a copy of ``reference`` whose values moved, or None.

    The copy is saved under the names the checkpoint at ``path`` uses, into ``folder``;
    None when those names are not ones a copy can fill (``model`` and ``optimizer``), or the
    model cannot be copied.
    """
    import keras
    import tensorflow as tf

    names = checkpoint_names(tf, path)
    if not names or not names <= NAMES:
        return None
    try:
        other = _moved_copy(keras, reference, np.random.default_rng(seed))
    except Exception:  # noqa: BLE001 - a model the draw cannot copy: no drawn checkpoint
        return None
    parts = {"model": other, "optimizer": other.optimizer}
    checkpoint = tf.train.Checkpoint(**{name: parts[name] for name in names})
    saved = checkpoint.save(str(Path(folder) / "ckpt"))
    return saved, saved_record(other)


def drawn_files(reference, path, seeds) -> list[dict]:
    """Checkpoints drawn for each seed, as ``{file name: bytes}`` with their saved records.

    Example (what a grader sends): ``[{"prefix": "ckpt-1", "files": {...}, "saved": {...}}]``;
    empty when no checkpoint can be drawn for ``path`` (:func:`drawn_checkpoint`).
    """
    drawn = []
    for seed in seeds:
        with tempfile.TemporaryDirectory(prefix="mirrorkit-drawn-") as folder:
            made = drawn_checkpoint(reference, path, folder, seed)
            if made is None:
                return []
            saved, record = made
            files = {p.name: p.read_bytes() for p in Path(folder).iterdir() if p.is_file()}
            drawn.append({"prefix": Path(saved).name, "files": files, "saved": record})
    return drawn


def _moved_copy(keras, reference, rng):
    """A one-device copy of ``reference`` whose weights and optimizer state moved by ``rng``."""
    other = keras.models.clone_model(reference)
    optimizer = type(reference.optimizer).from_config(reference.optimizer.get_config())
    other.compile(optimizer=optimizer, loss=reference.loss)
    other.optimizer.build(other.trainable_variables)
    for variable, saved in zip(other.weights, reference.weights, strict=True):
        variable.assign(np.asarray(saved) + rng.normal(size=saved.shape).astype(saved.dtype))
    pairs = zip(other.optimizer.variables, reference.optimizer.variables, strict=True)
    for variable, saved in pairs:
        value = np.asarray(saved)
        step = rng.normal(size=value.shape) if value.dtype.kind == "f" else rng.integers(1, 9)
        variable.assign((value + np.abs(step)).astype(value.dtype))
    return other
