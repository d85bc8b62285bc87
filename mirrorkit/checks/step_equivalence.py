"""What :func:`mirrorkit.check_step_equivalence` returns: the verdict and the gradients compared.

Example:
    >>> import numpy as np
    >>> from mirrorkit import WeightGradient
    >>> WeightGradient("dense/bias", (1,), np.array([2.0]), np.array([1.0])).max_difference
    1.0
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mirrorkit.checks.result import CheckResult
from mirrorkit.report.render import Line, Report
from mirrorkit.report.values import number, summarize

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
FROM_LOGITS = "from_logits does not fit the model's outputs"
REFERENCE_FROM_LOGITS = "the reference loss reads the outputs another way"
# compute_loss gave no loss to differentiate (it failed, returned no scalar tensor, or a loss
# that does not depend on the weights): nothing was compared.
NO_LOSS = "compute_loss gave no loss to compare"


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
class StepEquivalence(CheckResult):
    """What :func:`check_step_equivalence` returns; prints as text and renders as HTML.

    A :class:`~mirrorkit.CheckResult` whose ``passed`` is ``equivalent``.

    Attributes:
        equivalent: Whether the distributed step applies the single-device gradient,
            within ``rtol`` and ``atol``.
        cause: ``"right"`` when equivalent, else the likely cause of the difference,
            one of the module's constants (e.g. ``"local mean summed over replicas"``);
            ``NO_LOSS`` when ``compute_loss`` gave no loss to compare.
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
        precision: The dtype the model computes in (``"float32"``, or ``"bfloat16"`` or
            ``"float16"`` under a mixed-precision policy, where the comparison's tolerance
            is that precision's).
        splits: Each split of the global batch the check tried, in examples per replica:
            the strategy's own and, when that is even, one uneven split of the same
            examples (the result is the uneven split's when only that one differs).

    Example:
        >>> import numpy as np, keras, tensorflow as tf
        >>> import mirrorkit as mk
        >>> build = lambda: keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        >>> loss_fn = keras.losses.MeanSquaredError(reduction="none")
        >>> def right(model, x, y):
        ...     per_example = loss_fn(y, model(x, training=True))
        ...     return tf.nn.compute_average_loss(per_example, global_batch_size=6)
        >>> batch = (np.ones((6, 3), "float32"), np.zeros((6, 2), "float32"))
        >>> report = mk.check_step_equivalence(right, mk.make_strategy(), build, batch)
        >>> report.passed, report.equivalent, report.replica_batches, len(report.weights)
        (True, True, (6,), 2)
    """

    passed: bool = field(init=False)
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
    precision: str = "float32"
    splits: tuple[tuple[int, ...], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "passed", bool(self.equivalent))

    def __bool__(self) -> bool:
        return self.equivalent

    def _headline(self) -> list[str]:
        verdict = "EQUIVALENT" if self.equivalent else f"DIFFERENT ({self.cause})"
        sizes = ", ".join(str(b) for b in self.replica_batches)
        others = [s for s in self.splits if s != self.replica_batches]
        if others:
            sizes += " (also tried: " + "; ".join(", ".join(map(str, s)) for s in others) + ")"
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
        """The comparison as a report: verdict, one row per weight, what it means.

        When ``compute_loss`` gave no loss to compare, the one line of a failed
        :class:`~mirrorkit.CheckResult`.
        """
        if self.cause == NO_LOSS:
            return super().report()
        return Report(
            headline=tuple(self._headline()),
            columns=self._columns(),
            lines=(Line(self.message), *(Line(n) for n in self.notes)),
            tone="good" if self.equivalent else "warn",
        )
