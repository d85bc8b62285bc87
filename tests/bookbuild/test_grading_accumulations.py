"""Chapter 8's accumulation exercise judged by export: ``accumulate`` as each replica's graph.

No sandbox here: for every variant of the exercise and for answers the variants lack (a
value that is no function, a trace that fails, NumPy in the step, a weight changed, the
accumulators read before adding), ``check_accumulation`` gives the step rebuilt from its
JSON record (each replica's traced call imported into the check's own step, its variables
mapped to the check's model and accumulators; none of the learner's Python runs), asked by
the executor and judged by the grader from the record as JSON, gets the verdict and the
words the check gives the function itself. Then graphs the judge must not run, a
variable that is neither the model's nor an accumulator, and records that do not match the
check's calls are refused. Chapter 8 is graded by export through the sandbox in
`tests/book/test_labs.py`.
"""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

import mirrorkit as mk
from bookbuild.grading import _executed
from bookbuild.grading._exports import ExportError, export_value, import_value
from tests.bookbuild import traced_answers as traced
from tests.bookbuild.traced_answers import make_model, regression

# Grading runs only in the book's environment (dev.py grade): these run in the reference job.
pytestmark = pytest.mark.grading

K = 2
HEAD = "def accumulate_default(model, accumulators, x, y):\n"
TAPE = "    with tf.GradientTape() as tape:\n"
ADD = (
    "    gradients = tape.gradient(loss, model.trainable_variables)\n"
    "    for accumulator, gradient in zip(accumulators, gradients):\n"
    "        accumulator.assign_add(gradient)\n"
)
RIGHT = HEAD + TAPE + "        loss = default_mse(y, model(x, training=True)) / K\n" + ADD
EXTRA = {
    "not attempted": "accumulate_default = ...",
    "a number, not a function": "accumulate_default = 2",
    "it raises": HEAD + "    raise ValueError('not yet')",
    "nothing done": HEAD + "    pass",
    "NumPy in the step": HEAD + "    float(np.sum(x.numpy()))",
    "only replica 1 raises": HEAD + "    context = tf.distribute.get_replica_context()\n"
    "    if tf.get_static_value(context.replica_id_in_sync_group) == 1:\n"
    "        raise ValueError('replica one')\n" + RIGHT.removeprefix(HEAD),
    "a weight changed as well": RIGHT + "    model.trainable_variables[0].assign_add(tf.ones_like("
    "model.trainable_variables[0]))\n",
    "the accumulators doubled, then added to": HEAD + "    for accumulator in accumulators:\n"
    "        accumulator.assign(accumulator * 2.0)\n" + RIGHT.removeprefix(HEAD),
    "the gradients all-reduced first": HEAD
    + TAPE
    + "        loss = default_mse(y, model(x, training=True)) / K\n"
    "    gradients = tape.gradient(loss, model.trainable_variables)\n"
    "    total = tf.distribute.get_replica_context().all_reduce('sum', gradients)\n"
    "    for accumulator, gradient in zip(accumulators, total):\n"
    "        accumulator.assign_add(gradient)\n",
}


CASES = traced.chapter_8_variants(1) | EXTRA


def apply_accumulated(model, optimizer, accumulators):
    optimizer.apply_gradients(
        zip([a.read_value() for a in accumulators], model.trainable_variables, strict=True)
    )
    for accumulator in accumulators:
        accumulator.assign(tf.zeros_like(accumulator))


@pytest.fixture(scope="module")
def data(strategy):
    return regression(2 * K * 8 * strategy.num_replicas_in_sync)


def _both(code: str, strategy, data):
    n = strategy.num_replicas_in_sync
    namespace = {"tf": tf, "np": np, "keras": keras, "K": K, "MICRO": 8 * n, "N": n}
    namespace["per_example_mse"] = keras.losses.MeanSquaredError(reduction="none")
    namespace["default_mse"] = keras.losses.MeanSquaredError()
    exec(code, namespace)
    function = namespace["accumulate_default"]
    arguments = (apply_accumulated, strategy, make_model, data)
    record = export_value(function, n, "accumulate", strategy, arguments, {"micro_steps": K})
    return function, json.loads(json.dumps(record))


def _check(function, strategy, data):
    return mk.check_accumulation(
        function, apply_accumulated, strategy, make_model, data, micro_steps=K
    )


@pytest.mark.parametrize("case", CASES)
def test_the_executed_step_gets_the_verdict_the_step_gets(case, strategy, data):
    """Student's export, executor's rebuild and ask, grader's verdict: the check's words."""
    function, record = _both(CASES[case], strategy, data)
    verdict = _check(function, strategy, data)
    rebuilt = import_value(record, "accumulate", strategy)
    arguments = [apply_accumulated, strategy, make_model, data]
    asked = _executed.ask("check_accumulation", rebuilt, arguments, {"micro_steps": K})
    again = _executed.judge("check_accumulation", json.loads(json.dumps(asked)))
    assert again == (verdict.passed, "" if verdict.passed else verdict.message)


@pytest.mark.parametrize("case", traced.REFUSED)
def test_a_graph_the_judge_must_not_run_is_refused_with_its_reason(case, strategy, data):
    code = traced.refused_answer(case, HEAD, "None").replace(
        "    return None", RIGHT.removeprefix(HEAD).replace("/ K", "/ K * scale")
    )
    _, record = _both(code, strategy, data)
    # A variable's reads are allowed here (the model's weights): one not given is refused.
    words = "reads a variable or a tensor made outside it" if "variable" in case else None
    traced.assert_refused(case, record, "accumulate", strategy, words)


def test_a_record_without_the_checks_calls_or_with_another_model_passes_nothing(strategy, data):
    _, record = _both(RIGHT, strategy, data)
    fewer = {**record, "calls": [c for c in record["calls"] if c["where"] != 1]}
    result = _check(import_value(fewer, "accumulate", strategy), strategy, data)
    assert not result.passed and "no record of your accumulate" in result.message
    wider = [[[d + 1 for d in shape], dtype] for shape, dtype in record["variables"]]
    result = _check(
        import_value({**record, "variables": wider}, "accumulate", strategy), strategy, data
    )
    assert not result.passed and "not the ones the check builds" in result.message
    for broken in ({**record, "calls": "all"}, {**record, "weights": -1}):
        with pytest.raises(ExportError, match="not one the grader reads"):
            import_value(broken, "accumulate", strategy)
