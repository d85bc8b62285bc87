"""Watch dynamic loss scaling at work in a small custom training loop under a strategy.

How the loss scale moves, and why :func:`overflow_seen_by_all` is needed under
``MirroredStrategy``: docs/design/core.md, "Loss scaling".

Example:
    >>> import mirrorkit as mk
    >>> history = mk.run_loss_scale(mk.make_strategy(), steps=2, overflow_steps=[1],
    ...                             initial_scale=8.0)
    >>> history.skipped_steps
    (1,)
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np

from mirrorkit._validate import refuse, require_strategy, require_whole
from mirrorkit.report.render import Line, Report, Reported
from mirrorkit.report.values import number

#: Policies :func:`run_loss_scale` accepts -> what each one does.
MIXED_PRECISION_POLICIES: dict[str, str] = {
    "mixed_float16": (
        "Compute in float16, keep the weights in float32; needs loss scaling, since "
        "float16 overflows above 65504."
    ),
    "mixed_bfloat16": (
        "Compute in bfloat16, keep the weights in float32; bfloat16 has float32's range, "
        "so loss scaling is not needed (but does no harm)."
    ),
    "float32": "No mixed precision: everything in float32.",
}


@contextmanager
def mixed_precision_policy(name: str) -> Iterator:
    """Set Keras's global dtype policy for a ``with`` block, then restore the previous one.

    ``keras.mixed_precision.set_global_policy`` changes the whole process: every
    layer built afterwards computes in the new dtype. This context manager restores
    the previous policy on leaving the block, even after an error.

    Args:
        name: A Keras policy name such as ``"mixed_float16"``, ``"mixed_bfloat16"`` or
            ``"float32"``.

    Yields:
        The ``keras.mixed_precision.DTypePolicy`` in effect inside the block.

    Raises:
        TypeError: If ``name`` is not text (a ``DTypePolicy`` object or a dtype).
        ValueError: If ``name`` is not a policy Keras knows.

    Example:
        >>> import keras
        >>> import mirrorkit as mk
        >>> with mk.mixed_precision_policy("mixed_float16") as policy:
        ...     policy.compute_dtype, policy.variable_dtype
        ('float16', 'float32')
        >>> keras.mixed_precision.global_policy().name
        'float32'
    """
    import keras

    names = "'mixed_float16', 'mixed_bfloat16' or 'float32'"
    if isinstance(name, keras.mixed_precision.DTypePolicy):
        got = f"the policy object {name.name!r}"
        refuse(
            "name", must="a policy's name", got=got, write=f"mixed_precision_policy({name.name!r})"
        )
    if name is not None and not isinstance(name, str):
        write = "e.g. mixed_precision_policy('mixed_float16')"
        refuse("name", name, must=f"a policy name such as {names}", write=write)
    try:
        policy = keras.mixed_precision.DTypePolicy(name)
    except (TypeError, ValueError) as error:
        raise ValueError(f"unknown mixed precision policy name {name!r}: use {names}.") from error
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(policy)
    try:
        yield policy
    finally:
        keras.mixed_precision.set_global_policy(previous)


@dataclass(frozen=True)
class LossScaleStep:
    """One training step of :func:`run_loss_scale`.

    Attributes:
        step: The step, counted from 0.
        loss: The unscaled loss of the step (summed over replicas), as computed; it
            includes any forced overflow factor.
        loss_scale: The loss scale the step used.
        overflow: Whether some gradient was ``inf`` or ``nan``; the optimizer then
            skipped the step.
        weights_changed: Whether the step changed the model's weights.
        next_scale: The loss scale after the step: halved after an overflow, doubled
            after ``dynamic_growth_steps`` good steps in a row.
        grad_norm: The global norm of the unscaled gradients (``inf`` or ``nan`` on
            overflow).

    Example:
        >>> from mirrorkit import LossScaleStep
        >>> step = LossScaleStep(step=0, loss=0.5, loss_scale=1024.0, overflow=True,
        ...                      weights_changed=False, next_scale=512.0, grad_norm=float("inf"))
        >>> step.overflow
        True
    """

    step: int
    loss: float
    loss_scale: float
    overflow: bool
    weights_changed: bool
    next_scale: float
    grad_norm: float


@dataclass(frozen=True, repr=False)
class LossScaleHistory(Reported):
    """What :func:`run_loss_scale` returns; prints as text and renders as HTML.

    Attributes:
        policy: The policy the model trained under, e.g. ``"mixed_float16"``.
        num_replicas: The strategy's ``num_replicas_in_sync``.
        initial_scale: The optimizer's ``initial_scale``.
        dynamic_growth_steps: Good steps in a row after which the scale doubles.
        records: One :class:`LossScaleStep` per step.
        notes: Sentences that explain the table.

    Example:
        >>> import mirrorkit as mk
        >>> history = mk.run_loss_scale(mk.make_strategy(), steps=3, overflow_steps=[1],
        ...                             initial_scale=8.0, dynamic_growth_steps=10)
        >>> [(r.step, r.loss_scale, r.overflow) for r in history.records]
        [(0, 8.0, False), (1, 8.0, True), (2, 4.0, False)]
    """

    policy: str
    num_replicas: int
    initial_scale: float
    dynamic_growth_steps: int
    records: tuple[LossScaleStep, ...]
    notes: tuple[str, ...] = ()

    @property
    def skipped_steps(self) -> tuple[int, ...]:
        """The steps whose update the optimizer skipped because of an overflow."""
        return tuple(r.step for r in self.records if r.overflow)

    @property
    def scales(self) -> tuple[float, ...]:
        """The loss scale each step used."""
        return tuple(r.loss_scale for r in self.records)

    def _headline(self) -> str:
        n = self.num_replicas
        return (
            f"loss scaling under {self.policy} on {n} replica{'' if n == 1 else 's'}: "
            f"initial scale {number(self.initial_scale)}, doubles after "
            f"{self.dynamic_growth_steps} good steps, halves on overflow"
        )

    def _columns(self) -> list[tuple[str, list[str]]]:
        rs = self.records
        return [
            ("step", [str(r.step) for r in rs]),
            ("loss", [_number(r.loss) for r in rs]),
            ("loss scale", [number(r.loss_scale) for r in rs]),
            ("overflow", ["YES" if r.overflow else "no" for r in rs]),
            ("update", ["skipped" if not r.weights_changed else "applied" for r in rs]),
            ("next scale", [number(r.next_scale) for r in rs]),
            ("grad norm", [_number(r.grad_norm) for r in rs]),
        ]

    def report(self) -> Report:
        """The history as a report: the policy, one row per step, the notes."""
        return Report(
            headline=(self._headline(),),
            columns=self._columns(),
            lines=tuple(Line(n) for n in self.notes),
            cell_tones={"overflow": {"YES": "bad"}, "update": {"skipped": "bad"}},
        )


def _int_or_none(value) -> int | None:
    """``value`` as an int if it is a whole number type (NumPy's too), else None."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def overflow_seen_by_all(gradients: list) -> list:
    """One replica's gradients, made NaN on every replica if any replica's overflowed.

    Under ``MirroredStrategy``, Keras 3.15's ``LossScaleOptimizer`` asks every replica
    whether its gradients are finite but keeps only the first replica's answer, before the
    all-reduce: an overflow on another replica is applied and ruins the weights. One
    all-reduce of the number of replicas that overflowed lets each replica poison its own
    gradients, so the first replica's answer is everybody's. Call it in replica context
    (inside ``strategy.run``), between ``tape.gradient`` and ``apply_gradients``.

    Example:
        >>> import tensorflow as tf
        >>> from mirrorkit.training.mixed_precision import overflow_seen_by_all
        >>> strategy = tf.distribute.get_strategy()  # the default: one replica
        >>> [g.numpy() for g in strategy.run(overflow_seen_by_all, args=([tf.ones(2)],))]
        [array([1., 1.], dtype=float32)]
        >>> [g.numpy() for g in strategy.run(overflow_seen_by_all, args=([tf.ones(2) / 0.0],))]
        [array([nan, nan], dtype=float32)]
    """
    import tensorflow as tf

    context = tf.distribute.get_replica_context()
    finite_here = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in gradients])
    overflowed = context.all_reduce("SUM", tf.cast(tf.logical_not(finite_here), tf.float32))
    poison = tf.where(overflowed > 0, float("nan"), 1.0)
    return [g * tf.cast(poison, g.dtype) for g in gradients]


