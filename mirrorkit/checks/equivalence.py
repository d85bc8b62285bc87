"""Does one distributed training step compute the same gradient as one device would?

The one device's loss is read from what the learner names (``loss="mse"``, a
``keras.losses.Loss`` or a function) by :func:`resolve_loss`, as the other checks that take a
``loss`` and the scaling sweep (:func:`mirrorkit.run_scaling_sweep`) read theirs.

Example:
    >>> import mirrorkit as mk
    >>> strategy = mk.make_strategy()
    >>> mk.check_step_equivalence(strategy, None, None, None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: compute_loss must be your compute_loss(model, x, y), the first argument ...
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mirrorkit._validate import refuse, require_batch, require_callable, require_strategy
from mirrorkit.checks import _logits
from mirrorkit.checks._learner_loss import probe_compute_loss, scalar_loss, shapes, why
from mirrorkit.checks._learner_runs import guarded, traced_learner_error
from mirrorkit.checks._logits import from_logits_of
from mirrorkit.checks._loss_causes import diagnose, fit, notes
from mirrorkit.checks._splits import Precision, distributed_batch, splits_verdict, uneven_split
from mirrorkit.checks._steps import (
    build_model,
    check_layers,
    describe_model,
    flat_float64,
    gradient_ratio,
    per_example_values,
)
from mirrorkit.checks.step_equivalence import (
    FROM_LOGITS,
    NO_LOSS,
    OTHER,
    REFERENCE_FROM_LOGITS,
    StepEquivalence,
    WeightGradient,
)

CALL = 'mk.check_step_equivalence(compute_loss, strategy, model_fn, batch, loss="mse")'
_LOSS_KINDS = "a Keras loss name, a keras.losses.Loss or a function loss(y_true, y_pred)"


def resolve_loss(loss) -> Callable:
    """The function ``loss(y_true, y_pred)`` that gives one value per example.

    From a Keras loss name, a ``keras.losses.Loss`` (its reduction ignored) or a function.

    Example:
        >>> import numpy as np
        >>> resolve_loss("mse")(np.zeros((2, 1)), np.ones((2, 1))).numpy().tolist()
        [1.0, 1.0]
        >>> resolve_loss("msq")
        Traceback (most recent call last):
        ...
        ValueError: loss must be a Keras loss name, a keras.losses.Loss or a function loss(y_true, y_pred), got 'msq' (loss='msq' is not a Keras loss name: use a name such as 'mse'): write loss='mse' or loss='sparse_categorical_crossentropy'.
    """  # noqa: E501
    import keras

    if isinstance(loss, str):
        try:
            fn = keras.losses.get(loss)
        except ValueError:
            refuse(
                "loss",
                must=_LOSS_KINDS,
                got=f"{loss!r} (loss={loss!r} is not a Keras loss name: use a name such as 'mse')",
                write="loss='mse' or loss='sparse_categorical_crossentropy'",
                error=ValueError,
            )
        return fn.call if isinstance(fn, keras.losses.Loss) else fn
    if isinstance(loss, keras.losses.Loss):
        return loss.call  # the per-example values, before any reduction
    if callable(loss):
        return loss
    refuse("loss", loss, must=_LOSS_KINDS, write="loss='mse'")


def check_step_equivalence(
    compute_loss: Callable,
    strategy,
    model_fn: Callable,
    batch,
    *,
    loss="mse",
    rtol: float | None = None,
    atol: float | None = None,
) -> StepEquivalence:
    """Run one step of a custom training loop under ``strategy`` and on one device; compare.

    Like every ``check_*``, it takes the learner's code first and answers a mistake in it
    with a failed result (``.passed`` False, ``.message`` saying what to change), never an
    exception; an argument of the wrong kind raises a TypeError or ValueError.

    The distributed run builds ``model_fn()`` inside ``strategy.scope()``, hands the
    global ``batch`` to ``strategy.experimental_distribute_dataset`` (so the replicas
    get exactly the split training would give them, uneven or empty batches
    included) and, inside ``strategy.run`` in a ``tf.function``, takes the gradient
    of ``compute_loss(model, x, y)`` on every replica. The gradient an optimizer
    applies is the SUM all-reduce of those. The reference builds ``model_fn()``
    again on one device with the same initial weights and takes the gradient of
    the mean of ``loss`` over the whole global batch plus ``sum(model.losses)``:
    the gradient single-device training applies.

    When they differ, the report names the likely cause from what it measured: how
    much each replica's examples weigh relative to the right ``1 / global_batch``,
    and how many times the regularization is counted (docs/design/checks.md).

    A loss can be right when the replicas get equal shares and wrong otherwise, so when
    the strategy splits ``batch`` evenly the check also runs one uneven split of the same
    examples (one moved from the last replica to the first) and says which splits it
    tried. Under a mixed-precision policy (``mixed_float16``, ``mixed_bfloat16``) the
    gradients are compared at the policy's precision, and the verdict names it.

    Args:
        compute_loss: The learner's per-replica loss: ``compute_loss(model, x, y)``
            returns the scalar loss one replica differentiates (``...``: not attempted).
        strategy: A ``tf.distribute.Strategy``, e.g. from :func:`mirrorkit.make_strategy`.
        model_fn: A function of no argument returning a new, built Keras model (give it
            a ``keras.Input``). Layers must treat examples independently and draw no
            random numbers: no ``BatchNormalization``, no ``Dropout`` with a rate above 0.
        batch: One global batch ``(x, y)`` of NumPy arrays with as many examples each.
        loss: The loss meant to be minimised, per example: a Keras loss name such as
            ``"mse"``, a ``keras.losses.Loss`` (its reduction is ignored) or a
            function ``loss(y_true, y_pred)`` returning one value per example.
        rtol: Relative tolerance of the gradient comparison (None: 1e-4 for a float32
            model; 4 epsilons of the compute dtype, of the largest gradient element,
            under a mixed-precision policy).
        atol: Absolute tolerance of the gradient comparison (None: 1e-6).

    Returns:
        A :class:`StepEquivalence`, a :class:`~mirrorkit.CheckResult`. When
        ``compute_loss`` fails, returns no scalar loss tensor or a loss that does not
        depend on the weights, it is a failed result (cause ``NO_LOSS``) that says so.

    Raises:
        TypeError: If an argument is not what is described above (a strategy first: the
            old argument order), or ``x`` or ``y`` holds text instead of numbers.
        ValueError: If ``x`` and ``y`` differ in length, the batch is empty, the model
            has a layer that draws random numbers or normalizes by the batch, or ``loss``
            cannot score the model's predictions.
        RuntimeError: If called inside ``strategy.scope()``.

    Example:
        >>> import numpy as np, keras, tensorflow as tf
        >>> import mirrorkit as mk
        >>> def model_fn():
        ...     return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        >>> def plain_mean(model, x, y):  # wrong with more than one replica
        ...     return tf.reduce_mean(tf.square(y - model(x, training=True)))
        >>> x, y = np.ones((4, 2), "float32"), np.zeros((4, 1), "float32")
        >>> print(mk.check_step_equivalence(
        ...     plain_mean, mk.make_strategy(), model_fn, (x, y), loss="mse").message)
        ... # doctest: +NORMALIZE_WHITESPACE
        The distributed step applies the single-device gradient (rtol 0.0001, atol 1e-06).
        With one replica that says nothing about the replicas: a loss that ignores them (a
        plain mean, or a Keras loss divided by the replicas again) gives this gradient too.
        Compare with 2 or more replicas (mk.simulate_replicas).
    """
    return step_equivalence(
        compute_loss, strategy, model_fn, batch, loss=loss, rtol=rtol, atol=atol
    )


def step_equivalence(compute_loss, strategy, model_fn, batch, *, loss, rtol, atol, uneven=True):
    """:func:`check_step_equivalence`; ``uneven`` False tries the strategy's split only.

    For a check that tries several batches and needs the uneven split once.

    Example:
        >>> import mirrorkit as mk
        >>> step_equivalence(..., mk.make_strategy(), None, None, loss="mse", rtol=None,
        ...     atol=None)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: model_fn must be ...
    """
    import tensorflow as tf

    x, y, examples = _arguments(tf, compute_loss, strategy, model_fn, batch)
    return _verdict(
        tf, compute_loss, strategy, model_fn, (x, y, examples), loss, rtol, atol, uneven
    )


def batch_examples(compute_loss, strategy, model_fn, batch) -> int:
    """The examples in ``batch``, once every argument is refused or accepted as the check would.

    Example:
        >>> import numpy as np
        >>> import mirrorkit as mk
        >>> from mirrorkit.checks.equivalence import batch_examples
        >>> batch_examples(print, mk.make_strategy(), lambda: None, (np.ones((6, 2)), np.ones(6)))
        6
    """
    import tensorflow as tf

    return _arguments(tf, compute_loss, strategy, model_fn, batch)[2]


def _verdict(tf, compute_loss, strategy, model_fn, batch, loss, rtol, atol, uneven=True):
    """The verdict on the strategy's own split and, if that is even, one uneven split too."""
    x, y, global_batch = batch
    per_example_loss = resolve_loss(loss)
    reference = build_model(tf, model_fn, x)
    check_layers(reference)
    with strategy.scope():
        model = build_model(tf, model_fn, x)
    model.set_weights(reference.get_weights())
    if not model.trainable_variables:
        refuse(
            "model_fn",
            must="a function building a model with trainable weights",
            got="a function where the model has no trainable weights, so no gradient to compare",
            write="model_fn=build_model where build_model() returns a model with a Dense layer",
            error=ValueError,
        )
    precision = Precision.of(reference, rtol, atol)
    judge = functools.partial(
        _one_split,
        tf,
        strategy,
        model,
        reference,
        compute_loss,
        (per_example_loss, loss),
        (x, y),
        precision,
    )
    first = judge(None)
    n = strategy.num_replicas_in_sync
    if not (uneven and first.equivalent and n > 1 and len(set(first.replica_batches)) == 1):
        tried = (first.replica_batches,) if first.replica_batches else ()
        return dataclasses.replace(first, splits=tried)
    second = judge(uneven_split(first.replica_batches))
    return splits_verdict(first, second)


