"""Chapter 7's exercises asked at the check on drawn inputs, judged from what came back.

No sandbox here: for every variant of the chapter's two exercises, the answer is asked as
the student's process asks it (an evaluation on a model and examples drawn from the row's
seed; a restore on checkpoints drawn from a secret), what came back crosses as JSON, and the
verdict given from it alone has the check's verdict on the chapter's own inputs and names
the same mistake. Then records a student's process could forge or garble: none passes,
none raises. Chapter 7 is graded this way through the sandbox in `tests/book/test_labs.py`.
"""

import importlib.util
import json
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import mirrorkit as mk
from bookbuild.grading import _asked
from mirrorkit.checks._evaluation_query import drawn_inputs

# Grading runs only in the book's environment (dev.py grade): these run in the reference job.
pytestmark = pytest.mark.grading

SEED, GLOBAL_BATCH, SECRET = 11, 16, 987_654_321


def _variants(exercise: int) -> dict[str, tuple[str, str]]:
    """``{label: (answer, words)}`` of chapter 7's ``exercise`` (words "" for a right one)."""
    path = Path(__file__).parents[1] / "book" / "variants" / "07_evaluation_and_saving.py"
    spec = importlib.util.spec_from_file_location(f"variants_07_{exercise}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    right = {f"right {k}": (code, "") for k, code in enumerate(module.RIGHT[exercise])}
    return right | {name: (code, words) for name, code, words in module.WRONG[exercise]}


@pytest.fixture(scope="module")
def chapter(strategy, tmp_path_factory):
    """The names chapter 7's exercises use: a trained model, its checkpoint, a restored copy."""
    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(256, 4)).astype("float32")
    y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0]], "float32")).astype("float32")

    def build_model():
        keras.utils.set_random_seed(SEED)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
        model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
        return model

    with strategy.scope():
        model = build_model()
    model.fit(x, y, batch_size=GLOBAL_BATCH, epochs=1, verbose=0)
    folder = tmp_path_factory.mktemp("mirrored")
    checkpoint = tf.train.Checkpoint(model=model, optimizer=model.optimizer)
    mirrored_path = checkpoint.save(folder / "ckpt")
    plain = build_model()
    plain.optimizer.build(plain.trainable_variables)
    tf.train.Checkpoint(model=plain, optimizer=plain.optimizer).restore(mirrored_path)
    names = {"tf": tf, "keras": keras, "np": np, "strategy": strategy, "model": model}
    return names | {
        "build_model": build_model,
        "GLOBAL_BATCH": GLOBAL_BATCH,
        "x": x,
        "y": y,
        "mirrored_path": mirrored_path,
        "plain": plain,
    }


def _answer(chapter: dict, code: str, name: str):
    namespace = dict(chapter)
    exec(code, namespace)
    return namespace[name]


def _crossed(value):
    """``value`` as the grader reads it: through JSON."""
    return json.loads(json.dumps(value))


def _evaluation_judged(chapter, evaluate, seed=SEED):
    arguments = [chapter["strategy"], chapter["model"], (chapter["x"], chapter["y"])]
    record = _asked.ask("evaluate", evaluate, arguments, {"global_batch": GLOBAL_BATCH}, None, seed)
    line = _crossed({"names": {"evaluate": record}})
    return _asked.judge("evaluate", line, None, seed, chapter["strategy"].num_replicas_in_sync)


@pytest.fixture(scope="module")
def drawn(chapter):
    """A restore's drawn inputs, as the inputs process seals them."""
    arguments = [chapter["mirrored_path"], chapter["model"]]
    return _crossed(_asked.drawn_for("restore", arguments, {}, SECRET))


def _restore_judged(chapter, drawn, restore):
    arguments = [chapter["mirrored_path"], chapter["model"]]
    record = _asked.ask("restore", restore, arguments, {}, _asked.sent(drawn), SEED)
    line = _crossed({"names": {"restore_on_one_device": record}})
    return _asked.judge("restore", line, drawn, SEED, chapter["strategy"].num_replicas_in_sync)


@pytest.mark.parametrize(("label", "answer"), _variants(1).items())
def test_an_evaluation_asked_on_drawn_inputs_gets_the_checks_verdict(chapter, label, answer):
    code, words = answer
    evaluate = _answer(chapter, code, "evaluate")
    expected = mk.check_evaluation(
        evaluate, chapter["strategy"], chapter["model"], (chapter["x"], chapter["y"]),
        global_batch=GLOBAL_BATCH,
    )  # fmt: skip
    passed, feedback = _evaluation_judged(chapter, evaluate)
    assert passed is expected.passed, (label, feedback, expected.message)
    if words and not passed:  # a number fixed for 4 replicas is right at 4: the other count
        assert words in feedback.lower() and words in expected.message.lower()
    assert passed or words, (label, feedback)


