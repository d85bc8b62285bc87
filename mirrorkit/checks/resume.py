"""Chapter 6's check: does a training function resume where it stopped when a worker dies?

The learner writes only the checkpoint-and-resume part of a training function, a
function ``checkpointing(context, checkpoint_dir, model, optimizer, step, seen)`` that
restores the latest checkpoint (if there is one) and returns ``save(number)``.
:func:`resumable_training` is the rest: the model, the data, the counters and the loop,
which calls ``save`` after every fourth step on every worker. :func:`check_resume` runs it
on a real cluster three times: once without a fault, once with the last worker killed
after step 6, and once more in the killed run's folder, after the workers' private folders
are deleted (a replacement machine does not have them). It passes only if the relaunched
run started after step 4 on every worker, with everything the checkpoint should hold, and
ended with the weights of the run without a fault, bit for bit.

Each worker other than the chief is given its own copy of the shared folder as
``checkpoint_dir`` (a copy of what the shared folder held when the run started, as a
shared file system shows it), so the check sees what each worker wrote there.

What running the mistakes under ``MultiWorkerMirroredStrategy`` (TensorFlow 2.21, Keras 3)
showed, and what the check therefore looks for:

- ``seen`` is synchronized on read, so saving it all-reduces it: a chief that saves alone
  fails at its first save, in a collective the other workers do not join. (With only
  mirrored variables in the checkpoint, a chief saving alone works.)
- Two workers saving into one folder collide on the temporary files of the same
  checkpoint (one merges and deletes them while the other still writes): in 5 of 8 runs of
  12 steps. A collision that happens by chance is no test, so the check looks for the
  other workers' files in their copy of ``checkpoint_dir`` instead.
- Without the optimizer in the checkpoint, the relaunched run starts without momentum and
  ends with other weights; without ``step`` it trains all 12 steps again on top of the
  restored weights.
- A function that never saves, or never restores, trains from step 1 again and ends with
  exactly the weights of the run without a fault (training is deterministic): only the
  step the relaunched run starts at tells it apart.
- Restoring from ``context.write_dir(checkpoint_dir)``, or on the chief only, leaves the
  other workers at step 0 once their private folders are gone.
"""

from __future__ import annotations

import inspect
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from mirrorkit._validate import require_seconds
from mirrorkit.checks.result import NOT_ATTEMPTED, CheckResult
from mirrorkit.report.values import error_lines
from mirrorkit.training.recipes import TRUE_WEIGHTS, compare_weights, step_batches

STEPS = 12  # steps of every run the check makes
SAVE_EVERY = 4  # save() is called after steps 4, 8 and 12
KILL_AFTER = 6  # the last worker is killed after this step: the checkpoint of step 4 remains
PARAMETERS = ("context", "checkpoint_dir", "model", "optimizer", "step", "seen")

_RIGHT_PATTERN = (
    "build checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=step, "
    "seen=seen), restore tf.train.latest_checkpoint(checkpoint_dir) if there is one, and "
    "return a save(number) that calls manager.save(checkpoint_number=number) for a "
    "tf.train.CheckpointManager(checkpoint, context.write_dir(checkpoint_dir), max_to_keep=3)"
)
_SAVING = "in save("  # how resumable_training marks an error raised by the learner's save
_SETTING_UP = "in checkpointing("  # ... and one raised by the learner's function itself


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
    import keras
    import tensorflow as tf

    strategy = context.strategy
    global_batch = per_replica_batch * strategy.num_replicas_in_sync
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

    def state() -> dict:  # reading `seen` all-reduces it: every worker calls this together
        return {
            "step": int(step.numpy()),
            "seen": int(seen.read_value().numpy()),
            "weights": [np.array(w) for w in model.get_weights()],
            "optimizer": [np.array(v) for v in optimizer.variables],
        }

    result = {"problem": "", "found": tf.train.latest_checkpoint(checkpoint_dir)}
    result["fresh"] = state()
    try:
        save = checkpointing(context, checkpoint_dir, model, optimizer, step, seen)
    except Exception as error:
        raise RuntimeError(f"{_SETTING_UP}...) raised {_one_line(error)}") from None
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
                raise RuntimeError(f"{_SAVING}{number}) raised {_one_line(error)}") from None
            result["saved"][number] = state()
        result["losses"][number] = loss
        context.report(number, loss=loss)
    final = state()
    result["weights"], result["seen"] = final["weights"], final["seen"]
    result["latest"] = tf.train.latest_checkpoint(checkpoint_dir)
    return result