# run_loss_scale's default overflow_steps, told apart from the same steps given by the learner.
_DEFAULT_OVERFLOW_STEPS = (2,)


def run_loss_scale(
    strategy,
    *,
    policy: str = "mixed_float16",
    steps: int = 6,
    overflow_steps: Iterable[int] = _DEFAULT_OVERFLOW_STEPS,
    initial_scale: float = 2.0**15,
    dynamic_growth_steps: int = 2,
    learning_rate: float = 0.01,
    global_batch: int = 8,
    seed: int = 0,
) -> LossScaleHistory:
    """Train a tiny model for a few steps with a dynamic loss scale; record every step.

    A custom training loop under ``strategy`` and the Keras ``policy``: each replica
    computes ``tf.nn.compute_average_loss`` of a mean squared error, scales it with
    ``optimizer.scale_loss(loss)``, takes the gradient of the scaled loss and calls
    ``optimizer.apply_gradients`` of a ``keras.optimizers.LossScaleOptimizer``
    wrapping SGD. At each step in ``overflow_steps`` the loss is multiplied by the
    largest float32 (``3.4e38``), so the scaled loss and its gradients overflow to
    ``inf``: a deterministic overflow, to watch the step being skipped and the scale
    halved. The global policy is restored afterwards.

    Args:
        strategy: A ``tf.distribute.Strategy``, e.g. from :func:`mirrorkit.make_strategy`.
        policy: One of ``MIXED_PRECISION_POLICIES``: ``"mixed_float16"`` (default),
            ``"mixed_bfloat16"`` or ``"float32"``.
        steps: How many steps to train.
        overflow_steps: The steps (counted from 0) to force an overflow at.
        initial_scale: The optimizer's first loss scale.
        dynamic_growth_steps: Good steps in a row after which the scale doubles.
        learning_rate: SGD's learning rate.
        global_batch: Examples per step across all replicas.
        seed: Seed of the data and of the initial weights.

    Returns:
        A :class:`LossScaleHistory`; its records have the fields ``step``,
        ``loss_scale`` and ``overflow`` among others.

    Raises:
        TypeError: If ``strategy`` is not a ``tf.distribute.Strategy``, or
            ``overflow_steps``, ``initial_scale``, ``learning_rate`` or ``seed`` has the
            wrong type.
        ValueError: If ``policy`` is not one of ``MIXED_PRECISION_POLICIES``, or a number
            is out of range.

    Example:
        >>> import mirrorkit as mk
        >>> history = mk.run_loss_scale(mk.make_strategy(), steps=4, overflow_steps=[],
        ...                             initial_scale=4.0, dynamic_growth_steps=2)
        >>> history.scales
        (4.0, 4.0, 8.0, 8.0)
    """
    settings = _LossScaleSettings(
        policy=policy,
        steps=steps,
        overflow_steps=overflow_steps,
        initial_scale=initial_scale,
        dynamic_growth_steps=dynamic_growth_steps,
        learning_rate=learning_rate,
        global_batch=global_batch,
        seed=seed,
    )
    settings = _settings_set_up(strategy, settings)
    with mixed_precision_policy(policy):
        loop = _LossScaleLoop(strategy, settings)
        records = tuple(loop.step(step) for step in range(settings.steps))
    return _history(strategy, settings, records)


