"""Check a custom loop's per-replica loss: does it give the single-device gradient?

The check is an ask and a verdict: :func:`ask_loss_step` runs the learner's step on each
batch and records it (:mod:`mirrorkit.checks._step_asks`); :func:`judge_loss_step` computes
the one-device reference from that record and compares. The grader asks in an executor and
judges in its own process; a check in the chapter does both here.

Example:
    >>> import mirrorkit as mk
    >>> mk.check_loss_step(..., mk.make_strategy(), None, None)
    NOT YET: not attempted yet: replace the ... with your answer and run the cell.
"""

from __future__ import annotations

from mirrorkit._validate import require_strategy
from mirrorkit.checks._learner_runs import guarded, literal_numbers, traced_learner_error
from mirrorkit.checks._loss_causes import fixed_number_cause
from mirrorkit.checks._step_asks import ask_step
from mirrorkit.checks._step_verdicts import judge_step
from mirrorkit.checks._steps import resolve_loss
from mirrorkit.checks.equivalence import checked_batch
from mirrorkit.checks.result import (
    NOT_ATTEMPTED,
    CheckResult,
    as_record,
    cannot_check_with_one_replica,
    from_record,
)


def check_loss_step(compute_loss, strategy, model_fn, batch, *, loss="mse") -> CheckResult:
    """Check that a custom loop's per-replica loss gives the single-device gradient.

    Runs :func:`mirrorkit.check_step_equivalence` on each batch and turns its verdict into
    a :class:`CheckResult`, trying one uneven split as well (the first batch's, when every
    batch divides evenly by the replicas) and saying which splits it tried. On a
    difference, the message names the likely cause, or the number written in
    ``compute_loss`` that is right for one replica count only (a ``/ 32`` where the global
    batch is 24, a ``4`` where there are 3 replicas). An error raised while
    the step is traced is named by its own line, not TensorFlow's "in user code:". Give
    several batches of different sizes when the loss must be right for any batch: a loss
    that divides by a fixed number passes one size only. With one replica, a loss that
    ignores the replicas is right by accident, so there the check refuses.

    Args:
        compute_loss: The learner's ``compute_loss(model, x, y)`` (``...``: not attempted).
        strategy: The strategy the loop runs under.
        model_fn: A function returning a new, built Keras model.
        batch: One global batch ``(x, y)`` of NumPy arrays, or a list of such batches.
        loss: The per-example loss meant to be minimised, e.g. ``"mse"``.

    Returns:
        A :class:`CheckResult`; a mistake in ``compute_loss`` (it fails, returns no scalar
        loss, or a loss whose gradient differs from one device's) is a failed result whose
        message says what to change. An empty list of batches is a failed result too.

    Raises:
        TypeError: If ``strategy`` is not a ``tf.distribute.Strategy``, ``model_fn`` is a
            model or not a function, ``batch`` is not ``(x, y)``, ``x`` or ``y`` holds text,
            or ``loss`` is not a loss, as :func:`mirrorkit.check_step_equivalence` raises.
        ValueError: If x and y differ in length, a batch is empty, ``model_fn`` builds a
            model with ``BatchNormalization`` or ``Dropout``, or ``loss`` is not a Keras
            loss name.
        RuntimeError: If called inside ``strategy.scope()`` (with 2 or more replicas).

    Example:
        >>> import numpy as np, keras, tensorflow as tf
        >>> import mirrorkit as mk
        >>> def model_fn():
        ...     return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        >>> def compute_loss(model, x, y):
        ...     per_example = keras.losses.mean_squared_error(y, model(x, training=True))
        ...     return tf.nn.compute_average_loss(per_example, global_batch_size=4)
        >>> batch = (np.ones((4, 2), "float32"), np.zeros((4, 1), "float32"))
        >>> mk.check_loss_step(compute_loss, mk.make_strategy(), model_fn, batch).message[:40]
        'cannot check a loss with one replica: wi'
    """
    return judge_loss_step(
        ask_loss_step(compute_loss, strategy, model_fn, batch, loss=loss, send=False),
        model_fn=model_fn,
        loss=loss,
    )


