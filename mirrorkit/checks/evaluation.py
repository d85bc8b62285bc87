"""Does a learner's evaluation loop give the mean loss over every example, under a strategy?

Example:
    >>> import mirrorkit as mk
    >>> mk.check_evaluation(..., mk.make_strategy(), None, None, global_batch=8)
    NOT YET: not attempted yet: replace the ... with your answer and run the cell.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from mirrorkit._validate import describe, refuse, require_count, require_strategy
from mirrorkit.checks._learner_data import examples, learner_structures
from mirrorkit.checks._learner_runs import learner_error, literal_numbers
from mirrorkit.checks._splits import Precision
from mirrorkit.checks._steps import per_example_values
from mirrorkit.checks.equivalence import resolve_loss
from mirrorkit.checks.result import NOT_ATTEMPTED, CheckResult, cannot_check_with_one_replica

_CALL = "mk.check_evaluation(evaluate, strategy, model, data, global_batch=...)"
_RTOL = 1e-5  # float32 sums of a few dozen values, in another order than float64's


def check_evaluation(
    evaluate: Callable, strategy, model, data, *, global_batch: int, loss="mse"
) -> CheckResult:
    """Check that ``evaluate(model, dataset)`` returns the mean loss over every example.

    ``evaluate`` gets a ``tf.data.Dataset`` of ``(x, y)`` batched by ``global_batch`` (not yet
    distributed: distributing it is the learner's job) and returns one number. The check
    calls it on the first ``2 * global_batch`` examples (two full batches), then on
    ``global_batch + short`` examples, where the short last batch holds one more example than
    there are replicas, so the replicas' shares of it are unequal. Each answer must equal the
    mean of the per-example ``loss`` over those examples to a relative 1e-5, and the model's
    weights must be as they were (evaluating trains nothing). With one replica the mistakes
    this looks for do not show, so there the check refuses.

    When the learner's number differs, the check compares it with what the usual mistakes
    give (each replica's mean summed, a mean taken twice, the batches' means averaged, every
    batch divided by the full global batch, a number fixed for another replica count) and
    names the one it matches.

    ``evaluate`` gets a Keras model that wraps ``model`` (the same weights) and notes where it
    is called: the loss must be computed inside ``strategy.run``, on every replica. A loop
    that calls the model on one device, outside ``strategy.run``, fails even with the right
    number.

    Args:
        evaluate: The learner's ``evaluate(model, dataset)`` (``...``: not attempted).
        strategy: The strategy the model was built under.
        model: A Keras model built under ``strategy.scope()``.
        data: ``(x, y)``, NumPy arrays (or dicts or tuples of them, as the model takes and
            gives them) with at least ``2 * global_batch`` examples.
        global_batch: The global batch size the datasets are batched by (2 or more examples
            per replica).
        loss: The per-example loss to average: a Keras loss name such as ``"mse"``, a
            ``keras.losses.Loss`` (its reduction is ignored) or ``loss(y_true, y_pred)``.

    Returns:
        A :class:`~mirrorkit.CheckResult`; a mistake in ``evaluate`` (not a function, it
        raises, returns no number, trains the model or gives another number than the mean)
        is a failed result whose message names it.

    Raises:
        TypeError: If ``strategy`` is not a ``tf.distribute.Strategy``, ``model`` is not a
            Keras model, ``global_batch`` is not an int, ``data`` is not a pair ``(x, y)``
            or ``loss`` is neither a loss name, a ``keras.losses.Loss`` nor a function.
        ValueError: If ``model`` was not built under ``strategy.scope()``, ``global_batch``
            is below two examples per replica, ``data`` holds fewer than two global batches
            (or x and y differ in length), or ``loss`` is not a Keras loss name.

    Example:
        >>> import numpy as np, keras
        >>> import mirrorkit as mk
        >>> strategy = mk.make_strategy()
        >>> with strategy.scope():
        ...     model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        >>> data = (np.ones((8, 2), "float32"), np.zeros((8, 1), "float32"))
        >>> def evaluate(model, dataset):
        ...     return model.evaluate(dataset, verbose=0)
        >>> print(mk.check_evaluation(evaluate, strategy, model, data, global_batch=4).message[:45])
        cannot check an evaluation loop with one repl
    """
    require_strategy(strategy, _CALL)
    if evaluate is Ellipsis:
        return NOT_ATTEMPTED
    if not callable(evaluate):
        return CheckResult(
            False,
            f"evaluate is a {type(evaluate).__name__}, not a function: define "
            "def evaluate(model, dataset): ... returning the mean loss over the dataset.",
        )
    if (refusal := cannot_check_with_one_replica(strategy, "an evaluation loop")) is not None:
        return refusal
    x, y = _refuse_setup(strategy, model, data, global_batch)
    loss_fn = resolve_loss(loss)

    import tensorflow as tf

    replicas = strategy.num_replicas_in_sync
    short = replicas + 1 if replicas + 1 < global_batch else 1
    before = [w.numpy() for w in model.weights]
    full, ragged = 2 * global_batch, global_batch + short
    what = {
        full: f"on {full} examples in full batches",
        ragged: f"with a short last batch of {short} examples (some replicas get fewer, or none)",
    }
    answers, calls = [], []
    witnessed = _witnessed(model, strategy, calls)
    literals = literal_numbers(evaluate)
    rtol = _tolerance(model)
    for size in (full, ragged):
        x_part, y_part = tf.nest.map_structure(lambda a, size=size: a[:size], (x, y))
        dataset = tf.data.Dataset.from_tensor_slices((x_part, y_part)).batch(global_batch)
        try:
            answer = evaluate(witnessed, dataset)
        except Exception as error:  # noqa: BLE001 - the learner's code: a verdict, not a traceback
            return CheckResult(
                False,
                f"{what[size]}, {learner_error(error, 'evaluate')} Every replica must return a "
                "value of the same shape even when its share of the batch is empty: sum the "
                "per-example losses (a sum of nothing is 0) and count the examples.",
            )
        number = _as_number(answer)
        if number is None:
            return CheckResult(
                False,
                f"evaluate returned {type(answer).__name__} {answer!r:.60}, not one number: "
                "return the mean loss, e.g. float(total / count).",
            )
        if not all(
            np.array_equal(a, w.numpy()) for a, w in zip(before, model.weights, strict=True)
        ):
            return CheckResult(
                False,
                "evaluate changed the model's weights: evaluating computes the loss only "
                "(model(x, training=False)); no gradients, no optimizer, no fit.",
            )
        if (where := _where_problem(calls, replicas)) is not None:
            return CheckResult(False, where)
        losses = _per_example_losses(tf, model, loss_fn, x_part, y_part)
        answers.append((size, number, losses))
        verdict = (_full_batches if size == full else _short_batch)(
            answers, global_batch, replicas, what[size], rtol
        )
        if verdict is not None and size == full:
            fixed = _fixed_number(number, losses.mean(), replicas, literals, rtol)
            return verdict if fixed is None else fixed
        if verdict is not None:
            return verdict
    return CheckResult(
        True,
        f"evaluate gives the mean loss over every example, computed inside strategy.run on "
        f"all {replicas} replicas: {answers[0][2].mean():.6g} {what[full]}, and "
        f"{answers[1][2].mean():.6g} {what[ragged]}"
        + (
            "."
            if rtol == _RTOL
            else f", to a relative {rtol:g}, the precision of the model's mixed policy."
        ),
    )


def _per_example_losses(tf, model, loss_fn, x, y) -> np.ndarray:
    """Each example's loss (summed over the model's outputs), from outputs read at float32."""
    outputs = tf.nest.map_structure(lambda p: tf.cast(p, tf.float32), model(x, training=False))
    return np.asarray(per_example_values(tf, loss_fn, y, outputs), np.float64)


def _tolerance(model) -> float:
    """How close the learner's mean must be: 1e-5, or 4 epsilons of a mixed policy's dtype."""
    precision = Precision.of(model, None, None)
    return precision.rtol if precision.mixed else _RTOL


def _witnessed(model, strategy, calls: list):
    """A Keras model with ``model``'s weights that notes, per call, where it ran.

    Each call adds ``"outside"`` (no strategy: one device), ``"cross-replica"`` (in the
    strategy's scope but not in ``strategy.run``; ``"cross-replica traced"`` inside a
    ``tf.function``, which Keras's own shape inference does too) or the replica's id.
    Under ``tf.function`` the notes are taken while tracing, once per replica.
    """
    import keras
    import tensorflow as tf

    class Witnessed(keras.Model):
        def __init__(self, inner):
            super().__init__(name=f"{inner.name}_checked")
            self.inner = inner

        def call(self, inputs, training=False):
            context = tf.distribute.get_replica_context()
            if isinstance(inputs, keras.KerasTensor):
                pass  # Keras working out shapes, not computing
            elif context is None:  # traced: maybe Keras's own shape inference (evaluate's)
                calls.append("cross-replica" if tf.executing_eagerly() else "cross-replica traced")
            elif context.strategy is not strategy:
                calls.append("outside")
            else:
                calls.append(int(tf.get_static_value(context.replica_id_in_sync_group)))
            return self.inner(inputs, training=training)

    with strategy.scope():
        witnessed = Witnessed(model)
        if getattr(model, "compiled", False):  # so that model.evaluate works on it too
            witnessed.compile(loss=model.loss)
    return witnessed


def _where_problem(calls: list, replicas: int) -> str | None:
    """Why the model's calls show the loss was not computed by every replica, or None."""
    fix = (
        "Compute each replica's loss inside strategy.run(on_replica, args=batch), on the "
        "batches of strategy.experimental_distribute_dataset(dataset), with the model "
        "evaluate is given."
    )
    if not calls:
        return f"evaluate never called the model it was given (its model argument). {fix}"
    if "outside" in calls:
        return (
            "evaluate computed the loss on one device, outside any strategy: the model was "
            f"called with no strategy.run, so the replicas never shared the work. {fix}"
        )
    ids = {call for call in calls if isinstance(call, int)}
    if "cross-replica" in calls or ("cross-replica traced" in calls and not ids):
        return (
            "evaluate called the model in the strategy's cross-replica context (under "
            "strategy.scope() but not inside strategy.run), so one device computed it. " + fix
        )
    missing = sorted(set(range(replicas)) - ids)
    if missing:
        return (
            f"evaluate ran the model on replicas {sorted(ids)} only, not on replica "
            f"{', '.join(map(str, missing))}: every replica must compute its share. {fix}"
        )
    return None


def _fixed_number(got: float, right: float, replicas: int, literals, rtol) -> CheckResult | None:
    """A failed result naming a number fixed for another replica count, if one explains it."""
    for literal in literals:
        c = float(literal)
        if c <= 0 or math.isclose(c, replicas):
            continue
        for factor, what in ((c / replicas, "multiplies by"), (replicas / c, "divides by")):
            if _close(got, right * factor, rtol):
                return CheckResult(
                    False,
                    f"evaluate gives {got:.6g}, {factor:.4g} times the mean {right:.6g}: it "
                    f"{what} a fixed {literal:g} where there are {replicas} replicas (e.g. "
                    f"strategy.reduce('MEAN', ...) times {literal:g} is a SUM only with "
                    f"{literal:g} replicas). Add the replicas' sums with "
                    "strategy.reduce('SUM', ...), or use strategy.num_replicas_in_sync.",
                )
    return None


def _refuse_setup(strategy, model, data, global_batch: int) -> tuple:
    """``data``'s ``x`` and ``y``, after refusing what the chapter may pass wrong.

    Three messages keep the wording the tests pin (``not a Keras model: pass the model to
    evaluate``), which has a colon of its own and so does not fit :func:`refuse`'s template.
    """
    import keras

    if not isinstance(model, keras.Model):
        raise TypeError(
            f"model is {describe(model)}, not a Keras model: pass the model to evaluate, as "
            f"in {_CALL}."
        )
    if not model.weights or not strategy.extended.variable_created_in_scope(model.weights[0].value):
        raise ValueError(
            "model was not built under this strategy's scope: build it inside "
            "`with strategy.scope():` so that evaluating runs on every replica."
        )
    replicas = strategy.num_replicas_in_sync
    require_count("global_batch", global_batch, write=f"global_batch={4 * replicas}")
    if global_batch < 2 * replicas:
        raise ValueError(
            f"global_batch={global_batch} is too small to check with {replicas} replicas: use "
            f"at least {2 * replicas} (two examples per replica)."
        )
    x, y = learner_structures(data, "data")
    if examples(x) < 2 * global_batch:
        enough = 2 * global_batch
        refuse(
            "data",
            must=f"long enough, since the check needs at least {enough} (two global batches "
            f"of {global_batch})",
            got=f"{examples(x)} examples",
            write=f"data=(x, y) with {enough} examples or more, from a larger set",
            error=ValueError,
        )
    return x, y


def _as_number(answer) -> float | None:
    try:
        value = np.asarray(answer, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if value.size != 1:
        return None
    return float(value.reshape(()))


def _close(a: float, b: float, rtol: float) -> bool:
    return math.isclose(a, b, rel_tol=rtol, abs_tol=1e-12)


def _full_batches(answers, global_batch: int, replicas: int, what: str, rtol) -> CheckResult | None:
    (_, got, _), right = answers[0], answers[0][2].mean()
    if _close(got, right, rtol):
        return None
    if _close(got, right * replicas, rtol):
        return CheckResult(
            False,
            f"{what}, the loss is {replicas} times too large ({got:.6g}, the mean is "
            f"{right:.6g}): each replica's own mean was summed over the replicas. Divide each "
            "replica's summed loss by the global batch (tf.nn.compute_average_loss("
            "per_example, global_batch_size=...)) before the SUM, or sum losses and count "
            "examples.",
        )
    if _close(got, right / replicas, rtol):
        return CheckResult(
            False,
            f"{what}, the loss is 1/{replicas} of the mean ({got:.6g}, the mean is {right:.6g}): "
            "it was divided by the replicas twice. A Keras loss object under the scope already "
            "divides by num_replicas_in_sync, and strategy.reduce('MEAN', ...) averages again.",
        )
    return CheckResult(
        False, f"{what}, evaluate gives {got:.6g}, but the mean loss is {right:.6g}."
    )


def _short_batch(answers, global_batch: int, replicas: int, what: str, rtol) -> CheckResult | None:
    (_, got, losses), right = answers[1], answers[1][2].mean()
    if _close(got, right, rtol):
        return None
    start = f"right with full batches, but {what} evaluate gives {got:.6g}, not {right:.6g}"
    if math.isnan(got):
        return CheckResult(
            False,
            f"{start}: a replica with no examples took the mean of nothing (0 / 0), so "
            "each replica's own mean cannot be combined. Sum the per-example losses and count "
            "the examples on every replica instead.",
        )
    short = losses[global_batch:]
    share = -(-len(short) // replicas)
    parts = [short[i * share : (i + 1) * share] for i in range(replicas)]
    means = [part.mean() for part in parts if len(part)]
    if _close(got, float(np.mean([losses[:global_batch].mean(), np.mean(means)])), rtol):
        return CheckResult(
            False,
            f"{start}: it averages each replica's own mean, so a replica holding fewer "
            f"examples of the short batch ({', '.join(str(len(p)) for p in parts)}) weighs "
            "as much as a full one. Sum the per-example losses and count the examples on "
            "every replica, add both up over the replicas, and divide at the end.",
        )
    batch_means = [losses[:global_batch].mean(), losses[global_batch:].mean()]
    if _close(got, float(np.mean(batch_means)), rtol):
        return CheckResult(
            False,
            f"{start}: it averages the batches' means, so the short batch weighs as much as a "
            "full one. Sum the per-example losses and count the examples over all batches, "
            "then divide once at the end.",
        )
    if _close(got, losses.sum() / (2 * global_batch), rtol):
        return CheckResult(
            False,
            f"{start}: every batch is divided by the global batch of {global_batch}, the short "
            "one too. Count the examples the batches really hold.",
        )
    return CheckResult(
        False,
        f"{start}. Weigh every example once: sum the per-example losses and count the "
        "examples on every replica, add both up over the replicas, and divide at the end.",
    )
