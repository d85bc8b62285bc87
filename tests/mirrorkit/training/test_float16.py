"""float16 in plain Python rounds as NumPy's and TensorFlow's float16 do, overflow included."""

import math

import numpy as np
import pytest
import tensorflow as tf

from mirrorkit.training.float16 import (
    FLOAT16_MAX,
    FLOAT16_SMALLEST,
    FLOAT16_SMALLEST_NORMAL,
    scaled_in_float16,
    to_float16,
)

# Around the edges of the range (65504, the 65520 that rounds up to inf, the subnormals and
# the halfway points that round to even) and the chapter's 1e-8.
VALUES = [0.0, 1e-8, 0.1, 1.0, 2.0, 3.0, 1 / 3, 65504.0, 65519.0, 65519.999, 65520.0, 70000.0]
VALUES += [2.0**-24, 2.0**-25, 3 * 2.0**-26, 2.0**-14, 6e-5, 1e-5, 1e30, 2.0**15 * 2.5]
VALUES += [-v for v in VALUES] + [math.inf, -math.inf]


def test_to_float16_is_the_float16_cast():
    with np.errstate(over="ignore"):
        numpy = [float(np.float16(v)) for v in VALUES]
    assert [to_float16(v) for v in VALUES] == numpy
    assert math.isnan(to_float16(math.nan))


def test_to_float16_is_tensorflows_cast_from_float32():  # as mixed precision casts
    # (TensorFlow casts a float64 through float32: 65519.999 becomes 65520.0 and then inf.)
    singles = tf.constant(VALUES, tf.float32)
    tensorflow = tf.cast(singles, tf.float16).numpy().astype(float).tolist()
    assert [to_float16(float(v)) for v in singles.numpy()] == tensorflow


def test_the_constants_are_numpys():
    info = np.finfo(np.float16)
    assert float(info.max) == FLOAT16_MAX
    assert float(info.tiny) == FLOAT16_SMALLEST_NORMAL  # the chapter prints 6.104e-05
    assert float(info.smallest_subnormal) == FLOAT16_SMALLEST


@pytest.mark.parametrize("scale", [1.0, 2.0**10, 2.0**15, 2.0**16])
def test_a_scaled_gradient_is_the_float16_product_divided_back(scale):
    gradients = [1e-8, 3e-7, 1e-4, 0.5, 1.9, 2.1, 40.0]
    scaled = tf.cast(tf.constant(gradients, tf.float64) * scale, tf.float16)
    back = tf.cast(scaled, tf.float32) / tf.constant(scale, tf.float32)
    ours = [scaled_in_float16(g, scale) for g in gradients]
    assert [s for s, _ in ours] == scaled.numpy().astype(float).tolist()
    assert [b for _, b in ours] == back.numpy().astype(float).tolist()


def test_the_chapters_numbers():  # chapter 4: a gradient of 1e-8 is 0; above 65504/32768 is inf
    assert to_float16(1e-8) == 0.0
    assert round(65504 / 32768, 3) == 1.999
    assert scaled_in_float16(1.999, 2.0**15)[0] == 65504.0  # 65503.2 rounds to the largest
    assert scaled_in_float16(2.0, 2.0**15)[0] == math.inf  # 65536: past float16


def test_wrong_arguments_are_refused(refuses):
    refuses(lambda: to_float16("1"), TypeError, "value", "a number")
    refuses(lambda: scaled_in_float16(1.0, 0), ValueError, "scale", "above 0")
