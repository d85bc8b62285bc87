"""What a run sends to its workers: the function and its arguments, checked and pickled."""

from __future__ import annotations

import inspect
import os
import reprlib
import sys
from collections.abc import Callable
from typing import Any

from mirrorkit._validate import refuse, require_callable, require_items


def function_payload(function: Any, args: Any, kwargs: Any) -> dict:
    """The payload of ``run(function, args, kwargs)``, or a TypeError before any process starts.

    Refused: ``args`` that is not a sequence, ``kwargs`` that is not a dict of names, a
    ``function`` that cannot be called as ``function(context, *args, **kwargs)`` (a Keras
    model, a script's name, what a function returned, a function without the context), and
    a TensorFlow or Keras object in ``args`` or ``kwargs``, however deep in lists and dicts
    (a model, layer, optimizer, variable, tensor, strategy or dataset cannot travel).

    Example:
        >>> from mirrorkit.cluster._payload import function_payload
        >>> function_payload(len, [], None)["args"]
        ()
        >>> function_payload(len, "data.csv", None)
        Traceback (most recent call last):
        ...
        TypeError: args must be a list, got str 'data.csv': write args=('data.csv',) for one argument, or use kwargs={'name': value}.
    """  # noqa: E501
    write = f"args=({reprlib.repr(args)},) for one argument, or use kwargs={{'name': value}}"
    args = require_items("args", args, write=write, allow_empty=True)
    if kwargs is not None and (
        not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs)
    ):
        must = "a dict of argument names to values"
        refuse("kwargs", kwargs, must=must, write="kwargs={'epochs': 3}")
    args, kwargs = tuple(args), dict(kwargs or {})
    _refuse_what_cannot_be_called(function, args, kwargs)
    for i, value in enumerate(args):
        _refuse_tensorflow_objects(f"args[{i}]", value)
    for key, value in kwargs.items():
        _refuse_tensorflow_objects(f"kwargs[{key!r}]", value)
    return {"kind": "function", "function": function, "args": args, "kwargs": kwargs}


def _refuse_what_cannot_be_called(function: Any, args: tuple, kwargs: dict) -> None:
    """Refuse, before any process starts, what cannot be called as ``function(context, ...)``."""
    keras = sys.modules.get("keras")
    if keras is not None and isinstance(function, keras.Model):
        refuse(
            "function",
            must="a training function",
            got=f"a Keras model ({type(function).__name__}), which cannot travel to the workers",
            write="def train(context): that builds the model under context.strategy.scope() "
            "and fits it, then run(train)",
        )
    write = (
        f"run(train) for a function; for a script file use run_script({function!r})"
        if isinstance(function, str | os.PathLike)
        else "run(train) for a function; pass the function itself, run(train), not what it "
        "returns, run(train())"
    )
    require_callable("function", function, write=write)
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without a signature: let it run
        return
    try:
        signature.bind(None, *args, **kwargs)
        return
    except TypeError as error:
        why = str(error)
    name = getattr(function, "__name__", type(function).__name__)
    extra = ", ".join([*(repr(a) for a in args), *(f"{k}=..." for k in kwargs)])
    call = f"{name}(context{', ' + extra if extra else ''})"
    refuse(
        "function",
        must="callable with the worker's context (each worker calls it with its "
        "mirrorkit.WorkerContext first, then args and kwargs)",
        got=f"{name}{signature}, which cannot be called as {call} ({why})",
        write="lambda context: ..." if name == "<lambda>" else f"def {name}(context, ...)",
    )


_INSIDE = "inside train, under context.strategy.scope()"
_BUILD = (
    "and def train(context, units): that builds the {what} " + _INSIDE + "; pass what builds "
    "the {what} (a plain function, its sizes, a file path), never the {what} itself"
)
_DATA = "with what builds the dataset (a file path, an array, a plain function) and build it "
# Each kind of TensorFlow or Keras object: what it is, and how a run that passes what builds
# it instead reads: run(train, args=(<value>,)) or kwargs={<key>: <value>}, then the rest.
_KINDS = (
    ("keras", "Model", "a Keras model", "units", "16", _BUILD.format(what="model")),
    ("keras", "layers.Layer", "a Keras layer", "units", "16", _BUILD.format(what="layer")),
    (
        "keras",
        "optimizers.Optimizer",
        "a Keras optimizer",
        "learning_rate",
        "0.001",
        "and build the optimizer " + _INSIDE,
    ),
    (
        "keras",
        "metrics.Metric",
        "a Keras metric",
        "metric",
        "'accuracy'",
        "and build it " + _INSIDE,
    ),
    *(
        (module, "Variable", what, "value", "variable.numpy()", "and make the variable " + _INSIDE)
        for module, what in (("keras", "a Keras variable"), ("tensorflow", "a tf.Variable"))
    ),
    (
        "tensorflow",
        "distribute.Strategy",
        "a tf.distribute strategy",
        "",
        "",
        "without it: inside train, context.strategy is the worker's own strategy",
    ),
    (
        "tensorflow",
        "data.Dataset",
        "a tf.data dataset",
        "path",
        "'data.csv'",
        _DATA + "inside train",
    ),
    (
        "tensorflow",
        "distribute.DistributedDataset",
        "a distributed dataset",
        "path",
        "'data.csv'",
        _DATA + "and distribute it inside train with context.strategy",
    ),
    ("tensorflow", "Tensor", "a tensor", "values", "tensor.numpy()", "to send its values"),
    (
        "tensorflow",
        "__internal__.CompositeTensor",
        "a tensor",
        "values",
        "tensor.to_list()",
        "to send its values as lists",
    ),
    (
        "tensorflow",
        "__internal__.tracking.Trackable",
        "a TensorFlow object holding variables",
        "units",
        "16",
        "with what builds it (a plain function, its sizes, a file path) and build it " + _INSIDE,
    ),
)


