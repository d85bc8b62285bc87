"""A step that matches the reference loss read with the other ``from_logits``: who is wrong.

A crossentropy reads a model's outputs either as logits or as probabilities. When the
learner's step and the reference loss read them differently, their gradients differ by no
rescaling; this module finds that case and says which of the two fits the model's outputs.

Example:
    >>> import keras
    >>> from mirrorkit.checks._logits import from_logits_of
    >>> from_logits_of("sparse_categorical_crossentropy")
    False
    >>> from_logits_of(keras.losses.BinaryCrossentropy(from_logits=True))
    True
    >>> from_logits_of("mse") is None
    True
"""

from __future__ import annotations

import functools
import inspect

import numpy as np


def from_logits_of(loss) -> bool | None:
    """The ``from_logits`` that ``loss`` reads outputs with, or None if it has no such choice."""
    import keras

    if isinstance(loss, keras.losses.Loss):
        return loss.get_config().get("from_logits")
    if isinstance(loss, str):
        try:
            loss = keras.losses.get(loss)
        except ValueError:
            return None
        if isinstance(loss, keras.losses.Loss):
            return from_logits_of(loss)
    try:
        parameter = inspect.signature(loss).parameters.get("from_logits")
    except (TypeError, ValueError):
        return None
    if parameter is None or not isinstance(parameter.default, bool):
        return None
    return parameter.default


def flipped(loss):
    """The per-example function of ``loss`` read with the other ``from_logits``."""
    import keras

    other = not from_logits_of(loss)
    if isinstance(loss, keras.losses.Loss):
        config = {**loss.get_config(), "from_logits": other, "reduction": "none"}
        return type(loss).from_config(config).call
    function = keras.losses.get(loss) if isinstance(loss, str) else loss
    if isinstance(function, keras.losses.Loss):
        return flipped(function)
    return functools.partial(function, from_logits=other)


def are_probabilities(prediction, loss) -> bool:
    """Whether the outputs read as probabilities.

    They must be in [0, 1], and each row must sum to 1 unless the loss is a binary one (one
    probability per output).
    """
    values = np.asarray(prediction, np.float64)
    if values.size == 0 or values.min() < 0 or values.max() > 1:
        return False
    name = loss if isinstance(loss, str) else type(loss).__name__
    if "binary" in name.lower() or values.ndim < 2 or values.shape[-1] == 1:
        return True
    return bool(np.allclose(values.sum(axis=-1), 1.0, atol=1e-3))


def _spelling(loss, from_logits: bool) -> str:
    """How to write ``loss`` with ``from_logits``, e.g. ``SparseCategoricalCrossentropy``'s."""
    import keras

    if isinstance(loss, keras.losses.Loss):
        return f"keras.losses.{type(loss).__name__}(from_logits={from_logits})"
    name = loss if isinstance(loss, str) else getattr(loss, "__name__", "")
    camel = "".join(part.title() for part in name.split("_"))
    if isinstance(getattr(keras.losses, camel, None), type):
        return f"keras.losses.{camel}(from_logits={from_logits})"
    return f"the same loss with from_logits={from_logits}"


def message(loss, prediction) -> tuple[bool, str]:
    """(whether the learner's step is the right one, the sentence that says so).

    Called when the learner's step matches the reference ``loss`` read with the other
    ``from_logits``: the reading that fits ``prediction`` (the model's outputs) is right.
    """
    reference = from_logits_of(loss)
    learner = not reference
    probabilities = are_probabilities(prediction, loss)
    outputs = "probabilities" if probabilities else "logits"
    evidence = (
        "every value is in [0, 1] and each row sums to 1"
        if probabilities
        else f"values run from {float(np.min(prediction)):.3g} to {float(np.max(prediction)):.3g}"
    )
    named = repr(loss) if isinstance(loss, str) else type(loss).__name__
    if learner != probabilities:  # from_logits=True for logits, False for probabilities
        return True, (
            f"Your step applies the single-device gradient of the loss read with "
            f"from_logits={learner}, which is right for this model: its outputs are {outputs} "
            f"({evidence}). The reference you passed, loss={named}, reads them with "
            f"from_logits={reference}, so it is the reference that differs: pass "
            f"loss={_spelling(loss, learner)}."
        )
    return False, (
        f"Your compute_loss reads the model's outputs with from_logits={learner}, but they "
        f"are {outputs} ({evidence}): use from_logits={reference} in compute_loss, as the "
        f"reference loss={named} does."
    )
