"""Why a distributed step's gradient differs from one device's: the known loss-scaling bugs."""

from __future__ import annotations

import math

import numpy as np

from mirrorkit.checks.loss_shares import divisor
from mirrorkit.checks.step_equivalence import (
    AVERAGED_TWICE,
    KERAS_DEFAULT_UNEVEN,
    LOCAL_MEAN,
    NEGATED,
    OTHER,
    REGULARIZATION_MISSING,
    REGULARIZATION_TWICE,
    REGULARIZATION_UNSCALED,
    RIGHT,
    SCALED_TWICE,
    SUM_REDUCTION,
)
from mirrorkit.report.values import number

_GOOD_STEPS = (
    "per_example = loss_fn(y, model(x, training=True)); loss = "
    "tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)"
)
_GOOD_REGULARIZATION = "loss += tf.nn.scale_regularization_loss(tf.add_n(model.losses))"


def fit(gradient, data, reg, tolerance=1e-3):
    """Fit ``gradient ~ c * data + d * reg``; return c, d and whether the fit explains it.

    It explains it when what is left is at most ``tolerance`` of the gradient's length.

    Example:
        >>> import numpy as np
        >>> fit(np.array([2.0, 4.0]), np.array([1.0, 2.0]), None)[::2]
        (2.0, True)
    """
    columns, kinds = [], []
    for kind, column in (("data", data), ("reg", reg)):
        if column is not None and np.any(column):
            columns.append(column)
            kinds.append(kind)
    scale = max(float(np.linalg.norm(gradient)), 1e-12)
    if not columns:
        return math.nan, math.nan, float(np.linalg.norm(gradient)) <= 1e-7
    matrix = np.stack(columns, axis=1)
    coefficients, *_ = np.linalg.lstsq(matrix, gradient, rcond=None)
    residual = float(np.linalg.norm(gradient - matrix @ coefficients))
    found = dict(zip(kinds, coefficients, strict=True))
    explained = residual <= tolerance * scale + 1e-7
    return float(found.get("data", math.nan)), float(found.get("reg", math.nan)), explained


def _close(measured, predicted) -> bool:
    return all(
        math.isnan(m) or abs(m - p) <= 0.02 * abs(p) + 1e-3
        for m, p in zip(measured, predicted, strict=True)
    )


def _data_patterns(local, n, b, good, sizes_text):
    """(cause, example weights it predicts, message) for each known bug of the data loss."""

    def shares(division):  # the browser labs' arithmetic (mirrorkit.checks.loss_shares)
        return [b / divisor(division, int(s), int(b), n) for s in local]

    return [
        (RIGHT, shares("global batch"), ""),
        (
            NEGATED,
            [-1.0] * len(local),
            "The gradient points the wrong way: the loss is negated. Minimise the loss itself.",
        ),
        (
            KERAS_DEFAULT_UNEVEN,
            shares("keras default"),
            f"Each replica divides its summed loss by its OWN batch size times "
            f"{n} replicas: that is what a Keras loss with the default reduction "
            f"'sum_over_batch_size' does under tf.distribute (and "
            f"tf.nn.compute_average_loss without global_batch_size). It is right only "
            f"when the replicas get equal batches; here they got {sizes_text}, so an "
            f"example on a replica with fewer examples weighs more. Use {good}.",
        ),
        (
            LOCAL_MEAN,
            shares("local mean"),
            f"Each replica averages its loss over its local batch (a plain mean), and the "
            f"all-reduce then SUMS the {n} replicas' gradients: about {n}x too big. Divide "
            f"by the global batch instead: {good}.",
        ),
        (
            SCALED_TWICE,
            shares("keras default / N"),
            f"The loss is divided by the number of replicas twice: a Keras loss with the "
            f"default reduction already divides by num_replicas_in_sync under "
            f"tf.distribute, so do not divide it by {n} again (Keras 2-era advice).",
        ),
        (
            SCALED_TWICE,
            [1.0 / n] * len(local),
            f"The loss is divided by the number of replicas twice: "
            f"tf.nn.compute_average_loss(..., global_batch_size=GLOBAL) is already the "
            f"replica's share; do not divide it by {n} again.",
        ),
        (
            AVERAGED_TWICE,
            [1.0 / s for s in local],
            f"The loss is averaged twice: compute_loss averages over the replica's own "
            f"batch (tf.reduce_mean, a plain mean) and then divides that mean by the "
            f"global batch ({b}) again, so each example weighs 1/(its replica's batch) of "
            f"what it should. Divide the per-example losses by the global batch once: "
            f"{good}.",
        ),
        (
            AVERAGED_TWICE,
            [1.0 / (n * s) for s in local],
            f"The loss is averaged twice: a Keras loss with its default reduction already "
            f"averages over the replica's batch (and divides by the {n} replicas), and that "
            f"mean is divided by the global batch ({b}) again. Give the Keras loss "
            f"reduction='none' and divide once: {good}.",
        ),
        (
            SUM_REDUCTION,
            shares("sum"),
            f"The per-example losses are summed and never divided by the global batch "
            f"({b}): a loss with reduction='sum'. Divide by the global batch size: "
            f"{good}.",
        ),
        (
            SUM_REDUCTION,
            [b / n] * len(local),
            f"The per-example losses are summed (reduction='sum') and divided by the "
            f"{n} replicas, not by the global batch ({b}): {b / n:g}x too big. Use "
            f"{good}.",
        ),
    ]


