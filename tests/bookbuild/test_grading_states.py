"""Chapter 1's exercises 1 and 2 judged by export: state crosses as data, rebuilt by the judge.

No sandbox here: for every wrong and right answer of the chapter's variants, the check gives
the value rebuilt from its JSON record the verdict and the words it gives the value itself.
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
from bookbuild.grading._exports import ExportError, export_value, exported_exercises, import_value
from bookbuild.grading._grader import _isolation, queried_exercises
from bookbuild.grading._states import MAX_NUMBERS
from bookbuild.grading.program import write_program
from bookbuild.labs import chapters_with_exercises
from bookbuild.manifest import load_manifest

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


@pytest.mark.parametrize(("number", "code"), CASES, ids=range(len(CASES)))
def test_the_rebuilt_value_gets_the_verdict_the_value_gets(number, code, strategy):
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
    verdict, again = _check(number, value, strategy), _check(number, rebuilt, strategy)
    assert (again.passed, again.message) == (verdict.passed, verdict.message)


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


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    (chapter,) = chapters_with_exercises(load_manifest(), ["1"])
    path = write_program(chapter, tmp_path_factory.mktemp("ch1") / "program.json")
    return json.loads(path.read_text())


def test_chapter_1_row_names_every_exercise_judged_by_export(program):
    assert exported_exercises(program) == {1: "state", 2: "state", 3: "replica_fn"}
    isolation = _isolation(program, queried_exercises(program))
    assert "exercises 1, 2, 3 judged by export" in isolation
    assert "student's process" not in isolation
