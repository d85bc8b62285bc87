"""What the tests of answers that cross as traced graphs share: a model, data, refusals.

``REFUSED``: answers whose graphs the judge must refuse, which each kind's tests write its
own way. Each case is a line before the answer's function (if any), and the value of
``scale`` in its body: a Python callback, a variable made outside the answer, a file read.
The judge refuses each by the operation it names.
"""

import importlib.util
from pathlib import Path

import keras
import numpy as np
import pytest

from bookbuild.grading._exports import ExportError, import_value

REFUSED = {
    "a Python callback": (
        "",
        "tf.reshape(tf.py_function(lambda: 0.5, [], tf.float32), [])",
        "operations the grader does not run: EagerPyFunc",
    ),
    "a variable made outside": (
        "weight = tf.Variable(0.5)\n",
        "weight",
        "operations the grader does not run: ReadVariableOp",
    ),
    "reading a file": ("", "tf.strings.to_number(tf.io.read_file('/etc/hostname'))", "ReadFile"),
}


def refused_answer(case: str, head: str, returned: str) -> str:
    """The answer of ``case``: ``head`` (a ``def`` line), ``scale``, then ``return returned``."""
    before, scale, _ = REFUSED[case]
    return f"{before}{head}    scale = {scale}\n    return {returned}"


def assert_refused(case: str, record: dict, kind: str, strategy, words=None) -> None:
    """The judge refuses ``record`` (the export of :func:`refused_answer`), naming why
    (``words``: the kind's own, where they differ)."""
    with pytest.raises(ExportError, match=words or REFUSED[case][2]):
        import_value(record, kind, strategy)


def make_model():
    """A small regressor, the same weights at every call."""
    keras.utils.set_random_seed(3)
    return keras.Sequential(
        [keras.Input((8,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(1)]
    )


def regression(examples: int = 32) -> tuple:
    """``(x, y)``: ``examples`` inputs of 8 features and a linear target."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(examples, 8)).astype("float32")
    return x, (3.0 * x @ rng.normal(size=(8, 1))).astype("float32")


def chapter_8_variants(exercise: int) -> dict[str, str]:
    """``{label: answer}``: the right and wrong answers of chapter 8's ``exercise``."""
    path = Path(__file__).parents[1] / "book" / "variants" / "08_scaling_the_batch.py"
    spec = importlib.util.spec_from_file_location(f"variants_08_{exercise}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    right = {f"right {k}": code for k, code in enumerate(module.RIGHT[exercise])}
    return right | {name: code for name, code, _ in module.WRONG[exercise]}
