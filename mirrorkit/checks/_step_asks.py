"""The ask of the step-equivalence checks: the learner's distributed step, run and recorded.

Builds the model in the strategy's scope, hands each split of the global batch to
``strategy.run`` in a ``tf.function`` and records what the learner's ``compute_loss`` made of
it: per replica its share of the batch and its gradient, and their SUM all-reduce (the
gradient an optimizer applies), or the sentence that says why there was no loss. It computes
no reference and gives no verdict: :mod:`mirrorkit.checks._step_verdicts` does, from this
record alone (the model's initial weights and, for another process, its configuration).

Example:
    >>> import numpy as np, keras
    >>> import mirrorkit as mk
    >>> def model_fn():
    ...     return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> def loss(model, x, y):
    ...     return keras.ops.sum((model(x) - y) ** 2) / 4  # the global batch's 4 examples
    >>> batch = (np.ones((4, 2), "float32"), np.zeros((4, 1), "float32"), 4)
    >>> record = ask_step(loss, mk.make_strategy(), model_fn, batch, loss="mse")
    >>> record["splits"][0]["split"], sum(record["splits"][0]["step"]["sizes"])
    (None, 4)
"""

from __future__ import annotations

import functools

import numpy as np

from mirrorkit._validate import refuse
from mirrorkit.checks._learner_loss import probe_compute_loss, scalar_loss
from mirrorkit.checks._learner_runs import guarded, traced_learner_error
from mirrorkit.checks._model_configs import config_of, sent_loss
from mirrorkit.checks._splits import distributed_batch, uneven_split
from mirrorkit.checks._steps import build_model, check_layers


def ask_step(  # noqa: PLR0913 - the check's own arguments, recorded for its verdict
    compute_loss, strategy, model_fn, batch, *, loss, rtol=None, atol=None, uneven=True, send=False
) -> dict:
    """The learner's step on the strategy's split and, when that is even, one uneven split.

    Args:
        compute_loss: The learner's ``compute_loss(model, x, y)``, already checked.
        strategy: The strategy.
        model_fn: The chapter's function building the model.
        batch: ``(x, y, examples)`` as the check's arguments gave them.
        loss: The check's ``loss``, recorded by name or configuration.
        rtol: The check's tolerance, recorded for its verdict.
        atol: Likewise.
        uneven: Whether to try one uneven split too (when the strategy's is even).
        send: Whether the record will cross to another process, so carries the model's
            configuration (its verdict rebuilds the reference from it).
    """
    import tensorflow as tf

    x, y, examples = batch
    with strategy.scope():
        model = build_model(tf, model_fn, x)
    check_layers(model)
    if not model.trainable_variables:
        refuse(
            "model_fn",
            must="a function building a model with trainable weights",
            got="a function where the model has no trainable weights, so no gradient to compare",
            write="model_fn=build_model where build_model() returns a model with a Dense layer",
            error=ValueError,
        )
    record = {
        "replicas": strategy.num_replicas_in_sync,
        "examples": examples,
        "rtol": rtol,
        "atol": atol,
        "x": x,
        "y": y,
        "weights": [np.asarray(w) for w in model.get_weights()],
        "model": config_of(model) if send else None,
        "loss": sent_loss(loss) if send else None,
    }
    first = _step(tf, strategy, model, compute_loss, (x, y), None)
    splits = [{"split": None, **first}]
    sizes = first.get("step", {}).get("sizes", [])
    if uneven and record["replicas"] > 1 and sizes and len(set(sizes)) == 1:
        split = list(uneven_split(tuple(sizes)))
        splits.append({"split": split, **_step(tf, strategy, model, compute_loss, (x, y), split)})
    return {**record, "splits": splits}


def _step(tf, strategy, model, compute_loss, data, split) -> dict:
    """``{"step": ...}`` what one split's step measured, or ``{"sentence": why}`` no loss."""
    dist_x, dist_y = distributed_batch(tf, strategy, data, split)
    local = strategy.experimental_local_results
    problem = probe_compute_loss(tf, compute_loss, model, local(dist_x)[0], local(dist_y)[0])
    if problem is not None:
        return {"sentence": problem}
    variables = model.trainable_variables
    none_gradients, empty_losses, problems = [], [], []
    checked = guarded(compute_loss, "compute_loss")

    def replica_step(x_r, y_r):
        with tf.GradientTape() as tape:
            value = checked(model, x_r, y_r)
        value = scalar_loss(tf, value, empty_losses, problems)
        gradients = tape.gradient(value, variables)
        none_gradients.append(all(g is None for g in gradients))
        gradients = [
            tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
            for g, v in zip(gradients, variables, strict=True)
        ]
        return value, gradients

    def run_step(x_d, y_d):
        return strategy.run(replica_step, args=(x_d, y_d))

    # TensorFlow counts traces per code object and warns after five ("triggered tf.function
    # retracing"); every check traces a new step once by design, so each gets its own key.
    try:
        per_replica_loss, per_replica_gradients = tf.function(functools.partial(run_step))(
            dist_x, dist_y
        )
    except Exception as error:  # noqa: BLE001 - the learner's code, traced: a verdict
        sentence = traced_learner_error(error)  # NumPy on a symbolic tensor, above all
        if sentence is None:
            raise
        return {"sentence": sentence}
    if problems:
        return {"sentence": problems[0]}
    if none_gradients and all(none_gradients):
        return {
            "sentence": "the loss compute_loss returns does not depend on the model's weights: "
            "compute it from the model's predictions, model(x, training=True)."
        }
    summed = functools.partial(strategy.reduce, tf.distribute.ReduceOp.SUM, axis=None)
    replica_x = [_numpy(tf, part) for part in local(dist_x)]
    return {
        "step": {
            "applied": [np.asarray(g, np.float64) for g in summed(per_replica_gradients)],
            "loss": float(summed(per_replica_loss)),
            "replica_gradients": [
                [np.asarray(g, np.float64) for g in grads]
                for grads in zip(*(local(g) for g in per_replica_gradients), strict=True)
            ],
            "replica_x": replica_x,
            "replica_y": [_numpy(tf, part) for part in local(dist_y)],
            "sizes": [int(np.shape(tf.nest.flatten(part)[0])[0]) for part in replica_x],
            "empty_loss": bool(empty_losses),
            "names": [getattr(v, "path", None) or v.name for v in variables],
        }
    }


def _numpy(tf, value):
    return tf.nest.map_structure(lambda t: np.asarray(t), value)
