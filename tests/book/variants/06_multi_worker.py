"""Chapter 6: the checkpoint-and-resume part of a training function, on a real cluster.

Each answer is a cell that defines ``checkpointing``; the check runs it on two workers
three times (without a fault, with worker 1 killed after step 6, relaunched), so each
verdict takes some seconds. Two of the wrong answers end with exactly the right weights
(never saving, never restoring: the relaunch trains from step 1 again, deterministically);
only the step the relaunch starts at gives them away.
"""

RIGHT_ANSWER = """
def checkpointing(context, checkpoint_dir, model, optimizer, step, seen):
    import tensorflow as tf

    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=step, seen=seen)
    latest = tf.train.latest_checkpoint(checkpoint_dir)
    if latest:
        checkpoint.restore(latest)
    folder = context.write_dir(checkpoint_dir)
    manager = tf.train.CheckpointManager(checkpoint, folder, max_to_keep=3)

    def save(number):
        manager.save(checkpoint_number=number)

    return save
"""

ANOTHER_RIGHT_ANSWER = """
def checkpointing(context, checkpoint_dir, model, optimizer, step, seen):
    import os

    import tensorflow as tf

    checkpoint = tf.train.Checkpoint(step=step, seen=seen, optimizer=optimizer, model=model)
    latest = tf.train.latest_checkpoint(checkpoint_dir)
    if latest is not None:
        checkpoint.restore(latest).assert_existing_objects_matched()
    if context.is_chief:
        prefix = os.path.join(checkpoint_dir, "ckpt")
    else:
        prefix = os.path.join(checkpoint_dir, f"worker-{context.task_id}", "ckpt")
    return lambda number: checkpoint.save(prefix)
"""


def _changed(old: str, new: str) -> str:
    assert old in RIGHT_ANSWER, old
    return RIGHT_ANSWER.replace(old, new)


NEVER_SAVES = _changed("        manager.save(checkpoint_number=number)", "        pass")
NEVER_RESTORES = _changed("    if latest:\n        checkpoint.restore(latest)\n", "")
WITHOUT_OPTIMIZER = _changed("optimizer=optimizer, ", "")
WITHOUT_STEP = _changed("step=step, ", "")
ONLY_THE_CHIEF_SAVES = _changed(
    "        manager.save(checkpoint_number=number)",
    "        if context.is_chief:\n            manager.save(checkpoint_number=number)",
)
EVERY_WORKER_INTO_ONE_FOLDER = _changed("context.write_dir(checkpoint_dir)", "checkpoint_dir")
RESTORES_ITS_OWN_FOLDER = _changed(
    "    latest = tf.train.latest_checkpoint(checkpoint_dir)\n",
    "    latest = tf.train.latest_checkpoint(context.write_dir(checkpoint_dir))\n",
)

WRONG = {
    1: [
        ("save does nothing", NEVER_SAVES, "never saved a checkpoint"),
        ("never restores (ends with the right weights)", NEVER_RESTORES, "did not restore it"),
        ("the checkpoint leaves out the optimizer", WITHOUT_OPTIMIZER, "optimizer's state"),
        ("the checkpoint leaves out step", WITHOUT_STEP, "step was not restored"),
        ("only the chief saves", ONLY_THE_CHIEF_SAVES, "not only the chief"),
        (
            "every worker saves into checkpoint_dir",
            EVERY_WORKER_INTO_ONE_FOLDER,
            "saved into checkpoint_dir itself",
        ),
        (
            "each worker restores from its own write_dir",
            RESTORES_ITS_OWN_FOLDER,
            "did not restore the same checkpoint",
        ),
    ],
}

RIGHT = {1: [RIGHT_ANSWER, ANOTHER_RIGHT_ANSWER]}