@pytest.mark.parametrize(("label", "answer"), _variants(2).items())
def test_a_restore_asked_on_drawn_checkpoints_gets_the_checks_verdict(
    chapter, drawn, label, answer
):
    code, words = answer
    restore = _answer(chapter, code, "restore_on_one_device")
    expected = mk.check_restore(restore, chapter["mirrored_path"], chapter["model"])
    passed, feedback = _restore_judged(chapter, drawn, restore)
    assert passed is expected.passed is (not words), (label, feedback, expected.message)
    assert feedback == ("" if passed else expected.message)
    assert words in feedback.lower()


def test_the_student_gets_the_drawn_files_but_not_what_they_hold(chapter, drawn):
    sent = _asked.sent(drawn)
    assert len(drawn["saved"]) == len(sent["drawn"]) == _asked.DRAWN
    assert "saved" not in json.dumps(sent) and str(SECRET) not in json.dumps(sent)
    weights = [record["weights"] for record in drawn["saved"]]
    assert weights[0] != weights[1]  # two checkpoints, two sets of values
    again = _crossed(
        _asked.drawn_for("restore", [chapter["mirrored_path"], chapter["model"]], {}, 5)
    )
    assert again["saved"][0]["weights"] != weights[0]  # another secret, other values


def test_drawn_examples_differ_with_the_seed_so_no_table_of_answers_covers_them():
    first, second = (drawn_inputs(s, global_batch=16, replicas=4) for s in (1, 2))
    assert not np.array_equal(first["x"], second["x"])
    assert not np.array_equal(first["kernel"], second["kernel"])


def test_a_restore_record_that_claims_the_saved_values_without_reading_fails(chapter, drawn):
    restore = _answer(chapter, _variants(2)["right 0"][0], "restore_on_one_device")
    arguments = [chapter["mirrored_path"], chapter["model"]]
    record = _crossed(_asked.ask("restore", restore, arguments, {}, _asked.sent(drawn), SEED))
    forged = dict(record, restored=[record["restored"][0]] * (_asked.DRAWN + 1))
    passed, feedback = _asked.judge("restore", {"names": {"r": forged}}, drawn, SEED, 4)
    assert not passed and "does not read the checkpoint at its path" in feedback
    emptied = {"saved": {"weights": [], "steps": 0, "optimizer": []}, "restored": [{}] * 3}
    passed, _ = _asked.judge("restore", {"names": {"r": emptied}}, drawn, SEED, 4)
    assert not passed


GARBLED = [
    None,
    "text",
    [],
    {"names": "x"},
    {"names": {"a": 1, "b": 2}},
    {"names": {"a": {"records": [{"value": "1"}], "global_batch": 16, "shape": [4, 1]}}},
    {"names": {"a": {"records": "x", "global_batch": 16.0, "shape": [4, 1]}}},
    {"names": {"a": {"records": [], "global_batch": 16, "shape": [0, 1]}}},
    {"names": {"a": {"records": [], "global_batch": 10**9, "shape": [4, 1]}}},
    {"names": {"a": {"saved": [1], "restored": [[1, 2], {"weights": [[1]]}, None]}}},
    {"names": {"a": {"restored": [{"weights": [[[2], "f", "h"]], "optimizer": {"steps": "1"}}]}}},
]


@pytest.mark.parametrize("line", GARBLED, ids=range(len(GARBLED)))
@pytest.mark.parametrize("kind", ["evaluate", "restore"])
def test_a_garbled_record_fails_and_raises_nothing(drawn, kind, line):
    passed, feedback = _asked.judge(kind, line, drawn, SEED, 4)
    assert passed is False and feedback


def test_the_checks_arguments_are_read_by_name_however_the_cell_passes_them(chapter, drawn):
    restore = _answer(chapter, _variants(2)["right 0"][0], "restore_on_one_device")
    named = {"path": chapter["mirrored_path"], "reference": chapter["model"]}
    record = _crossed(_asked.ask("restore", restore, [], named, _asked.sent(drawn), SEED))
    passed, feedback = _asked.judge("restore", {"names": {"r": record}}, drawn, SEED, 4)
    assert passed, feedback
    evaluate = _answer(chapter, _variants(1)["right 0"][0], "evaluate")
    keywords = {"data": (chapter["x"], chapter["y"]), "global_batch": GLOBAL_BATCH}
    record = _asked.ask("evaluate", evaluate, [chapter["strategy"], chapter["model"]], keywords,
                        None, SEED)  # fmt: skip
    replicas = chapter["strategy"].num_replicas_in_sync
    line = _crossed({"names": {"evaluate": record}})
    assert _asked.judge("evaluate", line, None, SEED, replicas) == (True, "")
