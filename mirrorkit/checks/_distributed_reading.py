"""Reading a distributed dataset step by step: each replica's example ids, shapes and device.

Example:
    >>> import tensorflow as tf
    >>> from mirrorkit.checks._distributed_reading import static_batch_size
    >>> static_batch_size(tf.data.Dataset.range(8).batch(4))
    4
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence

from mirrorkit.checks import batch_split
from mirrorkit.report.values import short_device

SCAN_LIMIT = 1000  # steps read at most to find the last step of a finite dataset
_FN_DATASET = "the function's dataset"


def not_a_dataset(value) -> str:
    """Why ``value`` is not a dataset or dataset function, and what to pass instead."""
    got = type(value).__name__
    head = (
        "dataset_or_fn must be a batched tf.data.Dataset, or a function that takes a "
        f"tf.distribute.InputContext and returns one; got {got}"
    )
    if "Distributed" in got:
        return (
            f"{head}, which the strategy has already distributed: pass the dataset itself, "
            "before strategy.experimental_distribute_dataset(...)."
        )
    if hasattr(value, "__len__") or hasattr(value, "shape"):
        return (
            f"{head}: make a dataset of it first, e.g. "
            "tf.data.Dataset.from_tensor_slices(data).enumerate().batch(global_batch)."
        )
    return f"{head}."


def recording(fn: Callable, made: list, tf) -> Callable:
    """``fn`` for the strategy to call: it refuses what is no dataset, and keeps what it made."""
    try:
        inspect.signature(fn).bind(None)
    except TypeError as error:
        raise TypeError(
            "the dataset function must take exactly one argument, a "
            f"tf.distribute.InputContext ({error})."
        ) from None
    except ValueError:  # no signature to read (some built-ins): let TensorFlow call it
        pass

    def dataset_fn(context):
        dataset = fn(context)
        if not isinstance(dataset, tf.data.Dataset):
            raise TypeError(
                f"the dataset function returned {type(dataset).__name__}, not a "
                "tf.data.Dataset: end it with `return dataset.batch(per_replica_batch)`, "
                "where per_replica_batch = context.get_per_replica_batch_size(global_batch)."
            )
        if (error := without_ids(dataset.element_spec, tf, _FN_DATASET)) is not None:
            raise error
        made.append(dataset)
        return dataset

    return dataset_fn


def _id_spec(spec):
    if isinstance(spec, Mapping):
        return spec.get("id"), "the 'id' entry of each element"
    if isinstance(spec, Sequence) and not isinstance(spec, str | bytes):
        return (spec[0], "the first component of each element") if spec else (None, "")
    return spec, "each element"


def without_ids(spec, tf, what: str) -> Exception | None:
    """The error to raise unless elements carry one integer id per example, else None."""
    ids, where = _id_spec(spec)
    hint = (
        "Give every example an integer id: call dataset.enumerate() before .batch(...) "
        "(elements become (id, example)), or put the ids under an 'id' key."
    )
    if ids is None:
        return TypeError(f"{what} has no ids: its elements are {spec}. {hint}")
    if not isinstance(ids, tf.TensorSpec) or not (ids.dtype.is_integer):
        return TypeError(
            f"{what} has no integer ids: the preview reads them from {where}, which is "
            f"{ids}. {hint}"
        )
    if ids.shape.rank == 0:
        if what == _FN_DATASET:
            fix = (
                "each replica takes whole batches from it, so end the function with "
                "dataset.batch(context.get_per_replica_batch_size(global_batch))."
            )
        else:
            fix = (
                "experimental_distribute_dataset splits every element along its first "
                "dimension, so batch the dataset first: dataset.batch(global_batch)."
            )
        return ValueError(
            f"{what} is not batched: {where} is a single value, with no batch dimension; " + fix
        )
    if ids.shape.rank is None or (ids.shape.rank > 1 and batched_twice(spec) is None):
        return TypeError(
            f"{what} has ids of shape {ids.shape}; the preview needs one integer id per "
            f"example, shape (batch,) (a dataset batched twice has ids of shape (batch, "
            f"batch): call .batch() once). {hint}"
        )
    return None  # ids of shape (None, None, ...): batched twice, which the preview shows


def batched_twice(spec) -> tuple | None:
    """The ids' shape when the elements are batched more than once, else None.

    Batched twice, ids have two leading dimensions of unknown size, ``(None, None)``; ids of
    shape ``(None, 3)`` are a vector per example instead.

    Example:
        >>> import tensorflow as tf
        >>> batched_twice(tf.data.Dataset.range(8).batch(4).batch(2).element_spec)
        (None, None)
    """
    ids, _ = _id_spec(spec)
    shape = getattr(ids, "shape", None)
    if shape is None or shape.rank is None or shape.rank < 2 or shape[1] is not None:
        return None
    return tuple(shape.as_list())


def static_batch_size(dataset) -> int | None:
    """The batch size TensorFlow reads from the pipeline's .batch() (None if it finds none)."""
    try:
        from tensorflow.python.data.experimental.ops import distribute

        size = int(distribute.compute_batch_size(dataset))
    except Exception:  # noqa: BLE001 - TensorFlow's own walk fails on unusual pipelines
        return None
    return size if size > 0 else None


def read_steps(strategy, distributed, steps, dataset, per_replica_input, n, tf):
    """The first ``steps`` steps, plus the last one when the dataset ends soon enough.

    Returns the steps read, as ``(step, per-replica parts)``, and the number of steps in
    the whole dataset (``None`` if it repeats forever or was not read to its end).
    """
    cardinality = int(dataset.cardinality())
    expected = _steps_for(cardinality, n, per_replica_input)
    infinite = cardinality == int(tf.data.INFINITE_CARDINALITY)
    limit = steps if infinite else max(steps, SCAN_LIMIT)
    kept, last, count = [], None, 0
    ended = True
    for element in distributed:
        if count < steps:
            kept.append((count, _per_replica(strategy, element)))
        else:
            last = (count, element)
        count += 1
        if count >= limit:
            ended = not infinite and expected == count
            break
    if not ended:
        return kept, None
    if last is not None:
        kept.append((last[0], _per_replica(strategy, last[1])))
    return kept, count


def _steps_for(cardinality: int, n: int, per_replica_input: bool) -> int | None:
    """Steps a dataset of ``cardinality`` batches gives (None if TensorFlow cannot tell)."""
    if cardinality < 0:
        return None
    return batch_split.distributed_steps(cardinality, n, per_replica_input=per_replica_input)


def _per_replica(strategy, element):
    import tensorflow as tf

    parts = []
    for value in strategy.experimental_local_results(element):
        ids_tensor, _ = _id_spec(value)
        flat = tf.nest.flatten(value)
        ids = tuple(int(i) for i in ids_tensor.numpy().reshape(-1).tolist())
        shapes = tuple(tuple(t.shape.as_list()) for t in flat)
        parts.append((ids, shapes, short_device(ids_tensor.device)))
    return parts