def _data_cause(weights, sizes, global_batch, good):
    """Match the example weights of the non-empty replicas against the known bugs."""
    filled = [i for i, size in enumerate(sizes) if size]
    measured = [weights[i] for i in filled]
    local = [sizes[i] for i in filled]
    b = global_batch
    sizes_text = ", ".join(str(s) for s in sizes)
    for cause, predicted, message in _data_patterns(local, len(sizes), b, good, sizes_text):
        if _close(measured, predicted):
            return cause, message
    values = ", ".join(number(w) for w in measured)
    if measured and all(abs(w - measured[0]) <= 0.02 * abs(measured[0]) for w in measured):
        return OTHER, (
            f"Every example weighs {number(measured[0])}x what it should in the gradient: "
            f"divide the sum of per-example losses by the global batch size, {b}."
        )
    return OTHER, (
        f"Examples weigh {values}x what they should, replica by replica: divide the sum of "
        f"per-example losses by the global batch size, {b}, on every replica."
    )


def _regularization_cause(weights, n):
    measured = [w for w in weights if not math.isnan(w)]
    patterns = [
        (RIGHT, 1.0, ""),
        (
            REGULARIZATION_UNSCALED,
            float(n),
            f"The regularization is added on every replica unscaled, so the all-reduce "
            f"counts it {n} times: use {_GOOD_REGULARIZATION}.",
        ),
        (
            REGULARIZATION_MISSING,
            0.0,
            f"The regularization (model.losses) is missing from the loss: add "
            f"{_GOOD_REGULARIZATION}.",
        ),
        (
            REGULARIZATION_TWICE,
            1.0 / n,
            f"The regularization is divided by the replicas twice: "
            f"tf.nn.scale_regularization_loss already divides by {n}.",
        ),
    ]
    for cause, predicted, message in patterns:
        if _close(measured, [predicted] * len(measured)):
            return cause, message
    return OTHER, (
        "The regularization is counted "
        + ", ".join(number(w / n) for w in measured)
        + f" times per replica instead of 1/{n}: use {_GOOD_REGULARIZATION}."
    )


def _loss_name(loss) -> str:
    """How a message names the loss: 'mae' for a name, else the function's or class's name."""
    if isinstance(loss, str):
        return repr(loss)
    return getattr(loss, "__name__", None) or type(loss).__name__


