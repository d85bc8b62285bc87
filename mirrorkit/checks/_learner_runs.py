"""Running a learner's step next to one device's: the shared machinery of the scaling checks.

Example:
    >>> from mirrorkit.checks._learner_runs import learner_data
    >>> learner_data([1, 2, 3], "data")
    Traceback (most recent call last):
    ...
    TypeError: data must be a pair (x, y) of NumPy arrays, got list [1, 2, 3]: write data=(x, y).
"""

from __future__ import annotations

import numpy as np

from mirrorkit._validate import refuse
from mirrorkit.checks._steps import build_model, check_layers, flat_float64
from mirrorkit.checks.result import raised
from mirrorkit.report.values import error_lines

LEARNING_RATE = 0.1


class LearnerError(Exception):
    """A mistake in the learner's code (their function failed or returned the wrong thing)."""


def learner_data(data, what: str):
    """``x`` and ``y`` as arrays from ``(x, y)``, or a TypeError / ValueError naming ``what``."""
    if not isinstance(data, tuple | list) or len(data) != 2:
        refuse(what, data, must="a pair (x, y) of NumPy arrays", write=f"{what}=(x, y)")
    x, y = (np.asarray(part) for part in data)
    if x.ndim == 0 or y.ndim == 0 or len(x) != len(y) or not len(x):
        refuse(
            what,
            must="(x, y) with the same examples in each",
            got=f"shapes {x.shape} and {y.shape}",
            write=f"{what}=(x[:n], y[:n])",
            error=ValueError,
        )
    return x, y


def reference_and_copy(tf, strategy, model_fn, x, learning_rate):
    """The one-device reference model and its copy in the strategy's scope, with SGD.

    A ``model_fn`` that is a model, or builds a model the checks cannot judge, raises.
    """
    import keras

    if isinstance(model_fn, keras.Model) or not callable(model_fn):
        refuse(
            "model_fn",
            model_fn,
            must="a function that returns a NEW Keras model",
            write="model_fn=make_model",
        )
    reference = build_model(tf, model_fn, x)
    check_layers(reference)
    initial = reference.get_weights()
    with strategy.scope():
        model = build_model(tf, model_fn, x)
        model.set_weights(initial)
        optimizer = keras.optimizers.SGD(learning_rate)
        optimizer.build(model.trainable_variables)
    return reference, model, optimizer


def mean_loss_gradient(tf, model, loss_fn, x, y) -> np.ndarray:
    with tf.GradientTape() as tape:
        values = loss_fn(tf.convert_to_tensor(y), model(x, training=True))
        mean = tf.reduce_mean(tf.cast(values, tf.float32))
    gradients = tape.gradient(mean, model.trainable_variables)
    return flat_float64([np.asarray(g, np.float64) for g in gradients])


def flat_weights(model) -> np.ndarray:
    return flat_float64([np.asarray(v, np.float64) for v in model.trainable_variables])


def run_learner(step, *args):
    """Run a traced step of the learner's code; their exceptions become one sentence."""
    try:
        return step(*args)
    except Exception as error:  # noqa: BLE001 - any failure of the learner's code
        raise LearnerError(_traced_why(error)) from None


def _traced_why(error: BaseException) -> str:
    """One sentence from an error raised while tracing, without AutoGraph's "in user code"."""
    lines = [line for line in error_lines(error) if line != "in user code:"]
    ours = [line for line in lines if line.startswith("LearnerError: ")]
    if ours:
        return ours[-1].removeprefix("LearnerError: ")
    if isinstance(error, LearnerError):
        return str(error)
    named = [line for line in lines if line.startswith(f"{type(error).__name__}: ")]
    what = named[-1] if named else raised(error)
    return f"your function failed inside strategy.run: {what.rstrip('.')}."


def same_gradient(a: np.ndarray, b: np.ndarray) -> bool:
    return float(np.linalg.norm(a - b)) <= 1e-4 * float(np.linalg.norm(b)) + 1e-6
