"""The all-reduce replay: schedules that reduce, and a replay checked against TensorFlow's own."""

import json
import subprocess
import sys
from array import array

import numpy as np
import pytest
import tensorflow as tf

import mirrorkit as mk
from mirrorkit.measure.replay import AllReduceReplay, _compare
from mirrorkit.measure.schedules import schedule
from tests.conftest import REPLICAS, ROOT

ALGORITHMS = ("collective", "one_device", "hierarchical_copy")


def _sums(plan, inputs):
    """Apply a schedule to small NumPy vectors, the slow obvious way."""
    bounds = plan.chunk_bounds(len(inputs[0]))
    buffers = [np.array(x, dtype=np.float64) for x in inputs]
    for step in plan.steps:
        sent = [(t, buffers[t.source][slice(*bounds[t.chunk])].copy()) for t in step.transfers]
        for t, chunk in sent:
            part = slice(*bounds[t.chunk])
            buffers[t.target][part] = (
                buffers[t.target][part] + chunk if t.combine == "add" else chunk
            )
    return buffers


# -- schedules, without TensorFlow ---------------------------------------------------------


@pytest.mark.parametrize("algorithm", [*ALGORITHMS, "nccl"])
@pytest.mark.parametrize("n", [2, 4, 6, 8])
def test_every_schedule_leaves_every_replica_with_the_sum(algorithm, n):
    plan = schedule(algorithm, n)
    inputs = [2.0**r * np.arange(1, 12) for r in range(n)]  # distinct powers: any miss shows
    for buffer in _sums(plan, inputs):
        np.testing.assert_array_equal(buffer, sum(inputs))
    assert plan.left_out() == ()


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
def test_the_ring_takes_2_n_minus_1_steps_of_one_chunk(n):
    plan = schedule("collective", n)
    assert len(plan.steps) == 2 * (n - 1)
    assert [s.phase for s in plan.steps] == ["reduce-scatter"] * (n - 1) + ["all-gather"] * (n - 1)
    nbytes = 1000 * n  # divides into n equal chunks
    assert plan.step_link_bytes(nbytes) == [nbytes // n] * (2 * (n - 1))
    assert plan.sent_bytes(nbytes) == [2 * (n - 1) * nbytes // n] * n  # busbw's factor
    for step in plan.steps:  # every replica sends once and receives once per step
        assert sorted(t.source for t in step.transfers) == list(range(n))
        assert sorted(t.target for t in step.transfers) == list(range(n))


def test_one_device_loads_replica_0s_link_n_minus_1_times_each_way():
    plan = schedule("one_device", 4)
    assert plan.step_link_bytes(100) == [300, 300]
    assert plan.sent_bytes(100) == [300, 100, 100, 100]


def test_hierarchical_copy_with_an_odd_count_leaves_the_last_replica_out():
    plan = schedule("hierarchical_copy", 5)
    assert plan.left_out() == (4,)
    inputs = [np.full(3, 10.0**r) for r in range(5)]
    for buffer in _sums(plan, inputs):  # everyone receives a sum without replica 4
        np.testing.assert_array_equal(buffer, np.full(3, 1111.0))
    assert "neither group" in plan.steps[0].what


def test_uneven_chunks_differ_by_at_most_one_element():
    assert schedule("collective", 4).chunk_bounds(10) == [(0, 3), (3, 6), (6, 8), (8, 10)]
    assert schedule("collective", 4).chunk_bounds(2) == [(0, 1), (1, 2), (2, 2), (2, 2)]


@pytest.mark.parametrize(
    ("algorithm", "most", "steps_sum"),
    [("collective", "116 B", "120 B (1.58 x)"), ("one_device", "228 B", "456 B (6 x)")],
)
def test_the_bytes_line_tells_one_links_load_from_the_steps_busiest_links(
    algorithm, most, steps_sum
):
    # 19 float32 values on 4 replicas, chapter 5's replay: the ring's chunks are 5, 5, 5 and
    # 4 values, so each step's busiest link moves 20 B, while no replica sends 6 x 20 B.
    inputs = tuple(array("f", [float(r)] * 19) for r in range(4))
    replay = AllReduceReplay(schedule(algorithm, 4), tuple("abcd"), inputs, inputs)
    line = replay.report().lines[1].text
    assert f"no link carried more than {most} in one direction" in line
    assert f"step by step, add up to {steps_sum}" in line
    assert "in all" not in line and not hasattr(replay, "link_report")


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: schedule("ring", 4), ValueError, "choose from"),
        (lambda: schedule("collective", 1), ValueError, "at least 2 replicas"),
        (lambda: schedule("collective", 4.0), TypeError, "must be an int"),
        (lambda: schedule("collective", True), TypeError, "must be an int"),
    ],
)
def test_schedule_refuses_what_it_cannot_play(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_the_plain_python_sums_are_numpys_in_the_dtype_bit_for_bit(algorithm, dtype):
    rng = np.random.default_rng(1)
    scale = 10.0 ** rng.integers(-6, 5, size=(4, 37))  # magnitudes far apart: rounding shows
    inputs = [np.asarray(row, dtype) for row in rng.standard_normal((4, 37)) * scale]
    if dtype == "float16":
        inputs[0][:3] = [60000.0, -60000.0, 1e-7]  # sums past 65504 (infinity); subnormals
        inputs[1][:3] = [60000.0, -60000.0, 1e-7]
        inputs[2][:3] = [1.0, -1.0, 1e-7]
        inputs[3][:3] = [1.0, -1.0, 1e-7]
    plan = schedule(algorithm, 4)
    replay = mk.AllReduceReplay(plan, tuple("abcd"), tuple(inputs), tuple(inputs))
    assert replay.dtype == dtype and replay.itemsize == np.dtype(dtype).itemsize
    bounds = plan.chunk_bounds(37)
    want = [x.copy() for x in inputs]
    for k, step in enumerate(plan.steps, start=1):
        sent = [(t, want[t.source][slice(*bounds[t.chunk])].copy()) for t in step.transfers]
        for t, chunk in sent:
            part = slice(*bounds[t.chunk])
            with np.errstate(over="ignore"):  # float16 sums beyond 65504 are infinite
                add = want[t.target][part] + chunk
            want[t.target][part] = add if t.combine == "add" else chunk
        for got, expected in zip(replay.buffers(k), want, strict=True):
            np.testing.assert_array_equal(np.array(got, dtype), expected)
    if dtype == "float16":
        assert np.isinf(want[0][:2]).all() and 0 < want[0][2] < np.finfo(np.float16).tiny


# -- the replay against the strategy -------------------------------------------------------


def _gradients(strategy):
    """A step's gradients from a real strategy.run: a small dense layer, a different batch each."""
    with strategy.scope():
        kernel = tf.Variable(tf.reshape(tf.range(12, dtype=tf.float32) / 7.0, (4, 3)))
        bias = tf.Variable(tf.zeros(3))

    def step():
        r = tf.distribute.get_replica_context().replica_id_in_sync_group
        x = tf.random.stateless_normal((5, 4), seed=tf.stack([r, 7]))
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(tf.matmul(x, kernel) + bias))
        return tape.gradient(loss, [kernel, bias])

    return strategy.run(step)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_the_replay_sums_real_gradients_as_the_strategy_does(strategy, algorithm):
    grads = _gradients(strategy)
    replay = mk.replay_all_reduce(strategy, grads, algorithm)
    local = [
        np.concatenate([g.numpy().reshape(-1) for g in parts])
        for parts in zip(*(strategy.experimental_local_results(g) for g in grads), strict=True)
    ]
    for got, want in zip(replay.inputs, local, strict=True):
        np.testing.assert_array_equal(got, want)
    assert replay.size == len(replay.inputs[0]) == 15
    assert replay.comparison.verdict in ("identical", "rounding")
    assert replay.comparison.strategy_error <= 1
    assert replay.comparison.replicas_agree
    end = replay.buffers(len(replay.schedule.steps))
    exact = np.sum([x.astype(np.float64) for x in local], axis=0)
    for buffer in end:
        np.testing.assert_allclose(buffer, exact, rtol=1e-5, atol=1e-5)
    last = replay.holders(len(replay.schedule.steps))
    assert all(held == frozenset(range(REPLICAS)) for row in last for held in row)


