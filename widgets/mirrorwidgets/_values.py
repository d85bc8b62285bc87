"""Read distributed values through mirrorkit.inspect and regroup them per replica."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import mirrorkit as mk

_HINT = (
    "Pass what tf.distribute hands you: the PerReplica result of strategy.run(...), a "
    "MirroredVariable, a Keras model built under strategy.scope(), or a list of these "
    "(for example per-replica gradients)."
)


@dataclass(frozen=True)
class Entry:
    """One named value held by one replica."""

    name: str
    kind: str
    dtype: str
    shape: tuple[int, ...]
    summary: str
    in_sync: bool | None
    array: np.ndarray


@dataclass(frozen=True)
class Cell:
    """Everything one replica holds."""

    replica: int
    device: str
    entries: tuple[Entry, ...]


@dataclass(frozen=True)
class Reading:
    """A value read once: its title, its cells (one per replica) and its overall sync state."""

    title: str
    cells: tuple[Cell, ...]
    in_sync: bool | None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.cells[0].entries)


def _structure(value, argument: str = "value"):
    """Keras models are shown weight by weight, each with every replica's copy."""
    import keras

    if isinstance(value, keras.Model):
        if not value.weights:
            raise ValueError(
                f"{argument} is Keras model {value.name!r}, which has no weights yet: build it "
                "first (give it a keras.Input, or call it once on a batch), then show it."
            )
        return {w.path: w for w in value.weights}, f"Keras model {value.name!r}"
    return value, None


def _emptiness(value) -> str | None:
    """What an empty distributed value or list is, in words; None if ``value`` is not empty."""
    parts = getattr(value, "values", None)
    if type(value).__name__ in ("PerReplica", "Mirrored") and parts is not None and not parts:
        return (
            f"a {type(value).__name__} that holds no replica values, so there is nothing to "
            "show. Make it with strategy.run(fn, ...) on a strategy that has at least one replica."
        )
    if isinstance(value, list | tuple) and not value:
        return f"an empty {type(value).__name__}; pass at least one distributed value."
    return None


def is_tensorflow_value(value) -> bool:
    """A tensor, a variable or a distributed value (what ``strategy.run`` returns)."""
    import keras
    import tensorflow as tf

    return tf.is_tensor(value) or isinstance(
        value, tf.Variable | keras.Variable | tf.distribute.DistributedValues
    )


def not_a_value(value, argument: str, what: str, where: str = "", hint: str = _HINT) -> str:
    """Say why ``value`` (the argument ``argument`` of ``what``) holds no TensorFlow value."""
    names = {cls.__name__ for cls in type(value).__mro__}
    if hasattr(value, "num_replicas_in_sync") and hasattr(value, "run"):
        tip = f"that is the strategy itself: show what it computes, {what}(strategy.run(fn))."
    elif "DatasetV2" in names or "DistributedDataset" in names:
        tip = (
            "a dataset holds no replica values yet: show one batch of it, e.g. next(iter("
            "strategy.experimental_distribute_dataset(dataset))), or see which examples each "
            "replica gets with BatchSplitView."
        )
    elif value is None:
        tip = "did the function given to strategy.run return its value?"
    elif callable(value) and "Model" not in names:
        tip = f"a function must run first: pass its result, {what}(strategy.run(fn))."
    else:
        tip = "wrap plain numbers with tf.constant(...), or pass what strategy.run returns."
    got = f"{type(value).__name__}{where}"
    return f"{argument} must hold TensorFlow values, got {got}: {tip} {hint}"


def _first_foreign(value, path: str = ""):
    """(type name, path) of the first part of a list or dict that is no TensorFlow value."""
    import keras

    if is_tensorflow_value(value) or isinstance(value, keras.Model):
        return None
    if isinstance(value, dict):
        parts = [(f"[{key!r}]", item) for key, item in value.items()]
    elif isinstance(value, list | tuple):
        parts = [(f"[{index}]", item) for index, item in enumerate(value)]
    else:
        return (type(value).__name__, path) if path else None
    for step, item in parts:
        found = _first_foreign(item, path + step)
        if found:
            return found
    return None


