"""Chapter 8's clipping exercise judged by export: ``clip(gradients, clip_norm)`` as graphs.

No sandbox here: for every variant of the exercise and for answers the variants lack (a
value that is no function, returns of the wrong type or length, a trace that fails, NumPy
in the step, a bound ignored), ``check_clipping`` gives the function rebuilt from its JSON
record (each replica's traced call at each bound the check tries, imported into the check's
own step; none of the learner's Python runs), asked by the executor and judged by the grader
from the record as JSON, gets the verdict and the words the check gives the function itself.
Then graphs the executor must not run, and records that do not match the check's calls, are
refused. Chapter 8 is graded by export through the sandbox in
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

HEAD = "def clip_after_sum(gradients, clip_norm):\n"
CONTEXT = "    context = tf.distribute.get_replica_context()\n"
SUM = "    total = context.all_reduce(tf.distribute.ReduceOp.SUM, gradients)\n"
EXTRA = {
    "not attempted": "clip_after_sum = ...",
    "a number, not a function": "clip_after_sum = 1.0",
    "None returned": HEAD + "    return None",
    "a dict returned": HEAD + "    return {'g': gradients[0]}",
    "one gradient too few": HEAD + "    return gradients[1:]",
    "text among the gradients": HEAD + "    return ['g'] + gradients[1:]",
    "None for one weight": HEAD + "    return [None] + gradients[1:]",
    "it raises": HEAD + "    raise ValueError('not yet')",
    "NumPy in the step": HEAD + "    return [g * float(np.sum(g.numpy())) for g in gradients]",
    "the bound ignored, 1.0 written": HEAD
    + CONTEXT
    + SUM
    + "    clipped, _ = tf.clip_by_global_norm(total, 1.0)\n"
    "    return [g / context.num_replicas_in_sync for g in clipped]",
    "the bound as a Python float": HEAD
    + CONTEXT
    + SUM
    + "    clipped, _ = tf.clip_by_global_norm(total, float(clip_norm) * 1.0)\n"
    "    return [g / context.num_replicas_in_sync for g in clipped]",
    "only replica 1 raises": HEAD
    + CONTEXT
    + "    if tf.get_static_value(context.replica_id_in_sync_group) == 1:\n"
    "        raise ValueError('replica one')\n"
    "    return gradients",
    "a factor captured from outside": "half = tf.constant(0.5)\n"
    + HEAD
    + "    return [g * half for g in gradients]",
}


CASES = traced.chapter_8_variants(2) | EXTRA


@pytest.fixture(scope="module")
def batch():
    return regression()


def _both(code: str, strategy, batch):
    namespace = {"tf": tf, "np": np, "keras": keras, "N": strategy.num_replicas_in_sync}
    exec(code, namespace)
    function = namespace["clip_after_sum"]
    record = export_value(
        function, 4, "clip", strategy, (strategy, make_model, batch), {"clip_norm": 1.0}
    )
    return function, json.loads(json.dumps(record))


@pytest.mark.parametrize("case", CASES)
def test_the_executed_clip_gets_the_verdict_the_clip_gets(case, strategy, batch):
    """Student's export, executor's rebuild and ask, grader's verdict: the check's words."""
    function, record = _both(CASES[case], strategy, batch)
    verdict = mk.check_clipping(function, strategy, make_model, batch, clip_norm=1.0)
    rebuilt = import_value(record, "clip", strategy)
    arguments = [strategy, make_model, batch]
    asked = _executed.ask("check_clipping", rebuilt, arguments, {"clip_norm": 1.0})
    again = _executed.judge("check_clipping", json.loads(json.dumps(asked)))
    assert again == (verdict.passed, "" if verdict.passed else verdict.message)


@pytest.mark.parametrize("case", traced.REFUSED)
def test_a_graph_the_judge_must_not_run_is_refused_with_its_reason(case, strategy, batch):
    code = traced.refused_answer(case, HEAD, "[g * scale for g in gradients]")
    _, record = _both(code, strategy, batch)
    traced.assert_refused(case, record, "clip", strategy)


def test_a_record_without_the_checks_calls_or_with_another_model_passes_nothing(strategy, batch):
    _, record = _both(CASES["right 0"], strategy, batch)
    fewer = {**record, "calls": [c for c in record["calls"] if c["where"] != 3]}
    result = mk.check_clipping(
        import_value(fewer, "clip", strategy), strategy, make_model, batch, clip_norm=1.0
    )
    assert not result.passed and "no record of your clip function" in result.message
    wider = {**record, "weights": [[[d + 1 for d in s], t] for s, t in record["weights"]]}
    result = mk.check_clipping(
        import_value(wider, "clip", strategy), strategy, make_model, batch, clip_norm=1.0
    )
    assert not result.passed and "not the one the check builds" in result.message
    for broken in ({**record, "calls": "all"}, {**record, "weights": [[[-1], "f"]]}):
        with pytest.raises(ExportError, match="not one the grader reads"):
            import_value(broken, "clip", strategy)
