"""Turn any distributed value into a small table: one row per replica (or per weight).

Example:
    >>> import tensorflow as tf
    >>> import mirrorkit as mk
    >>> len(mk.inspect(tf.constant([1.0, 2.0])).rows)
    1
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from mirrorkit._validate import refuse, require_number, require_strategy
from mirrorkit.report.render import Line, Report, Reported
from mirrorkit.report.values import short_device, summarize

# Kinds of value, as shown in a table's title.
PER_REPLICA = "PerReplica"
MIRRORED = "MirroredVariable"
MIRRORED_VALUE = "Mirrored"
SYNC_ON_READ = "SyncOnReadVariable"
SINGLE = "not distributed"


@dataclass(frozen=True)
class ReplicaRow:
    """One copy of a value: which replica holds it, where, and what it contains.

    Attributes:
        name: The value's name inside a model or a nested structure ("" if alone).
        kind: What this copy belongs to, e.g. ``"MirroredVariable"``.
        replica: The replica index, or ``None`` for a value that is not per replica
            (a plain tensor, or a model weight summarised over its replicas).
        device: A short device name such as ``"CPU:1"``.
        dtype: The dtype's name, e.g. ``"float32"``.
        shape: The shape as a tuple.
        summary: The value itself if small, else its mean, min and max.
        in_sync: Whether this value's mirrored copies are identical; ``None`` where
            copies are not meant to agree.
        array: The copy as a NumPy array (not shown in the table).

    Example:
        >>> from mirrorkit import ReplicaRow
        >>> row = ReplicaRow(name="", kind="PerReplica", replica=0, device="CPU:0",
        ...                  dtype="float32", shape=(), summary="1.5", in_sync=None)
        >>> row.device
        'CPU:0'
    """

    name: str
    kind: str
    replica: int | None
    device: str
    dtype: str
    shape: tuple[int, ...]
    summary: str
    in_sync: bool | None
    array: np.ndarray | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True, repr=False)
class ReplicaTable(Reported):
    """What :func:`mirrorkit.inspect` returns; prints as text and renders as HTML.

    Attributes:
        title: A one-line description of the value.
        rows: One :class:`ReplicaRow` per copy (or per weight, for a model).
        notes: Sentences that explain what the table shows.

    Example:
        >>> import tensorflow as tf
        >>> import mirrorkit as mk
        >>> table = mk.inspect(tf.constant([1.0, 2.0]))
        >>> table.num_replicas, table.in_sync
        (1, None)
    """

    title: str
    rows: tuple[ReplicaRow, ...]
    notes: tuple[str, ...] = ()

    @property
    def num_replicas(self) -> int:
        """How many distinct replicas appear in the rows (1 for a plain value)."""
        replicas = {row.replica for row in self.rows if row.replica is not None}
        return max(len(replicas), 1)

    @property
    def in_sync(self) -> bool | None:
        """``True`` if every mirrored value agrees across replicas, ``None`` if none is mirrored."""
        marks = [row.in_sync for row in self.rows if row.in_sync is not None]
        return all(marks) if marks else None

    @property
    def arrays(self) -> tuple[np.ndarray, ...]:
        """Each row's value as a NumPy array, in row order."""
        return tuple(row.array for row in self.rows)

    def _columns(self) -> list[tuple[str, list[str]]]:
        def mark(flag):
            return {True: "yes", False: "NO", None: "-"}[flag]

        columns = [
            ("name", [row.name for row in self.rows]),
            ("replica", ["-" if r.replica is None else str(r.replica) for r in self.rows]),
            ("device", [row.device for row in self.rows]),
            ("dtype", [row.dtype for row in self.rows]),
            ("shape", [str(row.shape) for row in self.rows]),
            ("value", [row.summary for row in self.rows]),
            ("in sync", [mark(row.in_sync) for row in self.rows]),
        ]
        # Leave out a column that says nothing for this value.
        return [
            (head, cells)
            for head, cells in columns
            if any(cell not in ("", "-") for cell in cells) or head in ("device", "value")
        ]

    def report(self) -> Report:
        """The table as a report: the title, one row per copy, the notes.

        Example:
            >>> import tensorflow as tf
            >>> import mirrorkit as mk
            >>> mk.inspect(tf.constant([1.0, 2.0])).report().headline
            ('tf.Tensor (not distributed): one copy',)
        """
        return Report(
            headline=(self.title,),
            columns=self._columns(),
            lines=tuple(Line(n) for n in self.notes),
            cell_tones={"in sync": {"yes": "good", "NO": "bad"}},
        )


