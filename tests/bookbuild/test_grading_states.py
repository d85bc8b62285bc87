"""Chapter 1's exercises 1 and 2 judged by export: state crosses as data to an executor.

No sandbox here: for every wrong and right answer of the chapter's variants, the value is
exported as the student's process does, rebuilt from its JSON record as the executor does,
asked by the check's ask half, and the record judged after a JSON trip as the grader does:
the verdict and the words are those the check gives the value itself.
Then records no student's process writes are refused, and the chapter's row says how its
exercises are judged. The sandboxed runs are `tests/book/test_labs.py`'s.
"""

import base64
import importlib.util
import json

import numpy as np
import pytest
import tensorflow as tf

import mirrorkit as mk
from bookbuild import ROOT
from bookbuild.grading import _executed
from bookbuild.grading._exports import ExportError, export_value, exported_exercises, import_value
from bookbuild.grading._grader import _isolation, queried_exercises
from bookbuild.grading._states import MAX_NUMBERS

# Grading runs only in the book's environment (dev.py grade): these run in the reference job.
pytestmark = pytest.mark.grading

_spec = importlib.util.spec_from_file_location(
    "variants_01", ROOT / "tests" / "book" / "variants" / "01_strategy_scope.py"
)
variants = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(variants)
ASKS = {1: "counter", 2: "squares"}
CASES = [
    (number, code)
    for number in ASKS
    for code in [f"{ASKS[number]} = ...", *(c for _, c, _ in variants.WRONG[number])]
    + list(variants.RIGHT[number])
] + [
    (1, "with tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1']).scope():\n"
        "    counter = tf.Variable(0.0)"),
    (1, "with strategy.scope():\n    counter = tf.Variable(0.0)\n"
        "counter.values[1].assign(2.0)"),
    (1, "with strategy.scope():\n    counter = keras.Variable(0.0)"),
    (2, "squares = strategy.run(lambda: tf.ones([300, 300]))"),
    (2, "squares = strategy.run(lambda: {'a': tf.constant(1.0)})"),
    (2, "squares = None"),
    (2, "squares = keras.layers.Dense(1)"),
]  # fmt: skip


def _check(number: int, value, strategy):
    if number == 1:
        return mk.check_mirrored(value, strategy, dtype=tf.float32, expected=0.0)
    wanted = [i * i for i in range(strategy.num_replicas_in_sync)]
    return mk.check_per_replica(value, strategy, expected=wanted, dtype=tf.float32)


def _executed_verdict(number: int, rebuilt, strategy) -> tuple[bool, str]:
    """The grader's verdict: the executor asks the rebuilt value, the record crosses as JSON."""
    if number == 1:
        check, arguments = "check_mirrored", {"dtype": tf.float32, "expected": 0.0}
    else:
        wanted = [i * i for i in range(strategy.num_replicas_in_sync)]
        check, arguments = "check_per_replica", {"expected": wanted, "dtype": tf.float32}
    line = json.loads(json.dumps(_executed.ask(check, rebuilt, [strategy], arguments)))
    return _executed.judge(check, line)


@pytest.mark.parametrize(("number", "code"), CASES, ids=range(len(CASES)))
def test_the_executed_value_gets_the_verdict_the_value_gets(number, code, strategy):
    """Student's export, executor's rebuild and ask, grader's verdict: the check's words."""
    import keras

    namespace = {"tf": tf, "np": np, "keras": keras, "mk": mk, "strategy": strategy}
    exec(code, namespace)
    value = namespace[ASKS[number]]
    try:
        record = json.loads(json.dumps(export_value(value, 4, "state", strategy)))
    except ExportError as error:  # too large to cross: the row says so instead
        assert "more than" in str(error)
        return
    rebuilt = import_value(record, "state", strategy)
    verdict = _check(number, value, strategy)
    assert _executed_verdict(number, rebuilt, strategy) == (
        verdict.passed,
        "" if verdict.passed else verdict.message,
    )


def _variable(strategy) -> dict:
    with strategy.scope():
        variable = tf.Variable([1.0, 2.0])
    return json.loads(json.dumps(export_value(variable, 4, "state", strategy)))


def _broken(record: dict, change) -> dict:
    copy = json.loads(json.dumps(record))
    change(copy["value"])
    return copy


BROKEN = {
    "bytes that do not fill the shape": lambda v: v["components"][0].update(shape=[3]),
    "a shape with a negative length": lambda v: v["components"][0].update(shape=[-2]),
    "a string dtype": lambda v: v["components"][0].update(dtype="string"),
    "a dtype TensorFlow lacks": lambda v: v["components"][0].update(dtype="float7"),
    "data that is not base64": lambda v: v["components"][0].update(data="%%%"),
    "a class of its own": lambda v: v.update({"class": "TrustMeVariable"}),
    "an aggregation TensorFlow lacks": lambda v: v.update(aggregation="MAX"),
    "no copies": lambda v: v.update(components=[]),
    "more copies than devices": lambda v: v.update(components=v["components"] * 3),
    "a copy that is a tensor, for a variable": lambda v: v["components"][0].update(kind="tensor"),
    "a huge array": lambda v: v["components"][0].update(
        shape=[MAX_NUMBERS + 1], data=base64.b64encode(bytes(4 * (MAX_NUMBERS + 1))).decode()
    ),
    "a kind of its own": lambda v: v.update(kind="pickle"),
    "a python value that is a dict": lambda v: v.update(kind="python", value={"a": 1}),
}


@pytest.mark.parametrize("how", BROKEN)
def test_a_record_no_student_process_writes_is_refused(how, strategy):
    with pytest.raises(ExportError):
        import_value(_broken(_variable(strategy), BROKEN[how]), "state", strategy)


def test_a_record_of_the_other_kind_is_refused(strategy):
    dataset = json.loads(json.dumps(export_value(tf.data.Dataset.range(4), 4)))
    with pytest.raises(ExportError):
        import_value(dataset, "state", strategy)
    with pytest.raises(ExportError):
        import_value(_variable(strategy), "dataset", strategy)


def test_a_string_tensor_is_refused_where_it_is_exported(strategy):
    with pytest.raises(ExportError, match="asks for numbers"):
        export_value(tf.constant(["a"]), 4, "state", strategy)


@pytest.fixture
def program(chapter_program):
    return chapter_program("1")


def test_chapter_1_row_names_every_exercise_judged_by_export(program):
    assert exported_exercises(program) == {1: "state", 2: "state", 3: "replica_fn"}
    isolation = _isolation(program, queried_exercises(program))
    assert f"exercises 1, 2, 3 {_executed.JUDGED}" in isolation
    assert "student's process" not in isolation