@dataclass(frozen=True)
class _LossScaleSettings:
    """The arguments of :func:`run_loss_scale`, as given, then as checked."""

    policy: str
    steps: int
    overflow_steps: Iterable[int]
    initial_scale: float
    dynamic_growth_steps: int
    learning_rate: float
    global_batch: int
    seed: int


def _settings_set_up(strategy, settings: _LossScaleSettings) -> _LossScaleSettings:
    """Set-up: the settings with whole numbers as ints, or a refusal naming the wrong one."""
    require_strategy(strategy, "mk.run_loss_scale(strategy)")
    if not isinstance(settings.policy, str) or settings.policy not in MIXED_PRECISION_POLICIES:
        known = ", ".join(repr(name) for name in MIXED_PRECISION_POLICIES)
        got = f"unknown policy {settings.policy!r}; choose one of {known}"
        refuse(
            "policy",
            must="a mixed precision policy",
            got=got,
            write="policy='mixed_float16'",
            error=ValueError,
        )
    for name, example in (("steps", 6), ("dynamic_growth_steps", 2), ("global_batch", 8)):
        value = getattr(settings, name)
        if _int_or_none(value) is None or value < 1:
            must, write = "a positive int", f"e.g. {name}={example}"
            refuse(name, value, must=must, write=write, error=ValueError)
    for name, example in (("initial_scale", "2.0**15"), ("learning_rate", "0.01")):
        value, write = getattr(settings, name), f"e.g. {name}={example}"
        if isinstance(value, bool) or not isinstance(value, int | float):
            refuse(name, value, must=f"a number such as {example}", write=write)
        if not value > 0:
            refuse(name, value, must="positive", write=write, error=ValueError)
    require_whole("seed", settings.seed, write="e.g. seed=0")
    # The batch before the overflow steps: with steps=2, the default overflow_steps=(2,) is
    # out of range too, and the learner who wrote only a wrong batch should read about it.
    replicas, batch = strategy.num_replicas_in_sync, operator.index(settings.global_batch)
    if batch % replicas:
        lower, upper = batch - batch % replicas, batch - batch % replicas + replicas
        refuse(
            "global_batch",
            must=f"a multiple of the strategy's {replicas} replicas (each replica gets the "
            "same number of examples)",
            got=f"{batch}, fewer examples than replicas"
            if batch < replicas
            else f"{batch}, which leaves {batch % replicas} example"
            f"{'s' if batch % replicas > 1 else ''} over after {replicas} equal shares",
            write=f"global_batch={lower} or global_batch={upper}"
            if lower
            else f"global_batch={upper}",
            error=ValueError,
        )
    overflow_steps = _overflow_step_set(settings.overflow_steps, operator.index(settings.steps))
    return replace(
        settings,
        steps=operator.index(settings.steps),
        dynamic_growth_steps=operator.index(settings.dynamic_growth_steps),
        global_batch=operator.index(settings.global_batch),
        overflow_steps=overflow_steps,
    )


