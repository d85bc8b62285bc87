"""The data a learner gives the scaling checks: ``(x, y)`` checked, and split over replicas.

``x`` and ``y`` are NumPy arrays, or a model's dict or tuple of them; every array holds the
same examples along its first axis. :func:`one_batch` hands the whole of it to the replicas
once, as ``strategy.experimental_distribute_dataset`` does (``_splits.distributed_batch``, as
the step checks do), so that a check that runs the learner's step several times (with two
bounds, or a right and a wrong answer) splits it once.

Example:
    >>> import numpy as np
    >>> from mirrorkit.checks._learner_data import learner_structures
    >>> x, y = learner_structures(({"a": np.ones((2, 3)), "b": np.ones((2, 1))}, [1, 2]), "data")
    >>> sorted(x), y.shape
    (['a', 'b'], (2,))
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mirrorkit._validate import refuse
from mirrorkit.checks._splits import distributed_batch


@dataclass(frozen=True)
class OneBatch:
    """One global batch: as given (``x``, ``y``), its size, and as the replicas receive it."""

    x: object
    y: object
    examples: int
    per_replica: object  # (x, y) of PerReplica values: one share of the batch per replica


def one_batch(strategy, data, what: str) -> OneBatch:
    """``data`` checked, as one global batch, and split over the strategy's replicas once.

    Example:
        >>> import mirrorkit as mk
        >>> strategy = mk.make_strategy()
        >>> batch = one_batch(strategy, (np.ones((8, 3)), np.ones((8, 1))), "batch")
        >>> shares = strategy.experimental_local_results(batch.per_replica[0])
        >>> batch.examples, sum(len(share) for share in shares)
        (8, 8)
    """
    import tensorflow as tf

    x, y = learner_structures(data, what)
    return OneBatch(x, y, examples(x), distributed_batch(tf, strategy, (x, y), None))


def learner_structures(data, what: str):
    """``x`` and ``y`` of ``(x, y)``: arrays, or a model's dict or tuple of arrays.

    Every array must hold the same examples (its first axis); lists of arrays become tuples.
    Anything else is a TypeError or ValueError naming ``what``.

    Example:
        >>> x, y = learner_structures(([[1.0, 2.0], [3.0, 4.0]], [1.0, 2.0]), "batch")
        >>> x.shape, y.shape
        ((2, 2), (2,))
        >>> learner_structures([1, 2, 3], "data")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: data must be a pair (x, y) of NumPy arrays, got list [1, 2, 3]: write data=...
    """
    if not isinstance(data, tuple | list) or len(data) != 2:
        refuse(what, data, must="a pair (x, y) of NumPy arrays", write=f"{what}=(x, y)")
    plain = not any(map(_nested, data))
    if not plain:
        import tensorflow as tf

        x, y = (_arrays(part) for part in data)
        arrays = tf.nest.flatten((x, y))
        must = "(x, y) whose arrays hold the same examples, along their first axis"
        write = f"{what}=(x, y) with every array of x and y cut to the same n examples"
    else:
        x, y = (np.asarray(part) for part in data)
        arrays = [x, y]
        must, write = "(x, y) with the same examples in each", f"{what}=(x[:n], y[:n])"
    lengths = [len(a) if a.ndim else 0 for a in arrays]
    if len(set(lengths)) != 1 or not lengths[0]:
        got = (
            f"shapes {x.shape} and {y.shape}"
            if plain
            else f"arrays of {', '.join(map(str, lengths))} examples"
        )
        refuse(what, must=must, got=got, write=write, error=ValueError)
    return x, y


def _nested(part) -> bool:
    """Whether ``part`` is a model's several inputs or outputs (a dict, or a list of arrays)."""
    if isinstance(part, dict):
        return True
    return (
        isinstance(part, list | tuple)
        and bool(part)
        and all(hasattr(a, "shape") or isinstance(a, dict) for a in part)
    )


def _arrays(part):
    """``part`` with each of its arrays (a list of numbers too) as NumPy, its lists as tuples."""
    if isinstance(part, dict):
        return {key: _arrays(value) for key, value in part.items()}
    if _nested(part):
        return tuple(_arrays(value) for value in part)
    return np.asarray(part)


def examples(x) -> int:
    """The examples ``x`` holds (of its first array, when it is a dict or tuple).

    Example:
        >>> examples({"a": np.ones((5, 2))})
        5
    """
    import tensorflow as tf

    return len(tf.nest.flatten(x)[0])
