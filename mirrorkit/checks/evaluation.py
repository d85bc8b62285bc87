"""Does a learner's evaluation loop give the mean loss over every example, under a strategy?

Example:
    >>> import mirrorkit as mk
    >>> mk.check_evaluation(..., mk.make_strategy(), None, None, global_batch=8)
    NOT YET: not attempted yet: replace the ... with your answer and run the cell.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mirrorkit._validate import describe, refuse, require_count, require_strategy
from mirrorkit.checks._digests import digest
from mirrorkit.checks._evaluation_verdicts import RTOL, judge_evaluation
from mirrorkit.checks._learner_data import examples, learner_structures
from mirrorkit.checks._learner_runs import learner_error, literal_numbers
from mirrorkit.checks._splits import Precision
from mirrorkit.checks._steps import per_example_values
from mirrorkit.checks.equivalence import resolve_loss
from mirrorkit.checks.result import NOT_ATTEMPTED, CheckResult, cannot_check_with_one_replica

_CALL = "mk.check_evaluation(evaluate, strategy, model, data, global_batch=...)"


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
        return not_a_function(type(evaluate).__name__)
    if (refusal := cannot_check_with_one_replica(strategy, "an evaluation loop")) is not None:
        return refusal
    x, y = _refuse_setup(strategy, model, data, global_batch)
    loss_fn = resolve_loss(loss)

    import tensorflow as tf

    replicas = strategy.num_replicas_in_sync
    parts = [
        tf.nest.map_structure(lambda a, size=size: a[:size], (x, y))
        for size in example_counts(global_batch, replicas)
    ]
    before = [digest(w) for w in model.weights]
    records = ask_evaluation(evaluate, strategy, model, parts, global_batch)
    losses = [_per_example_losses(tf, model, loss_fn, *part) for part in parts[: len(records)]]
    return judge_evaluation(
        records,
        losses,
        before,
        replicas=replicas,
        global_batch=global_batch,
        literals=literal_numbers(evaluate),
        rtol=_tolerance(model),
    )


def not_a_function(kind: str) -> CheckResult:
    """The failed result of an ``evaluate`` that is a ``kind``, not a function.

    Example:
        >>> not_a_function("float").message[:35]
        'evaluate is a float, not a function'
    """
    return CheckResult(
        False,
        f"evaluate is a {kind}, not a function: define "
        "def evaluate(model, dataset): ... returning the mean loss over the dataset.",
    )


def example_counts(global_batch: int, replicas: int) -> tuple[int, int]:
    """How many examples each call gets: two full batches, then one and a short one.

    The short batch holds one more example than there are replicas (one, when that would
    fill it), so the replicas' shares of it are unequal.

    Example:
        >>> example_counts(16, 4)
        (32, 21)
    """
    short = replicas + 1 if replicas + 1 < global_batch else 1
    return 2 * global_batch, global_batch + short


def ask_evaluation(evaluate, strategy, model, parts, global_batch: int) -> list[dict]:
    """Call ``evaluate`` on each ``(x, y)`` of ``parts`` batched by ``global_batch``; records.

    ``evaluate`` gets a model that wraps ``model`` and notes where it is called. Each record
    (:func:`~mirrorkit.checks._evaluation_verdicts.judge_evaluation` reads them) holds the
    number returned, the weights after the call and the notes so far; the calls stop at one
    that raised or returned no number.

    Example:
        >>> import keras, numpy as np
        >>> import mirrorkit as mk
        >>> strategy = mk.make_strategy()
        >>> with strategy.scope():
        ...     model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        >>> parts = [(np.ones((4, 2), "float32"), np.zeros((4, 1), "float32"))]
        >>> [sorted(r) for r in ask_evaluation(lambda m, d: 1.5, strategy, model, parts, 2)]
        [['calls', 'value', 'weights']]
        >>> ask_evaluation(lambda m, d: "none", strategy, model, parts, 2)
        [{'returned': "str 'none'"}]
    """
    import tensorflow as tf

    calls: list = []
    witnessed = _witnessed(model, strategy, calls)
    records = []
    for part in parts:
        dataset = tf.data.Dataset.from_tensor_slices(part).batch(global_batch)
        try:
            answer = evaluate(witnessed, dataset)
        except Exception as error:  # noqa: BLE001 - the learner's code: a verdict, not a traceback
            records.append({"failed": learner_error(error, "evaluate")})
            break
        number = _as_number(answer)
        if number is None:
            records.append({"returned": f"{type(answer).__name__} {answer!r:.60}"})
            break
        weights = [digest(w) for w in model.weights]
        records.append({"value": number, "weights": weights, "calls": list(calls)})
    return records


def _per_example_losses(tf, model, loss_fn, x, y) -> np.ndarray:
    """Each example's loss (summed over the model's outputs), from outputs read at float32."""
    outputs = tf.nest.map_structure(lambda p: tf.cast(p, tf.float32), model(x, training=False))
    return np.asarray(per_example_values(tf, loss_fn, y, outputs), np.float64)


def _tolerance(model) -> float:
    """How close the learner's mean must be: 1e-5, or 4 epsilons of a mixed policy's dtype."""
    precision = Precision.of(model, None, None)
    return precision.rtol if precision.mixed else RTOL


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