def diagnose(
    *, equivalent, explained, example_weights, reg_weights, sizes, ratio, loss, precision, **tol
):
    """``(cause, message)`` for the measured step: the verdict and what to change.

    ``tol`` holds ``global_batch``; ``precision`` is a
    :class:`~mirrorkit.checks._splits.Precision`, its tolerance in words.

    Example:
        >>> from mirrorkit.checks._splits import Precision
        >>> diagnose(equivalent=False, explained=True, example_weights=[4.0, 4.0],
        ...     reg_weights=None, sizes=(4, 4), ratio=4.0, loss="mse", global_batch=8,
        ...     precision=Precision("float32", "float32", 1e-4, 1e-6))[0]
        'sum reduction'
    """
    b = tol["global_batch"]
    if equivalent:
        message = f"The distributed step applies the single-device gradient ({precision.words()})."
        if precision.mixed:
            message += (
                f" Under {precision.policy} the model computes in {precision.name}, so two "
                "right steps that add the same numbers in another order differ by about its "
                "precision: a tighter tolerance would blame rounding, not the loss."
            )
        if len(sizes) == 1:
            message += (
                " With one replica that says nothing about the replicas: a loss that ignores "
                "them (a plain mean, or a Keras loss divided by the replicas again) gives this "
                "gradient too. Compare with 2 or more replicas (mk.simulate_replicas)."
            )
        return RIGHT, message
    head = f"The distributed gradient is {number(ratio)}x the single-device one. "
    if precision.mixed:
        head = f"{head[:-2]} ({precision.words()}). "
    if not explained:
        size = f"its norm is {number(ratio)}x the single-device one's"
        if precision.mixed:
            size += f", {precision.words()}"
        return OTHER, (
            f"The distributed gradient points another way than the single-device one ({size}): "
            "it is not a rescaling of the right gradient, so the loss itself differs. Check "
            f"that compute_loss uses the loss meant here, {_loss_name(loss)}, on the "
            "predictions model(x, training=True), plus only the model's own regularization "
            "(model.losses). A term added by hand, such as a penalty on the weights, is not in "
            "the single-device loss: put it in the model (kernel_regularizer=..., or "
            "self.add_loss) so that both sides count it."
        )
    data_cause, data_message = _data_cause(example_weights, sizes, b, good_pattern(loss))
    if data_cause != RIGHT:
        message = head + data_message
        if reg_weights is not None:
            reg_cause, reg_message = _regularization_cause(reg_weights, len(sizes))
            if reg_cause != RIGHT:
                message += " Also: " + reg_message
        return data_cause, message
    if reg_weights is not None:
        reg_cause, reg_message = _regularization_cause(reg_weights, len(sizes))
        if reg_cause != RIGHT:
            return reg_cause, _regularization_head(reg_weights, len(sizes)) + reg_message
    return OTHER, head + "Compare the gradients weight by weight below."


def _regularization_head(weights, n) -> str:
    """The headline when the data loss is right and only the regularization differs.

    Example:
        >>> _regularization_head([4.0, 4.0], 4)
        'The data loss is right; the regularization is counted 4 times instead of once. '
    """
    measured = [w for w in weights if not math.isnan(w)]
    counted = sum(measured) / len(measured) if measured else math.nan
    times = "not at all" if abs(counted) < 1e-3 else f"{number(counted)} times"
    return f"The data loss is right; the regularization is counted {times} instead of once. "


def notes(sizes, b, n, mean_of_means, data_loss, cause, empty_loss) -> tuple[str, ...]:
    """The sentences under the verdict: empty replicas, even splits, averaged metrics.

    Example:
        >>> notes((1, 0), 1, 2, 0.5, 0.5, "right", False)[0]
        'Replica 1 received no example: its loss must be 0 and still take part in the all-reduce.'
    """
    found = []
    empty = [str(i) for i, s in enumerate(sizes) if s == 0]
    if empty:
        several = len(empty) > 1
        found.append(
            f"Replica{'s' if several else ''} {', '.join(empty)} received no example: "
            f"{'their' if several else 'its'} loss must be 0 and still take part in the "
            "all-reduce."
        )
    if empty_loss:
        found.append(
            "On a replica with no example compute_loss returned an empty tensor of shape "
            "(0,), not a scalar 0: a Keras loss skips its reduction on an empty batch. Its "
            "gradient is 0, but reducing the replicas' losses may fail; "
            "tf.nn.compute_average_loss returns 0 there."
        )
    if not math.isclose(mean_of_means, data_loss, rel_tol=1e-5, abs_tol=1e-7):
        found.append(
            f"A metric that averages the replicas' mean losses reports {number(mean_of_means)}, "
            f"but the mean over the global batch is {number(data_loss)}: with unequal "
            "replica batches, sum the losses and the example counts over the replicas, "
            "then divide."
        )
    return tuple(found)


