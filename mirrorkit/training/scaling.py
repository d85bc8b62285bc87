"""The same task trained on 1, 2, 4, 8 replicas: what the global batch does to training.

The linear scaling rule, its warm-up, and how the sweep's curves share one x axis:
docs/design/core.md, "Scaling the batch".

Example:
    >>> from mirrorkit.training.scaling import linear_scaling_schedule
    >>> linear_scaling_schedule(0.1, 8)
    0.8
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from mirrorkit._validate import (
    refuse,
    require_flag,
    require_items,
    require_number,
    require_text,
    require_whole,
)
from mirrorkit.report.render import Line, Report, Reported
from mirrorkit.report.values import number
from mirrorkit.training.learning_rate_rules import scaled_learning_rate


@dataclass(frozen=True)
class ScalingCurve:
    """One training run of :func:`run_scaling_sweep`, on ``replicas`` replicas.

    Attributes:
        replicas: The replica count.
        global_batch: Examples per step, ``replicas * per_replica_batch``.
        steps: Optimizer steps taken.
        learning_rate: The learning rate after the warm-up (the peak).
        warmup_steps: Steps of linear warm-up from the base rate (0: none).
        examples: The examples seen at the end of each window, the x axis.
        losses: The mean training loss over each window of examples.
        final_loss: The mean loss over the whole data set after training.

    Example:
        >>> from mirrorkit.training.scaling import ScalingCurve
        >>> curve = ScalingCurve(replicas=2, global_batch=16, steps=4, learning_rate=0.2,
        ...                      warmup_steps=0, examples=(32, 64), losses=(1.5, 0.5),
        ...                      final_loss=0.4)
        >>> curve.diverged
        False
    """

    replicas: int
    global_batch: int
    steps: int
    learning_rate: float
    warmup_steps: int
    examples: tuple[int, ...]
    losses: tuple[float, ...]
    final_loss: float

    @property
    def diverged(self) -> bool:
        """Whether the loss became infinite or NaN."""
        return not math.isfinite(self.final_loss)


@dataclass(frozen=True, repr=False)
class ScalingSweep(Reported):
    """What :func:`run_scaling_sweep` returns: one :class:`ScalingCurve` per replica count.

    Attributes:
        curves: The runs, in the order of ``replica_counts``.
        per_replica_batch: Examples per replica per step.
        epochs: Passes over the data, the same for every run.
        base_learning_rate: The learning rate of one replica.
        scale_learning_rate: Whether the rate was multiplied by the replica count.
        window: Examples per point of the curves.
        num_examples: Examples in the data set (after dropping a last partial batch).
        optimizer: The optimizer's class name, e.g. ``"SGD"`` or ``"Adam"``.

    Example:
        >>> from mirrorkit.training.scaling import ScalingCurve, ScalingSweep
        >>> one = ScalingCurve(replicas=1, global_batch=8, steps=8, learning_rate=0.1,
        ...                    warmup_steps=0, examples=(64,), losses=(0.9,), final_loss=0.5)
        >>> print(ScalingSweep(curves=(one,), per_replica_batch=8, epochs=1,
        ...                    base_learning_rate=0.1, scale_learning_rate=False, window=64,
        ...                    num_examples=64))
        ... # doctest: +NORMALIZE_WHITESPACE
        same learning rate 0.1 at every replica count, SGD: 8 examples per replica, 1 epoch of 64
        replicas  global batch  steps  learning rate  warm-up steps  final loss
        1         8             8      0.1            0              0.5
        final loss: the mean loss over all 64 examples after training.
    """

    curves: tuple[ScalingCurve, ...]
    per_replica_batch: int
    epochs: int
    base_learning_rate: float
    scale_learning_rate: bool
    window: int
    num_examples: int
    optimizer: str = "SGD"

    def report(self) -> Report:
        """The runs as a table: replicas, global batch, steps, learning rate, final loss."""
        rule = (
            f"learning rate {number(self.base_learning_rate)} x replicas"
            if self.scale_learning_rate
            else f"same learning rate {number(self.base_learning_rate)} at every replica count"
        )
        epochs = f"{self.epochs} epoch{'' if self.epochs == 1 else 's'}"
        curves = self.curves
        lines = [
            Line(f"final loss: the mean loss over all {self.num_examples} examples after training.")
        ]
        if any(c.diverged for c in curves):
            lines.append(Line("a final loss of nan or inf: that run diverged.", tone="warn"))
        return Report(
            headline=(
                f"{rule}, {self.optimizer}: {self.per_replica_batch} examples per replica, "
                f"{epochs} of "
                f"{self.num_examples}",
            ),
            columns=(
                ("replicas", [str(c.replicas) for c in curves]),
                ("global batch", [str(c.global_batch) for c in curves]),
                ("steps", [str(c.steps) for c in curves]),
                ("learning rate", [number(c.learning_rate) for c in curves]),
                ("warm-up steps", [str(c.warmup_steps) for c in curves]),
                ("final loss", [number(c.final_loss) for c in curves]),
            ),
            lines=tuple(lines),
        )


def linear_scaling_schedule(base_learning_rate: float, replicas: int, *, warmup_steps: int = 0):
    """The linear scaling rule, with an optional linear warm-up, as Keras builds it.

    Without warm-up it is the number ``base_learning_rate * replicas``. With warm-up it
    is ``keras.optimizers.schedules.CosineDecay(base_learning_rate, decay_steps=1,
    alpha=1.0, warmup_target=base_learning_rate * replicas, warmup_steps=warmup_steps)``:
    step 0 uses the base rate, the rate grows linearly to the target at step
    ``warmup_steps``, and ``alpha=1.0`` keeps it there (the cosine decays to
    ``alpha`` times the target).

    Args:
        base_learning_rate: The learning rate that works on one replica, above 0.
        replicas: The replica count (the global batch's growth), 1 or more.
        warmup_steps: Steps of warm-up, 0 or more.

    Returns:
        A float, or a ``keras.optimizers.schedules.LearningRateSchedule``.

    Raises:
        TypeError: If an argument is not a number of the right kind.
        ValueError: If an argument is out of range.

    Example:
        >>> from mirrorkit.training.scaling import linear_scaling_schedule
        >>> linear_scaling_schedule(0.1, 4)
        0.4
        >>> schedule = linear_scaling_schedule(0.1, 4, warmup_steps=3)
        >>> [round(float(schedule(step)), 4) for step in range(5)]
        [0.1, 0.2, 0.3, 0.4, 0.4]
    """
    require_number(
        "base_learning_rate", base_learning_rate, above=0, write="base_learning_rate=0.1"
    )
    require_whole("replicas", replicas, minimum=1, write="replicas=4")
    require_whole("warmup_steps", warmup_steps, write="warmup_steps=8 (or 0 for none)")
    target = scaled_learning_rate(base_learning_rate, replicas)  # the browser's rule too
    if warmup_steps == 0:
        return target
    import keras

    return keras.optimizers.schedules.CosineDecay(
        base_learning_rate,
        decay_steps=1,
        alpha=1.0,
        warmup_target=target,
        warmup_steps=warmup_steps,
    )


def run_scaling_sweep(
    devices: Sequence[str],
    model_fn: Callable,
    data,
    *,
    loss,
    replica_counts: Sequence[int] = (1, 2, 4, 8),
    per_replica_batch: int = 8,
    epochs: int = 2,
    learning_rate: float = 0.1,
    scale_learning_rate: bool = False,
    warmup_steps: int = 0,
    window: int | None = None,
    optimizer="sgd",
) -> ScalingSweep:
    """Train ``model_fn()`` on ``data`` at every replica count; record the losses.

    For each ``k`` in ``replica_counts`` the run makes ``MirroredStrategy(devices[:k])``
    (through :func:`mirrorkit.make_strategy`, which keeps strategies in one process
    apart), builds the model and a new optimizer (plain SGD unless ``optimizer`` says
    otherwise) inside its scope, and trains a
    custom loop: each replica's loss is ``tf.nn.compute_average_loss`` over the global
    batch ``k * per_replica_batch``, and ``apply_gradients`` sums the replicas'
    gradients. Every run sees the same examples in the same order, ``epochs`` times,
    without shuffling, so only the replica count (and the learning rate) differs.

    Tracing the step takes longer than training a small task, so calls with the same
    ``model_fn``, ``loss``, devices and ``per_replica_batch`` reuse each replica count's
    model, optimizer and traced step: every run first puts back the weights of the first
    ``model_fn()`` and every variable of the optimizer (its step count, and the slots of
    Adam or momentum), so it starts exactly as a new model would.

    Args:
        devices: Device names, e.g. what :func:`mirrorkit.simulate_replicas` returned;
            at least ``max(replica_counts)`` of them.
        model_fn: A function of no argument returning a new Keras model with the same
            initial weights on every call (seed inside it).
        data: ``(x, y)``: NumPy arrays with one row per example.
        loss: The per-example loss: a Keras loss name such as ``"mse"``, a
            ``keras.losses.Loss`` (its reduction is ignored) or a function.
        replica_counts: The replica counts to train at, each 1 or more.
        per_replica_batch: Examples per replica per step.
        epochs: Passes over the data.
        learning_rate: The learning rate of one replica.
        scale_learning_rate: Multiply the learning rate by the replica count (the linear
            scaling rule).
        warmup_steps: With ``scale_learning_rate``, steps of linear warm-up from
            ``learning_rate`` (see :func:`linear_scaling_schedule`).
        window: Examples per point of the curves; ``None`` means the largest global
            batch, so that every curve has a point at the same examples.
        optimizer: A Keras optimizer's name (``"sgd"``, ``"adam"``), or a function of the
            learning rate that returns a new optimizer, such as ``keras.optimizers.Adam`` or
            ``lambda rate: keras.optimizers.SGD(rate, momentum=0.9)``: every replica count
            needs one of its own. The sweep sets its learning rate at every step.

    Returns:
        A :class:`ScalingSweep`.

    Raises:
        TypeError: If an argument is not of the kind described above.
        ValueError: If there are fewer devices than replicas asked for, the data are too
            few for one step of the largest global batch, or a number is out of range.

    Example:
        >>> import keras, numpy as np
        >>> from mirrorkit.training.scaling import run_scaling_sweep
        >>> def model_fn():
        ...     keras.utils.set_random_seed(0)
        ...     return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        >>> x = np.ones((32, 2), "float32"); y = np.ones((32, 1), "float32")
        >>> sweep = run_scaling_sweep(["/cpu:0"], model_fn, (x, y), loss="mse",
        ...                           replica_counts=(1,), epochs=1)
        >>> sweep.curves[0].steps, sweep.curves[0].examples
        (4, (8, 16, 24, 32))
    """
    from mirrorkit.checks.equivalence import resolve_loss
    from mirrorkit.training._sweep_runner import optimizer_maker, runner_for

    counts, devices, (x, y), window = _sweep_set_up(
        devices,
        model_fn,
        data,
        replica_counts=replica_counts,
        per_replica_batch=per_replica_batch,
        epochs=epochs,
        learning_rate=learning_rate,
        scale_learning_rate=scale_learning_rate,
        warmup_steps=warmup_steps,
        window=window,
    )
    make_optimizer = optimizer_maker(optimizer)
    loss_fn = resolve_loss(loss)
    runners = [
        runner_for(devices[:k], model_fn, loss, loss_fn, per_replica_batch, make_optimizer)
        for k in counts
    ]
    curves = tuple(
        _train(runner, x, y, epochs, learning_rate, scale_learning_rate, warmup_steps, window)
        for runner in runners
    )
    return ScalingSweep(
        curves=curves,
        per_replica_batch=per_replica_batch,
        epochs=epochs,
        base_learning_rate=float(learning_rate),
        scale_learning_rate=scale_learning_rate,
        window=window,
        num_examples=len(x),
        optimizer=type(runners[0].optimizer).__name__,
    )


def _sweep_set_up(
    devices,
    model_fn,
    data,
    *,
    replica_counts,
    per_replica_batch,
    epochs,
    learning_rate,
    scale_learning_rate,
    warmup_steps,
    window,
):
    """Set-up of :func:`run_scaling_sweep`: its arguments checked, the data cut to whole steps.

    Returns the replica counts, the devices, ``(x, y)`` cut to a multiple of the largest
    global batch, and the window; or refuses the first wrong argument, naming it.
    """
    counts = _replica_counts(replica_counts)
    devices = _devices(devices, max(counts))
    import keras

    if isinstance(model_fn, keras.Model) or not callable(model_fn):
        refuse(
            "model_fn",
            model_fn,
            must="the function that returns a new Keras model (every replica count needs a "
            "fresh model with the same starting weights)",
            write="model_fn=make_model, the function itself",
        )
    require_whole("per_replica_batch", per_replica_batch, minimum=1, write="per_replica_batch=8")
    require_whole("epochs", epochs, minimum=1, write="epochs=2")
    require_number("learning_rate", learning_rate, above=0, write="learning_rate=0.1")
    require_flag(
        "scale_learning_rate",
        scale_learning_rate,
        effect="to keep one learning rate at every replica count",
    )
    require_whole("warmup_steps", warmup_steps, write="warmup_steps=8 (or 0 for none)")
    if warmup_steps and not scale_learning_rate:
        refuse(
            "warmup_steps",
            warmup_steps,
            must="0 without scale_learning_rate=True (the warm-up raises the base rate to the "
            "scaled one, and without scaling there is nothing to raise it to)",
            write="scale_learning_rate=True, or warmup_steps=0",
            error=ValueError,
        )
    x, y = _data(data)
    largest = max(counts) * per_replica_batch
    usable = (len(x) // largest) * largest
    if usable == 0:
        refuse(
            "data",
            must=f"at least one step of the largest global batch ({max(counts)} replicas x "
            f"{per_replica_batch} = {largest} examples)",
            got=f"{len(x)} examples, fewer than one step",
            write="more examples, or a smaller per_replica_batch",
            error=ValueError,
        )
    if window is None:
        window = largest
    require_whole("window", window, minimum=1, write=f"window={largest} (or None)")
    if any(window % (k * per_replica_batch) for k in counts) or window > usable * epochs:
        refuse(
            "window",
            window,
            must="a multiple of every global batch and at most the examples seen "
            f"({usable * epochs})",
            write=f"window=None for {largest}",
            error=ValueError,
        )
    return counts, devices, (x[:usable], y[:usable]), window


def _train(runner, x, y, epochs, rate, scale, warmup, window):
    k = runner.strategy.num_replicas_in_sync
    peak = scaled_learning_rate(rate, k) if scale else rate
    schedule = linear_scaling_schedule(rate, k, warmup_steps=warmup) if scale else rate

    @functools.cache
    def rate_at(step: int) -> float:
        # The schedule's value at each step, in float32 as the optimizer computes it.
        return float(schedule) if isinstance(schedule, float | int) else float(schedule(step))

    losses, final = runner.train(x, y, epochs, rate_at)
    per_window = window // runner.global_batch
    means = np.mean(np.reshape(losses, (-1, per_window)), axis=1)
    return ScalingCurve(
        replicas=k,
        global_batch=runner.global_batch,
        steps=len(losses),
        learning_rate=float(peak),
        warmup_steps=warmup if scale else 0,
        examples=tuple(int(window * (i + 1)) for i in range(len(means))),
        losses=tuple(float(m) for m in means),
        final_loss=final,
    )


def _replica_counts(counts) -> tuple[int, ...]:
    """The replica counts as a tuple of distinct ints of at least 1, or a refusal."""
    write = "e.g. replica_counts=(1, 2, 4, 8)"
    counts = require_items("replica_counts", counts, write=write)
    for i, count in enumerate(counts):
        require_whole(f"replica_counts[{i}]", count, minimum=1, write=write)
    if len(set(counts)) != len(counts):
        must = "distinct counts, none named twice"
        refuse("replica_counts", counts, must=must, write=write, error=ValueError)
    return tuple(int(c) for c in counts)


def _devices(devices, needed: int) -> tuple[str, ...]:
    """The devices as a tuple of at least ``needed`` names, or a refusal."""
    write = "devices=mk.simulate_replicas(8), the names it returned"
    devices = require_items("devices", devices, write=write)
    for i, device in enumerate(devices):
        require_text(f"devices[{i}]", device, write=write)
    if len(devices) < needed:
        raise ValueError(
            f"devices has {len(devices)} names but replica_counts asks for {needed} replicas: "
            f"call mk.simulate_replicas({needed}) at the start (restart the kernel first) and "
            "pass the devices it returns, or ask for fewer replicas."
        )
    return tuple(devices)


def _data(data):
    """``data`` as arrays ``(x, y)`` with one row per example in each, or a refusal."""
    if not isinstance(data, tuple | list) or len(data) != 2:
        refuse("data", data, must="a pair (x, y) of NumPy arrays", write="data=(x, y)")
    x, y = (np.asarray(part) for part in data)
    if x.ndim == 0 or y.ndim == 0 or len(x) != len(y):
        refuse(
            "data",
            must="(x, y) with one row per example in each",
            got=f"shapes {x.shape} and {y.shape}",
            write="data=(x, y), x and y with the same examples",
            error=ValueError,
        )
    return x, y