def ask_loss_step(compute_loss, strategy, model_fn, batch, *, loss="mse", send=True) -> dict:
    """What :func:`check_loss_step` runs of ``compute_loss``, as a record its verdict judges.

    Each batch's step, on the strategy's split and (once) an uneven one, or the sentence
    of the learner's error; the numbers written in ``compute_loss``. With ``send``, the
    record carries the model's and the loss's configuration, for a verdict in another
    process. Raises as :func:`check_loss_step` does for arguments that are not the check's.

    Example:
        >>> import mirrorkit as mk
        >>> ask_loss_step(..., mk.make_strategy(), None, None)["verdict"]["passed"]
        False
    """
    require_strategy(strategy, "mk.check_loss_step(compute_loss, strategy, model_fn, batch)")
    if compute_loss is Ellipsis:
        return as_record(NOT_ATTEMPTED, check="loss_step")
    if (refusal := cannot_check_with_one_replica(strategy, "a loss")) is not None:
        return as_record(refusal, check="loss_step")
    batches = batch if isinstance(batch, list) else [batch]
    if not batches:
        return as_record(
            CheckResult(False, "batch is an empty list: give one (x, y) batch or several."),
            check="loss_step",
        )
    checked = guarded(compute_loss, "compute_loss") if callable(compute_loss) else compute_loss
    n = strategy.num_replicas_in_sync
    # Every batch's arguments refused or accepted first, as the check itself would.
    given = [checked_batch(compute_loss, strategy, model_fn, each) for each in batches]
    resolve_loss(loss)
    # One uneven split is enough: a batch that does not divide by n is one, else the first's.
    uneven = [not any(examples % n for _, _, examples in given)] + [False] * (len(given) - 1)
    asked = []
    for each, try_uneven in zip(given, uneven, strict=True):
        try:
            asked.append(
                ask_step(checked, strategy, model_fn, each, loss=loss, uneven=try_uneven, send=send)
            )
        except Exception as error:
            sentence = traced_learner_error(error)
            if sentence is None:
                raise  # the check's own arguments, as check_step_equivalence refuses them
            asked.append({"sentence": sentence})
            break
    return {
        "check": "loss_step",
        "batches": asked,
        "numbers": list(literal_numbers(compute_loss)),
    }


def judge_loss_step(record: dict, *, model_fn=None, loss=None) -> CheckResult:
    """The verdict of :func:`check_loss_step` on what :func:`ask_loss_step` recorded.

    ``model_fn`` and ``loss``: the check's (None: rebuilt from the record's configuration).

    Example:
        >>> judge_loss_step({"verdict": {"passed": False, "message": "not attempted yet"}})
        NOT YET: not attempted yet
    """
    if (given := from_record(record)) is not None:
        return given
    batches = record["batches"]
    splits, lengths = [], []
    for each in batches:
        if "sentence" in each:
            return CheckResult(False, str(each["sentence"]))
        report = judge_step(each, model_fn=model_fn, loss=loss)
        lengths.append(report.global_batch)
        if not report.equivalent:
            size = f"with a global batch of {report.global_batch} examples: "
            return CheckResult(
                False, (size if len(batches) > 1 else "") + _named(report, record["numbers"])
            )
        splits += report.splits
    if len(batches) == 1:
        return CheckResult(True, report.message)
    sizes = " and ".join(map(str, lengths))
    tried = "; ".join(", ".join(map(str, split)) for split in splits)
    head = report.message.split(" Splits tried")[0]
    return CheckResult(
        True, f"{head} (checked with global batches of {sizes}; splits tried: {tried})."
    )


def _named(report, numbers) -> str:
    """The report's message, naming a number fixed for one replica count when one explains it."""
    message = report.message.replace("LearnerError: ", "")
    if not report.example_weights:
        return message
    fixed = fixed_number_cause(
        report.example_weights,
        report.replica_batches,
        report.global_batch,
        tuple(numbers),
        report.regularization_weight,
    )
    if fixed is None:
        return message
    head = message.split(". ", 1)[0]
    return f"{head}. {fixed}"
