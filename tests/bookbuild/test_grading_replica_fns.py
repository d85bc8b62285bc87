"""Chapter 1's exercise 3 judged by export: a replica function crosses as its traced graph.

No sandbox here: for every wrong and right answer of the chapter's variants, the function
rebuilt from its JSON record as the executor does (which imports the traced graph,
all-reduces included, and runs none of the learner's Python) is asked by the check's ask
half, and the record, after a JSON trip, gets from the grader's verdict the words the check
gives the function itself. Then graphs the judge must not run are refused. The sandboxed runs are
`tests/book/test_labs.py`'s.
"""

import importlib.util
import json

import numpy as np
import pytest
import tensorflow as tf

import mirrorkit as mk
from bookbuild import ROOT
from bookbuild.grading import _executed
from bookbuild.grading._exports import ExportError, export_value, import_value

# Grading runs only in the book's environment (dev.py grade): these run in the reference job.
pytestmark = pytest.mark.grading

_spec = importlib.util.spec_from_file_location(
    "variants_01", ROOT / "tests" / "book" / "variants" / "01_strategy_scope.py"
)
variants = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(variants)
NAME = "total_of_ids_plus_one"
HEAD = f"def {NAME}():\n    context = tf.distribute.get_replica_context()\n"
MINE = "tf.cast(context.replica_id_in_sync_group + 1, tf.float32)"
CASES = [
    f"{NAME} = ...",
    *(code for _, code, _ in variants.WRONG[3]),
    *variants.RIGHT[3],
    f"{NAME} = 10.0",
    HEAD + "    return None",
    HEAD + f"    return (context.all_reduce('sum', {MINE}), tf.constant(0.0))",
    HEAD + f"    return [context.all_reduce('sum', {MINE})]",
    HEAD + "    return [1.0, 2.0][context.replica_id_in_sync_group + 4]",
    HEAD + f"    total = context.all_reduce('sum', {MINE})\n"
    "    n = tf.cast(context.num_replicas_in_sync, tf.float32)\n"
    "    return context.all_reduce('sum', total) / n",
    "ten = tf.constant(10.0)\n" + HEAD + "    return ten + 0.0 * context.all_reduce('sum', 1.0)",
    HEAD + f"    return {{'total': context.all_reduce('sum', {MINE})}}",
    HEAD + "    return tf.constant('10')",
    HEAD + f"    return context.all_reduce('sum', tf.cast({MINE}, tf.float16))",
]


def _rebuilt(code: str, strategy):
    namespace = {"tf": tf, "np": np, "mk": mk, "strategy": strategy}
    exec(code, namespace)
    record = json.loads(json.dumps(export_value(namespace[NAME], 4, "replica_fn", strategy)))
    return namespace[NAME], import_value(record, "replica_fn", strategy)


@pytest.mark.parametrize("code", CASES, ids=range(len(CASES)))
def test_the_executed_function_gets_the_verdict_the_function_gets(code, strategy):
    """Student's export, executor's rebuild and ask, grader's verdict: the check's words."""
    function, rebuilt = _rebuilt(code, strategy)
    verdict = mk.check_all_reduced(function, strategy, expected=10.0)
    asked = _executed.ask("check_all_reduced", rebuilt, [strategy], {"expected": 10.0})
    again = _executed.judge("check_all_reduced", json.loads(json.dumps(asked)))
    assert again == (verdict.passed, "" if verdict.passed else verdict.message)


REFUSED = {
    "a Python callback": (
        HEAD + f"    return tf.py_function(lambda: 10.0, [], tf.float32) + 0 * {MINE}",
        "operations the grader does not run: EagerPyFunc",
    ),
    "a variable made outside": (
        "total = tf.Variable(10.0)\n"
        + HEAD
        + "    return total + 0.0 * context.all_reduce('sum', 1.0)",
        "operations the grader does not run: ReadVariableOp",
    ),
    "reading a file": (
        HEAD + "    return tf.strings.to_number(tf.io.read_file('/etc/hostname'))",
        "ReadFile",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", REFUSED)
def test_a_graph_the_judge_must_not_run_is_refused_with_its_reason(case, strategy):
    code, words = REFUSED[case]
    with pytest.raises(ExportError, match=words):
        _rebuilt(code, strategy)


def test_an_all_reduce_the_judge_rebuilt_takes_keys_of_its_own(strategy):
    _, first = _rebuilt(variants.RIGHT[3][0], strategy)
    _, second = _rebuilt(variants.RIGHT[3][0], strategy)
    assert mk.check_all_reduced(first, strategy, expected=10.0).passed
    assert mk.check_all_reduced(second, strategy, expected=10.0).passed