def read(value, *, what: str = "ReplicaGrid", argument: str = "value") -> Reading:
    """Inspect ``value`` and regroup its rows into one cell per replica."""
    empty = _emptiness(value)
    structure, model_title = (value, None) if empty else _structure(value, argument)
    if isinstance(structure, list | tuple):
        empty = empty or next(filter(None, map(_emptiness, structure)), None)
    if empty:
        raise ValueError(f"{argument} is {empty}")
    try:
        table = mk.inspect(structure)
    except TypeError as error:
        container = isinstance(value, list | tuple | dict)
        found = _first_foreign(value) if container else None
        if (container and not found) or (not container and is_tensorflow_value(value)):
            raise TypeError(f"{what} cannot show {argument}: {error}") from None  # not ours
        where = f" holding {found[0]} at {found[1]}" if found else ""
        raise TypeError(not_a_value(value, argument, what, where)) from None
    by_replica: dict[int, list] = {}
    devices: dict[int, str] = {}
    for row in table.rows:
        replica = 0 if row.replica is None else row.replica
        devices.setdefault(replica, row.device)
        by_replica.setdefault(replica, []).append(
            Entry(row.name, row.kind, row.dtype, row.shape, row.summary, row.in_sync, row.array)
        )
    cells = tuple(Cell(i, devices[i], tuple(entries)) for i, entries in sorted(by_replica.items()))
    title = (
        table.title if model_title is None else f"{model_title}: {len(cells[0].entries)} weights"
    )
    return Reading(title, cells, table.in_sync)


def check_pair(before: Reading, after: Reading) -> None:
    """An all-reduce keeps names and shapes: refuse a pair that could not be one."""
    problem = _pair_problem(before, after)
    if problem:
        raise ValueError(problem)


def _pair_problem(before: Reading, after: Reading) -> str | None:
    """Why ``after`` cannot be the all-reduce of ``before``, or None if it can be."""
    if before.names != after.names:
        return (
            f"before and after hold different values ({list(before.names)} vs "
            f"{list(after.names)}); pass the per-replica values and the result of all-reducing "
            "those same values."
        )
    for index, name in enumerate(before.names):
        label = f" {name!r}" if name else ""
        shapes = {c.replica: c.entries[index].shape for c in before.cells}
        if len(set(shapes.values())) > 1:
            detail = ", ".join(f"replica {r}: {s}" for r, s in shapes.items())
            return (
                f"the replicas' values{label} have different shapes ({detail}), so they cannot be "
                "all-reduced; every replica must return the same shape from strategy.run."
            )
        for cell in after.cells:
            got = cell.entries[index].shape
            want = next(iter(shapes.values()))
            if got != want:
                return (
                    f"after{label} has shape {got} on replica {cell.replica} but before has "
                    f"{want}; an all-reduce keeps shapes, so pass the reduced result of the "
                    "same values (e.g. ctx.all_reduce('sum', v) inside strategy.run)."
                )
    if len(after.cells) not in (1, len(before.cells)):
        return (
            f"before has {len(before.cells)} replicas but after has {len(after.cells)}; pass "
            "values from the same strategy."
        )
    return None


def agree(reading: Reading) -> tuple[bool, ...]:
    """Per name: whether every replica holds the very same value (what an all-reduce ensures)."""
    flags = []
    for index in range(len(reading.names)):
        arrays = [c.entries[index].array for c in reading.cells]
        flags.append(all(np.array_equal(arrays[0], a) for a in arrays[1:]))
    return tuple(flags)


def value_range(readings, index: int) -> tuple[float, float]:
    """A shared color scale for one named value across every replica (and both stages)."""
    lo, hi = np.inf, -np.inf
    for reading in readings:
        for cell in reading.cells:
            array = np.asarray(cell.entries[index].array)
            if array.size and array.dtype.kind in "biuf":
                finite = array[np.isfinite(array)] if array.dtype.kind == "f" else array
                if finite.size:
                    lo, hi = min(lo, float(finite.min())), max(hi, float(finite.max()))
    return (0.0, 0.0) if lo > hi else (lo, hi)
