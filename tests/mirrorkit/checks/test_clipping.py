"""mk.check_clipping's data of several inputs and outputs, and its tolerance under mixed
precision (the model-shape matrix, tests/test_model_matrix.py, runs them on real models)."""

import numpy as np
import pytest

import mirrorkit as mk
from mirrorkit.checks._clipping_verdicts import agree, precision_words
from mirrorkit.checks._learner_data import examples, learner_structures


def test_a_models_dict_and_tuple_of_arrays_are_read_as_one_batch():
    x = {"price": np.ones((6, 3)), "size": [np.zeros((6, 2)), np.zeros((6, 1))]}
    got_x, got_y = learner_structures((x, (np.ones((6, 1)), np.ones((6, 1)))), "batch")
    assert isinstance(got_x["size"], tuple) and isinstance(got_y, tuple)  # tf.data takes tuples
    assert examples(got_x) == 6


def test_plain_arrays_and_lists_of_numbers_are_read_as_before():
    x, y = learner_structures(([[1.0, 2.0], [3.0, 4.0]], [1.0, 2.0]), "batch")
    assert x.shape == (2, 2) and y.shape == (2,)


def test_arrays_of_unequal_examples_are_refused_clearly(strategy, refuses):
    batch = ({"price": np.ones((8, 3)), "size": np.ones((7, 2))}, np.ones((8, 1)))
    message = refuses(
        lambda: mk.check_clipping(lambda g, c: g, strategy, None, batch, clip_norm=1.0),
        ValueError,
        "batch",
        r": write batch=\(x, y\) with every array of x and y cut to the same n examples",
    )
    assert "arrays of 8, 7, 8 examples" in message


@pytest.mark.parametrize(
    ("rtol", "close", "far"), [(1e-4, 1.00001, 1.001), (2.0**-5, 1.01, 1.1)], ids=["f32", "bf16"]
)
def test_updates_agree_to_the_tolerance_of_the_models_precision(rtol, close, far):
    reference = np.array([3.0, 4.0])
    assert agree(reference * close, reference, rtol) and not agree(reference * far, reference, rtol)
    assert precision_words(rtol) == "." if rtol == 1e-4 else "precision" in precision_words(rtol)