def test_the_strategys_own_algorithm_is_played_by_default(strategy):
    replay = mk.replay_all_reduce(mk.make_strategy("one_device"), _gradients(strategy))
    assert replay.schedule.algorithm == "one_device"
    assert mk.replay_all_reduce(strategy, _gradients(strategy)).schedule.algorithm == "collective"


def test_the_ring_moves_chunks_between_neighbours_step_by_step(strategy):
    values = strategy.run(
        lambda: tf.fill(
            [8],
            tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32) + 1,
        )
    )
    replay = mk.replay_all_reduce(strategy, values)
    # Step 1: replica r sent chunk r to r + 1, which added it: chunk 0 of replica 1 is 1 + 2.
    assert replay.holders(1)[1][0] == frozenset({0, 1})
    np.testing.assert_array_equal(replay.buffers(1)[1][0:2], [3.0, 3.0])
    np.testing.assert_array_equal(replay.buffers(1)[2][0:2], [3.0, 3.0])  # untouched chunk 0
    # After reduce-scatter (3 steps) replica r holds the complete chunk r + 1, nothing else.
    held = replay.holders(REPLICAS - 1)
    for r in range(REPLICAS):
        complete = [c for c in range(REPLICAS) if held[r][c] == frozenset(range(REPLICAS))]
        assert complete == [(r + 1) % REPLICAS]
    assert replay.step_bytes() == [8] * 6  # 2 float32 values per chunk per step
    text = str(replay)
    assert "2(n-1)/n = 1.5 for n = 4" in text and "bit for bit" in text


