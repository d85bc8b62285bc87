"""restore_latest: a resume that restores the right checkpoint bit for bit, or says why not."""

from __future__ import annotations

from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import mirrorkit as mk

DATA = "ckpt-8.data-00000-of-00001"
ROOT = Path(__file__).resolve().parents[3]


def training_checkpoint(strategy, hidden: int = 0, optimizer: str = "sgd"):
    """A Dense model (with a hidden layer of ``hidden`` units if any), its optimizer and step."""
    with strategy.scope():
        layers = [keras.layers.Dense(hidden)] if hidden else []
        model = keras.Sequential([keras.Input((4,)), *layers, keras.layers.Dense(1)])
        if optimizer == "adam":
            built = keras.optimizers.Adam(0.01)
        else:
            built = keras.optimizers.SGD(0.1, momentum=0.9)
        built.build(model.trainable_variables)
        step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
    return tf.train.Checkpoint(model=model, optimizer=built, step=step)


def variables(checkpoint) -> list:
    return [*checkpoint.model.variables, *checkpoint.optimizer.variables, checkpoint.step]


def fill(checkpoint, seed: int) -> None:
    """Give every variable values of its own, as training would (and momentum slots too)."""
    rng = np.random.default_rng(seed)
    for variable in variables(checkpoint):
        if variable.dtype == "int64" or variable.dtype == tf.int64:
            variable.assign(int(rng.integers(1, 100)))
        else:
            variable.assign(rng.normal(size=variable.shape).astype("float32"))


def values(checkpoint) -> list[np.ndarray]:
    return [v.numpy() for v in variables(checkpoint)]


def saved_folder(tmp_path, checkpoint, numbers=(4, 8)) -> str:
    """A folder of CheckpointManager saves ``ckpt-4``, ``ckpt-8``, each with other values."""
    folder = str(tmp_path / "run")
    manager = tf.train.CheckpointManager(checkpoint, folder, max_to_keep=3)
    for number in numbers:
        fill(checkpoint, seed=number)
        checkpoint.step.assign(number)
        manager.save(checkpoint_number=number)
    return folder


def test_the_right_checkpoint_restores_bit_for_bit_on_every_replica(strategy, tmp_path):
    saved = training_checkpoint(strategy)
    folder = saved_folder(tmp_path, saved)
    resumed = training_checkpoint(strategy)

    restored = mk.restore_latest(resumed, folder)

    assert restored.path == f"{folder}/ckpt-8" and restored.skipped == ()
    assert str(restored) == f"restored ckpt-8 from {folder}"
    assert int(resumed.step.numpy()) == 8
    for mine, theirs in zip(variables(resumed), variables(saved), strict=True):
        for replica in strategy.experimental_local_results(mine):
            np.testing.assert_array_equal(replica.numpy(), theirs.numpy())


def test_a_model_with_one_more_layer_is_refused_naming_the_extra_variable(
    strategy, tmp_path, clear_message
):
    folder = saved_folder(tmp_path, training_checkpoint(strategy, hidden=4))
    resumed = training_checkpoint(strategy)
    before = values(resumed)

    with pytest.raises(mk.CheckpointMismatchError) as raised:
        mk.restore_latest(resumed, folder)

    message = str(raised.value)
    clear_message(message, "ckpt-8", "different model: resume from the folder of this model")
    assert "nothing was restored" in message
    assert "model: the checkpoint holds 4 variables, this model 2" in message
    assert "model/_functional/_operations/2/_kernel (4, 1) float32 has no place here" in message
    assert "_operations/1/_kernel is (4, 4) float32 there, (4, 1) float32 here" in message
    for now, then in zip(values(resumed), before, strict=True):
        np.testing.assert_array_equal(now, then)  # refused before anything was overwritten