def inspect(value, *, atol: float = 0.0, strategy=None) -> ReplicaTable:
    """Show where each copy of a (possibly distributed) value lives and what it holds.

    Accepts what ``tf.distribute`` hands you: the ``PerReplica`` result of
    ``strategy.run``, a ``MirroredVariable``, a sync-on-read variable, a Keras
    variable or model created under ``strategy.scope()``, a plain tensor or
    variable (shown as the single copy it is), or a list, tuple or dict of these.

    Args:
        value: The value to inspect.
        atol: Largest absolute difference for mirrored copies to count as in sync.
            The default ``0.0`` asks for identical copies, which is what
            ``MirroredStrategy`` keeps.
        strategy: The strategy that made the value (optional). Copies returned by a
            ``tf.function`` are reported by TensorFlow on the device that called it, the
            same for every replica; given the strategy (or inside its scope), the device
            column shows each replica's own device instead, and a note says so.

    Returns:
        A :class:`ReplicaTable`; it prints as text and shows as HTML in notebooks.

    Raises:
        TypeError: If ``value`` is not a TensorFlow or Keras value (a NumPy array, plain
            numbers, a strategy, a dataset, a function...), or ``atol`` is not a number.
        ValueError: If a distributed value has no replicas, a tensor is symbolic
            (called inside ``tf.function``), or ``atol`` is negative.

    Example:
        >>> import tensorflow as tf
        >>> import mirrorkit as mk
        >>> print(mk.inspect(tf.Variable([1.0, 2.0, 3.0])))
        tf.Variable (not distributed): one copy
        device  dtype    shape  value
        CPU:0   float32  (3,)   [1, 2, 3]
    """
    import keras
    import tensorflow as tf

    require_number("atol", atol, write="e.g. atol=1e-6")
    if strategy is not None:
        require_strategy(strategy, "mk.inspect(value, strategy=strategy)")
    if not atol >= 0:
        write = "e.g. atol=1e-6, or 0.0 for exact"
        refuse("atol", atol, must=">= 0", write=write, error=ValueError)
    if isinstance(value, keras.Model):
        return _inspect_model(value, atol)
    if isinstance(value, list | tuple) and value and all(_plain_number(v) for v in value):
        refuse(
            "value",
            must="a TensorFlow value",
            got=f"a {type(value).__name__} of plain numbers",
            write=f"mk.inspect(tf.constant({list(value)!r})), to wrap it first",
        )
    if isinstance(value, Mapping | list | tuple) and not isinstance(value, tf.Tensor):
        items = _flatten(value, "")
        if not items:
            raise ValueError(
                f"value is an empty {type(value).__name__}: pass at least one tensor, variable "
                "or result of strategy.run."
            )
        rows = tuple(row for name, item in items for row in _rows(item, name, atol))
        return ReplicaTable(title=f"{len(items)} values", rows=rows)
    rows = _rows(value, "", atol)
    rows, moved = _producers(rows, strategy)
    notes = _notes(value, rows) + moved
    return ReplicaTable(title=_title(value, rows), rows=rows, notes=notes)


