"""The executor and the grader's verdict: what crosses between them, and what each holds.

No sandbox here (chapter 1's variants go through it in `tests/book/test_labs.py`): the
executor's program holds no solution and its run sees the repository only for the code it
runs; the grader's verdict refuses records that are not the ask's, without raising, and
judges by the chapter's check, never by what a record says it is; an array crosses exactly
or is refused.
"""

import base64
import json

import numpy as np
import pytest
import tensorflow as tf

import mirrorkit as mk
from bookbuild.grading import _executed, sandbox
from bookbuild.grading._exports import EXPORTED_CHECKS, checks_function
from mirrorkit.checks._arrays import MAX_NUMBERS, as_data, from_data

pytestmark = pytest.mark.grading


@pytest.fixture
def program(chapter_program):
    return chapter_program("1")


def test_the_executor_holds_no_solution_and_sees_no_key_on_disk(program):
    steps = _executed.for_executor(program)["steps"]
    answers = [s for s in steps if s["kind"] == "answer"]
    assert answers and not any("solution" in s for s in answers)
    checks = [s for s in steps if s["kind"] == "check"]
    assert [s["source"] for s in checks] == [
        s["source"] for s in program["steps"] if s["kind"] == "check"
    ]
    assert "execute" in sandbox.HIDDEN and "judge" not in sandbox.HIDDEN


def test_every_check_of_an_executed_kind_has_an_ask_and_a_verdict():
    executed = {c for c, kind in EXPORTED_CHECKS.items() if kind in _executed.KINDS}
    assert executed == set(_executed.CHECKS)
    for ask, verdict in _executed.CHECKS.values():
        assert callable(checks_function(ask)) and callable(checks_function(verdict))


def _mirrored_record(strategy) -> dict:
    with strategy.scope():
        counter = tf.Variable(0.0)
    line = _executed.ask("check_mirrored", counter, [strategy], {"expected": 0.0})
    return json.loads(json.dumps(line))


def test_a_record_of_a_right_answer_passes(strategy):
    assert _executed.judge("check_mirrored", _mirrored_record(strategy)) == (True, "")


GARBLED = {
    "no line": None,
    "a line that is a list": [],
    "no record": {},
    "a record that is text": {"record": "passed"},
    "a record with no answer": {"record": {"check": "mirrored", "replicas": 4}},
    "an answer with no rows": {
        "record": {"check": "mirrored", "replicas": 4, "dtype": None, "expected": None,
                   "answer": {"type": "x"}}
    },
    "a huge record": {"record": {"pad": "x" * (_executed.MAX_RECORD + 1)}},
}  # fmt: skip


@pytest.mark.parametrize("check", sorted(_executed.CHECKS))
@pytest.mark.parametrize("how", GARBLED)
def test_a_garbled_record_fails_without_raising(check, how):
    passed, feedback = _executed.judge(check, GARBLED[how])
    assert passed is False and feedback


def test_a_record_is_judged_by_the_chapters_check_not_by_its_own_say(strategy):
    record = _mirrored_record(strategy)  # a right answer to check_mirrored
    passed, feedback = _executed.judge("check_all_reduced", record)
    assert not passed and feedback


def test_a_failed_export_is_the_feedback():
    assert _executed.ask("check_mirrored", "no answer cell found", [], {}) == {
        "failed": "no answer cell found"
    }


def test_a_check_argument_the_ask_refuses_is_the_checks_own_error(strategy):
    line = _executed.ask("check_mirrored", 0, [strategy], {"dtype": "no dtype"})
    assert line["failed"].startswith("the check stopped: TypeError: dtype must be")


ARRAYS = [
    np.float32(0.5),
    np.arange(6, dtype="int64").reshape(2, 3),
    np.array([True, False]),
    np.array([np.nan, np.inf, -0.0], "float64"),
    np.zeros((0, 3), "float16"),
]


@pytest.mark.parametrize("array", ARRAYS, ids=range(len(ARRAYS)))
def test_an_array_crosses_exactly(array):
    back = from_data(json.loads(json.dumps(as_data(array))))
    assert back.dtype == array.dtype and back.shape == array.shape
    assert back.tobytes() == np.ascontiguousarray(array).tobytes()


def test_another_float_crosses_as_float64_with_its_name():
    record = as_data(np.array([1.5, 2.0], np.longdouble))
    assert record["dtype"] == np.dtype(np.longdouble).name
    assert from_data(record).tolist() == [1.5, 2.0]


def test_bfloat16_crosses_as_float64_with_numpys_kind_kept():
    record = as_data(tf.constant([1.5, 2.0], tf.bfloat16).numpy())
    assert (record["dtype"], record["kind"]) == ("bfloat16", "V")
    assert from_data(record).tolist() == [1.5, 2.0]


def test_text_and_a_large_array_cross_as_their_shape_alone():
    assert from_data(as_data(np.array(["a"]))) is None
    large = as_data(np.zeros(MAX_NUMBERS + 1, "float32"))
    assert large["shape"] == [MAX_NUMBERS + 1] and from_data(large) is None


BROKEN = {
    "a dtype of its own": {"stored": "object"},
    "a negative length": {"shape": [-1]},
    "more numbers than sent": {"shape": [3]},
    "too many numbers": {"shape": [MAX_NUMBERS + 1]},
    "data that is not base64": {"data": "%%%"},
    "a shape that is text": {"shape": "2"},
}


@pytest.mark.parametrize("how", BROKEN)
def test_an_array_record_no_ask_writes_is_refused(how):
    record = as_data(np.array([1.0, 2.0], "float32")) | BROKEN[how]
    with pytest.raises(ValueError):
        from_data(record)


def test_the_checks_verdict_is_the_judge_of_its_ask(strategy):
    with strategy.scope():
        counter = tf.Variable(1)
    asked = mk.checks.replica_values.ask_mirrored(counter, strategy, dtype=tf.float32)
    payload = json.loads(json.dumps(asked))
    assert base64.b64decode(payload["answer"]["rows"][0]["array"]["data"])
    judged = mk.checks._replica_verdicts.judge_mirrored(payload)
    direct = mk.check_mirrored(counter, strategy, dtype=tf.float32)
    assert (judged.passed, judged.message) == (direct.passed, direct.message)
