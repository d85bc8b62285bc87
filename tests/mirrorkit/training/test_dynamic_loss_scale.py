"""Keras's dynamic loss scale in plain Python, against the real keras LossScaleOptimizer."""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

import mirrorkit as mk
from mirrorkit.training.dynamic_loss_scale import dynamic_loss_scale, next_scale, scale_search


def keras_steps(gradients, *, initial_scale, dynamic_growth_steps):
    """Per step: the scale in force, whether the weight moved, the scale after."""
    optimizer = keras.optimizers.LossScaleOptimizer(
        keras.optimizers.SGD(0.01),
        initial_scale=initial_scale,
        dynamic_growth_steps=dynamic_growth_steps,
    )
    weight = keras.Variable(np.ones(1, "float32"))
    optimizer.build([weight])
    rows = []
    for gradient in gradients:
        scale, before = float(optimizer.dynamic_scale.numpy()), weight.numpy().copy()
        grad = gradient(scale) if callable(gradient) else gradient
        optimizer.apply([tf.constant([grad], tf.float32)], [weight])
        moved = not np.array_equal(before, weight.numpy())
        rows.append((scale, moved, float(optimizer.dynamic_scale.numpy())))
    return rows


@pytest.mark.parametrize(
    ("pattern", "initial_scale", "growth"),
    [
        ("gg.gg.g", 8.0, 2),
        ("ggggggg.ggg", 2.0**15, 3),
        ("..gg...gggggggg", 1024.0, 1),
        ("g" * 9, 3.0, 4),  # a scale that is not a power of two
        ("gg", 2.0**126, 1),  # doubling past float32's largest: inf
    ],
)
def test_the_rule_is_keras_loss_scale_optimizer(pattern, initial_scale, growth):
    finite = [c == "g" for c in pattern]
    # A finite step's scaled gradient is the scale itself: unscaled, 1, so the weight moves.
    gradients = [(lambda scale: scale) if ok else (lambda scale: math.inf) for ok in finite]
    measured = keras_steps(gradients, initial_scale=initial_scale, dynamic_growth_steps=growth)
    ours = dynamic_loss_scale(finite, initial_scale=initial_scale, dynamic_growth_steps=growth)
    assert [(s.scale, s.applied, s.next_scale) for s in ours] == measured


def test_a_nan_is_an_overflow_too():
    measured = keras_steps([math.nan, 1.0], initial_scale=8.0, dynamic_growth_steps=1)
    assert measured == [(8.0, False, 4.0), (4.0, True, 8.0)]
    assert next_scale(8.0, 0, False, dynamic_growth_steps=1) == (4.0, 0)


def test_the_scale_search_is_kerass_on_real_float16_gradients():
    # Each step's gradient is the true one times the scale, cast to float16 as mixed
    # precision computes it: it overflows whenever the scaled value passes 65504.
    true = [3.0, 3.0, 0.2, 0.2, 0.2, 0.2, 5.0, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01]

    def in_float16(g):
        return lambda scale: float(tf.cast(tf.constant(g * scale, tf.float32), tf.float16))

    measured = keras_steps(
        [in_float16(g) for g in true], initial_scale=2.0**15, dynamic_growth_steps=2
    )
    ours = scale_search(true, initial_scale=2.0**15, dynamic_growth_steps=2)
    assert [(s.scale, s.applied, s.next_scale) for s in ours] == measured
    assert not all(s.applied for s in ours) and any(s.applied for s in ours)


def test_the_chapters_run_follows_the_rule(strategy):  # chapter 4's run_loss_scale table
    history = mk.run_loss_scale(
        strategy,
        policy="mixed_float16",
        steps=8,
        overflow_steps=(3,),
        initial_scale=2**15,
        dynamic_growth_steps=2,
    )
    finite = [not r.overflow for r in history.records]
    ours = dynamic_loss_scale(finite, initial_scale=2**15, dynamic_growth_steps=2)
    assert [(s.scale, s.applied, s.next_scale) for s in ours] == [
        (r.loss_scale, r.weights_changed, r.next_scale) for r in history.records
    ]
    assert [int(s.scale) for s in ours] == [32768, 32768, 65536, 65536, 32768, 32768, 65536, 65536]
    assert ours[-1].next_scale == 131072


def test_wrong_arguments_are_refused(refuses):
    refuses(lambda: dynamic_loss_scale([True, 1]), TypeError, "finite[1]", "True or False")
    refuses(lambda: dynamic_loss_scale([True], initial_scale=0), ValueError, "initial_scale", "0")
    refuses(
        lambda: next_scale(8.0, 0, True, dynamic_growth_steps=0),
        ValueError,
        "dynamic_growth_steps",
        "at least 1",
    )
    refuses(lambda: scale_search(["big"]), TypeError, "largest_gradients[0]", "a number")
