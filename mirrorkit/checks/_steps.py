"""What the checks that run a learner's training step share: the model, and the comparison."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from mirrorkit._validate import describe, refuse

_LOSS_KINDS = "a Keras loss name, a keras.losses.Loss or a function loss(y_true, y_pred)"


def resolve_loss(loss) -> Callable:
    """The function ``loss(y_true, y_pred)`` that gives one value per example.

    From a Keras loss name, a ``keras.losses.Loss`` (its reduction ignored) or a function.

    Example:
        >>> import numpy as np
        >>> resolve_loss("mse")(np.zeros((2, 1)), np.ones((2, 1))).numpy().tolist()
        [1.0, 1.0]
        >>> resolve_loss("msq")
        Traceback (most recent call last):
        ...
        ValueError: loss must be a Keras loss name, a keras.losses.Loss or a function loss(y_true, y_pred), got 'msq' (loss='msq' is not a Keras loss name: use a name such as 'mse'): write loss='mse' or loss='sparse_categorical_crossentropy'.
    """  # noqa: E501
    import keras

    if isinstance(loss, str):
        try:
            fn = keras.losses.get(loss)
        except ValueError:
            refuse(
                "loss",
                must=_LOSS_KINDS,
                got=f"{loss!r} (loss={loss!r} is not a Keras loss name: use a name such as 'mse')",
                write="loss='mse' or loss='sparse_categorical_crossentropy'",
                error=ValueError,
            )
        return fn.call if isinstance(fn, keras.losses.Loss) else fn
    if isinstance(loss, keras.losses.Loss):
        return loss.call  # the per-example values, before any reduction
    if callable(loss):
        return loss
    refuse("loss", loss, must=_LOSS_KINDS, write="loss='mse'")


def build_model(tf, model_fn, x, argument: str = "batch"):
    """``model_fn()``, checked to be a new Keras model, built on one example of ``x``.

    ``argument`` names the data in a refusal (``batch``, or ``data`` for accumulation).
    """
    import keras

    model = model_fn()
    if not isinstance(model, keras.Model):
        got = f"a function returning {describe(model)}"
        write = "model_fn=build_model, a function that builds the model; end it with `return model`"
        refuse(
            "model_fn",
            model_fn,
            must="a function returning a new Keras model",
            write=write,
            got=got,
        )
    if not model.built:  # a model without keras.Input: built on one example of x
        try:
            model(tf.nest.map_structure(lambda a: a[:1], x))
        except Exception as error:  # noqa: BLE001 - Keras's own words, named below
            _refuse_inputs(model, x, error, argument)
    return model


def _structure(x) -> str:
    """What ``x`` is, in a few words: "a dict with keys 'a', 'b'", "a tuple of 2", "an array"."""
    if isinstance(x, dict):
        return "a dict with keys " + ", ".join(repr(k) for k in x)
    if isinstance(x, list | tuple):
        return f"a {type(x).__name__} of {len(x)} arrays"
    return f"one array of shape {tuple(getattr(x, 'shape', ()))}"


def _refuse_inputs(model, x, error, argument: str) -> None:
    """Refuse a batch whose ``x`` the model cannot take, naming the model's shape."""
    names = [getattr(t, "name", "") for t in getattr(model, "inputs", None) or []]
    if isinstance(x, dict) and not names:
        fix = (
            "x as the one array its first layer takes, or build the model from "
            "keras.Input(shape, name=KEY) layers (a functional model) and key x by those names"
        )
    elif names:
        fix = f"x structured as the model's inputs ({', '.join(map(repr, names))})"
    else:
        fix = "x as the model's call(x) takes it"
    refuse(
        argument,
        must=f"a batch (x, y) whose x the model takes; model_fn builds {describe_model(model)}",
        got=f"x as {_structure(x)}, which the model cannot take (Keras: {type(error).__name__})",
        write=f"{argument}=(x, y) with {fix}",
    )


def check_layers(model) -> None:
    """Refuse layers whose output on one example depends on more than that example."""
    import keras

    found, fixes = [], []
    # Every layer, nested ones too; Keras 3 has no public walk of a model's sublayers.
    for layer in model._flatten_layers(include_self=False):
        what = f"'{layer.name}' ({type(layer).__name__})"
        if isinstance(layer, keras.layers.BatchNormalization):
            found.append(
                f"{what} normalizes by the statistics of its batch, which differ per replica"
            )
            fixes.append("leave BatchNormalization out")
        elif any(isinstance(v, keras.random.SeedGenerator) for v in vars(layer).values()):
            found.append(f"{what} draws random numbers in training, different ones per replica")
            fixes.append(f"build {type(layer).__name__}(0.0) instead")
    if found:
        got = f"a model where layer {'; layer '.join(found)}, which changes the gradient for a "
        got += "reason other than the loss"
        fix = " and ".join(dict.fromkeys(fixes))
        write = f"a model_fn for the check only that builds the same model, but let it {fix}"
        must = "a function building a model that acts the same on every replica"
        refuse("model_fn", must=must, got=got, write=write, error=ValueError)


def per_example_values(tf, per_example_loss, y, prediction):
    """One loss per example: with several outputs, the sum of each output's loss (as fit adds).

    ``y`` has the structure of ``prediction`` (a dict with the same keys, or a list).
    """
    outputs = tf.nest.flatten(prediction)
    labels = tf.nest.flatten(y) if len(outputs) > 1 else [y]
    if len(labels) != len(outputs):
        raise ValueError(f"{len(labels)} labels for {len(outputs)} outputs")
    total = 0.0
    for label, output in zip(labels, outputs, strict=True):
        values = per_example_loss(tf.convert_to_tensor(label), output)
        total += tf.reshape(tf.cast(tf.convert_to_tensor(values), tf.float32), [-1])
    return total


def describe_model(model) -> str:
    """The model's shape in words: its kind, inputs and outputs.

    Example:
        >>> import keras
        >>> describe_model(keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)]))
        'a Sequential model with 1 input and 1 output'
    """
    import keras

    if isinstance(model, keras.Sequential):
        kind = "a Sequential model"
    elif getattr(model, "_is_graph_network", False) or type(model).__name__ == "Functional":
        kind = "a functional model"
    else:
        kind = f"a subclassed model ({type(model).__name__})"
    try:
        inputs, outputs = model.inputs, model.outputs
    except (AttributeError, ValueError):
        inputs = outputs = None
    if not inputs or not outputs:
        return f"{kind} without keras.Input" if isinstance(model, keras.Sequential) else kind

    def count(things, word, structure):
        named = " (named, a dict)" if isinstance(structure, dict) else ""
        return f"{len(things)} {word}{'' if len(things) == 1 else 's'}{named}"

    ins = count(inputs, "input", getattr(model, "_inputs_struct", None))
    outs = count(outputs, "output", getattr(model, "_outputs_struct", None))
    return f"{kind} with {ins} and {outs}"


def flat_float64(arrays) -> np.ndarray:
    """The arrays end to end, as one float64 vector."""
    return np.concatenate([np.ravel(a) for a in arrays]).astype(np.float64)


def gradient_ratio(applied: np.ndarray, reference: np.ndarray) -> float:
    """How many times ``reference`` the vector ``applied`` is, along ``reference``."""
    norm = float(reference @ reference)
    if norm == 0:
        return 1.0 if not np.any(applied) else math.inf
    return float(applied @ reference / norm)
