"""Chapter 9's exercise 2 judged by query: the answer is only called, the verdict reads data.

The first test needs no sandbox: for every wrong and right answer of the chapter's variants,
the results the student's process would write, read back, get the check's own verdict. The
`grading` one sends answers through the real sandbox, where mirrorkit cannot be imported.
"""

import importlib.util
import json

import pytest

from bookbuild import ROOT
from bookbuild.grading import _lab_student
from bookbuild.grading._grader import _queried_variants, queried_exercises
from bookbuild.grading._queried import chapter_query, judge_chapter
from mirrorkit.checks.partitioner import check_partitioner_for

_spec = importlib.util.spec_from_file_location(
    "variants_09", ROOT / "tests" / "book" / "variants" / "09_the_landscape.py"
)
variants = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(variants)
ANSWERS = [code for _, code, _ in variants.WRONG[2]] + list(variants.RIGHT[2])


def _function(code: str):
    import tensorflow as tf

    namespace = {"tf": tf}
    exec(code, namespace)
    return namespace["partitioner_for"]


@pytest.mark.parametrize("code", ANSWERS, ids=range(len(ANSWERS)))
def test_results_read_back_get_the_verdict_the_check_gives_the_function(code):
    seed = 5
    calls, queries = chapter_query("check_partitioner_for", seed)
    function = _function(code)
    outputs = [json.loads(json.dumps(_lab_student.called(function, call))) for call in calls]
    verdict = check_partitioner_for(function, seed=seed)
    assert judge_chapter("check_partitioner_for", queries, outputs) == (
        verdict.passed,
        "" if verdict.passed else verdict.message,
    )


@pytest.fixture
def program(chapter_program):
    return chapter_program("9")


def test_chapter_9_exercise_2_is_judged_by_query_and_exercise_1_is_not(program):
    assert queried_exercises(program) == {2: "check_partitioner_for"}


@pytest.mark.grading
def test_answers_through_the_sandbox_are_called_where_mirrorkit_is_not(program):
    right = variants.RIGHT[2][0]
    cheat = (
        "from mirrorkit.checks.partitioner import shards_for\n"
        "def partitioner_for(cluster, max_shard_bytes):\n"
        "    return lambda shape, dtype: [shards_for(tuple(shape), dtype.size, "
        "max_shard_bytes, len(cluster['ps']))] + [1] * (len(shape) - 1)\n"
    )
    cases = [
        (2, "right", right),
        (2, "blank", "partitioner_for = ...  # your answer"),
        (2, "cheat", cheat),
        (2, "int", "partitioner_for = 4"),
        (2, "missing", None),
    ]
    scores = _queried_variants(program, queried_exercises(program), list(enumerate(cases)), 3)
    got = {cases[i][1]: (s.points, s.feedback) for i, s in scores.items()}
    assert got["right"] == (1.0, "")
    assert got["blank"][0] == 0 and got["blank"][1].startswith("not attempted yet")
    assert got["cheat"][0] == 0 and "No module named 'mirrorkit'" in got["cheat"][1]
    assert got["int"][0] == 0 and "must be a function" in got["int"][1]
    assert got["missing"][0] == 0 and "no answer cell" in got["missing"][1]