def _overflow_step_set(overflow_steps, steps: int) -> frozenset[int]:
    """The steps to force an overflow at: a list of ints from 0 to ``steps - 1``, or why not."""
    if isinstance(overflow_steps, int | float | str) or not isinstance(overflow_steps, Iterable):
        write = "e.g. overflow_steps=[2] (or [] for none)"
        refuse("overflow_steps", overflow_steps, must="a list of step numbers", write=write)
    chosen = []
    for step in overflow_steps:
        index = _int_or_none(step)
        if index is None or not 0 <= index < steps:
            default = overflow_steps is _DEFAULT_OVERFLOW_STEPS
            raise ValueError(
                f"overflow_steps{' (left at its default, (2,))' if default else ''} holds "
                f"{step!r}, but steps are counted from 0 to {steps - 1} (steps={steps}): give "
                f"step numbers in that range, e.g. overflow_steps=[{steps - 1}] (or [] for "
                f"none){', or train longer, steps=6' if default else ''}."
            )
        chosen.append(index)
    return frozenset(chosen)


class _LossScaleLoop:
    """The tiny model, its LossScaleOptimizer and its data, built under the strategy."""

    def __init__(self, strategy, settings: _LossScaleSettings) -> None:
        import keras
        import tensorflow as tf

        self.strategy, self.settings = strategy, settings
        rng = np.random.default_rng(settings.seed)
        x = rng.normal(size=(settings.global_batch, 4)).astype("float32")
        y = (x @ rng.normal(size=(4, 1))).astype("float32")
        dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(settings.global_batch)
        # The one global batch, split across the replicas once and fed at every step. A
        # distributed iterator kept as long as the loop can take a minute or more to delete
        # (TensorFlow 2.21, docs/design/core.md), so none outlives this line.
        self.batch = next(iter(strategy.experimental_distribute_dataset(dataset)))
        keras.utils.set_random_seed(settings.seed)
        with strategy.scope():
            self.model = keras.Sequential(
                [
                    keras.Input((4,)),
                    keras.layers.Dense(8, activation="relu", name="hidden"),
                    keras.layers.Dense(1, name="output"),
                    # The output in float32, as the Keras mixed precision guide advises.
                    keras.layers.Activation("linear", dtype="float32", name="float32_output"),
                ],
                name="loss_scale_demo",
            )
            self.optimizer = keras.optimizers.LossScaleOptimizer(
                keras.optimizers.SGD(settings.learning_rate),
                initial_scale=settings.initial_scale,
                dynamic_growth_steps=settings.dynamic_growth_steps,
            )
            self.optimizer.build(self.model.trainable_variables)
        self.per_example_loss = keras.losses.MeanSquaredError(reduction="none")
        self.train_step = tf.function(
            lambda batch, factor: strategy.run(self._replica_step, args=(*batch, factor))
        )

    def _replica_step(self, x_r, y_r, factor):
        import tensorflow as tf

        model, optimizer = self.model, self.optimizer
        with tf.GradientTape() as tape:
            prediction = model(x_r, training=True)
            loss = tf.nn.compute_average_loss(
                self.per_example_loss(y_r, prediction),
                global_batch_size=self.settings.global_batch,
            )
            loss = loss * factor
            scaled = optimizer.scale_loss(loss)
        gradients = overflow_seen_by_all(tape.gradient(scaled, model.trainable_variables))
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        return loss, [tf.cast(g, tf.float32) for g in gradients]

    def step(self, step: int) -> LossScaleStep:
        """Train one step (overflowing on purpose at the overflow steps) and record it."""
        import tensorflow as tf

        strategy, optimizer = self.strategy, self.optimizer
        scale = float(optimizer.dynamic_scale.numpy())
        before = [w.copy() for w in self.model.get_weights()]
        overflow_here = step in self.settings.overflow_steps
        factor = tf.constant(np.finfo(np.float32).max if overflow_here else 1.0, tf.float32)
        loss, gradients = self.train_step(self.batch, factor)
        loss = float(strategy.reduce(tf.distribute.ReduceOp.SUM, loss, axis=None))
        summed = strategy.reduce(tf.distribute.ReduceOp.SUM, gradients, axis=None)
        unscaled = [np.asarray(g, np.float64) / scale for g in summed]
        with np.errstate(over="ignore", invalid="ignore"):
            norm = float(np.sqrt(sum(np.sum(g * g) for g in unscaled)))
        after = self.model.get_weights()
        return LossScaleStep(
            step=step,
            loss=loss,
            loss_scale=scale,
            overflow=not all(np.all(np.isfinite(g)) for g in unscaled),
            weights_changed=any(
                not np.array_equal(a, b) for a, b in zip(before, after, strict=True)
            ),
            next_scale=float(optimizer.dynamic_scale.numpy()),
            grad_norm=norm,
        )


def _history(strategy, settings: _LossScaleSettings, records) -> LossScaleHistory:
    """The history: the records and the notes that explain them."""
    notes = [
        "loss scale: what optimizer.scale_loss(loss) multiplied the loss by at that step; "
        "apply_gradients divides the gradients by it again."
    ]
    if settings.overflow_steps:
        notes.append(
            "At the overflow steps the loss was multiplied by the largest float32 on "
            "purpose: the gradients became inf or nan, the optimizer skipped the update and "
            "halved the scale."
        )
    return LossScaleHistory(
        policy=settings.policy,
        num_replicas=strategy.num_replicas_in_sync,
        initial_scale=float(settings.initial_scale),
        dynamic_growth_steps=settings.dynamic_growth_steps,
        records=records,
        notes=tuple(notes),
    )


def _number(x: float) -> str:
    return number(x) if np.isfinite(x) else str(float(x))
