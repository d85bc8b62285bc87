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

from collections.abc import Callable

from mirrorkit._validate import refuse, require_batch, require_callable, require_strategy
from mirrorkit.checks._step_asks import ask_step
from mirrorkit.checks._step_verdicts import judge_step
from mirrorkit.checks._steps import resolve_loss
from mirrorkit.checks.step_equivalence import StepEquivalence

__all__ = ["check_step_equivalence", "checked_batch", "resolve_loss", "step_equivalence"]

CALL = 'mk.check_step_equivalence(compute_loss, strategy, model_fn, batch, loss="mse")'


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
    resolve_loss(loss)  # a loss the check cannot read is refused before anything runs
    record = ask_step(
        compute_loss,
        strategy,
        model_fn,
        (x, y, examples),
        loss=loss,
        rtol=rtol,
        atol=atol,
        uneven=uneven,
    )
    return judge_step(record, model_fn=model_fn, loss=loss)


def checked_batch(compute_loss, strategy, model_fn, batch) -> tuple:
    """``(x, y, examples)`` of ``batch``, each argument refused or accepted as the check would.

    Example:
        >>> import numpy as np
        >>> import mirrorkit as mk
        >>> from mirrorkit.checks.equivalence import checked_batch
        >>> batch = (np.ones((6, 2)), np.ones(6))
        >>> checked_batch(print, mk.make_strategy(), lambda: None, batch)[2]
        6
    """
    import tensorflow as tf

    return _arguments(tf, compute_loss, strategy, model_fn, batch)


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