def good_pattern(loss) -> str:
    """The right ``compute_loss``, written with the loss the learner passed as ``loss``.

    Example:
        >>> import keras
        >>> good_pattern("mse").split(";")[0]
        "loss_fn = keras.losses.MeanSquaredError(reduction='none')"
        >>> loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        >>> good_pattern(loss).split(";")[0]
        "loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction='none')"
    """
    import keras

    if isinstance(loss, str):
        try:
            loss = keras.losses.get(loss)
        except ValueError:
            loss = None
    name = getattr(loss, "__name__", "")
    camel = "".join(part.title() for part in name.split("_"))
    if isinstance(loss, keras.losses.Loss):
        logits = "from_logits=True, " if loss.get_config().get("from_logits") else ""
        make = f"keras.losses.{type(loss).__name__}({logits}reduction='none')"
    elif name and isinstance(getattr(keras.losses, camel, None), type):
        make = f"keras.losses.{camel}(reduction='none')"
    elif name and name != "<lambda>":
        make = name  # the learner's own per-example function
    else:
        make = "your per-example loss function"
    return f"loss_fn = {make}; {_GOOD_STEPS}"


def _fits(measured, predicted) -> bool:
    return bool(measured) and all(
        abs(m - p) <= 0.02 * abs(p) + 1e-3 for m, p in zip(measured, predicted, strict=True)
    )


def fixed_number_cause(weights, sizes, global_batch, literals, reg_weight=None) -> str | None:
    """The sentence naming a number fixed for one replica count, if one explains the weights.

    ``weights`` are the examples' weights per replica (1 is right), ``sizes`` the replicas'
    examples, ``literals`` the numbers written in the learner's code. A literal that equals
    the replicas or the global batch here is no mistake, so it explains nothing. Each rule is
    the right loss with a fixed number where the strategy's own belongs: dividing by it in
    place of the global batch, in place of the replicas, multiplying by it in place of the
    replicas, or dividing by it on top of a loss already scaled.

    Example:
        >>> fixed_number_cause([0.75, 0.75, 0.75], (8, 8, 8), 24, (32,))[:54]
        'Your loss divides by a fixed 32 where the global batch'
        >>> fixed_number_cause([1.0, 1.0], (8, 8), 16, (32,)) is None
        True
    """
    n, b = len(sizes), global_batch
    filled = [i for i, size in enumerate(sizes) if size]
    measured = [float(weights[i]) for i in filled]
    forms = ([1.0] * len(filled), [b / (n * sizes[i]) for i in filled])
    data_right = _fits(measured, [1.0] * len(measured))
    by_batch = any(math.isclose(v, b) for v in literals)
    if by_batch and reg_weight is not None and data_right and _fits([reg_weight], [n / b]):
        return (
            f"The regularization is counted {number(n / b)} times in all, not once: your "
            f"loss divides the penalty by the global batch ({b}), but the penalty is no "
            f"per-example loss. Use {_GOOD_REGULARIZATION}."
        )
    for literal in literals:
        c = float(literal) if abs(literal) >= 1 else 1.0 / float(literal)
        shown = f"{literal:g}" if abs(literal) >= 1 else f"{literal:g} (1/{c:g})"
        if math.isclose(c, n) or math.isclose(c, b) or c <= 0:
            continue
        if not data_right:
            batch_fix = (
                "divide by the examples of the global batch, computed where the loss runs: "
                "GLOBAL_BATCH (made from strategy.num_replicas_in_sync) when every batch is "
                "full, the all-reduced count of examples when one can be short"
            )
            replica_fix = "use strategy.num_replicas_in_sync, which follows the replicas"
            rules = (
                (
                    b / c,
                    f"divides by a fixed {shown} where the global batch here is {b}",
                    batch_fix,
                ),
                (n / c, f"divides by a fixed {shown} where there are {n} replicas", replica_fix),
                (c / n, f"multiplies by a fixed {shown} where there are {n} replicas", replica_fix),
                (1 / c, f"divides by a fixed {shown} on top of a loss already scaled", batch_fix),
            )
            for factor, what, fix in rules:
                if any(_fits(measured, [factor * f for f in form]) for form in forms):
                    return (
                        f"Your loss {what}, a number right for one replica count or batch "
                        f"only: {fix}, never a number written in the code."
                    )
        if reg_weight is not None and _fits([reg_weight], [n / c]):
            return (
                f"Your loss divides the penalty by a fixed {shown} where there are {n} "
                f"replicas, so it counts {number(n / c)} times: use {_GOOD_REGULARIZATION}."
            )
    return None