def test_hierarchical_copy_on_three_replicas_is_shown_not_to_sum(devices):
    # mk.make_strategy refuses this trap; TensorFlow's own constructor does not.
    three = tf.distribute.MirroredStrategy(
        devices[:3], cross_device_ops=tf.distribute.HierarchicalCopyAllReduce()
    )
    values = three.run(
        lambda: tf.fill(
            [4],
            10.0
            ** tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32),
        )
    )
    replay = mk.replay_all_reduce(three, values)
    # TensorFlow's own HierarchicalCopyAllReduce leaves replica 2 out, and so does the replay.
    np.testing.assert_array_equal(replay.strategy_result[2], [11.0] * 4)
    assert replay.comparison.verdict == "identical"
    assert replay.comparison.strategy_error > 1
    assert "WRONG SUM" in str(replay) and "replica 2's values were never sent" in str(replay)
    with pytest.raises(ValueError, match="even number of devices"):  # another algorithm asked
        mk.replay_all_reduce(mk.make_strategy(devices=devices[:3]), values, "hierarchical_copy")


def test_the_comparison_tells_rounding_from_a_wrong_sum():
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(1000).astype(np.float32) * 1000 for _ in range(4)]
    ordered = inputs[0] + inputs[1] + inputs[2] + inputs[3]
    paired = (inputs[0] + inputs[1]) + (inputs[2] + inputs[3])
    assert not np.array_equal(ordered, paired)  # the orders really differ here
    rounding = _compare(inputs, [ordered] * 4, [paired] * 4)
    assert rounding.verdict == "rounding" and rounding.strategy_error <= 1
    assert _compare(inputs, [ordered] * 4, [ordered] * 4).verdict == "identical"
    off = paired.copy()
    off[17] += 1.0  # one element off by far more than 3 additions can round (~1e-3 here)
    wrong = _compare(inputs, [ordered] * 4, [off] * 4)
    assert wrong.verdict == "different" and wrong.max_difference > wrong.bound
    dropped = inputs[0] + inputs[1] + inputs[2]
    missing = _compare(inputs, [ordered] * 4, [dropped] * 4)
    assert missing.verdict == "different" and missing.strategy_error > 1
    disagree = _compare(inputs, [ordered] * 4, [ordered, ordered, ordered, paired])
    assert not disagree.replicas_agree


