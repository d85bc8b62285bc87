"""The verdict of the step-equivalence checks, from what their ask recorded.

The one-device reference (the gradient of the mean loss over the global batch plus the
regularization), on the chapter's ``model_fn`` or on the model rebuilt from the record's
configuration, with the recorded initial weights; then the comparison and its cause
(docs/design/checks.md). Nothing of the learner's runs here.

Example:
    >>> import numpy as np, keras
    >>> import mirrorkit as mk
    >>> from mirrorkit.checks._step_asks import ask_step
    >>> def model_fn():
    ...     return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> def loss(model, x, y):
    ...     return keras.ops.sum((model(x) - y) ** 2) / 4  # the global batch's 4 examples
    >>> batch = (np.ones((4, 2), "float32"), np.zeros((4, 1), "float32"), 4)
    >>> record = ask_step(loss, mk.make_strategy(), model_fn, batch, loss="mse", send=True)
    >>> judge_step(record).equivalent
    True
"""

from __future__ import annotations

import dataclasses

import numpy as np

from mirrorkit.checks import _logits
from mirrorkit.checks._learner_loss import shapes, why
from mirrorkit.checks._logits import from_logits_of
from mirrorkit.checks._loss_causes import diagnose, fit, notes
from mirrorkit.checks._model_configs import reference_of
from mirrorkit.checks._splits import Precision, splits_verdict
from mirrorkit.checks._steps import (
    describe_model,
    flat_float64,
    gradient_ratio,
    per_example_values,
    resolve_loss,
)
from mirrorkit.checks.step_equivalence import (
    FROM_LOGITS,
    NO_LOSS,
    OTHER,
    REFERENCE_FROM_LOGITS,
    StepEquivalence,
    WeightGradient,
)


def judge_step(record: dict, *, model_fn=None, loss=None) -> StepEquivalence:
    """The verdict on a recorded step: its first split, and an uneven one if it ran.

    Args:
        record: What :func:`mirrorkit.checks._step_asks.ask_step` recorded.
        model_fn: The chapter's function building the model (None: rebuild it from the
            configuration the record carries).
        loss: The check's ``loss`` (None: the one the record names).

    Raises:
        ValueError: If the reference loss cannot score the model, or the record's model,
            loss or weights cannot be rebuilt.
    """
    import tensorflow as tf

    reference, loss = reference_of(tf, record, model_fn, loss)
    per_example_loss = resolve_loss(loss)
    x, y = record["x"], record["y"]
    reference.set_weights(record["weights"])
    precision = Precision.of(reference, record["rtol"], record["atol"])
    splits = record["splits"]

    def judged(split: dict) -> StepEquivalence:
        tolerance = {
            "global_batch": int(record["examples"]),
            "rtol": precision.rtol,
            "atol": precision.atol,
        }
        if "sentence" in split:
            return _no_loss(str(split["sentence"]), int(record["replicas"]), **tolerance)
        step = split["step"]
        single = _single_device(tf, reference, per_example_loss, loss, x, y)
        result = _compare(
            tf, step, single, reference, per_example_loss, loss, precision, **tolerance
        )
        if result.cause == OTHER and from_logits_of(loss) is not None:
            return _other_reading(tf, result, step, reference, loss, (x, y), precision)
        return result

    first = judged(splits[0])
    if len(splits) < 2 or not first.equivalent:
        tried = (first.replica_batches,) if first.replica_batches else ()
        return dataclasses.replace(first, splits=tried)
    return splits_verdict(first, judged(splits[1]))


def _no_loss(message: str, num_replicas: int, *, global_batch, rtol, atol) -> StepEquivalence:
    """The failed result when ``compute_loss`` gave no loss to compare."""
    return StepEquivalence(
        equivalent=False,
        cause=NO_LOSS,
        message=message,
        num_replicas=num_replicas,
        global_batch=global_batch,
        replica_batches=(),
        loss=float("nan"),
        reference_loss=float("nan"),
        gradient_ratio=float("nan"),
        example_weights=(),
        regularization_weight=None,
        mean_of_replica_means=float("nan"),
        reference_data_loss=float("nan"),
        weights=(),
        rtol=rtol,
        atol=atol,
    )


def _single_device(tf, model, per_example_loss, loss, x, y):
    """The one-device reference gradients; refuses a ``loss`` that cannot score this model."""
    try:
        return _reference_gradients(tf, model, per_example_loss, x, y)
    except (tf.errors.InvalidArgumentError, ValueError, TypeError) as error:
        name = loss if isinstance(loss, str) else type(loss).__name__
        prediction = model(x, training=False)
        raise ValueError(  # the wording the tests pin has a colon of its own
            f"the reference loss ({name}) cannot score this model: predictions of shape "
            f"{shapes(prediction)} against labels of shape {shapes(y)} ({why(error)}). The "
            f"model is {describe_model(model)}: give y the structure of its outputs (a dict "
            "with the same keys for named outputs) and pass the loss your compute_loss "
            "uses as loss=..., e.g. "
            "loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True) for class "
            "indices and logits."
        ) from None


