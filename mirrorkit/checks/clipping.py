"""Check a learner's gradient clipping under a strategy against one device's global-norm clip.

The check is an ask and a verdict: :func:`ask_clipping` runs the learner's ``clip`` in a
distributed step at each bound the verdict may need and records what was applied;
:func:`mirrorkit.checks._clipping_verdicts.judge_clipping` computes one device's clipped
gradient from that record and names the mistake. The grader asks in an executor and judges
in its own process; a check in the chapter does both here.

Example:
    >>> import mirrorkit as mk
    >>> mk.check_clipping(..., mk.make_strategy(), None, None, clip_norm=1.0)
    NOT YET: not attempted yet: replace the ... with your answer and run the cell.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from mirrorkit._validate import refuse, require_number, require_strategy
from mirrorkit.checks._clipping_verdicts import judge_clipping
from mirrorkit.checks._learner_data import OneBatch, one_batch
from mirrorkit.checks._learner_runs import (
    LearnerError,
    flat_weights,
    mean_gradient,
    reference_and_copy,
    run_learner,
)
from mirrorkit.checks._model_configs import config_of, sent_loss
from mirrorkit.checks._steps import per_example_values, resolve_loss
from mirrorkit.checks.result import (
    NOT_ATTEMPTED,
    CheckResult,
    as_record,
    cannot_check_with_one_replica,
)
from mirrorkit.report.values import number


def check_clipping(
    clip: Callable, strategy, model_fn: Callable, batch, *, clip_norm: float, loss="mse"
) -> CheckResult:
    """Check a gradient-clipping function placed just before ``apply_gradients``.

    Inside ``strategy.run`` each replica computes its gradients of its share of the
    global mean loss, calls ``clip(gradients, clip_norm)`` and hands the result to plain
    SGD's ``apply_gradients``, which sums the replicas. The update must equal one SGD step
    on one device with ``tf.clip_by_global_norm(gradients, clip_norm)``, the same as
    Keras's ``global_clipnorm`` on one device. The check runs twice: with ``clip_norm``,
    which clips, and with a bound the gradient does not reach, where nothing may change.

    Args:
        clip: The learner's ``clip(gradients, clip_norm)``, returning the gradients to
            apply (``...``: not attempted).
        strategy: The strategy the loop runs under, with 2 or more replicas.
        model_fn: A function returning a new, built Keras model.
        batch: One global batch ``(x, y)`` of NumPy arrays (or dicts or tuples of them,
            as the model takes its inputs and gives its outputs).
        clip_norm: The bound on the global norm; it must be below the norm of the global
            batch's gradient, or the check cannot see clipping.
        loss: The per-example loss meant to be minimised, e.g. ``"mse"``.

    Returns:
        A :class:`~mirrorkit.CheckResult`; a mistake in ``clip`` (not a function, it fails,
        returns the wrong thing or a wrong update) is a failed result naming the mistake
        (clipping each replica's gradient before the sum, clipping the sum and letting the
        optimizer sum it again, clipping weight by weight, not clipping).

    Raises:
        TypeError: If ``strategy`` is not a ``tf.distribute.Strategy``, ``clip_norm`` is not
            a number, ``model_fn`` is a model or not a function, ``batch`` is not a pair
            ``(x, y)`` or ``loss`` is not a loss.
        ValueError: If ``clip_norm`` is not above 0 or not below the gradient's norm (so
            nothing would be clipped), x and y differ in length, ``model_fn`` builds a model
            with ``BatchNormalization`` or ``Dropout``, or ``loss`` is not a Keras loss name.

    Example:
        >>> import mirrorkit as mk
        >>> from mirrorkit.checks.clipping import check_clipping
        >>> check_clipping(..., mk.make_strategy(), None, None, clip_norm=1.0)
        NOT YET: not attempted yet: replace the ... with your answer and run the cell.
    """
    return judge_clipping(
        ask_clipping(clip, strategy, model_fn, batch, clip_norm=clip_norm, loss=loss, send=False),
        model_fn=model_fn,
        loss=loss,
    )


def ask_clipping(  # noqa: PLR0913 - the check's own arguments
    clip, strategy, model_fn, batch, *, clip_norm, loss="mse", send=True
) -> dict:
    """What :func:`check_clipping` runs of ``clip``, as a record its verdict judges.

    The step at each bound the verdict may need: ``clip_norm``, twice the gradient's norm
    (nothing may change) and one between the norms of the replicas' mean and sum (which
    tells the norm of the mean from a sum clipped and summed again); each update and each
    replica's gradient, or the sentence of the learner's error. With ``send``, the record
    carries the model's and the loss's configuration, for a verdict in another process.
    Raises as :func:`check_clipping` does for arguments that are not the check's.

    Example:
        >>> import mirrorkit as mk
        >>> ask_clipping(..., mk.make_strategy(), None, None, clip_norm=1.0)["verdict"]["passed"]
        False
    """
    require_strategy(strategy, "check_clipping(clip, strategy, model_fn, batch, clip_norm=...)")
    if clip is Ellipsis:
        return as_record(NOT_ATTEMPTED, check="clipping")
    if not callable(clip):
        return as_record(
            CheckResult(
                False,
                f"clip must be a function clip(gradients, clip_norm) returning the gradients to "
                f"apply, got {type(clip).__name__}.",
            ),
            check="clipping",
        )
    write = "clip_norm=1.0 (any number above 0)"
    clip_norm = require_number("clip_norm", clip_norm, write=write, above=0)
    if (refusal := cannot_check_with_one_replica(strategy, "gradient clipping")) is not None:
        return as_record(refusal, check="clipping")
    n = strategy.num_replicas_in_sync
    data = one_batch(strategy, batch, "batch")  # split once: every run below takes it
    record = {
        "check": "clipping",
        "replicas": n,
        "x": data.x,
        "y": data.y,
        "model": None,
        "loss": sent_loss(loss) if send else None,
    }
    norm, clipped, model = _clipping_run(clip, strategy, model_fn, data, clip_norm, loss)
    record["model"] = config_of(model) if send else None
    if "sentence" in clipped:
        return {**record, "runs": {"clipped": clipped}}
    if norm <= clip_norm:
        refuse(
            "clip_norm",
            must="below the norm of the batch's gradient, so that clipping shows",
            got=f"{number(clip_norm)}, but the gradient's norm is only "
            f"{number(norm)}, so nothing is clipped. Pass a smaller clip_norm",
            write=f"clip_norm={number(norm / 2)}",
            error=ValueError,
        )
    between = norm * (1.0 + 1.0 / n) / 2.0  # above the mean's norm, below the sum's
    runs = {"clipped": clipped}
    for name, bound in (("loose", 2.0 * norm), ("between", between)):
        runs[name] = _clipping_run(clip, strategy, model_fn, data, bound, loss)[1]
    return {**record, "runs": runs}


def _clipping_run(clip, strategy, model_fn, data: OneBatch, clip_norm, loss):
    """``(norm, run, model)``: the gradient's norm, the step at ``clip_norm``, the model.

    The one-device gradient's norm picks the bounds; the step is its initial weights, its
    update and each replica's gradient, or the sentence of the learner's error.
    """
    import tensorflow as tf

    x, y, global_batch = data.x, data.y, data.examples
    loss_fn = resolve_loss(loss)
    reference, model, optimizer = reference_and_copy(tf, strategy, model_fn, x, 1.0)
    norm = float(np.linalg.norm(mean_gradient(tf, reference, loss_fn, x, y)))
    initial = [np.asarray(w) for w in model.get_weights()]
    variables = model.trainable_variables

    def replica_step(x_r, y_r):
        with tf.GradientTape() as tape:
            per_example = per_example_values(tf, loss_fn, y_r, model(x_r, training=True))
            value = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
        gradients = tape.gradient(value, variables)
        clipped = clip(list(gradients), clip_norm)
        if not isinstance(clipped, list | tuple) or len(clipped) != len(variables):
            raise LearnerError(
                f"clip must return one gradient per weight, a list of {len(variables)}, got "
                f"{type(clipped).__name__}"
                + (f" of {len(clipped)}" if isinstance(clipped, list | tuple) else "")
                + ": tf.clip_by_global_norm returns a pair (gradients, norm), keep the first."
            )
        optimizer.apply_gradients(zip(clipped, variables, strict=True))
        return gradients

    def run(batch):
        return strategy.run(replica_step, args=batch)

    step = tf.function(functools.partial(run))
    before = flat_weights(model)
    try:
        local = run_learner(step, data.per_replica)
    except LearnerError as error:
        return norm, {"clip_norm": clip_norm, "sentence": str(error)}, model
    replicas = [
        [np.asarray(g, np.float64) for g in grads]
        for grads in zip(*(strategy.experimental_local_results(g) for g in local), strict=True)
    ]
    applied = before - flat_weights(model)
    run = {"clip_norm": clip_norm, "weights": initial, "applied": applied, "replicas": replicas}
    return norm, run, model