def test_steps_outside_the_replay_are_refused(strategy):
    replay = mk.replay_all_reduce(strategy, strategy.run(lambda: tf.ones(4)))
    with pytest.raises(ValueError, match="from 0 .the inputs. to 6"):
        replay.buffers(7)
    with pytest.raises(TypeError, match="must be an int"):
        replay.holders(1.0)


def _per_replica_ints(strategy):
    return strategy.run(lambda: tf.ones(4, tf.int32))


@pytest.mark.wrong_inputs("mk.replay_all_reduce")
@pytest.mark.parametrize(
    ("make_call", "error", "argument", "match"),
    [
        (
            lambda s, d: lambda: mk.replay_all_reduce(s.run(lambda: tf.ones(2)), s),
            TypeError,
            "strategy",
            "pass the strategy whose run made the values",
        ),
        (
            lambda s, d: lambda: mk.replay_all_reduce(s, tf.ones(3)),
            TypeError,
            "values",
            "pass what strategy.run returned",
        ),
        (
            lambda s, d: lambda: mk.replay_all_reduce(s, [1.0, 2.0]),
            TypeError,
            "values",
            "pass what strategy.run returned",
        ),
        (
            lambda s, d: lambda: mk.replay_all_reduce(s, _per_replica_ints(s)),
            TypeError,
            "values",
            "cast them",
        ),
        (
            lambda s, d: lambda: mk.replay_all_reduce(s, []),
            ValueError,
            "values",
            "pass what strategy.run returned",
        ),
        (
            lambda s, d: lambda: mk.replay_all_reduce(s, s.run(lambda: tf.ones(2)), "ring"),
            ValueError,
            "algorithm",
            "choose from",
        ),
        (
            lambda s, d: lambda: mk.replay_all_reduce(mk.make_strategy(devices=d[:1]), tf.ones(2)),
            ValueError,
            "replica",
            "simulate_replicas",
        ),
        (
            lambda s, d: lambda: mk.replay_all_reduce(s, s.run(lambda: tf.ones(0))),
            ValueError,
            "values",
            "at least one element",
        ),
    ],
)
def test_replay_all_reduce_refuses_wrong_inputs(
    strategy, devices, refuses, make_call, error, argument, match
):
    refuses(make_call(strategy, devices), error, argument, match)


EIGHT = """
import json, sys
import numpy as np
import mirrorkit as mk

mk.make_reproducible(0)
devices = mk.simulate_replicas(8)
import tensorflow as tf

out = []
for n in (2, 4, 8):
    for algorithm in ("collective", "one_device", "hierarchical_copy"):
        strategy = mk.make_strategy(algorithm, devices=devices[:n])

        def on_replica():
            r = tf.distribute.get_replica_context().replica_id_in_sync_group
            seed = tf.stack([r, 3])
            big = tf.random.stateless_normal([37, 5], seed) * 100.0
            return [big, tf.random.stateless_normal([11], seed)]

        values = tf.function(lambda: strategy.run(on_replica))

        replay = mk.replay_all_reduce(strategy, values())
        c = replay.comparison
        out.append([n, algorithm, c.verdict, c.strategy_error, len(replay.schedule.steps)])
print(json.dumps(out))
"""


def test_the_replay_matches_the_strategy_at_2_4_and_8_replicas():
    """In a process of its own with 8 simulated replicas: every algorithm, 2, 4 and 8 of them."""
    done = subprocess.run(
        [sys.executable, "-c", EIGHT], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    steps = {"collective": lambda n: 2 * (n - 1), "one_device": lambda n: 2}
    steps["hierarchical_copy"] = lambda n: 2 if n == 2 else 4
    assert len(rows) == 9
    for n, algorithm, verdict, error, count in rows:
        assert verdict in ("identical", "rounding"), (n, algorithm, verdict)
        assert error <= 1, (n, algorithm, error)  # the strategy's result is the sum
        assert count == steps[algorithm](n), (n, algorithm, count)
