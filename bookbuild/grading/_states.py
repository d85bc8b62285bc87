"""Answers that cross as values: what a variable or a ``strategy.run`` result holds.

Where an exercise's answer is state (chapter 1: a mirrored variable, per-replica values),
the student's process describes it as data (:func:`describe`): its kind, and for every
replica's copy the dtype, shape and bytes of what it holds. The judge, which runs no code
of the submission, builds real ``tf.distribute`` values from that data under its own
strategy (:func:`rebuild`) and runs the chapter's check on them unchanged, so every
mistake is named as it is beside the answer. Anything else crosses as its type's name, the
only thing these checks read of it. Each part is checked on the way in: a dtype from
TensorFlow's numeric ones, a shape that matches its bytes, at most :data:`MAX_NUMBERS`
numbers, a kind from a closed set.

Example:
    >>> describe(0.5, None)
    {'kind': 'python', 'value': 0.5}
    >>> rebuild({'kind': 'container', 'type': 'list'}, None)
    []
"""

from __future__ import annotations

from bookbuild.grading._wire import ExportError, decode, encode, plain, stand_in, type_name

MAX_NUMBERS = 1 << 14  # numbers one copy may hold: these exercises' answers hold a few
DISTRIBUTED = ("SyncOnReadVariable", "MirroredVariable", "Mirrored", "PerReplica")
CONTAINERS = {"list": list, "tuple": tuple, "dict": dict}


def describe(value, strategy, depth: int = 0) -> dict:
    """The data that stands for ``value`` (the student's process).

    Args:
        value: The answer, or one replica's copy of it.
        strategy: The chapter's strategy: a distributed value records whether it is this
            strategy's (the checks ask).
        depth: 1 for a replica's copy (copies of copies are not followed).

    Raises:
        ExportError: If an array is larger than :data:`MAX_NUMBERS` or not numeric.
    """
    import keras
    import numpy as np
    import tensorflow as tf

    if value is Ellipsis:
        return {"kind": "ellipsis"}
    if isinstance(value, keras.Variable):
        value = value.value  # its tf.Variable, as mk.inspect reads it
    if (record := plain(value, 200)) is not None:
        return record
    name = _kind_of(value)
    if name and depth == 0:
        made = getattr(value, "distribute_strategy", None)
        return {
            "kind": "distributed",
            "class": name,
            "components": [describe(c, strategy, 1) for c in value.values],
            "aggregation": getattr(getattr(value, "aggregation", None), "name", None),
            "strategy": "chapter" if made is None or made is strategy else "other",
        }
    if isinstance(value, tf.Variable) and not name:
        return {"kind": "variable", **_array(value.numpy())}
    if isinstance(value, tf.Tensor) and hasattr(value, "numpy"):
        return {"kind": "tensor", **_array(value.numpy())}
    if isinstance(value, np.ndarray | np.generic):
        return {"kind": "numpy", **_array(np.asarray(value))}
    if isinstance(value, keras.layers.Layer):
        return {"kind": "layer", "type": type_name(value)}
    for label, container in CONTAINERS.items():
        if isinstance(value, container):
            return {"kind": "container", "type": label}
    return {"kind": "object", "type": type_name(value)}


def rebuild(record, strategy):
    """A real value holding what ``record`` describes (the judge).

    Raises:
        ExportError: If the record is malformed, or asks for more replicas than exist here.
    """
    import keras
    import tensorflow as tf

    kind = record.get("kind") if isinstance(record, dict) else None
    if kind == "ellipsis":
        return Ellipsis
    if kind == "python" and plain(record.get("value"), 200) is not None:
        return record["value"]
    if kind == "distributed":
        return _distributed(record, strategy)
    if kind in ("variable", "tensor", "numpy"):
        array = _numbers(record)
        if kind == "numpy":
            return array
        return tf.Variable(array) if kind == "variable" else tf.constant(array)
    if kind == "container" and record.get("type") in CONTAINERS:
        return CONTAINERS[record["type"]]()
    if kind in ("layer", "object") and isinstance(record.get("type"), str):
        return stand_in(record["type"], (keras.layers.Layer,) if kind == "layer" else ())
    raise ExportError("the exported answer is not one the grader reads")


