"""Does a learner's restore give back the saved model, bit for bit, where it was asked for?

Example:
    >>> import mirrorkit as mk
    >>> mk.check_restore(lambda path: None, "ckpt-1", None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: reference must be the compiled Keras model that was saved (with its optimizer), ...
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable

import numpy as np

from mirrorkit._validate import refuse
from mirrorkit.checks._learner_runs import learner_error
from mirrorkit.checks.result import NOT_ATTEMPTED, CheckResult


def check_restore(restore: Callable, path, reference, *, strategy=None) -> CheckResult:
    """Check that ``restore(path)`` returns the saved model with its optimizer state.

    Calls the learner's ``restore(path)`` on a checkpoint written by ``tf.train.Checkpoint.save``
    and compares what comes back with the model that was saved: every weight and every
    optimizer variable (its step count, Adam's moments) bit for bit, and the kind of variables:
    plain ones on one device, or the strategy's distributed ones.

    Args:
        restore: The learner's ``restore(path)`` returning a Keras model whose weights and
            ``model.optimizer`` were restored from ``path`` (``...``: not attempted).
        path: The checkpoint, as ``tf.train.Checkpoint(...).save(...)`` returned it.
        reference: The model that was saved, unchanged since.
        strategy: Where the restored model must live: ``None`` for one device (plain
            variables, made outside any strategy's scope), or the ``tf.distribute.Strategy``
            whose scope it must be restored under.

    Returns:
        A :class:`~mirrorkit.CheckResult`; on a wrong answer its message names the mistake.

    Raises:
        TypeError: If ``reference`` is not a Keras model with an optimizer, or ``strategy``
            is neither None nor a ``tf.distribute.Strategy``.
        ValueError: If ``reference`` never trained: a fresh model would then look restored.

    Example:
        >>> import keras, numpy as np, tensorflow as tf, tempfile
        >>> import mirrorkit as mk
        >>> def build():
        ...     keras.utils.set_random_seed(0)
        ...     model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        ...     model.compile(optimizer="adam", loss="mse")
        ...     return model
        >>> saved = build()
        >>> saved.fit(np.ones((4, 2)), np.zeros((4, 1)), verbose=0)  # doctest: +ELLIPSIS
        <keras.src.callbacks.history.History object at ...>
        >>> path = tf.train.Checkpoint(model=saved).save(tempfile.mkdtemp() + "/ckpt")
        >>> def restore(path):
        ...     model = build()
        ...     tf.train.Checkpoint(model=model).restore(path)
        ...     return model
        >>> print(mk.check_restore(restore, path, saved).message[:38])
        restored bit for bit: 2 weight tensors
        >>> print(mk.check_restore(lambda path: build(), path, saved).message[:44])
        2 of 2 weight tensors are not the saved ones
    """
    import keras
    import tensorflow as tf

    _arguments(keras, tf, reference, strategy)
    if restore is Ellipsis:
        return NOT_ATTEMPTED
    model = _restored(keras, restore, path)
    if isinstance(model, CheckResult):
        return model
    if _shares_variables(model, reference):
        return CheckResult(
            False,
            "restore returned the model that was saved (its very variables), not a model "
            "restored from path: build a new model and restore the checkpoint into it.",
        )
    weights = _weights_verdict(reference, model)
    if weights is not None:
        return weights
    placement = _placement_problem(tf, model, strategy)
    if placement:
        return CheckResult(False, placement)
    optimizer = model.optimizer
    if optimizer is None:
        return CheckResult(
            False,
            "the weights are back but the model has no optimizer, so training cannot resume: "
            "compile the model before restoring, so that the optimizer's state is restored too.",
        )
    saved_steps = int(reference.optimizer.iterations.numpy())
    steps = int(optimizer.iterations.numpy())
    if steps != saved_steps:
        return CheckResult(
            False,
            f"the weights are back, but the optimizer's step count is {steps}, not "
            f"{saved_steps}: the optimizer's state was not restored. Restore into a model that "
            "is already compiled (tf.train.Checkpoint(model=model) then reaches model.optimizer), "
            "or name it: tf.train.Checkpoint(model=model, optimizer=model.optimizer). "
            "Weights-only files (.weights.h5) keep no optimizer state.",
        )
    if not optimizer.built:
        # Slot variables restore when they are created: the first step builds them.
        with strategy.scope() if strategy is not None else contextlib.nullcontext():
            optimizer.build(model.trainable_variables)
    saved_state = [np.asarray(v) for v in reference.optimizer.variables]
    state = list(optimizer.variables)
    if len(state) != len(saved_state):
        return CheckResult(
            False,
            f"the optimizer holds {len(state)} variables, the saved one {len(saved_state)}: "
            "compile with the same optimizer as the saved model (its class and settings).",
        )
    if not all(_same(a, v) for a, v in zip(saved_state, state, strict=True)):
        return CheckResult(
            False,
            "the weights and the step count are back, but the optimizer's other variables "
            "(its moments) are not the saved ones: compile with the same optimizer as the "
            "saved model and restore it with the model.",
        )
    elsewhere = _reads_path(keras, tf, restore, path, reference)
    if elsewhere is not None:
        return CheckResult(False, elsewhere)
    where = "on one device" if strategy is None else f"under {type(strategy).__name__}"
    return CheckResult(
        True,
        f"restored bit for bit: {len(model.weights)} weight tensors and the optimizer's "
        f"{len(state)} variables (step {steps}), {where}.",
    )


def _arguments(keras, tf, reference, strategy) -> None:
    """Refuse a ``reference`` that cannot tell a restore from none, or a wrong ``strategy``."""
    if not isinstance(reference, keras.Model) or reference.optimizer is None:
        must = "the compiled Keras model that was saved (with its optimizer)"
        refuse("reference", reference, must=must, write="reference=model, the model you saved")
    if int(reference.optimizer.iterations.numpy()) == 0:
        refuse(
            "reference",
            must="a model that trained before it was saved",
            got="a model whose optimizer took no step, so that a model not restored at all "
            "would look restored",
            write="model.fit(...) to train at least one step, save, then check with "
            "reference=model",
            error=ValueError,
        )
    if strategy is not None and not isinstance(strategy, tf.distribute.Strategy):
        must = "None (restore on one device) or the tf.distribute.Strategy to restore under"
        refuse("strategy", strategy, must=must, write="strategy=mk.make_strategy()")


def _restored(keras, restore, path):
    """The model ``restore(path)`` returns, or the failed result saying why there is none."""
    if not callable(restore):
        return CheckResult(
            False,
            f"restore is a {type(restore).__name__}, not a function: define "
            "def restore(path): ... returning the restored model.",
        )
    try:
        model = restore(str(path))
    except Exception as error:  # noqa: BLE001 - the learner's code: a verdict, not a traceback
        return CheckResult(
            False,
            f"{learner_error(error, 'restore')} A checkpoint written "
            "by tf.train.Checkpoint.save is read by tf.train.Checkpoint(...).restore(path); "
            "model.load_weights and keras.models.load_model read Keras's own files.",
        )
    if not isinstance(model, keras.Model):
        return CheckResult(
            False,
            f"restore returned {type(model).__name__}, not a Keras model: return the model "
            "you restored into.",
        )
    return model


def _weights_verdict(reference, model) -> CheckResult | None:
    """A failed result unless every weight of ``model`` is the saved one, bit for bit."""
    saved_weights = [np.asarray(w) for w in reference.weights]
    shapes = [w.shape for w in saved_weights]
    if [tuple(w.shape) for w in model.weights] != shapes:
        return CheckResult(
            False,
            "the restored model has another architecture than the saved one: build it with "
            "the same function that built the saved model, then restore into it.",
        )
    differ = [
        i
        for i, (a, w) in enumerate(zip(saved_weights, model.weights, strict=True))
        if not _same(a, w)
    ]
    if differ:
        return CheckResult(
            False,
            f"{len(differ)} of {len(shapes)} weight tensors are not the saved ones: nothing was "
            "restored into them. Call tf.train.Checkpoint(...).restore(path) on the model you "
            "return, with the same names (model=..., optimizer=...) as when it was saved.",
        )
    return None


def _same(array: np.ndarray, variable) -> bool:
    value = np.asarray(variable)
    return value.dtype == array.dtype and np.array_equal(value, array)


def _placement_problem(tf, model, strategy) -> str | None:
    variable = model.weights[0].value
    kind = type(variable).__name__
    if strategy is None:
        if isinstance(variable, tf.distribute.DistributedValues):
            return (
                f"the values are right, but the model's variables are {kind}s: it was restored "
                "under a strategy's scope. To continue on one device, build and restore the "
                "model outside `with strategy.scope():`."
            )
        return None
    if not strategy.extended.variable_created_in_scope(variable):
        return (
            f"the values are right, but the model's variables are {kind}s made outside "
            f"this {type(strategy).__name__}'s scope: build the model inside "
            "`with strategy.scope():`, then restore into it."
        )
    return None


def _shares_variables(model, reference) -> bool:
    saved = {id(v) for v in reference.weights}
    return model is reference or any(id(v) in saved for v in model.weights)


def _reads_path(keras, tf, restore, path, reference) -> str | None:
    """Why ``restore`` does not read its ``path`` (given another checkpoint), or None.

    The other checkpoint holds the saved values moved by a seeded step, under the names the
    checkpoint at ``path`` uses; a restore that reads another file, or returns a model
    restored before, gives the first values back.
    """
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(
        tf.train.load_checkpoint(str(path)).get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH")
    )
    names = {child.local_name for child in graph.nodes[0].children} - {"save_counter"}
    if not names or not names <= {"model", "optimizer"}:
        return None  # saved under other names: the probe could not write the same file
    try:
        other = _moved_copy(keras, reference)
    except Exception:  # noqa: BLE001 - a model the probe cannot copy: the check goes without it
        return None
    parts = {"model": other, "optimizer": other.optimizer}
    with tempfile.TemporaryDirectory(prefix="mirrorkit-restore-") as folder:
        checkpoint = tf.train.Checkpoint(**{name: parts[name] for name in names})
        moved = checkpoint.save(folder + "/ckpt")
        try:
            model = restore(str(moved))
        except Exception:  # noqa: BLE001 - it restored path once; another file is a fair ask
            model = None
    weights = getattr(model, "weights", None) or []
    if len(weights) == len(other.weights) and all(
        _same(np.asarray(w), v) for w, v in zip(other.weights, weights, strict=True)
    ):
        return None
    return (
        "restore does not read the checkpoint at its path: given another checkpoint, it "
        "returned other weights than the ones saved there (it restores a file named in the "
        "code, such as mirrored_path, or returns a model restored before). Restore from the "
        "path argument: tf.train.Checkpoint(model=model).restore(path)."
    )


def _moved_copy(keras, reference):
    """A one-device copy of ``reference`` whose weights and optimizer state moved (seeded)."""
    other = keras.models.clone_model(reference)
    optimizer = type(reference.optimizer).from_config(reference.optimizer.get_config())
    other.compile(optimizer=optimizer, loss=reference.loss)
    other.optimizer.build(other.trainable_variables)
    rng = np.random.default_rng(0)
    for variable, saved in zip(other.weights, reference.weights, strict=True):
        variable.assign(np.asarray(saved) + rng.normal(size=saved.shape).astype(saved.dtype))
    pairs = zip(other.optimizer.variables, reference.optimizer.variables, strict=True)
    for variable, saved in pairs:
        value = np.asarray(saved)
        step = rng.normal(size=value.shape) if value.dtype.kind == "f" else 3
        variable.assign((value + np.abs(step)).astype(value.dtype))
    return other
