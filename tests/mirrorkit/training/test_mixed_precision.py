import keras
import numpy as np
import pytest
import tensorflow as tf

import mirrorkit as mk


def test_overflow_skips_the_step_and_halves_the_scale(strategy):
    history = mk.run_loss_scale(
        strategy, steps=6, overflow_steps=[2], initial_scale=8.0, dynamic_growth_steps=2
    )
    assert history.num_replicas == 4 and history.policy == "mixed_float16"
    rows = [(r.step, r.loss_scale, r.overflow, r.weights_changed) for r in history.records]
    assert rows == [
        (0, 8.0, False, True),
        (1, 8.0, False, True),  # 2nd good step in a row: the scale doubles after it
        (2, 16.0, True, False),  # forced overflow: update skipped, scale halved
        (3, 8.0, False, True),
        (4, 8.0, False, True),
        (5, 16.0, False, True),
    ]
    assert history.skipped_steps == (2,)
    assert [r.next_scale for r in history.records][:3] == [8.0, 16.0, 8.0]
    assert not np.isfinite(history.records[2].grad_norm)
    assert all(np.isfinite(r.grad_norm) for r in history.records if not r.overflow)
    losses = [r.loss for r in history.records if not r.overflow]
    assert losses == sorted(losses, reverse=True)  # training makes progress
    text = str(history)
    assert "YES" in text and "skipped" in text and text.splitlines()[1].startswith("step")
    assert "<table " in history._repr_html_()


def test_scale_grows_after_good_steps_on_two_replicas(devices):
    two = mk.make_strategy(devices=devices[:2])
    history = mk.run_loss_scale(
        two,
        policy="mixed_bfloat16",
        steps=4,
        overflow_steps=[],
        initial_scale=2.0,
        dynamic_growth_steps=1,
    )
    assert history.scales == (2.0, 4.0, 8.0, 16.0)
    assert history.skipped_steps == ()


def test_policy_is_restored_even_after_an_error():
    assert keras.mixed_precision.global_policy().name == "float32"
    with pytest.raises(RuntimeError, match="boom"), mk.mixed_precision_policy("mixed_float16"):
        assert keras.mixed_precision.global_policy().name == "mixed_float16"
        assert keras.layers.Dense(1).compute_dtype == "float16"
        raise RuntimeError("boom")
    assert keras.mixed_precision.global_policy().name == "float32"
    assert keras.layers.Dense(1).compute_dtype == "float32"


NAMES = r"use 'mixed_float16', 'mixed_bfloat16' or 'float32'"
WRONG_POLICY_NAMES = [
    pytest.param(
        "mixed_float8",
        ValueError,
        rf"unknown mixed precision policy name 'mixed_float8': {NAMES}",
        id="no such policy",
    ),
    pytest.param("mixed-float16", ValueError, rf"'mixed-float16': {NAMES}", id="a dash"),
    pytest.param("fp16", ValueError, rf"'fp16': {NAMES}", id="a nickname"),
    pytest.param(
        keras.mixed_precision.DTypePolicy("mixed_float16"),
        TypeError,
        r"the policy object 'mixed_float16': write mixed_precision_policy\('mixed_float16'\)",
        id="a DTypePolicy",
    ),
    pytest.param(
        tf.float16,
        TypeError,
        r"got DType tf\.float16: write e\.g\. mixed_precision_policy\('mixed_float16'\)",
        id="a dtype",
    ),
    pytest.param(16, TypeError, r"got int 16: write e\.g\. mixed_precision_policy", id="bits"),
]


@pytest.mark.wrong_inputs("mk.mixed_precision_policy")
@pytest.mark.parametrize(("name", "error", "match"), WRONG_POLICY_NAMES)
def test_wrong_policy_names_get_a_clear_message(refuses, name, error, match):
    def enter():
        with mk.mixed_precision_policy(name):
            pass

    refuses(enter, error, "name", match)
    assert keras.mixed_precision.global_policy().name == "float32"