def _reference_gradients(tf, model, per_example_loss, x, y, summed=False):
    """Gradients of the data loss (mean, or sum if ``summed``) and of the regularization."""
    variables = model.trainable_variables
    with tf.GradientTape(persistent=True) as tape:
        values = per_example_values(tf, per_example_loss, y, model(x, training=True))
        data = tf.reduce_sum(values) if summed else tf.reduce_mean(values)
        reg = tf.add_n([tf.cast(v, tf.float32) for v in model.losses]) if model.losses else None
    data_grad = _dense(tf, tape.gradient(data, variables), variables)
    if reg is None:
        reg_grad = [np.zeros(v.shape, np.float64) for v in variables]
        reg_value = 0.0
    else:
        reg_grad = _dense(tf, tape.gradient(reg, variables), variables)
        reg_value = float(reg)
    del tape
    return data_grad, reg_grad, float(data), reg_value, values.numpy()


def _dense(tf, gradients, variables):
    return [
        np.zeros(v.shape, np.float64) if g is None else np.asarray(tf.convert_to_tensor(g), float)
        for g, v in zip(gradients, variables, strict=True)
    ]


def _replica_weights(tf, step, reference, per_example_loss, reg_grad, global_batch, precision):
    """Per replica, how much its examples and the regularization weigh in its gradient."""
    sizes = tuple(int(np.shape(tf.nest.flatten(part)[0])[0]) for part in step["replica_x"])
    n = len(sizes)
    flat_reg = flat_float64(reg_grad) if any(np.any(r) for r in reg_grad) else None
    example_weights, reg_weights, replica_means, explained = [], [], [], True
    for grads, rx, ry, size in zip(
        step["replica_gradients"], step["replica_x"], step["replica_y"], sizes, strict=True
    ):
        piece = None
        if size:
            found = _reference_gradients(tf, reference, per_example_loss, rx, ry, summed=True)
            piece = flat_float64(found[0])
            replica_means.append(float(np.mean(found[4])))
        c, d, ok = fit(flat_float64(grads), piece, flat_reg, precision.fit_tolerance)
        example_weights.append(c * global_batch)
        reg_weights.append(d * n)
        explained = explained and ok
    return sizes, example_weights, reg_weights, replica_means, explained


def _compare(tf, step, single, reference, per_example_loss, loss, precision, **tolerance):
    """The distributed step against the reference: the verdict, its cause and the rows."""
    data_grad, reg_grad, data_loss, reg_loss, _ = single
    global_batch, rtol, atol = tolerance["global_batch"], tolerance["rtol"], tolerance["atol"]
    ref_grad = [d + r for d, r in zip(data_grad, reg_grad, strict=True)]
    has_reg = any(np.any(r) for r in reg_grad)
    sizes, example_weights, reg_weights, replica_means, explained = _replica_weights(
        tf, step, reference, per_example_loss, reg_grad, global_batch, precision
    )
    n = len(sizes)
    equivalent = precision.agree(step["applied"], ref_grad)
    ratio = gradient_ratio(flat_float64(step["applied"]), flat_float64(ref_grad))
    mean_of_means = float(np.mean(replica_means))
    cause, message = diagnose(
        equivalent=equivalent,
        explained=explained,
        example_weights=example_weights,
        reg_weights=reg_weights if has_reg else None,
        sizes=sizes,
        ratio=ratio,
        loss=loss,
        precision=precision,
        **tolerance,
    )
    return StepEquivalence(
        equivalent=equivalent,
        cause=cause,
        message=message,
        num_replicas=n,
        global_batch=global_batch,
        replica_batches=sizes,
        loss=float(step["loss"]),
        reference_loss=data_loss + reg_loss,
        gradient_ratio=ratio,
        example_weights=tuple(float(w) for w in example_weights),
        regularization_weight=float(np.nansum(reg_weights) / n) if has_reg else None,
        mean_of_replica_means=mean_of_means,
        reference_data_loss=data_loss,
        weights=tuple(
            WeightGradient(name, tuple(a.shape), a, r)
            for name, a, r in zip(step["names"], step["applied"], ref_grad, strict=True)
        ),
        rtol=rtol,
        atol=atol,
        precision=precision.name,
        notes=notes(sizes, global_batch, n, mean_of_means, data_loss, cause, step["empty_loss"]),
    )


def _other_reading(tf, result, step, reference, loss, batch, precision):
    """``result`` named again if the step is the reference read with the other from_logits.

    Then either the learner or the reference misreads the outputs (docs/design/checks.md).
    """
    x, y = batch
    other = _reference_gradients(tf, reference, _logits.flipped(loss), x, y)
    data_grad, reg_grad = other[0], other[1]
    matched = precision.agree(
        step["applied"], [d + r for d, r in zip(data_grad, reg_grad, strict=True)]
    )
    if not matched:
        return result
    learner_right, message = _logits.message(loss, reference(x, training=False))
    cause = REFERENCE_FROM_LOGITS if learner_right else FROM_LOGITS
    return dataclasses.replace(result, cause=cause, message=message, notes=())
