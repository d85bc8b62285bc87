"""What the three runs of :func:`~mirrorkit.check_resume` say about a learner's checkpointing.

Example:
    >>> from mirrorkit.checks._resume_verdict import signature_problem
    >>> signature_problem(lambda context, checkpoint_dir: None)[-40:]
    'with these six arguments, in this order.'
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from mirrorkit.checks.result import CheckResult
from mirrorkit.training.recipes import compare_weights

STEPS = 12  # steps of every run the check makes
SAVE_EVERY = 4  # save() is called after steps 4, 8 and 12 (the book's seed's plan)
KILL_AFTER = 6  # the last worker is killed after this step: the checkpoint of step 4 remains
# (save_every, kill_after) of the check's runs: the seed picks one, so that no step number or
# checkpoint name written into an answer fits every run. Seed 42 (the book's) and 0 pick the
# first, the plan the chapter describes.
PLANS = ((SAVE_EVERY, KILL_AFTER), (4, 10), (3, 5), (5, 7), (3, 8), (5, 11))


def plan(seed: int) -> tuple[int, int, int]:
    """``(save_every, kill_after, first)`` for ``seed``: first is the checkpoint that remains.

    Example:
        >>> from mirrorkit.checks._resume_verdict import plan
        >>> plan(42), plan(7)
        ((4, 6, 4), (4, 10, 8))
    """
    save_every, kill_after = PLANS[seed % len(PLANS)]
    return save_every, kill_after, save_every * (kill_after // save_every)


PARAMETERS = ("context", "checkpoint_dir", "model", "optimizer", "step", "seen")

_RIGHT_PATTERN = (
    "build checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=step, "
    "seen=seen), restore tf.train.latest_checkpoint(checkpoint_dir) if there is one, and "
    "return a save(number) that calls manager.save(checkpoint_number=number) for a "
    "tf.train.CheckpointManager(checkpoint, context.write_dir(checkpoint_dir), max_to_keep=3)"
)
SAVING = "in save("  # how resumable_training marks an error raised by the learner's save
SETTING_UP = "in checkpointing("  # ... and one raised by the learner's function itself


def verdict(reference: dict, results: list, last: int, seed: int) -> CheckResult:
    """What the relaunched run did, compared with the run without a fault."""
    _, kill_after, first = plan(seed)  # first: the last checkpoint before the kill
    chief = results[0]
    if chief["found"] is None:
        return CheckResult(
            False,
            f"after worker {last} was killed after step {kill_after}, checkpoint_dir held no "
            f"checkpoint: save({first}) did not write one there. The chief saves into "
            "checkpoint_dir itself, the others into context.write_dir(checkpoint_dir).",
        )
    starts = chief["workers"]
    if len(set(starts)) > 1 or chief["problem"] == "the workers restored different states":
        behind = [w for w, s in enumerate(starts) if s != starts[0]]
        after = ", ".join(f"worker {w} after step {starts[w]}" for w in behind)
        return CheckResult(
            False,
            f"the relaunched workers did not restore the same checkpoint: the chief started "
            f"after step {starts[0]}, {after or 'the others with other values'}. The private "
            "folders were gone, as on replacement machines: every worker must restore from "
            "tf.train.latest_checkpoint(checkpoint_dir), the chief's folder, not from "
            "context.write_dir(checkpoint_dir) (or a CheckpointManager's own folder), and not "
            "only on the chief.",
        )
    if chief["problem"]:
        return CheckResult(False, run_problem(chief, "in the relaunched run"))
    restored, fresh = chief["restored"], chief["fresh"]
    if chief["start"] == 0:
        if _same(restored, fresh):
            return CheckResult(
                False,
                f"the relaunched run trained from step 1 again: checkpoint_dir held the "
                f"checkpoint of step {first}, but the function did not restore it (a fresh "
                "run ends with the same weights, so only the start shows it). Call "
                "checkpoint.restore(tf.train.latest_checkpoint(checkpoint_dir)) when there is "
                "a checkpoint.",
            )
        return CheckResult(
            False,
            f"the relaunched run restored a checkpoint but still started after step 0: step "
            f"was not restored, so the loop trained all {STEPS} steps again on top of the "
            "restored weights. Put step=step in the tf.train.Checkpoint.",
        )
    if chief["start"] != first:
        return CheckResult(
            False,
            f"the relaunched run started after step {chief['start']}, but the latest "
            f"checkpoint in checkpoint_dir was of step {first}: a step number or a "
            "checkpoint's name hard-coded in the answer fits one run only (the check's seed "
            f"picks the step worker {last} dies at). Restore "
            "tf.train.latest_checkpoint(checkpoint_dir), with step in the tf.train.Checkpoint.",
        )
    expected = reference["saved"].get(first)
    missing = [
        name
        for name, part in (("model", "weights"), ("optimizer", "optimizer"), ("seen", "seen"))
        if expected is not None and not _equal(restored[part], expected[part])
    ]
    if missing:
        return CheckResult(False, _missing_message(missing, first))
    comparison = compare_weights(reference["weights"], chief["weights"])
    if not comparison.equal:
        return CheckResult(
            False,
            f"the relaunched run started after step {first} but ended with other weights than "
            f"the run without a fault (largest difference {comparison.max_abs_difference:.3g}):"
            f" {_RIGHT_PATTERN}.",
        )
    if chief["seen"] != reference["seen"]:
        return CheckResult(
            False,
            f"the relaunched run ended with seen = {chief['seen']}, the run without a fault "
            f"with {reference['seen']}: put seen=seen in the tf.train.Checkpoint.",
        )
    return CheckResult(
        True,
        f"worker {last} was killed after step {kill_after}; the relaunched cluster restored "
        f"step {first} from checkpoint_dir on every worker (model, optimizer, step and seen), "
        f"trained steps {first + 1} to {STEPS} and ended with the weights of the run without "
        "a fault, bit for bit.",
    )


def _missing_message(missing: list[str], first: int) -> str:
    what = {
        "model": "the model's weights were not restored (model=model)",
        "optimizer": "the optimizer's state (its momentum and iteration count) was not "
        "restored (optimizer=optimizer)",
        "seen": "seen, the examples trained on, was not restored (seen=seen)",
    }
    parts = "; ".join(what[name] for name in missing)
    return (
        f"the relaunched run started after step {first}, but {parts}. A tf.train.Checkpoint "
        "saves and restores only what it is given: give it model, optimizer, step and seen."
    )


def failure(when: str, error: Exception, save_every: int = SAVE_EVERY) -> str:
    """A failed or timed-out run, as a message that names the learner's mistake if known."""
    import mirrorkit as mk

    statuses = error.run.status.workers if error.run and error.run.status else []
    texts = [(s.worker, s.message) for s in statuses if s.message]
    if isinstance(error, mk.ClusterTimeoutError):
        return (
            f"{when}, the cluster took longer than the check's timeout: {error} If a worker "
            "was waiting in save, every worker must call save at the same step."
        )
    saving = [(w, t.split(SAVING, 1)[1]) for w, t in texts if SAVING in t]
    if saving:
        worker, why = saving[0]  # "4) raised NotFoundError: ..."
        number, _, raised = why.partition(") raised ")
        if any(sign in raised for sign in ("_temp", "MergeV2Checkpoints", "allow_missing_files")):
            return (
                f"{when}, worker {worker}'s save({number}) found the temporary files of its "
                f"checkpoint gone ({_short(raised, 120)}): two workers wrote the same "
                "checkpoint files into one folder and collided. Every worker saves, each into "
                "its own folder: the chief into checkpoint_dir, the others into "
                "context.write_dir(checkpoint_dir)."
            )
        if "ollective" in raised:
            return (
                f"{when}, worker {worker}'s save({number}) failed in a collective operation "
                f"the other workers did not join ({_short(raised, 120)}). seen is synchronized "
                "on read, so saving it all-reduces it across the workers: every worker must "
                "call save at the same step, not only the chief (the others save into "
                "context.write_dir(checkpoint_dir))."
            )
        return f"{when}, worker {worker}'s save({number}) failed: {_short(raised)}."
    setting_up = [(w, t.split(SETTING_UP, 1)[1]) for w, t in texts if SETTING_UP in t]
    if setting_up:
        worker, why = setting_up[0]  # "...) raised TypeError: ..."
        return f"{when}, checkpointing failed on worker {worker}: it {_short(why[5:])}."
    steps = [s.step for s in statuses if s.step is not None]
    collective = [t for _, t in texts if "ollective" in t]
    if collective and steps and max(steps) % save_every == 0:
        return (
            f"{when}, a collective operation failed right after the save of step {max(steps)} "
            f"({_short(collective[0], 120)}). seen is synchronized on read, so saving it "
            "all-reduces it across the workers: every worker must call save at the same step, "
            "not only the chief."
        )
    first = texts[0][1] if texts else str(error).splitlines()[0]
    return f"{when}, the cluster failed: {_short(first)}."


def run_problem(result: dict, when: str) -> str:
    return f"{when}, {result['problem']}."


def signature_problem(checkpointing) -> str:
    if not callable(checkpointing):
        return (
            f"checkpointing must be a function, got {_kind(checkpointing)}: write "
            f"def checkpointing({', '.join(PARAMETERS)}): ... that returns save."
        )
    try:
        inspect.signature(checkpointing).bind(*PARAMETERS)
    except TypeError:
        return (
            f"checkpointing{inspect.signature(checkpointing)} cannot be called as "
            f"checkpointing({', '.join(PARAMETERS)}): the training loop calls it with these "
            "six arguments, in this order."
        )
    except ValueError:  # no signature to read: let the runs find out
        return ""
    return ""


def _same(a: dict, b: dict) -> bool:
    return all(_equal(a[k], b[k]) for k in ("weights", "optimizer", "seen"))


def _equal(a, b) -> bool:
    if isinstance(a, list):
        return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(np.array_equal(a, b))


def _short(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _kind(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"
