"""The values chapter 5's browser lab replays: stored from the real TensorFlow run, replayed
without TensorFlow or NumPy.

book/browser/05_ring_values.json holds one step's gradients of chapter 5 (its tiny model, at
the chapter's SEED and REPLICAS) and what the strategy's own all-reduce made of them. Here the
chapter's step runs again on a real MirroredStrategy over this session's simulated replicas
and must give exactly those numbers; then the plain-Python replay is checked on them.

To write the file again (after changing the chapter's step), run this module's tests with
MIRRORBOOK_WRITE_RING_VALUES=1. Write it from pytest (or a Jupyter kernel), not from a plain
``python -c``: there, 4 of the 76 gradients came out one bit different (the same step, the same
seeds; the cause was not found), while pytest and a kernel running the chapter's cells agree.
"""

from __future__ import annotations

import json
import os

import keras
import numpy as np
import tensorflow as tf

import mirrorkit as mk
from mirrorkit.measure.replay import AllReduceReplay
from tests.conftest import REPLICAS, ROOT

VALUES = ROOT / "book" / "browser" / "05_ring_values.json"
SEED = 42  # chapter 5's parameters (jupyter_book.toml); the session has REPLICAS replicas


def chapter_5_replay() -> AllReduceReplay:
    """Chapter 5's "Inside one all-reduce" step, as the chapter writes it, replayed."""
    strategy = mk.make_strategy()
    with strategy.scope():
        keras.utils.set_random_seed(SEED)
        tiny = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
    tiny_batch_size = 8 * REPLICAS
    features = np.random.default_rng(SEED).normal(size=(tiny_batch_size, 5)).astype("float32")
    data = tf.data.Dataset.from_tensor_slices((features[:, :4], features[:, 4:]))
    batch = next(iter(strategy.experimental_distribute_dataset(data.batch(tiny_batch_size))))

    @tf.function
    def gradients_of(batch):
        def replica_gradients(x_batch, y_batch):
            with tf.GradientTape() as tape:
                per_example = keras.losses.mean_squared_error(y_batch, tiny(x_batch))
                loss = tf.nn.compute_average_loss(per_example, global_batch_size=tiny_batch_size)
            return tape.gradient(loss, tiny.trainable_variables)

        return strategy.run(replica_gradients, args=batch)

    return mk.replay_all_reduce(strategy, gradients_of(batch))


def test_the_chapters_step_gives_the_stored_values_to_float32_rounding():
    if os.environ.get("MIRRORBOOK_WRITE_RING_VALUES"):
        chapter_5_replay().to_json(VALUES)
    stored = json.loads(VALUES.read_text(encoding="utf-8"))
    fresh = json.loads(chapter_5_replay().to_json())
    # The gradients' last bits depend on the processor's vector instructions (a machine with
    # AVX but no AVX2 gives some of them one unit in the last place apart): values to float32
    # rounding, the rest exactly.
    numbers = ("inputs", "strategy_result")
    assert {k: v for k, v in fresh.items() if k not in numbers} == {
        k: v for k, v in stored.items() if k not in numbers
    }
    for key in numbers:
        np.testing.assert_allclose(fresh[key], stored[key], rtol=1e-6, atol=1e-6)
    assert (stored["algorithm"], len(stored["devices"]), stored["dtype"]) == (
        "collective",
        REPLICAS,
        "float32",
    )
    # The chapter prints replica 1's first row of the kernel's gradient, to 4 decimals (0.5877 ...).
    assert round(stored["inputs"][1][0], 4) == 0.5877


def test_the_replay_of_the_stored_values_is_the_strategys_sum_up_to_the_order_of_additions():
    replay = AllReduceReplay.from_json(VALUES)
    end = replay.buffers(len(replay.schedule.steps))
    # The replay's float32 sums are NumPy's float32 sums in the replay's order, bit for bit.
    inputs = [np.array(x, np.float32) for x in replay.inputs]
    for c, (lo, hi) in enumerate(replay.chunk_bounds):
        order = [(c + k) % REPLICAS for k in range(REPLICAS)]  # the ring starts chunk c at c
        total = inputs[order[0]][lo:hi]
        for r in order[1:]:
            total = total + inputs[r][lo:hi]
        for buffer in end:
            np.testing.assert_array_equal(np.array(buffer[lo:hi], np.float32), total)
    # TensorFlow's RingReducer cuts the tensor differently: it rounds each chunk up to a
    # 64-byte boundary, so 19 float32 values make chunks of 16 and 3 values and two empty
    # ones, where the replay cuts 5, 5, 5, 4. Where the two cuts start a value's sum at
    # different replicas, its four values are added in another order, and 6 of the 19 sums
    # differ in the last bit. With TensorFlow's cut, the same ring gives its result exactly.
    strategy = np.array(replay.strategy_result, np.float32)
    assert not np.array_equal(np.array(end, np.float32), strategy)
    assert (strategy == strategy[0]).all()  # every replica got the same result
    tensorflow_cut = [(0, 16), (16, 19), (19, 19), (19, 19)]
    for c, (lo, hi) in enumerate(tensorflow_cut):
        order = [(c + k) % REPLICAS for k in range(REPLICAS)]
        total = inputs[order[0]][lo:hi]
        for r in order[1:]:
            total = total + inputs[r][lo:hi]
        np.testing.assert_array_equal(strategy[0][lo:hi], total)
    differ = np.flatnonzero(np.array(end[0], np.float32) != strategy[0])
    assert differ.tolist() == [8, 10, 11, 12, 16, 18]
    ulp = np.spacing(np.abs(strategy[0][differ]))
    assert (np.abs(np.array(end[0], np.float32)[differ] - strategy[0][differ]) <= ulp).all()
    assert replay.comparison.verdict == "rounding"
    assert replay.comparison.replicas_agree and replay.comparison.strategy_error <= 1
    # Every order of the additions is the exact sum within the bound the report states.
    exact = np.sum(np.array(replay.inputs, np.float64), axis=0)
    assert np.abs(strategy[0] - exact).max() <= replay.comparison.bound
