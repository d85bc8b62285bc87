"""The learner's ``compute_loss``, called once: what is wrong with it or what it returned.

Its mistakes then read as a sentence, before ``tf.function`` would wrap them in its own
traceback text ("in user code: ...").

Example:
    >>> def tutorial_loss(labels, predictions):
    ...     return labels - predictions
    >>> other_signature(tutorial_loss).split(". ")[1]
    'Wrap it in one line: pass compute_loss=lambda model, x, y: tutorial_loss(y, model(x, training=True))'
"""  # noqa: E501 - a doctest's expected line

from __future__ import annotations

import inspect

import numpy as np

from mirrorkit.checks.result import NOT_ATTEMPTED
from mirrorkit.report.values import error_lines


def loss_problem(tf, value) -> str | None:
    """What is wrong with what ``compute_loss`` returned, or None for a loss tensor."""
    if value is None:
        return (
            "compute_loss returned None: end it with `return loss`, the scalar loss of "
            "this replica."
        )
    if isinstance(value, tuple | list | dict):
        return (
            f"compute_loss returned a {type(value).__name__}: return only the loss, one "
            "scalar tensor; compute gradients and metrics outside it."
        )
    try:
        value = tf.convert_to_tensor(value)
    except (TypeError, ValueError):
        return (
            f"compute_loss returned a {type(value).__name__}, not a tensor: return the "
            "loss computed from model(x)."
        )
    empty = value.shape.rank == 1 and value.shape[0] == 0
    if value.shape.rank != 0 and not empty:
        return (
            f"compute_loss returned a loss of shape {value.shape}, not a scalar: reduce "
            "the per-example losses, e.g. tf.nn.compute_average_loss(per_example, "
            "global_batch_size=GLOBAL_BATCH)."
        )
    return None


def scalar_loss(tf, value, empty_losses: list, problems: list):
    """The loss one replica differentiates; a problem is noted and its loss is 0."""
    problem = loss_problem(tf, value)
    if problem is not None:
        problems.append(problem)
        return tf.constant(0.0)
    value = tf.convert_to_tensor(value)
    if value.shape.rank == 1:
        # A Keras loss returns its empty per-example values, not 0, for an empty batch.
        empty_losses.append(True)
        return tf.reduce_sum(value)
    return value


def probe_compute_loss(tf, compute_loss, model, x, y) -> str | None:
    """Call ``compute_loss`` once, eagerly, on one replica's share; what is wrong, or None.

    Its mistakes then read as a sentence, before ``tf.function`` would wrap them in its
    own traceback text ("in user code: ...").
    """
    if compute_loss is Ellipsis:
        return NOT_ATTEMPTED.message
    if not callable(compute_loss):
        return (
            f"compute_loss must be a function compute_loss(model, x, y) returning the loss, "
            f"got {type(compute_loss).__name__}."
        )
    try:
        inspect.signature(compute_loss).bind(model, x, y)
    except TypeError:
        return other_signature(compute_loss)
    except ValueError:  # no signature to read (a builtin): let the call tell
        pass
    try:
        value = compute_loss(model, x, y)
    except Exception as error:  # noqa: BLE001 - the learner's code: a verdict, not a traceback
        return (
            f"compute_loss(model, x, y) failed on one replica's share of the batch "
            f"(x of shape {shapes(x)}, y of shape {shapes(y)}): {why(error)}. Check that "
            "the model takes x as it is (the same features as the data) and that the loss "
            "compares model(x) with y."
        )
    return loss_problem(tf, value)


def other_signature(compute_loss) -> str:
    """What to write when ``compute_loss`` does not take ``(model, x, y)``: a one-line wrapper."""
    shown = getattr(compute_loss, "__name__", type(compute_loss).__name__)
    name = shown if shown.isidentifier() else "your_loss"
    signature = inspect.signature(compute_loss)
    needed = [p for p in signature.parameters.values() if p.default is p.empty]
    args = "y, model(x, training=True)" if len(needed) == 2 else "<its arguments, from x and y>"
    return (
        f"compute_loss must take three arguments, compute_loss(model, x, y); yours is "
        f"{shown}{signature}. Wrap it in one line: pass "
        f"compute_loss=lambda model, x, y: {name}({args})"
    )


def why(error: BaseException) -> str:
    """'TypeName: what went wrong', in one line of at most 200 characters."""
    lines = error_lines(error)
    text = f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
    return text.rstrip(".") if len(text) <= 200 else text[:197] + "..."


def shapes(structure) -> str:
    import tensorflow as tf

    shapes = [tuple(np.shape(leaf)) for leaf in tf.nest.flatten(structure)]
    return str(shapes[0]) if len(shapes) == 1 else str(shapes)