def _kind_of(value) -> str | None:
    """The distributed class ``value`` is, from :data:`DISTRIBUTED`, or None."""
    names = {cls.__name__ for cls in type(value).__mro__}
    if "DistributedValues" not in names:
        return None
    return next((name for name in DISTRIBUTED if name in names), "PerReplica")


def _distributed(record: dict, strategy):
    import tensorflow as tf
    from tensorflow.python.distribute import values as values_lib

    name, parts = record.get("class"), record.get("components")
    if name not in DISTRIBUTED or not isinstance(parts, list) or not parts:
        raise ExportError("the exported distributed value is not one the grader reads")
    devices = list(strategy.extended.worker_devices)
    if len(parts) > len(devices):
        raise ExportError(f"it has {len(parts)} copies, more than the {len(devices)} devices here")
    if record.get("strategy") != "chapter" or len(parts) != len(devices):
        strategy = tf.distribute.MirroredStrategy(devices[: len(parts)])
    if name.endswith("Variable"):
        return _variable(name, parts, record.get("aggregation"), strategy)
    made = []
    for device, part in zip(strategy.extended.worker_devices, parts, strict=True):
        with tf.device(device):
            made.append(rebuild(part, None) if part.get("kind") != "distributed" else None)
    return (values_lib.Mirrored if name == "Mirrored" else values_lib.PerReplica)(tuple(made))


def _variable(name: str, parts: list, aggregation, strategy):
    import tensorflow as tf

    if any(not isinstance(p, dict) or p.get("kind") != "variable" for p in parts):
        raise ExportError("the exported variable's copies are not variables")
    arrays = [_numbers(p) for p in parts]
    if aggregation not in tf.VariableAggregation.__members__:
        raise ExportError("the exported variable's aggregation is not one TensorFlow has")
    sync = tf.VariableSynchronization
    with strategy.scope():
        variable = tf.Variable(
            arrays[0],
            synchronization=sync.ON_READ if name == "SyncOnReadVariable" else sync.AUTO,
            aggregation=tf.VariableAggregation[aggregation],
        )
    for copy, array in zip(variable.values, arrays, strict=True):
        copy.assign(array)  # each replica's copy as the student's held it
    return variable


def _array(array) -> dict:
    import tensorflow as tf

    try:
        dtype = tf.dtypes.as_dtype(array.dtype)
    except TypeError:
        dtype = None
    if dtype is None or not (dtype.is_floating or dtype.is_integer or dtype.is_bool):
        raise ExportError(f"it holds {array.dtype} values: the exercise asks for numbers")
    if array.size > MAX_NUMBERS:
        raise ExportError(f"it holds {array.size} numbers, more than {MAX_NUMBERS}")
    return {"dtype": dtype.name, "shape": list(array.shape), "data": encode(array.tobytes())}


def _numbers(record: dict):
    import numpy as np
    import tensorflow as tf

    try:
        dtype = tf.dtypes.as_dtype(record["dtype"])
        shape = [int(n) for n in record["shape"]]
        data = decode(record["data"])
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise ExportError("the exported array is not one the grader reads") from error
    size = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if not (dtype.is_floating or dtype.is_integer or dtype.is_bool) or min(shape, default=0) < 0:
        raise ExportError("the exported array's dtype or shape is not one the grader reads")
    numpy_dtype = np.dtype(dtype.as_numpy_dtype)
    if size > MAX_NUMBERS or len(data) != size * numpy_dtype.itemsize:
        raise ExportError("the exported array's bytes do not match its shape")
    return np.frombuffer(data, dtype=numpy_dtype).reshape(shape).copy()
