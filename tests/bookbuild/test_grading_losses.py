"""Chapters 3 and 4 judged by export: a per-replica loss crosses as its traced graphs.

No sandbox here: for answers the chapters' variants lack (returns that are no loss, another
signature, a trace that fails, a value captured from outside, the weights read directly), the
executor's ask of the loss rebuilt from its JSON record (which imports each replica's traced
loss and gradient and runs none of the learner's Python), crossing as JSON to the grader's
verdict, gets the verdict and the words the check gives the function itself. Then graphs the
executor must not run, records that do not match the check's calls, and records of the
executor's that name another model or loss, are refused. Every variant of both chapters is
graded by export in `tests/book/test_labs.py`, through the sandbox.
"""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

import mirrorkit as mk
from bookbuild.grading import _executed
from bookbuild.grading._by_export import without_key
from bookbuild.grading._exports import (
    ExportError,
    export_value,
    exported_exercises,
    import_value,
)
from bookbuild.grading.program import write_program
from bookbuild.grading.sandbox import run_sandboxed
from bookbuild.labs import chapters_with_exercises
from bookbuild.manifest import load_manifest
from tests.bookbuild import traced_answers as traced
from tests.bookbuild.traced_answers import make_model, regression

# Grading runs only in the book's environment (dev.py grade): these run in the reference job.
pytestmark = pytest.mark.grading

PRED = "model(x, training=True)"
HEAD = "def compute_loss(model, x, y):\n"
RIGHT = (
    HEAD + f"    per_example = keras.losses.mean_squared_error(y, {PRED})\n"
    "    return tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)"
)
CASES = {
    "not attempted": "compute_loss = ...",
    "the right loss": RIGHT,
    "a plain mean": HEAD + f"    return tf.reduce_mean(keras.losses.mean_squared_error(y, {PRED}))",
    "None": HEAD + f"    {PRED}\n    return None",
    "a tuple": HEAD + f"    return (tf.reduce_sum({PRED}), 1.0)",
    "a dict": HEAD + f"    return {{'loss': tf.reduce_sum({PRED})}}",
    "text": HEAD + "    return 'loss'",
    "per-example losses": HEAD + f"    return keras.losses.mean_squared_error(y, {PRED})",
    "two arguments": "def compute_loss(labels, predictions=None):\n    return labels",
    "a number, not a function": "compute_loss = 0.5",
    "NumPy in the step": HEAD + f"    return tf.constant(np.sum({PRED}.numpy()) / GLOBAL_BATCH)",
    "a shape error": HEAD + f"    return tf.reduce_sum({PRED} + tf.ones((3, 3)))",
    "a divisor captured from outside": "scale = tf.constant(1 / GLOBAL_BATCH)\n"
    + HEAD
    + f"    return tf.reduce_sum(keras.losses.mean_squared_error(y, {PRED})) * scale",
    "a penalty read from the weights": HEAD
    + f"    data = tf.reduce_sum(keras.losses.mean_squared_error(y, {PRED})) / GLOBAL_BATCH\n"
    "    return data + 0.01 * tf.nn.l2_loss(model.trainable_variables[0])",
    "the examples counted by an all-reduce": HEAD
    + "    count = tf.cast(tf.shape(x)[0], tf.float32)\n"
    "    count = tf.distribute.get_replica_context().all_reduce('sum', count)\n"
    f"    return tf.reduce_sum(keras.losses.mean_squared_error(y, {PRED})) / count",
    "the loss all-reduced, then divided": HEAD
    + f"    total = tf.reduce_sum(keras.losses.mean_squared_error(y, {PRED}))\n"
    "    return tf.distribute.get_replica_context().all_reduce('sum', total) / GLOBAL_BATCH",
    "a fixed 32, right for one batch only": HEAD
    + f"    return tf.reduce_sum(keras.losses.mean_squared_error(y, {PRED})) / 32",
}


@pytest.fixture(scope="module")
def batches():
    x, y = regression()
    return [(x[:10], y[:10]), (x, y)]


def _both(code: str, strategy, batches):
    namespace = {"tf": tf, "np": np, "keras": keras, "GLOBAL_BATCH": 32}
    exec(code, namespace)
    arguments = (strategy, make_model, batches)
    record = export_value(namespace["compute_loss"], 4, "loss", strategy, arguments)
    record = json.loads(json.dumps(record))
    return namespace["compute_loss"], record


def _executed_verdict(rebuilt, strategy, arguments, keywords=None) -> tuple[bool, str]:
    """The grader's verdict: the executor asks the rebuilt loss, the record crosses as JSON."""
    asked = _executed.ask("check_loss_step", rebuilt, [strategy, *arguments], keywords or {})
    return _executed.judge("check_loss_step", json.loads(json.dumps(asked)))


def _words(result) -> tuple[bool, str]:
    return result.passed, "" if result.passed else result.message


@pytest.mark.parametrize("case", CASES)
def test_the_executed_loss_gets_the_verdict_the_loss_gets(case, strategy, batches):
    """Student's export, executor's rebuild and ask, grader's verdict: the check's words."""
    function, record = _both(CASES[case], strategy, batches)
    verdict = mk.check_loss_step(function, strategy, make_model, batches)
    rebuilt = import_value(record, "loss", strategy)
    assert _executed_verdict(rebuilt, strategy, [make_model, batches]) == _words(verdict)