def check_resume(
    checkpointing, *, num_workers: int = 2, seed: int = 0, timeout: float = 90.0
) -> CheckResult:
    """Check that ``checkpointing`` makes a killed cluster resume exactly where it stopped.

    Three runs of :func:`resumable_training` on a fresh :class:`mirrorkit.LocalCluster`:
    one without a fault, one in which the last worker is killed (SIGKILL) after step 6,
    and a relaunch in the killed run's folder, after deleting every folder inside it (the
    workers' private folders: a replacement machine does not have them). It passes only if
    the relaunch started after step 4 on every worker, with the model, the optimizer,
    ``step`` and ``seen`` of step 4, and ended with the weights of the run without a
    fault, bit for bit. Each worker but the chief is given its own copy of the shared
    folder as ``checkpoint_dir``, so that what it saves there is seen as its own. Each run
    takes some seconds; every process ends with its run.

    Args:
        checkpointing: The learner's function ``(context, checkpoint_dir, model, optimizer,
            step, seen)`` returning ``save(number)`` (``...``: not attempted).
        num_workers: Workers in the cluster (2-16).
        seed: Seed every worker applies with :func:`mirrorkit.make_reproducible`.
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
    if isinstance(num_workers, bool) or not isinstance(num_workers, int):
        raise TypeError(
            f"num_workers must be an int from 2 to 16, got {_kind(num_workers)}: write "
            "num_workers=2 (the check kills the last worker, so it needs two or more)."
        )
    if not 2 <= num_workers <= 16:
        raise ValueError(
            f"num_workers must be an int from 2 to 16, got {num_workers}: write num_workers=2 "
            "(the check kills the last worker while the others go on, so it needs two)."
        )
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {_kind(seed)}: write seed=SEED or seed=0.")
    timeout = require_seconds("timeout", timeout, write="timeout=90 (seconds per run)")
    if checkpointing is ...:
        return NOT_ATTEMPTED
    problem = _signature_problem(checkpointing)
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

    def run(shared: Path, fault=None):
        views = _views(shared, num_workers)

        def train(context):
            return resumable_training(context, views[context.task_id], checkpointing)

        return cluster.run(train, timeout=timeout, fault=fault)

    # 1. Without a fault: the reference, and the first test of the function.
    whole = folder / "uninterrupted"
    try:
        reference = run(whole).result
    except mk.ClusterError as error:
        return CheckResult(False, _failure("in a run without any fault", error))
    except TypeError as error:  # the function cannot be sent to the workers
        return CheckResult(False, f"checkpointing cannot run on the workers: {error}")
    if reference["problem"]:
        return CheckResult(False, _problem(reference, "in a run without any fault"))
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
        killed = run(lab, mk.KillWorker(worker=last, at_step=KILL_AFTER))
    except mk.WorkerFailedError as error:
        if not error.run.exits.get(last, "").startswith("killed"):
            return CheckResult(False, _failure("in the run in which a worker is killed", error))
    except mk.ClusterError as error:
        return CheckResult(False, _failure("in the run in which a worker is killed", error))
    else:
        return CheckResult(
            False,
            f"worker {last} was to be killed after step {KILL_AFTER}, but the run finished "
            f"(it started after step {killed.result['start']}), so nothing was tested: restore "
            "only from checkpoint_dir.",
        )
    _replace_machines(lab, num_workers)

    # 3. Relaunched in the same folder: it must resume after step 4 and end as the reference.
    try:
        resumed = run(lab)
    except mk.ClusterError as error:
        return CheckResult(False, _failure("in the relaunched run", error))
    return _verdict(reference, resumed.results, last)


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


def _verdict(reference: dict, results: list, last: int) -> CheckResult:
    """What the relaunched run did, compared with the run without a fault."""
    first = SAVE_EVERY * (KILL_AFTER // SAVE_EVERY)  # the last checkpoint before the kill
    chief = results[0]
    if chief["found"] is None:
        return CheckResult(
            False,
            f"after worker {last} was killed after step {KILL_AFTER}, checkpoint_dir held no "
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
        return CheckResult(False, _problem(chief, "in the relaunched run"))
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
            f"checkpoint in checkpoint_dir was of step {first}: restore "
            "tf.train.latest_checkpoint(checkpoint_dir).",
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
        f"worker {last} was killed after step {KILL_AFTER}; the relaunched cluster restored "
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


def _failure(when: str, error: Exception) -> str:
    """A failed or timed-out run, as a message that names the learner's mistake if known."""
    import mirrorkit as mk

    statuses = error.run.status.workers if error.run and error.run.status else []
    texts = [(s.worker, s.message) for s in statuses if s.message]
    if isinstance(error, mk.ClusterTimeoutError):
        return (
            f"{when}, the cluster took longer than the check's timeout: {error} If a worker "
            "was waiting in save, every worker must call save at the same step."
        )
    saving = [(w, t.split(_SAVING, 1)[1]) for w, t in texts if _SAVING in t]
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
    setting_up = [(w, t.split(_SETTING_UP, 1)[1]) for w, t in texts if _SETTING_UP in t]
    if setting_up:
        worker, why = setting_up[0]  # "...) raised TypeError: ..."
        return f"{when}, checkpointing failed on worker {worker}: it {_short(why[5:])}."
    steps = [s.step for s in statuses if s.step is not None]
    collective = [t for _, t in texts if "ollective" in t]
    if collective and steps and max(steps) % SAVE_EVERY == 0:
        return (
            f"{when}, a collective operation failed right after the save of step {max(steps)} "
            f"({_short(collective[0], 120)}). seen is synchronized on read, so saving it "
            "all-reduces it across the workers: every worker must call save at the same step, "
            "not only the chief."
        )
    first = texts[0][1] if texts else str(error).splitlines()[0]
    return f"{when}, the cluster failed: {_short(first)}."


def _problem(result: dict, when: str) -> str:
    return f"{when}, {result['problem']}."


def _signature_problem(checkpointing) -> str:
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


def _same(a: dict, b: dict) -> bool:
    return all(_equal(a[k], b[k]) for k in ("weights", "optimizer", "seen"))


def _equal(a, b) -> bool:
    if isinstance(a, list):
        return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(np.array_equal(a, b))


def _one_line(error: BaseException) -> str:
    lines = error_lines(error)
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def _short(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _kind(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"


def _names(items: list) -> str:
    return ", ".join(str(i) for i in items)
