"""An evaluation loop asked on drawn inputs, its verdict given from the results alone.

A grader that must not judge in the learner's process asks there (:func:`ask_drawn`): a
linear model built in the strategy's scope with weights drawn from a seed, and examples
drawn from the same seed, are given to the learner's ``evaluate`` as
:func:`~mirrorkit.checks.evaluation.check_evaluation` gives its own. What comes back is
data; :func:`judge_drawn` draws the same inputs again, computes each example's squared error
with NumPy and gives the check's verdict, mistakes named. Nothing of the learner's runs
where the verdict is given.

Example:
    >>> drawn = drawn_inputs(3, global_batch=16, replicas=4)
    >>> drawn["x"].shape[0], drawn["counts"]
    (32, (32, 21))
"""

from __future__ import annotations

import numpy as np

from mirrorkit.checks._digests import digest
from mirrorkit.checks._evaluation_verdicts import judge_evaluation
from mirrorkit.checks.evaluation import ask_evaluation, example_counts, not_a_function
from mirrorkit.checks.result import CheckResult

LARGEST_BATCH = 4096  # a global batch the verdict will draw for (the chapters use 16 to 64)
LARGEST_WIDTH = 64  # features or targets of the drawn examples
MAX_LITERALS = 64  # numbers written in the learner's source that the verdict reads


def drawn_inputs(seed: int, *, global_batch: int, replicas: int, shape=(4, 1)) -> dict:
    """The linear model's weights and the examples for ``seed``: the same on both sides.

    ``shape``: ``(features, targets)``, as the chapter's own examples have them, so that an
    answer that ignores its arguments still runs and is told so.
    """
    rng = np.random.default_rng([int(seed), 7])
    features, targets = shape
    counts = example_counts(global_batch, replicas)
    return {
        "kernel": rng.normal(size=(features, targets)).astype("float32"),
        "bias": rng.normal(size=(targets,)).astype("float32"),
        "x": rng.normal(size=(counts[0], features)).astype("float32"),
        "y": rng.normal(size=(counts[0], targets)).astype("float32"),
        "counts": counts,
    }


def example_shape(data) -> tuple[int, int]:
    """``(features, targets)`` of the chapter's ``(x, y)``, where both are 2-D arrays; else
    ``(4, 1)``."""
    x, y = data if isinstance(data, tuple | list) and len(data) == 2 else (None, None)
    shapes = [getattr(a, "shape", ()) for a in (x, y)]
    if all(len(s) == 2 and 1 <= int(s[1]) <= LARGEST_WIDTH for s in shapes):
        return int(shapes[0][1]), int(shapes[1][1])
    return 4, 1


def ask_drawn(evaluate, strategy, seed: int, global_batch: int, shape=(4, 1)) -> dict:
    """Call ``evaluate`` on the drawn model and examples (in the learner's process): data."""
    import keras

    from mirrorkit.checks._learner_runs import literal_numbers

    replicas = strategy.num_replicas_in_sync
    drawn = drawn_inputs(seed, global_batch=global_batch, replicas=replicas, shape=shape)
    with strategy.scope():
        layers = [keras.Input((shape[0],)), keras.layers.Dense(shape[1])]
        model = keras.Sequential(layers)
    model.set_weights([drawn["kernel"], drawn["bias"]])
    parts = [(drawn["x"][:count], drawn["y"][:count]) for count in drawn["counts"]]
    if not callable(evaluate):
        return {"global_batch": global_batch, "not_a_function": type(evaluate).__name__}
    records = ask_evaluation(evaluate, strategy, model, parts, global_batch)
    literals = [float(n) for n in literal_numbers(evaluate)[:MAX_LITERALS]]
    asked = {"global_batch": global_batch, "shape": list(shape)}
    return asked | {"records": records, "literals": literals}


def judge_drawn(seed: int, replicas: int, answer) -> CheckResult:
    """The verdict on what :func:`ask_drawn` returned, read as untrusted data.

    Example:
        >>> judge_drawn(3, 4, {"global_batch": 16, "shape": [4, 1], "records": []}).message
        "evaluate's results did not all come back."
        >>> judge_drawn(3, 4, {"global_batch": 10**9, "records": []}).passed
        False
    """
    answer = answer if isinstance(answer, dict) else {}
    if "not_a_function" in answer:
        return not_a_function(str(answer["not_a_function"])[:60])
    global_batch = answer.get("global_batch")
    if type(global_batch) is not int or not 2 * replicas <= global_batch <= LARGEST_BATCH:
        return CheckResult(
            False,
            f"the check's global_batch must be an int from {2 * replicas} to {LARGEST_BATCH}; "
            f"its value was {str(global_batch)[:40]}.",
        )
    shape = answer.get("shape")
    if not (
        isinstance(shape, list)
        and len(shape) == 2
        and all(type(n) is int and 1 <= n <= LARGEST_WIDTH for n in shape)
    ):
        return CheckResult(False, f"the examples' shape came back unreadable: {str(shape)[:40]}.")
    drawn = drawn_inputs(seed, global_batch=global_batch, replicas=replicas, shape=tuple(shape))
    x, y = drawn["x"].astype(np.float64), drawn["y"].astype(np.float64)
    predicted = x @ drawn["kernel"].astype(np.float64) + drawn["bias"].astype(np.float64)
    errors = ((predicted - y) ** 2).mean(axis=-1)
    literals = answer.get("literals")
    literals = (
        [n for n in literals if type(n) in (int, float)] if isinstance(literals, list) else []
    )
    records = answer.get("records")
    return judge_evaluation(
        records[:2] if isinstance(records, list) else [],
        [errors[:count] for count in drawn["counts"]],
        [digest(drawn["kernel"]), digest(drawn["bias"])],
        replicas=replicas,
        global_batch=global_batch,
        literals=[n for n in literals[:MAX_LITERALS] if type(n) in (int, float)],
    )
