"""mk.check_resume on real clusters: a right answer passes; wrong ones are named, not passed.

The learner's answers are written as notebook code and run as a notebook runs them (their
module is ``__main__``), so they travel to the workers by value, as a notebook's do. Each
check makes three cluster runs (about 10-20 s in all on two cores).
"""

from __future__ import annotations

import time

import pytest

import mirrorkit as mk

RIGHT = """
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
NEVER_RESTORES = RIGHT.replace("    if latest:\n        checkpoint.restore(latest)\n", "")
ONE_FOLDER_FOR_ALL = RIGHT.replace("context.write_dir(checkpoint_dir)", "checkpoint_dir")


def notebook_function(source: str):
    """The ``checkpointing`` a notebook cell with ``source`` defines."""
    namespace = {"__name__": "__main__"}
    exec(source, namespace)
    return namespace["checkpointing"]


def test_the_blank_answer_is_not_attempted_and_starts_no_cluster():
    started = time.monotonic()
    verdict = mk.check_resume(...)
    assert not verdict.passed
    assert verdict.message.startswith("not attempted yet")
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize(
    ("answer", "match"),
    [
        pytest.param("checkpoint", "must be a function", id="a string"),
        pytest.param(lambda context, checkpoint_dir: None, "six arguments", id="two parameters"),
    ],
)
def test_what_cannot_be_the_function_is_named_before_any_run(answer, match):
    verdict = mk.check_resume(answer)
    assert not verdict.passed
    assert match in verdict.message


def test_a_right_answer_passes(no_orphans):
    verdict = mk.check_resume(notebook_function(RIGHT), seed=42)
    assert verdict.passed, verdict.message
    assert "restored step 4" in verdict.message and "bit for bit" in verdict.message


def test_a_run_that_never_restores_is_caught_by_where_it_starts(no_orphans):
    # It trains all 12 steps again and ends with the very same weights: only the start shows it.
    verdict = mk.check_resume(notebook_function(NEVER_RESTORES), seed=42)
    assert not verdict.passed
    assert "trained from step 1 again" in verdict.message
    assert "did not restore it" in verdict.message


def test_every_worker_saving_into_one_folder_is_caught_whatever_the_timing(no_orphans):
    verdict = mk.check_resume(notebook_function(ONE_FOLDER_FOR_ALL), seed=42)
    assert not verdict.passed
    assert "worker 1 saved into checkpoint_dir itself" in verdict.message
    assert "context.write_dir(checkpoint_dir)" in verdict.message


WRONG_OPTIONS = [
    pytest.param(dict(num_workers="2"), TypeError, "num_workers", r"num_workers=2", id="text"),
    pytest.param(dict(num_workers=1), ValueError, "num_workers", r"needs two", id="one worker"),
    pytest.param(dict(num_workers=True), TypeError, "num_workers", r"num_workers=2", id="bool"),
    pytest.param(dict(num_workers=17), ValueError, "num_workers", r"2 to 16", id="seventeen"),
    pytest.param(dict(seed=4.2), TypeError, "seed", r"seed=SEED", id="float seed"),
    pytest.param(dict(timeout=0), ValueError, "timeout", r"timeout=", id="no time"),
    pytest.param(dict(timeout="90"), TypeError, "timeout", r"timeout=", id="text timeout"),
]


@pytest.mark.wrong_inputs("mk.check_resume")
@pytest.mark.parametrize(("kwargs", "error", "argument", "match"), WRONG_OPTIONS)
def test_wrong_options_get_a_clear_message(refuses, kwargs, error, argument, match):
    refuses(lambda: mk.check_resume(..., **kwargs), error, argument, match)


# -- what the seed picks, and verdicts on the runs' results (no cluster) ----------------------


def test_the_seed_picks_where_the_worker_dies_and_the_books_seed_keeps_the_chapters_plan():
    from mirrorkit.checks._resume_verdict import PLANS, STEPS, plan

    assert plan(42) == plan(0) == (4, 6, 4)  # the chapter's lab: saves every 4, killed after 6
    plans = [plan(seed) for seed in range(len(PLANS))]
    assert len({first for _, _, first in plans}) == len(PLANS)  # no step fits every seed
    for save_every, kill_after, first in plans:
        assert 0 < first < kill_after < min(first + save_every, STEPS)


def _state(step, weights=0.0, seen=0):
    return {"step": step, "seen": seen, "weights": [weights], "optimizer": [weights]}


def _relaunch(start, workers, found="ckpt"):
    restored = _state(start, float(start), 32 * start)
    return {
        "found": found,
        "problem": "",
        "start": start,
        "workers": workers,
        "fresh": _state(0),
        "restored": restored,
    }


def test_a_run_resumed_after_a_step_written_into_the_answer_is_called_hard_coded():
    from mirrorkit.checks._resume_verdict import verdict

    reference = {"saved": {8: _state(8, 8.0, 256)}}
    result = verdict(reference, [_relaunch(4, [4, 4])], last=1, seed=7)  # seed 7: step 8 remains
    assert not result.passed
    assert "started after step 4, but the latest checkpoint in checkpoint_dir was of step 8" in (
        result.message
    )
    assert "hard-coded" in result.message


def test_a_relaunch_in_which_only_the_chief_restored_is_named():
    from mirrorkit.checks._resume_verdict import verdict

    reference = {"saved": {4: _state(4, 4.0, 128)}}
    result = verdict(reference, [_relaunch(4, [4, 0])], last=1, seed=42)
    assert not result.passed
    assert "did not restore the same checkpoint" in result.message
    assert "not only on the chief" in result.message