@pytest.mark.parametrize("case", traced.REFUSED)
def test_a_graph_the_judge_must_not_run_is_refused_with_its_reason(case, strategy, batches):
    code = traced.refused_answer(case, HEAD, f"scale * tf.reduce_sum({PRED})")
    _, record = _both(code, strategy, batches)
    traced.assert_refused(case, record, "loss", strategy)


def test_a_record_without_the_checks_calls_or_with_another_model_passes_nothing(strategy, batches):
    _, record = _both(RIGHT, strategy, batches)
    fewer = {**record, "calls": [c for c in record["calls"] if c["where"] != 3]}
    rebuilt = import_value(fewer, "loss", strategy)
    result = mk.check_loss_step(rebuilt, strategy, make_model, batches)
    assert not result.passed and "no record of your loss" in result.message
    wider = [[p, [d + 1 for d in s], t, r] for p, s, t, r in record["weights"]]
    other = {**record, "weights": wider}
    rebuilt = import_value(other, "loss", strategy)
    result = mk.check_loss_step(rebuilt, strategy, make_model, batches)
    assert not result.passed and "not the one the check builds" in result.message
    for broken in ({**record, "calls": "all"}, {**record, "weights": [["w", [-1], "f", 1]]}):
        with pytest.raises(ExportError, match="not one the grader reads"):
            import_value(broken, "loss", strategy)


def test_a_later_run_reads_what_an_earlier_exercises_check_cell_defined(tmp_path):
    """A run after a timeout grades the remaining exercises only; chapter 3's third check
    reads the batch the first check cell makes, so that cell's lines run there too."""
    (chapter,) = chapters_with_exercises(load_manifest(), ["3"])
    program = json.loads(write_program(chapter, tmp_path / "program.json").read_text())
    answer = (
        "def any_batch_loss(model, x, y):\n"
        "    per_example = keras.losses.mean_squared_error(y, model(x, training=True))\n"
        "    return tf.reduce_sum(per_example) / 10"
    )
    job = {"program": without_key(program), "run": 0, "replicas": 2, "seed": 0}
    exports = {str(k): kind for k, kind in exported_exercises(program).items()}
    job |= {"cases": {"3": [[0, answer]]}, "mode": "export", "exports": exports}
    outcome = run_sandboxed(job, 600.0, hide=(tmp_path,))
    (exported,) = [line for line in outcome.lines if line.get("kind") == "export"]
    assert exported["names"]["any_batch_loss"]["kind"] == "loss", exported


def test_the_checks_arguments_cross_alike_by_keyword_and_by_position(strategy, batches):
    namespace = {"tf": tf, "np": np, "keras": keras, "GLOBAL_BATCH": 32}
    exec(RIGHT, namespace)
    answer = namespace["compute_loss"]
    by_position = export_value(answer, 4, "loss", strategy, (strategy, make_model, batches))
    keywords = {"batch": batches, "model_fn": make_model, "loss": "mse"}
    by_keyword = export_value(answer, 4, "loss", strategy, (strategy,), keywords)
    calls = [[(c["where"], c.get("shapes")) for c in r["calls"]] for r in (by_keyword, by_position)]
    assert calls[0] == calls[1]
    rebuilt = import_value(json.loads(json.dumps(by_keyword)), "loss", strategy)
    verdict = mk.check_loss_step(answer, strategy, make_model, batches)
    assert _executed_verdict(rebuilt, strategy, [], keywords) == _words(verdict)
    with pytest.raises(ExportError, match="does not give what"):
        export_value(answer, 4, "loss", strategy, (strategy,), {"model": make_model})


def _asked_right(strategy, batches) -> dict:
    function, record = _both(RIGHT, strategy, batches)
    rebuilt = import_value(record, "loss", strategy)
    asked = _executed.ask("check_loss_step", rebuilt, [strategy, make_model, batches], {})
    return json.loads(json.dumps(asked))


def _layer(config: dict, module: str, name: str) -> dict:
    return {**config, "module": module, "class_name": name}


TAMPERED = {  # what a record of the executor's may not make the grader rebuild or believe
    "a Lambda layer in the model": lambda b: b["model"]["config"]["layers"].__setitem__(
        1, _layer(b["model"]["config"]["layers"][1], "keras.layers", "Lambda")
    ),
    "a class from another module": lambda b: b["model"].update(module="os", class_name="system"),
    "a loss that is not Keras's": lambda b: b.update(
        loss={"module": "builtins", "class_name": "eval"}
    ),
    "weights of another shape": lambda b: b["weights"].pop(),
    "no model": lambda b: b.update(model=None),
}


@pytest.mark.parametrize("how", TAMPERED)
def test_a_record_naming_another_model_or_loss_fails_without_raising(how, strategy, batches):
    """The grader's verdict rebuilds the reference from Keras's own classes only."""
    line = _asked_right(strategy, batches[1])
    assert _executed.judge("check_loss_step", line) == (True, "")
    TAMPERED[how](line["record"]["batches"][0])
    passed, feedback = _executed.judge("check_loss_step", line)
    assert not passed and feedback.startswith("the executor's record could not be judged")