def _refuse_tensorflow_objects(name: str, value: Any, seen: set | None = None) -> None:
    """Refuse a TensorFlow or Keras object in an argument, however deep in lists and dicts.

    Pickled here and rebuilt in a worker before its cluster forms, such an object would start
    the worker's TensorFlow too early (TensorFlow then refuses to join the cluster), if it
    can be pickled at all: checked by type, before any process starts.
    """
    seen = set() if seen is None else seen
    if id(value) in seen or len(seen) > 10_000:
        return
    seen.add(id(value))
    if isinstance(value, list | tuple | set | frozenset):
        for i, item in enumerate(value):
            _refuse_tensorflow_objects(f"{name}[{i}]", item, seen)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            _refuse_tensorflow_objects(f"{name}[{key!r}]", item, seen)
        return
    kind = _kind_of(value)
    if kind is None:
        return
    what, key, example, rest = kind
    passing = (
        f"kwargs={{{key!r}: {example}}}" if name.startswith("kwargs") else f"args=({example},)"
    )
    refuse(
        name,
        must="a plain value (numbers, text, lists, NumPy arrays, file paths, functions)",
        got=f"{what} ({type(value).__name__}), which cannot travel to the workers (each is "
        "its own process, whose TensorFlow starts only when its cluster forms; a TensorFlow "
        "or Keras object that holds variables or belongs to this process's TensorFlow "
        "runtime cannot move there)",
        write=f"run(train, {passing}) {rest}" if example else f"run(train) {rest}",
    )


def _kind_of(value: Any) -> tuple[str, str, str, str] | None:
    """The row of :data:`_KINDS` (but the type) of a TensorFlow or Keras object, else None."""
    for module_name, path, *kind in _KINDS:
        found = sys.modules.get(module_name)  # not imported: none of its objects can exist
        for part in path.split(".") if found is not None else ():
            found = getattr(found, part, None)
        if isinstance(found, type) and isinstance(value, found):
            return tuple(kind)
    return None


def dump_payload(payload: dict, function: Callable | None = None) -> bytes:
    """``payload`` pickled by value, or a TypeError naming the part that cannot travel.

    ``function``'s own module is sent by value too when it is a notebook's or a test's.

    Example:
        >>> import pickle
        >>> from mirrorkit.cluster._payload import dump_payload
        >>> pickle.loads(dump_payload({"kind": "script", "args": ["--epochs", "3"]}))["args"]
        ['--epochs', '3']
    """
    import cloudpickle

    module = _module_of(function) if function is not None else None
    if module is not None:
        cloudpickle.register_pickle_by_value(module)
    try:
        return cloudpickle.dumps(payload)
    except Exception as error:  # noqa: BLE001 - pickling fails in many ways; name the part
        raise TypeError(_unpicklable(payload, error)) from None
    finally:
        if module is not None:
            cloudpickle.unregister_pickle_by_value(module)


def _module_of(function: Callable) -> Any:
    """The module to send by value with ``function`` (a notebook's or a test's), if any."""
    name = getattr(function, "__module__", None)
    module = sys.modules.get(name or "")
    if module is None or name == "__main__" or name.split(".")[0] == "mirrorkit":
        return None
    file = getattr(module, "__file__", None) or ""
    if "site-packages" in file or not file:
        return None
    return module


def _unpicklable(payload: dict, error: Exception) -> str:
    """Which part of a run's payload cannot travel to the workers, and what to do instead."""
    import cloudpickle

    parts = [("the function", payload.get("function"))]
    parts += [(f"args[{i}]", value) for i, value in enumerate(payload.get("args", ()))]
    parts += [(f"kwargs[{k!r}]", value) for k, value in payload.get("kwargs", {}).items()]
    culprit = "the function (or something it uses from its notebook)"
    for name, value in parts:
        try:
            cloudpickle.dumps(value)
        except Exception:  # noqa: BLE001
            culprit = f"{name} ({type(value).__name__})"
            break
    return (
        f"{culprit} cannot be sent to the worker processes ({type(error).__name__}: "
        f"{str(error).splitlines()[0] if str(error) else 'not picklable'}). Each worker is its "
        "own process and gets the function and its arguments by value; what is tied to this "
        "process's TensorFlow runtime, such as a tf.distribute strategy or a tf.data dataset, "
        "cannot travel. Pass plain values (numbers, lists, NumPy arrays, file paths) and build "
        "the strategy's objects inside the function: ctx.strategy is the worker's strategy."
    )