def test_adam_into_sgd_with_momentum_is_refused_with_advice_that_works(
    strategy, tmp_path, clear_message
):
    saved = training_checkpoint(strategy, optimizer="adam")
    folder = saved_folder(tmp_path, saved)
    resumed = training_checkpoint(strategy)

    with pytest.raises(mk.CheckpointMismatchError) as raised:
        mk.restore_latest(resumed, folder)

    message = str(raised.value)
    advice = (
        f"Restore the weights alone with tf.train.Checkpoint(model=model, step=step)"
        f".restore('{folder}/ckpt-8').expect_partial() and start the optimizer fresh"
    )
    clear_message(message, "ckpt-8", "start the optimizer fresh")
    assert advice in message
    assert "an optimizer of 4 slot variables, 2 per weight (as Adam keeps)" in message
    assert "this SGD has 2 slot variables, 1 per weight" in message
    assert "model:" not in message  # the model's weights fit
    # The advice, followed:
    model, step = resumed.model, resumed.step
    tf.train.Checkpoint(model=model, step=step).restore(f"{folder}/ckpt-8").expect_partial()
    for mine, theirs in zip(model.variables, saved.model.variables, strict=True):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    assert int(step.numpy()) == 8


def compiled(optimizer, hidden=(8,)):
    keras.utils.set_random_seed(3)
    model = keras.Sequential(
        [keras.Input((4,)), *(keras.layers.Dense(n) for n in hidden), keras.layers.Dense(1)]
    )
    model.compile(optimizer=optimizer, loss="mse")
    model.optimizer.build(model.trainable_variables)
    return model


def test_a_compiled_model_s_other_optimizer_is_named_and_the_advice_keeps_the_weights(
    tmp_path, clear_message
):
    # Checkpoint(model=model) of a compiled model saves its optimizer through the model.
    saved = compiled(keras.optimizers.Adam(0.01))
    x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
    saved.fit(x, x[:, :1], epochs=2, verbose=0)
    folder = str(tmp_path / "run")
    tf.train.CheckpointManager(tf.train.Checkpoint(model=saved), folder, 1).save()
    model = compiled(keras.optimizers.SGD(0.01, momentum=0.9))

    with pytest.raises(mk.CheckpointMismatchError) as raised:
        mk.restore_latest(tf.train.Checkpoint(model=model), folder)

    message = str(raised.value)
    clear_message(message, "ckpt-1", "the new optimizer")
    assert "The weights fit; the optimizer the model carries does not." in message
    assert "an optimizer of 8 slot variables, 2 per weight (as Adam keeps)" in message
    assert "this SGD has 4 slot variables, 1 per weight" in message
    assert f"tf.train.Checkpoint(model=model).restore('{folder}/ckpt-1').expect_partial()" in (
        message
    )
    # The advice, followed: restore before compiling, then compile with the new optimizer.
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
    tf.train.Checkpoint(model=model).restore(f"{folder}/ckpt-1").expect_partial()
    for mine, theirs in zip(model.weights, saved.weights, strict=True):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    model.compile(optimizer=keras.optimizers.SGD(0.01, momentum=0.9), loss="mse")
    model.fit(x, x[:, :1], epochs=1, verbose=0)


def test_a_compiled_model_with_one_more_layer_is_called_another_model(tmp_path):
    saved = compiled(keras.optimizers.Adam(0.01))
    folder = str(tmp_path / "run")
    tf.train.CheckpointManager(tf.train.Checkpoint(model=saved), folder, 1).save()
    deeper = compiled(keras.optimizers.Adam(0.01), hidden=(8, 8))
    with pytest.raises(mk.CheckpointMismatchError, match="written by a different model"):
        mk.restore_latest(tf.train.Checkpoint(model=deeper), folder)


def test_an_optimizer_not_built_yet_is_refused_saying_build_it(strategy, tmp_path, clear_message):
    folder = saved_folder(tmp_path, training_checkpoint(strategy))
    with strategy.scope():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        optimizer = keras.optimizers.SGD(0.1, momentum=0.9)  # no optimizer.build(...)
    unbuilt = tf.train.Checkpoint(
        model=model, optimizer=optimizer, step=tf.Variable(0, dtype=tf.int64)
    )

    with pytest.raises(mk.CheckpointMismatchError) as raised:
        mk.restore_latest(unbuilt, folder)

    clear_message(
        str(raised.value),
        "optimizer",
        r"Not built yet.*: optimizer\. Build before restoring.*"
        r"optimizer\.build\(model\.trainable_variables\)",
    )


