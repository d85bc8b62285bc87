"""Restore the newest readable checkpoint of a folder, and only if it fits the objects.

Example:
    >>> import tempfile, tensorflow as tf
    >>> import mirrorkit as mk
    >>> print(mk.restore_latest(tf.train.Checkpoint(step=tf.Variable(0)), tempfile.mkdtemp()))
    no checkpoint in the folder: start from step 0
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

from mirrorkit._validate import refuse, require_path
from mirrorkit.errors import (
    CheckpointDamagedError,
    CheckpointMismatchError,
    CheckpointSkippedWarning,
)
from mirrorkit.report.render import Report, Reported
from mirrorkit.training import _checkpoint_files as files


@dataclass(frozen=True, repr=False)
class RestoredCheckpoint(Reported):
    """Which checkpoint :func:`restore_latest` restored, and which it passed over and why.

    Attributes:
        path: The checkpoint restored (its prefix, e.g. ``/tmp/run/ckpt-8``), or ``None``: the
            folder holds no checkpoint, so training starts from step 0.
        skipped: ``(file, why)`` of each newer checkpoint that could not be read.
        folder: The folder searched.

    Example:
        >>> from mirrorkit.training.checkpoints import RestoredCheckpoint
        >>> print(RestoredCheckpoint(path="/run/ckpt-4", skipped=(("ckpt-8", "cut short"),),
        ...                          folder="/run"))
        restored ckpt-4 from /run
        skipped ckpt-8: cut short
    """

    path: str | None
    skipped: tuple[tuple[str, str], ...]
    folder: str

    def report(self) -> Report:
        """The restored file, then one line per skipped one."""
        if self.path is None:
            headline = "no checkpoint in the folder: start from step 0"
        else:
            headline = f"restored {os.path.basename(self.path)} from {self.folder}"
        lines = tuple(f"skipped {name}: {why}" for name, why in self.skipped)
        return Report(headline=(headline, *lines), tone="warn" if self.skipped else "good")


def restore_latest(checkpoint, directory) -> RestoredCheckpoint:
    """Restore ``checkpoint`` from the newest readable checkpoint in ``directory``, checked.

    ``tf.train.latest_checkpoint`` plus ``restore`` can go wrong without a word: a checkpoint
    of another model loads, a missing or damaged newest file looks like an empty folder. Here
    the checkpoints of the folder (named by its ``checkpoint`` state file or found on disk)
    are tried newest first. One whose files cannot all be read is skipped, with a
    :class:`mirrorkit.CheckpointSkippedWarning` naming it. The first readable one must *fit*:
    every variable it holds reaches, by the same names, a variable of ``checkpoint`` of the
    same shape and dtype, and every variable ``checkpoint`` tracks is in it. Then it is
    restored and TensorFlow's ``assert_consumed()`` confirms every value found its place.

    Args:
        checkpoint: The ``tf.train.Checkpoint`` to restore into, built as for saving
            (model built, optimizer built with ``optimizer.build(model.trainable_variables)``).
        directory: The folder ``tf.train.CheckpointManager`` saves into.

    Returns:
        A :class:`~mirrorkit.training.checkpoints.RestoredCheckpoint`: which file was
        restored (``path`` is ``None`` for an empty or missing folder: start from 0) and
        which were skipped.

    Raises:
        TypeError: If ``checkpoint`` is not a ``tf.train.Checkpoint``, or ``directory`` is
            not a path.
        ValueError: If ``directory`` is a checkpoint's file or prefix rather than its folder.
        CheckpointMismatchError: If the newest readable checkpoint does not fit; nothing is
            restored and the message names each variable that differs. Also if the folder
            holds no checkpoint but a model saved another way (a ``.weights.h5``, a
            ``.keras`` file, a SavedModel, a Keras ``BackupAndRestore`` backup): it is
            named, with how to load it, rather than training from step 0 beside it.
        CheckpointDamagedError: If the folder holds checkpoint files none of which can be
            read; the message names each file and why.
        FolderInUseError: If another live run writes the folder (it holds the folder's
            lease, see :class:`mirrorkit.FolderInUseError`): nothing is read, since
            TensorFlow writes a checkpoint's ``.index`` file under its final name and the
            run deletes its old checkpoints as it saves. The message names the run (host,
            process, since when) and what to do. The workers of the run that holds it
            restore as usual.

    Example:
        >>> import tempfile, tensorflow as tf
        >>> import mirrorkit as mk
        >>> folder = tempfile.mkdtemp()
        >>> saved = tf.train.Checkpoint(step=tf.Variable(7))
        >>> tf.train.CheckpointManager(saved, folder, 3).save(checkpoint_number=7)[-6:]
        'ckpt-7'
        >>> resumed = tf.train.Checkpoint(step=tf.Variable(0))
        >>> restored = mk.restore_latest(resumed, folder)
        >>> int(resumed.step), restored.path[-6:], restored.skipped
        (7, 'ckpt-7', ())
    """
    folder = _arguments(checkpoint, directory)
    import mirrorkit as mk  # the public error; its check reads the folder's lease

    mk.FolderInUseError.check(folder, reading=True)
    checkpoint.save_counter  # noqa: B018 - created now, so it has its place when compared
    candidates, skipped = files.listed_checkpoints(folder)
    for prefix, problem in candidates:
        reader = None
        if problem is None:
            reader, problem = files.read_problem(prefix)
        if problem is not None:
            skipped.append((os.path.basename(prefix), problem))
            continue
        _restore_fitting(checkpoint, prefix, reader)
        restored = RestoredCheckpoint(path=prefix, skipped=tuple(skipped), folder=str(folder))
        if skipped:
            warnings.warn(str(restored), CheckpointSkippedWarning, stacklevel=2)
        return restored
    if skipped:
        raise CheckpointDamagedError(_damaged_message(folder, skipped))
    something_else = files.other_model_files(folder)
    if something_else:
        raise CheckpointMismatchError(_something_else_message(folder, something_else))
    return RestoredCheckpoint(path=None, skipped=(), folder=str(folder))


def _arguments(checkpoint, directory):
    import tensorflow as tf

    write = "restore_latest(tf.train.Checkpoint(model=model, optimizer=optimizer), folder)"
    if isinstance(checkpoint, tf.train.CheckpointManager):
        refuse(
            "checkpoint",
            checkpoint,
            must="a tf.train.Checkpoint",
            write="restore_latest(manager.checkpoint, folder)",
        )
    if not isinstance(checkpoint, tf.train.Checkpoint):
        refuse("checkpoint", checkpoint, must="a tf.train.Checkpoint", write=write)
    folder = require_path("directory", directory, write="the folder CheckpointManager saves into")
    if folder.is_file() or (folder.name and folder.with_name(folder.name + ".index").is_file()):
        refuse(
            "directory",
            directory,
            must="the folder of the checkpoints, not one checkpoint",
            write=f"restore_latest(checkpoint, {str(folder.parent)!r})",
            error=ValueError,
        )
    return folder


def _restore_fitting(checkpoint, prefix: str, reader) -> None:
    """Restore ``prefix`` into ``checkpoint`` if it fits, else raise a mismatch naming why."""
    name = os.path.basename(prefix)
    if files.GRAPH_KEY not in reader.get_variable_to_shape_map():
        raise CheckpointMismatchError(
            f"{name} holds no object graph: it was written by tf.compat.v1's Saver, which "
            "saves by variable name. Restore it with tf.compat.v1.train.Saver, or start anew."
        )
    found, counts = files.differences(checkpoint, reader)
    if found:
        shapes = reader.get_variable_to_shape_map()
        raise CheckpointMismatchError(_mismatch_message(checkpoint, prefix, found, counts, shapes))
    try:
        checkpoint.restore(prefix).assert_consumed()
    except AssertionError as error:
        raise CheckpointMismatchError(
            f"{name} was restored only in part: {files.short(error)}"
        ) from error


def _mismatch_message(checkpoint, prefix: str, found, counts, shapes=None) -> str:
    import keras
    import tensorflow as tf

    name = os.path.basename(prefix)
    children = tf.train.TrackableView(checkpoint).children(checkpoint)
    optimizers = {n for n, v in children.items() if isinstance(v, keras.optimizers.Optimizer)}
    lines = [f"{name} does not fit the objects it would be restored into; nothing was restored."]
    for top in sorted({d.path.split("/")[0] for d in found}):
        saved, live = counts.get(top, (0, 0))
        what = [_difference_text(d) for d in found if d.path.split("/")[0] == top]
        shown = "; ".join(what[:4]) + (f"; and {len(what) - 4} more" if len(what) > 4 else "")
        lines.append(f"{top}: the checkpoint holds {saved} variables, this {top} {live}: {shown}.")
    differing = {d.path.split("/")[0] for d in found}
    others = sorted(set(children) - optimizers - {"save_counter"})
    unbuilt = sorted(n for n in differing if getattr(children.get(n), "built", True) is False)
    if unbuilt:
        lines.append(
            f"Not built yet, so without the variables to restore into: {', '.join(unbuilt)}. "
            "Build before restoring: the model with keras.Input (or model.build(input_shape)), "
            "the optimizer with optimizer.build(model.trainable_variables)."
        )
    elif differing <= optimizers and others:
        top = sorted(differing)[0]
        lines.append(_optimizer_advice(children, top, counts[top], others, prefix))
    elif len(differing) == 1 and _only_its_optimizer(children, found, *differing):
        lines.append(_compiled_model_advice(children, *differing, prefix, shapes or {}))
    else:
        lines.append(
            "It was written by a different model: resume from the folder of this model's own "
            "run, or train this model from step 0 in a new folder."
        )
    return "\n".join(lines)


def _difference_text(difference) -> str:
    if difference.live is None:
        return f"{difference.path} {difference.saved} has no place here"
    if difference.saved is None:
        return f"{difference.path} {difference.live} is not in the checkpoint"
    return f"{difference.path} is {difference.saved} there, {difference.live} here"


def _optimizer_advice(children, top: str, counts, others, prefix: str) -> str:
    # Slots are the optimizer's variables shaped like weights; its step and rate are scalars.
    optimizer = children[top]
    saved, live = counts
    slots_here = sum(1 for v in optimizer.variables if len(v.shape) > 0)
    slots_there = saved - (live - slots_here)
    weights = sum(len(getattr(children[n], "trainable_variables", ())) for n in others)
    keep = ", ".join(f"{n}={n}" for n in others)
    if saved == 0 or slots_there < 0:  # saved without it: Checkpoint(model=model, step=step)
        held = f"only {saved} of its {live} variables" if saved else f"none of its {live} variables"
        how = f"with part of {top}" if saved else f"without {top}=..."
        return (
            f"It was saved without the {top}'s state (the checkpoint holds {held}: it was "
            f"made {how}). Restore the weights alone with "
            f"tf.train.Checkpoint({keep}).restore({prefix!r}).expect_partial() and start "
            f"the {top} fresh; save with tf.train.Checkpoint({keep}, {top}={top}) from now on "
            "to resume it too."
        )
    return (
        f"It was saved with an optimizer of {_slots(slots_there, weights)}; this "
        f"{type(optimizer).__name__} has {_slots(slots_here, weights)}. Restore the weights "
        f"alone with tf.train.Checkpoint({keep}).restore({prefix!r}).expect_partial() and "
        "start the optimizer fresh, or build the optimizer it was saved with."
    )


def _only_its_optimizer(children, found, top: str) -> bool:
    """Whether every difference under ``top`` is in the optimizer that model carries."""
    if getattr(children.get(top), "optimizer", None) is None:
        return False
    return all(d.path.startswith(f"{top}/optimizer/_variables/") for d in found)


def _compiled_model_advice(children, top: str, prefix: str, shapes: dict) -> str:
    # A compiled model carries its optimizer: Checkpoint(model=model) saves both.
    model = children[top]
    optimizer = model.optimizer
    slots_here = sum(1 for v in optimizer.variables if len(v.shape) > 0)
    slots_there = sum(
        1
        for key, shape in shapes.items()
        if key.startswith(f"{top}/optimizer/_variables/") and len(shape) > 0
    )
    weights = len(model.trainable_variables)
    return (
        f"The weights fit; the optimizer the {top} carries does not. It was saved with an "
        f"optimizer of {_slots(slots_there, weights)}; this {type(optimizer).__name__} has "
        f"{_slots(slots_here, weights)}. To keep the weights and start the optimizer fresh, "
        f"restore into the {top} before it is compiled (then it carries no optimizer): "
        f"tf.train.Checkpoint({top}={top}).restore({prefix!r}).expect_partial(), then "
        f"{top}.compile(...) with the new optimizer. Or build the optimizer it was saved with."
    )


def _slots(count: int, weights: int) -> str:
    """``"4 slot variables, 2 per weight (as Adam keeps)"``."""
    kinds = {0: "plain SGD", 1: "SGD with momentum or RMSprop", 2: "Adam"}
    per_weight = count / weights if weights else None
    text = f"{count} slot variables"
    if per_weight is not None and per_weight.is_integer():
        text += f", {per_weight:g} per weight"
        if int(per_weight) in kinds:
            text += f" (as {kinds[int(per_weight)]} keeps)"
    return text


def _damaged_message(folder, skipped) -> str:
    lines = [f"no checkpoint in {folder} can be read, so nothing was restored:"]
    lines += [f"  {name}: {why}" for name, why in skipped]
    lines.append(
        "Copy a good checkpoint back if you keep one elsewhere; otherwise move these files "
        "aside and train from step 0."
    )
    return "\n".join(lines)


def _something_else_message(folder, found: list[tuple[str, str]]) -> str:
    lines = [f"{folder} holds no tf.train checkpoint (no ckpt-N.index), but:"]
    lines += [f"  {name}: {how}" for name, how in found]
    lines.append(
        "Load it as said above, or, to train from step 0, give restore_latest and the "
        "CheckpointManager a folder of their own (an empty or new one)."
    )
    return "\n".join(lines)
