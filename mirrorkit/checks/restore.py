"""Does a learner's restore give back the saved model, bit for bit, where it was asked for?

Example:
    >>> import mirrorkit as mk
    >>> mk.check_restore(lambda path: None, "ckpt-1", None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: reference must be the compiled Keras model that was saved (with its optimizer), ...
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable

from mirrorkit._validate import refuse
from mirrorkit.checks._restore_records import drawn_checkpoint, restored_record, saved_record
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
    records = [restored_record(restore, path, reference, strategy)]
    saved = [saved_record(reference)]
    if "failed" not in records[0]:
        with tempfile.TemporaryDirectory(prefix="mirrorkit-restore-") as folder:
            drawn = drawn_checkpoint(reference, path, folder, seed=0)
            if drawn is not None:  # saved under other names: no other checkpoint to try
                records.append(restored_record(restore, drawn[0], reference, strategy))
                saved.append(drawn[1])
    where = None if strategy is None else type(strategy).__name__
    return judge_restore(saved, records, where)


def judge_restore(saved: list[dict], restored: list[dict], where: str | None) -> CheckResult:
    """The verdict on a restore from records alone: one restored record per saved one.

    The first pair is judged in full (weights, where they live, the optimizer's step count
    and variables); each later one is another checkpoint the same ``restore`` was given,
    which it must give back too, or it does not read its path.

    Args:
        saved: What each checkpoint holds (:func:`~mirrorkit.checks._restore_records.saved_record`).
        restored: What ``restore`` gave back for each (``restored_record``).
        where: ``None`` to restore on one device, else the strategy's class name.

    Returns:
        A :class:`~mirrorkit.CheckResult`.

    Example:
        >>> judge_restore([{"weights": [], "steps": 1, "optimizer": []}],
        ...               [{"failed": "restore raised OSError: gone."}], None).message
        'restore raised OSError: gone.'
    """
    first = _judged(saved[0], restored[0], where)
    if isinstance(first, CheckResult):
        return first
    for other, record in zip(saved[1:], restored[1:], strict=True):
        if record.get("weights") != other["weights"]:
            return CheckResult(False, _ELSEWHERE)
    place = "on one device" if where is None else f"under {where}"
    return CheckResult(
        True,
        f"restored bit for bit: {len(saved[0]['weights'])} weight tensors and the optimizer's "
        f"{first} variables (step {saved[0]['steps']}), {place}.",
    )


_ELSEWHERE = (
    "restore does not read the checkpoint at its path: given another checkpoint, it "
    "returned other weights than the ones saved there (it restores a file named in the "
    "code, such as mirrored_path, or returns a model restored before). Restore from the "
    "path argument: tf.train.Checkpoint(model=model).restore(path)."
)


def _judged(saved: dict, record: dict, where: str | None) -> CheckResult | int:
    """The failed result of one restore, or the number of optimizer variables it restored."""
    if "failed" in record:
        return CheckResult(False, str(record["failed"]))
    if record.get("same"):
        return CheckResult(
            False,
            "restore returned the model that was saved (its very variables), not a model "
            "restored from path: build a new model and restore the checkpoint into it.",
        )
    weights = _weights_verdict(saved["weights"], record.get("weights"))
    if weights is not None:
        return weights
    placement = _placement_problem(record.get("placement") or {}, where)
    if placement:
        return CheckResult(False, placement)
    optimizer = record.get("optimizer")
    if not isinstance(optimizer, dict):
        return CheckResult(
            False,
            "the weights are back but the model has no optimizer, so training cannot resume: "
            "compile the model before restoring, so that the optimizer's state is restored too.",
        )
    steps, saved_steps = optimizer.get("steps"), saved["steps"]
    if steps != saved_steps:
        return CheckResult(
            False,
            f"the weights are back, but the optimizer's step count is {steps}, not "
            f"{saved_steps}: the optimizer's state was not restored. Restore into a model that "
            "is already compiled (tf.train.Checkpoint(model=model) then reaches model.optimizer), "
            "or name it: tf.train.Checkpoint(model=model, optimizer=model.optimizer). "
            "Weights-only files (.weights.h5) keep no optimizer state.",
        )
    state, saved_state = optimizer.get("variables") or [], saved["optimizer"]
    if len(state) != len(saved_state):
        return CheckResult(
            False,
            f"the optimizer holds {len(state)} variables, the saved one {len(saved_state)}: "
            "compile with the same optimizer as the saved model (its class and settings).",
        )
    if state != saved_state:
        return CheckResult(
            False,
            "the weights and the step count are back, but the optimizer's other variables "
            "(its moments) are not the saved ones: compile with the same optimizer as the "
            "saved model and restore it with the model.",
        )
    return len(state)


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


def _weights_verdict(saved: list, weights) -> CheckResult | None:
    """A failed result unless every restored weight is the saved one, bit for bit."""
    weights = weights if isinstance(weights, list) else []
    if [w[:1] for w in weights] != [w[:1] for w in saved]:
        return CheckResult(
            False,
            "the restored model has another architecture than the saved one: build it with "
            "the same function that built the saved model, then restore into it.",
        )
    differ = [i for i, (a, w) in enumerate(zip(saved, weights, strict=True)) if a != w]
    if differ:
        return CheckResult(
            False,
            f"{len(differ)} of {len(saved)} weight tensors are not the saved ones: nothing was "
            "restored into them. Call tf.train.Checkpoint(...).restore(path) on the model you "
            "return, with the same names (model=..., optimizer=...) as when it was saved.",
        )
    return None


def _placement_problem(placement: dict, where: str | None) -> str | None:
    kind = placement.get("kind", "variable")
    if where is None:
        if placement.get("distributed"):
            return (
                f"the values are right, but the model's variables are {kind}s: it was restored "
                "under a strategy's scope. To continue on one device, build and restore the "
                "model outside `with strategy.scope():`."
            )
        return None
    if not placement.get("in_scope"):
        return (
            f"the values are right, but the model's variables are {kind}s made outside "
            f"this {where}'s scope: build the model inside "
            "`with strategy.scope():`, then restore into it."
        )
    return None
