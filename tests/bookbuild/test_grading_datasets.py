"""Chapter 2 judged by an executor: a dataset or a dataset function crosses as its graphs.

No sandbox here: for every wrong and right answer of the chapter's variants, and answers
they lack, the answer is exported as the student's process does, rebuilt from its JSON
record as the executor does (a graph of allow-listed operations only), asked by
``check_input_pipeline``'s ask half, and the record, after a JSON trip, judged as the grader
does: the verdict and the words are those the check gives the learner's own answer. The
sandboxed runs are `tests/book/test_labs.py`'s.
"""

import importlib.util
import json

import numpy as np
import pytest
import tensorflow as tf

import mirrorkit as mk
from bookbuild import ROOT
from bookbuild.grading import _executed
from bookbuild.grading._exports import export_value, import_value

pytestmark = pytest.mark.grading

_spec = importlib.util.spec_from_file_location(
    "variants_02", ROOT / "tests" / "book" / "variants" / "02_input_distribution.py"
)
variants = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(variants)
ASKS = {1: "train", 2: "make_train", 3: "stream"}
MORE = {
    2: [
        "def make_train(context):\n    raise ValueError('written for one machine')",
        "def make_train(context):\n"
        "    if context.num_input_pipelines > 1:\n"
        "        raise ValueError('one pipeline only')\n"
        "    return examples.take(48).batch(context.get_per_replica_batch_size(GLOBAL_BATCH),"
        " drop_remainder=True)",
        "def make_train(context):\n"
        "    n = context.get_per_replica_batch_size(GLOBAL_BATCH)\n"
        "    return examples.take(48).shard(context.num_input_pipelines,"
        " context.input_pipeline_id).batch(n).filter(lambda i, xy: tf.size(i) == n)",
        "def make_train(context):\n    return 3",
        "make_train = examples.take(48).batch(GLOBAL_BATCH, drop_remainder=True)",
    ],
    1: [
        "train = examples.take(50).map(lambda i, xy: (tf.cast(i, tf.float32), xy))"
        ".batch(8 * strategy.num_replicas_in_sync, drop_remainder=True)",
        "train = examples.take(48).batch(8 * strategy.num_replicas_in_sync)"
        ".filter(lambda i, xy: tf.size(i) == 8 * strategy.num_replicas_in_sync)",
    ],
}
CASES = [
    (number, code)
    for number in ASKS
    for code in [
        f"{ASKS[number]} = ...",
        *(c for _, c, _ in variants.WRONG[number]),
        *variants.RIGHT[number],
        *MORE.get(number, []),
    ]
]
CHECKS = {
    1: {"per_replica_batch": 8, "first_examples": 50},
    2: {"global_batch": "GLOBAL_BATCH", "first_examples": 48},
    3: {"global_batch": "GLOBAL_BATCH", "auto_shard": "DATA", "repeats": True},
}


@pytest.fixture(scope="module")
def chapter(strategy):
    rng = np.random.default_rng(7)
    features = rng.normal(size=(64, 3)).astype("float32")
    labels = features.sum(axis=1, keepdims=True)
    examples = tf.data.Dataset.from_tensor_slices((features, labels)).enumerate()
    return {
        "tf": tf,
        "np": np,
        "mk": mk,
        "strategy": strategy,
        "examples": examples,
        "GLOBAL_BATCH": 4 * strategy.num_replicas_in_sync,
        "SEED": 7,
    }


@pytest.mark.parametrize(("number", "code"), CASES, ids=range(len(CASES)))
def test_the_executed_pipeline_gets_the_verdict_the_pipeline_gets(number, code, chapter):
    namespace = dict(chapter)
    exec(code, namespace)
    answer, strategy = namespace[ASKS[number]], chapter["strategy"]
    keywords = {k: chapter.get(v, v) for k, v in CHECKS[number].items()}
    try:
        verdict = mk.check_input_pipeline(answer, strategy, **keywords)
        expected = (verdict.passed, "" if verdict.passed else verdict.message)
    except Exception as error:  # noqa: BLE001 - the runner reports a check that stopped
        expected = (False, f"the check stopped: {type(error).__name__}")
    record = json.loads(json.dumps(export_value(answer, 4, "dataset", strategy)))
    rebuilt = import_value(record, "dataset", strategy)
    line = _executed.ask("check_input_pipeline", rebuilt, [strategy], keywords)
    got = _executed.judge("check_input_pipeline", json.loads(json.dumps(line)))
    if expected[1].startswith("the check stopped"):
        assert not got[0] and got[1].startswith(expected[1])
    else:
        assert got == expected
