"""Does one distributed training step compute the same gradient as one device would?

In a custom training loop every replica computes a loss on its share of the global
batch, takes its gradient, and ``optimizer.apply_gradients`` (called inside
``strategy.run``) **sums** the replicas' gradients with an all-reduce. So each
replica's loss must be its share of the *global* mean: the sum of its per-example
losses divided by the GLOBAL batch size, plus the regularization divided by the
number of replicas. :func:`check_step_equivalence` runs the learner's loss under a
real strategy and on one device, and compares the gradients.

What the check knows about Keras 3 (with TensorFlow 2.21):

- A Keras loss with its default reduction ``"sum_over_batch_size"`` divides by the
  LOCAL batch size and then, under ``tf.distribute``, by ``num_replicas_in_sync``
  (``keras.src.losses.loss.scale_loss_for_distribution``). Called inside
  ``strategy.run`` it is right when every replica gets the same number of examples,
  and wrong when a last batch splits unevenly (10 examples over 4 replicas arrive as
  3, 3, 3, 1: the one example of the last replica then weighs three times as much as
  each of the others). Called inside ``strategy.scope()`` in cross-replica context it
  is divided by the number of replicas too.
- Dividing such a loss by ``num_replicas_in_sync`` again (advice from the Keras 2
  era) scales it twice.
- ``tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL)`` on a loss
  made with ``reduction="none"`` is right for any split; without
  ``global_batch_size`` it divides by the local batch size times the replicas, like
  the default Keras loss.
- ``tf.nn.scale_regularization_loss`` divides the regularization by the replicas, so
  that summing the replicas counts it once.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mirrorkit._losses import per_example_loss as _resolve_loss
from mirrorkit._validate import require_strategy
from mirrorkit.checks._steps import build_model, check_layers, flat_float64, gradient_ratio
from mirrorkit.report.render import Line, Report, Reported
from mirrorkit.report.values import error_lines, number, summarize

# Causes a mismatch is put down to (StepEquivalence.cause).
RIGHT = "right"
KERAS_DEFAULT_UNEVEN = "default Keras reduction with unequal replica batches"
LOCAL_MEAN = "local mean summed over replicas"
SCALED_TWICE = "loss scaled twice"
AVERAGED_TWICE = "loss averaged twice"
SUM_REDUCTION = "sum reduction"
NEGATED = "negated loss"
REGULARIZATION_UNSCALED = "regularization not scaled by replicas"
REGULARIZATION_MISSING = "regularization missing"
REGULARIZATION_TWICE = "regularization scaled twice"
OTHER = "other"

_GOOD_STEPS = (
    "per_example = loss_fn(y, model(x, training=True)); loss = "
    "tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)"
)
_GOOD_REGULARIZATION = "loss += tf.nn.scale_regularization_loss(tf.add_n(model.losses))"


@dataclass(frozen=True)
class WeightGradient:
    """The applied gradient of one trainable weight, distributed and on one device.

    Attributes:
        name: The weight's path in the model, e.g. ``"sequential/dense/kernel"``.
        shape: Its shape.
        distributed: The gradient ``apply_gradients`` receives under the strategy: the
            SUM all-reduce of the replicas' gradients.
        reference: The gradient of the global mean loss (plus regularization) on one
            device.

    Example:
        >>> import numpy as np
        >>> from mirrorkit import WeightGradient
        >>> row = WeightGradient("dense/bias", (1,), np.array([2.0]), np.array([1.0]))
        >>> row.max_difference
        1.0
    """

    name: str
    shape: tuple[int, ...]
    distributed: np.ndarray
    reference: np.ndarray

    @property
    def max_difference(self) -> float:
        """The largest absolute difference between the two gradients."""
        if self.reference.size == 0:
            return 0.0
        return float(np.max(np.abs(self.distributed - self.reference)))


@dataclass(frozen=True, repr=False)
class StepEquivalence(Reported):
    """What :func:`check_step_equivalence` returns; prints as text and renders as HTML.

    Attributes:
        equivalent: Whether the distributed step applies the single-device gradient,
            within ``rtol`` and ``atol``.
        cause: ``"right"`` when equivalent, else the likely cause of the difference,
            one of the module's constants (e.g. ``"local mean summed over replicas"``).
        message: What was measured and what to change.
        num_replicas: The strategy's ``num_replicas_in_sync``.
        global_batch: Examples in the global batch.
        replica_batches: Examples each replica received, in replica order.
        loss: The replicas' losses summed (``strategy.reduce("SUM", ...)``).
        reference_loss: The global mean loss plus regularization, on one device.
        gradient_ratio: The distributed gradient measured in units of the reference
            gradient (its projection on it): 1 is right, 4 means four times too big.
        example_weights: Per replica, how much each of its examples weighs in the
            distributed gradient relative to the right weight ``1 / global_batch``
            (1 is right; ``nan`` for a replica with no example).
        regularization_weight: How many times the regularization gradient is counted
            (1 is right), or ``None`` when the model has no regularization.
        mean_of_replica_means: The per-replica mean losses averaged over the replicas
            that received examples: what a metric averaging replica means reports.
        weights: One :class:`WeightGradient` per trainable weight.
        rtol: Relative tolerance of the comparison.
        atol: Absolute tolerance of the comparison.
        notes: Sentences that explain the rest of the report.

    Example:
        >>> import numpy as np, keras, tensorflow as tf
        >>> import mirrorkit as mk
        >>> def model_fn():
        ...     return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        >>> def compute_loss(model, x, y):
        ...     per_example = keras.losses.mean_squared_error(y, model(x, training=True))
        ...     return tf.nn.compute_average_loss(per_example, global_batch_size=4)
        >>> x, y = np.ones((4, 2), "float32"), np.zeros((4, 1), "float32")
        >>> report = mk.check_step_equivalence(
        ...     mk.make_strategy(), model_fn, compute_loss, (x, y), loss="mse")
        >>> report.equivalent, report.replica_batches
        (True, (4,))
    """

    equivalent: bool
    cause: str
    message: str
    num_replicas: int
    global_batch: int
    replica_batches: tuple[int, ...]
    loss: float
    reference_loss: float
    gradient_ratio: float
    example_weights: tuple[float, ...]
    regularization_weight: float | None
    mean_of_replica_means: float
    reference_data_loss: float
    weights: tuple[WeightGradient, ...]
    rtol: float
    atol: float
    notes: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.equivalent

    def _headline(self) -> list[str]:
        verdict = "EQUIVALENT" if self.equivalent else f"DIFFERENT ({self.cause})"
        sizes = ", ".join(str(b) for b in self.replica_batches)
        return [
            f"step equivalence: {verdict}",
            f"global batch {self.global_batch} over {self.num_replicas} replica"
            f"{'' if self.num_replicas == 1 else 's'}: {sizes} examples",
            f"loss: distributed {number(self.loss)}, single device "
            f"{number(self.reference_loss)}; gradient ratio {number(self.gradient_ratio)}",
        ]

    def _columns(self) -> list[tuple[str, list[str]]]:
        return [
            ("weight", [w.name for w in self.weights]),
            ("shape", [str(w.shape) for w in self.weights]),
            ("distributed gradient", [summarize(w.distributed) for w in self.weights]),
            ("single-device gradient", [summarize(w.reference) for w in self.weights]),
            ("max |difference|", [number(w.max_difference) for w in self.weights]),
        ]

    def report(self) -> Report:
        """The comparison as a report: verdict, one row per weight, what it means."""
        return Report(
            headline=tuple(self._headline()),
            columns=self._columns(),
            lines=(Line(self.message), *(Line(n) for n in self.notes)),
            tone="good" if self.equivalent else "warn",
        )


def check_step_equivalence(
    strategy,
    model_fn: Callable,
    compute_loss: Callable,
    batch,
    *,
    loss,
    rtol: float = 1e-4,
    atol: float = 1e-6,
) -> StepEquivalence:
    """Run one step of a custom training loop under ``strategy`` and on one device; compare.

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
    and how many times the regularization is counted.

    Args:
        strategy: A ``tf.distribute.Strategy``, e.g. from :func:`mirrorkit.make_strategy`.
        model_fn: A function of no argument returning a new, built Keras model (give it
            a ``keras.Input``). Layers must treat examples independently and draw no
            random numbers: no ``BatchNormalization``, no ``Dropout`` with a rate above 0.
        compute_loss: The learner's per-replica loss: ``compute_loss(model, x, y)``
            returns the scalar loss one replica differentiates.
        batch: One global batch ``(x, y)`` of NumPy arrays with as many examples each.
        loss: The loss meant to be minimised, per example: a Keras loss name such as
            ``"mse"``, a ``keras.losses.Loss`` (its reduction is ignored) or a
            function ``loss(y_true, y_pred)`` returning one value per example.
        rtol: Relative tolerance of the gradient comparison.
        atol: Absolute tolerance of the gradient comparison.

    Returns:
        A :class:`StepEquivalence`.

    Raises:
        TypeError: If an argument is not what is described above, ``x`` or ``y`` holds
            text instead of numbers, or ``compute_loss`` returns something other than one
            loss tensor.
        ValueError: If ``x`` and ``y`` differ in length, the batch is empty, the model
            has a layer that draws random numbers or normalizes by the batch, or the
            loss is not a scalar or does not depend on the weights.
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
        ...     mk.make_strategy(), model_fn, plain_mean, (x, y), loss="mse").message)
        ... # doctest: +NORMALIZE_WHITESPACE
        The distributed step applies the single-device gradient (rtol 0.0001, atol 1e-06).
        With one replica that says nothing about the replicas: a loss that ignores them (a
        plain mean, or a Keras loss divided by the replicas again) gives this gradient too.
        Compare with 2 or more replicas (mk.simulate_replicas).
    """
    import tensorflow as tf

    _check_strategy(tf, strategy)
    import keras

    if isinstance(model_fn, keras.Model):
        raise TypeError(
            "model_fn must be a function that builds a NEW model, not a model: both runs "
            "need their own copy, e.g. model_fn=build_model where build_model() returns "
            "keras.Sequential([...])."
        )
    if not callable(model_fn):
        raise TypeError(
            f"model_fn must be a function that returns a new Keras model, got "
            f"{type(model_fn).__name__}: pass the function itself, e.g. model_fn=build_model."
        )
    if not callable(compute_loss):
        raise TypeError(
            f"compute_loss must be a function compute_loss(model, x, y) returning the loss, "
            f"got {type(compute_loss).__name__}."
        )
    x, y, global_batch = _split_batch(tf, batch)
    per_example_loss = _resolve_loss(loss)

    reference = build_model(tf, model_fn, x)
    check_layers(reference)
    initial = reference.get_weights()
    with strategy.scope():
        model = build_model(tf, model_fn, x)
    model.set_weights(initial)
    variables = model.trainable_variables
    if not variables:
        raise ValueError("the model has no trainable weights: there is no gradient to compare.")

    # The distributed step, on the split the strategy really makes.
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(global_batch)
    dist_x, dist_y = next(iter(strategy.experimental_distribute_dataset(dataset)))
    none_gradients: list[bool] = []
    empty_losses: list[bool] = []
    local = strategy.experimental_local_results
    _probe_loss(tf, compute_loss, model, local(dist_x)[0], local(dist_y)[0])

    def replica_step(x_r, y_r):
        with tf.GradientTape() as tape:
            value = compute_loss(model, x_r, y_r)
        value = _validate_loss(tf, value, empty_losses)
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
    distributed_step = tf.function(functools.partial(run_step))
    per_replica_loss, per_replica_gradients = distributed_step(dist_x, dist_y)
    if none_gradients and all(none_gradients):
        raise ValueError(
            "the loss compute_loss returns does not depend on the model's weights: compute "
            "it from the model's predictions, model(x, training=True)."
        )
    applied = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_gradients, axis=None)
    applied = [np.asarray(g, np.float64) for g in applied]
    total_loss = float(strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_loss, axis=None))
    replica_grads = [
        [np.asarray(g, np.float64) for g in grads]
        for grads in zip(*(local(g) for g in per_replica_gradients), strict=True)
    ]
    replica_x = [_numpy_structure(tf, part) for part in local(dist_x)]
    replica_y = [_numpy_structure(tf, part) for part in local(dist_y)]

    # The reference, on one device: global mean + regularization once.
    data_grad, reg_grad, data_loss, reg_loss, _ = _checked_reference(
        tf, reference, per_example_loss, loss, x, y
    )
    ref_grad = [d + r for d, r in zip(data_grad, reg_grad, strict=True)]
    has_reg = any(np.any(r) for r in reg_grad)

    sizes = tuple(_length(tf, part) for part in replica_x)
    pieces, replica_means = [], []
    for rx, ry, size in zip(replica_x, replica_y, sizes, strict=True):
        if not size:
            pieces.append(None)
            continue
        piece = _reference_gradients(tf, reference, per_example_loss, rx, ry, summed=True)
        pieces.append(piece[0])
        replica_means.append(float(np.mean(piece[4])))

    n = strategy.num_replicas_in_sync
    example_weights, reg_weights, explained = [], [], True
    flat_reg = flat_float64(reg_grad) if has_reg else None
    for grads, piece in zip(replica_grads, pieces, strict=True):
        c, d, ok = _fit(
            flat_float64(grads), None if piece is None else flat_float64(piece), flat_reg
        )
        example_weights.append(c * global_batch)
        reg_weights.append(d * n)
        explained = explained and ok

    equivalent = all(
        np.allclose(a, r, rtol=rtol, atol=atol) for a, r in zip(applied, ref_grad, strict=True)
    )
    ratio = gradient_ratio(flat_float64(applied), flat_float64(ref_grad))
    regularization_weight = float(np.nansum(reg_weights) / n) if has_reg else None
    mean_of_means = float(np.mean(replica_means))

    cause, message = _diagnose(
        equivalent,
        explained,
        example_weights,
        reg_weights if has_reg else None,
        sizes,
        global_batch,
        ratio,
        rtol,
        atol,
        _good_pattern(loss),
        loss,
    )
    names = [getattr(v, "path", None) or v.name for v in variables]
    rows = tuple(
        WeightGradient(name, tuple(a.shape), a, r)
        for name, a, r in zip(names, applied, ref_grad, strict=True)
    )
    notes = _notes(sizes, global_batch, n, mean_of_means, data_loss, cause, bool(empty_losses))
    return StepEquivalence(
        equivalent=equivalent,
        cause=cause,
        message=message,
        num_replicas=n,
        global_batch=global_batch,
        replica_batches=sizes,
        loss=total_loss,
        reference_loss=data_loss + reg_loss,
        gradient_ratio=ratio,
        example_weights=tuple(float(w) for w in example_weights),
        regularization_weight=regularization_weight,
        mean_of_replica_means=mean_of_means,
        reference_data_loss=data_loss,
        weights=rows,
        rtol=rtol,
        atol=atol,
        notes=notes,
    )


# ----------------------------------------------------------------------------- inputs


def _check_strategy(tf, strategy) -> None:
    require_strategy(
        strategy, "mk.check_step_equivalence(strategy, model_fn, compute_loss, batch, loss=...)"
    )
    if tf.distribute.has_strategy():
        raise RuntimeError(
            "call this outside `with strategy.scope():`: it builds the single-device "
            "reference model itself and enters the strategy's scope only for the "
            "distributed one."
        )


def _split_batch(tf, batch):
    if not isinstance(batch, tuple | list) or len(batch) != 2:
        got = f"a {type(batch).__name__}"
        if isinstance(batch, tuple | list):
            got += f" of {len(batch)} items"
        raise TypeError(
            f"batch must be one global batch (x, y): a pair of NumPy arrays with one row "
            f"per example, e.g. (x_train[:8], y_train[:8]); got {got}."
        )
    x, y = batch
    nx, ny = _length(tf, x), _length(tf, y)
    if nx != ny:
        raise ValueError(
            f"x has {nx} examples but y has {ny}: give both the same examples, e.g. "
            f"(x[:{min(nx, ny)}], y[:{min(nx, ny)}])."
        )
    if nx == 0:
        raise ValueError("the batch is empty: give at least one example.")
    for name, part in (("x", x), ("y", y)):
        for leaf in tf.nest.flatten(part):
            array = np.asarray(leaf)
            if array.dtype.kind in "OSU":
                first = array.reshape(-1)[0] if array.size else ""
                first = first.decode() if isinstance(first, bytes) else str(first)
                raise TypeError(
                    f"{name} holds text such as {first!r}, not numbers: the model and the loss "
                    "take numbers. "
                    + (
                        "Map the labels to class ids first, e.g. "
                        "classes, y = np.unique(y, return_inverse=True)."
                        if name == "y"
                        else "Turn the text into numbers before the check, e.g. with "
                        "keras.layers.StringLookup."
                    )
                )
    return x, y, nx


def _length(tf, structure) -> int:
    leaves = tf.nest.flatten(structure)
    lengths = {int(np.shape(leaf)[0]) if np.ndim(leaf) else -1 for leaf in leaves}
    if len(lengths) != 1 or -1 in lengths:
        raise ValueError(
            "every array of the batch needs one row per example, and the same number of "
            f"rows; got shapes {[np.shape(leaf) for leaf in leaves]}."
        )
    return lengths.pop()


def _numpy_structure(tf, value):
    return tf.nest.map_structure(lambda t: np.asarray(t), value)


def _good_pattern(loss) -> str:
    """The right ``compute_loss``, written with the loss the learner passed as ``loss``.

    Example:
        >>> import keras
        >>> _good_pattern("mse").split(";")[0]
        "loss_fn = keras.losses.MeanSquaredError(reduction='none')"
        >>> loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        >>> _good_pattern(loss).split(";")[0]
        "loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction='none')"
    """
    import keras

    if isinstance(loss, str):
        try:
            loss = keras.losses.get(loss)
        except ValueError:
            loss = None
    name = getattr(loss, "__name__", "")
    camel = "".join(part.title() for part in name.split("_"))
    if isinstance(loss, keras.losses.Loss):
        logits = "from_logits=True, " if loss.get_config().get("from_logits") else ""
        make = f"keras.losses.{type(loss).__name__}({logits}reduction='none')"
    elif name and isinstance(getattr(keras.losses, camel, None), type):
        make = f"keras.losses.{camel}(reduction='none')"
    elif name and name != "<lambda>":
        make = name  # the learner's own per-example function
    else:
        make = "your per-example loss function"
    return f"loss_fn = {make}; {_GOOD_STEPS}"


def _validate_loss(tf, value, empty_losses: list):
    if value is None:
        raise TypeError(
            "compute_loss returned None: end it with `return loss`, the scalar loss of "
            "this replica."
        )
    if isinstance(value, tuple | list | dict):
        raise TypeError(
            f"compute_loss returned a {type(value).__name__}: return only the loss, one "
            "scalar tensor; compute gradients and metrics outside it."
        )
    try:
        value = tf.convert_to_tensor(value)
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"compute_loss returned a {type(value).__name__}, not a tensor: return the "
            "loss computed from model(x)."
        ) from error
    if value.shape.rank == 1 and value.shape[0] == 0:
        # A Keras loss returns its empty per-example values, not 0, for an empty batch.
        empty_losses.append(True)
        return tf.reduce_sum(value)
    if value.shape.rank != 0:
        raise ValueError(
            f"compute_loss returned a loss of shape {value.shape}, not a scalar: reduce "
            "the per-example losses, e.g. tf.nn.compute_average_loss(per_example, "
            "global_batch_size=GLOBAL_BATCH)."
        )
    return value


# -------------------------------------------------------------------------- reference


def _probe_loss(tf, compute_loss, model, x, y) -> None:
    """Call ``compute_loss`` once, eagerly, on one replica's share of the batch.

    Its mistakes then surface as plain Python errors with a sentence, before
    ``tf.function`` would wrap them in its own traceback text ("in user code: ...").
    """
    try:
        inspect.signature(compute_loss).bind(model, x, y)
    except TypeError:
        name = getattr(compute_loss, "__name__", type(compute_loss).__name__)
        raise TypeError(
            f"compute_loss must take three arguments, compute_loss(model, x, y); "
            f"yours is {name}{inspect.signature(compute_loss)}."
        ) from None
    except ValueError:  # no signature to read (a builtin): let the call tell
        pass
    try:
        value = compute_loss(model, x, y)
    except Exception as error:  # noqa: BLE001 - any failure of the learner's code
        raise ValueError(
            f"compute_loss(model, x, y) failed on one replica's share of the batch "
            f"(x of shape {_shapes(x)}, y of shape {_shapes(y)}): {_why(error)}. Check that "
            "the model takes x as it is (the same features as the data) and that the loss "
            "compares model(x) with y."
        ) from None
    _validate_loss(tf, value, [])


def _why(error: BaseException) -> str:
    """'TypeName: what went wrong', in one line of at most 200 characters."""
    lines = error_lines(error)
    text = f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
    return text.rstrip(".") if len(text) <= 200 else text[:197] + "..."


def _shapes(structure) -> str:
    import tensorflow as tf

    shapes = [tuple(np.shape(leaf)) for leaf in tf.nest.flatten(structure)]
    return str(shapes[0]) if len(shapes) == 1 else str(shapes)


def _checked_reference(tf, model, per_example_loss, loss, x, y):
    """The one-device reference gradients, or a sentence if ``loss`` cannot score this model."""
    try:
        return _reference_gradients(tf, model, per_example_loss, x, y)
    except (tf.errors.InvalidArgumentError, ValueError, TypeError) as error:
        name = loss if isinstance(loss, str) else type(loss).__name__
        prediction = model(x, training=False)
        raise ValueError(
            f"the reference loss ({name}) cannot score this model: predictions of shape "
            f"{tuple(prediction.shape)} against labels of shape {_shapes(y)} "
            f"({_why(error)}). Pass the loss your compute_loss uses "
            "as loss=..., e.g. loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True) "
            "for class indices and logits."
        ) from None


def _reference_gradients(tf, model, per_example_loss, x, y, summed=False):
    """Gradients of the data loss (mean, or sum if ``summed``) and of the regularization."""
    variables = model.trainable_variables
    with tf.GradientTape(persistent=True) as tape:
        prediction = model(x, training=True)
        values = tf.convert_to_tensor(per_example_loss(tf.convert_to_tensor(y), prediction))
        values = tf.reshape(tf.cast(values, tf.float32), [-1])
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


def _filled(sizes):
    return [i for i, size in enumerate(sizes) if size]


def _fit(gradient, data, reg):
    """Fit ``gradient ~ c * data + d * reg``; return c, d and whether the fit explains it."""
    columns, kinds = [], []
    for kind, column in (("data", data), ("reg", reg)):
        if column is not None and np.any(column):
            columns.append(column)
            kinds.append(kind)
    scale = max(float(np.linalg.norm(gradient)), 1e-12)
    if not columns:
        return math.nan, math.nan, float(np.linalg.norm(gradient)) <= 1e-7
    matrix = np.stack(columns, axis=1)
    coefficients, *_ = np.linalg.lstsq(matrix, gradient, rcond=None)
    residual = float(np.linalg.norm(gradient - matrix @ coefficients))
    found = dict(zip(kinds, coefficients, strict=True))
    explained = residual <= 1e-3 * scale + 1e-7
    return float(found.get("data", math.nan)), float(found.get("reg", math.nan)), explained


# -------------------------------------------------------------------------- diagnosis


def _close(measured, predicted) -> bool:
    return all(
        math.isnan(m) or abs(m - p) <= 0.02 * abs(p) + 1e-3
        for m, p in zip(measured, predicted, strict=True)
    )


def _data_cause(weights, sizes, global_batch, good):
    """Match the example weights of the non-empty replicas against the known bugs."""
    filled = _filled(sizes)
    measured = [weights[i] for i in filled]
    local = [sizes[i] for i in filled]
    n, b = len(sizes), global_batch
    sizes_text = ", ".join(str(s) for s in sizes)
    patterns = [
        (RIGHT, [1.0] * len(local), ""),
        (
            NEGATED,
            [-1.0] * len(local),
            "The gradient points the wrong way: the loss is negated. Minimise the loss itself.",
        ),
        (
            KERAS_DEFAULT_UNEVEN,
            [b / (n * s) for s in local],
            f"Each replica divides its summed loss by its OWN batch size times "
            f"{n} replicas: that is what a Keras loss with the default reduction "
            f"'sum_over_batch_size' does under tf.distribute (and "
            f"tf.nn.compute_average_loss without global_batch_size). It is right only "
            f"when the replicas get equal batches; here they got {sizes_text}, so an "
            f"example on a replica with fewer examples weighs more. Use {good}.",
        ),
        (
            LOCAL_MEAN,
            [b / s for s in local],
            f"Each replica averages its loss over its local batch (a plain mean), and the "
            f"all-reduce then SUMS the {n} replicas' gradients: about {n}x too big. Divide "
            f"by the global batch instead: {good}.",
        ),
        (
            SCALED_TWICE,
            [b / (n * n * s) for s in local],
            f"The loss is divided by the number of replicas twice: a Keras loss with the "
            f"default reduction already divides by num_replicas_in_sync under "
            f"tf.distribute, so do not divide it by {n} again (Keras 2-era advice).",
        ),
        (
            SCALED_TWICE,
            [1.0 / n] * len(local),
            f"The loss is divided by the number of replicas twice: "
            f"tf.nn.compute_average_loss(..., global_batch_size=GLOBAL) is already the "
            f"replica's share; do not divide it by {n} again.",
        ),
        (
            AVERAGED_TWICE,
            [1.0 / s for s in local],
            f"The loss is averaged twice: compute_loss averages over the replica's own "
            f"batch (tf.reduce_mean, a plain mean) and then divides that mean by the "
            f"global batch ({b}) again, so each example weighs 1/(its replica's batch) of "
            f"what it should. Divide the per-example losses by the global batch once: "
            f"{good}.",
        ),
        (
            AVERAGED_TWICE,
            [1.0 / (n * s) for s in local],
            f"The loss is averaged twice: a Keras loss with its default reduction already "
            f"averages over the replica's batch (and divides by the {n} replicas), and that "
            f"mean is divided by the global batch ({b}) again. Give the Keras loss "
            f"reduction='none' and divide once: {good}.",
        ),
        (
            SUM_REDUCTION,
            [float(b)] * len(local),
            f"The per-example losses are summed and never divided by the global batch "
            f"({b}): a loss with reduction='sum'. Divide by the global batch size: "
            f"{good}.",
        ),
        (
            SUM_REDUCTION,
            [b / n] * len(local),
            f"The per-example losses are summed (reduction='sum') and divided by the "
            f"{n} replicas, not by the global batch ({b}): {b / n:g}x too big. Use "
            f"{good}.",
        ),
    ]
    for cause, predicted, message in patterns:
        if _close(measured, predicted):
            return cause, message
    values = ", ".join(number(w) for w in measured)
    if measured and all(abs(w - measured[0]) <= 0.02 * abs(measured[0]) for w in measured):
        return OTHER, (
            f"Every example weighs {number(measured[0])}x what it should in the gradient: "
            f"divide the sum of per-example losses by the global batch size, {b}."
        )
    return OTHER, (
        f"Examples weigh {values}x what they should, replica by replica: divide the sum of "
        f"per-example losses by the global batch size, {b}, on every replica."
    )


def _regularization_cause(weights, n):
    measured = [w for w in weights if not math.isnan(w)]
    patterns = [
        (RIGHT, 1.0, ""),
        (
            REGULARIZATION_UNSCALED,
            float(n),
            f"The regularization is added on every replica unscaled, so the all-reduce "
            f"counts it {n} times: use {_GOOD_REGULARIZATION}.",
        ),
        (
            REGULARIZATION_MISSING,
            0.0,
            f"The regularization (model.losses) is missing from the loss: add "
            f"{_GOOD_REGULARIZATION}.",
        ),
        (
            REGULARIZATION_TWICE,
            1.0 / n,
            f"The regularization is divided by the replicas twice: "
            f"tf.nn.scale_regularization_loss already divides by {n}.",
        ),
    ]
    for cause, predicted, message in patterns:
        if _close(measured, [predicted] * len(measured)):
            return cause, message
    return OTHER, (
        "The regularization is counted "
        + ", ".join(number(w / n) for w in measured)
        + f" times per replica instead of 1/{n}: use {_GOOD_REGULARIZATION}."
    )


def _loss_name(loss) -> str:
    """How a message names the loss: 'mae' for a name, else the function's or class's name."""
    if isinstance(loss, str):
        return repr(loss)
    return getattr(loss, "__name__", None) or type(loss).__name__


def _diagnose(
    equivalent, explained, example_weights, reg_weights, sizes, b, ratio, rtol, atol, good, loss
):
    if equivalent:
        message = (
            f"The distributed step applies the single-device gradient (rtol {number(rtol)}, "
            f"atol {number(atol)})."
        )
        if len(sizes) == 1:
            message += (
                " With one replica that says nothing about the replicas: a loss that ignores "
                "them (a plain mean, or a Keras loss divided by the replicas again) gives this "
                "gradient too. Compare with 2 or more replicas (mk.simulate_replicas)."
            )
        return RIGHT, message
    head = f"The distributed gradient is {number(ratio)}x the single-device one. "
    if not explained:
        return OTHER, head + (
            "It is not a rescaling of the right gradient: check that compute_loss uses the "
            f"loss meant here, {_loss_name(loss)}, on the predictions model(x, training=True)."
        )
    data_cause, data_message = _data_cause(example_weights, sizes, b, good)
    if data_cause != RIGHT:
        message = head + data_message
        if reg_weights is not None:
            reg_cause, reg_message = _regularization_cause(reg_weights, len(sizes))
            if reg_cause != RIGHT:
                message += " Also: " + reg_message
        return data_cause, message
    if reg_weights is not None:
        reg_cause, reg_message = _regularization_cause(reg_weights, len(sizes))
        if reg_cause != RIGHT:
            return reg_cause, head + reg_message
    return OTHER, head + "Compare the gradients weight by weight below."


def _notes(sizes, b, n, mean_of_means, data_loss, cause, empty_loss):
    notes = []
    empty = [str(i) for i, s in enumerate(sizes) if s == 0]
    if empty:
        several = len(empty) > 1
        notes.append(
            f"Replica{'s' if several else ''} {', '.join(empty)} received no example: "
            f"{'their' if several else 'its'} loss must be 0 and still take part in the "
            "all-reduce."
        )
    if empty_loss:
        notes.append(
            "On a replica with no example compute_loss returned an empty tensor of shape "
            "(0,), not a scalar 0: a Keras loss skips its reduction on an empty batch. Its "
            "gradient is 0, but reducing the replicas' losses may fail; "
            "tf.nn.compute_average_loss returns 0 there."
        )
    if n > 1 and len(set(sizes)) == 1 and cause == RIGHT:
        notes.append(
            f"Every replica got {sizes[0]} examples. A last batch that does not divide by "
            f"{n} splits unevenly: run the check on such a batch too."
        )
    if not math.isclose(mean_of_means, data_loss, rel_tol=1e-5, abs_tol=1e-7):
        notes.append(
            f"A metric that averages the replicas' mean losses reports {number(mean_of_means)}, "
            f"but the mean over the global batch is {number(data_loss)}: with unequal "
            "replica batches, sum the losses and the example counts over the replicas, "
            "then divide."
        )
    return tuple(notes)
