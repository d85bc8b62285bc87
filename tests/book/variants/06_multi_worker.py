"""Chapter 6: the checkpoint-and-resume part of a training function, on a real cluster.

Each answer is a cell that defines ``checkpointing``; the check runs it on two workers
three times (without a fault, with worker 1 killed a few steps after a save, relaunched),
so each verdict takes some seconds. The seed picks the steps of the saves and of the kill
(seed 42: saves every 4 steps, killed after step 6; seed 7: killed after step 10, so the
checkpoint of step 8 remains), so the answer that writes in the step number of the book's
run (4) fails with any seed that picks another plan. Only the families the chapter warns
about are here: every variant costs a cluster run.
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


WITHOUT_OPTIMIZER = _changed("optimizer=optimizer, ", "")
WITHOUT_STEP = _changed("step=step, ", "")
WITHOUT_SEEN = _changed(", seen=seen)", ")")
ONLY_THE_CHIEF_SAVES = _changed(
    "        manager.save(checkpoint_number=number)",
    "        if context.is_chief:\n            manager.save(checkpoint_number=number)",
)
EVERY_WORKER_INTO_ONE_FOLDER = _changed("context.write_dir(checkpoint_dir)", "checkpoint_dir")
ONLY_THE_CHIEF_RESTORES = _changed("    if latest:\n", "    if latest and context.is_chief:\n")
STEP_WRITTEN_IN = _changed(
    "step=step, seen=seen)\n    latest = tf.train.latest_checkpoint(checkpoint_dir)\n"
    "    if latest:\n        checkpoint.restore(latest)\n",
    "seen=seen)\n    latest = tf.train.latest_checkpoint(checkpoint_dir)\n"
    "    if latest:\n        checkpoint.restore(latest)\n"
    "        step.assign(4)  # the book's run resumes after step 4\n",
)

WRONG = {
    1: [
        ("the checkpoint leaves out the optimizer", WITHOUT_OPTIMIZER, "optimizer's state"),
        ("the checkpoint leaves out step", WITHOUT_STEP, "step was not restored"),
        ("the checkpoint leaves out seen", WITHOUT_SEEN, "seen, the examples trained on"),
        ("only the chief saves", ONLY_THE_CHIEF_SAVES, "not only the chief"),
        (
            "every worker saves into checkpoint_dir",
            EVERY_WORKER_INTO_ONE_FOLDER,
            "saved into checkpoint_dir itself",
        ),
        ("only the chief restores", ONLY_THE_CHIEF_RESTORES, "not only on the chief"),
        ("the step of the book's run written in", STEP_WRITTEN_IN, "hard-coded"),
    ],
}

RIGHT = {1: [RIGHT_ANSWER, ANOTHER_RIGHT_ANSWER]}