def _producers(rows: tuple[ReplicaRow, ...], strategy) -> tuple[tuple[ReplicaRow, ...], tuple]:
    """The rows with each replica's own device where TensorFlow reports the caller's, a note.

    Outputs of a ``tf.function`` that ran ``strategy.run`` all carry the calling device.
    """
    import dataclasses

    import tensorflow as tf

    reported = {row.device for row in rows}
    if len(rows) < 2 or len(reported) != 1 or rows[0].kind not in (PER_REPLICA, MIRRORED_VALUE):
        return rows, ()
    caller = reported.pop()
    if strategy is None and tf.distribute.has_strategy():
        strategy = tf.distribute.get_strategy()
    if strategy is not None:
        from mirrorkit.devices import replica_devices

        devices = replica_devices(strategy)
        if len(devices) == len(rows):
            rows = tuple(
                dataclasses.replace(row, device=short_device(device))
                for row, device in zip(rows, devices, strict=True)
            )
            return rows, (
                f"TensorFlow reports {caller} for every copy: they came out of a tf.function, "
                "whose outputs carry the device that called it. The device column shows the "
                "device each replica ran on, from the strategy.",
            )
    return rows, (
        f"TensorFlow reports {caller} for every copy: they came out of a tf.function, whose "
        "outputs carry the device that called it, not the one that computed them. Pass the "
        "strategy to see each replica's own device: mk.inspect(value, strategy=strategy).",
    )


def _plain_number(value) -> bool:
    return isinstance(value, int | float | complex | np.number) and not isinstance(value, bool)


def _not_a_value(value, where: str) -> TypeError:
    """Why ``value`` cannot be inspected, and what to inspect instead."""
    import tensorflow as tf

    name = type(value).__name__
    if isinstance(value, tf.distribute.Strategy) or (
        isinstance(value, type) and issubclass(value, tf.distribute.Strategy)
    ):
        advice = (
            "a strategy holds no values of its own: inspect what it makes, the result of "
            "strategy.run(fn) or a variable created in strategy.scope()"
        )
    elif isinstance(value, tf.data.Dataset) or "DistributedDataset" in name:
        advice = "a dataset is a recipe for batches: inspect one batch, next(iter(dataset))"
    elif "DistributedIterator" in name or isinstance(value, tf.data.Iterator):
        advice = "inspect the batch it gives: mk.inspect(next(iterator))"
    elif value is None:
        advice = (
            "None usually means the function run returned nothing: make it return its tensor "
            "(return x), then inspect strategy.run(fn)"
        )
    elif callable(value):
        advice = "run the function first, e.g. mk.inspect(strategy.run(fn)), and inspect the result"
    elif isinstance(value, np.ndarray) or _plain_number(value):
        advice = "wrap it first with tf.constant(...), e.g. mk.inspect(tf.constant(x))"
    else:
        advice = (
            "pass a tensor, a variable, a Keras model or the result of strategy.run; wrap "
            "plain numbers with tf.constant(...)"
        )
    return TypeError(
        f"value{where} must be a TensorFlow value (a PerReplica from strategy.run, a "
        f"MirroredVariable, a tensor, a Keras model...), got {name}: {advice}."
    )


def _flatten(value, prefix: str) -> list[tuple[str, object]]:
    if isinstance(value, Mapping):
        pairs = [(f"{prefix}.{k}" if prefix else str(k), v) for k, v in value.items()]
    elif isinstance(value, Sequence) and not isinstance(value, str | bytes):
        # Keras variables carry a readable path ("train_loss/total"); others get an index.
        pairs = [(getattr(v, "path", None) or f"{prefix}[{i}]", v) for i, v in enumerate(value)]
    else:
        return [(prefix, value)]
    return [item for name, v in pairs for item in _flatten(v, name)]


def _kind(value) -> str:
    names = {cls.__name__ for cls in type(value).__mro__}
    if "SyncOnReadVariable" in names:
        return SYNC_ON_READ
    if "MirroredVariable" in names:
        return MIRRORED
    if "Mirrored" in names:
        return MIRRORED_VALUE
    if "DistributedValues" in names:
        return PER_REPLICA
    return SINGLE


def _unwrap_keras(value):
    import keras

    return value.value if isinstance(value, keras.Variable) else value


