"""What the checks that run a learner's training step share: the model, and the comparison."""

from __future__ import annotations

import math

import numpy as np

from mirrorkit._validate import describe, refuse


def build_model(tf, model_fn, x):
    """``model_fn()``, checked to be a new Keras model, built on one example of ``x``."""
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
    if not model.built:
        model(tf.nest.map_structure(lambda a: a[:1], x))
    return model


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


def flat_float64(arrays) -> np.ndarray:
    """The arrays end to end, as one float64 vector."""
    return np.concatenate([np.ravel(a) for a in arrays]).astype(np.float64)


def gradient_ratio(applied: np.ndarray, reference: np.ndarray) -> float:
    """How many times ``reference`` the vector ``applied`` is, along ``reference``."""
    norm = float(reference @ reference)
    if norm == 0:
        return 1.0 if not np.any(applied) else math.inf
    return float(applied @ reference / norm)