@pytest.mark.parametrize("with_optimizer_slot", [False, True], ids=["no optimizer", "other"])
def test_a_checkpoint_saved_without_optimizer_state_gets_advice_that_works(
    strategy, tmp_path, with_optimizer_slot
):
    saved = training_checkpoint(strategy)
    folder = str(tmp_path / "run")
    fill(saved, seed=4)
    # Saved without the optimizer (the case), or with only its step counter.
    kept = {"model": saved.model, "step": saved.step}
    if with_optimizer_slot:
        kept["optimizer"] = tf.train.Checkpoint(iterations=saved.optimizer.iterations)
    tf.train.CheckpointManager(tf.train.Checkpoint(**kept), folder, 1).save(checkpoint_number=4)
    resumed = training_checkpoint(strategy)

    with pytest.raises(mk.CheckpointMismatchError) as raised:
        mk.restore_latest(resumed, folder)

    message = str(raised.value)
    assert "slot variables, -" not in message and "of -" not in message, message
    held = "only 1 of its" if with_optimizer_slot else "none of its"
    assert f"It was saved without the optimizer's state (the checkpoint holds {held} " in message
    advice = (
        f"tf.train.Checkpoint(model=model, step=step).restore('{folder}/ckpt-4')"
        ".expect_partial() and start the optimizer fresh"
    )
    assert advice in message
    assert "save with tf.train.Checkpoint(model=model, step=step, optimizer=optimizer)" in message
    model, step = resumed.model, resumed.step  # the advice, followed
    tf.train.Checkpoint(model=model, step=step).restore(f"{folder}/ckpt-4").expect_partial()
    for mine, theirs in zip(model.variables, saved.model.variables, strict=True):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


def save_other_ways(folder: Path) -> dict[str, str]:
    """A folder each, holding a model saved another way than tf.train.Checkpoint."""
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    ways = {}
    for name in ("weights", "keras", "backup", "savedmodel"):
        (folder / name).mkdir()
        ways[name] = str(folder / name)
    model.save_weights(f"{ways['weights']}/model.weights.h5")
    model.save(f"{ways['keras']}/model.keras")
    callback = keras.callbacks.BackupAndRestore(ways["backup"], delete_checkpoint=False)
    model.compile(optimizer="sgd", loss="mse")
    x = np.zeros((4, 4), "float32")
    model.fit(x, x[:, :1], epochs=1, verbose=0, callbacks=[callback])
    tf.saved_model.save(tf.Module(), f"{ways['savedmodel']}/exported")
    return ways


@pytest.mark.parametrize(
    ("way", "named", "how"),
    [
        ("weights", "model.weights.h5", "Keras weights (model.save_weights): model.load_weights("),
        ("keras", "model.keras", "a whole Keras model (model.save): keras.models.load_model("),
        ("backup", "latest.weights.h5", "a backup of keras.callbacks.BackupAndRestore"),
        ("savedmodel", "exported", "a SavedModel (tf.saved_model.save or model.export): "),
    ],
)
def test_a_folder_of_a_model_saved_another_way_is_named_with_how_to_load_it(
    other_ways, way, named, how
):
    folder = other_ways[way]
    checkpoint = tf.train.Checkpoint(step=tf.Variable(0, dtype=tf.int64))
    with pytest.raises(mk.CheckpointMismatchError) as raised:
        mk.restore_latest(checkpoint, folder)
    message = str(raised.value)
    assert message.startswith(f"{folder} holds no tf.train checkpoint (no ckpt-N.index), but:")
    assert f"  {named}: {how}" in message, message
    assert "give restore_latest and the CheckpointManager a folder of their own" in message
    assert int(checkpoint.step) == 0