def _rows(value, name: str, atol: float) -> tuple[ReplicaRow, ...]:
    import tensorflow as tf

    value = _unwrap_keras(value)
    kind = _kind(value)
    if kind == SINGLE:
        if not isinstance(value, tf.Tensor | tf.Variable):
            raise _not_a_value(value, f" at {name}" if name else "")
        parts = (value,)
    else:
        parts = tuple(value.values)
        if not parts:
            raise ValueError(f"the {kind}{' ' + name if name else ''} has no replicas.")
    arrays = [_to_numpy(p) for p in parts]
    in_sync = _agree(arrays, atol) if kind in (MIRRORED, MIRRORED_VALUE) else None
    return tuple(
        ReplicaRow(
            name=name,
            kind=kind,
            replica=None if kind == SINGLE else i,
            device=short_device(part.device),
            dtype=part.dtype.name,
            shape=tuple(array.shape),
            summary=summarize(array),
            in_sync=in_sync,
            array=array,
        )
        for i, (part, array) in enumerate(zip(parts, arrays, strict=True))
    )


def _to_numpy(tensor) -> np.ndarray:
    try:
        return np.asarray(tensor.numpy())
    except (AttributeError, NotImplementedError):
        symbolic = ValueError(
            "value holds a symbolic tensor, which has no numbers to show yet: call "
            "mk.inspect outside tf.function (for example on the result that strategy.run "
            "returns)."
        )
        # AutoGraph would otherwise rewrite the message into an "in user code:" listing of
        # the frames of the tf.function; this attribute makes it pass the error as it is.
        symbolic.ag_pass_through = True
        raise symbolic from None


def _agree(arrays: list[np.ndarray], atol: float) -> bool:
    first = arrays[0]
    for other in arrays[1:]:
        if other.shape != first.shape:
            return False
        if atol == 0.0:
            if not np.array_equal(first, other, equal_nan=first.dtype.kind == "f"):
                return False
        elif not np.allclose(first, other, rtol=0.0, atol=atol, equal_nan=True):
            return False
    return True


def _title(value, rows: tuple[ReplicaRow, ...]) -> str:
    kind = rows[0].kind
    if kind == SINGLE:
        what = "tf.Variable" if "Variable" in type(value).__name__ else "tf.Tensor"
        return f"{what} (not distributed): one copy"
    return f"{kind}: {len(rows)} replicas"


def _notes(value, rows: tuple[ReplicaRow, ...]) -> tuple[str, ...]:
    kind = rows[0].kind
    if kind == MIRRORED and not rows[0].in_sync:
        return (
            "The mirrored copies differ: replicas updated their own copies with different "
            "values. Give the variable an aggregation (tf.VariableAggregation.SUM or MEAN) so "
            "updates made inside strategy.run are combined, or assign outside strategy.run.",
        )
    if kind == SYNC_ON_READ:
        value = _unwrap_keras(value)
        aggregation = value.aggregation.name
        total = summarize(_to_numpy(value.read_value()))
        return (
            f"Copies are meant to differ; reading it outside strategy.run combines them "
            f"with {aggregation}: {total}.",
        )
    return ()


def _inspect_model(model, atol: float) -> ReplicaTable:
    rows = []
    for weight in model.weights:
        copies = _rows(weight, weight.path, atol)
        first = copies[0]
        devices = ", ".join(row.device for row in copies)
        rows.append(
            ReplicaRow(
                name=first.name,
                kind=first.kind,
                replica=None,
                device=devices,
                dtype=first.dtype,
                shape=first.shape,
                summary=first.summary,
                in_sync=first.in_sync,
                array=first.array,
            )
        )
    if not rows:
        raise ValueError(
            f"model {model.name!r} has no weights yet: build it first (give it a "
            "keras.Input, or call it once on a batch)."
        )
    kinds = sorted({row.kind for row in rows})
    title = f"Keras model {model.name!r}: {len(rows)} weights, {', '.join(kinds)}"
    return ReplicaTable(title=title, rows=tuple(rows), notes=("value: replica 0's copy",))