def _one_split(tf, strategy, model, reference, compute_loss, losses, data, precision, split):
    """The verdict on one split of the batch: the strategy's own (``split`` None) or given."""
    per_example_loss, loss = losses
    x, y = data
    tolerance = {"global_batch": _examples(tf, x), "rtol": precision.rtol, "atol": precision.atol}
    step = _run_distributed(tf, strategy, model, compute_loss, data, split)
    if isinstance(step, str):
        return _no_loss(step, strategy.num_replicas_in_sync, **tolerance)
    single = _single_device(tf, reference, per_example_loss, loss, x, y)
    result = _compare(tf, step, single, reference, per_example_loss, loss, precision, **tolerance)
    if result.cause == OTHER and from_logits_of(loss) is not None:
        return _other_reading(tf, result, step, reference, loss, data, precision)
    return result


def _arguments(tf, compute_loss, strategy, model_fn, batch):
    """Refuse an argument of the wrong kind; return ``x``, ``y`` and the global batch size."""
    import keras

    if isinstance(compute_loss, tf.distribute.Strategy):
        must = "your compute_loss(model, x, y), the first argument (the strategy comes second)"
        got = f"the strategy {type(compute_loss).__name__}, in the old argument order"
        refuse("compute_loss", compute_loss, must=must, got=got, write=CALL)
    require_strategy(strategy, CALL)
    if tf.distribute.has_strategy():
        raise RuntimeError(
            "call this outside `with strategy.scope():`: it builds the single-device "
            "reference model itself and enters the strategy's scope only for the "
            "distributed one."
        )
    if isinstance(model_fn, keras.Model):  # the wording the tests pin has a colon of its own
        raise TypeError(
            "model_fn must be a function that builds a NEW model, not a model: both runs need "
            "their own copy, e.g. model_fn=build_model where build_model() returns "
            "keras.Sequential([...])."
        )
    require_callable("model_fn", model_fn, write="model_fn=build_model, the function itself")
    return require_batch("batch", batch, write="batch=(x, y), e.g. (x_train[:8], y_train[:8])")


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