def test_a_folder_another_live_run_writes_is_not_read_until_that_run_ends(strategy, tmp_path):
    # A real process of another run holds the folder's lease (as a LocalCluster worker or
    # python -m mirrorkit.worker does at write_dir) while restore_latest is asked to read it.
    import socket
    import subprocess
    import sys

    folder = saved_folder(tmp_path, training_checkpoint(strategy))
    code = (
        "import sys, time; from mirrorkit.cluster import _lease; "
        "print(_lease.take(sys.argv[1])['pid'], flush=True); time.sleep(300)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, folder], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    resumed = training_checkpoint(strategy)
    try:
        assert int(holder.stdout.readline()) == holder.pid
        with pytest.raises(mk.FolderInUseError) as refused:
            mk.restore_latest(resumed, folder)
    finally:
        holder.kill()
        holder.wait()
    message = str(refused.value)
    assert message.startswith(
        f"the folder {folder} is being written by another run: process {holder.pid} ("
    ), message
    assert f"on host {socket.gethostname()}, since " in message
    assert "Nothing was read: a checkpoint read now can be half written" in message
    assert "Wait for that run to end (or stop it), then restore" in message
    assert "copy its newest checkpoint" in message
    assert int(resumed.step.numpy()) == 0  # nothing restored
    # Its run ended (the process is gone): the folder reads as usual, the newest first.
    assert mk.restore_latest(resumed, folder).path.endswith("ckpt-8")
    assert int(resumed.step.numpy()) == 8


@pytest.fixture(scope="module")
def other_ways(tmp_path_factory) -> dict[str, str]:
    return save_other_ways(tmp_path_factory.mktemp("other-ways"))


def test_an_unreadable_state_file_is_named_and_the_files_on_disk_used(strategy, tmp_path):
    folder = saved_folder(tmp_path, training_checkpoint(strategy))
    with open(f"{folder}/checkpoint", "wb") as state:
        state.write(b"\xff\xfe not a state file")

    with pytest.warns(mk.CheckpointSkippedWarning, match="skipped checkpoint: the state file"):
        restored = mk.restore_latest(training_checkpoint(strategy), folder)

    assert restored.path == f"{folder}/ckpt-8"


def truncate(folder: str) -> None:
    with open(f"{folder}/{DATA}", "r+b") as data:
        data.truncate(10)


def scramble_index(folder: str) -> None:
    with open(f"{folder}/ckpt-8.index", "wb") as index:
        index.write(b"not an index" * 8)


def remove_files(folder: str) -> None:
    for name in ("ckpt-8.index", DATA):
        (tf.io.gfile.remove(f"{folder}/{name}"))


DAMAGE = [
    pytest.param(truncate, f"{DATA} is damaged or cut short", id="truncated data"),
    pytest.param(scramble_index, "ckpt-8.index cannot be read", id="garbage index"),
    pytest.param(remove_files, "the state file names it, but ckpt-8.index is not", id="gone"),
]


@pytest.mark.parametrize(("damage", "why"), DAMAGE)
def test_a_damaged_newest_checkpoint_is_named_and_the_previous_one_used(
    strategy, tmp_path, damage, why
):
    saved = training_checkpoint(strategy)
    folder = saved_folder(tmp_path, saved, numbers=(4,))
    at_step_4 = values(saved)
    saved_folder(tmp_path, saved, numbers=(8,))
    damage(folder)
    resumed = training_checkpoint(strategy)

    with pytest.warns(mk.CheckpointSkippedWarning, match="skipped ckpt-8: "):
        restored = mk.restore_latest(resumed, folder)

    assert restored.path == f"{folder}/ckpt-4"
    assert [name for name, _ in restored.skipped] == ["ckpt-8"]
    assert why in restored.skipped[0][1]
    assert str(restored).startswith(f"restored ckpt-4 from {folder}\nskipped ckpt-8: {why}")
    assert int(resumed.step.numpy()) == 4
    for now, then in zip(values(resumed), at_step_4, strict=True):
        np.testing.assert_array_equal(now, then)


def test_a_folder_of_only_damaged_checkpoints_is_refused_naming_each_file(strategy, tmp_path):
    folder = saved_folder(tmp_path, training_checkpoint(strategy))
    truncate(folder)
    with open(f"{folder}/ckpt-4.index", "wb") as index:
        index.write(b"\0" * 40)

    with pytest.raises(mk.CheckpointDamagedError) as raised:
        mk.restore_latest(training_checkpoint(strategy), folder)

    message = str(raised.value)
    assert message.startswith(f"no checkpoint in {folder} can be read, so nothing was restored")
    assert f"ckpt-8: {DATA} is damaged or cut short" in message
    assert "ckpt-4: ckpt-4.index cannot be read" in message
    assert "move these files aside and train from step 0" in message


@pytest.mark.parametrize("made", [True, False], ids=["empty folder", "no folder"])
def test_an_empty_or_missing_folder_says_start_from_step_0(strategy, tmp_path, made):
    folder = tmp_path / "run"
    if made:
        folder.mkdir()
    resumed = training_checkpoint(strategy)

    restored = mk.restore_latest(resumed, folder)

    assert restored.path is None and restored.skipped == ()
    assert str(restored) == "no checkpoint in the folder: start from step 0"
    assert int(resumed.step.numpy()) == 0


def a_saved_prefix(tmp_path) -> str:
    return tf.train.Checkpoint(step=tf.Variable(1)).save(str(tmp_path / "ckpt"))


WRONG_CALLS = [
    pytest.param(
        lambda s, t: mk.restore_latest(training_checkpoint(s).model, t),
        TypeError,
        "checkpoint",
        r"must be a tf\.train\.Checkpoint, got Sequential.*write restore_latest\("
        r"tf\.train\.Checkpoint\(model=model, optimizer=optimizer\), folder\)",
        id="the model itself",
    ),
    pytest.param(
        lambda s, t: mk.restore_latest(
            tf.train.CheckpointManager(tf.train.Checkpoint(), str(t), 1), t
        ),
        TypeError,
        "checkpoint",
        r"got CheckpointManager.*write restore_latest\(manager\.checkpoint, folder\)",
        id="the manager",
    ),
    pytest.param(
        lambda s, t: mk.restore_latest(str(t), training_checkpoint(s)),
        TypeError,
        "checkpoint",
        r"got str .*: write restore_latest\(tf\.train\.Checkpoint",
        id="arguments swapped",
    ),
    pytest.param(
        lambda s, t: mk.restore_latest(training_checkpoint(s), None),
        TypeError,
        "directory",
        r"must be a path \(text or pathlib\.Path\), got NoneType None: write the folder",
        id="no folder",
    ),
    pytest.param(
        lambda s, t: mk.restore_latest(training_checkpoint(s), 8),
        TypeError,
        "directory",
        r"must be a path.*got int 8",
        id="a step number",
    ),
    pytest.param(
        lambda s, t: mk.restore_latest(tf.train.Checkpoint(), a_saved_prefix(t)),
        ValueError,
        "directory",
        r"must be the folder of the checkpoints, not one checkpoint, got '.*ckpt-1': "
        r"write restore_latest\(checkpoint, '.*'\)",
        id="one checkpoint's prefix",
    ),
    pytest.param(
        lambda s, t: mk.restore_latest(tf.train.Checkpoint(), a_saved_prefix(t) + ".index"),
        ValueError,
        "directory",
        r"the folder of the checkpoints, not one checkpoint, got '.*ckpt-1\.index'",
        id="its index file",
    ),
]


@pytest.mark.wrong_inputs("mk.restore_latest")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_CALLS)
def test_wrong_arguments_are_refused_with_a_clear_message(
    refuses, strategy, tmp_path, call, error, argument, match
):
    refuses(lambda: call(strategy, tmp_path), error, argument, match)
