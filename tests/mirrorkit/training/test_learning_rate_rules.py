"""Chapter 8's learning rates in plain Python equal Keras's, step by step and bit for bit."""

import keras
import numpy as np
import pytest

import mirrorkit as mk
from mirrorkit.training.learning_rate_rules import (
    RULES,
    learning_rates,
    scaled_learning_rate,
    warmup_learning_rate,
)


# The chapter's schedules (0.1 and 0.6 on 8 replicas, 8 steps of warm-up; the docstring's
# 0.1 on 4 with 3), and others whose fractions do not come out round.
@pytest.mark.parametrize(
    ("base", "replicas", "warmup"),
    [(0.1, 8, 8), (0.6, 8, 8), (0.1, 4, 3), (0.01, 8, 5), (0.3, 3, 7), (0.07, 5, 13)],
)
def test_the_warm_up_is_keras_cosine_decay_bit_for_bit(base, replicas, warmup):
    keras_schedule = keras.optimizers.schedules.CosineDecay(
        base, decay_steps=1, alpha=1.0, warmup_target=base * replicas, warmup_steps=warmup
    )
    mirrorkit_schedule = mk.linear_scaling_schedule(base, replicas, warmup_steps=warmup)
    steps = warmup + 12
    ours = learning_rates(base, replicas, steps, warmup_steps=warmup)
    assert ours == [float(keras_schedule(step)) for step in range(steps)]
    assert ours == [float(mirrorkit_schedule(step)) for step in range(steps)]


def test_the_rate_the_optimizer_uses_is_ours():  # the float32 it keeps, with and without warm-up
    schedule = mk.linear_scaling_schedule(0.1, 8, warmup_steps=8)
    ours = learning_rates(0.1, 8, 11, warmup_steps=8)
    optimizer = keras.optimizers.SGD(learning_rate=schedule)
    variable = keras.Variable(np.zeros(2, "float32"))
    optimizer.build([variable])
    used = []
    for _ in range(11):
        used.append(float(optimizer.learning_rate))
        optimizer.apply([np.zeros(2, "float32")], [variable])
    assert used == ours
    constant = keras.optimizers.SGD(learning_rate=mk.linear_scaling_schedule(0.1, 8))
    assert learning_rates(0.1, 8, 1) == [float(constant.learning_rate)]


def test_the_chapter_printed_warm_up():  # chapter 8, "Warm-up"
    rounded = [round(rate, 3) for rate in learning_rates(0.1, 8, 11, warmup_steps=8)]
    assert rounded == [0.1, 0.188, 0.275, 0.362, 0.45, 0.538, 0.625, 0.713, 0.8, 0.8, 0.8]


def test_the_rules_are_the_chapter_rates():  # chapter 8's Adam: 0.01 on 8 replicas
    rates = {rule: scaled_learning_rate(0.01, 8, rule=rule) for rule in RULES}
    assert rates == {"same": 0.01, "linear": 0.08, "sqrt": 0.01 * 8**0.5}
    assert f"{rates['sqrt']:.4f}" == "0.0283"
    assert scaled_learning_rate(0.1, 8) == mk.linear_scaling_schedule(0.1, 8)


def test_wrong_arguments_are_refused(refuses):
    refuses(lambda: scaled_learning_rate(0.1, 8, rule="square"), ValueError, "rule", "'sqrt'")
    refuses(lambda: scaled_learning_rate(0, 8), ValueError, "base_learning_rate", "above 0")
    refuses(lambda: learning_rates(0.1, 8.0, 3), TypeError, "replicas", "whole number")
    refuses(
        lambda: warmup_learning_rate(-1, 0.1, 0.8, warmup_steps=2), ValueError, "step", "0 or more"
    )