# ------------------------------------------------------------------ the distributed step


@dataclass(frozen=True)
class _Distributed:
    """What one distributed step measured."""

    applied: list  # per weight, the SUM all-reduce of the replicas' gradients
    loss: float  # the replicas' losses summed
    replica_gradients: list  # per replica, its gradient of each weight
    replica_x: list  # per replica, its share of x (NumPy)
    replica_y: list
    empty_loss: bool  # a replica without examples returned an empty tensor, not 0
    names: list  # the weights' paths


def _run_distributed(tf, strategy, model, compute_loss, data, split):
    """The step on the strategy's split (or ``split``), or why ``compute_loss`` gave no loss."""
    dist_x, dist_y = distributed_batch(tf, strategy, data, split)
    local = strategy.experimental_local_results
    problem = probe_compute_loss(tf, compute_loss, model, local(dist_x)[0], local(dist_y)[0])
    if problem is not None:
        return problem
    variables = model.trainable_variables
    none_gradients, empty_losses, problems = [], [], []

    checked = guarded(compute_loss, "compute_loss")

    def replica_step(x_r, y_r):
        with tf.GradientTape() as tape:
            value = checked(model, x_r, y_r)
        value = scalar_loss(tf, value, empty_losses, problems)
        gradients = tape.gradient(value, variables)
        none_gradients.append(all(g is None for g in gradients))
        gradients = [
            tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
            for g, v in zip(gradients, variables, strict=True)
        ]
        return value, gradients

    def run_step(x_d, y_d):
        return strategy.run(replica_step, args=(x_d, y_d))

    # TensorFlow counts traces per code object and warns after five ("triggered tf.function
    # retracing"); every check traces a new step once by design, so each gets its own key.
    try:
        per_replica_loss, per_replica_gradients = tf.function(functools.partial(run_step))(
            dist_x, dist_y
        )
    except Exception as error:  # noqa: BLE001 - the learner's code, traced: a verdict
        sentence = traced_learner_error(error)  # NumPy on a symbolic tensor, above all
        if sentence is None:
            raise
        return sentence
    if problems:
        return problems[0]
    if none_gradients and all(none_gradients):
        return (
            "the loss compute_loss returns does not depend on the model's weights: compute "
            "it from the model's predictions, model(x, training=True)."
        )
    summed = functools.partial(strategy.reduce, tf.distribute.ReduceOp.SUM, axis=None)
    return _Distributed(
        applied=[np.asarray(g, np.float64) for g in summed(per_replica_gradients)],
        loss=float(summed(per_replica_loss)),
        replica_gradients=[
            [np.asarray(g, np.float64) for g in grads]
            for grads in zip(*(local(g) for g in per_replica_gradients), strict=True)
        ],
        replica_x=[_numpy_structure(tf, part) for part in local(dist_x)],
        replica_y=[_numpy_structure(tf, part) for part in local(dist_y)],
        empty_loss=bool(empty_losses),
        names=[getattr(v, "path", None) or v.name for v in variables],
    )


