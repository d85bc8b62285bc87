"""The splits and the precision a step-equivalence check compares at.

A loss can be right when every replica gets as many examples and wrong otherwise (a Keras
loss with its default reduction), so a check that passes on an even split tries one uneven
split of the same examples too. Under a mixed-precision policy the model computes in float16
or bfloat16, and two sums of the same numbers in another order differ by that precision, so
the comparison's tolerance is the policy's.

Example:
    >>> uneven_split((4, 4, 4, 4))
    (5, 4, 4, 3)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

# The float32 comparison: each gradient element within rtol of its value, plus atol.
_RTOL, _ATOL = 1e-4, 1e-6
# Mixed precision: every gradient element within EPSILONS x the compute dtype's epsilon of
# the largest one. Measured (2026-11-29, 4 replicas, batches of 8 to 33): a right loop under
# mixed_bfloat16 differs from one device by up to 0.92 epsilon (0.0072) of the largest
# gradient element, under mixed_float16 by up to 0.6 epsilon (0.0006).
_EPSILONS = 4
_EPSILON = {"bfloat16": 2.0**-7, "float16": 2.0**-10}


@dataclass(frozen=True)
class Precision:
    """The precision the model computes in, and the tolerance that follows from it.

    Attributes:
        name: The compute dtype, e.g. ``"float32"`` or ``"bfloat16"``.
        policy: The model's dtype policy name, e.g. ``"mixed_bfloat16"``.
        rtol: Relative tolerance: per element for float32, else of the largest gradient
            element of all the weights.
        atol: Absolute tolerance.

    Example:
        >>> import numpy as np
        >>> Precision("bfloat16", "mixed_bfloat16", 0.03, 1e-6).agree(
        ...     [np.array([1.0, 0.001])], [np.array([1.01, 0.0])])
        True
    """

    name: str
    policy: str
    rtol: float
    atol: float

    @classmethod
    def of(cls, model, rtol: float | None, atol: float | None) -> Precision:
        """The precision ``model`` computes in; ``rtol``/``atol`` None take its default."""
        dtypes = {getattr(layer, "compute_dtype", "float32") for layer in model._flatten_layers()}
        low = sorted(dtypes & set(_EPSILON))
        name = low[0] if low else "float32"
        policy = getattr(getattr(model, "dtype_policy", None), "name", name)
        default = _EPSILONS * _EPSILON[name] if low else _RTOL
        return cls(
            name,
            policy,
            default if rtol is None else float(rtol),
            _ATOL if atol is None else float(atol),
        )

    @property
    def mixed(self) -> bool:
        """Whether the model computes below float32."""
        return self.name in _EPSILON

    @property
    def fit_tolerance(self) -> float:
        """How much of a gradient a fit of the known bugs may leave unexplained."""
        return max(1e-3, self.rtol) if self.mixed else 1e-3

    def agree(self, applied, reference) -> bool:
        """Whether every weight's two gradients agree within the tolerance."""
        pairs = list(zip(applied, reference, strict=True))
        if not self.mixed:
            return all(np.allclose(a, r, rtol=self.rtol, atol=self.atol) for a, r in pairs)
        largest = max((float(np.max(np.abs(r))) for _, r in pairs if r.size), default=0.0)
        bound = self.rtol * largest + self.atol
        return all(float(np.max(np.abs(a - r))) <= bound for a, r in pairs if r.size)

    def words(self) -> str:
        """The tolerance in words, e.g. ``"rtol 0.0001, atol 1e-06"``."""
        from mirrorkit.report.values import number

        if not self.mixed:
            return f"rtol {number(self.rtol)}, atol {number(self.atol)}"
        return (
            f"compared at {self.name} precision, as the policy {self.policy} computes: every "
            f"gradient element within rtol {number(self.rtol)} of the largest one, "
            f"atol {number(self.atol)}"
        )


def uneven_split(sizes: tuple[int, ...]) -> tuple[int, ...]:
    """The even split ``sizes`` with one example moved from the last replica to the first.

    Example:
        >>> uneven_split((1, 1))
        (2, 0)
    """
    return (sizes[0] + 1, *sizes[1:-1], sizes[-1] - 1)


def distributed_batch(tf, strategy, data, split):
    """``(x, y)`` per replica: as the strategy splits it (``split`` None), or as ``split``."""
    data = as_tuples(data)  # tf.data reads a list as one tensor, a tuple as a structure
    if split is None:
        examples = int(np.shape(tf.nest.flatten(data)[0])[0])
        dataset = tf.data.Dataset.from_tensor_slices(data).batch(examples)
        return next(iter(strategy.experimental_distribute_dataset(dataset)))
    bounds = np.cumsum((0, *split))

    def piece(context):
        i = context.replica_id_in_sync_group
        return tf.nest.map_structure(lambda a: tf.constant(a[bounds[i] : bounds[i + 1]]), data)

    return strategy.experimental_distribute_values_from_function(piece)


def as_tuples(structure):
    """``structure`` with every list made a tuple (a model's several inputs, for tf.data).

    Example:
        >>> as_tuples({"x": [1, 2]})
        {'x': (1, 2)}
    """
    if isinstance(structure, dict):
        return {key: as_tuples(value) for key, value in structure.items()}
    if isinstance(structure, list | tuple):
        return tuple(as_tuples(value) for value in structure)
    return structure


def _sizes(sizes) -> str:
    return ", ".join(str(s) for s in sizes)


def splits_verdict(even, uneven):
    """One verdict from a check on the strategy's even split and one on an uneven split."""
    b = even.global_batch
    tried = (even.replica_batches, uneven.replica_batches)
    if uneven.equivalent:
        said = (
            f" Splits tried of the global batch of {b}: {_sizes(tried[0])} (the strategy's "
            f"own) and {_sizes(tried[1])} (uneven, as a short last batch or unequal worker "
            "shards give)."
        )
        return dataclasses.replace(even, message=even.message + said, splits=tried)
    said = (
        f"With the strategy's even split of the global batch of {b} ({_sizes(tried[0])}) the "
        f"step is right, but with an uneven split of the same examples ({_sizes(tried[1])}, "
        "as a short last batch or unequal worker shards give) it is not. "
    )
    return dataclasses.replace(uneven, message=said + uneven.message, splits=tried)