WRONG_LOSS_SCALE_ARGUMENTS = [
    pytest.param(
        {"strategy": None},
        TypeError,
        "strategy",
        r"got NoneType: create one with strategy = mk\.make_strategy\(\)",
        id="no strategy",
    ),
    pytest.param(
        {"strategy": tf.distribute.MirroredStrategy},
        TypeError,
        "strategy",
        r"the class MirroredStrategy, not a strategy: create one first",
        id="the class",
    ),
    pytest.param(
        {"policy": "float64"},
        ValueError,
        "policy",
        r"unknown policy 'float64'; choose one of 'mixed_float16'",
        id="float64",
    ),
    pytest.param(
        {"global_batch": 3},
        ValueError,
        "global_batch",
        r"must be a multiple of the strategy's 4 replicas .*got 3, fewer examples than "
        r"replicas: write global_batch=4\.",
        id="batch of 3",
    ),
    pytest.param(
        {"global_batch": 6, "steps": 2},
        ValueError,
        "global_batch",
        r"^global_batch must be a multiple of the strategy's 4 replicas .*got 6, which leaves "
        r"2 examples over after 4 equal shares: write global_batch=4 or global_batch=8\.",
        id="a batch that does not divide, with few steps",
    ),
    pytest.param(
        {"steps": 2},
        ValueError,
        "overflow_steps",
        r"overflow_steps \(left at its default, \(2,\)\) holds 2, but steps are counted from "
        r"0 to 1 \(steps=2\).*overflow_steps=\[1\] \(or \[\] for none\), or train longer",
        id="few steps, overflow at the default step",
    ),
    pytest.param(
        {"overflow_steps": 5},
        TypeError,
        "overflow_steps",
        r"must be a list .* overflow_steps=\[2\]",
        id="one step, not a list",
    ),
    pytest.param(
        {"overflow_steps": None},
        TypeError,
        "overflow_steps",
        r"overflow_steps=\[2\] \(or \[\] for none\)",
        id="None for none",
    ),
    pytest.param(
        {"overflow_steps": [9]},
        ValueError,
        "overflow_steps",
        r"holds 9, .* from 0 to 5 \(steps=6\): give step numbers in that range",
        id="past the last step",
    ),
    pytest.param(
        {"overflow_steps": ["2"]},
        ValueError,
        "overflow_steps",
        r"holds '2'.*give step numbers",
        id="steps as text",
    ),
    pytest.param(
        {"steps": 0},
        ValueError,
        "steps",
        r"must be a positive int, got 0: write e\.g\. steps=6",
        id="no steps",
    ),
    pytest.param(
        {"global_batch": 2.5},
        ValueError,
        "global_batch",
        r"positive int, got 2\.5: write e\.g\. global_batch=8",
        id="fractional batch",
    ),
    pytest.param(
        {"initial_scale": "big"},
        TypeError,
        "initial_scale",
        r"must be a number such as 2\.0\*\*15",
        id="scale as text",
    ),
    pytest.param(
        {"initial_scale": 0},
        ValueError,
        "initial_scale",
        r"positive, got 0: write e\.g\. initial_scale=2\.0\*\*15",
        id="scale 0",
    ),
    pytest.param(
        {"dynamic_growth_steps": -1},
        ValueError,
        "dynamic_growth_steps",
        r"positive int.*dynamic_growth_steps=2",
        id="negative growth steps",
    ),
    pytest.param(
        {"learning_rate": "0.01"},
        TypeError,
        "learning_rate",
        r"got str '0\.01': write e\.g\. learning_rate=0\.01",
        id="learning rate as text",
    ),
    pytest.param(
        {"learning_rate": -0.01},
        ValueError,
        "learning_rate",
        r"positive, got -0\.01: write e\.g\. learning_rate=0\.01",
        id="negative rate",
    ),
    pytest.param(
        {"seed": "0"}, TypeError, "seed", r"got str '0': write e\.g\. seed=0", id="seed as text"
    ),
]


@pytest.mark.wrong_inputs("mk.run_loss_scale")
@pytest.mark.parametrize(("kwargs", "error", "argument", "match"), WRONG_LOSS_SCALE_ARGUMENTS)
def test_wrong_arguments_get_a_sentence_naming_them(
    refuses, strategy, kwargs, error, argument, match
):
    refuses(lambda: mk.run_loss_scale(**({"strategy": strategy} | kwargs)), error, argument, match)
    assert keras.mixed_precision.global_policy().name == "float32"


def test_numpy_step_numbers_are_step_numbers(strategy):
    history = mk.run_loss_scale(strategy, steps=3, overflow_steps=np.array([1]))
    assert [r.overflow for r in history.records] == [False, True, False]


def one_step_overflowing_on(strategy, replica, guard):
    """One LossScaleOptimizer step in which only `replica`'s loss overflows."""
    from mirrorkit.training.mixed_precision import overflow_seen_by_all

    with strategy.scope():
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(0.01))
        optimizer.build(model.trainable_variables)
    n = strategy.num_replicas_in_sync
    x = np.ones((2 * n, 3), np.float32)

    def replica_step(x_r):
        context = tf.distribute.get_replica_context()
        huge = tf.where(context.replica_id_in_sync_group == replica, 3e38, 1.0)
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(x_r, training=True)) * huge
            scaled = optimizer.scale_loss(loss)
        gradients = tape.gradient(scaled, model.trainable_variables)
        if guard:
            gradients = overflow_seen_by_all(gradients)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))

    dataset = tf.data.Dataset.from_tensor_slices(x).batch(2 * n)
    batch = next(iter(strategy.experimental_distribute_dataset(dataset)))
    tf.function(lambda b: strategy.run(replica_step, args=(b,)))(batch)
    finite = all(np.isfinite(w).all() for w in model.get_weights())
    return int(optimizer.iterations.numpy()), float(optimizer.dynamic_scale.numpy()), finite


def test_an_overflow_on_any_replica_skips_the_step_with_the_guard(strategy):
    last = strategy.num_replicas_in_sync - 1
    # Keras 3.15 alone: the first replica's overflow is seen, the last one's is applied.
    assert one_step_overflowing_on(strategy, 0, guard=False) == (0, 16384.0, True)
    assert one_step_overflowing_on(strategy, last, guard=False) == (1, 32768.0, False)
    # With overflow_seen_by_all every replica's overflow skips the step and halves the scale;
    # without an overflow the gradients pass unchanged.
    assert one_step_overflowing_on(strategy, last, guard=True) == (0, 16384.0, True)
    assert one_step_overflowing_on(strategy, -1, guard=True) == (1, 32768.0, True)