def _numpy_structure(tf, value):
    return tf.nest.map_structure(lambda t: np.asarray(t), value)


def _examples(tf, structure) -> int:
    return int(np.shape(tf.nest.flatten(structure)[0])[0])


# ---------------------------------------------------------------- the one-device reference


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


# ------------------------------------------------------------------------ the comparison


def _replica_weights(tf, step, reference, per_example_loss, reg_grad, global_batch, precision):
    """Per replica, how much its examples and the regularization weigh in its gradient."""
    sizes = tuple(_examples(tf, part) for part in step.replica_x)
    n = len(sizes)
    flat_reg = flat_float64(reg_grad) if any(np.any(r) for r in reg_grad) else None
    example_weights, reg_weights, replica_means, explained = [], [], [], True
    for grads, rx, ry, size in zip(
        step.replica_gradients, step.replica_x, step.replica_y, sizes, strict=True
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
    equivalent = precision.agree(step.applied, ref_grad)
    ratio = gradient_ratio(flat_float64(step.applied), flat_float64(ref_grad))
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
        loss=step.loss,
        reference_loss=data_loss + reg_loss,
        gradient_ratio=ratio,
        example_weights=tuple(float(w) for w in example_weights),
        regularization_weight=float(np.nansum(reg_weights) / n) if has_reg else None,
        mean_of_replica_means=mean_of_means,
        reference_data_loss=data_loss,
        weights=tuple(
            WeightGradient(name, tuple(a.shape), a, r)
            for name, a, r in zip(step.names, step.applied, ref_grad, strict=True)
        ),
        rtol=rtol,
        atol=atol,
        precision=precision.name,
        notes=notes(sizes, global_batch, n, mean_of_means, data_loss, cause, step.empty_loss),
    )


def _other_reading(tf, result, step, reference, loss, batch, precision):
    """``result`` named again if the step is the reference read with the other from_logits.

    Then either the learner or the reference misreads the outputs (docs/design/checks.md).
    """
    x, y = batch
    other = _reference_gradients(tf, reference, _logits.flipped(loss), x, y)
    data_grad, reg_grad = other[0], other[1]
    matched = precision.agree(
        step.applied, [d + r for d, r in zip(data_grad, reg_grad, strict=True)]
    )
    if not matched:
        return result
    learner_right, message = _logits.message(loss, reference(x, training=False))
    cause = REFERENCE_FROM_LOGITS if learner_right else FROM_LOGITS
    return dataclasses.replace(result, cause=cause, message=message, notes=())
